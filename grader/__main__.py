"""Command-line interface: `python -m grader <command>`. The Makefile calls these commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from grader import reference, release
from grader.course import REPO


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("release", help="regenerate lessons/ from solutions/ (nbgrader generate_assignment)")
    p.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    p.add_argument("--course", type=Path, default=REPO,
                   help="folder whose nbgrader_config.py to use (default: this repository)")

    p = commands.add_parser("reference", help="re-execute the reference notebooks in solutions/ in place")
    p.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    p.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell (default: 600)")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.command == "release":
        release.main(lessons=args.lessons, course=args.course)
    elif args.command == "reference":
        reference.main(lessons=args.lessons, timeout=args.timeout)


if __name__ == "__main__":
    main()
