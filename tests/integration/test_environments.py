"""The environment matrix: one small batch graded where instructors really run the grader, identical everywhere.

Each cell grades the same three submissions of Lesson 3 (the reference answers, a common mistake, and the
release handed in carrying every metadata key the grader writes, tests/fixtures/hostile/output-and-pages.toml's
`forged_grader_metadata`) with `python -m grader autograde`, in a copy of the shared course, and must give
every submission its exact score, no forged flag and no UNSAFE: line. The cells: as root and as an ordinary
user (tests/ordinary_user.py: a uid no account owns, no groups); TMPDIR unset, under /tmp, elsewhere
(/var/tmp) and under a private (0700) folder, as job schedulers set it; a course path with a space and
non-ASCII letters; a course without .git whose lesson notebook is released again first; a HOME of mode 0750.

`make test` runs one representative (an ordinary user, a private TMPDIR and a HOME of mode 0750); the
other cells are `same_verdicts` (make test-all). Every sandboxed kernel died in the TMPDIR cells before
the run folder moved into the sandbox (issue 39).
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.course import ROOT
from grader.layout import GRADEBOOK
from grader.sandbox.bwrap import SETPRIV, python_dirs
from tests.ordinary_user import as_ordinary_user, unused_uid, user_env
from tests.support import Course, batch_scores, hostile_cases, points_of, write_download

LESSON = "03-parallel-heads"
ATTEMPT = "20260115-100000"
CELL_TIMEOUT = 30
CASES = ("honest_reference", "forged_grader_metadata")


@dataclass(frozen=True)
class Cell:
    """Where one batch is graded."""

    user: bool = False  # an ordinary user (else root)
    tmpdir: str | None = None  # None: unset; "tmp": under /tmp; "var": under /var/tmp; "private": under a 0700 folder
    course_name: str = "course"
    home_mode: int = 0o755
    no_git_release: bool = False  # release the lesson again in the course first, as a zip download would


REPRESENTATIVE = Cell(user=True, tmpdir="private", home_mode=0o750)
MATRIX = {
    "root-tmpdir-unset": Cell(),
    "root-tmpdir-under-tmp": Cell(tmpdir="tmp"),
    "root-tmpdir-var-tmp": Cell(tmpdir="var"),
    "root-tmpdir-private": Cell(tmpdir="private"),
    "user-tmpdir-unset": Cell(user=True),
    "user-tmpdir-under-tmp": Cell(user=True, tmpdir="tmp"),
    "user-tmpdir-var-tmp": Cell(user=True, tmpdir="var"),
    "root-course-path-space-non-ascii": Cell(course_name="cours été Ω"),
    "user-course-path-space-non-ascii": Cell(user=True, course_name="cours été Ω"),
    "root-home-0750": Cell(home_mode=0o750),
    "user-no-git-release": Cell(user=True, no_git_release=True),
}


def copy_course(course: Course, root: Path) -> Course:
    """`course`'s Lesson 3 (its release, and the gradebook as released) in a course of its own at `root`: never
    the shared course's own gradebook, which the shared batch fills meanwhile."""
    (root / "lessons").mkdir(parents=True)
    shutil.copytree(course.release(LESSON).parent, root / "lessons" / LESSON)
    course.copy_gradebook(root / GRADEBOOK)
    config = (course.root / "nbgrader_config.py").read_text().replace(str(course.root), str(root))
    (root / "nbgrader_config.py").write_text(config)
    return Course(root)


def grade_in(cell: Cell, course: Course) -> None:
    """Grade the matrix's batch in `cell` and `check` what it gave."""
    if cell.user and (os.geteuid() != 0 or not os.path.exists(SETPRIV)):
        pytest.skip("the ordinary-user cells drop from root to an unused uid (util-linux's setpriv)")
    uid = unused_uid() if cell.user else os.getuid()
    top = Path(tempfile.mkdtemp(prefix="environments-", dir="/tmp"))
    made = [top]
    try:
        here = copy_course(course, top / cell.course_name)
        home = top / "home"
        home.mkdir()
        env = {"TMPDIR": ""}
        if cell.tmpdir == "tmp":
            env["TMPDIR"] = str(top / "tmp" / "x")
        elif cell.tmpdir == "var":
            made.append(Path(tempfile.mkdtemp(prefix="environments-", dir="/var/tmp")))
            env["TMPDIR"] = str(made[-1] / "x")
        elif cell.tmpdir == "private":
            env["TMPDIR"] = str(top / "private" / "job" / "tmp")
        if env["TMPDIR"]:
            Path(env["TMPDIR"]).mkdir(parents=True)
        cases = {name: spec for name, spec in hostile_cases({}).items() if name in CASES}
        cases["common_mistake"] = {"from": "mistake", "lost": "mistake"}
        release = here.release(LESSON)
        archive = top / "download.zip"
        write_download(archive, LESSON, release, cases, ATTEMPT)
        for folder in made:
            for path in (folder, *folder.rglob("*")):
                os.chown(path, uid, uid, follow_symlinks=False)
        home.chmod(cell.home_mode)
        if cell.tmpdir == "private":
            (top / "private").chmod(0o700)
        prefix = as_ordinary_user(uid, [*python_dirs(), sys.prefix, str(ROOT)]) if cell.user else []
        environment = user_env(home, uid, **{key: value for key, value in env.items() if value})
        commands = []
        if cell.no_git_release:
            commands.append(["release", LESSON, "--course", str(here.root)])
        commands.append(["autograde", LESSON, "--course", str(here.root), "--source", str(archive), "--workers", "2",
                         "--timeout", str(CELL_TIMEOUT)])
        runs = [subprocess.run([*prefix, sys.executable, "-m", "grader", *command], capture_output=True, text=True,
                               env=environment, cwd=top, timeout=900) for command in commands]
        rows = {}
        grades = here.layout.grades_csv(LESSON)
        if grades.is_file():
            with grades.open(encoding="utf-8") as handle:
                rows = {row["student"]: row for row in csv.DictReader(handle)}
        log = here.layout.log(LESSON)
        check({"runs": runs, "rows": rows, "cases": cases, "release": release, "uid": uid,
               "log": log.read_text(errors="replace") if log.is_file() else ""})
    finally:
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)


def check(graded: dict) -> None:
    """Every submission graded with its exact score, no forged flag, no UNSAFE: line."""
    for run in graded["runs"]:
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = graded["runs"][-1].stdout
    assert set(graded["rows"]) == set(graded["cases"]), (graded["rows"].keys(), summary, graded["log"])
    points = points_of(graded["release"])
    wrong = {}
    for name, spec in graded["cases"].items():
        row = graded["rows"][name]
        got = {grade_id: float(row[grade_id]) for grade_id in points} if row["status"] == "graded" else row["status"]
        if got != batch_scores(LESSON, graded["release"], spec):
            wrong[name] = (got, row["notes"], row.get("reason"))
    assert not wrong, (wrong, graded["log"])
    honest = set(graded["rows"]["honest_reference"]["notes"].split("; "))
    forged = set(graded["rows"]["forged_grader_metadata"]["notes"].split("; "))
    assert "unsafe-no-sandbox" not in forged and forged & {"no-cgroup", "grader-uid"} <= honest, (forged, honest)
    assert "UNSAFE:" not in summary, summary


def test_an_ordinary_user_with_a_private_tmpdir_grades_every_submission_exactly(course):
    grade_in(REPRESENTATIVE, course)


@pytest.mark.same_verdicts
@pytest.mark.parametrize("name", list(MATRIX))
def test_every_cell_of_the_matrix_grades_every_submission_exactly(course, name):
    grade_in(MATRIX[name], course)
