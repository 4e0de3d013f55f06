"""grader.student.deadline: the student's deadline and extension, from their copy's policy, never from a notebook."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from traitlets.config import Config

from grader.authoring import dist
from grader.grading.policy.late import LatePolicy
from grader.student import deadline

LESSON = "03-parallel-heads"
BEFORE, AFTER = datetime(2026, 11, 29, 9, 30, tzinfo=UTC), datetime(2026, 12, 2, 14, 0, tzinfo=UTC)


def distribution(monkeypatch, tmp_path, text: str) -> None:
    path = tmp_path / ".course" / "deadlines.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(deadline, "is_distribution", lambda: True)
    monkeypatch.setattr(deadline, "DEADLINES", path)


def test_a_distributions_deadline_and_whether_now_is_late(monkeypatch, tmp_path):
    distribution(monkeypatch, tmp_path, json.dumps({LESSON: "2026-12-01 12:00:00 UTC"}))
    when = deadline.due(LESSON, "grace")
    assert when == deadline.Due(datetime(2026, 12, 1, 12, tzinfo=UTC), None)  # no extension in a distribution
    assert deadline.describe(LESSON, when, BEFORE) == (
        "  deadline: 2026-12-01 12:00:00 UTC; a submission made now would be on time (2 d 2 h left); "
        "an extension your instructor gave you is added to the deadline")
    assert deadline.describe(LESSON, when, AFTER, handed_in=True) == (
        "  deadline: 2026-12-01 12:00:00 UTC; this submission is late by 1 d 2 h "
        "(unless an extension your instructor gave you covers it)")
    assert deadline.describe("01-single-head", deadline.due("01-single-head"), BEFORE) == (
        "  deadline: none set for this lesson")


def test_in_the_course_the_policy_gives_the_students_extension(monkeypatch):
    config = Config()
    config.LatePolicy.deadlines = {LESSON: "2026-12-01 13:00:00+01:00"}
    config.LatePolicy.extensions = {LESSON: {"grace": 48}}
    monkeypatch.setattr(deadline, "is_distribution", lambda: False)
    monkeypatch.setattr(deadline, "nbgrader_config", lambda: config)
    grace = deadline.due(LESSON, "grace")
    assert grace == deadline.Due(datetime(2026, 12, 1, 12, tzinfo=UTC), 48.0)
    assert deadline.describe(LESSON, grace, AFTER) == (
        "  deadline: 2026-12-01 12:00:00 UTC, with your extension of 48 h: due 2026-12-03 12:00:00 UTC; "
        "a submission made now would be on time (22 h 0 min left)")
    assert deadline.due(LESSON, "ada") == deadline.Due(datetime(2026, 12, 1, 12, tzinfo=UTC), 0.0)


def test_a_damaged_deadlines_file_is_said_inert_and_never_raises(monkeypatch, tmp_path):
    distribution(monkeypatch, tmp_path, json.dumps({LESSON: "2099-01-01\x1b]0;owned\x07"}))
    line = deadline.describe(LESSON, deadline.due(LESSON), BEFORE)
    assert line.startswith("  deadline: unknown (this copy's deadlines cannot be read: ValueError")
    assert line.isprintable() and "\\x1b" in line


def test_make_dist_writes_each_lessons_deadline_in_utc_and_no_extension():
    policy = LatePolicy(deadlines={LESSON: "2026-12-01 23:59:00+01:00"}, extensions={LESSON: {"grace": 48}})
    written = json.loads(dist.deadlines([LESSON, "01-single-head"], policy))
    assert written == {LESSON: "2026-12-01 22:59:00 UTC"}


def test_a_notebook_claiming_a_later_deadline_changes_nothing_check_prints(monkeypatch, tmp_path, capsys):
    import tomllib

    import nbformat

    from grader.student import check
    from tests.support import FIXTURES

    spoof = tomllib.loads((FIXTURES / "hostile" / "no-kernel" / "grading-day.toml").read_text())["spoof"]
    distribution(monkeypatch, tmp_path, json.dumps({LESSON: "2026-12-01 12:00:00 UTC"}))
    notebook = tmp_path / f"{LESSON}.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(spoof["notebook_text"])])
    nb.metadata.update(json.loads(spoof["notebook_metadata"]))
    nbformat.write(nb, notebook)
    monkeypatch.setattr(check, "select_lessons", lambda lessons: lessons)
    monkeypatch.setattr(check, "check_notebook", lambda lesson, path, config: check.LessonCheck(lesson, path))
    check.main(lessons=[LESSON], notebook=notebook, now=AFTER)
    assert capsys.readouterr().out.splitlines()[-1] == (
        "  deadline: 2026-12-01 12:00:00 UTC; a submission made now would be late by 1 d 2 h "
        "(unless an extension your instructor gave you covers it)")
