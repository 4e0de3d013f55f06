"""The supervisor: a grading process that dies or hangs costs only its own submission."""

from __future__ import annotations

import gc
import multiprocessing
import os
import time

import grader.grading.supervisor as supervisor
from grader.course import REPO
from grader.grading.worker import Job, Result


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


def test_jobs_start_with_the_template_ready_and_the_supervisors_objects_frozen(monkeypatch, own_templates):
    def report_state(job: Job) -> Result:
        ready = [template.ready for template in own_templates.values()]
        return Result(job.student, "graded", scores={"frozen": float(gc.get_freeze_count()),
                                                     "templates": float(len(ready)), "ready": float(all(ready))})

    monkeypatch.setattr(supervisor, "grade", report_state)
    jobs = [Job(str(REPO), "03-parallel-heads", "ada")]
    [result] = supervisor.supervise(jobs, workers=1, job_timeout=60)
    # A template that was still starting when the job was forked would be of no use to it.
    assert result.scores["templates"] == 1 and result.scores["ready"] == 1
    # Garbage collections in the job leave the supervisor's objects (and their pages) alone.
    assert result.scores["frozen"] > 10_000  # nbgrader and the lesson's primed page, at least
    assert gc.get_freeze_count() == 0  # and thawed again here once the batch is done


def test_a_process_that_hangs_after_its_result_keeps_the_result_and_is_killed(monkeypatch):
    real_child = supervisor._child

    def child_that_lingers(job, conn, log):
        real_child(job, conn, log)
        time.sleep(600)

    monkeypatch.setattr(supervisor, "grade", fake_grade)
    monkeypatch.setattr(supervisor, "_child", child_that_lingers)
    monkeypatch.setattr(supervisor, "EXIT_GRACE", 1.0)
    jobs = [Job(str(REPO), "03-parallel-heads", student) for student in ("ada", "grace", "alan")]
    started = time.monotonic()
    results = supervisor.supervise(jobs, workers=2, job_timeout=120)
    assert time.monotonic() - started < 60  # not the 600 s the processes would linger
    assert [r.status for r in results] == ["graded", "graded", "graded"]
    assert multiprocessing.active_children() == []  # every one of them killed and reaped
