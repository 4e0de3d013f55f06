"""The distribution's code is the course's student code, not a fork: any drift between the two fails here.

Copied files must be byte for byte the course's; generated ones (grader/course.py, grader/__main__.py,
nbgrader_config.py, the Makefile, requirements.txt) must carry the course's own definitions, rules,
settings and version bounds; whatever the student code imports must be shipped; and the
distribution must run from a folder of its own, importing nothing of the course. No kernel starts.
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
from grader import notebook
from grader.authoring import dist
from grader.course import REPO, lesson_ids, nbgrader_config
from grader.errors import DistributionRefused, NotReleased

GRADER = REPO / "grader"
STUDENT_TARGETS = {"help", "env", "torch", "lab", "check", "submit", "test"}
# Imports that only run in the course repository: (module, from, name). check.released_notebook
# imports reference_notebook after grader.student.releases found no pristine release, which in a
# distribution never happens (it refuses a missing one).
COURSE_ONLY = {("grader.student.check", "grader.course", "reference_notebook")}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist") / "attention-student"
    dist.main(out=out)
    return out


def alone(**extra: str) -> dict[str, str]:
    """An environment that cannot reach the course's code: no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MPLBACKEND")}
    return env | extra


def definitions(path: Path) -> dict[str, str]:
    """Top-level name -> source text of every function, class and single-name assignment in `path`."""
    source = path.read_text()
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            found[node.name] = ast.get_source_segment(source, node)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = ast.get_source_segment(source, node)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                found[alias.asname or alias.name] = f"import of {node.module}"
    return found


def test_every_student_module_and_file_is_shipped_unchanged(built):
    copied = dist.copied_files()
    course_student = {p.name for p in (GRADER / "student").glob("*.py")}
    assert {Path(p).name for p in copied if p.startswith("grader/student/")} == course_student
    jupyter = {p.relative_to(REPO).as_posix() for p in (GRADER / "jupyter").rglob("*") if p.is_file()}
    assert jupyter and jupyter <= set(copied), "grader/jupyter/ must ship whole"
    assert "grader/notebook.py" in copied and "lesson_helpers.py" in copied
    for path, source in copied.items():
        assert (built / path).read_bytes() == source.read_bytes(), f"{path} differs from the course's {source}"


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


def test_the_commands_are_the_course_student_commands_and_nothing_else(built):
    student = [name for name, module in course_cli.COMMANDS.items() if module.startswith("grader.student.")]
    assert sorted(student) == sorted(dist.STUDENT_COMMANDS)
    assert {"release", "reference", "autograde", "dist"} <= set(course_cli.COMMANDS) - set(student)
    ours, theirs = definitions(built / "grader" / "__main__.py"), definitions(GRADER / "__main__.py")
    for name in ("summary", "build_parser", "main"):
        assert ours[name] == theirs[name], f"grader/__main__.py: {name} differs from the course's"
    commands = ast.literal_eval(ours["COMMANDS"].split("=", 1)[1])
    assert commands == {name: course_cli.COMMANDS[name] for name in dist.STUDENT_COMMANDS}


def test_course_module_copies_the_course_definitions(built):
    ours, theirs = definitions(built / "grader" / "course.py"), definitions(GRADER / "course.py")
    for name in dist.SHARED_COURSE_DEFINITIONS:
        assert ours[name] == theirs[name], f"grader/course.py: {name} differs from the course's"
    own = set(ours) - set(dist.SHARED_COURSE_DEFINITIONS)
    assert own == {"annotations", "Path", "Config", "PyFileConfigLoader", "UnknownLesson", "RELEASES",
                   "lesson_ids"}, own


def test_everything_the_student_code_imports_from_grader_is_shipped(built):
    shipped = {p.relative_to(built).with_suffix("").as_posix().replace("/", "."): p
               for p in (built / "grader").rglob("*.py")}
    modules = {name.removesuffix(".__init__"): path for name, path in shipped.items()}
    problems = []
    for name, path in shipped.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "grader":
                target = modules.get(node.module)
                if target is None:
                    problems.append(f"{name} imports {node.module}, which is not shipped")
                    continue
                defined = definitions(target)
                for alias in node.names:
                    if alias.name not in defined and f"{node.module}.{alias.name}" not in modules and (
                            name, node.module, alias.name) not in COURSE_ONLY:
                        problems.append(f"{name} imports {alias.name} from {node.module}, which lacks it")
            elif isinstance(node, ast.Import):
                problems += [f"{name} imports {a.name}, which is not shipped" for a in node.names
                             if a.name.split(".")[0] == "grader" and a.name not in modules]
    assert not problems, "\n".join(problems)


def test_the_distribution_code_lints_clean(built):
    # Undefined names in generated code (F821) and unused copies show up here, without running it.
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "E9,F",
                           "--line-length", "120", "grader", "tests", "nbgrader_config.py"],
                          cwd=built, text=True, capture_output=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_nbgrader_settings_are_the_course_settings_for_what_the_validator_runs(built):
    ours = dist.load_config(built)
    expected = dist.student_config(nbgrader_config())
    assert set(expected) >= {"Execute", "IgnorePattern"}
    assert {name: dict(ours[name]) for name in ours} == expected
    assert "CourseDirectory" not in ours, "the distribution has no course directory, gradebook or state"


def test_make_rules_are_the_course_rules_and_there_are_only_student_targets(built):
    ours, theirs = dist.make_rules(built / "Makefile"), dist.make_rules(REPO / "Makefile")
    for target in dist.SHARED_MAKE_RULES:
        assert ours[target] == theirs[target], f"make {target} differs from the course's"
    assert set(ours) == STUDENT_TARGETS
    assert "lab" in theirs and "--allow-root" in (GRADER / "student" / "lab.py").read_text()
    ours_vars, theirs_vars = dist.make_variables(built / "Makefile"), dist.make_variables(REPO / "Makefile")
    for name in dist.SHARED_MAKE_VARIABLES:
        assert ours_vars[name] == theirs_vars[name]


def requirement_lines(path: Path) -> dict[str, str]:
    """package name -> its requirement line, in the file's order."""
    lines = [line.strip() for line in path.read_text().splitlines() if line.split("#")[0].strip()]
    return {re.split(r"[<>=~!\s]", line)[0].lower(): line for line in lines}


def test_requirements_are_the_course_lines_for_what_students_need(built):
    course, ours = requirement_lines(REPO / "requirements.in"), requirement_lines(built / "requirements.txt")
    assert list(ours) == list(dist.STUDENT_REQUIREMENTS)
    assert all(course[name] == line for name, line in ours.items())
    assert not {"pytest", "ruff", "jupytext", "nbval", "pytest-xdist"} & set(ours)
    course_torch = {name: line for name, line in requirement_lines(REPO / "requirements-torch.in").items()
                    if not name.startswith("-")}
    assert requirement_lines(built / "requirements-torch.txt") == course_torch


def test_it_runs_from_its_own_folder_importing_nothing_of_the_course(built, tmp_path):
    moved = tmp_path / "elsewhere"
    shutil.copytree(built, moved)
    probe = textwrap.dedent("""
        import contextlib, importlib.util, io, json, runpy, sys
        import grader, grader.course as c, grader.student.check, grader.student.submit, grader.student.lab
        import grader.__main__ as m
        mods = [n for n in sys.modules if n == "grader" or n.startswith("grader.")]
        instructor = [n for n in ("grader.authoring", "grader.grading", "grader.trusted")
                      if importlib.util.find_spec(n)]
        helped = io.StringIO()  # `python -m grader --help`, in this process
        with contextlib.redirect_stdout(helped), contextlib.suppress(SystemExit):
            sys.argv = ["grader", "--help"]
            runpy.run_module("grader", run_name="__main__")
        print(json.dumps({"files": [sys.modules[n].__file__ for n in mods], "commands": sorted(m.COMMANDS),
                          "lessons": c.lesson_ids(), "instructor": instructor, "help": helped.getvalue()}))
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


def test_a_damaged_pristine_release_is_refused_before_anything_runs(built, tmp_path):
    moved = tmp_path / "damaged"
    shutil.copytree(built, moved)
    pristine = moved / dist.RELEASES / "03-parallel-heads.ipynb"
    pristine.chmod(0o644)
    nb = nbformat.read(pristine, as_version=4)
    nb.cells = [cell for cell in nb.cells if "points" not in notebook.meta(cell)]
    nbformat.write(nb, pristine)  # every test cell gone: a check against it would pass anything
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
        dist.main(out=REPO / "student-copy")

    lesson = "03-parallel-heads"
    stale = tmp_path / "lessons" / lesson / f"{lesson}.ipynb"
    stale.parent.mkdir(parents=True)
    nb = nbformat.read(REPO / "lessons" / lesson / f"{lesson}.ipynb", as_version=4)
    nb.cells[-1].source += "\n# an older test"
    nbformat.write(nb, stale)
    monkeypatch.setattr(dist, "student_notebook", lambda name: stale if name == lesson else REPO / "lessons" / name)
    assert dist.stale_lessons([lesson]) == [lesson]
    with pytest.raises(NotReleased, match="run `make release` first"):
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
