"""The instructor's manual score overrides: facts of the term, kept in the course's state and applied on every run.

`python -m grader override <lesson> <student> <exercise> <points> --reason "..."` (`make override`)
records that `student`'s `exercise` (a test cell's grade_id, as the grades CSV heads its column) is
worth `points` whatever grading gives; the exercise `total` sets the lesson's final points outright
(no late penalty is taken from it). The student must be on the roster or have a submission of the
lesson collected: any other id (a typo) is refused, with the ids there are. `--remove` takes an
override back (a dangling one too), `--list` shows them. They
live in `overrides.json` (Layout.overrides) and survive every rerun and regrade; the next
`make autograde LESSON=<lesson>` rebuilds the grades with them, without running a kernel.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import nbformat

from grader import cell_roles
from grader.course import ROOT, nbgrader_config, select_lessons
from grader.errors import UsageError
from grader.grading.intake.ids import normalised_id
from grader.grading.intake.people import People
from grader.layout import Layout
from grader.safe_text import for_terminal
from grader.student.points import number

TOTAL = "total"


@dataclass(frozen=True)
class Override:
    points: float
    reason: str
    when: str


def load(path: Path) -> dict[str, dict[str, dict[str, Override]]]:
    """lesson -> student -> exercise -> Override, as stored in `path` (empty when there is none)."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {lesson: {student: {exercise: Override(**o) for exercise, o in items.items()}
                         for student, items in students.items()} for lesson, students in data.items()}
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise UsageError(f"the overrides file {path} cannot be read ({type(error).__name__}: {error}): "
                         "fix it by hand or restore it from a backup") from None


def save(path: Path, table: dict[str, dict[str, dict[str, Override]]]) -> None:
    data = {lesson: {student: {exercise: asdict(o) for exercise, o in sorted(items.items())}
                     for student, items in sorted(students.items()) if items}
            for lesson, students in sorted(table.items()) if any(students.values())}
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def main(*, lesson: str, student: str = "", exercise: str = "", points: float | None = None, reason: str = "",
         remove: bool = False, course: Path = ROOT, now: datetime | None = None) -> str:
    """Record, remove or (without a student) list overrides of `lesson`; return what to tell the instructor."""
    [lesson] = select_lessons([lesson])
    layout = Layout.of(nbgrader_config(course))
    table = load(layout.overrides)
    if not student:
        rows = [f"{s}\t{e}\t{number(o.points)}\t{o.when}\t{for_terminal(o.reason)}"
                for s, items in sorted(table.get(lesson, {}).items()) for e, o in sorted(items.items())]
        return "\n".join(rows) or f"no overrides for {lesson}"
    ident = normalised_id(student)
    if ident is None:
        raise UsageError(f"{for_terminal(student)!r} is not a student id: use the id the grades CSV gives")
    points_of = cell_roles.test_points(nbformat.read(layout.release_notebook(lesson), as_version=4))
    top = sum(points_of.values()) if exercise == TOTAL else points_of.get(exercise)
    if top is None:
        raise UsageError(f"{lesson} has no exercise {for_terminal(exercise)!r}: one of {', '.join(points_of)}, "
                         f"or {TOTAL}")
    if not remove and ident not in (known := students(layout, lesson)):
        ids = ", ".join(known) if known else "none yet (give the roster or grade the lesson first)"
        raise UsageError(f"{ident} is neither on the roster nor has a submission of {lesson} collected: "
                         f"check the id in the grades CSV. The ids there are: {ids}")
    mine = table.setdefault(lesson, {}).setdefault(ident, {})
    if remove:
        if mine.pop(exercise, None) is None:
            raise UsageError(f"{ident} has no override of {exercise} in {lesson}")
        save(layout.overrides, table)
        return f"removed the override of {ident}'s {exercise}; make autograde LESSON={lesson} rebuilds the grades"
    if points is None or not 0 <= points <= top:
        raise UsageError(f"the points must be between 0 and {number(top)} for {exercise}")
    if not reason.strip():
        raise UsageError("say why with --reason: it is kept with the override")
    when = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    mine[exercise] = Override(points, reason.strip(), when)
    save(layout.overrides, table)
    return (f"{ident}'s {exercise} in {lesson} is now {number(points)} of {number(top)} whatever grading gives; "
            f"make autograde LESSON={lesson} rebuilds the grades (no kernel runs)")


def students(layout: Layout, lesson: str) -> list[str]:
    """The ids an override of `lesson` may name: everyone on the roster last given, and everyone with a
    submission of `lesson` collected (its folder in nbgrader's submitted folder), sorted."""
    roster = {p.id for p in People.load(layout.people).roster()}
    collected = {d.parent.name for d in layout.submitted.glob(f"*/{lesson}") if d.is_dir()}
    return sorted(roster | collected)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lesson", help="lesson id, e.g. 03-parallel-heads")
    parser.add_argument("student", nargs="?", default="", help="student id, as the grades CSV gives it "
                                                               "(none: list the lesson's overrides)")
    parser.add_argument("exercise", nargs="?", default="",
                        help=f"the test cell's grade_id (a column of the grades CSV), or {TOTAL} for the final points")
    parser.add_argument("points", nargs="?", type=float, help="the points to give")
    parser.add_argument("--reason", default="", help="why (kept with the override)")
    parser.add_argument("--remove", action="store_true", help="take the override back")
    parser.add_argument("--course", type=Path, default=ROOT, help="folder whose nbgrader_config.py to use")


def run(args: argparse.Namespace) -> None:
    print(main(lesson=args.lesson, student=args.student, exercise=args.exercise, points=args.points,
               reason=args.reason, remove=args.remove, course=args.course))
