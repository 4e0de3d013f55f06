"""A graded submission's points, as nbgrader's gradebook holds them, read by the batch through its one open gradebook.

The worker (grader.grading.running.worker) autogrades a submission, and nbgrader writes its grades to
the gradebook; the worker returns a Result without points. The batch (grader.grading.autograde) opens
the gradebook once, and reads each submission's points from it as the submission's result comes in
(`add_scores`): so it does for any executor, a cluster's too, and no worker opens the gradebook itself.
Which submissions already have grades (`has_grades`) it reads the same way before any job starts.
"""

from __future__ import annotations

from collections.abc import Iterable

from nbgrader.api import Gradebook, MissingEntry

from grader.grading.running.jobs import Result
from grader.grading.running.triage import Flag


def has_grades(gradebook: Gradebook, lesson: str, student: str) -> bool:
    """Whether the gradebook holds a graded notebook of `student` for `lesson` (its grades are not loaded)."""
    try:
        gradebook.find_submission_notebook(lesson, lesson, student)
    except MissingEntry:
        return False
    return True


def add_scores(gradebook: Gradebook, lesson: str, result: Result, test_cells: Iterable[str]) -> Result:
    """Put into a graded `result` its points per test cell (None for a cell the gradebook has no grade of)
    and a `manual-grade` flag per cell nbgrader wants graded by hand; a graded result whose submission the
    gradebook does not hold becomes a failure. Returns `result`, changed in place; a failed one is left as it is.
    """
    if result.status != "graded":
        return result
    try:
        submitted = gradebook.find_submission_notebook(lesson, lesson, result.student)
    except MissingEntry:
        result.status, result.reason = "failed", "graded, but missing from the gradebook"
        return result
    grades = {grade.name: grade for grade in submitted.grades}
    result.scores = {name: grades[name].score if name in grades else None for name in test_cells}
    result.flags += [Flag("manual-grade", name) for name, grade in grades.items() if grade.needs_manual_grade]
    return result
