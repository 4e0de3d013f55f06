"""Regrade with a diff: every score that changed since the last grading, per student and exercise.

`make autograde LESSON=<id> REGRADE=1` (`python -m grader autograde <id> --regrade`) grades every
stored submission of the lesson again, as `--force` does, after `snapshot` has read each one's
points from the gradebook; `changes` then compares them with the new results, and `table` prints
one row per student and exercise whose points changed, and per student whose total changed:
before, after, which exercise. A submission graded for the first time, or that failed to grade
either time, is listed too, with "-" for the score it did not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nbgrader.api import MissingEntry

from grader.gradebook import open_gradebook
from grader.grading.jobs import Result
from grader.safe_text import for_terminal

TOTAL = "(total)"


@dataclass(frozen=True)
class Change:
    student: str
    exercise: str  # a test cell's grade_id, or TOTAL
    before: float | None
    after: float | None


def snapshot(db_url: str, course_id: str, lesson: str, students: Sequence[str],
             points: dict[str, float]) -> dict[str, dict[str, float | None]]:
    """student -> {grade_id: points} as the gradebook holds them now (students never graded are left out)."""
    found = {}
    with open_gradebook(db_url, course_id) as gradebook:
        for student in students:
            try:
                submitted = gradebook.find_submission_notebook(lesson, lesson, student)
            except MissingEntry:
                continue
            grades = {grade.name: grade.score for grade in submitted.grades}
            found[student] = {name: grades.get(name) for name in points}
    return found


def _total(scores: dict[str, float | None] | None) -> float | None:
    if not scores or any(v is None for v in scores.values()):
        return None
    return sum(scores.values())


def changes(before: dict[str, dict[str, float | None]], results: Sequence[Result],
            points: dict[str, float]) -> list[Change]:
    """Every exercise and total whose points differ between `before` and `results`, by student."""
    found = []
    for result in sorted(results, key=lambda r: r.student):
        old = before.get(result.student)
        new = result.scores if result.status == "graded" else None
        for name in points:
            a, b = (old or {}).get(name), (new or {}).get(name)
            if a != b:
                found.append(Change(result.student, name, a, b))
        if _total(old) != _total(new):
            found.append(Change(result.student, TOTAL, _total(old), _total(new)))
    return found


def table(lesson: str, found: Sequence[Change], regraded: int) -> str:
    """The changes as a table for the terminal (student ids escaped)."""
    if not found:
        return f"regrade of {lesson}: {regraded} submissions regraded, no score changed"
    rows = [(for_terminal(c.student), c.exercise, _text(c.before), _text(c.after)) for c in found]
    widths = [max(len(r[i]) for r in [("student", "exercise", "before", "after"), *rows]) for i in range(4)]
    students = len({c.student for c in found})
    lines = [f"regrade of {lesson}: {students} of {regraded} students' scores changed"]
    for row in [("student", "exercise", "before", "after"), *rows]:
        lines.append("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def _text(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
