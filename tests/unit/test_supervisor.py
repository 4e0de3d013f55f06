"""The supervisor: a grading process that dies or hangs costs only its own submission."""

from __future__ import annotations

import gc
import multiprocessing
import os
import time

import grader.grading.running.supervisor as supervisor
from grader.course import ROOT
from grader.grading.running.jobs import Job, Result


def fake_grade(job: Job) -> Result:
    if job.student == "dies":
        os._exit(9)
    if job.student == "hangs":
        time.sleep(600)
    if job.student == "raises":
        raise ValueError("broken\x1b[2J")
    return Result(job.student, "graded", scores={"test": 1.0})


def test_a_dying_or_hanging_job_fails_alone_and_the_others_are_graded(monkeypatch):
    monkeypatch.setattr(supervisor, "grade", fake_grade)
    jobs = [Job(str(ROOT), "03-parallel-heads", student) for student in ("ada", "dies", "hangs", "grace", "raises")]
    done = []
    started = time.monotonic()
    results = supervisor.supervise(jobs, workers=2, job_timeout=2, done=done.append)
    assert time.monotonic() - started < 60
    assert [r.student for r in results] == ["ada", "dies", "hangs", "grace", "raises"]
    assert [r.status for r in results] == ["graded", "failed", "failed", "graded", "failed"]
    assert "died (exit code 9)" in results[1].reason and "longer than 2 s" in results[2].reason
    assert sorted(r.student for r in done) == ["ada", "dies", "grace", "hangs", "raises"]
    # An unexpected failure keeps its traceback for the log, as one inert line.
    detail = results[4].detail
    assert "Traceback" in detail and "in fake_grade" in detail and detail.endswith("ValueError: broken\\x1b[2J")
    assert "\n" not in detail and "\x1b" not in detail
    assert multiprocessing.active_children() == []  # the hanging one stopped, every one reaped


def test_jobs_start_with_the_supervisors_objects_frozen(monkeypatch):
    def report_state(job: Job) -> Result:
        return Result(job.student, "graded", scores={"frozen": float(gc.get_freeze_count())})

    monkeypatch.setattr(supervisor, "grade", report_state)
    jobs = [Job(str(ROOT), "03-parallel-heads", "ada")]
    [result] = supervisor.supervise(jobs, workers=1, job_timeout=60)
    # Garbage collections in the job leave the supervisor's objects (and their pages) alone.
    assert result.scores["frozen"] > 10_000  # nbgrader's modules, at least
    assert gc.get_freeze_count() == 0  # and thawed again here once the batch is done


def test_a_process_grades_its_share_of_jobs_then_a_fresh_one_takes_over(monkeypatch):
    def report_pid(job: Job) -> Result:
        return Result(job.student, "graded", scores={"pid": float(os.getpid())})

    monkeypatch.setattr(supervisor, "grade", report_pid)
    students = ["ada", "grace", "alan", "barbara", "edsger"]
    jobs = [Job(str(ROOT), "03-parallel-heads", student) for student in students]
    results = supervisor.supervise(jobs, workers=1, job_timeout=60,
                                   settings=supervisor.GradingProcesses(jobs_per_process=2))
    pids = [r.scores["pid"] for r in results]
    assert pids[0] == pids[1] and pids[2] == pids[3] and len(set(pids)) == 3
    assert multiprocessing.active_children() == []  # every grading process ended and reaped


def test_the_worker_keeps_the_traceback_of_a_grader_error(tmp_path):
    from grader.grading.running.worker import grade

    result = grade(Job(str(tmp_path / "no course"), "03-parallel-heads", "ada"))
    assert result.status == "failed" and result.reason.startswith("grader error: ")
    assert "Traceback" in result.detail and "\n" not in result.detail
