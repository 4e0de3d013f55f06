"""A lesson's grades, derived on every run from the term's facts, and the one table every output is written from.

The facts: each graded submission's points per exercise (the gradebook, via the batch's results),
its time and the LMS's late mark (grader.grading.intake.collect), the people and roster
(grader.grading.intake.people), the late policy as configured now (grader.grading.policy.late), and the
instructor's overrides (grader.grading.policy.overrides). `build` turns them into one `Row` per student:
everyone with a submission, and everyone on the roster (without a submission: "no submission").
The grades CSV, the LMS import files, the overview and the feedback summaries all read these rows,
so they always agree, and the same facts always give the same rows.

`snapshot` and `changes` compare a run's rows with the last run's (kept as `grades/<lesson>.json`),
so every run lists each total that changed and why: grading (a new attempt, a regrade, a fix), the
late policy (deadline, extension, penalty), or an override.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from grader.grading.intake.collect import Submission
from grader.grading.intake.people import People, Person
from grader.grading.policy.late import Lateness, LatePenalty, LatePolicy, lateness
from grader.grading.policy.overrides import TOTAL, Override
from grader.grading.running.jobs import Result
from grader.safe_text import for_terminal
from grader.student.points import number
from grader.student.points import total as points_total

NO_SUBMISSION = "no submission"


@dataclass(frozen=True)
class Row:
    """One student's grade on one lesson, with everything it came from."""

    student: str
    person: Person | None
    status: str  # "graded", "failed", NO_SUBMISSION
    graded: dict[str, float | None]  # points per exercise as grading gave them
    scores: dict[str, float | None]  # with the overrides applied
    overrides: dict[str, Override]
    lateness: Lateness
    final: float | None  # the lesson's points after the late penalty, or the total override
    result: Result | None = None
    submission: Submission | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.person.name if self.person and self.person.name else ""

    @property
    def total(self) -> float | None:
        """Points before any late penalty (overrides of exercises included)."""
        return points_total(self.status, self.scores)


def build(lesson: str, results: Sequence[Result], points: Mapping[str, float], *, people: People,
          submissions: Mapping[str, Submission], policy: LatePolicy, penalty: LatePenalty,
          overrides: Mapping[str, Mapping[str, Override]]) -> list[Row]:
    """One Row per student with a submission or on the roster, sorted by id."""
    by_student = {r.student: r for r in results}
    students = sorted(set(by_student) | {p.id for p in people.roster()})
    rows = []
    for student in students:
        result = by_student.get(student)
        submission = submissions.get(student)
        mine = dict(overrides.get(student, {}))
        status = result.status if result else NO_SUBMISSION
        graded = {name: (result.scores.get(name) if result and result.status == "graded" else None) for name in points}
        scores = {name: (mine[name].points if name in mine else graded[name]) for name in points}
        total = points_total(status, scores)
        late = lateness(lesson, student, submission.time if submission else None,
                        submission.lms_late if submission else False, total, policy, penalty)
        final = None if total is None else max(0.0, total - late.penalty)
        if TOTAL in mine:
            final = mine[TOTAL].points
        notes = [f"override {name}: {number(o.points)} ({o.reason})" for name, o in sorted(mine.items())]
        if submission and submission.edited:
            notes.append("graded as edited by hand")
        if result and result.feedback_error:
            notes.append(f"no feedback page: {result.feedback_error}")
        rows.append(Row(student, people.persons.get(student), status, graded, scores, mine, late, final, result,
                        submission, notes))
    return rows


def snapshot(rows: Sequence[Row]) -> dict[str, dict]:
    """What `changes` compares, per student: the points per exercise, total, penalty and final points."""
    return {r.student: {"scores": r.scores, "total": r.total, "penalty": r.lateness.penalty, "final": r.final,
                        "late": r.lateness.describe(), "overrides": sorted(r.overrides)} for r in rows}


def read_snapshot(path: Path) -> dict[str, dict] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_snapshot(path: Path, rows: Sequence[Row]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(snapshot(rows), indent=1, sort_keys=True) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class Change:
    student: str
    what: str  # an exercise's grade_id, or "final"
    before: float | None
    after: float | None
    why: str


def changes(before: Mapping[str, dict] | None, rows: Sequence[Row]) -> list[Change]:
    """Every exercise and final total that differs from `before` (the last run's snapshot), with why."""
    if before is None:
        return []
    found = []
    for row in rows:
        old = before.get(row.student)
        if old is None:
            if row.final is not None:
                found.append(Change(row.student, "final", None, row.final, "first graded"))
            continue
        for name, after in row.scores.items():
            if old["scores"].get(name) != after:
                why = "override" if name in row.overrides or name in old.get("overrides", []) else "grading"
                found.append(Change(row.student, name, old["scores"].get(name), after, why))
        if old["final"] != row.final:
            reasons = []
            if old["total"] != row.total:
                reasons.append("grading" if not row.overrides and not old.get("overrides") else "grading or override")
            if old["penalty"] != row.lateness.penalty:
                reasons.append(f"late policy: {row.lateness.describe() or 'on time'}")
            if TOTAL in row.overrides or TOTAL in old.get("overrides", []):
                reasons.append("override")
            found.append(Change(row.student, "final", old["final"], row.final, "; ".join(reasons) or "grading"))
    return found


def who(student: str, names: Mapping[str, str] | None = None) -> str:
    """A student as the instructor reads them in the terminal: the id, and the roster's name beside it
    ("canvas_1001 (Lovelace, Ada)"), both escaped."""
    name = (names or {}).get(student, "")
    return for_terminal(student) + (f" ({for_terminal(name)})" if name else "")


def changes_table(lesson: str, found: Sequence[Change], students: int, *, first: bool = False,
                  names: Mapping[str, str] | None = None) -> str:
    """The changes for the terminal: one line per exercise or total that changed (ids and names escaped);
    `first` when there was no last run to compare with."""
    if first:
        return f"  changed since the last run   (none: this is the first run of {lesson}, {students} students)"
    if not found:
        return f"  changed since the last run   none ({students} students)"
    rows = [(who(c.student, names), c.what, number(c.before, "-"), number(c.after, "-"), for_terminal(c.why))
            for c in found]
    head = ("student", "what", "before", "after", "why")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    lines = [f"  changed since the last run   {len({c.student for c in found})} of {students} students"]
    for row in [head, *rows]:
        lines.append("    " + "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True))
                     + "  " + row[4])
    return "\n".join(lines)
