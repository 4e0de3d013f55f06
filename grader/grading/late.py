"""The late policy: a deadline per lesson, extensions per student, and a penalty through nbgrader's own plugin.

Configured in the course's nbgrader configuration (grader/nbgrader_config.py), for example:

    c.LatePolicy.deadlines = {"03-parallel-heads": "2026-12-01 23:59:00 UTC"}
    c.LatePolicy.extensions = {"03-parallel-heads": {"ada": 48}}   # hours, per student
    c.LatePenalty.percent_per_day = 10                             # of the score, per started day late
    c.LatePenalty.max_percent = 100

Before a batch is graded, `prepare` writes the lesson's deadline into the gradebook as nbgrader's
assignment due date and each extension as nbgrader's per-submission extension. nbgrader's autograde
then records each submission's time (its timestamp.txt, written by collect from the file name, or
from the time the LMS wrote the file), and its `AssignLatePenalties` step asks
`AssignLatePenalties.plugin_class`, which the course sets to `LatePenalty`, for the penalty of each
late notebook; nbgrader stores it and subtracts it from the notebook's score.

A submission is flagged late (`read`) when it is past its due date (extension included), or when
the LMS itself marked it late (Canvas's `LATE_` in the file name); only the first costs points,
since only it has a time to count from.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from nbgrader.api import MissingEntry
from nbgrader.plugins import LateSubmissionPlugin
from nbgrader.utils import parse_utc
from traitlets import Dict, Float
from traitlets.config import Configurable

from grader.gradebook import open_gradebook

DAY = 24 * 3600


class LatePolicy(Configurable):
    """Deadlines per lesson and extensions per student, from the course configuration."""

    deadlines = Dict(help="lesson id -> deadline, e.g. '2026-12-01 23:59:00 UTC' (no zone: UTC)").tag(config=True)
    extensions = Dict(help="lesson id -> {student id: hours of extension}").tag(config=True)

    def deadline(self, lesson: str) -> datetime | None:
        text = self.deadlines.get(lesson)
        return parse_utc(text) if text else None


class LatePenalty(LateSubmissionPlugin):
    """nbgrader's late-submission plugin for the course: a share of the score per started day late."""

    percent_per_day = Float(10.0, help="percent of the notebook's score taken per started day late").tag(config=True)
    max_percent = Float(100.0, help="the most a late notebook loses, in percent of its score").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        if total_seconds_late <= 0 or not score:
            return None
        days = math.ceil(total_seconds_late / DAY)
        return score * min(self.max_percent, days * self.percent_per_day) / 100


def prepare(db_url: str, course_id: str, lesson: str, students: list[str], policy: LatePolicy) -> None:
    """Write `lesson`'s deadline and its students' extensions into the gradebook, where nbgrader reads them."""
    extensions = policy.extensions.get(lesson, {})
    with open_gradebook(db_url, course_id) as gradebook, warnings.catch_warnings():
        # A harmless SQLAlchemy notice nbgrader 0.9 triggers when it adds a submission (as in worker.py).
        warnings.filterwarnings("ignore", message=r"Object of type <Submitted\w+> not in session")
        gradebook.update_or_create_assignment(lesson, duedate=policy.deadline(lesson))
        for student in students:
            hours = float(extensions.get(student, 0) or 0)
            extension = timedelta(hours=hours) if hours else None
            try:
                gradebook.find_submission(lesson, student).extension = extension
                gradebook.db.commit()
            except MissingEntry:
                if extension is not None:
                    gradebook.add_submission(lesson, student, extension=extension)


@dataclass(frozen=True)
class Lateness:
    """How late one submission was, and what it cost."""

    seconds: float = 0.0  # past the due date, extension included
    penalty: float = 0.0  # points nbgrader took off
    lms_marked: bool = False  # the LMS's own late mark
    extension_hours: float = 0.0

    @property
    def late(self) -> bool:
        return self.seconds > 0 or self.lms_marked

    def describe(self) -> str:
        """One line: "late 1 d 2 h (-1.5 points)", "late (marked by the LMS)", or ""."""
        if not self.late:
            return ""
        parts = []
        if self.seconds > 0:
            hours = int(self.seconds // 3600)
            minutes = int(self.seconds % 3600) // 60
            parts.append(f"{hours // 24} d {hours % 24} h" if hours >= 24 else f"{hours} h {minutes} min")
        if self.lms_marked:
            parts.append("marked late by the LMS")
        text = "late " + ", ".join(parts)
        return text + (f" (-{self.penalty:g} points)" if self.penalty else "")


def read(db_url: str, course_id: str, lesson: str, students: list[str], submitted: Path) -> dict[str, Lateness]:
    """Each student's `Lateness` on `lesson`, from the gradebook and the name of the file collected."""
    from grader.grading import lms

    found = {}
    with open_gradebook(db_url, course_id) as gradebook:
        for student in students:
            origin = submitted / student / lesson / "collected_from.txt"
            name = origin.read_text(errors="replace").splitlines()[0] if origin.is_file() else ""
            marked = bool(name) and bool((match := lms.match(name)) and match.late)
            try:
                submission = gradebook.find_submission(lesson, student)
            except MissingEntry:
                found[student] = Lateness(lms_marked=marked)
                continue
            penalty = sum(nb.late_submission_penalty or 0 for nb in submission.notebooks)
            extension = submission.extension.total_seconds() / 3600 if submission.extension else 0.0
            found[student] = Lateness(submission.total_seconds_late, penalty, marked, extension)
    return found
