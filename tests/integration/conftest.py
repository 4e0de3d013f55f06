"""The kernel tier's shared fixtures: one temporary course, and one parallel grading batch.

`graded` grades every fixture submission (tests/fixtures/<lesson>/submissions.toml) and every cheat
(tests/fixtures/cheats/<lesson>.toml) of every lesson in one batch, with the course's own grader
(grader.grading.supervisor, two at a time), once per test session; the round trip
and the cheat suite both read it. Under xdist every test that uses it, or the `course` it grades
in, runs on one worker (xdist group "graded"), so it is built once.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import nbformat
import pytest

from grader.course import lesson_ids, missing_extras
from grader.grading.supervisor import supervise
from grader.grading.worker import Job, Result
from tests.support import Course, build, cheat_lessons, cheats, make_course, variants

CELL_TIMEOUT = 15  # seconds per cell in the shared course: an infinite-loop fixture costs this once


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """One xdist group per module (its module-scoped fixtures are then built once), and one for
    everything that uses the shared course or batch."""
    for item in items:
        if {"course", "graded"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("graded"))
        elif "integration" in item.path.parts:
            item.add_marker(pytest.mark.xdist_group(f"module-{item.path.stem}"))


@pytest.fixture(scope="session")
def course(tmp_path_factory) -> Course:
    """Every lesson released from the committed solutions/ into a temporary course."""
    return make_course(tmp_path_factory.mktemp("course"), cell_timeout=CELL_TIMEOUT)


@dataclass
class Graded:
    """The shared batch: (lesson, student) -> the grader's result."""

    course: Course
    results: dict[tuple[str, str], Result]

    def result(self, lesson: str, student: str) -> Result:
        return self.results[lesson, student]

    def autograded(self, lesson: str, student: str) -> nbformat.NotebookNode:
        return nbformat.read(self.course.layout.autograded_notebook(student, lesson), as_version=4)


def batch_submissions(course: Course) -> dict[str, dict[str, nbformat.NotebookNode]]:
    """lesson -> student -> notebook: every fixture and cheat of every lesson whose extras are here."""
    batch = {}
    for lesson in lesson_ids():
        if missing_extras(lesson):
            continue
        release = course.release(lesson)
        students = {v.name: build(lesson, release, v) for v in variants(lesson)}
        if lesson in cheat_lessons():
            cheated = {name: build(lesson, release, v) for name, (v, _) in cheats(lesson).items()}
            assert not set(cheated) & set(students), f"{lesson}: a cheat has a fixture's name"
            students |= cheated
        batch[lesson] = students
    return batch


@pytest.fixture(scope="session")
def graded(course, tmp_path_factory) -> Graded:
    batch = batch_submissions(course)
    for lesson, students in batch.items():
        course.submit(lesson, students)
    # Interleaved across lessons, longest lessons first, so that both workers stay busy to the end.
    per_lesson = [[Job(str(course.root), lesson, student, force=True) for student in students]
                  for lesson, students in batch.items()]
    jobs = [job for group in itertools.zip_longest(*per_lesson) for job in group if job is not None]
    log = tmp_path_factory.mktemp("graded") / "workers.log"
    results = supervise(jobs, workers=2, job_timeout=600, log=log)
    return Graded(course, {(job.lesson, job.student): result for job, result in zip(jobs, results, strict=True)})
