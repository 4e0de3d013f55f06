"""Command-line interface of the student commands: `python -m grader lab|check|submit`.

Each command is a module with `add_arguments(parser)` and `run(args)`, a thin layer over that
module's keyword-only `main()`; `run` returns the exit status, or None for 0. A refusal is a
grader.errors.CourseError, which becomes its message on stderr and exit status 1. The course's
grader/__main__.py adds the instructor's commands to these; a student distribution's runs these
alone. Only the module of the command being run is imported: the others' imports (nbgrader's server
extensions, matplotlib) take seconds, and `make check` should not wait for them.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from importlib import import_module
from pathlib import Path

from grader.errors import CourseError, message

COMMANDS = {
    "lab": "grader.student.lab",
    "check": "grader.student.check",
    "submit": "grader.student.submit",
}
DESCRIPTION = "The commands of Attention from Scratch; the Makefile calls them."


def summary(module: str) -> str:
    """The first line of `module`'s docstring, read from its file without importing it."""
    origin = importlib.util.find_spec(module).origin
    return ast.get_docstring(ast.parse(Path(origin).read_text())).splitlines()[0]


def build_parser(command: str | None = None, *, commands: dict[str, str] = COMMANDS,
                 description: str = DESCRIPTION) -> argparse.ArgumentParser:
    """Every command of `commands` with its summary; the options of `command` only, whose module is imported."""
    parser = argparse.ArgumentParser(prog="python -m grader", description=description)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name, module in commands.items():
        options = subparsers.add_parser(name, help=summary(module))
        if name == command:
            import_module(module).add_arguments(options)
    return parser


def main(argv: list[str] | None = None, *, commands: dict[str, str] = COMMANDS,
         description: str = DESCRIPTION) -> None:
    """Run the command `argv` names (default: this process's arguments); exit with the status it returns,
    or with the message of its CourseError."""
    argv = sys.argv[1:] if argv is None else argv
    command = next((word for word in argv if not word.startswith("-")), None)  # the top level has no options
    args = build_parser(command, commands=commands, description=description).parse_args(argv)
    try:
        status = import_module(commands[args.command]).run(args)
    except CourseError as error:
        sys.exit(message(error))  # on stderr, exit status 1
    if status is not None:
        sys.exit(status)
