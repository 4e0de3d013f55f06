"""What a grading batch tells the instructor: progress while it runs, then a grades CSV, a plot
of the score distribution per exercise, and a summary of what needs attention."""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from tqdm import tqdm

from grader.grading.intake.collect import Skipped
from grader.grading.policy.grades import Row, who
from grader.grading.running.jobs import Result
from grader.grading.running.triage import needs_review
from grader.safe_text import for_csv, for_terminal
from grader.student.points import number


def points_text(result: Result, points: dict[str, float]) -> str:
    if result.status != "graded":
        return f"failed: {for_terminal(result.reason)}"
    return f"{number(result.total, '?')}/{number(sum(points.values()))}" + (" (up to date)" if result.cached else "")


class Progress:
    """A tqdm bar with counts and the time left on a terminal; one plain line per submission otherwise
    (CI logs, files)."""

    def __init__(self, total: int, points: dict[str, float], stream: TextIO = sys.stderr, label: str = ""):
        self.total, self.points, self.stream = total, points, stream
        self.done = 0
        tty = hasattr(stream, "isatty") and stream.isatty()
        self.bar = tqdm(total=total, desc=label, file=stream, dynamic_ncols=True) if tty else None

    def update(self, result: Result) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        else:
            print(f"[{self.done}/{self.total}] {for_terminal(result.student)}: {points_text(result, self.points)} "
                  f"({result.seconds:.1f} s)", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def write_csv(path: Path, rows: Sequence[Row], points: dict[str, float]) -> Path:
    """One row per student (grader.grading.policy.grades): name, points per test cell (overrides applied),
    total before the late penalty, lateness, penalty, final points, status, and notes (flags, why
    grading failed, overrides, a hand edit)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        header = ["student", "name", *points, "total", "late", "penalty", "final", "status", "notes"]
        writer.writerow([for_csv(name) for name in header])
        for row in rows:
            result = row.result
            flags = [str(flag) for flag in result.flags] if result else []
            notes = flags if row.status != "failed" else [result.reason, *flags]
            writer.writerow([for_csv(row.student), for_csv(row.name), *(number(row.scores[n]) for n in points),
                             number(row.total), for_csv(row.lateness.describe()),
                             number(row.lateness.penalty or None), number(row.final), for_csv(row.status),
                             for_csv("; ".join([*notes, *row.notes]))])
    return path



def plot_scores(path: Path, results: Sequence[Result], points: dict[str, float], lesson: str) -> Figure:
    """Histograms of the points students scored on each test cell, and of their totals."""
    graded = [o for o in results if o.status == "graded"]
    panels = [*points.items(), ("total", sum(points.values()))]
    columns = min(len(panels), 3)
    rows = -(-len(panels) // columns)
    figure = Figure(figsize=(4.2 * columns, 3.2 * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, (name, top) in zip(axes, panels, strict=False):
        scores = [o.total if name == "total" else o.scores.get(name) for o in graded]
        scores = [s for s in scores if s is not None]
        ax.hist(scores, bins=np.arange(-0.5, top + 1.0, 1.0), color="tab:blue", edgecolor="white")
        full = sum(s >= top for s in scores) / len(scores) if scores else 0.0
        ax.set_title(f"{name} ({number(top)} pts): {full:.0%} full marks", fontsize=10)
        ax.set_xlabel("points")
        ax.set_ylabel("students")
        ax.set_xticks(range(int(top) + 1) if top <= 12 else np.linspace(0, top, 6))
        ax.set_xlim(-0.6, top + 0.6)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    figure.suptitle(f"{lesson}: score distribution per exercise ({len(graded)} graded submissions)")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return figure


def summary(lesson: str, results: Sequence[Result], skipped: Sequence[Skipped], *, seconds: float,
            workers: int | None, files: dict[str, Path], unsafe: bool = False,
            collect_notes: Sequence[Skipped] = (), notes: Sequence[str] = (),
            names: dict[str, str] | None = None) -> str:
    """The end-of-batch report: graded, failed and why, needing review, timed out, not collected; each
    student by id with the roster's name beside it (`names`), each file after its name and a space."""
    graded = [o for o in results if o.status == "graded"]
    failed = [o for o in results if o.status == "failed"]
    review = [o for o in graded if needs_review(o.flags)]
    timed_out = [o for o in graded if any(f.name == "timeout" for f in o.flags)]
    memory = [o for o in graded if any(f.name == "memory-limit" for f in o.flags)]
    cached = sum(o.cached for o in graded)
    pool = f" with {workers} worker{'s' * (workers != 1)}" if workers else ""
    lines = ["UNSAFE: graded without the sandbox (--unsafe-no-sandbox); these grades cannot be trusted"] * unsafe
    if any(f.name == "no-cgroup" for o in graded for f in o.flags):
        lines.append("WEAKER: kernels had no cgroup of their own (flag no-cgroup): memory only polled, "
                     "time limits in wall time")
    if any(f.name == "grader-uid" for o in graded for f in o.flags):
        lines.append("WEAKER: kernels ran as the grader's own host uid, not one of their own (flag grader-uid): "
                     "grade as root for a uid per kernel")
    lines += [for_terminal(note) for note in notes]
    lines += [f"{lesson}: {len(results)} submissions in {seconds:.0f} s{pool}",
             f"  graded                {len(graded):4d}" + (f" ({cached} already up to date)" if cached else "")]

    def section(title: str, items: Sequence[Result], explain) -> None:
        lines.append(f"  {title:<22}{len(items):4d}")
        lines.extend(f"    {who(o.student, names)}: {for_terminal(explain(o))}" for o in items)

    section("failed to grade", failed, lambda o: o.reason)
    section("needing manual review", review,
            lambda o: "; ".join([*(f.describe() for f in o.flags if f.needs_review),
                                 *([f"feedback: {o.feedback_error}"] if o.feedback_error else [])]))
    section("timed out", timed_out, lambda o: "; ".join(f.describe() for f in o.flags if f.name == "timeout"))
    section("hit the memory limit", memory,
            lambda o: "; ".join(f.describe() for f in o.flags if f.name == "memory-limit"))
    lines.append(f"  {'not collected (files)':<22}{len(skipped):4d}")
    lines.extend(f"    {for_terminal(s.file)}: {for_terminal(s.reason)}" for s in skipped)
    if collect_notes:
        lines.append(f"  {'collect notes':<22}{len(collect_notes):4d}")
        lines.extend(f"    {for_terminal(s.file)}: {for_terminal(s.reason)}" for s in collect_notes)
    width = max((len(name) for name in files), default=0) + 2
    lines.extend(f"  {name + ':':<{width}}{path}" for name, path in files.items())
    return "\n".join(lines)
