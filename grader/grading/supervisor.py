"""Run grading jobs on this machine so that no submission can cost more than its own grade.

At most `workers` grading processes run at once, each forked from this one (nbgrader already
imported, the lessons primed). A process grades jobs one after another, sent to it over a pipe, and
is retired (told to end, and killed if it lingers) after `jobs_per_process` jobs or after a job that
failed; a new one takes its place. The parent keeps a wall-clock limit per job: a job that hangs past
it is killed with its process and its kernel (bwrap's `--die-with-parent`), and reported as failed;
a process that dies without a result costs only the job it was grading. The other jobs carry on,
so a re-run meets the same limits. The settings are `c.GradingProcesses` of the course's nbgrader
configuration.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path

from traitlets import Float, Integer
from traitlets.config import Configurable

from grader.grading.jobs import Job, Result
from grader.grading.worker import grade, prepare, prime

# Seconds between two looks at the running jobs when none reports: only how soon a job past its
# deadline is noticed, far below any job's time limit; results and deaths wake the loop at once.
POLL = 0.5


class GradingProcesses(Configurable):
    """How `python -m grader autograde` grades on this machine: its grading processes and their time limits."""

    jobs_per_process = Integer(25, help="Jobs a grading process grades before a fresh one takes over: reusing a "
                                        "process saves copying the pages a freshly forked one touches; retiring it "
                                        "bounds what its caches hold.").tag(config=True)
    exit_grace = Float(5.0, help="Seconds a retired grading process has to end once it is told to, before it is "
                                 "killed.").tag(config=True)
    job_timeout_margin = Float(300.0, help="Seconds one submission may take beyond GuardedExecute.notebook_timeout "
                                           "(kernel start, repairs, feedback) before its grading process is killed "
                                           "and it is reported as failed. Without a notebook time limit, no job is "
                                           "stopped.").tag(config=True)


def _context():
    if sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _serve(conn: Connection, log: str | None) -> None:
    """A grading process: grade each job received on `conn` and send its Result back, until None arrives."""
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    while (job := conn.recv()) is not None:
        conn.send(grade(job))
    conn.close()


@dataclass
class _Process:
    """A grading process, and the job it is grading (`index` into the batch, None while idle)."""

    process: multiprocessing.process.BaseProcess
    conn: Connection
    graded: int = 0
    index: int | None = None
    job: Job | None = None
    deadline: float = 0.0

    def send(self, index: int, job: Job, job_timeout: float) -> None:
        self.index, self.job, self.deadline = index, job, time.monotonic() + job_timeout
        self.conn.send(job)

    def kill(self) -> None:
        self.process.kill()
        self.process.join()
        self.conn.close()


def supervise(jobs: list[Job], *, workers: int, job_timeout: float, log: Path | None = None,
              done: Callable[[Result], None] = lambda result: None,
              settings: GradingProcesses | None = None) -> list[Result]:
    """Grade `jobs` in at most `workers` processes at a time; call `done(result)` as each ends.

    Returns one Result per job, in the order of `jobs`. `settings` default to GradingProcesses' own.
    """
    settings = settings or GradingProcesses()
    context = _context()
    if jobs and context.get_start_method() == "fork":
        prepare(jobs[0])  # nbgrader's API made once here, inherited by every forked process
        for job in {(job.course, job.lesson): job for job in jobs}.values():
            try:  # and each lesson's releases read and its feedback page rendered once here
                prime(job)
            except Exception as error:  # a cost, never a failure: each process then does it itself
                print(f"lesson not primed: {job.lesson}: {type(error).__name__}: {error}", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here may be written twice by a fork
        stream.flush()
    # This process's objects kept out of the jobs' garbage collections: a collection that walked them
    # would write to their pages, and each forked process would copy those pages for itself.
    gc.collect()
    gc.freeze()
    try:
        return _run(jobs, context, workers=workers, job_timeout=job_timeout, log=log, done=done, settings=settings)
    finally:
        gc.unfreeze()


def _run(jobs: list[Job], context, *, workers: int, job_timeout: float, log: Path | None,
         done: Callable[[Result], None], settings: GradingProcesses) -> list[Result]:
    pending, results = list(enumerate(jobs)), [None] * len(jobs)
    idle: list[_Process] = []
    busy: list[_Process] = []
    exiting: list[tuple[multiprocessing.process.BaseProcess, float]] = []  # told to end, still ending

    def retire(worker: _Process) -> None:
        try:
            worker.conn.send(None)
        except OSError:  # it has died already
            pass
        worker.conn.close()
        exiting.append((worker.process, time.monotonic() + settings.exit_grace))

    while pending or busy:
        while pending and len(busy) < workers:
            worker = idle.pop() if idle else _start(context, log)
            try:
                worker.send(*pending[0], job_timeout)
            except OSError:
                if worker.graded:  # an idle process that has died since its last job: a fresh one instead
                    retire(worker)
                    continue
                # a new process that died at once: its job is reported as died, below
            pending.pop(0)
            busy.append(worker)
        for worker in idle:  # nothing left to send them
            retire(worker)
        idle = []
        signalled = wait([*(w.conn for w in busy), *(w.process.sentinel for w in busy)], timeout=POLL)
        for worker in list(busy):
            result, job = None, worker.job
            if worker.conn in signalled or worker.process.sentinel in signalled:
                try:
                    result = worker.conn.recv() if worker.conn.poll() else None
                except (EOFError, OSError):
                    result = None
                if result is None:
                    worker.process.join(timeout=5)
                    code = worker.process.exitcode
                    result = Result(job.student, "failed", reason=f"its grading process died (exit code {code}); "
                                                                 "no other submission was affected")
                    worker.kill()
                else:
                    worker.graded += 1
                    if worker.graded >= settings.jobs_per_process or result.status != "graded":
                        retire(worker)  # a fresh process for the next job, while this one ends
                    else:
                        idle.append(worker)
            elif time.monotonic() > worker.deadline:
                worker.kill()
                result = Result(job.student, "failed", reason=f"grading took longer than {job_timeout:.0f} s and "
                                                              "was stopped")
            if result is not None:
                busy.remove(worker)
                results[worker.index] = result
                done(result)
        exiting = [(process, end) for process, end in exiting if not _reaped(process, end, wait=False)]
    for worker in idle:
        retire(worker)
    for process, end in exiting:
        _reaped(process, end, wait=True)
    return results


def _start(context, log: Path | None) -> _Process:
    """A new grading process, waiting for its first job."""
    ours, theirs = context.Pipe(duplex=True)
    process = context.Process(target=_serve, args=(theirs, str(log) if log else None), daemon=True)
    process.start()
    theirs.close()
    return _Process(process, ours)


def _reaped(process: multiprocessing.process.BaseProcess, end: float, *, wait: bool) -> bool:
    """Join `process` if it has ended (`wait`: waiting until `end` for it); past `end`, kill it first."""
    process.join(timeout=max(0.0, end - time.monotonic()) if wait else 0)
    if process.exitcode is None and time.monotonic() < end:
        return False
    process.kill()  # nothing, for a process that has ended
    process.join()
    return True
