"""Command-line interface: `python -m grader <command>`. The Makefile calls these commands.

Each command is a module in this package with `add_arguments(parser)` and `run(args)`, a thin
layer over that module's keyword-only `main()`. To add a command, add its module to COMMANDS.
"""

from __future__ import annotations

import argparse

from grader.authoring import dist, reference, release
from grader.grading import batch
from grader.student import check, lab, submit

COMMANDS = {
    "release": release,
    "reference": reference,
    "lab": lab,
    "check": check,
    "submit": submit,
    "autograde": batch,
    "dist": dist,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        module.add_arguments(commands.add_parser(name, help=module.__doc__.splitlines()[0]))
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    COMMANDS[args.command].run(args)


if __name__ == "__main__":
    main()
