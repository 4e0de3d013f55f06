"""Grade one submission in a worker process, with nbgrader imported and configured once per process.

`grade(job)` is the unit of work: it autogrades one student's notebook through nbgrader's Python
API, generates the feedback, and returns a `Result` (flags from grader.grading.running.triage). It
never opens the gradebook itself: nbgrader writes the grades there, and the batch reads them through
its one open gradebook (grader.grading.running.scores). It never raises: whatever goes wrong with one
submission is reported in its Result, so the batch carries on.

`grade` and `Job` are plain picklable objects, so any `concurrent.futures.Executor` whose workers
are processes can run them, such as a Dask `Client(...).get_executor()`; on this machine
grader.grading.running.supervisor runs them in a few grading processes of its own, one job after another in
each. Each process loads the course's nbgrader configuration on its first job and reuses it.
nbgrader changes the process's working directory while it grades, so a process grades one
submission at a time (a lock enforces it when an executor runs several threads per process).
"""

from __future__ import annotations

import shutil
import threading
import time
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import nbformat
from nbgrader.apps import NbGraderAPI

from grader.course import nbgrader_config
from grader.gradebook import nbgrader_api
from grader.grading.running import triage
from grader.grading.running.failure_detail import bounded, traceback_of
from grader.grading.running.jobs import Job, Result
from grader.grading.running.triage import Flag
from grader.layout import TIMESTAMP, Layout
from grader.pipeline.repair_cells import other_lessons, size_limits


@dataclass(frozen=True)
class Paths:
    """Where one student's submission of one lesson, its autograded copy and its feedback are."""

    submitted: Path
    autograded: Path
    feedback: Path
    release: Path

    @classmethod
    def of(cls, layout: Layout, lesson: str, student: str) -> Paths:
        return cls(layout.submitted_notebook(student, lesson), layout.autograded_notebook(student, lesson),
                   layout.feedback_page(student, lesson), layout.release_notebook(lesson))

    def up_to_date(self) -> bool:
        """Graded and given feedback after the submission last changed."""
        outputs = [self.autograded, self.feedback]
        if not all(path.is_file() for path in outputs):
            return False
        inputs = [self.submitted, self.submitted.parent / TIMESTAMP]
        changed = max(path.stat().st_mtime for path in inputs if path.is_file())
        return min(path.stat().st_mtime for path in outputs) >= changed

    def remove_outputs(self) -> None:
        """Drop a previous autograded copy and feedback, so that none outlives a failed regrade."""
        for path in (self.autograded, self.feedback):
            if path.parent.is_dir():
                shutil.rmtree(path.parent)


_lock = threading.Lock()


def grade(job: Job) -> Result:
    """Autograde and give feedback on one submission; never raises."""
    start = time.monotonic()
    with _lock:
        try:
            outcome = _grade(job)
        except Exception as exc:  # one broken submission must not end the batch
            outcome = Result(job.student, "failed", reason=f"grader error: {type(exc).__name__}: {exc}",
                             detail=traceback_of(exc))
    outcome.seconds = time.monotonic() - start
    return outcome


def _grade(job: Job) -> Result:
    api = prepare(job)
    paths = Paths.of(Layout.of(api.config), job.lesson, job.student)
    release = _read(paths.release, paths.release.stat().st_mtime)
    try:
        flags, reason = triage.inspect_submission(triage.read_submission(paths.submitted), release,
                                                  _other_lessons(paths.release.parent.parent, job.lesson),
                                                  limits=size_limits(api.config))
    except triage.Unreadable as exc:
        flags, reason = [], str(exc)
    if reason:
        paths.remove_outputs()
        return Result(job.student, "failed", reason=reason)

    # Not run again: graded and given feedback since the submission last changed, unless `force` (which the
    # batch also sets for a submission whose grades are not in the gradebook).
    cached = not job.force and paths.up_to_date()
    feedback_error, details = "", []
    if not cached:
        result = api.autograde(job.lesson, job.student, force=True, create=True)
        if not result["success"]:
            paths.remove_outputs()
            return Result(job.student, "failed", flags=flags, reason=triage.failure_reason(result),
                          detail=bounded(result.get("error") or result.get("log") or ""))
        feedback = api.generate_feedback(job.lesson, job.student, force=True)
        if not feedback["success"]:  # graded all the same: the reason goes to the log, the CSV and the overview
            flags.append(Flag("feedback-failed"))
            feedback_error = triage.failure_reason(feedback, "nbgrader could not make the feedback page")
            details.append(f"feedback: {feedback.get('error') or feedback.get('log') or ''}")
    autograded = nbformat.read(paths.autograded, as_version=4)
    flags += triage.run_flags(autograded)
    return Result(job.student, "graded", flags=flags, cached=cached, feedback_error=bounded(feedback_error, 300),
                  detail=bounded(" | ".join([*triage.kernel_deaths(autograded), *details])))


def prepare(job: Job) -> NbGraderAPI:
    """nbgrader's API configured for `job`, made once per process and settings."""
    return _nbgrader(job.course, job.timeout, job.memory_limit, job.sandbox)


@cache
def _nbgrader(course: str, timeout: int | None, memory_limit: int | None,
              sandbox: bool) -> NbGraderAPI:
    # A harmless SQLAlchemy notice that nbgrader 0.9 triggers whenever it regrades a submission.
    warnings.filterwarnings("ignore", message=r"Object of type <Submitted\w+> not in session")
    config = nbgrader_config(Path(course))
    if timeout is not None:
        config.Execute.timeout = timeout
    if memory_limit is not None:
        config.KernelLimits.memory_limit = memory_limit
    config.GuardedExecute.sandbox = sandbox
    return nbgrader_api(config)


@cache
def _read(path: Path, mtime: float) -> nbformat.NotebookNode:
    """A released notebook, read once per version (`mtime`) per process."""
    return nbformat.read(path, as_version=4)


@cache
def _other_lessons(release_root: Path, lesson: str) -> dict[str, set[str]]:
    """The grade_ids of every other released lesson, to recognise a notebook for the wrong one."""
    return other_lessons(release_root, lesson, read=lambda path: _read(path, path.stat().st_mtime))
