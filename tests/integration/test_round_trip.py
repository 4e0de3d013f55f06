"""Round trip: fixture submissions built from the release come out of grading with exactly their scores.

Every fixture of every lesson is graded once, in the session's shared batch, by the course's own
grader (tests/integration/conftest.py). Plain `nbgrader autograde` with the course's configuration
must agree with it: a few fixtures of one lesson are graded both ways.
"""

from __future__ import annotations

from nbgrader.api import Gradebook

from grader.course import lesson_ids, student_notebook
from tests.support import build, expected_scores, make_course, variants

AGREEMENT_LESSON = "03-parallel-heads"


def pytest_generate_tests(metafunc):
    if "variant" in metafunc.fixturenames:
        cases = [(lesson, v) for lesson in lesson_ids() for v in variants(lesson)]
        metafunc.parametrize(("lesson_id", "variant"), cases, ids=[f"{lesson}-{v.name}" for lesson, v in cases])


def test_every_lesson_has_round_trip_fixtures(lesson):
    names = {v.name for v in variants(lesson)}
    assert {"reference", "untouched"} <= names, f"tests/fixtures/{lesson}/submissions.toml needs both"
    assert any(v.lost and v.lost != "all" for v in variants(lesson)), "add submissions with common mistakes"


def test_fixture_submission_scores_exactly_as_expected(graded, lesson_id, variant):
    result = graded.result(lesson_id, variant.name)
    assert result.status == "graded", result.reason
    assert result.scores == expected_scores(student_notebook(lesson_id), variant)
    assert not any(flag.name == "manual-grade" for flag in result.flags), "no autograded cell should need manual grade"


def test_plain_nbgrader_autograde_agrees_with_the_course_grader(graded, tmp_path):
    """An instructor's own `nbgrader autograde` gives the same scores as `python -m grader autograde`."""
    chosen = [v for v in variants(AGREEMENT_LESSON) if v.name == "reference" or v.name == "untouched"
              or (isinstance(v.lost, list) and v.lost and not v.replace and not v.delete)][:3]
    course = make_course(tmp_path / "stock", lessons=[AGREEMENT_LESSON])
    course.submit(AGREEMENT_LESSON, {v.name: build(AGREEMENT_LESSON, course.release(AGREEMENT_LESSON), v)
                                     for v in chosen})
    done = course.nbgrader("autograde", AGREEMENT_LESSON, "--force")
    assert done.returncode == 0, f"nbgrader autograde failed:\n{done.stdout}\n{done.stderr[-3000:]}"
    with Gradebook(course.db_url) as gradebook:
        for variant in chosen:
            grades = gradebook.find_submission_notebook(AGREEMENT_LESSON, AGREEMENT_LESSON, variant.name).grades
            assert {g.name: g.score for g in grades} == graded.result(AGREEMENT_LESSON, variant.name).scores, (
                variant.name)
