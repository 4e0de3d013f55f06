"""`make dist` builds a distribution that runs on its own, and refuses what it must not write over.

Moved out of the repository and run without the course on PYTHONPATH, it imports only its own
code, offers only the student commands and targets, puts its own lesson_helpers.py in its kernels'
reach, and refuses a damaged copy before anything runs. The build refuses a stale release and a
folder it does not own, and rebuilding keeps an earlier distribution's .git. No kernel starts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from grader import cell_roles
from grader.authoring import dist
from grader.course import ROOT, lesson_ids
from grader.errors import DistributionRefused, NotReleased
from grader.grading.policy.late import LatePolicy
from tests.support import every_lesson_closed

STUDENT_TARGETS = {"help", "env", "torch", "lab", "check", "submit", "test"}


def alone(**extra: str) -> dict[str, str]:
    """An environment that cannot reach the course's code: no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MPLBACKEND")}
    return env | extra


def test_it_runs_from_its_own_folder_importing_nothing_of_the_course(distribution, tmp_path):
    moved = tmp_path / "elsewhere"
    shutil.copytree(distribution, moved)
    probe = textwrap.dedent("""
        import contextlib, importlib.util, io, json, runpy, sys
        import grader, grader.student.check, grader.student.submit, grader.student.lab
        from grader.student import cli, layout
        mods = [n for n in sys.modules if n == "grader" or n.startswith("grader.")]
        instructor = [n for n in ("grader.course", "grader.authoring", "grader.grading", "grader.trusted")
                      if importlib.util.find_spec(n)]
        helped = io.StringIO()  # `python -m grader --help`, in this process
        with contextlib.redirect_stdout(helped), contextlib.suppress(SystemExit):
            sys.argv = ["grader", "--help"]
            runpy.run_module("grader", run_name="__main__")
        print(json.dumps({"files": [sys.modules[n].__file__ for n in mods], "commands": sorted(cli.COMMANDS),
                          "lessons": layout.lesson_ids(), "instructor": instructor, "help": helped.getvalue()}))
    """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=moved, env=alone(), text=True, capture_output=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["files"] and all(Path(f).resolve().is_relative_to(moved.resolve()) for f in found["files"]), found
    assert found["commands"] == ["check", "lab", "submit"] and found["lessons"] == lesson_ids()
    assert found["instructor"] == [], "the instructor's code is importable from the distribution"

    assert re.search(r"\{lab,check,submit\}", found["help"]), found["help"]
    made = subprocess.run(["make", "--no-print-directory", "help"], cwd=moved, text=True, capture_output=True)
    assert set(re.findall(r"make (\S+)", made.stdout)) == STUDENT_TARGETS, made.stdout


@pytest.mark.parametrize("damage", ["a changed original", "no manifest"])
def test_a_damaged_copy_is_refused_before_anything_runs(distribution, tmp_path, damage):
    moved = tmp_path / "damaged"
    shutil.copytree(distribution, moved)
    if damage == "a changed original":
        pristine = moved / dist.RELEASES_PATH / "03-parallel-heads.ipynb"
        pristine.chmod(0o644)
        nb = nbformat.read(pristine, as_version=4)
        nb.cells = [cell for cell in nb.cells if "points" not in cell_roles.meta(cell)]
        nbformat.write(nb, pristine)  # every test cell gone: a check against it would pass anything
    else:
        (moved / dist.MANIFEST_PATH).unlink()
    done = subprocess.run([sys.executable, "-m", "grader", "check", "03-parallel-heads"], cwd=moved, env=alone(),
                          text=True, capture_output=True, timeout=300)
    assert done.returncode != 0 and "this copy of the course is damaged" in done.stderr, done.stdout + done.stderr
    assert "download the course again" in done.stderr and "passed" not in done.stdout


def test_the_build_refuses_a_stale_release_and_a_folder_it_does_not_own(tmp_path, monkeypatch):
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    with pytest.raises(DistributionRefused, match="holds no earlier distribution"):
        dist.main(out=occupied)
    assert (occupied / "notes.txt").read_text() == "mine"
    with pytest.raises(DistributionRefused, match="outside the course repository"):
        dist.main(out=ROOT / "student-copy")

    lesson = "03-parallel-heads"
    stale = tmp_path / "lessons" / lesson / f"{lesson}.ipynb"
    stale.parent.mkdir(parents=True)
    nb = nbformat.read(ROOT / "lessons" / lesson / f"{lesson}.ipynb", as_version=4)
    nb.cells[-1].source += "\n# an older test"
    nbformat.write(nb, stale)
    monkeypatch.setattr(dist, "student_notebook", lambda name: stale if name == lesson else ROOT / "lessons" / name)
    assert dist.stale_lessons([lesson]) == [lesson]
    with pytest.raises(NotReleased, match="run `make release` first"):
        dist.main(out=tmp_path / "new", lessons=[lesson], config=every_lesson_closed())


def test_rebuilding_replaces_an_earlier_distribution_but_keeps_its_git(distribution, tmp_path):
    earlier = tmp_path / "published"
    shutil.copytree(distribution, earlier)
    (earlier / ".git").mkdir()
    (earlier / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (earlier / "lessons" / "old-lesson").mkdir()
    (earlier / "lessons" / "old-lesson" / "old-lesson.ipynb").write_text("{}")
    files = dist.main(out=earlier, lessons=["03-parallel-heads"], config=every_lesson_closed())
    assert (earlier / ".git" / "HEAD").is_file() and not (earlier / "lessons" / "old-lesson").exists()
    # Lessons it published stay (students have them: grader/authoring/dist_steps.py); stray files go.
    assert json.loads((earlier / dist.MANIFEST_PATH).read_text())["releases"].keys() == set(lesson_ids())
    fresh = dist.contents(policy=LatePolicy(config=every_lesson_closed()))
    assert dist.differences(earlier, fresh) == [] and len(files) > 10


def test_kernels_of_its_lab_and_self_check_import_its_own_lesson_helpers(distribution, tmp_path):
    """Nothing is installed into a distribution's environment: `make lab` and `make check` put its root on
    the kernels' PYTHONPATH, ahead of anything else (here, the course's own copy, which this .venv reaches)."""
    moved = tmp_path / "elsewhere"
    shutil.copytree(distribution, moved)
    probe = textwrap.dedent("""
        import contextlib, os, subprocess, sys
        from grader.student import check, lab
        kernel = [sys.executable, "-c", "import lesson_helpers; print(lesson_helpers.__file__)"]
        folder = sorted(p for p in (lab.LESSONS).iterdir() if p.is_dir())[0]
        print(subprocess.run(kernel, cwd=folder, env=lab.environment(), capture_output=True, text=True).stdout.strip())
        with check._kernel_pythonpath():
            print(subprocess.run(kernel, cwd=folder, capture_output=True, text=True).stdout.strip())
        print(os.environ.get("PYTHONPATH"))
    """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=moved, env=alone(), text=True, capture_output=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    expected = str((moved / "lesson_helpers.py").resolve())
    assert done.stdout.splitlines() == [expected, expected, "None"], done.stdout
