"""The one home of the course's paths, lesson ids, optional extras, submission names and nbgrader config.

Defaults live here; the command-line interface (grader/__main__.py) and the tests pass overrides
as keyword arguments. Nothing here writes to disk or changes the interpreter when imported.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from traitlets.config import Config, PyFileConfigLoader

from grader.errors import GradebookRefused, UnknownLesson

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

# Everything grading writes, relative to a course's root; git ignores it and it is never published.
STATE = "grader/state"
STATE_FOLDERS = {"submitted": f"{STATE}/submitted", "autograded": f"{STATE}/autograded",
                 "feedback": f"{STATE}/feedback"}
GRADEBOOK = f"{STATE}/gradebook.db"


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


# ---------------------------------------------------------------- optional extras

@dataclass(frozen=True)
class Extra:
    """An optional extra: what it is, the modules or programs that show it is there, how to install it."""

    name: str
    install: str
    modules: tuple[str, ...] = ()
    program: str = ""  # an executable: at the path in the environment variable `env`, else on PATH or in `search`
    env: str = ""
    search: tuple[str, ...] = ()  # glob patterns of folders also looked in after PATH, newest version first
    beside: tuple[str, ...] = ()  # further programs that must be in the same folder as `program`

    def missing(self) -> list[str]:
        """The modules and program of this extra that this machine lacks (none imported, none run).

        An extra named in the environment variable WITHOUT_EXTRAS (comma-separated) counts as
        missing, so that the newcomer's path can be tried on a machine that has everything.
        """
        if self.name in os.environ.get(WITHOUT_EXTRAS, "").split(","):
            return [self.name]
        absent = [m for m in self.modules if _module_missing(m)]
        if self.program and not self.executable():
            absent.append(" with ".join([self.program, ", ".join(self.beside)]) if self.beside else self.program)
        return absent

    def executable(self, name: str = "") -> str | None:
        """The extra's program, or with `name` one of the programs `beside` it, as a path; None if not found.

        The program is the path in `env` if that is set; else the first one on PATH, then in the
        folders `search` matches (newest version first), that has every program of `beside` next to it.
        """
        if name and name not in self.beside:
            raise ValueError(f"{name} is not one of the programs beside {self.program}: {self.beside}")
        if not self.program:
            return None
        chosen = os.environ.get(self.env) if self.env else None
        candidates = [chosen] if chosen else [shutil.which(self.program),
                                              *(str(Path(folder) / self.program) for folder in self._folders())]
        for path in filter(None, candidates):
            folder = Path(path).parent
            if _runnable(path) and all(_runnable(folder / other) for other in self.beside):
                return str(folder / name) if name else path
        return None

    def _folders(self) -> list[str]:
        """The folders `search` matches, highest version number first (/usr/lib/postgresql/17/bin before 15)."""
        found = {folder for pattern in self.search for folder in glob.glob(pattern) if os.path.isdir(folder)}
        return sorted(found, key=lambda folder: [int(n) for n in re.findall(r"\d+", folder)], reverse=True)


def _runnable(path: str | Path) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


WITHOUT_EXTRAS = "WITHOUT_EXTRAS"


def _module_missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except ImportError:  # a parent package that is not there, or is not a package
        return True


EXTRAS = {
    "torch": Extra("torch", "make torch", modules=("torch",)),
    "playwright": Extra("playwright", "make browser", modules=("playwright.sync_api",)),
    "chromium": Extra("chromium", "apt-get install chromium", program="chromium", env="CHROMIUM"),
    # Grading at scale (docs/scale.md): a Dask cluster's executor, and a
    # PostgreSQL gradebook. Debian keeps PostgreSQL's server programs off PATH, in
    # /usr/lib/postgresql/<version>/bin; PG_CTL=/path/to/pg_ctl picks another installation.
    "dask": Extra("dask", "make scale", modules=("distributed",)),
    "postgres": Extra("postgres", "make scale && apt-get install postgresql", modules=("psycopg",),
                      program="pg_ctl", env="PG_CTL", search=("/usr/lib/postgresql/*/bin",),
                      beside=("initdb", "postgres")),
}

# Lessons that need an extra: their tests are skipped, naming it, where it is missing (conftest.py).
LESSON_EXTRAS: dict[str, tuple[str, ...]] = {"05-pytorch-module": ("torch",)}


def missing_extras(lesson: str) -> list[Extra]:
    """The extras `lesson` needs that this machine does not have."""
    return [EXTRAS[name] for name in LESSON_EXTRAS.get(lesson, ()) if EXTRAS[name].missing()]


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


@dataclass(frozen=True)
class Layout:
    """Where one course keeps its release and what grading writes, as its nbgrader config says."""

    root: Path
    release: Path
    submitted: Path
    autograded: Path
    feedback: Path

    @classmethod
    def of(cls, config: Config) -> Layout:
        from nbgrader.coursedir import CourseDirectory

        coursedir = CourseDirectory(config=config)

        def folder(step: str) -> Path:
            return Path(coursedir.format_path(step, ".", ".")).resolve()

        return cls(Path(coursedir.root).resolve(), folder(coursedir.release_directory),
                   folder(coursedir.submitted_directory), folder(coursedir.autograded_directory),
                   folder(coursedir.feedback_directory))

    @property
    def state(self) -> Path:
        """The folder that holds submitted/, autograded/, feedback/, grades/ and logs/."""
        return self.autograded.parent

    def release_notebook(self, lesson: str) -> Path:
        return self.release / lesson / f"{lesson}.ipynb"

    def submitted_notebook(self, student: str, lesson: str) -> Path:
        return self.submitted / student / lesson / f"{lesson}.ipynb"

    def autograded_notebook(self, student: str, lesson: str) -> Path:
        return self.autograded / student / lesson / f"{lesson}.ipynb"

    def feedback_page(self, student: str, lesson: str) -> Path:
        return self.feedback / student / lesson / f"{lesson}.html"

    def grades_csv(self, lesson: str) -> Path:
        return self.state / "grades" / f"{lesson}.csv"

    def grades_plot(self, lesson: str) -> Path:
        return self.state / "grades" / f"{lesson}.png"

    def log(self, lesson: str) -> Path:
        return self.state / "logs" / f"{lesson}.log"


def nbgrader_api(config: Config):
    """An `NbGraderAPI` for `config` (the API does not read nbgrader_config.py by itself).

    Creates the gradebook's folder, which SQLite cannot create itself.
    """
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    # nbgrader runs the `alembic` command by name when it creates a gradebook: make sure the
    # environment's own scripts come first on PATH even when it was not activated.
    scripts = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != scripts:
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")
    coursedir = CourseDirectory(config=config)
    require_course_id(coursedir)
    if coursedir.db_url.startswith("sqlite:///"):
        Path(coursedir.db_url.removeprefix("sqlite:///").split("?")[0]).parent.mkdir(parents=True, exist_ok=True)
    return NbGraderAPI(coursedir=coursedir, config=config)


def require_course_id(coursedir) -> None:
    """Refuse a gradebook other than SQLite's when the course has no `CourseDirectory.course_id`.

    nbgrader's default course id is empty, and it then records assignments under a course that is
    not in the gradebook: SQLite lets that through, but PostgreSQL enforces the foreign key and
    releasing fails deep inside nbgrader.
    """
    if not coursedir.db_url.startswith("sqlite") and not coursedir.course_id:
        dialect = coursedir.db_url.split(":")[0]
        raise GradebookRefused(f"a {dialect} gradebook needs a course id: set "
                               "c.CourseDirectory.course_id = '<course>' in nbgrader_config.py "
                               "(nbgrader's empty default only works with SQLite)")
