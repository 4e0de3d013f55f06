"""Library code raises the course's own errors (grader/errors.py); only grader/__main__.py ends the process."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader import errors
from grader.__main__ import main as cli
from grader.authoring import dist_steps, release
from grader.errors import CannotSubmit, CourseError, UnknownLesson
from grader.grading import autograde
from grader.student import submit

GRADER = Path(errors.__file__).resolve().parent


def test_autograde_main_with_bad_input_raises_a_course_error_not_an_exit():
    with pytest.raises(UnknownLesson, match=r"unknown lesson\(s\) no-such-lesson") as refused:
        autograde.main(lesson="no-such-lesson", unsafe_no_sandbox=True)
    assert not isinstance(refused.value, SystemExit)


def test_student_and_authoring_mains_raise_course_errors():
    with pytest.raises(CannotSubmit, match="NAME=ada_lovelace"):
        submit.main(lesson="03-parallel-heads", name="!!!")
    with pytest.raises(UnknownLesson):
        release.main(lessons=["no-such-lesson"])
    with pytest.raises(UnknownLesson, match="no lesson numbered 99"):
        dist_steps.parse("99")


def test_the_command_line_turns_a_course_error_into_its_message_and_status_1(capsys):
    with pytest.raises(SystemExit) as exited:
        cli(["autograde", "no-such-lesson"])
    assert exited.value.code.startswith("unknown lesson(s) no-such-lesson; the course has: ")
    with pytest.raises(SystemExit) as exited:
        cli(["check", "evil\x1b]0;owned\x07"])  # a name a student typed: shown inert
    assert "\x1b" not in exited.value.code and r"evil\x1b]0;owned\x07" in exited.value.code


def test_message_keeps_lines_and_makes_each_inert():
    shown = errors.message(CourseError("first line\nsecond \x1b[2J line\u202e"))
    assert shown == "first line\nsecond \\x1b[2J line\\u202e"


def exits(tree: ast.AST) -> list[int]:
    """Lines of `tree` that end the process: raise SystemExit, sys.exit, os._exit, exit(), a SystemExit subclass."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(raised, ast.Name) and raised.id == "SystemExit":
                found.append(node.lineno)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("exit", "quit"):
                found.append(node.lineno)
            elif isinstance(func, ast.Attribute) and func.attr in ("exit", "_exit") and \
                    isinstance(func.value, ast.Name) and func.value.id in ("sys", "os"):
                found.append(node.lineno)
        elif isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "SystemExit"
                                                    for b in node.bases):
            found.append(node.lineno)
    return found


# The command line: the course's, the student commands' that it and a student distribution run, and
# the configuration a plain `nbgrader ...` command reads, which can stop that command only by exiting.
COMMAND_LINE = {GRADER / "__main__.py", GRADER / "student" / "cli.py", GRADER / "nbgrader_config.py"}


def test_no_library_module_ends_the_process():
    found = {str(path.relative_to(GRADER.parent)): lines for path in sorted(GRADER.rglob("*.py"))
             if path not in COMMAND_LINE
             if (lines := exits(ast.parse(path.read_text())))}
    assert found == {}, "raise a grader.errors.CourseError instead; only the command line (COMMAND_LINE) exits"


def test_the_scan_finds_each_way_to_exit():
    source = "import sys, os\nraise SystemExit(1)\nsys.exit(2)\nos._exit(3)\nexit()\nclass Refused(SystemExit): pass\n"
    assert sorted(exits(ast.parse(source))) == [2, 3, 4, 5, 6]
