"""A lesson's grades as a CSV that Canvas's gradebook imports (Grades > Import).

Columns, as Canvas's gradebook export has them and its import reads them:

- `Student`: the student's name (the roster's `name`; the id without a roster);
- `ID`: Canvas's user id (the roster's `lms_id`; empty without it);
- `SIS User ID`: empty;
- `SIS Login ID`: the student id grading used (the roster's `id`);
- `Section`: the roster's `section`, if it has that column;
- `<lesson>`: the points after any late penalty: the column Canvas imports as the assignment
  (a column whose name Canvas does not know yet creates an assignment of that name);
- with `per_exercise`, one more column per autograded exercise, `<lesson>: <exercise>`, in points
  before the late penalty.

The second row, `Points Possible`, gives each column's maximum, as Canvas's own export does.
Submissions that could not be graded have empty cells: Canvas leaves those grades as they were.
Every cell goes through `grader.safe_text.for_csv`.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from grader.grading.jobs import Result
from grader.grading.late import Lateness
from grader.grading.lms import Roster
from grader.safe_text import for_csv

IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def write(path: Path, lesson: str, results: Sequence[Result], points: dict[str, float], *,
          lateness: dict[str, Lateness] | None = None, roster: Roster | None = None,
          per_exercise: bool = True) -> Path:
    """Write the import CSV for `lesson` to `path`; return the path."""
    lateness = lateness or {}
    rows = {s.id: s for s in roster.students} if roster is not None else {}
    exercises = list(points) if per_exercise else []
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([for_csv(c) for c in [*IDENTITY, lesson, *(f"{lesson}: {e}" for e in exercises)]])
        writer.writerow(["Points Possible", "", "", "", "", _number(sum(points.values())),
                         *(_number(points[e]) for e in exercises)])
        for result in sorted(results, key=lambda r: r.student):
            row = rows.get(result.student)
            identity = [row.name if row else result.student, row.lms_id if row else "", "", result.student,
                        row.section if row else ""]
            total = result.total
            if total is not None:
                total = max(0.0, total - lateness.get(result.student, Lateness()).penalty)
            scores = [result.scores.get(e) if result.status == "graded" else None for e in exercises]
            writer.writerow([for_csv(c) for c in [*identity, _number(total), *map(_number, scores)]])
    return path


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"
