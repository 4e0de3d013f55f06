"""The distribution's code is the course's student code, not a fork: any drift between the two fails here.

Every file of code a distribution ships is byte for byte a file of the course (grader/student/,
grader/cell_roles.py, grader/jupyter/, lesson_helpers.py, grader/authoring/dist_template/); what is
generated holds the course's settings (nbgrader_config.py, requirements*.txt); the student code
imports nothing of the instructor's and agrees with the course's own definitions. No kernel starts.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from grader import __main__ as course_cli
from grader import course
from grader.authoring import dist
from grader.course import ROOT, nbgrader_config
from grader.grading.policy.late import LatePolicy
from grader.student import cli, layout
from tests.support import every_lesson_closed

GRADER = ROOT / "grader"


def test_every_file_of_code_is_a_course_file_byte_for_byte(distribution):
    copied = dist.verbatim_files()
    course_student = {p.name for p in dist.files_in(GRADER / "student")}
    assert {"cli.py", "commands.mk"} <= course_student
    assert {Path(p).name for p in copied if p.startswith("grader/student/")} == course_student
    jupyter = {p.relative_to(ROOT).as_posix() for p in (GRADER / "jupyter").rglob("*") if p.is_file()}
    assert jupyter and jupyter <= set(copied), "grader/jupyter/ must ship whole"
    for path, source in copied.items():
        assert (distribution / path).read_bytes() == source.read_bytes(), f"{path} differs from the course's {source}"
    code = {p.relative_to(distribution).as_posix() for p in distribution.rglob("*") if p.is_file()
            and not p.is_relative_to(distribution / "lessons") and not p.is_relative_to(distribution / ".course")}
    generated = {"nbgrader_config.py", "requirements.txt", "requirements-torch.txt", "README.md"}
    assert code == set(copied) | generated, code ^ (set(copied) | generated)


def test_a_fresh_build_is_what_make_dist_writes_and_a_drifted_copy_is_not(distribution, tmp_path):
    fresh = dist.contents(policy=LatePolicy(config=every_lesson_closed()))  # the deadlines the fixture had
    assert dist.differences(distribution, fresh) == []
    drifted = tmp_path / "drifted"
    shutil.copytree(distribution, drifted)
    check = drifted / "grader" / "student" / "check.py"
    check.write_text(check.read_text().replace('HONEST_PASS = "', 'HONEST_PASS = "all good; '))
    (drifted / "grader" / "extra.py").write_text("")
    config = drifted / "nbgrader_config.py"
    config.write_text(config.read_text() + "c.Execute.timeout = 1\n")
    assert dist.differences(drifted, fresh) == ["grader/extra.py: not part of the distribution",
                                         "grader/student/check.py: differs", "nbgrader_config.py: differs"]


def test_the_student_code_imports_only_itself(distribution):
    """Whatever a shipped module imports from `grader` is shipped: the student package depends on nothing else."""
    shipped = {p.relative_to(distribution).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
               for p in (distribution / "grader").rglob("*.py")}
    problems = []
    for path in (distribution / "grader").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            problems += [f"{path.relative_to(distribution)} imports {name}, which is not shipped" for name in names
                         if name.split(".")[0] == "grader" and name not in shipped]
    assert not problems, "\n".join(problems)


def test_the_student_commands_are_the_course_commands_that_run_student_code():
    student = {name: module for name, module in course_cli.COMMANDS.items() if module.startswith("grader.student.")}
    assert student == cli.COMMANDS == {"lab": "grader.student.lab", "check": "grader.student.check",
                                       "submit": "grader.student.submit"}
    assert {"release", "reference", "autograde", "override", "move-grading-data", "dist", "hub-release",
            "hub-collect"} == \
        set(course_cli.COMMANDS) - set(student)


def test_the_course_and_the_student_code_share_one_root_and_one_list_of_lessons():
    # What both have is defined once, in the student code; grader/course.py adds the instructor's paths.
    assert layout.ROOT == course.ROOT and course.LESSONS is layout.LESSONS
    assert layout.lesson_ids() == course.lesson_ids() and not layout.is_distribution()


def test_nbgrader_settings_are_the_course_settings_for_what_the_validator_runs(distribution):
    ours = dist.load_config(distribution)
    expected = dist.student_config(nbgrader_config())
    assert set(expected) >= {"Execute", "IgnorePattern"}
    assert {name: dict(ours[name]) for name in ours} == expected
    assert "CourseDirectory" not in ours, "the distribution has no course directory, gradebook or state"
    assert "Originals" not in ours, "a distribution's self-check takes its originals from .course/releases/"


def test_requirements_are_the_course_requirements_for_what_students_need(distribution):
    course_in = dist.read_requirements(ROOT / "requirements.in")
    ours = dist.read_requirements(distribution / "requirements.txt")
    assert list(ours) == list(dist.STUDENT_REQUIREMENTS)
    assert all(course_in[name] == requirement for name, requirement in ours.items())
    assert not {"pytest", "ruff", "jupytext", "nbval", "pytest-xdist"} & set(ours)
    assert dist.read_requirements(distribution / "requirements-torch.txt") == dist.read_requirements(
        ROOT / "requirements-torch.in")
