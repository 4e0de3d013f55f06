"""Shared fixtures: a throw-away copy of the course's grading state, released once per session."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
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

    def autograde(self, lesson: str, submissions: dict[str, nbformat.NotebookNode]) -> None:
        """Submit each student's notebook, then grade them all with one `nbgrader autograde`."""
        for student, notebook in submissions.items():
            path = self.submitted(student, lesson)
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, path)
        done = self.nbgrader("autograde", lesson, "--create", "--force")
        assert done.returncode == 0, f"nbgrader autograde failed:\n{done.stdout}\n{done.stderr[-3000:]}"


def make_course(root: Path, *, cell_timeout: int = 15, lessons: list[str] | None = None) -> Course:
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa\n"
        f"load_subconfig({str(REPO / 'nbgrader_config.py')!r})  # noqa\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.source_directory = {str(SOLUTIONS)!r}\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{root / 'gradebook.db'}?timeout=60'\n"
        f"c.Execute.timeout = {cell_timeout}\n"
    )
    subprocess.run([sys.executable, "-m", "grader", "release", *(lessons or []), "--course", str(root)],
                   check=True, capture_output=True, text=True)
    return Course(root)


@pytest.fixture(scope="session")
def course(tmp_path_factory) -> Course:
    """Every lesson released from the committed solutions/ into a temporary course."""
    return make_course(tmp_path_factory.mktemp("course"))


def pytest_generate_tests(metafunc):
    if "lesson" in metafunc.fixturenames:
        metafunc.parametrize("lesson", lesson_ids())
