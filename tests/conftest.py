"""Shared fixtures: a throw-away copy of the course's grading state, released once per session."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.course import REPO, SOLUTIONS, lesson_ids


@dataclass(frozen=True)
class Course:
    """A temporary nbgrader course that releases the repository's solutions/.

    Its nbgrader_config.py loads the repository's configuration and only moves the state: the
    release, the gradebook and the submitted/autograded/feedback folders live under `root`.
    """

    root: Path

    @property
    def lessons(self) -> Path:
        return self.root / "lessons"

    @property
    def gradebook(self) -> Path:
        return self.root / "gradebook.db"

    def submitted(self, student: str, lesson: str) -> Path:
        return self.root / "grader" / "state" / "submitted" / student / lesson / f"{lesson}.ipynb"

    def nbgrader(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        """Run a plain `nbgrader` command in this course, as an instructor would."""
        return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=self.root, text=True,
                              capture_output=True, timeout=timeout)


def make_course(root: Path, *, cell_timeout: int = 15) -> Course:
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa\n"
        f"load_subconfig({str(REPO / 'nbgrader_config.py')!r})  # noqa\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.source_directory = {str(SOLUTIONS)!r}\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{root / 'gradebook.db'}?timeout=60'\n"
        f"c.Execute.timeout = {cell_timeout}\n"
    )
    subprocess.run([sys.executable, "-m", "grader", "release", "--course", str(root)], check=True,
                   capture_output=True, text=True)
    return Course(root)


@pytest.fixture(scope="session")
def course(tmp_path_factory) -> Course:
    """Every lesson released from the committed solutions/ into a temporary course."""
    return make_course(tmp_path_factory.mktemp("course"))


def pytest_generate_tests(metafunc):
    if "lesson" in metafunc.fixturenames:
        metafunc.parametrize("lesson", lesson_ids())
