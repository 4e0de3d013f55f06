"""Generate the student notebooks in lessons/ from the reference notebooks in solutions/."""

from __future__ import annotations

import argparse
from pathlib import Path

from grader.course import REPO, nbgrader_api, nbgrader_config, select_lessons


def main(*, lessons: list[str] | None = None, course: Path = REPO) -> list[str]:
    """Run nbgrader's generate_assignment for each lesson; return the lessons released.

    `course` is the folder whose nbgrader_config.py is used (default: this repository, which
    releases into lessons/ and records the test cells in its gradebook). The steps are
    `grader.pipeline.release_steps()`.
    """
    lessons = select_lessons(lessons)
    config = nbgrader_config(course)
    api = nbgrader_api(config)
    for lesson in lessons:
        result = api.generate_assignment(lesson, force=True, create=True)
        if not result["success"]:
            raise SystemExit(f"releasing {lesson} failed:\n{result.get('error') or ''}\n{result.get('log') or ''}")
        print(f"released {lesson}")
    return lessons


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    parser.add_argument("--course", type=Path, default=REPO,
                        help="folder whose nbgrader_config.py to use (default: this repository)")


def run(args: argparse.Namespace) -> None:
    main(lessons=args.lessons, course=args.course)
