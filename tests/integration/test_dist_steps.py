"""`make dist LESSONS=01-03`: only the lessons opened so far; a later build adds lessons and keeps the earlier ones."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import nbformat
import pytest

from grader.authoring import dist, dist_steps
from grader.course import lesson_ids
from grader.errors import DistributionRefused, UnknownLesson
from tests.support import deadlines_config, every_lesson_closed

FIRST, SECOND, THIRD = lesson_ids()[:3]
CLOSED = every_lesson_closed()  # every deadline past: no lesson's answers are held back


def test_lesson_ranges_numbers_and_ids_are_read_in_course_order():
    assert dist_steps.parse("01-03") == [FIRST, SECOND, THIRD]
    assert dist_steps.parse(f"03,{FIRST}") == [FIRST, THIRD]
    assert dist_steps.parse("2") == [SECOND]
    for wrong in ("99", "01-x", "nonsense"):
        with pytest.raises(UnknownLesson):
            dist_steps.parse(wrong)


def test_a_later_build_adds_lessons_and_keeps_what_was_published_byte_for_byte(tmp_path, capsys):
    out = tmp_path / "published"
    dist.main(out=out, lessons=dist_steps.parse("01-02"), config=CLOSED)
    assert json.loads((out / dist.MANIFEST_PATH).read_text())["releases"].keys() == {FIRST, SECOND}
    assert not (out / "lessons" / THIRD).exists()

    # The first lesson as an older release published it: the new build must not replace it.
    notebook, pristine = out / "lessons" / FIRST / f"{FIRST}.ipynb", out / dist.RELEASES_PATH / f"{FIRST}.ipynb"
    nb = nbformat.read(notebook, as_version=4)
    nb.cells[0].source += "\n\n(as first published)"
    older = nbformat.writes(nb).encode()
    notebook.write_bytes(older)
    pristine.chmod(0o644)
    pristine.write_bytes(older)
    manifest = json.loads((out / dist.MANIFEST_PATH).read_text())
    manifest["releases"][FIRST] = hashlib.sha256(older).hexdigest()
    (out / dist.MANIFEST_PATH).write_text(json.dumps(manifest))

    dist.main(out=out, lessons=dist_steps.parse("03"), config=CLOSED)
    assert json.loads((out / dist.MANIFEST_PATH).read_text())["releases"].keys() == {FIRST, SECOND, THIRD}
    assert notebook.read_bytes() == older and pristine.read_bytes() == older
    assert f"{FIRST}: kept as published" in capsys.readouterr().out

    dist.main(out=out, lessons=[THIRD], republish=[FIRST], config=CLOSED)
    assert notebook.read_bytes() != older


def test_lessons_already_published_are_not_held_back_but_new_and_republished_ones_are(tmp_path):
    """Once Lesson 2 is out, reopening Lesson 1 (an extension, say) cannot take it back: a later build keeps it.
    What the build writes anew, a republished Lesson 2 or a new Lesson 3, must wait for Lesson 1 to close."""
    out, now = tmp_path / "published", datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    closed = deadlines_config({FIRST: "2026-12-01 23:59:00 UTC"})
    reopened = deadlines_config({FIRST: "2026-12-01 23:59:00 UTC"}, {FIRST: {"ada": 96}})  # closes on the 5th
    dist.main(out=out, lessons=dist_steps.parse("01-02"), now=now, config=closed)
    dist.main(out=out, lessons=[FIRST], now=now, config=reopened)
    assert json.loads((out / dist.MANIFEST_PATH).read_text())["releases"].keys() == {FIRST, SECOND}
    for lessons, republish in (([THIRD], []), ([FIRST], [SECOND])):
        with pytest.raises(DistributionRefused, match="with the longest extension it closes 2026-12-05 23:59:00 UTC"):
            dist.main(out=out, lessons=lessons, republish=republish, now=now, config=reopened)
    assert json.loads((out / dist.MANIFEST_PATH).read_text())["releases"].keys() == {FIRST, SECOND}
