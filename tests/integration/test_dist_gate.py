"""Publishing in steps never hands out an open lesson's answers: every prefix of the course, built and searched.

Each prefix of the course (01, 01-02, ..., every lesson) is built with `make dist` twice:

- with every lesson of it but the last closed (deadline past) and the last open: the build must go
  through, and no function it publishes, in any notebook's code cells or in lesson_helpers.py,
  may pass the open lesson's hidden checks (tests.support.answers_among);
- with every lesson open: the build of a prefix that hands out answers must be refused, naming every
  function the same prefix, built with every lesson closed, publishes that answers an open exercise;
  a build that goes through must publish no such function.

The search runs in this process, no kernel starts; each notebook is searched once per lesson.
Under `make test`, the prefix 01-03 (the docs' example); every prefix under `make test-all`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import nbformat
import pytest

from grader.authoring import dist
from grader.course import lesson_ids
from grader.errors import DistributionRefused
from tests.support import answers_among, deadlines_config, every_lesson_closed, notebook_functions

IDS = lesson_ids()
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
PAST, FUTURE = "2026-12-01 23:59:00 UTC", "2026-12-11 23:59:00 UTC"
CORE = (3,)  # 01-03 under make test (the docs' example: Lessons 2 and 3 hand out Lesson 1's answers)

def prefixes() -> list:
    return [pytest.param(k, id=f"01-{IDS[k - 1][:2]}", marks=() if k in CORE else pytest.mark.more_cases)
            for k in range(1, len(IDS) + 1)]


@cache
def functions_in(data: bytes, is_notebook: bool) -> dict:
    """The functions a published file defines: a notebook's code cells, or a module's top level."""
    if is_notebook:
        return notebook_functions(nbformat.reads(data.decode(), as_version=4), "<published notebook>")
    cell = nbformat.v4.new_code_cell(data.decode())
    return notebook_functions(nbformat.v4.new_notebook(cells=[cell]), "<published module>")


def answers_in(path: str, data: bytes, lesson: str) -> tuple:
    return searched(data, path.endswith(".ipynb"), lesson)


@cache  # the same bytes (a lesson's notebook, its pristine copy, the same lesson in the next prefix) once
def searched(data: bytes, is_notebook: bool, lesson: str) -> tuple:
    return tuple(answers_among(functions_in(data, is_notebook), lesson))


def published(out: Path) -> dict[str, bytes]:
    """Every file of the build whose functions a student can run: its notebooks and lesson_helpers.py."""
    files = sorted(p for p in out.rglob("*") if p.suffix == ".ipynb" or p.name == "lesson_helpers.py")
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in files}


def open_answers_published(out: Path, open_lessons: list[str]) -> list[tuple[str, str, str, str]]:
    """(file, function, lesson, grade_id) for every published function that answers an exercise of `open_lessons`."""
    found = []
    for path, data in published(out).items():
        for lesson in open_lessons:
            found += [(path, name, lesson, grade_id) for name, grade_id in answers_in(path, data, lesson)]
    return found


def build(out: Path, prefix: list[str], config) -> None:
    dist.main(out=out, lessons=prefix, now=NOW, config=config)


@pytest.mark.parametrize("k", prefixes())
def test_with_the_last_lesson_open_the_build_publishes_none_of_its_answers(k, tmp_path):
    prefix, last = IDS[:k], IDS[k - 1]
    build(tmp_path / "out", prefix, deadlines_config({lesson: PAST for lesson in prefix[:-1]} | {last: FUTURE}))
    found = open_answers_published(tmp_path / "out", [last])
    assert not found, f"with {last} open, the build publishes answers to it:\n" + "\n".join(
        f"{path}: `{name}` passes {lesson}'s hidden checks of {grade_id}" for path, name, lesson, grade_id in found)


@pytest.mark.parametrize("k", prefixes())
def test_with_every_lesson_open_a_prefix_that_hands_out_answers_is_refused(k, tmp_path):
    prefix = IDS[:k]
    try:
        build(tmp_path / "open", prefix, deadlines_config({lesson: FUTURE for lesson in prefix}))
    except DistributionRefused as refused:
        reasons = str(refused)
    else:
        found = open_answers_published(tmp_path / "open", prefix)
        assert not found, "with every lesson open, the build publishes answers to open exercises:\n" + "\n".join(
            f"{path}: `{name}` passes {lesson}'s hidden checks of {grade_id}" for path, name, lesson, grade_id in found)
        return
    assert not (tmp_path / "open").exists(), "a refused build wrote its folder"
    build(tmp_path / "closed", prefix, every_lesson_closed())
    handed_out = {(path.split("/")[-1].removesuffix(".ipynb"), name, lesson, grade_id)
                  for path, name, lesson, grade_id in open_answers_published(tmp_path / "closed", prefix)}
    assert handed_out, f"refused {prefix[-1]} although the same build with every lesson closed hands out nothing"
    missing = [f"{later} hands out `{name}`, a working answer to {lesson}'s exercise {grade_id}"
               for later, name, lesson, grade_id in sorted(handed_out)
               if f"{later} hands out `{name}`, a working answer to {lesson}'s exercise {grade_id}" not in reasons]
    assert not missing, "the refusal does not name:\n" + "\n".join(missing) + "\n\nit says:\n" + reasons
