"""Command-line interface: `python -m grader <command>`. The Makefile calls these commands.

The student commands (lab, check, submit) and how every command is run are in
grader/student/cli.py, which a student distribution ships as it is; the instructor's commands
are added here. To add a command, add its module, with `add_arguments(parser)` and `run(args)`,
to COMMANDS. Library code raises grader.errors.CourseError where it refuses; only the command line
turns that into a message on stderr and exit status 1.
"""

from __future__ import annotations

from grader.student import cli

COMMANDS = {
    "release": "grader.authoring.release",
    "reference": "grader.authoring.reference",
    **cli.COMMANDS,
    "autograde": "grader.grading.autograde",
    "override": "grader.grading.policy.overrides",
    "move-grading-data": "grader.move_grading_data",
    "dist": "grader.authoring.dist",
    "hub-release": "grader.hub.release",
    "hub-collect": "grader.hub.collect",
}


def build_parser(command: str | None = None):
    """Every command with its summary; the options of `command` only, whose module is imported."""
    return cli.build_parser(command, commands=COMMANDS, description=__doc__.splitlines()[0])


def main(argv: list[str] | None = None) -> None:
    cli.main(argv, commands=COMMANDS, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
