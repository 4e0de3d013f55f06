"""The student distribution works on its own: moved out of the repository, run without the course on PYTHONPATH.

Its `make check` says "not attempted" for the untouched release and the honest pass for the
reference answers; its `make submit` writes a file that the instructor's collect step files under
the right student; its own `make test` passes. The make targets run with this interpreter
(`PY=... STAMP=`): creating the distribution's .venv would need the network and a minute.
Four kernels in all, each running Lesson 3 or Lesson 4 once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader import cell_roles
from grader.authoring import dist
from grader.course import ROOT
from grader.student.check import HONEST_PASS
from tests.support import Variant, build, every_lesson_closed

LESSON = "03-parallel-heads"
NOTEBOOK = f"lessons/{LESSON}/{LESSON}.ipynb"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Path:
    """A distribution built here, then moved to another folder (the build's own is deleted)."""
    built = tmp_path_factory.mktemp("built") / "attention-student"
    dist.main(out=built, config=every_lesson_closed())
    moved = tmp_path_factory.mktemp("downloaded") / "attention-from-scratch"
    shutil.copytree(built, moved)
    shutil.rmtree(built)
    assert ROOT not in moved.resolve().parents
    return moved


@pytest.fixture
def student(shipped, tmp_path) -> Path:
    """A student's own copy of the distribution."""
    copy = tmp_path / "course"
    shutil.copytree(shipped, copy)
    return copy


def make(folder: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`make` in the distribution, with this interpreter and an environment that cannot see the course."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MPLBACKEND")}
    return subprocess.run(["make", "--no-print-directory", *args, f"PY={sys.executable}", "STAMP="], cwd=folder,
                          env=env, text=True, capture_output=True, timeout=timeout)


# The distribution's own `make test` (below) checks its untouched notebook in make test; these two
# re-prove, in the distribution, the repository's check and submit (test_selfcheck, test_submit).
@pytest.mark.more_cases
def test_make_check_on_the_untouched_notebook_says_not_attempted(student):
    done = make(student, "check", f"LESSON={LESSON}")
    tests = cell_roles.test_points(nbformat.read(student / NOTEBOOK, as_version=4))
    assert done.returncode == 0 and "Error" not in done.stderr, f"a result, not an error:\n{done.stdout}{done.stderr}"
    assert NOTEBOOK in done.stdout, done.stdout
    assert done.stdout.count("not attempted") == len(tests) and "passed" not in done.stdout, done.stdout
    assert "Kernel is running over TCP" not in done.stdout + done.stderr
    # The deadline the distribution was built with (2000-01-01), from its .course/deadlines.json.
    assert re.search(r"\n  deadline: 2000-01-01 00:00:00 UTC; a submission made now would be late by \d+ d \d+ h "
                     r"\(unless an extension your instructor gave you covers it\)\n", done.stdout), done.stdout


@pytest.mark.more_cases
def test_reference_answers_pass_and_make_submit_writes_what_the_instructor_collects(student, tmp_path):
    path = student / NOTEBOOK
    nbformat.write(build(LESSON, path, Variant("reference")), path)

    checked = make(student, "check", f"LESSON={LESSON}")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"=> {HONEST_PASS}" in checked.stdout, checked.stdout
    assert not re.search(r"FAILED|not attempted|cannot check|locked cell", checked.stdout), checked.stdout

    submitted = make(student, "submit", f"LESSON={LESSON}", "NAME=Ada Lovelace")
    assert submitted.returncode == 0 and "WARNING" not in submitted.stdout, submitted.stdout + submitted.stderr
    assert "deadline: 2000-01-01 00:00:00 UTC; this submission is late by" in submitted.stdout, submitted.stdout
    [handed_in] = list((student / "submissions").iterdir())
    assert handed_in.read_bytes() == path.read_bytes()

    from grader.grading.intake import collect  # the instructor's side, in the course repository
    from grader.grading.intake.people import People

    collected = collect.collect(LESSON, tmp_path / "submitted", tmp_path / "attempts", student / "submissions",
                                people=People(tmp_path / "people.json"))
    assert collected.students == ["ada_lovelace"] and not collected.skipped, collected
    assert (tmp_path / "submitted" / "ada_lovelace" / LESSON / f"{LESSON}.ipynb").read_bytes() == path.read_bytes()


def test_the_distribution_make_test_passes(student):
    done = make(student, "test")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^Ran [1-9]\d* tests? in", done.stderr, re.M) and "\nOK" in done.stderr, done.stderr
    assert re.search(r"^test_an_untouched_notebook_is_not_attempted \(.*\) \.\.\. ok$", done.stderr, re.M), done.stderr
