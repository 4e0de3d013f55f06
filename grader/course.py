"""What the student commands share with grading: the course's paths, lesson ids, submission names, nbgrader config.

Defaults live here; the command-line interface (grader/__main__.py) and the tests pass overrides
as keyword arguments. Nothing here writes to disk or changes the interpreter when imported. The
rest has modules of its own: grader.extras (optional extras), grader.layout (where a course's
release and grading state are) and grader.gradebook (nbgrader's API over the gradebook).
"""

from __future__ import annotations

import os
from pathlib import Path

from traitlets.config import Config, PyFileConfigLoader

from grader.errors import UnknownLesson

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
LESSONS = REPO / "lessons"
SUBMISSIONS = REPO / "submissions"  # where `make submit` writes the student's hand-in file
STUDENT_JUPYTER_CONFIG = REPO / "grader" / "jupyter"  # the student-only nbgrader UI of `make lab`
LESSON_HELPERS = REPO / "lesson_helpers.py"  # the helper module every lesson imports (`import lesson_helpers`)


def with_lesson_helpers(env: dict[str, str]) -> dict[str, str]:
    """A copy of the environment `env` whose PYTHONPATH starts with the folder of LESSON_HELPERS.

    A kernel started with it can `import lesson_helpers` from any working folder, in the course
    and in a student distribution (which installs nothing of its own into the environment).
    """
    paths = [path for path in env.get("PYTHONPATH", "").split(os.pathsep) if path]
    folder = str(LESSON_HELPERS.parent)
    return {**env, "PYTHONPATH": os.pathsep.join([folder, *(path for path in paths if path != folder)])}


def lesson_ids() -> list[str]:
    """Every lesson of the course, in order: one text source `solutions/<id>.py` per lesson,
    paired with its reference notebook `solutions/<id>/<id>.ipynb`."""
    return sorted(p.stem for p in SOLUTIONS.glob("*.py"))


def select_lessons(lessons: list[str] | None) -> list[str]:
    """The requested lessons (all when None or empty), refusing names the course does not have."""
    known = lesson_ids()
    if not lessons:
        return known
    unknown = [name for name in lessons if name not in known]
    if unknown:
        raise UnknownLesson(f"unknown lesson(s) {', '.join(unknown)}; the course has: {', '.join(known)}")
    return list(lessons)


def source_text(lesson: str) -> Path:
    """The jupytext text source that a lesson's reference notebook is paired with."""
    return SOLUTIONS / f"{lesson}.py"


def reference_notebook(lesson: str) -> Path:
    return SOLUTIONS / lesson / f"{lesson}.ipynb"


def student_notebook(lesson: str, lessons_dir: Path = LESSONS) -> Path:
    return Path(lessons_dir) / lesson / f"{lesson}.ipynb"


# ---------------------------------------------------------------- submission file names

# How a submitted notebook is named when it leaves the student's machine, following nbgrader's
# zip_collect conventions (the LMS-export pattern from nbgrader's documentation), for example
# `03-parallel-heads_ada_lovelace_attempt_20261129-140500_03-parallel-heads.ipynb`. `make submit`
# writes it; the instructor's collect step parses it. Lesson ids contain no underscore, so the
# student id is everything up to `_attempt_`.
SUBMISSION_REGEXP = r"[^_]+_(?P<student_id>\w+?)_attempt_(?P<timestamp>[0-9\-]+)_(?P<file_id>.+)"

# The submission time, in UTC. nbgrader's own `zip_collect` reads this form correctly (its date
# parser misreads YYYY-MM-DD-HH-MM-SS as 14:00 for 14-05-00, and fails on some times).
SUBMISSION_TIME_FORMAT = "%Y%m%d-%H%M%S"


def submission_filename(lesson: str, student: str, timestamp: str) -> str:
    """File name for `student`'s notebook of `lesson` submitted at `timestamp` (SUBMISSION_TIME_FORMAT)."""
    return f"{lesson}_{student}_attempt_{timestamp}_{lesson}.ipynb"


# ---------------------------------------------------------------- nbgrader

def nbgrader_config(course: Path = REPO, **overrides: object) -> Config:
    """The nbgrader configuration that `nbgrader` run from the folder `course` sees.

    The default is this repository. A test or an instructor can point `course` at another folder
    whose nbgrader_config.py loads this one and moves the state (gradebook, submissions)
    elsewhere. Keyword arguments override `CourseDirectory` settings, e.g. `release_directory=...`.
    """
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    for name, value in overrides.items():
        if value is not None:
            config.CourseDirectory[name] = value
    return config
