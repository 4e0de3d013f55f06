"""What a lesson's students got wrong, per exercise and per student: one HTML page and the same in the terminal.

Per exercise (autograded test cell): the mean points, the share of students with full marks, and
the failure messages grouped (the first error each test cell stopped with, in the autograded
notebook, on one line), each with the students who had it, most common first. Per student: one line
per exercise that lost points, with its message, and the lateness (grader.grading.policy.late).

Every string a submission controls (messages, ids) is escaped: by an autoescaping template on the page (which
also carries a policy that allows no script and no request), `grader.safe_text.for_terminal` in
the terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbconvert.filters import strip_ansi

from grader import cell_roles
from grader.grading.outputs import pages
from grader.grading.policy.grades import Row, who
from grader.grading.running.triage import ERRORS, FLAGS
from grader.safe_text import for_terminal
from grader.student.points import number

MAX_MESSAGE = 300  # characters of one failure message kept: the overview's layout, not a setting
NO_MESSAGE = "no points, no error shown (partial credit, or a test that scored 0 without failing)"
# How a cell ended when the grader stopped it, in words (not the KeyboardInterrupt it shows).
ENDINGS = {**{ename: FLAGS[flag].text.format("the cell") for ename, flag in ERRORS.items()},
           "KeyboardInterrupt": FLAGS["timeout"].text.format("the cell")}


@dataclass
class Exercise:
    """One autograded test cell across the lesson's graded submissions."""

    grade_id: str
    points: float
    mean: float = 0.0
    full: float = 0.0  # share of graded submissions with full marks
    failures: list[tuple[str, list[str]]] = field(default_factory=list)  # (message, students), most common first
    label: str = ""  # the lesson's name for it, "Exercise 3a"

    @property
    def title(self) -> str:
        return f"{self.label} ({self.grade_id})" if self.label else self.grade_id


@dataclass
class Overview:
    lesson: str
    graded: int
    exercises: list[Exercise]
    students: dict[str, list[str]]  # student -> one line per exercise that lost points (and lateness)
    failed: dict[str, str]  # student -> why grading failed
    totals: dict[str, str] = field(default_factory=dict)  # student -> "13.5/15" (final points), or why none
    names: dict[str, str] = field(default_factory=dict)  # student -> the roster's name, where it gives one


def failure_messages(autograded: Path, points: dict[str, float], scores: dict[str, float | None]) -> dict[str, str]:
    """grade_id -> the failure message (the cell's first error) of each test cell that scored below its points."""
    try:
        cells = cell_roles.cells_by_id(nbformat.read(autograded, as_version=4))
    except Exception:  # a missing or unreadable autograded copy: the scores still tell what was lost
        cells = {}
    messages = {}
    for grade_id, top in points.items():
        score = scores.get(grade_id)
        if score is not None and score >= top:
            continue
        errors = [o for o in cells.get(grade_id, {}).get("outputs", []) if o.get("output_type") == "error"]
        if errors and (ending := ENDINGS.get(errors[0].get("ename", ""))):
            messages[grade_id] = ending
        elif errors:
            first = errors[0]  # the cause: later errors (hidden tests that did not run) follow from it
            text = f"{first.get('ename', '')}: {strip_ansi(str(first.get('evalue', '')))}".strip(": ")
            text = " ".join(text.split())
            messages[grade_id] = (text[:MAX_MESSAGE] + "...") if len(text) > MAX_MESSAGE else (text or NO_MESSAGE)
        else:
            messages[grade_id] = NO_MESSAGE
    return messages


def build(lesson: str, rows: Sequence[Row], points: dict[str, float], autograded: dict[str, Path],
          labels: dict[str, str] | None = None) -> Overview:
    """The overview of a lesson's grades (grader.grading.policy.grades); `autograded` maps each student to
    their autograded notebook, `labels` each exercise's grade_id to the lesson's name for it."""
    labels = labels or {}
    graded = [r for r in rows if r.status == "graded"]
    per_student = {r.student: failure_messages(autograded[r.student], points, r.graded)
                   for r in graded if r.student in autograded}
    exercises = []
    for grade_id, top in points.items():
        scores = [r.scores.get(grade_id) or 0.0 for r in graded]
        grouped: dict[str, list[str]] = {}
        for student, messages in per_student.items():
            if grade_id in messages:
                grouped.setdefault(messages[grade_id], []).append(student)
        ranked = sorted(grouped.items(), key=lambda item: (-len(item[1]), item[0]))
        exercises.append(Exercise(grade_id, top, sum(scores) / len(scores) if scores else 0.0,
                                  sum(s >= top for s in scores) / len(scores) if scores else 0.0, ranked,
                                  labels.get(grade_id, "")))
    students, totals = {}, {}
    maximum = sum(points.values())
    for row in rows:
        if row.status == "graded":
            lines = [f"{labels.get(g, g)}: {m}" for g, m in per_student.get(row.student, {}).items()
                     if g not in row.overrides]
            if late := row.lateness.describe():
                lines.append(late)
            students[row.student] = lines + row.notes
        final = number(row.final, "-")
        totals[row.student] = f"{final}/{number(maximum)}" + (f" ({row.status})" if row.status != "graded" else "")
    failed = {r.student: r.result.reason for r in rows if r.status == "failed" and r.result}
    names = {r.student: r.name for r in rows if r.name}
    return Overview(lesson, len(graded), exercises, students, failed, totals, names)


def terminal(overview: Overview, *, most: int = 3) -> str:
    """The overview as lines for the end-of-batch summary: per exercise, then per student that lost points."""
    lines = [f"  per exercise ({overview.graded} graded)"]
    for e in overview.exercises:
        lines.append(f"    {e.title} ({number(e.points)} pts): mean {e.mean:.2f}, full marks {e.full:.0%}")
        for message, students in e.failures[:most]:
            lines.append(f"      {len(students):3d} x {for_terminal(message)}  "
                         f"[{', '.join(who(s, overview.names) for s in students)}]")
        if len(e.failures) > most:
            lines.append(f"      ... {len(e.failures) - most} other messages (see the overview page)")
    losing = {s: lines_ for s, lines_ in overview.students.items() if lines_}
    lines.append(f"  per student ({len(losing)} lost points or were late)")
    for student, items in losing.items():
        lines.append(f"    {who(student, overview.names)}: {overview.totals.get(student, '')}")
        lines.extend(f"      {for_terminal(item)}" for item in items)
    return "\n".join(lines)


def write_html(path: Path, overview: Overview) -> Path:
    """One self-contained page: the per-exercise table with grouped messages, then each student's points and
    what lost them (grader/grading/outputs/templates/overview.html.j2)."""
    return pages.write("overview.html.j2", path, view=overview)
