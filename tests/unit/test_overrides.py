"""grader.grading.policy.overrides: the instructor's manual scores, kept as facts of the term."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

import pytest

from grader.course import ROOT
from grader.errors import UsageError
from grader.grading.policy import overrides

LESSON = "01-single-head"
NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)


@pytest.fixture
def course_dir(tmp_path):
    root = tmp_path / "c"
    (root / "lessons").mkdir(parents=True)
    shutil.copytree(ROOT / "lessons" / LESSON, root / "lessons" / LESSON)
    base = ROOT / "nbgrader_config.py"
    (root / "nbgrader_config.py").write_text(f"c = get_config()  # noqa\nload_subconfig({str(base)!r})  # noqa\n"
                                             f"c.CourseDirectory.root = {str(root)!r}\n")
    (root / "submitted" / "ada" / LESSON).mkdir(parents=True)  # ada's submission was collected
    return root


def test_an_override_is_recorded_listed_and_taken_back(course_dir):
    said = overrides.main(lesson=LESSON, student="Ada", exercise="test_softmax", points=2, reason="partial credit",
                          course=course_dir, now=NOW)
    assert "ada's test_softmax in 01-single-head is now 2 of 3" in said
    stored = overrides.load(course_dir / "term" / "overrides.json")
    assert stored == {LESSON: {"ada": {"test_softmax": overrides.Override(2.0, "partial credit",
                                                                          "2026-12-04 12:00:00 UTC")}}}
    assert "ada\ttest_softmax\t2\t" in overrides.main(lesson=LESSON, course=course_dir)
    overrides.main(lesson=LESSON, student="ada", exercise="test_softmax", remove=True, course=course_dir)
    assert overrides.main(lesson=LESSON, course=course_dir) == f"no overrides for {LESSON}"


@pytest.mark.parametrize(("options", "message"), [
    ({"student": "ada", "exercise": "test_nothing", "points": 1, "reason": "x"}, "has no exercise 'test_nothing'"),
    ({"student": "ada", "exercise": "test_softmax", "points": 4, "reason": "x"}, "between 0 and 3"),
    ({"student": "ada", "exercise": "total", "points": 8, "reason": "x"}, "between 0 and 7"),
    ({"student": "ada", "exercise": "test_softmax", "points": 1}, "--reason"),
    ({"student": "a d a", "exercise": "test_softmax", "points": 1, "reason": "x"}, "is not a student id"),
    ({"student": "ada", "exercise": "test_softmax", "remove": True}, "has no override"),
])
def test_an_override_that_makes_no_sense_is_refused(course_dir, options, message):
    with pytest.raises(UsageError, match=message):
        overrides.main(lesson=LESSON, course=course_dir, **options)


def test_an_id_neither_on_the_roster_nor_collected_is_refused_with_the_ids_there_are(course_dir):
    (course_dir / "submitted" / "grace" / "02-scaling").mkdir(parents=True)  # another lesson's: not this one's
    with pytest.raises(UsageError) as refused:
        overrides.main(lesson=LESSON, student="ghost_student", exercise="total", points=0, reason="x",
                       course=course_dir)
    assert str(refused.value) == (f"ghost_student is neither on the roster nor has a submission of {LESSON} "
                                  "collected: check the id in the grades CSV. The ids there are: ada")
    assert not (course_dir / "term" / "overrides.json").exists()


def test_a_dangling_override_can_still_be_removed(course_dir):
    path = course_dir / "term" / "overrides.json"
    overrides.save(path, {LESSON: {"ghost_student": {"total": overrides.Override(0.0, "typo", "then")}}})
    said = overrides.main(lesson=LESSON, student="ghost_student", exercise="total", remove=True, course=course_dir)
    assert said.startswith("removed the override of ghost_student's total")
    assert overrides.load(path) == {}


def test_a_reason_with_control_characters_is_listed_inert(course_dir):
    overrides.main(lesson=LESSON, student="ada", exercise="total", points=1, reason="a\x1b]0;owned\x07\r\nb",
                   course=course_dir, now=NOW)
    assert overrides.main(lesson=LESSON, course=course_dir) == (
        "ada\ttotal\t1\t2026-12-04 12:00:00 UTC\ta\\x1b]0;owned\\x07\\r\\nb")
