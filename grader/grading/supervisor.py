"""Run grading jobs on this machine so that no submission can cost more than its own grade.

A pebble `ProcessPool` of `workers` grading processes, forked from this one (nbgrader already
imported), grades the jobs. Each process grades jobs one after another and is
replaced by a fresh one after `JOBS_PER_PROCESS` jobs. Each job has a wall-clock limit: a job that
hangs past it is stopped with its process and its kernel (bwrap's `--die-with-parent`), and reported
as failed; a process that dies costs only the job it was grading. The other jobs carry on, so a
re-run meets the same limits.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
from collections.abc import Callable
from concurrent.futures import TimeoutError as JobTimeout
from concurrent.futures import as_completed
from pathlib import Path

from pebble import ProcessExpired, ProcessPool

from grader.grading.worker import Job, Result, grade

# Jobs a process grades before a fresh one takes over: reusing a process saves what a freshly forked one
# spends copying the pages it touches; retiring it bounds what its caches can hold.
JOBS_PER_PROCESS = 25


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
              done: Callable[[Result], None] = lambda result: None) -> list[Result]:
    """Grade `jobs` in at most `workers` processes at a time; call `done(result)` as each ends.

    Returns one Result per job, in the order of `jobs`.
    """
    context = _context()
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here may be written twice by a fork
        stream.flush()
    # This process's objects kept out of the jobs' garbage collections: a collection that walked them
    # would write to their pages, and each forked process would copy those pages for itself.
    gc.collect()
    gc.freeze()
    results: list[Result | None] = [None] * len(jobs)
    try:
        with ProcessPool(max_workers=workers, max_tasks=JOBS_PER_PROCESS, context=context,
                         initializer=_write_to, initargs=(str(log) if log else None,)) as pool:
            futures = {pool.schedule(_grade, args=(job,), timeout=job_timeout): index
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
        return Result(job.student, "failed", reason=f"grader error: {type(error).__name__}: {error}")
