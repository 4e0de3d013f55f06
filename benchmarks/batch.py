"""What both benchmarks share: the batch of submissions, the command-line options, the CPU count."""

from __future__ import annotations

import argparse
import itertools
import os
from pathlib import Path

import nbformat

from tests.support import Course, build, variants


def submit(courses: list[Course], lesson: str, count: int, exclude: set[str]) -> list[str]:
    """Write `count` submissions into each course; return the student ids."""
    chosen = [v for v in variants(lesson) if v.name not in exclude]
    if not chosen:
        raise SystemExit(f"{lesson} has no fixture submissions to build from")
    release = courses[0].lessons / lesson / f"{lesson}.ipynb"
    notebooks = {v.name: nbformat.writes(build(lesson, release, v)) for v in chosen}
    students = []
    for index, variant in zip(range(count), itertools.cycle(chosen), strict=False):
        student = f"s{index:03d}_{variant.name.replace('-', '_')}".lower()  # a student id, as collect makes
        for course in courses:
            path = course.layout.submitted_notebook(student, lesson)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(notebooks[variant.name])
        students.append(student)
    return students


def busy_cpu() -> float:
    """CPU seconds the whole machine has been busy since boot (/proc/stat: all but idle and iowait).

    Killed sandboxed processes are not always reaped by a waiting parent, so the command's own
    RUSAGE_CHILDREN misses some kernels; the machine's count misses none (and counts any other work).
    """
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def load() -> str:
    """The machine's load averages over 1, 5 and 15 minutes, as `1.0/1.6/2.4`."""
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def add_batch_arguments(parser: argparse.ArgumentParser, *, count: int) -> None:
    """--lesson, -n, --timeout, --exclude and --keep, with `count` submissions by default."""
    parser.add_argument("--lesson", default="03-parallel-heads")
    parser.add_argument("-n", "--submissions", type=int, default=count)
    parser.add_argument("--timeout", type=int, default=30, help="seconds per cell (default: 30)")
    parser.add_argument("--exclude", nargs="*", default=["infinite-loop"],
                        help="fixture students left out (default: infinite-loop)")
    parser.add_argument("--keep", type=Path, help="build the courses in this folder and keep them")
