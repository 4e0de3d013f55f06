"""The distribution in steps: publish the lessons opened so far, then add later ones without touching earlier ones.

Later lessons hand out working versions of earlier graded functions (Lesson 3 gives Lesson 1's
`softmax` and `attention`), so a course publishes its lessons as they open: `make dist
DIR=... LESSONS=01-03`, then `make dist DIR=... LESSONS=01-04`. `LESSONS` is a comma-separated list
of lesson ids, their number prefixes ("03"), or ranges of numbers ("01-03").

Building into an earlier distribution keeps every lesson it already published exactly as it was:
its notebook, its pristine copy and its checksum come from that distribution, not from the current
release, so that a student who pulls the new version keeps their work on the earlier lessons
without a conflict. A lesson whose release changed since it was published is kept as published,
and reported; `--republish <id>` replaces it on purpose.

A lesson is published only when every earlier exercise it hands out a working answer to
(grader/authoring/handouts.py) is closed: its deadline (`c.LatePolicy.deadlines`), plus the longest
extension any student has on it (`c.LatePolicy.extensions`), has passed. A lesson without a
deadline is open. `refuse_open_answers` names every hand-out that is still open, and what to do.
Lessons kept as an earlier distribution published them are not written again, so not checked again.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from grader.authoring.handouts import Handout, handouts
from grader.course import lesson_ids
from grader.errors import DistributionRefused, UnknownLesson
from grader.grading.policy.late import LatePolicy


def parse(spec: str) -> list[str]:
    """The lesson ids `spec` names ("01-03", "03,05", "03-parallel-heads"), in course order."""
    known = lesson_ids()
    number = {lesson: int(lesson.split("-", 1)[0]) for lesson in known if lesson.split("-", 1)[0].isdigit()}
    chosen: set[str] = set()
    for part in filter(None, (p.strip() for p in spec.split(","))):
        if part in known:
            chosen.add(part)
        elif match := re.fullmatch(r"(\d+)(?:-(\d+))?", part):
            low, high = int(match[1]), int(match[2] or match[1])
            found = {lesson for lesson, n in number.items() if low <= n <= high}
            if not found:
                raise UnknownLesson(f"no lesson numbered {part}; the course has: {', '.join(known)}")
            chosen |= found
        else:
            raise UnknownLesson(f"{part!r} is not a lesson id or a range like 01-03; "
                                f"the course has: {', '.join(known)}")
    return [lesson for lesson in known if lesson in chosen]


def published(out: Path, manifest: str, releases: str) -> dict[str, dict[str, bytes]]:
    """lesson -> {distribution path: bytes} of every lesson the distribution in `out` published
    ({} when there is none). A lesson whose pristine copy no longer matches the manifest is left out."""
    try:
        shipped = json.loads((out / manifest).read_text())["releases"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    found = {}
    for lesson, digest in shipped.items():
        pristine = out / releases / f"{lesson}.ipynb"
        folder = out / "lessons" / lesson
        if not pristine.is_file() or hashlib.sha256(pristine.read_bytes()).hexdigest() != digest:
            continue
        files = {f"{releases}/{lesson}.ipynb": pristine.read_bytes()}
        files |= {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
                  if p.is_file() and ".ipynb_checkpoints" not in p.parts and "__pycache__" not in p.parts}
        found[lesson] = files
    return found


# ---------------------------------------------------------------- never an open lesson's answers

@dataclass(frozen=True)
class OpenAnswer:
    """A lesson about to be published that hands out a working answer to an exercise still open."""

    lesson: str  # the lesson that would be published
    handout: Handout  # what it hands out, and whose exercise that answers
    closes: datetime | None  # when that exercise closes (None: it has no deadline)

    def describe(self, policy: LatePolicy) -> str:
        earlier = self.handout.lesson
        what = (f"{self.lesson} hands out `{self.handout.function}`, a working answer to {earlier}'s "
                f"exercise {self.handout.grade_id}")
        if self.closes is None:
            return f"{what}; {earlier} has no deadline, so it is open"
        deadline = utc(policy.deadline(earlier))
        when = f"{earlier}'s deadline is {stamp(deadline)}"
        if self.closes != deadline:
            when += f", and with the longest extension it closes {stamp(self.closes)}"
        return f"{what}; {when}"


def utc(moment: datetime | None) -> datetime | None:
    """`moment` as a timezone-aware UTC time; a naive one (nbgrader's parse_utc gives those) is taken as UTC."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def short(lesson: str) -> str:
    """The lesson's number ("03"), which `parse` reads, or its id if it has none."""
    number = lesson.split("-", 1)[0]
    return number if number.isdigit() else lesson


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def open_answers(lessons: list[str], policy: LatePolicy, now: datetime) -> list[OpenAnswer]:
    """Every hand-out of `lessons` whose exercise has not closed by `now` (naive: UTC)."""
    now, found = utc(now), []
    for lesson in lessons:
        for handout in handouts(lesson):
            closing = policy.closes(handout.lesson)
            if closing is None or closing > now:
                found.append(OpenAnswer(lesson, handout, closing))
    return found


def refuse_open_answers(lessons: list[str], policy: LatePolicy, now: datetime) -> None:
    """Raise DistributionRefused, naming every case, if publishing `lessons` at `now` hands out an open answer."""
    now, found = utc(now), open_answers(lessons, policy, now)
    if not found:
        return
    held = sorted({answer.lesson for answer in found})
    rest = [lesson for lesson in lessons if lesson not in held]
    lines = [f"refusing to publish {', '.join(held)}: {'it hands' if len(held) == 1 else 'they hand'} out working "
             f"answers to exercises still open (it is now {stamp(now)}):"]
    lines += [f"  - {answer.describe(policy)}" for answer in found]
    lines.append("Publish each after the deadline it waits for (c.LatePolicy.deadlines, and c.LatePolicy.extensions, "
                 "in grader/nbgrader_config.py), or leave it out for now"
                 + (f": LESSONS={','.join(map(short, rest))}." if rest else "."))
    raise DistributionRefused("\n".join(lines))
