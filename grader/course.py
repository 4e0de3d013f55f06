"""Where the course lives on disk, which lessons it has, and how to reach nbgrader.

Defaults live here, in one place; the command-line interface (grader/__main__.py) and the
tests pass overrides as keyword arguments.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from traitlets.config import Config, PyFileConfigLoader

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
LESSONS = REPO / "lessons"
STATE = REPO / "grader" / "state"


def lesson_ids() -> list[str]:
    """Every lesson of the course, in order: one text source `solutions/<id>.py` per lesson,
    paired with its reference notebook `solutions/<id>/<id>.ipynb`."""
    return sorted(p.stem for p in SOLUTIONS.glob("*.py"))


# Optional extras: lessons that need packages outside requirements.txt, as lesson id -> {module it
# imports: the command that installs it}. `make lab` and `make test` work without them; where one is
# missing, that lesson's tests are skipped with the install command as the reason (tests/conftest.py).
OPTIONAL_REQUIREMENTS: dict[str, dict[str, str]] = {
    "05-pytorch-module": {"torch": "make torch"},
}


def missing_requirements(lesson: str) -> dict[str, str]:
    """The optional modules `lesson` needs that this Python cannot import, each with its install command.

    Empty when the lesson can run. Looks the modules up without importing them.
    """
    needed = OPTIONAL_REQUIREMENTS.get(lesson, {})
    return {module: install for module, install in needed.items() if importlib.util.find_spec(module) is None}


def source_text(lesson: str) -> Path:
    """The jupytext text source that a lesson's reference notebook is paired with."""
    return SOLUTIONS / f"{lesson}.py"


def reference_notebook(lesson: str) -> Path:
    return SOLUTIONS / lesson / f"{lesson}.ipynb"


def student_notebook(lesson: str, lessons_dir: Path = LESSONS) -> Path:
    return lessons_dir / lesson / f"{lesson}.ipynb"


def check_lessons(lessons: list[str] | None) -> list[str]:
    """The requested lessons (all when None), refusing names the course does not have."""
    known = lesson_ids()
    if not lessons:
        return known
    unknown = [name for name in lessons if name not in known]
    if unknown:
        raise SystemExit(f"unknown lesson(s) {', '.join(unknown)}; the course has: {', '.join(known)}")
    return list(lessons)


def nbgrader_config(course: Path = REPO, **overrides: object) -> Config:
    """The nbgrader configuration that `nbgrader` run from the folder `course` sees.

    The default is this repository. A test or an instructor can point `course` at another folder
    whose nbgrader_config.py loads this one and moves the state (gradebook, submissions)
    elsewhere. Keyword arguments override `CourseDirectory` settings, e.g. `release_directory=...`.
    """
    loader = PyFileConfigLoader("nbgrader_config.py", path=str(course))
    config = loader.load_config()
    for name, value in overrides.items():
        if value is not None:
            config.CourseDirectory[name] = value
    return config


def nbgrader_api(config: Config):
    """An `NbGraderAPI` for `config` (the API does not read nbgrader_config.py by itself)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    # nbgrader runs the `alembic` command by name when it creates a gradebook: make sure the
    # environment's own scripts come first on PATH even when it was not activated.
    scripts = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != scripts:
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")

    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


# How a submitted notebook is named when it leaves the student's machine, following nbgrader's
# zip_collect conventions (the LMS-export pattern from nbgrader's documentation): for example
# `03-parallel-heads_ada_lovelace_attempt_20261129-140500_03-parallel-heads.ipynb`.
# `make submit` writes this name; the instructor's grading command parses it with this pattern.
# Lesson ids contain no underscore, so the student id is everything up to `_attempt_`.
SUBMISSION_REGEXP = r"[^_]+_(?P<student_id>\w+?)_attempt_(?P<timestamp>[0-9\-]+)_(?P<file_id>.+)"


# The submission time, in UTC. nbgrader's own `zip_collect` reads this form correctly (its date
# parser misreads YYYY-MM-DD-HH-MM-SS as 14:00 for 14-05-00, and fails on some times).
SUBMISSION_TIME_FORMAT = "%Y%m%d-%H%M%S"


def submission_filename(lesson: str, student: str, timestamp: str) -> str:
    """File name for `student`'s notebook of `lesson` submitted at `timestamp` (SUBMISSION_TIME_FORMAT)."""
    return f"{lesson}_{student}_attempt_{timestamp}_{lesson}.ipynb"
