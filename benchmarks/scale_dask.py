"""Throughput of grading over a Dask cluster, with one worker process and then with two.

    .venv/bin/python -m benchmarks.scale_dask [--lesson 03-parallel-heads] [-n 500] [--workers 1 2]

Needs the dask extra (`make scale`). Makes N submissions of a lesson from its release, cycling
through the lesson's fixture students as benchmarks/autograde_throughput.py does (right and wrong
answers; the infinite loop left out by default), one identical copy per throw-away course, one
course per cluster size. For each size it starts a Dask `LocalCluster` of that many worker
processes with one thread each, as `dask worker ... --nthreads 1 --nworkers N` would on each
machine, and grades the course's batch with `grader.grading.autograde.main(executor=...)`: autograde,
feedback, CSV and plot, every kernel in the sandbox, each worker importing nbgrader on its first job.

It prints, per size, submissions per minute (timed from the moment every worker is up to the end
of the batch; the cluster's start-up is printed apart) and CPU seconds per submission (this
process and every process it waited for: scheduler, workers, kernels, start-up included), then the
scaling ratio of the last size to the first, and checks that every submission got identical scores
for every test cell in every run. Workers' output (kernels' start-up notes, Dask's logs) goes to a
log file per run. A machine cannot scale past its cores, and other work on it skews the figures:
the load average is printed before and after. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.batch import add_batch_arguments, busy_cpu, load, submit
from grader.course import select_lessons
from grader.extras import EXTRAS
from grader.grading.autograde import main as autograde
from tests.support import Course, make_course

Scores = dict[str, dict[str, float | None]]


@dataclass
class Run:
    workers: int
    startup: float  # seconds until every worker had joined the cluster
    seconds: float  # seconds of the batch itself
    cpu: float  # CPU seconds the machine was busy, cluster start to close
    scores: Scores
    failed: dict[str, str]  # student -> why grading failed


def output_to(path: str) -> None:
    """Run on each worker: its stdout and stderr, and so its kernels', go to `path` from now on."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def grade_on_cluster(course: Course, lesson: str, workers: int, log: Path) -> Run:
    import distributed

    cpu, start = busy_cpu(), time.monotonic()
    with (distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0") as cluster,
          distributed.Client(cluster) as client):
        client.wait_for_workers(workers, timeout=300)
        client.run(output_to, str(log))
        ready = time.monotonic()
        progress = sys.stderr if sys.stderr.isatty() else io.StringIO()
        batch = autograde(lesson=lesson, course=course.root, force=True, executor=client.get_executor(),
                          progress=progress, out=io.StringIO())
        seconds = time.monotonic() - ready
    return Run(workers, ready - start, seconds, busy_cpu() - cpu, {r.student: r.scores for r in batch.results},
               {r.student: r.reason for r in batch.results if r.status != "graded"})


def main(*, lesson: str, count: int, sizes: list[int], timeout: int, exclude: set[str], keep: Path | None) -> float:
    """Run the benchmark; return the throughput ratio of the last cluster size to the first."""
    [lesson] = select_lessons([lesson])
    if EXTRAS["dask"].missing():
        raise SystemExit(f"the dask extra is missing: install it with `{EXTRAS['dask'].install}`")
    with tempfile.TemporaryDirectory(prefix="scale-dask-bench-") as scratch:
        root = keep or Path(scratch)
        courses = [make_course(root / f"workers-{size}-{index}", cell_timeout=timeout, lessons=[lesson])
                   for index, size in enumerate(sizes)]
        students = submit(courses, lesson, count, exclude)
        print(f"{lesson}: {len(students)} submissions, {os.cpu_count()} cores, load average {load()} (1/5/15 min)")
        runs = []
        for size, course in zip(sizes, courses, strict=True):
            run = grade_on_cluster(course, lesson, size, root / f"workers-{size}.log")
            runs.append(run)
            print(f"Dask, {size} worker{'s' * (size != 1)} x 1 thread  {run.seconds:7.1f} s "
                  f"{60 * count / run.seconds:6.1f} submissions/min {run.cpu / count:5.2f} CPU s/submission  "
                  f"(cluster up in {run.startup:.1f} s; load {load()})", flush=True)
            for student, reason in list(run.failed.items())[:10]:
                print(f"  failed to grade {student}: {reason}")

        first = runs[0].scores
        differ = [s for s in students if any(run.scores.get(s) != first.get(s) for run in runs[1:])
                  or any(s in run.failed for run in runs)]
        print(f"scores identical for {len(students) - len(differ)} of {len(students)} submissions across "
              f"{len(runs)} runs")
        for student in differ[:10]:
            print(f"  {student}: " + "; ".join(f"{run.workers} workers {run.scores.get(student)}" for run in runs))
        ratio = runs[0].seconds / runs[-1].seconds
        print(f"scaling, {sizes[-1]} workers / {sizes[0]}: {ratio:.2f}x the throughput "
              f"(ideal {sizes[-1] / sizes[0]:.2f}x; this machine has {os.cpu_count()} cores)")
        if differ:
            raise SystemExit(1)
        return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_batch_arguments(parser, count=500)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                        help="cluster sizes to run, in order, worker processes of one thread (default: 1 2)")
    args = parser.parse_args()
    main(lesson=args.lesson, count=args.submissions, sizes=args.workers, timeout=args.timeout,
         exclude=set(args.exclude), keep=args.keep)
