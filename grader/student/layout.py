"""The course's places and names: its folders, its files, its lessons and its nbgrader settings.

The one home of every path and file name of the course itself (grading's own data has its names in
grader/layout.py); a policy test (tests/policy/test_places.py) fails on a second definition of any
name defined here. The same file in the course repository and in a student distribution (`make dist`
copies it). The course's root is the folder above grader/. A distribution is the copy without
solutions/: its lessons are those of its `.course/manifest.json`; the course repository's are those
of solutions/.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from traitlets.config import Config, PyFileConfigLoader

from grader.errors import DamagedCopy, UnknownLesson

ROOT = Path(__file__).resolve().parent.parent.parent  # the course's root: the repository, or a distribution
LESSONS = ROOT / "lessons"
SUBMISSIONS = ROOT / "submissions"  # where `make submit` writes the student's hand-in file
JUPYTER_CONFIG = ROOT / "grader" / "jupyter"  # the student-only nbgrader UI of `make lab`
LESSON_HELPERS = ROOT / "lesson_helpers.py"  # the helper module every lesson imports (`import lesson_helpers`)
# A distribution's own files, relative to its root (as `make dist` writes them) and where they are here:
RELEASES_PATH = ".course/releases"  # a pristine copy of each release (grader/student/originals.py)
MANIFEST_PATH = ".course/manifest.json"  # checksums: {"releases": {...}, "files": {...}}
DEADLINES_PATH = ".course/deadlines.json"  # each lesson's deadline when it was built: {lesson: "... UTC"}
RELEASES, MANIFEST, DEADLINES = ROOT / RELEASES_PATH, ROOT / MANIFEST_PATH, ROOT / DEADLINES_PATH
SOLUTIONS = ROOT / "solutions"  # the course repository's text sources, reference notebooks and hidden checks


def is_distribution() -> bool:
    """Whether this copy is a student distribution (it has no solutions/) rather than the course repository."""
    return not SOLUTIONS.is_dir()


def manifest() -> dict:
    """The distribution's manifest: {"releases": {lesson: sha256}, "files": {path: sha256}}."""
    try:
        return json.loads(MANIFEST.read_text())
    except (OSError, ValueError) as error:
        raise DamagedCopy(f"this copy of the course is damaged: cannot read {MANIFEST} ({error}); "
                          "download the course again") from error


CHECKS_SUFFIX = ".checks.py"  # solutions/<id>.checks.py: a lesson's hidden checks, beside its source solutions/<id>.py


def lesson_ids() -> list[str]:
    """Every lesson of this copy, in order: the manifest's in a distribution, else one per solutions/<id>.py."""
    if is_distribution():
        return sorted(manifest()["releases"])
    return sorted(path.stem for path in SOLUTIONS.glob("*.py") if not path.name.endswith(CHECKS_SUFFIX))


def select_lessons(lessons: list[str] | None) -> list[str]:
    """The requested lessons (all when None or empty), refusing names this copy does not have."""
    known = lesson_ids()
    if not lessons:
        return known
    unknown = [name for name in lessons if name not in known]
    if unknown:
        raise UnknownLesson(f"unknown lesson(s) {', '.join(unknown)}; the course has: {', '.join(known)}")
    return list(lessons)


def student_notebook(lesson: str, lessons_dir: Path = LESSONS) -> Path:
    return Path(lessons_dir) / lesson / f"{lesson}.ipynb"


def checks_file(lesson: str) -> Path:
    """A lesson's hidden checks (its trusted spec): beside its text source, not in its nbgrader folder, whose
    every file nbgrader copies into the release."""
    return SOLUTIONS / f"{lesson}{CHECKS_SUFFIX}"


def source_text(lesson: str) -> Path:
    """The jupytext text source that a lesson's reference notebook is paired with."""
    return SOLUTIONS / f"{lesson}.py"


def reference_notebook(lesson: str) -> Path:
    return SOLUTIONS / lesson / f"{lesson}.ipynb"


def nbgrader_config(course: Path = ROOT, **overrides: object) -> Config:
    """The nbgrader configuration that `nbgrader` run from the folder `course` sees (this copy's root by default).

    A test or an instructor can point `course` at another folder whose nbgrader_config.py loads this
    one and moves the state (gradebook, submissions) elsewhere. Keyword arguments override
    `CourseDirectory` settings, e.g. `release_directory=...`.
    """
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    for name, value in overrides.items():
        if value is not None:
            config.CourseDirectory[name] = value
    return config


def with_lesson_helpers(env: dict[str, str]) -> dict[str, str]:
    """A copy of the environment `env` whose PYTHONPATH starts with the folder of LESSON_HELPERS.

    A kernel started with it can `import lesson_helpers` from any working folder, in the course
    and in a student distribution (which installs nothing of its own into the environment).
    """
    paths = [path for path in env.get("PYTHONPATH", "").split(os.pathsep) if path]
    folder = str(LESSON_HELPERS.parent)
    return {**env, "PYTHONPATH": os.pathsep.join([folder, *(path for path in paths if path != folder)])}
