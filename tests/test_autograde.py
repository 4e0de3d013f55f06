"""Round trip: fixture submissions built from the release are autograded by stock nbgrader.

One `nbgrader autograde <lesson>` command grades every fixture student of a lesson, as an
instructor would run it; the scores are then read back from the gradebook, per test cell.
"""

from __future__ import annotations

import functools

from nbgrader.api import Gradebook

from grader.course import lesson_ids, student_notebook
from tests.submissions import build, expected_scores, variants


def pytest_generate_tests(metafunc):
    if "variant" in metafunc.fixturenames:
        cases = [(lesson, v) for lesson in lesson_ids() for v in variants(lesson)]
        metafunc.parametrize(("lesson_id", "variant"), cases, ids=[f"{lesson}-{v.name}" for lesson, v in cases])


def test_every_lesson_has_round_trip_fixtures(lesson):
    names = {v.name for v in variants(lesson)}
    assert {"reference", "untouched"} <= names, f"tests/fixtures/{lesson}/submissions.toml needs both"
    assert any(v.lost and v.lost != "all" for v in variants(lesson)), "add submissions with common mistakes"


@functools.cache
def autograde(course, lesson: str) -> dict[str, dict[str, tuple[float | None, bool]]]:
    """Submit every fixture of `lesson`, autograde them in one command, return the gradebook's scores."""
    release = course.lessons / lesson / f"{lesson}.ipynb"
    course.autograde(lesson, {variant.name: build(lesson, release, variant) for variant in variants(lesson)})
    scores = {}
    with Gradebook(f"sqlite:///{course.gradebook}") as gradebook:
        for variant in variants(lesson):
            notebook = gradebook.find_submission_notebook(lesson, lesson, variant.name)
            scores[variant.name] = {g.name: (g.score, g.needs_manual_grade) for g in notebook.grades}
    return scores


def test_fixture_submission_scores_exactly_as_expected(course, lesson_id, variant):
    got = autograde(course, lesson_id)[variant.name]
    expected = expected_scores(student_notebook(lesson_id), variant)
    assert {name: score for name, (score, _) in got.items()} == expected
    assert not any(manual for _, manual in got.values()), "no autograded cell should need manual grading"
