"""Round trip: fixture submissions built from the release come out of grading with exactly their scores.

Every fixture of every lesson is graded once, in the session's shared batch, by the course's own
grader (tests/integration/conftest.py). Plain `nbgrader autograde` with the course's configuration
must agree with it: a few fixtures of one lesson are graded both ways.
"""

from __future__ import annotations

import tomllib

import pytest
from nbgrader.api import Gradebook, MissingEntry

from grader.course import lesson_ids, student_notebook
from tests.support import (
    FIXTURES,
    UNTOUCHED_IN_MAKE_TEST,
    batch_scores,
    build,
    build_notebook,
    core_variants,
    expected_scores,
    make_course,
    variants,
)

AGREEMENT_LESSON = "03-parallel-heads"
BATCH = tomllib.loads((FIXTURES / "grading" / "batch.toml").read_text())


def pytest_generate_tests(metafunc):
    if "variant" in metafunc.fixturenames:
        cases = [pytest.param(lesson, v, id=f"{lesson}-{v.name}",
                              marks=() if v in core_variants(lesson) else pytest.mark.more_cases)
                 for lesson in lesson_ids() for v in variants(lesson)]
        metafunc.parametrize(("lesson_id", "variant"), cases)


def test_every_lesson_has_round_trip_fixtures(lesson):
    names = {v.name for v in variants(lesson)}
    assert {"reference", "untouched"} <= names, f"tests/fixtures/{lesson}/submissions.toml needs both"
    assert any(v.lost and v.lost != "all" for v in variants(lesson)), "add submissions with common mistakes"


def test_make_test_grades_exactly_one_untouched_release():
    """The one untouched release `make test` grades is a lesson's (a renamed lesson would leave none)."""
    graded_untouched = [lesson for lesson in lesson_ids() for v in core_variants(lesson) if v.name == "untouched"]
    assert graded_untouched == [UNTOUCHED_IN_MAKE_TEST], graded_untouched


def test_fixture_submission_scores_exactly_as_expected(graded, lesson_id, variant):
    result = graded.result(lesson_id, variant.name)
    assert result.status == "graded", result.reason
    assert result.scores == expected_scores(student_notebook(lesson_id), variant)
    assert not any(flag.name == "manual-grade" for flag in result.flags), "no autograded cell should need manual grade"


def test_every_cell_of_the_graded_reference_runs_cleanly(graded, lesson):
    """The reference graded at grading size (demonstrations smaller, lesson_helpers.demo_size): no cell raised
    or wrote to stderr. For the lessons of FULL_SIZE (tests/plugins/tiers.py), whose full-size nbval is
    `make test-all`'s, this is `make test`'s run of every cell."""
    troubles = [(index, output.get("ename") or output.get("name"), output.get("evalue") or output.get("text"))
                for index, cell in enumerate(graded.autograded(lesson, "reference").cells) if cell.cell_type == "code"
                for output in cell.get("outputs", [])
                if output.get("output_type") == "error" or output.get("name") == "stderr"]
    assert not troubles, troubles


@pytest.mark.same_verdicts
def test_plain_nbgrader_autograde_agrees_with_the_course_grader(graded, tmp_path):
    """An instructor's own `nbgrader autograde` gives the same scores as `python -m grader autograde`,
    and refuses what it refuses: fixtures of the round trip, and damaged notebooks of the batch table."""
    core = core_variants(AGREEMENT_LESSON)  # and the untouched release, whichever lesson make test grades it in
    chosen = [v for v in variants(AGREEMENT_LESSON) if v in core or v.name == "untouched"]
    damaged = {name: BATCH[name] for name in ("stray_grade_cell", "metadata_without_id", "edited_test_metadata",
                                              "stripped_plus_a_cell")}
    course = make_course(tmp_path / "stock", lessons=[AGREEMENT_LESSON])
    release = course.release(AGREEMENT_LESSON)
    course.submit(AGREEMENT_LESSON, {v.name: build(AGREEMENT_LESSON, release, v) for v in chosen}
                  | {name: build_notebook(AGREEMENT_LESSON, release, spec) for name, spec in damaged.items()})
    done = course.nbgrader("autograde", AGREEMENT_LESSON, "--force")
    with Gradebook(course.db_url) as gradebook:
        def scores(student: str) -> dict[str, float] | None:
            try:
                grades = gradebook.find_submission_notebook(AGREEMENT_LESSON, AGREEMENT_LESSON, student).grades
            except MissingEntry:
                return None
            return {g.name: g.score for g in grades}

        for variant in chosen:
            assert scores(variant.name) == graded.result(AGREEMENT_LESSON, variant.name).scores, variant.name
        for name, spec in damaged.items():
            if spec.get("status") == "failed":  # refused: the reason logged, no points (nbgrader records 0s)
                assert not any((scores(name) or {}).values()), name
                assert spec["reason"] in done.stdout + done.stderr, name
            else:
                assert scores(name) == batch_scores(AGREEMENT_LESSON, release, spec), (name, done.stderr[-3000:])
