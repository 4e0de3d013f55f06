"""A lesson's grades as a CSV that Canvas's gradebook imports (Grades > Import).

Columns, as Canvas's gradebook export has them and its import reads them:

- `Student`: the student's name; `ID`: Canvas's user id; `SIS User ID`, `SIS Login ID`, `Section`:
  as the roster gives them (the SIS Login ID is the grading id where the roster has none);
- the lesson's column: the final points, after any late penalty. Its header is
  `CanvasImport.columns[<lesson>]` when set, to be the assignment's header exactly as Canvas's own
  export writes it ("Lesson 3 (123456)"), so that Canvas updates that assignment; by default the
  lesson id, which Canvas offers to create as a new assignment on the first import;
- with `CanvasImport.per_exercise`, one column per autograded exercise, `<lesson>: <exercise>`,
  points before the penalty (each one becomes an assignment of its own in Canvas: off by default).

The second row, `Points Possible`, gives each column's maximum, as Canvas's own export does. Every
roster student has one row (without a roster, every student with a submission); one that has no
grade (no submission, or grading failed) has an empty cell, which Canvas leaves as it was. Every
cell goes through `grader.safe_text.for_csv`.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from traitlets import Bool, Dict
from traitlets.config import Configurable

from grader.grading.policy.grades import Row
from grader.points import number
from grader.safe_text import for_csv

IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


class CanvasImport(Configurable):
    """How the Canvas import CSV names its columns."""

    columns = Dict(help="lesson id -> the assignment's column header as Canvas's gradebook export writes it, "
                        "e.g. 'Lesson 3 (123456)' (default: the lesson id)").tag(config=True)
    per_exercise = Bool(False, help="also write one column per exercise (Canvas makes each an assignment)"
                        ).tag(config=True)


def write(path: Path, lesson: str, rows: Sequence[Row], points: dict[str, float], *, column: str = "",
          per_exercise: bool = False) -> Path:
    """Write the import CSV for `lesson` to `path`; return the path."""
    exercises = list(points) if per_exercise else []
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([for_csv(c) for c in [*IDENTITY, column or lesson, *(f"{lesson}: {e}" for e in exercises)]])
        writer.writerow(["Points Possible", "", "", "", "", number(sum(points.values())),
                         *(number(points[e]) for e in exercises)])
        for row in rows:
            person = row.person
            canvas_id = person.lms_id if person and person.lms in ("canvas", "") else ""
            identity = [row.name or row.student, canvas_id, person.sis_user_id if person else "",
                        (person.sis_login_id if person else "") or row.student, person.section if person else ""]
            scores = [row.scores.get(e) if row.status == "graded" else None for e in exercises]
            writer.writerow([for_csv(c) for c in [*identity, number(row.final), *map(number, scores)]])
    return path

