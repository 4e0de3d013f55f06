"""The distribution's code is the course's student code, not a fork: any drift between the two fails here.

Every file of code a distribution ships is byte for byte a file of the course (grader/student/,
grader/notebook.py, grader/jupyter/, lesson_helpers.py, grader/authoring/dist_template/); what is
generated holds the course's settings (nbgrader_config.py, requirements*.txt). The student code
imports nothing of the instructor's, agrees with the course's own definitions, and runs from a
folder of its own. No kernel starts.
"""

from __future__ import annotations

import ast
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

from grader import __main__ as course_cli
from grader import course, notebook
from grader.authoring import dist
from grader.course import REPO, lesson_ids, nbgrader_config
from grader.student import cli, layout, submission_names

GRADER = REPO / "grader"
STUDENT_TARGETS = {"help", "env", "torch", "lab", "check", "submit", "test"}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist") / "attention-student"
    dist.main(out=out)
    return out


def alone(**extra: str) -> dict[str, str]:
    """An environment that cannot reach the course's code: no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MPLBACKEND")}
    return env | extra


def test_every_file_of_code_is_a_course_file_byte_for_byte(built):
    copied = dist.copied_files()
    course_student = {p.name for p in (GRADER / "student").glob("*.py")}
    assert {Path(p).name for p in copied if p.startswith("grader/student/")} == course_student
    jupyter = {p.relative_to(REPO).as_posix() for p in (GRADER / "jupyter").rglob("*") if p.is_file()}
    assert jupyter and jupyter <= set(copied), "grader/jupyter/ must ship whole"
    for path, source in copied.items():
        assert (built / path).read_bytes() == source.read_bytes(), f"{path} differs from the course's {source}"
    code = {p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file()
            and not p.is_relative_to(built / "lessons") and not p.is_relative_to(built / ".course")}
    generated = {"nbgrader_config.py", "requirements.txt", "requirements-torch.txt", "README.md"}
    assert code == set(copied) | generated, code ^ (set(copied) | generated)


def test_a_fresh_build_is_what_make_dist_writes_and_a_drifted_copy_is_not(built, tmp_path):
    assert dist.differences(built) == []
    drifted = tmp_path / "drifted"
    shutil.copytree(built, drifted)
    check = drifted / "grader" / "student" / "check.py"
    check.write_text(check.read_text().replace('HONEST_PASS = "', 'HONEST_PASS = "all good; '))
    (drifted / "grader" / "extra.py").write_text("")
    config = drifted / "nbgrader_config.py"
    config.write_text(config.read_text() + "c.Execute.timeout = 1\n")
    assert dist.differences(drifted) == ["grader/extra.py: not part of the distribution",
                                         "grader/student/check.py: differs", "nbgrader_config.py: differs"]


def test_the_student_code_imports_only_itself(built):
    """Whatever a shipped module imports from `grader` is shipped: the student package depends on nothing else."""
    shipped = {p.relative_to(built).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
               for p in (built / "grader").rglob("*.py")}
    problems = []
    for path in (built / "grader").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            problems += [f"{path.relative_to(built)} imports {name}, which is not shipped" for name in names
                         if name.split(".")[0] == "grader" and name not in shipped]
    assert not problems, "\n".join(problems)


def test_the_student_commands_are_the_course_commands_that_run_student_code():
    student = {name: module for name, module in course_cli.COMMANDS.items() if module.startswith("grader.student.")}
    assert student == cli.COMMANDS == {"lab": "grader.student.lab", "check": "grader.student.check",
                                       "submit": "grader.student.submit"}
    assert {"release", "reference", "autograde", "dist"} == set(course_cli.COMMANDS) - set(student)


def test_the_student_code_agrees_with_the_course_definitions():
    # grader/course.py still defines these for the instructor's code: they must say what the student's code says.
    assert layout.ROOT == course.REPO and layout.LESSONS == course.LESSONS
    assert (layout.SUBMISSIONS, layout.JUPYTER_CONFIG, layout.LESSON_HELPERS) == (
        course.SUBMISSIONS, course.STUDENT_JUPYTER_CONFIG, course.LESSON_HELPERS)
    assert layout.lesson_ids() == course.lesson_ids() and not layout.is_distribution()
    assert (submission_names.SUBMISSION_REGEXP, submission_names.SUBMISSION_TIME_FORMAT) == (
        course.SUBMISSION_REGEXP, course.SUBMISSION_TIME_FORMAT)
    assert submission_names.submission_filename("l", "s", "t") == course.submission_filename("l", "s", "t")
    env = {"PYTHONPATH": "/elsewhere"}
    assert layout.with_lesson_helpers(env) == course.with_lesson_helpers(env)


def test_nbgrader_settings_are_the_course_settings_for_what_the_validator_runs(built):
    ours = dist.load_config(built)
    expected = dist.student_config(nbgrader_config())
    assert set(expected) >= {"Execute", "IgnorePattern"}
    assert {name: dict(ours[name]) for name in ours} == expected
    assert "CourseDirectory" not in ours, "the distribution has no course directory, gradebook or state"
    assert "Originals" not in ours, "a distribution's self-check takes its originals from .course/releases/"


def test_requirements_are_the_course_requirements_for_what_students_need(built):
    course_in = dist.read_requirements(REPO / "requirements.in")
    ours = dist.read_requirements(built / "requirements.txt")
    assert list(ours) == list(dist.STUDENT_REQUIREMENTS)
    assert all(course_in[name] == requirement for name, requirement in ours.items())
    assert not {"pytest", "ruff", "jupytext", "nbval", "pytest-xdist"} & set(ours)
    assert dist.read_requirements(built / "requirements-torch.txt") == dist.read_requirements(
        REPO / "requirements-torch.in")


def test_it_runs_from_its_own_folder_importing_nothing_of_the_course(built, tmp_path):
    moved = tmp_path / "elsewhere"
    shutil.copytree(built, moved)
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
def test_a_damaged_copy_is_refused_before_anything_runs(built, tmp_path, damage):
    moved = tmp_path / "damaged"
    shutil.copytree(built, moved)
    if damage == "a changed original":
        pristine = moved / dist.RELEASES / "03-parallel-heads.ipynb"
        pristine.chmod(0o644)
        nb = nbformat.read(pristine, as_version=4)
        nb.cells = [cell for cell in nb.cells if "points" not in notebook.meta(cell)]
        nbformat.write(nb, pristine)  # every test cell gone: a check against it would pass anything
    else:
        (moved / dist.MANIFEST).unlink()
    done = subprocess.run([sys.executable, "-m", "grader", "check", "03-parallel-heads"], cwd=moved, env=alone(),
                          text=True, capture_output=True, timeout=300)
    assert done.returncode != 0 and "this copy of the course is damaged" in done.stderr, done.stdout + done.stderr
    assert "download the course again" in done.stderr and "passed" not in done.stdout


def test_the_build_refuses_a_stale_release_and_a_folder_it_does_not_own(tmp_path, monkeypatch):
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit, match="holds no earlier distribution"):
        dist.main(out=occupied)
    assert (occupied / "notes.txt").read_text() == "mine"
    with pytest.raises(SystemExit, match="outside the course repository"):
        dist.main(out=REPO / "student-copy")

    lesson = "03-parallel-heads"
    stale = tmp_path / "lessons" / lesson / f"{lesson}.ipynb"
    stale.parent.mkdir(parents=True)
    nb = nbformat.read(REPO / "lessons" / lesson / f"{lesson}.ipynb", as_version=4)
    nb.cells[-1].source += "\n# an older test"
    nbformat.write(nb, stale)
    monkeypatch.setattr(dist, "student_notebook", lambda name: stale if name == lesson else REPO / "lessons" / name)
    assert dist.stale_lessons([lesson]) == [lesson]
    with pytest.raises(SystemExit, match="run `make release` first"):
        dist.main(out=tmp_path / "new", lessons=[lesson])


def test_rebuilding_replaces_an_earlier_distribution_but_keeps_its_git(built, tmp_path):
    earlier = tmp_path / "published"
    shutil.copytree(built, earlier)
    (earlier / ".git").mkdir()
    (earlier / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (earlier / "lessons" / "old-lesson").mkdir()
    (earlier / "lessons" / "old-lesson" / "old-lesson.ipynb").write_text("{}")
    files = dist.main(out=earlier, lessons=["03-parallel-heads"])
    assert (earlier / ".git" / "HEAD").is_file() and not (earlier / "lessons" / "old-lesson").exists()
    # Lessons it published stay (students have them: grader/authoring/dist_steps.py); stray files go.
    assert json.loads((earlier / dist.MANIFEST).read_text())["releases"].keys() == set(lesson_ids())
    assert dist.differences(earlier, dist.contents()) == [] and len(files) > 10


def test_kernels_of_its_lab_and_self_check_import_its_own_lesson_helpers(built, tmp_path):
    """Nothing is installed into a distribution's environment: `make lab` and `make check` put its root on
    the kernels' PYTHONPATH, ahead of anything else (here, the course's own copy, which this .venv reaches)."""
    moved = tmp_path / "elsewhere"
    shutil.copytree(built, moved)
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
