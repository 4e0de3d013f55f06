"""The course's own errors: what library code raises when it refuses, for `python -m grader` to report.

Library functions never end the process; they raise one of these, whose message says what went
wrong and what to do. grader/__main__.py turns a CourseError into that message on stderr and exit
status 1; a caller in Python (a test, a notebook, a Dask client) can catch it like any exception.
"""

from __future__ import annotations

from grader.safe_text import for_terminal


class CourseError(Exception):
    """A refusal of the course's code; the message says what went wrong and what to do."""


class UnknownLesson(CourseError):
    """A lesson id or range that the course does not have."""


class UsageError(CourseError):
    """Options that do not go together, e.g. --notebook with several lessons."""


class NotReleased(CourseError):
    """A lesson whose release is missing, stale or could not be made (run `make release`)."""


class CannotGradeSafely(CourseError):
    """Grading refused: the sandbox cannot start on this machine and --unsafe-no-sandbox was not given."""


class KernelsCannotStart(CourseError):
    """Found before a batch: no sandboxed kernel starts here as configured, so every submission would fail."""


class BrokenSpec(CourseError):
    """Found before a batch: a lesson's trusted spec (solutions/<lesson>.checks.py) cannot prepare its checks."""


class GradebookRefused(CourseError):
    """The gradebook holds something the course did not put there, or cannot be used as configured."""


class BadDownload(CourseError):
    """An LMS download or roster that cannot be read as one."""


class CannotSubmit(CourseError):
    """A student's notebook or name that cannot be handed in."""


class DamagedCopy(CourseError):
    """A student distribution whose pristine releases or manifest were changed or lost."""


class DistributionRefused(CourseError):
    """`make dist` refuses to write: the output folder, or what would go into it, is not right."""


def message(error: CourseError) -> str:
    """`error`'s message for a terminal: each line made inert (grader.safe_text.for_terminal), lines kept."""
    return "\n".join(for_terminal(line) for line in str(error).splitlines())


class HubRefused(CourseError):
    """A hub step (release to the exchange, collect from it) that cannot run as configured."""


class OldGradingData(CourseError):
    """Grading data still in grader/state/, where earlier versions kept it: it must be moved first (grader.layout)."""
