"""Throughput of `python -m grader autograde` against stock `nbgrader autograde`, same submissions.

    .venv/bin/python -m benchmarks.autograde_throughput [--lesson 03-parallel-heads] [-n 60]

Makes N submissions of a lesson from its release, cycling through the lesson's fixture students
(tests/fixtures/<lesson>/submissions.toml: the reference answers, the untouched release and the
common mistakes, so a mix of right and wrong answers; fixtures that only burn a cell time-out,
such as an infinite loop, are left out by default). Two throw-away courses get identical copies.
Then, in the same run, it grades them with

- stock nbgrader: one sequential `nbgrader autograde <lesson>` command, then (timed separately)
  one `nbgrader generate_feedback <lesson>`;
- ours: one `python -m grader autograde <lesson>` (autograde, feedback, CSV and plot, every kernel
  in the sandbox), and the same without the sandbox (`--unsafe-no-sandbox`), to price it,

checks that both gradebooks hold identical scores for every test cell of every submission, and
prints submissions per minute, CPU seconds per submission (the command and every process it
waited for: nbgrader, workers, kernels) and the ratios. Both use the course's nbgrader configuration, so
they grade exactly alike. Timings include each command's start-up. Other work on the machine
skews the figures: the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook

from grader.course import REPO, select_lessons
from tests.support import Course, build, make_course, variants


def submit(courses: list[Course], lesson: str, count: int, exclude: set[str]) -> list[str]:
    """Write `count` submissions into each course; return the student ids."""
    chosen = [v for v in variants(lesson) if v.name not in exclude]
    if not chosen:
        raise SystemExit(f"{lesson} has no fixture submissions to build from")
    release = courses[0].lessons / lesson / f"{lesson}.ipynb"
    notebooks = {v.name: nbformat.writes(build(lesson, release, v)) for v in chosen}
    students = []
    for index, variant in zip(range(count), itertools.cycle(chosen), strict=False):
        student = f"s{index:03d}_{variant.name.replace('-', '_')}"
        for course in courses:
            path = course.layout.submitted_notebook(student, lesson)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(notebooks[variant.name])
        students.append(student)
    return students


def timed(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the command and every process it waited for, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[2:4])} exited with {done.returncode}:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return seconds, cpu, done.stdout


def scores(course: Course, lesson: str, students: list[str]) -> dict[str, dict[str, float | None]]:
    with Gradebook(f"sqlite:///{course.gradebook}") as gradebook:
        return {student: {g.name: g.score for g in gradebook.find_submission_notebook(lesson, lesson, student).grades}
                for student in students}


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main(*, lesson: str, count: int, workers: int | None, timeout: int, exclude: set[str], keep: Path | None) -> float:
    """Run the comparison; return ours/stock throughput ratio (autograde only)."""
    [lesson] = select_lessons([lesson])
    with tempfile.TemporaryDirectory(prefix="autograde-bench-") as scratch:
        root = keep or Path(scratch)
        stock, ours, bare = (make_course(root / name, cell_timeout=timeout) for name in ("stock", "ours", "bare"))
        students = submit([stock, ours, bare], lesson, count, exclude)
        cores = os.cpu_count()
        print(f"{lesson}: {len(students)} submissions, {cores} cores, load average {load()} (1/5/15 min)")

        nbgrader = [sys.executable, "-m", "nbgrader"]

        def report(label: str, seconds: float, cpu: float, note: str = "") -> None:
            print(f"{label:<34}{seconds:7.1f} s {60 * count / seconds:6.1f} submissions/min "
                  f"{cpu / count:5.2f} CPU s/submission  (load {load()}{note})")

        stock_s, stock_cpu, _ = timed([*nbgrader, "autograde", lesson, "--create", "--force"], stock.root)
        report("stock nbgrader autograde", stock_s, stock_cpu)
        feedback_s, feedback_cpu, _ = timed([*nbgrader, "generate_feedback", lesson, "--force"], stock.root)
        report("stock nbgrader generate_feedback", feedback_s, feedback_cpu)
        ours_s, ours_cpu, summary = timed([sys.executable, "-m", "grader", "autograde", lesson, "--course",
                                           str(ours.root), "--force",
                                           *(["--workers", str(workers)] if workers else [])], REPO)
        report("python -m grader autograde", ours_s, ours_cpu,
               f"; autograde, feedback, CSV and plot, {workers or cores} workers")
        bare_s, bare_cpu, _ = timed([sys.executable, "-m", "grader", "autograde", lesson, "--course", str(bare.root),
                                     "--force", "--unsafe-no-sandbox",
                                     *(["--workers", str(workers)] if workers else [])], REPO)
        report("  the same, --unsafe-no-sandbox", bare_s, bare_cpu)

        theirs, mine, unboxed = (scores(course, lesson, students) for course in (stock, ours, bare))
        differ = [s for s in students if not theirs[s] == mine[s] == unboxed[s]]
        print(f"scores identical for {len(students) - len(differ)} of {len(students)} submissions")
        for student in differ[:10]:
            print(f"  {student}: stock {theirs[student]} ours {mine[student]}")
        if differ:
            print(summary)
        ratio = stock_s / ours_s
        print(f"throughput ratio, ours / stock autograde:                  {ratio:.2f}x")
        print(f"throughput ratio, ours / stock autograde + feedback:       {(stock_s + feedback_s) / ours_s:.2f}x")
        print(f"cost of the sandbox (wall, sandboxed / not):               {ours_s / bare_s:.2f}x "
              f"({ours_cpu / bare_cpu:.2f}x CPU)")
        if differ:
            raise SystemExit(1)
        return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", default="03-parallel-heads")
    parser.add_argument("-n", "--submissions", type=int, default=60)
    parser.add_argument("--workers", type=int, help="our worker processes (default: one per core)")
    parser.add_argument("--timeout", type=int, default=30, help="seconds per cell, for both (default: 30)")
    parser.add_argument("--exclude", nargs="*", default=["infinite-loop"],
                        help="fixture students left out (default: infinite-loop)")
    parser.add_argument("--keep", type=Path, help="build the courses in this folder and keep them")
    args = parser.parse_args()
    main(lesson=args.lesson, count=args.submissions, workers=args.workers, timeout=args.timeout,
         exclude=set(args.exclude), keep=args.keep)
