"""The kernel tier's shared fixtures: one temporary course, and one parallel grading batch.

`graded` grades fixture submissions (tests/fixtures/<lesson>/submissions.toml) and cheats
(tests/fixtures/cheats/<lesson>.toml) of every lesson in one batch: under `make test` each lesson's
core four (the reference, the untouched release, one common mistake, one cheat), and all of them
when the session runs any exhaustive test (`make test-all`). It grades with the course's own grader
(grader.grading.supervisor, one more at a time than there are cores), once per test session; the round trip
and the cheat suite both read it. Under xdist (`--dist loadscope`: each module, and each notebook's
nbval cells, on one worker) both are built once for all workers: the first worker that needs one
builds it in the session's shared folder while holding a lock, and the others load it from there.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from grader.course import lesson_ids
from grader.extras import missing_extras
from grader.grading.jobs import Job, Result
from grader.grading.supervisor import supervise
from tests.support import Course, build, cheat_lessons, cheats, core_cheat, core_variants, make_course, variants

CELL_TIMEOUT = 30  # seconds per cell, as in grading (Lesson 10's memory case needs them on a loaded machine)
LOOP, LOOP_TIMEOUT = "infinite-loop", 10  # the fixture that burns its cell's time limit, and a shorter limit for it


@pytest.fixture(scope="session")
def shared(tmp_path_factory) -> Path:
    """A folder every xdist worker of this session sees (the session's own folder without xdist)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    folder.mkdir(exist_ok=True)
    return folder


def once(folder: Path, name: str, build: Callable[[Path], object]):
    """`build(folder / name)`'s result, built by the first worker that asks and loaded by the others."""
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / f"{name}.pickle"
        if not done.exists():
            done.write_bytes(pickle.dumps(build(folder / name)))
        return pickle.loads(done.read_bytes())


@pytest.fixture(scope="session")
def course(shared) -> Course:
    """Every lesson released from the committed solutions/ into a temporary course."""
    return once(shared, "course", lambda root: make_course(root, cell_timeout=CELL_TIMEOUT))


@dataclass
class Graded:
    """The shared batch: (lesson, student) -> the grader's result."""

    course: Course
    results: dict[tuple[str, str], Result]

    def result(self, lesson: str, student: str) -> Result:
        return self.results[lesson, student]

    def autograded(self, lesson: str, student: str) -> nbformat.NotebookNode:
        return nbformat.read(self.course.layout.autograded_notebook(student, lesson), as_version=4)


def batch_submissions(course: Course, every: bool = True) -> dict[str, dict[str, nbformat.NotebookNode]]:
    """lesson -> student -> notebook: the fixtures and cheats of every lesson whose extras are here.

    `every` False: only each lesson's core fixtures and cheat (tests.support.core_variants, core_cheat).
    """
    batch = {}
    for lesson in lesson_ids():
        if missing_extras(lesson):
            continue
        release = course.release(lesson)
        students = {v.name: build(lesson, release, v) for v in (variants if every else core_variants)(lesson)}
        if lesson in cheat_lessons():
            chosen = cheats(lesson) if every else {core_cheat(lesson): cheats(lesson)[core_cheat(lesson)]}
            cheated = {name: build(lesson, release, v) for name, (v, _) in chosen.items()}
            assert not set(cheated) & set(students), f"{lesson}: a cheat has a fixture's name"
            students |= cheated
        batch[lesson] = students
    return batch


@pytest.fixture(scope="session")
def graded(request, course, shared) -> Graded:
    # Every xdist worker collects and selects the same tests, so each one decides alike.
    every = any(item.get_closest_marker("exhaustive") for item in request.session.items)
    return once(shared, "graded", lambda folder: grade_batch(course, folder, every))


def grade_batch(course: Course, folder: Path, every: bool = True) -> Graded:
    batch = batch_submissions(course, every)
    for lesson, students in batch.items():
        course.submit(lesson, students)
    # Interleaved across lessons, longest lessons first, so that both workers stay busy to the end.
    per_lesson = [[Job(str(course.root), lesson, student, force=True, timeout=LOOP_TIMEOUT if student == LOOP else None)
                   for student in students] for lesson, students in batch.items()]
    jobs = [job for group in itertools.zip_longest(*per_lesson) for job in group if job is not None]
    folder.mkdir()
    log = folder / "workers.log"
    # One worker more than the cores: the infinite loops sleep through their time limit.
    results = supervise(jobs, workers=(os.cpu_count() or 2) + 1, job_timeout=600, log=log)
    return Graded(course, {(job.lesson, job.student): result for job, result in zip(jobs, results, strict=True)})
