"""Instructors on a hub: publish what every student's server reads, and release lessons to the exchange.

`python -m grader hub-release 03-parallel-heads` (`make hub-release LESSON=03-parallel-heads`):

1. copies `lesson_helpers.py` and the students' Jupyter configuration (grader/hub/student/: the
   Assignments panel and Validate, no instructor tools; the course id and exchange) into the shared
   folder every student's server reads (ATTENTION_SHARED; grader/hub/jupyterhub_config.py puts it
   on their PYTHONPATH and JUPYTER_CONFIG_PATH), readable by all;
2. releases each lesson's student notebook (lessons/<id>/, written by `make release`, whose test
   cells are in the gradebook) to nbgrader's exchange with `nbgrader release_assignment --force`,
   where the students' Assignments panel lists it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import TextIO

from grader.course import ROOT, nbgrader_config, select_lessons
from grader.errors import NotReleased
from grader.hub import settings
from grader.layout import Layout
from grader.student.layout import LESSON_HELPERS

STUDENT_CONFIG = Path(__file__).resolve().parent / "student"


def publish(shared: Path) -> None:
    """Copy lesson_helpers.py and the students' Jupyter configuration into `shared`, readable by everyone."""
    jupyter = shared / "jupyter"
    jupyter.mkdir(parents=True, exist_ok=True)
    for source in [LESSON_HELPERS, *sorted(p for p in STUDENT_CONFIG.rglob("*") if p.is_file())]:
        target = shared / source.name if source == LESSON_HELPERS else jupyter / source.relative_to(STUDENT_CONFIG)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        shutil.copyfile(source, partial)
        os.chmod(partial, 0o644)
        os.replace(partial, target)  # a server starting meanwhile reads the old file or the new, never half
    for folder in [shared, *(p for p in shared.rglob("*") if p.is_dir())]:
        os.chmod(folder, 0o755)


def main(*, lessons: list[str], course: Path = ROOT, exchange: Path | None = None, course_id: str | None = None,
         shared: Path | None = None, out: TextIO = sys.stdout) -> list[str]:
    """Publish the shared folder, then release `lessons` to the exchange; the lessons released."""
    lessons = select_lessons(lessons)
    exchange = exchange or settings.exchange_root()
    course_id = course_id or settings.course_id()
    shared = shared or settings.shared_folder()
    layout = Layout.of(nbgrader_config(course))
    missing = [lesson for lesson in lessons if not layout.release_notebook(lesson).is_file()]
    if missing:
        raise NotReleased(f"not released yet: {', '.join(missing)}; run `make release LESSON=<id>` first")
    settings.require_exchange(exchange)
    publish(shared)
    print(f"published lesson_helpers.py and the students' Jupyter configuration to {shared}", file=out)
    for lesson in lessons:
        settings.nbgrader(course, "release_assignment", lesson, "--force", f"--course={course_id}",
                          f"--Exchange.root={exchange}")
        print(f"released {lesson} to {exchange / course_id / 'outbound' / lesson}", file=out)
    return lessons


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lessons", nargs="*", help="lesson ids (default: every lesson)")
    parser.add_argument("--exchange", type=Path, help="nbgrader's exchange root (default: $ATTENTION_EXCHANGE)")
    parser.add_argument("--course-id", help="nbgrader's course id (default: $ATTENTION_COURSE_ID, else attention)")
    parser.add_argument("--shared", type=Path,
                        help="the folder every student's server reads (default: $ATTENTION_SHARED)")
    parser.add_argument("--course", type=Path, default=ROOT, help="the course repository (default: this one)")


def run(args: argparse.Namespace) -> None:
    main(lessons=args.lessons, course=args.course, exchange=args.exchange, course_id=args.course_id,
         shared=args.shared)
