"""The course repository's paths, lesson ids and nbgrader configuration, for the instructor's code.

What the student's copy has too (the lessons folder, selecting lessons, submission names, the lesson
helpers) is defined once, in grader.student.layout and grader.student.submission_names, which the
student distribution ships. Defaults live here; the command-line interface (grader/__main__.py) and
the tests pass overrides as keyword arguments. Nothing here writes to disk or changes the
interpreter when imported. The rest has modules of its own: grader.extras (optional extras),
grader.layout (where a course's release and grading state are) and grader.gradebook (nbgrader's API
over the gradebook).
"""

from __future__ import annotations

from pathlib import Path

from traitlets.config import Config, PyFileConfigLoader

from grader.student import layout
from grader.student.layout import LESSONS, select_lessons, student_notebook  # noqa: F401 (the student's, shared)

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"


def lesson_ids() -> list[str]:
    """Every lesson of the course, in order: one text source `solutions/<id>.py` per lesson, paired with
    its reference notebook `solutions/<id>/<id>.ipynb`, its hidden checks beside it in `solutions/<id>.checks.py`."""
    return layout.lesson_ids()


def checks_file(lesson: str) -> Path:
    """A lesson's hidden checks (its trusted spec): beside its text source, not in its nbgrader folder, whose
    every file nbgrader copies into the release."""
    return SOLUTIONS / f"{lesson}{layout.CHECKS_SUFFIX}"


def source_text(lesson: str) -> Path:
    """The jupytext text source that a lesson's reference notebook is paired with."""
    return SOLUTIONS / f"{lesson}.py"


def reference_notebook(lesson: str) -> Path:
    return SOLUTIONS / lesson / f"{lesson}.ipynb"


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
