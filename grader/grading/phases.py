"""CPU seconds per grading phase, for benchmarks/autograde_throughput.py.

Where the environment variable GRADER_PHASES names a file, each graded notebook appends one JSON
line to it: the CPU seconds (grading process and kernel together) of starting the kernel and of
running the cells, from grader.pipeline.guarded_execute, and of writing the feedback, from
grader.grading.worker. Nothing is recorded otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os

import psutil

PHASES = "GRADER_PHASES"


def enabled() -> bool:
    return bool(os.environ.get(PHASES))


def tree_cpu(pid: int | None) -> float:
    """CPU seconds used so far by process `pid` and its descendants, the reaped ones included."""
    if pid is None:
        return 0.0
    total = 0.0
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(pid)
        for process in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                times = process.cpu_times()
                total += times.user + times.system + times.children_user + times.children_system
    return total


def record(**seconds: float) -> None:
    """Append {phase: CPU seconds} as one line of the GRADER_PHASES file, if it is set."""
    path = os.environ.get(PHASES)
    if path:
        with open(path, "a") as file:  # one short write per line: lines of parallel workers do not mix
            file.write(json.dumps(seconds) + "\n")
