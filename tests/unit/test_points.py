"""Points as every output computes and writes them (grader/student/points.py)."""

from __future__ import annotations

import ast

import pytest

from grader.course import ROOT
from grader.grading.running.jobs import Result
from grader.student.points import number, total


@pytest.mark.parametrize(("value", "text"), [(7, "7"), (7.0, "7"), (6.3, "6.3"), (1 / 3, "0.33"), (2 / 3, "0.67"),
                                             (0.005, "0.01"), (-0.001, "0"), (0, "0"), (None, "")])
def test_points_are_written_with_at_most_two_decimals(value, text):
    assert number(value) == text


def test_a_missing_number_has_the_callers_mark():
    assert number(None, "-") == "-" and number(None, "?") == "?"


def test_a_total_needs_a_graded_submission_with_every_exercise_scored():
    assert total("graded", {"a": 1.0, "b": 0.5}) == 1.5
    assert total("graded", {"a": 1.0, "b": None}) is None
    assert total("failed", {"a": 1.0}) is None
    assert Result("s", "graded", scores={"a": 1 / 3, "b": 1 / 3}).total == total("graded", {"a": 1 / 3, "b": 1 / 3})


def test_the_terminal_the_csv_and_the_feedback_page_share_one_number_format():
    """No module of the grader defines a points format or a total of its own."""
    defined = []
    for path in (ROOT / "grader").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == "number":
                defined.append(path.relative_to(ROOT).as_posix())
    assert defined == ["grader/student/points.py"]
