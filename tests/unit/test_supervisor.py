"""The supervisor: a grading process that dies or hangs costs only its own submission."""

from __future__ import annotations

import gc
import multiprocessing
import os
import time

import grader.grading.supervisor as supervisor
from grader.course import REPO
from grader.grading.jobs import Job, Result


def fake_grade(job: Job) -> Result:
    if job.student == "dies":
        os._exit(9)
    if job.student == "hangs":
        time.sleep(600)
    return Result(job.student, "graded", scores={"test": 1.0})


def test_a_dying_or_hanging_job_fails_alone_and_the_others_are_graded(monkeypatch, capfd):
    monkeypatch.setattr(supervisor, "grade", fake_grade)
    jobs = [Job(str(REPO), "03-parallel-heads", student) for student in ("ada", "dies", "hangs", "grace")]
    done = []
    started = time.monotonic()
    results = supervisor.supervise(jobs, workers=2, job_timeout=3, done=done.append)
    assert time.monotonic() - started < 60
    assert [r.student for r in results] == ["ada", "dies", "hangs", "grace"]
    assert [r.status for r in results] == ["graded", "failed", "failed", "graded"]
    assert "died (exit code 9)" in results[1].reason and "longer than 3 s" in results[2].reason
    assert sorted(r.student for r in done) == ["ada", "dies", "grace", "hangs"]
    assert "not primed" not in capfd.readouterr().err  # the lesson's page was rendered before the forks


def test_jobs_start_with_the_supervisors_objects_frozen(monkeypatch):
    def report_state(job: Job) -> Result:
        return Result(job.student, "graded", scores={"frozen": float(gc.get_freeze_count())})

    monkeypatch.setattr(supervisor, "grade", report_state)
    jobs = [Job(str(REPO), "03-parallel-heads", "ada")]
    [result] = supervisor.supervise(jobs, workers=1, job_timeout=60)
    # Garbage collections in the job leave the supervisor's objects (and their pages) alone.
    assert result.scores["frozen"] > 10_000  # nbgrader and the lesson's primed page, at least
    assert gc.get_freeze_count() == 0  # and thawed again here once the batch is done


def test_a_process_grades_several_jobs_and_is_retired_after_its_share_or_a_failed_job(monkeypatch):
    def report_pid(job: Job) -> Result:
        status = "failed" if job.student == "broken" else "graded"
        return Result(job.student, status, scores={"pid": float(os.getpid())})

    monkeypatch.setattr(supervisor, "grade", report_pid)
    students = ["ada", "grace", "alan", "broken", "edsger"]
    jobs = [Job(str(REPO), "03-parallel-heads", student) for student in students]
    results = supervisor.supervise(jobs, workers=1, job_timeout=60,
                                   settings=supervisor.GradingProcesses(jobs_per_process=2))
    pids = [r.scores["pid"] for r in results]
    # Two jobs per process; a failed job is its process's last (alan's and broken's process is retired).
    assert pids[0] == pids[1] and pids[2] == pids[3] and len(set(pids)) == 3
    assert multiprocessing.active_children() == []


def test_an_idle_process_that_died_is_replaced_without_losing_the_next_job(monkeypatch):
    def serve_once(conn, log):
        conn.send(supervisor.grade(conn.recv()))
        os._exit(0)

    monkeypatch.setattr(supervisor, "grade", fake_grade)
    monkeypatch.setattr(supervisor, "_serve", serve_once)
    jobs = [Job(str(REPO), "03-parallel-heads", student) for student in ("ada", "grace")]
    # Each result's callback waits until the process that sent it has ended, before the next job is sent.
    results = supervisor.supervise(jobs, workers=1, job_timeout=60, done=lambda result: time.sleep(0.5))
    assert [r.status for r in results] == ["graded", "graded"]


def test_a_new_process_that_dies_before_its_first_job_costs_only_that_job(monkeypatch):
    real_start = supervisor._start

    def start_and_wait(context, log):
        started = real_start(context, log)
        started.process.join(timeout=5)  # it has died before its job is sent
        return started

    monkeypatch.setattr(supervisor, "grade", fake_grade)
    monkeypatch.setattr(supervisor, "_serve", lambda conn, log: os._exit(3))
    monkeypatch.setattr(supervisor, "_start", start_and_wait)
    jobs = [Job(str(REPO), "03-parallel-heads", student) for student in ("ada", "grace")]
    results = supervisor.supervise(jobs, workers=1, job_timeout=60)
    assert [r.status for r in results] == ["failed", "failed"]
    assert all("died (exit code 3)" in r.reason for r in results)


def test_a_process_that_lingers_when_told_to_end_is_killed(monkeypatch):
    real_serve = supervisor._serve

    def serve_then_linger(conn, log):
        real_serve(conn, log)
        time.sleep(600)

    monkeypatch.setattr(supervisor, "grade", fake_grade)
    monkeypatch.setattr(supervisor, "_serve", serve_then_linger)
    # Each process is told to end after its job.
    settings = supervisor.GradingProcesses(exit_grace=1.0, jobs_per_process=1)
    jobs = [Job(str(REPO), "03-parallel-heads", student) for student in ("ada", "grace", "alan")]
    started = time.monotonic()
    results = supervisor.supervise(jobs, workers=2, job_timeout=120, settings=settings)
    assert time.monotonic() - started < 60  # not the 600 s the processes would linger
    assert [r.status for r in results] == ["graded", "graded", "graded"]
    assert multiprocessing.active_children() == []  # every one of them killed and reaped
