"""Generate the student notebooks in lessons/ from the reference notebooks in solutions/."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from grader.authoring import release_guard
from grader.authoring.release_in_memory import build_release
from grader.course import ROOT, nbgrader_config, select_lessons
from grader.errors import NotReleased
from grader.gradebook import nbgrader_api
from grader.layout import Layout


def main(*, lessons: list[str] | None = None, course: Path = ROOT, force: bool = False) -> list[str]:
    """Run nbgrader's generate_assignment for each lesson; return the lessons released.

    `course` is the folder whose nbgrader_config.py is used (default: this repository, which
    releases into lessons/ and records the test cells in its gradebook). The steps are
    `grader.pipeline.release_steps()`. A lesson notebook that is not the release it would replace
    (someone worked in it: grader/authoring/release_guard.py) is never replaced: releasing refuses
    before writing anything, unless `force`, which first backs it up next to its lesson folder.
    """
    lessons = select_lessons(lessons)
    config = nbgrader_config(course)
    layout = Layout.of(config)
    worked = [layout.release_notebook(lesson) for lesson in lessons
              if release_guard.is_work(layout.release_notebook(lesson), layout.releases,
                                       released=partial(build_release, lesson, config))]
    if worked and not force:
        names = "\n".join(f"  {path}" for path in worked)
        raise NotReleased(f"not released: these notebooks differ from the release they would replace (someone "
                          f"worked in them), and releasing would delete that work:\n{names}\n(Each was compared "
                          "with the last release recorded here, the copy in git, and a release of solutions/ made "
                          "now: after editing a lesson in a copy without git, its old release is none of these.)\n"
                          "To release anyway, "
                          "run `make release LESSON=<id> FORCE=1` (python -m grader release <id> --force): it "
                          "first copies each notebook, and its JupyterLab checkpoint, to lessons/<id>.backup-"
                          "<date>.ipynb.")
    for path in worked:
        for copy in release_guard.backup(path):
            print(f"backed up {path.name} to {copy}")
    api = nbgrader_api(config)
    for lesson in lessons:
        result = api.generate_assignment(lesson, force=True, create=True)
        if not result["success"]:
            raise NotReleased(f"releasing {lesson} failed:\n{result.get('error') or ''}\n{result.get('log') or ''}")
        release_guard.record(layout.releases, layout.release_notebook(lesson))
        print(f"released {lesson}")
    return lessons


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    parser.add_argument("--force", action="store_true",
                        help="replace lesson notebooks someone worked in, after backing each up to "
                             "lessons/<id>.backup-<date>.ipynb")
    parser.add_argument("--course", type=Path, default=ROOT,
                        help="folder whose nbgrader_config.py to use (default: this repository)")


def run(args: argparse.Namespace) -> None:
    main(lessons=args.lessons, course=args.course, force=args.force)
