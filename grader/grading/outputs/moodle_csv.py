"""A lesson's grades as Moodle's offline grading worksheet, to upload in the assignment
("Upload grading worksheet"; the assignment needs the "Offline grading worksheet" feedback type).

Columns as Moodle's own worksheet has them: `Identifier` ("Participant 88001": the participant id
of the download's file names, or the roster's), `Full name`, `Email address`, `Grade` (the final
points, after any late penalty), `Maximum Grade`, `Grade can be changed`, `Last modified (grade)`
and `Feedback comments` (the points and lateness in one line). Moodle needs `Identifier`, `Grade`
and `Last modified (grade)`; it skips a row whose grade was changed in Moodle after that time unless
the upload's "Allow updating records that have been modified more recently in Moodle" is ticked.
`Last modified (grade)` is the time of the graded submission, so the file is the same on every
rerun over the same facts. One row per student Moodle gave a participant id (or whose roster
`lms_id` names no LMS); a student with no grade has an empty `Grade`.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from grader.grading.policy.grades import Row
from grader.safe_text import for_csv
from grader.student.points import number

HEADER = ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade", "Grade can be changed",
          "Last modified (grade)", "Feedback comments"]


def write(path: Path, rows: Sequence[Row], points: dict[str, float]) -> Path:
    top = sum(points.values())
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        for row in rows:
            if not (row.person and row.person.lms_id) or row.person.lms not in ("moodle", ""):
                continue
            when = row.submission.time if row.submission and row.submission.time else None
            comment = ("" if row.final is None
                       else f"{number(row.final)} of {number(top)} points; {row.lateness.status()}")
            writer.writerow([for_csv(c) for c in [
                f"Participant {row.person.lms_id}", row.name or row.student, row.person.email, number(row.final),
                number(top), "Yes", when.strftime("%Y-%m-%d %H:%M:%S") if when else "", comment]])
    return path

