"""grader.grading.policy.grades: one row per student derived from the facts, and what changed since the last run."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from grader.grading.policy import grades, late
from grader.grading.policy.overrides import Override
from grader.grading.running.jobs import Result
from tests.support import grade_rows

LESSON = "03-parallel-heads"
POINTS = {"test_a": 3.0, "test_b": 4.0}
ROSTER = "id,name,lms_id\nada,Ada Lovelace,1001\ngrace,Grace Hopper,1002\neve,Eve Moneypenny,1003\n"
LATE = datetime(2026, 12, 2, 12, tzinfo=UTC)
POLICY = late.LatePolicy(deadlines={LESSON: "2026-12-01 12:00:00 UTC"})


def results():
    return [Result("ada", "graded", scores={"test_a": 3.0, "test_b": 4.0}),
            Result("grace", "graded", scores={"test_a": 0.0, "test_b": 4.0}),
            Result("mallory", "failed", reason="invalid JSON")]


def test_every_roster_student_and_every_submission_has_one_row():
    rows = grade_rows(LESSON, results(), POINTS, roster=ROSTER)
    assert [(r.student, r.status, r.total, r.final) for r in rows] == [
        ("ada", "graded", 7.0, 7.0), ("eve", grades.NO_SUBMISSION, None, None), ("grace", "graded", 4.0, 4.0),
        ("mallory", "failed", None, None)]
    assert rows[0].name == "Ada Lovelace"


def test_the_penalty_comes_from_the_policy_now_and_an_override_wins():
    rows = grade_rows(LESSON, results(), POINTS, times={"grace": LATE}, policy=POLICY,
                      overrides={"grace": {"test_a": Override(3.0, "regrade request", "t")},
                                 "ada": {"total": Override(5.0, "plagiarism", "t")}})
    ada, grace = rows[0], rows[1]
    assert grace.scores == {"test_a": 3.0, "test_b": 4.0} and grace.graded["test_a"] == 0.0
    assert grace.total == 7.0 and grace.lateness.penalty == pytest.approx(0.7) and grace.final == pytest.approx(6.3)
    assert grace.notes == ["override test_a: 3 (regrade request)"]
    assert ada.total == 7.0 and ada.final == 5.0


def test_changes_say_what_changed_and_why():
    before = grades.snapshot(grade_rows(LESSON, results(), POINTS))
    after = grade_rows(LESSON, [*results()[:1], Result("grace", "graded", scores={"test_a": 3.0, "test_b": 4.0}),
                                Result("sam", "graded", scores={"test_a": 3.0, "test_b": 4.0})], POINTS,
                       times={"ada": LATE}, policy=POLICY)
    found = grades.changes(before, after)
    assert grades.Change("ada", "final", 7.0, 6.3, "late policy: late 1 d 0 h (-0.7 points)") in [
        grades.Change(c.student, c.what, c.before, round(c.after, 6), c.why) for c in found]
    assert grades.Change("grace", "test_a", 0.0, 3.0, "grading") in found
    assert grades.Change("grace", "final", 4.0, 7.0, "grading") in found
    assert grades.Change("sam", "final", None, 7.0, "first graded") in found
    text = grades.changes_table(LESSON, found, 4)
    assert "3 of 4 students" in text and "late policy" in text
    assert "none (4 students)" in grades.changes_table(LESSON, [], 4)
    assert grades.changes_table(LESSON, [], 4, first=True) == (
        f"  changed since the last run   (none: this is the first run of {LESSON}, 4 students)")
    named = grades.changes_table(LESSON, found, 4, names={"grace": "Grace Hopper"})
    assert "    grace (Grace Hopper)  test_a  0       3      grading" in named.splitlines()
    assert grades.changes(None, after) == []


def test_a_snapshot_round_trips_through_its_file(tmp_path):
    rows = grade_rows(LESSON, results(), POINTS)
    grades.write_snapshot(tmp_path / "g.json", rows)
    assert grades.changes(grades.read_snapshot(tmp_path / "g.json"), rows) == []
    assert grades.read_snapshot(tmp_path / "missing.json") is None


def test_a_feedback_failure_is_a_note_of_the_row_and_a_line_of_the_overview():
    from grader.grading.outputs import overview
    from grader.grading.running.triage import Flag

    failed = Result("ada", "graded", scores={"test_a": 3.0, "test_b": 4.0}, flags=[Flag("feedback-failed")],
                    feedback_error="nbgrader could not make the feedback page: ValueError: bad cell")
    [row] = grade_rows(LESSON, [failed], POINTS)
    assert row.notes == ["no feedback page: nbgrader could not make the feedback page: ValueError: bad cell"]
    view = overview.build(LESSON, [row], POINTS, {})
    assert view.students["ada"] == row.notes
