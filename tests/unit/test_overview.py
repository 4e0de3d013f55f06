"""grader.grading.outputs.overview: what lost points, per exercise and per student, with each student's points."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest

from grader import cell_roles
from grader.course import student_notebook
from grader.grading.outputs import overview
from grader.grading.policy import late
from grader.grading.running.jobs import Result
from tests.support import grade_rows

LESSON = "03-parallel-heads"
RELEASE = student_notebook(LESSON)
POINTS = cell_roles.test_points(nbformat.read(RELEASE, as_version=4))
LABELS = cell_roles.exercise_labels(nbformat.read(RELEASE, as_version=4))


def full(**lost: float) -> dict[str, float]:
    return {name: top - lost.get(name, 0) for name, top in POINTS.items()}


def autograded(tmp_path: Path, student: str, errors: dict[str, str]) -> Path:
    """The release with an error output in each test cell of `errors` (grade_id -> "Name: message")."""
    nb = nbformat.read(RELEASE, as_version=4)
    for grade_id, cell in cell_roles.cells_by_id(nb).items():
        if grade_id in errors:
            name, _, value = errors[grade_id].partition(": ")
            cell.outputs = [nbformat.v4.new_output("error", ename=name, evalue=value, traceback=[])]
    path = tmp_path / f"{student}.ipynb"
    nbformat.write(nb, path)
    return path


def test_the_overview_groups_failure_messages_with_labels_totals_and_lateness(tmp_path):
    first, second = list(POINTS)[:2]
    wrong_axis = "AssertionError: split along the wrong axis"
    results = [Result("ada", "graded", scores=full()),
               Result("alan", "graded", scores=full(**{first: POINTS[first]})),
               Result("grace", "graded", scores=full(**{first: POINTS[first], second: POINTS[second]})),
               Result("eve", "failed", reason="invalid JSON")]
    paths = {"ada": autograded(tmp_path, "ada", {}),
             "alan": autograded(tmp_path, "alan", {first: wrong_axis}),
             "grace": autograded(tmp_path, "grace", {first: wrong_axis, second: "KeyboardInterrupt: "})}
    policy = late.LatePolicy(deadlines={LESSON: "2026-12-01 12:00:00 UTC"})
    rows = grade_rows(LESSON, results, POINTS, times={"grace": datetime(2026, 12, 1, 13, tzinfo=UTC)},
                      policy=policy, roster="id,name\nada,Ada\nalan,Alan\ngrace,Grace\neve,Eve\nsam,Sam\n")
    view = overview.build(LESSON, rows, POINTS, paths, LABELS)
    exercise = view.exercises[0]
    assert exercise.failures == [(wrong_axis, ["alan", "grace"])] and exercise.title == f"Exercise 1 ({first})"
    assert exercise.full == pytest.approx(1 / 3) and exercise.mean == pytest.approx(POINTS[first] / 3)
    assert view.students["ada"] == [] and view.failed == {"eve": "invalid JSON"}
    late_line = view.students["grace"][-1]
    assert view.students["grace"][:2] == [f"{LABELS[first]}: {wrong_axis}",
                                          f"{LABELS[second]}: the cell ran past the time limit"]
    assert late_line.startswith("late 1 h 0 min (-")
    top = sum(POINTS.values())
    assert view.totals["ada"] == f"{top:g}/{top:g}" and view.totals["sam"] == f"-/{top:g} (no submission)"
    assert view.totals["eve"] == f"-/{top:g} (failed)"
    text = overview.terminal(view)
    assert f"2 x {wrong_axis}  [alan (Alan), grace (Grace)]" in text and "KeyboardInterrupt" not in text
    assert f"    grace (Grace): -/{top:g}" not in text and "    grace (Grace): " in text  # the name beside the id
    page = overview.write_html(tmp_path / "overview.html", view).read_text()
    assert "split along the wrong axis" in page and "alan (Alan), grace (Grace)" in page and "invalid JSON" in page
    assert "<tr><td>eve (Eve)</td>" in page
    assert "no submission" in page and "ran past the time limit" in page
