"""Command-line interface: `python -m grader <command>`. The Makefile calls these commands.

Each command is a module of this package with `add_arguments(parser)` and `run(args)`, a thin
layer over that module's keyword-only `main()`; `run` returns the exit status, or None for 0. To add
a command, add its module to COMMANDS. Library code raises grader.errors.CourseError where it
refuses; only this module turns that into a message on stderr and exit status 1.
Only the module of the command being run is imported: the others' imports (nbgrader's server
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
    "release": "grader.authoring.release",
    "reference": "grader.authoring.reference",
    "lab": "grader.student.lab",
    "check": "grader.student.check",
    "submit": "grader.student.submit",
    "autograde": "grader.grading.autograde",
    "dist": "grader.authoring.dist",
}


def summary(module: str) -> str:
    """The first line of `module`'s docstring, read from its file without importing it."""
    origin = importlib.util.find_spec(module).origin
    return ast.get_docstring(ast.parse(Path(origin).read_text())).splitlines()[0]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command with its summary; the options of `command` only, whose module is imported."""
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        options = commands.add_parser(name, help=summary(module))
        if name == command:
            import_module(module).add_arguments(options)
    return parser


def main(argv: list[str] | None = None) -> None:
    """Run the command `argv` names; exit with the status it returns, or with the message of its CourseError."""
    argv = sys.argv[1:] if argv is None else argv
    command = next((word for word in argv if not word.startswith("-")), None)  # the top level has no options
    args = build_parser(command).parse_args(argv)
    try:
        status = import_module(COMMANDS[args.command]).run(args)
    except CourseError as error:
        sys.exit(message(error))  # on stderr, exit status 1
    if status is not None:
        sys.exit(status)


if __name__ == "__main__":
    main()
