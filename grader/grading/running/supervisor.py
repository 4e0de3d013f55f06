"""Run grading jobs on this machine so that no submission can cost more than its own grade.

A pebble `ProcessPool` of `workers` grading processes, forked from this one (nbgrader already
imported), grades the jobs. Each process grades jobs one after another and is
replaced by a fresh one after `jobs_per_process` jobs. Each job has a wall-clock limit: a job that
hangs past it is stopped with its process and its kernel (bwrap's `--die-with-parent`), and reported
as failed; a process that dies costs only the job it was grading. The other jobs carry on, so a
re-run meets the same limits. The settings are `c.GradingProcesses` of the course's nbgrader
configuration.
"""

from __future__ import annotations

import gc
import math
import multiprocessing
import os
import sys
from collections.abc import Callable
from concurrent.futures import TimeoutError as JobTimeout
from concurrent.futures import as_completed
from pathlib import Path

from pebble import ProcessExpired, ProcessPool
from traitlets import Float, Integer
from traitlets.config import Configurable

from grader.grading.running.failure_detail import traceback_of
from grader.grading.running.jobs import Job, Result
from grader.grading.running.worker import grade


def default_workers() -> int:
    """One grading process more than this machine's cores (GradingProcesses.workers = 0)."""
    return (os.cpu_count() or 1) + 1


class GradingProcesses(Configurable):
    """How `python -m grader autograde` grades on this machine: its grading processes and their time limits."""

    workers = Integer(0, help="Grading processes side by side; 0: one more than this machine's cores, since each "
                              "process leaves its core idle while it waits for its kernel, and its kernel while it "
                              "writes the grades and feedback. `--workers` overrides it.").tag(config=True)
    jobs_per_process = Integer(25, help="Jobs a grading process grades before a fresh one takes over: reusing a "
                                        "process saves copying the pages a freshly forked one touches; retiring it "
                                        "bounds what its caches hold.").tag(config=True)
    job_timeout_margin = Float(300.0, help="Seconds one submission may take beyond GuardedExecute.notebook_timeout "
                                           "(kernel start, repairs, feedback) before its grading process is killed "
                                           "and it is reported as failed. Without a notebook time limit, no job is "
                                           "stopped.").tag(config=True)


def _context():
    if sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _write_to(log: str | None) -> None:
    """A grading process's stdout and stderr go to `log` (None: left as they are)."""
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)


def _grade(job: Job) -> Result:
    """`grade`, looked up in the grading process (the pool sends this function by name)."""
    return grade(job)


def supervise(jobs: list[Job], *, workers: int, job_timeout: float, log: Path | None = None,
              done: Callable[[Result], None] = lambda result: None,
              settings: GradingProcesses | None = None) -> list[Result]:
    """Grade `jobs` in at most `workers` processes at a time; call `done(result)` as each ends.

    Returns one Result per job, in the order of `jobs`. `job_timeout` may be math.inf (no limit).
    `settings` default to GradingProcesses' own.
    """
    settings = settings or GradingProcesses()
    timeout = None if math.isinf(job_timeout) else job_timeout
    context = _context()
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here may be written twice by a fork
        stream.flush()
    # This process's objects kept out of the jobs' garbage collections: a collection that walked them
    # would write to their pages, and each forked process would copy those pages for itself.
    gc.collect()
    gc.freeze()
    results: list[Result | None] = [None] * len(jobs)
    try:
        with ProcessPool(max_workers=workers, max_tasks=settings.jobs_per_process, context=context,
                         initializer=_write_to, initargs=(str(log) if log else None,)) as pool:
            futures = {pool.schedule(_grade, args=(job,), timeout=timeout): index
                       for index, job in enumerate(jobs)}
            for future in as_completed(futures):
                index = futures[future]
                results[index] = _outcome(future, jobs[index], job_timeout)
                done(results[index])
    finally:
        gc.unfreeze()
    return results


def _outcome(future, job: Job, job_timeout: float) -> Result:
    """The job's Result, or a failed one saying what happened to its process."""
    try:
        return future.result()
    except JobTimeout:
        return Result(job.student, "failed", reason=f"grading took longer than {job_timeout:.0f} s and was stopped")
    except ProcessExpired as error:
        return Result(job.student, "failed", reason=f"its grading process died (exit code {error.exitcode}); "
                                                    "no other submission was affected")
    except Exception as error:  # the job's result could not reach this process
        return Result(job.student, "failed", reason=f"grader error: {type(error).__name__}: {error}",
                      detail=traceback_of(error))
