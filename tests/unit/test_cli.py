"""grader/__main__.py: every command is listed with its summary, and a student command imports no instructor one."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from grader.__main__ import COMMANDS, build_parser
from grader.course import ROOT

PROBE = """
import contextlib, json, sys
from grader.__main__ import main
with contextlib.suppress(SystemExit):
    main([{command!r}, "--help"])
print(json.dumps(sorted(sys.modules)))
"""


def imported_by(command: str) -> set[str]:
    """The modules a fresh interpreter has imported after `python -m grader <command> --help`."""
    done = subprocess.run([sys.executable, "-c", PROBE.format(command=command)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_help_lists_every_command_with_the_first_line_of_its_docstring(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for name, module in COMMANDS.items():
        first = importlib.import_module(module).__doc__.splitlines()[0]
        assert f"{name} {first}" in shown, f"{name}: {first!r} is not in --help"


@pytest.mark.parametrize("command", ["check", "lab", "submit"])
def test_a_student_command_imports_neither_the_instructor_commands_nor_matplotlib(command):
    modules = imported_by(command)
    assert COMMANDS[command] in modules
    instructor = {module for module in COMMANDS.values() if not module.startswith("grader.student.")}
    assert not instructor & modules, f"{command} imported {sorted(instructor & modules)}"
    assert "matplotlib" not in modules, f"{command} imported matplotlib"


def test_the_command_run_gets_its_own_options():
    args = build_parser("autograde").parse_args(["autograde", "03-parallel-heads", "--workers", "3"])
    assert (args.command, args.lesson, args.workers) == ("autograde", "03-parallel-heads", 3)
