"""Grading shortcuts make grading cheaper and change no verdict.

While grading, each kernel is told that it is being graded, so a lesson's demonstrations run a
smaller version (lesson_helpers.py, docs/lesson-style.md), and it draws no figure
(`GuardedExecute.grading_shortcuts` and `shortcut_arguments`, grader/nbgrader_config.py). The
shared batch (tests/integration/conftest.py) grades every fixture with the shortcuts on. Here the
reference answers and one common mistake of every lesson are graded again, in a copy of the same
course (its release and gradebook) with `grading_shortcuts = False`, and every test cell must
score the same both ways. The figures prove that the shortcuts really were on in one run and off
in the other.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from grader.course import lesson_ids
from grader.extras import missing_extras
from grader.grading.running.jobs import Job, Result
from grader.grading.running.supervisor import supervise
from grader.layout import GRADEBOOK
from tests.support import Course, build, mistake, variants

pytestmark = pytest.mark.same_verdicts  # the same verdicts at full size


def graded_both_ways(lesson: str) -> list[str]:
    """The fixtures graded without the shortcuts: the reference answers and the first common mistake."""
    reference = next(v for v in variants(lesson) if v.name == "reference")
    return [reference.name, mistake(lesson).name]


@dataclass
class FullSize:
    """The fixtures of graded_both_ways, graded with the shortcuts off."""

    course: Course
    results: dict[tuple[str, str], Result]


def without_shortcuts(course: Course, root: Path) -> Course:
    """A copy of the shared course, release and gradebook, whose kernels run every cell at full size."""
    shutil.copytree(course.lessons, root / "lessons")
    course.copy_gradebook(root / GRADEBOOK)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa\n"
        f"load_subconfig({str(course.root / 'nbgrader_config.py')!r})  # noqa\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{root / GRADEBOOK}?timeout=60'\n"
        "c.GuardedExecute.grading_shortcuts = False\n"
    )
    return Course(root)


@pytest.fixture(scope="module")
def full_size(course, tmp_path_factory) -> FullSize:
    copy = without_shortcuts(course, tmp_path_factory.mktemp("without-shortcuts"))
    jobs = []
    for lesson in lesson_ids():
        if missing_extras(lesson):
            continue
        release = copy.release(lesson)
        names = graded_both_ways(lesson)
        copy.submit(lesson, {v.name: build(lesson, release, v) for v in variants(lesson) if v.name in names})
        jobs += [Job(str(copy.root), lesson, name, force=True) for name in names]
    results = copy.add_scores(jobs, supervise(jobs, workers=2, job_timeout=600, log=copy.root / "workers.log"))
    return FullSize(copy, {(job.lesson, job.student): result for job, result in zip(jobs, results, strict=True)})


def figures(nb: nbformat.NotebookNode) -> list[set[str]]:
    """The formats of every matplotlib figure in the notebook's outputs, in order."""
    return [set(output.data) for cell in nb.cells for output in cell.get("outputs", [])
            if output.get("data", {}).get("text/plain", "").startswith("<Figure size ")]


def test_the_shortcuts_change_no_score(graded, full_size, lesson):
    points = {}
    for name in graded_both_ways(lesson):
        shortcut, full = graded.result(lesson, name), full_size.results[lesson, name]
        assert shortcut.status == full.status == "graded", (shortcut.reason, full.reason)
        assert shortcut.scores == full.scores, (
            f"{lesson}/{name}: the grading shortcuts changed a verdict (test cell -> points, with and without "
            f"them):\n{shortcut.scores}\n{full.scores}")
        points[name] = sum(full.scores.values())
    reference, wrong = graded_both_ways(lesson)
    assert points[wrong] < points[reference], f"{lesson}/{wrong} should lose points: the comparison compares nothing"


def test_the_shortcuts_were_on_in_the_batch_and_off_here(graded, full_size, lesson):
    """No figure is drawn while grading (each shows as its text): only with the shortcuts on."""
    shortcut = figures(graded.autograded(lesson, "reference"))
    full = figures(nbformat.read(full_size.course.layout.autograded_notebook("reference", lesson), as_version=4))
    assert full and len(shortcut) == len(full), (shortcut, full)
    assert all(fmt == {"text/plain"} for fmt in shortcut), shortcut
    assert all("image/png" in fmt for fmt in full), full
