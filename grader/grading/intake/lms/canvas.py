"""Canvas: its "Download Submissions" zip, its gradebook export, its ids, and its gradebook import CSV.

- **Download** (the assignment's "Download Submissions"): one .zip, every file at its top level named
  `<name>_[LATE_]<user id>_<submission id>_<the student's file name>`, the name being the sortable
  name squashed to lower case ("lovelaceada"); `LATE_` is Canvas's late mark. The time is the one
  Canvas wrote the file into the zip. Field order from names in Canvas's own tracker
  (instructure/canvas-lms#2406), the `LATE` field from scripts that sort Canvas downloads
  (TimHanneman/Canvas_submission_sort).
- **Roster** (Grades > Export): `Student` (the sortable name, "Lovelace, Ada"), `ID` (Canvas's user id:
  the number in the download's names), `SIS User ID`, `SIS Login ID`, `Section`, then one column per
  assignment ("03-parallel-heads (12345)": its name and Canvas's id), kept as the roster's assignments.
  The `Points Possible` row is skipped.
- **Ids**: `canvas_<user id>`.
- **Import CSV** (Grades > Import): `Student`, `ID`, `SIS User ID`, `SIS Login ID` (the grading id
  where the roster has none), `Section`, then the lesson's final points. Its header must be the
  assignment's as Canvas's own export writes it ("03-parallel-heads (123456)"), so that Canvas updates
  that assignment rather than creating one: `CanvasImport.columns[<lesson>]` when set; else the
  export's assignment named as the lesson; else the lesson id (Canvas then offers to create an
  assignment), with a warning when an export is known. With `CanvasImport.per_exercise`, one column
  per exercise, `<lesson>: <exercise>`, points before the penalty (each becomes an assignment in
  Canvas: off by default). The second row, `Points Possible`, gives each column's maximum, as Canvas's
  export does. A student without a grade has an empty cell, which Canvas leaves as it was.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from traitlets import Bool, Dict
from traitlets.config import Configurable

from grader.grading.intake.lms.base import GradeLine, Match, NamedFiles, RosterFormat, grade_column
from grader.safe_text import for_csv
from grader.student.points import number

IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
# A column of Canvas's gradebook export that is an assignment: its name, then Canvas's id in brackets.
ASSIGNMENT = re.compile(r"^(?P<name>.+?)\s*\((?P<id>\d+)\)$")


class CanvasImport(Configurable):
    """How the Canvas import CSV names its columns."""

    columns = Dict(help="lesson id -> the assignment's column header as Canvas's gradebook export writes it, "
                        "e.g. 'Lesson 3 (123456)' (default: the export's assignment named as the lesson, when "
                        "the roster was Canvas's export; else the lesson id)").tag(config=True)
    per_exercise = Bool(False, help="also write one column per exercise (Canvas makes each an assignment)"
                        ).tag(config=True)


class Canvas(NamedFiles):
    name = "canvas"
    title = "Canvas"
    order = 10
    settings = (CanvasImport,)
    pattern = r"(?P<name>[^_/]+)_(?:(?P<late>LATE)_)?(?P<lms_id>\d+)_(?P<submission_id>\d+)_(?P<file_id>[^/]+)"
    rosters = (RosterFormat("canvas", frozenset({"student", "id", "sis login id"}),
                            {"name": "student", "lms_id": "id", "sis_user_id": "sis user id",
                             "sis_login_id": "sis login id", "section": "section"},
                            assignment=ASSIGNMENT, skip=lambda cell: cell("name").casefold() == "points possible"),)
    writes_import = True

    def read_name(self, groups: dict[str, str], path: str, lesson: str) -> Match:
        late = bool(groups["late"])
        prefix = f"{groups['name']}_{'LATE_' * late}{groups['lms_id']}_{groups['submission_id']}_"
        return Match(self.name, f"lms:{groups['lms_id']}", self.grading_id(groups["lms_id"]), groups["file_id"],
                     name=groups["name"], lms_id=groups["lms_id"], late=late, upload_prefix=prefix)

    def write_import(self, path: Path, lesson: str, lines: Sequence[GradeLine], points: Mapping[str, float], *,
                     assignments: Sequence[str] = ()) -> str:
        chosen = CanvasImport(config=self.config)
        header, warning = column(lesson, chosen.columns.get(lesson, ""), assignments)
        exercises = list(points) if chosen.per_exercise else []
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow([for_csv(c) for c in [*IDENTITY, header, *(f"{lesson}: {e}" for e in exercises)]])
            writer.writerow(["Points Possible", "", "", "", "", number(sum(points.values())),
                             *(number(points[e]) for e in exercises)])
            for line in lines:
                identity = [line.name, line.lms_id if line.mine(self) else "", line.sis_user_id,
                            line.sis_login_id or line.student, line.section]
                writer.writerow([for_csv(c) for c in [*identity, number(line.final),
                                                      *(number(line.scores.get(e)) for e in exercises)]])
        return warning


def column(lesson: str, configured: str = "", assignments: Sequence[str] = ()) -> tuple[str, str]:
    """(the import CSV's header for `lesson`, a warning or ""), as grader.grading.intake.lms.base.grade_column
    picks it among the assignments of Canvas's gradebook export."""
    return grade_column(lesson, configured, assignments, ASSIGNMENT, export="the Canvas gradebook export",
                        setting="c.CanvasImport.columns", kind="assignment", lms="Canvas")
