"""How a handed-in notebook is named, so that the instructor's collect step knows whose it is and when.

It follows nbgrader's zip_collect conventions (the LMS-export pattern from nbgrader's
documentation), for example `03-parallel-heads_ada_lovelace_attempt_20261129-140500_03-parallel-heads.ipynb`.
`make submit` writes it; the instructor's collect step parses it. Lesson ids contain no underscore,
so the student id is everything up to `_attempt_`.
"""

from __future__ import annotations

SUBMISSION_REGEXP = r"[^_]+_(?P<student_id>\w+?)_attempt_(?P<timestamp>[0-9\-]+)_(?P<file_id>.+)"

# The submission time, in UTC. nbgrader's own `zip_collect` reads this form correctly (its date
# parser misreads YYYY-MM-DD-HH-MM-SS as 14:00 for 14-05-00, and fails on some times).
SUBMISSION_TIME_FORMAT = "%Y%m%d-%H%M%S"


def submission_filename(lesson: str, student: str, timestamp: str) -> str:
    """File name for `student`'s notebook of `lesson` submitted at `timestamp` (SUBMISSION_TIME_FORMAT)."""
    return f"{lesson}_{student}_attempt_{timestamp}_{lesson}.ipynb"
