"""Moodle: its "Download all submissions", its grading worksheet and participants export, its ids, and the
grading worksheet to upload.

- **Download** ("Download all submissions"): `<Full Name>_<participant id>_assignsubmission_<plugin>_<the
  student's file name>`, or with "Download submissions in folders" one folder
  `<Full Name>_<participant id>_assignsubmission_<plugin>_` per student, holding the student's files and
  folders as uploaded: everything inside that folder is that student's. The time is the one Moodle
  wrote the file. From Moodle's own tests of the feedback import and of the "Download submissions in
  folders" option (mod/assign).
- **Rosters**: the grading worksheet (the assignment's "Download grading worksheet"): `Identifier`
  ("Participant 88001": the participant id of the download's names), `Full name`, `Email address`;
  and the participants or grades export: `First name`, `Last name` (or `Surname`), `Email address`,
  optionally `ID number` and `Username`. The export has no participant id: downloads are matched to
  it by name (prefer the worksheet).
- **Ids**: `moodle_<participant id>`.
- **Import** ("Upload grading worksheet"; the assignment needs the "Offline grading worksheet" feedback
  type): `Identifier`, `Full name`, `Email address`, `Grade` (the final points), `Maximum Grade`,
  `Grade can be changed`, `Last modified (grade)` and `Feedback comments` (the points and lateness in
  one line). Moodle needs `Identifier`, `Grade` and `Last modified (grade)`; it skips a row whose grade
  was changed in Moodle after that time unless the upload's "Allow updating records that have been
  modified more recently in Moodle" is ticked. `Last modified (grade)` is the graded submission's
  time, so the file is the same on every rerun over the same facts. One row per student with a
  participant id (or a roster `lms_id` of no LMS); a student with no grade has an empty `Grade`.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from grader.grading.intake.lms.base import GradeLine, Match, NamedFiles, RosterFormat
from grader.safe_text import for_csv
from grader.student.points import number

HEADER = ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade", "Grade can be changed",
          "Last modified (grade)", "Feedback comments"]


class Worksheet(RosterFormat):
    """The grading worksheet, its `Identifier` ("Participant 88001") read as the participant id alone."""

    def row(self, cell):
        return super().row(lambda field: "".join(re.findall(r"\d+", cell(field))) if field == "lms_id" else cell(field))


class Export(RosterFormat):
    """The participants or grades export: the name from its first and last names, and no participant id."""

    def row(self, cell):
        name = " ".join(filter(None, [cell("first"), cell("last") or cell("surname")]))
        if not name:
            return None
        return {"name": name, "email": cell("email"), "sis_user_id": cell("sis_user_id"),
                "sis_login_id": cell("sis_login_id")}


class Moodle(NamedFiles):
    name = "moodle"
    title = "Moodle"
    order = 20
    pattern = r"(?P<name>[^/]+?)_(?P<lms_id>\d+)_assignsubmission_[a-z]+_(?:/(?P<inner>.+/)?)?(?P<file_id>[^/]+)"
    rosters = (Worksheet("moodle-worksheet", frozenset({"identifier", "full name"}),
                         {"lms_id": "identifier", "name": "full name", "email": "email address"}),
               Export("moodle-export", frozenset({"first name", "email address"}),
                      {"first": "first name", "last": "last name", "surname": "surname", "email": "email address",
                       "sis_user_id": "id number", "sis_login_id": "username"}, numbered=False))
    writes_import = True

    def read_name(self, groups: dict[str, str], path: str, lesson: str) -> Match:
        return Match(self.name, f"lms:{groups['lms_id']}", self.grading_id(groups["lms_id"]), groups["file_id"],
                     name=groups["name"], lms_id=groups["lms_id"],
                     upload_prefix=f"{groups['name']}_{groups['lms_id']}_assignsubmission_file_")

    def write_import(self, path: Path, lesson: str, lines: Sequence[GradeLine], points: Mapping[str, float], *,
                     assignments: Sequence[str] = ()) -> str:
        top = sum(points.values())
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(HEADER)
            for line in lines:
                if not line.mine(self):
                    continue
                comment = "" if line.final is None else f"{number(line.final)} of {number(top)} points; {line.lateness}"
                writer.writerow([for_csv(c) for c in [
                    f"Participant {line.lms_id}", line.name, line.email, number(line.final), number(top), "Yes",
                    line.time.strftime("%Y-%m-%d %H:%M:%S") if line.time else "", comment]])
        return ""
