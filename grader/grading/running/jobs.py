"""What is graded and what grading gave: `Job` (one submission) and `Result`, plain picklable data.

The worker (grader.grading.running.worker) turns a Job into a Result; the batch, its reports and the
supervisor only pass them along, so they import this module and not the worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.grading.running.triage import Flag
from grader.student.points import total


@dataclass(frozen=True)
class Job:
    """One student's submission of one lesson, and how to grade it."""

    course: str  # folder whose nbgrader_config.py to load (the repository, or a test course)
    lesson: str
    student: str
    force: bool = False  # regrade even when the grade and feedback are newer than the submission
    timeout: int | None = None  # seconds per cell (Execute.timeout); None keeps the configured value
    memory_limit: int | None = None  # bytes per kernel (KernelLimits.memory_limit); None: configured
    sandbox: bool = True  # False: --unsafe-no-sandbox, and the result says so
    # The batch run this job belongs to. An executor may cache results by their arguments (a Dask
    # Client's `submit` does by default, `pure=True`): without it, the next run's identical job would
    # be handed the earlier run's result, even after the student handed in a new notebook.
    run: str = ""


@dataclass
class Result:
    """What grading one submission gave."""

    student: str
    status: str  # "graded" or "failed"
    scores: dict[str, float | None] = field(default_factory=dict)  # test cell grade_id -> points
    flags: list[Flag] = field(default_factory=list)
    reason: str = ""  # why it could not be graded
    feedback_error: str = ""  # graded, but the feedback page could not be made: why (one line)
    detail: str = ""  # for the log only: a traceback, or what nbgrader or a dead kernel said (bounded, inert)
    seconds: float = 0.0
    cached: bool = False  # already graded and unchanged since: nothing was re-run

    @property
    def total(self) -> float | None:
        return total(self.status, self.scores)
