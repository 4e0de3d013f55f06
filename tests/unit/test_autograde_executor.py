"""An executor passed to grader.grading.autograde.main, such as a Dask cluster's, grades every run anew."""

from __future__ import annotations

import pytest

from grader.grading import autograde
from grader.grading.running.jobs import Job, Result

GRADED: list[str] = []  # the students fake_grade graded, in order (the in-process cluster's one thread)


def fake_grade(job: Job) -> Result:
    GRADED.append(job.student)
    return Result(job.student, "graded", scores={"cell": float(len(GRADED))})


@pytest.mark.needs("dask")
def test_a_dask_executor_never_hands_a_new_run_the_results_of_an_earlier_one(monkeypatch):
    """A Dask Client caches a task's result by its arguments (`pure=True` by default): a job equal to
    an earlier run's would get that run's Result back, ungraded, even after a new hand-in."""
    import distributed

    monkeypatch.setattr(autograde, "grade", fake_grade)
    GRADED.clear()
    students = ["ada", "grace"]
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0") as client:
        executor = client.get_executor()
        jobs = autograde.make_jobs("/course", "03-parallel-heads", students, force=False)
        held = [executor.submit(fake_grade, job) for job in jobs]  # kept, so the client keeps their results
        first = {future.result().student: future.result().scores for future in held}
        again = autograde._run(jobs, executor, done=lambda result: None)  # equal jobs: nothing is graded
        assert len(GRADED) == 2 and {r.student: r.scores for r in again} == first
        second = autograde._run(autograde.make_jobs("/course", "03-parallel-heads", students, force=False), executor,
                            done=lambda result: None)
    assert sorted(GRADED) == sorted(students * 2) and sorted(r.student for r in second) == students
    assert {r.student: r.scores for r in second} != first
