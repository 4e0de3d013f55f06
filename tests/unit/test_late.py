"""grader.grading.policy.late: the one place that decides how late a submission is and what it costs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from grader.grading.policy import late

LESSON = "03-parallel-heads"
POLICY = late.LatePolicy(deadlines={LESSON: "2026-12-01 12:00:00 UTC"}, extensions={LESSON: {"grace": 48}})
PENALTY = late.LatePenalty(percent_per_day=10, max_percent=30)


def at(day: int, hour: int) -> datetime:
    return datetime(2026, 12, day, hour, tzinfo=UTC)


def test_the_penalty_is_a_share_of_the_score_per_started_day_capped():
    assert PENALTY.penalty(20.0, 0) == 0
    assert PENALTY.penalty(20.0, 60) == pytest.approx(2.0)  # one started day
    assert PENALTY.penalty(20.0, late.DAY + 1) == pytest.approx(4.0)
    assert PENALTY.penalty(20.0, 30 * late.DAY) == pytest.approx(6.0)  # the cap
    assert PENALTY.penalty(None, 60) == 0


def test_lateness_counts_from_the_deadline_plus_the_extension():
    ada = late.lateness(LESSON, "ada", at(2, 12), False, 10.0, POLICY, PENALTY)
    assert ada.seconds == late.DAY and ada.penalty == pytest.approx(1.0) and ada.describe() == \
        "late 1 d 0 h (-1 points)"
    grace = late.lateness(LESSON, "grace", at(2, 12), False, 10.0, POLICY, PENALTY)
    assert not grace.late and grace.status() == "on time (extension of 48 h)"
    later = late.lateness(LESSON, "grace", at(3, 13), False, 10.0, POLICY, PENALTY)
    assert later.describe() == "late 1 h 0 min (after an extension of 48 h) (-1 points)"


def test_a_submission_is_due_at_the_deadline_plus_its_extension_and_a_lesson_closes_after_the_longest():
    policy = late.LatePolicy(deadlines={LESSON: "2026-12-01 12:00:00 UTC"},
                             extensions={LESSON: {"grace": 48, "alan": 24, "ada": -5}})
    assert policy.due(LESSON, "grace") == at(3, 12) and policy.due(LESSON, "zoe") == at(1, 12)
    assert policy.due(LESSON, "ada") == at(1, 12)  # a negative extension shortens nothing
    assert policy.closes(LESSON) == at(3, 12)
    assert late.LatePolicy(deadlines={LESSON: "2026-12-01 12:00:00 UTC"}).closes(LESSON) == at(1, 12)
    assert policy.due("01-single-head", "grace") is None and policy.closes("01-single-head") is None


def test_the_lms_mark_flags_but_costs_nothing_and_no_deadline_is_never_late():
    marked = late.lateness(LESSON, "alan", at(1, 9), True, 10.0, POLICY, PENALTY)
    assert marked.late and marked.penalty == 0 and marked.describe() == "late marked late by the LMS"
    assert not late.lateness("01-single-head", "ada", at(30, 0), False, 10.0, POLICY, PENALTY).late
    assert not late.lateness(LESSON, "ada", None, False, 10.0, POLICY, PENALTY).late


def test_a_deadline_with_a_zone_is_read_in_it():
    policy = late.LatePolicy(deadlines={LESSON: "2026-12-01 12:00:00 +02:00"})
    assert policy.deadline(LESSON) == datetime(2026, 12, 1, 10, tzinfo=UTC)
