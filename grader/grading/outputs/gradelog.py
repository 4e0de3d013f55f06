"""The grading log: one line per graded submission (`grading-logs/<lesson>.log` at the course root).

Each line: the time (UTC), the student, the lesson, the score ("7/10", "-" when there is none),
the status ("graded", "graded, up to date", "failed: <reason>", "graded; no feedback page: <why>"),
and the seconds grading took, separated by tabs; then, where there is one, the detail
(`Result.detail`: the traceback of a failure, what nbgrader said, or what a kernel that died wrote
to its stderr, bounded). Student ids,
reasons and details go through `grader.safe_text.for_terminal`, so that no submission can start a
line of its own.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from grader.grading.running.jobs import Result
from grader.safe_text import for_terminal
from grader.student.points import number


def line(lesson: str, result: Result, points: dict[str, float], *, now: datetime | None = None) -> str:
    """The log line of one result (no newline)."""
    when = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    score = "-" if result.total is None else f"{number(result.total)}/{number(sum(points.values()))}"
    status = result.status + (", up to date" if result.cached else "")
    if result.status != "graded":
        status += f": {result.reason}"
    elif result.feedback_error:
        status += f"; no feedback page: {result.feedback_error}"
    fields = [when, for_terminal(result.student), lesson, score, for_terminal(status), f"{result.seconds:.1f}"]
    return "\t".join([*fields, for_terminal(result.detail)] if result.detail else fields)


def append(log: Path, lesson: str, result: Result, points: dict[str, float]) -> None:
    """Add `result`'s line to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as handle:
        handle.write(line(lesson, result, points) + "\n")
