"""Run grading jobs on this machine so that no submission can cost more than its own grade.

Each job runs in a process of its own, forked from this one (nbgrader already imported), at most
`workers` at a time. The parent keeps a wall-clock limit per job: a job that hangs past it is
killed, with its kernel (bwrap's `--die-with-parent`), and reported as failed; a process that dies
without a result costs only its job. The other jobs carry on, so a re-run meets the same limits.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from pathlib import Path

from grader.grading.worker import Job, Result, grade, prepare, prime, ready

POLL = 0.5  # seconds between two looks at the running jobs
EXIT_GRACE = 5.0  # seconds a job's process has to end once it has sent its result, before it is killed


def _context():
    if sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _child(job: Job, conn: Connection, log: str | None) -> None:
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    conn.send(grade(job))
    conn.close()


def supervise(jobs: list[Job], *, workers: int, job_timeout: float, log: Path | None = None,
              done: Callable[[Result], None] = lambda result: None) -> list[Result]:
    """Grade `jobs`, each in its own process, `workers` at a time; call `done(result)` as each ends.

    Returns one Result per job, in the order of `jobs`.
    """
    context = _context()
    if jobs and context.get_start_method() == "fork":
        prepare(jobs[0])  # nbgrader's API made once here, inherited by every forked job
        for job in {(job.course, job.lesson): job for job in jobs}.values():
            try:  # and each lesson's releases read and its feedback page rendered once here
                prime(job)
            except Exception as error:  # a cost, never a failure: each job then does it itself
                print(f"lesson not primed: {job.lesson}: {type(error).__name__}: {error}", file=sys.stderr)
        ready(jobs[0])  # the kernel template started while the lessons were primed: the jobs share it
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here may be written twice by a fork
        stream.flush()
    # This process's objects kept out of the jobs' garbage collections: a collection that walked them
    # would write to their pages, and each forked job would copy those pages for itself.
    gc.collect()
    gc.freeze()
    try:
        return _run(jobs, context, workers=workers, job_timeout=job_timeout, log=log, done=done)
    finally:
        gc.unfreeze()


def _run(jobs: list[Job], context, *, workers: int, job_timeout: float, log: Path | None,
         done: Callable[[Result], None]) -> list[Result]:
    pending, running, results = list(enumerate(jobs)), {}, [None] * len(jobs)
    exiting: list[tuple[multiprocessing.process.BaseProcess, float]] = []  # results in, still ending
    while pending or running:
        while pending and len(running) < workers:
            index, job = pending.pop(0)
            receive, send = context.Pipe(duplex=False)
            process = context.Process(target=_child, args=(job, send, str(log) if log else None), daemon=True)
            process.start()
            send.close()
            running[process.sentinel] = (index, job, process, receive, time.monotonic() + job_timeout)
        signalled = wait([*running, *(entry[3] for entry in running.values())], timeout=POLL)
        for sentinel, (index, job, process, receive, deadline) in list(running.items()):
            result = None
            if receive in signalled or sentinel in signalled:
                try:
                    result = receive.recv() if receive.poll() else None
                except (EOFError, OSError):
                    result = None
                if result is None:
                    process.join(timeout=5)
                    code = process.exitcode
                    result = Result(job.student, "failed", reason=f"its grading process died (exit code {code}); "
                                                                 "no other submission was affected")
                else:  # the next job starts now, while this process ends
                    exiting.append((process, time.monotonic() + EXIT_GRACE))
            elif time.monotonic() > deadline:
                process.kill()
                process.join()
                result = Result(job.student, "failed", reason=f"grading took longer than {job_timeout:.0f} s and "
                                                              "was stopped")
            if result is not None:
                receive.close()
                del running[sentinel]
                results[index] = result
                done(result)
        exiting = [(process, end) for process, end in exiting if not _reaped(process, end, wait=False)]
    for process, end in exiting:
        _reaped(process, end, wait=True)
    return results


def _reaped(process: multiprocessing.process.BaseProcess, end: float, *, wait: bool) -> bool:
    """Join `process` if it has ended (`wait`: waiting until `end` for it); past `end`, kill it first."""
    process.join(timeout=max(0.0, end - time.monotonic()) if wait else 0)
    if process.exitcode is None and time.monotonic() < end:
        return False
    process.kill()  # nothing, for a process that has ended
    process.join()
    return True
