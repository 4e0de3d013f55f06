"""The late policy, and the one place that decides how late a submission is and what it costs.

Configured in the course's nbgrader configuration (grader/nbgrader_config.py), for example:

    c.LatePolicy.deadlines = {"03-parallel-heads": "2026-12-01 23:59:00 UTC"}
    c.LatePolicy.extensions = {"03-parallel-heads": {"ada": 48}}   # hours, per student id
    c.LatePenalty.percent_per_day = 10                             # of the score, per started day late
    c.LatePenalty.max_percent = 100

Lateness is computed on every run from the stored facts (each submission's time, the LMS's own
late mark) and the policy as configured now; nothing of it is stored in the gradebook, and no
kernel runs again when the policy changes. A submission is late when its time is past the deadline
plus the student's extension; it is also flagged when the LMS marked it late (Canvas's `LATE_`),
but only time past the deadline costs points, since only it can be counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from traitlets import Dict, Float
from traitlets.config import Configurable

from grader.grading.intake.ids import parse_time
from grader.student.points import number

DAY = 24 * 3600


class LatePolicy(Configurable):
    """Deadlines per lesson and extensions per student, from the course configuration."""

    deadlines = Dict(help="lesson id -> deadline, e.g. '2026-12-01 23:59:00 UTC' or '2026-12-01 23:59:00+01:00' "
                          "(no zone: UTC)").tag(config=True)
    extensions = Dict(help="lesson id -> {student id: hours of extension}").tag(config=True)

    def deadline(self, lesson: str) -> datetime | None:
        text = self.deadlines.get(lesson)
        return parse_time(text) if text else None

    def extension_hours(self, lesson: str, student: str) -> float:
        return max(0.0, float(self.extensions.get(lesson, {}).get(student, 0) or 0))

    def due(self, lesson: str, student: str) -> datetime | None:
        """When `student`'s submission of `lesson` is due: the deadline plus their extension (None: no deadline)."""
        deadline = self.deadline(lesson)
        return None if deadline is None else deadline + timedelta(hours=self.extension_hours(lesson, student))

    def closes(self, lesson: str) -> datetime | None:
        """When `lesson` is closed for every student: its deadline plus the longest extension (None: no deadline)."""
        deadline = self.deadline(lesson)
        if deadline is None:
            return None
        students = self.extensions.get(lesson, {})
        return deadline + timedelta(hours=max((self.extension_hours(lesson, s) for s in students), default=0.0))


class LatePenalty(Configurable):
    """What lateness costs: a share of the score per started day late."""

    percent_per_day = Float(10.0, help="percent of the notebook's score taken per started day late").tag(config=True)
    max_percent = Float(100.0, help="the most a late notebook loses, in percent of its score").tag(config=True)

    def penalty(self, score: float | None, seconds_late: float) -> float:
        """Points taken from `score` for `seconds_late` seconds past the deadline."""
        if seconds_late <= 0 or not score:
            return 0.0
        days = math.ceil(seconds_late / DAY)
        return score * min(self.max_percent, days * self.percent_per_day) / 100


@dataclass(frozen=True)
class Lateness:
    """How late one submission was, and what it cost."""

    seconds: float = 0.0  # past the due date, extension included
    penalty: float = 0.0  # points taken off
    lms_marked: bool = False  # the LMS's own late mark
    extension_hours: float = 0.0

    @property
    def late(self) -> bool:
        return self.seconds > 0 or self.lms_marked

    def describe(self) -> str:
        """One line: "late 1 d 2 h (-1.5 points)", "late, marked by the LMS", or "" when on time."""
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
        text += f" (after an extension of {self.extension_hours:g} h)" if self.extension_hours else ""
        return text + (f" (-{number(self.penalty)} points)" if self.penalty else "")

    def status(self) -> str:
        """For a student: "on time", "on time (extension of 48 h)", or `describe()`."""
        if self.late:
            return self.describe()
        return "on time" + (f" (extension of {self.extension_hours:g} h)" if self.extension_hours else "")


def lateness(lesson: str, student: str, time: datetime | None, lms_late: bool, score: float | None,
             policy: LatePolicy, penalty: LatePenalty) -> Lateness:
    """The lateness of `student`'s submission of `lesson` handed in at `time`, and its cost on `score`."""
    due = policy.due(lesson, student)
    seconds = 0.0 if due is None or time is None else max(0.0, (time - due).total_seconds())
    return Lateness(seconds, penalty.penalty(score, seconds), lms_late, policy.extension_hours(lesson, student))
