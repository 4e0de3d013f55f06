"""A lesson's grades as a CSV that Canvas's gradebook imports (Grades > Import).

Columns, as Canvas's gradebook export has them and its import reads them:

- `Student`: the student's name; `ID`: Canvas's user id; `SIS User ID`, `SIS Login ID`, `Section`:
  as the roster gives them (the SIS Login ID is the grading id where the roster has none);
- the lesson's column: the final points, after any late penalty. Its header must be the
  assignment's header exactly as Canvas's own export writes it ("03-parallel-heads (123456)"), so
  that Canvas updates that assignment rather than creating one (`column`): `CanvasImport.columns
  [<lesson>]` when set; else, when the roster given was Canvas's gradebook export, its assignment
  column named as the lesson ("03-parallel-heads (123456)", the name compared without case); else the
  lesson id, which Canvas offers to create as a new assignment on import. When an export is known
  and the column is none of its assignments, `column` says so, to warn the instructor;
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

from grader.grading.intake.roster import ASSIGNMENT
from grader.grading.policy.grades import Row
from grader.safe_text import for_csv
from grader.student.points import number

IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


class CanvasImport(Configurable):
    """How the Canvas import CSV names its columns."""

    columns = Dict(help="lesson id -> the assignment's column header as Canvas's gradebook export writes it, "
                        "e.g. 'Lesson 3 (123456)' (default: the export's assignment named as the lesson, when "
                        "the roster was Canvas's export; else the lesson id)").tag(config=True)
    per_exercise = Bool(False, help="also write one column per exercise (Canvas makes each an assignment)"
                        ).tag(config=True)


def column(lesson: str, configured: str = "", assignments: Sequence[str] = ()) -> tuple[str, str]:
    """(the import CSV's header for `lesson`, a warning or ""): `configured` (CanvasImport.columns) wins;
    else the one assignment of the export (`assignments`, as people.json remembers them) named `lesson`;
    else the lesson id. The warning, when an export is known and the header is none of its assignments."""
    named = [a for a in assignments if (m := ASSIGNMENT.match(a)) and m["name"].strip().casefold() == lesson.casefold()]
    header = configured or (named[0] if len(named) == 1 else lesson)
    if not assignments or header in assignments:
        return header, ""
    where = (f"c.CanvasImport.columns gives {header!r}" if configured else
             f"{len(named)} assignments of the export are named {lesson}" if named else
             f"no assignment of the export is named {lesson}")
    return header, (f"WARNING: the Canvas import CSV's column {header!r} is no assignment of the Canvas gradebook "
                    f"export given as the roster ({where}): importing it would create a new assignment in Canvas. "
                    f"Set c.CanvasImport.columns = {{{lesson!r}: '<the assignment's header>'}}; the export's "
                    f"assignments: {', '.join(assignments)}")


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

