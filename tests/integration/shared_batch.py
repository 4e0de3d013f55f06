"""The shared course and grading batch of a test session, built once for every xdist worker.

Both are built by whoever asks first, in the session's shared folder, while holding a file lock
(filelock); the others wait for the lock and load the result. The first test that needs them usually
does not ask first: `start_in_background` (called by tests/plugins/shared.py when the session starts)
builds them in a process of their own beside the first tests, so that neither xdist worker waits.
Run as `python -m tests.integration.shared_batch SHARED EVERY LESSONS` it is that background process.
"""

from __future__ import annotations

import itertools
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat
from filelock import FileLock

from grader.course import ROOT, lesson_ids
from grader.extras import missing_extras
from grader.grading.running.jobs import Job, Result
from grader.grading.running.supervisor import supervise
from tests.support import (
    Course,
    build,
    cheat_lessons,
    cheats,
    core_cheat,
    core_variants,
    lesson_of,
    make_course,
    variants,
)

CELL_TIMEOUT = 30  # seconds per cell, as in grading (Lesson 10's memory case needs them on a loaded machine)
LOOP, LOOP_TIMEOUT = "infinite-loop", 10  # the fixture that burns its cell's time limit, and a shorter limit for it


def once(folder: Path, name: str, build: Callable[[Path], object]):
    """`build(folder / name)`'s result, built by the first process that asks and loaded by the others."""
    with FileLock(folder / f"{name}.lock"):
        done = folder / f"{name}.pickle"
        if not done.exists():
            done.write_bytes(pickle.dumps(build(folder / name)))
        return pickle.loads(done.read_bytes())


def shared_course(shared: Path) -> Course:
    """Every lesson released from the committed solutions/ into a temporary course."""
    return once(shared, "course", lambda root: make_course(root, cell_timeout=CELL_TIMEOUT))


def shared_batch(shared: Path, every: bool, lessons: list[str]) -> Graded:
    """The shared course's batch of `lessons` (see `batch_submissions`), graded."""
    course = shared_course(shared)
    return once(shared, "graded", lambda folder: grade_batch(course, folder, every, lessons))


def wants_every_case(session) -> bool:
    """Whether the batch grades every fixture and cheat: when the session runs any exhaustive test.

    Every xdist worker collects and selects the same tests, so each one decides alike.
    """
    return any(item.get_closest_marker("exhaustive") for item in session.items)


def lessons_wanted(session) -> list[str]:
    """The lessons whose submissions the batch grades: those of the tests that read it, or every lesson
    when one of them names none (a test parametrized by lesson names it: tests.support.lesson_of)."""
    readers = [item for item in session.items if "graded" in getattr(item, "fixturenames", ())]
    named = [lesson_of(item) for item in readers]
    return sorted(set(named)) if named and None not in named else lesson_ids()


def needs_shared_batch(session) -> bool:
    """Whether any test of the session uses the shared course or batch."""
    return any({"course", "graded"} & set(getattr(item, "fixturenames", ())) for item in session.items)


def start_in_background(shared: Path, every: bool, lessons: list[str]) -> subprocess.Popen | None:
    """Build the shared course and batch in a process of their own, unless another worker already started it.

    Its output goes to `shared / "background.log"`; if it fails, the first fixture that asks builds
    them itself (and fails with the real error there).
    """
    try:
        os.close(os.open(shared / "background.started", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return None
    log = open(shared / "background.log", "w")  # noqa: SIM115 (the child writes to it until it ends)
    with log:
        return subprocess.Popen([sys.executable, "-m", "tests.integration.shared_batch", str(shared), str(int(every)),
                                 ",".join(lessons)],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


@dataclass
class Graded:
    """The shared batch: (lesson, student) -> the grader's result."""

    course: Course
    results: dict[tuple[str, str], Result]

    def result(self, lesson: str, student: str) -> Result:
        return self.results[lesson, student]

    def autograded(self, lesson: str, student: str) -> nbformat.NotebookNode:
        return nbformat.read(self.course.layout.autograded_notebook(student, lesson), as_version=4)


def batch_submissions(course: Course, every: bool = True,
                      lessons: list[str] | None = None) -> dict[str, dict[str, nbformat.NotebookNode]]:
    """lesson -> student -> notebook: the fixtures and cheats of `lessons` (default: all) whose extras are here.

    `every` False: only each lesson's core fixtures and its core cheat, if any (tests.support's core_variants
    and core_cheat).
    """
    batch = {}
    for lesson in lessons or lesson_ids():
        if missing_extras(lesson):
            continue
        release = course.release(lesson)
        students = {v.name: build(lesson, release, v) for v in (variants if every else core_variants)(lesson)}
        if lesson in cheat_lessons():
            core = core_cheat(lesson)
            chosen = cheats(lesson) if every else {core: cheats(lesson)[core]} if core else {}
            cheated = {name: build(lesson, release, v) for name, (v, _) in chosen.items()}
            assert not set(cheated) & set(students), f"{lesson}: a cheat has a fixture's name"
            students |= cheated
        batch[lesson] = students
    return batch


def grade_batch(course: Course, folder: Path, every: bool = True, lessons: list[str] | None = None) -> Graded:
    batch = batch_submissions(course, every, lessons)
    for lesson, students in batch.items():
        course.submit(lesson, students)
    # Interleaved across lessons, longest lessons first, so that both workers stay busy to the end.
    per_lesson = [[Job(str(course.root), lesson, student, force=True, timeout=LOOP_TIMEOUT if student == LOOP else None)
                   for student in students] for lesson, students in batch.items()]
    jobs = [job for group in itertools.zip_longest(*per_lesson) for job in group if job is not None]
    folder.mkdir()
    log = folder / "workers.log"
    # One grading process per core, not the grader's one more: the xdist workers keep the cores busy meanwhile.
    results = course.add_scores(jobs, supervise(jobs, workers=os.cpu_count() or 2, job_timeout=600, log=log))
    return Graded(course, {(job.lesson, job.student): result for job, result in zip(jobs, results, strict=True)})


if __name__ == "__main__":
    # Through the module's own name, so that what is pickled names tests.integration.shared_batch, not __main__.
    from tests.integration import shared_batch as this

    this.shared_batch(Path(sys.argv[1]), every=bool(int(sys.argv[2])), lessons=sys.argv[3].split(","))
