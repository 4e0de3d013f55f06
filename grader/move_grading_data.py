"""Move grading data from grader/state/, where earlier versions kept it, to the course's root.

`python -m grader move-grading-data`, or `make move-grading-data`.

Earlier versions of the course kept the gradebook, the submissions and everything grading writes in
grader/state/, inside the Python package; they now live at the course's root (grader/layout.py).
Every grading command refuses a course with data still in the old place and names this command.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from grader.course import ROOT, nbgrader_config
from grader.layout import GRADING_DATA, move_old_data


def main(*, course: Path = ROOT) -> list[tuple[Path, Path]]:
    """Move the grading data of the course whose nbgrader_config.py is in `course`; print each move."""
    from nbgrader.coursedir import CourseDirectory

    root = Path(CourseDirectory(config=nbgrader_config(course)).root).resolve()
    moves = move_old_data(root)
    for source, target in moves:
        print(f"moved {source} -> {target}")
    print(f"{len(moves)} moved; the course's grading data is at {root} ({', '.join(GRADING_DATA)})" if moves
          else f"nothing to move: {root} has no grading data in grader/state/")
    return moves


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--course", type=Path, default=ROOT,
                        help="folder whose nbgrader_config.py to use (default: this repository)")


def run(args: argparse.Namespace) -> None:
    main(course=args.course)
