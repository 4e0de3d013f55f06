"""When a lesson is due, as the student sees it: its deadline, their extension, and whether handing in now is late.

`make check` and `make submit` print it (grader/student/check.py, grader/student/submit.py). Where
the deadline comes from:

- in a student distribution, `.course/deadlines.json`, which `make dist` writes from the course's
  late policy as it is when it publishes (grader/authoring/dist.py): each published lesson's
  deadline, in UTC. It holds no extension: one distribution goes to every student, and a list of
  extensions by student would tell each of them who else has one. So a student's extension is
  theirs to learn from the instructor (or the LMS's own due date), and the line says so;
- in the course repository, the course's late policy itself (`c.LatePolicy` in nbgrader_config.py),
  with the extension of the student id `make submit` is given.

Nothing a notebook holds (its metadata, its cells' output) is read: a notebook cannot move its own
deadline. Every text printed goes through grader.safe_text.for_terminal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from grader.safe_text import for_terminal
from grader.student.layout import DEADLINES, is_distribution, nbgrader_config

TIME_FORMAT = "%Y-%m-%d %H:%M:%S UTC"


def parse_time(text: str) -> datetime:
    """"2026-12-01 23:59:00 UTC", "...+01:00" or ISO 8601, in UTC (no zone: UTC); ValueError when not a time."""
    text = re.sub(r"\s*(?:UTC|Z)$", "", str(text).strip(), flags=re.IGNORECASE)
    text = re.sub(r"\s+([+-]\d\d:?\d\d)$", r"\1", text)
    when = datetime.fromisoformat(text)
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


@dataclass(frozen=True)
class Due:
    """A lesson's deadline for one student: None when it has none; `extension_hours` None when not known here."""

    deadline: datetime | None
    extension_hours: float | None = None
    problem: str = ""  # why the deadline could not be read

    @property
    def due(self) -> datetime | None:
        return None if self.deadline is None else self.deadline + timedelta(hours=self.extension_hours or 0)


def due(lesson: str, student: str = "") -> Due:
    """`lesson`'s deadline and `student`'s extension, from this copy's late policy (see the module's doc)."""
    try:
        if is_distribution():
            text = json.loads(DEADLINES.read_text(encoding="utf-8")).get(lesson) if DEADLINES.is_file() else None
            return Due(parse_time(text) if text else None)
        policy = nbgrader_config().get("LatePolicy", {})
        text = dict(policy.get("deadlines", {})).get(lesson)
        hours = dict(dict(policy.get("extensions", {})).get(lesson, {})).get(student, 0) if student else None
        return Due(parse_time(text) if text else None, None if hours is None else max(0.0, float(hours or 0)))
    except (OSError, ValueError, TypeError, AttributeError) as error:
        return Due(None, problem=f"{type(error).__name__}: {error}")


def span(seconds: float) -> str:
    """3 d 4 h, 5 h 12 min, 7 min."""
    minutes = int(seconds // 60)
    days, hours = minutes // (24 * 60), minutes % (24 * 60) // 60
    if days:
        return f"{days} d {hours} h"
    return f"{hours} h {minutes % 60} min" if hours else f"{minutes % 60} min"


def describe(lesson: str, when: Due, now: datetime | None = None, *, handed_in: bool = False) -> str:
    """One line: when `lesson` is due and whether a submission made `now` (default: the current time) is late;
    with `handed_in`, of the submission just made."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    if when.problem:
        return for_terminal(f"  deadline: unknown (this copy's deadlines cannot be read: {when.problem})")
    if when.deadline is None:
        return "  deadline: none set for this lesson"
    line = f"  deadline: {when.deadline.strftime(TIME_FORMAT)}"
    if when.extension_hours:
        line += f", with your extension of {when.extension_hours:g} h: due {when.due.strftime(TIME_FORMAT)}"
    unknown = when.extension_hours is None
    made = "this submission is" if handed_in else "a submission made now would be"
    left = (when.due - now).total_seconds()
    if left >= 0:
        line += f"; {made} on time ({span(left)} left)"
    else:
        line += f"; {made} late by {span(-left)}"
        line += " (unless an extension your instructor gave you covers it)" if unknown else ""
    if unknown and left >= 0:
        line += "; an extension your instructor gave you is added to the deadline"
    return for_terminal(line)
