"""The cheat suite: no submission gains a point that the trusted hidden tests did not grant.

Stock nbgrader runs hidden tests in the student's kernel, where a submission can patch the judge.
Each fixture in tests/fixtures/cheats/<lesson>.toml cheats on one exercise, as a student would
(monkeypatched numpy, lying objects, patched builtins, forged or deleted results, a number that
claims partial credit), and answers the other exercises honestly. All of a lesson's fixtures are
autograded by one `nbgrader autograde` command with the course's configuration: the cheated
exercise must score exactly zero and every honest one full marks. To show that each cheat is real,
the suite also reads what stock nbgrader would have scored from the kernel's own outputs (recorded
by VerifyTrustedChecks before it rewrites them): full marks, for every cheated cell.

The cheats are graded in the session's shared batch (tests/integration/conftest.py); the pieces
that need no kernel are tested in tests/unit/test_trusted_checks.py.
"""

from __future__ import annotations

import nbformat
import pytest

from grader import cell_roles
from grader.course import reference_notebook, student_notebook
from grader.trusted import wire
from tests.support import cheat_lessons, cheats, core_cheat, expected_scores, points_of


def pytest_generate_tests(metafunc):
    if "cheat" in metafunc.fixturenames:
        cases = [pytest.param(lesson, name, id=f"{lesson}-{name}",
                              marks=() if name == core_cheat(lesson) else pytest.mark.more_cases)
                 for lesson in cheat_lessons() for name in cheats(lesson)]
        metafunc.parametrize(("cheat_lesson", "cheat"), cases)


def test_every_lesson_has_cheats(lesson):
    assert lesson in cheat_lessons(), f"write tests/fixtures/cheats/{lesson}.toml"
    assert len(cheats(lesson)) >= 3, f"tests/fixtures/cheats/{lesson}.toml: at least three cheats"


def graded_cells(graded, lesson: str, student: str) -> dict[str, dict]:
    """grade_id -> {"score", "cell"} of one graded submission of the shared batch."""
    result = graded.result(lesson, student)
    assert result.status == "graded", f"{lesson}/{student}: {result.reason}"
    cells = cell_roles.cells_by_id(graded.autograded(lesson, student))
    return {grade_id: {"score": score, "cell": cells[grade_id]} for grade_id, score in result.scores.items()}


def test_cheat_scores_only_what_was_earned(graded, cheat_lesson, cheat):
    variant, _ = cheats(cheat_lesson)[cheat]
    got = graded_cells(graded, cheat_lesson, cheat)
    expected = expected_scores(student_notebook(cheat_lesson), variant)
    assert {grade_id: g["score"] for grade_id, g in got.items()} == expected
    assert not any(f.name == "manual-grade" for f in graded.result(cheat_lesson, cheat).flags), (
        "no autograded cell should need manual grading")


def test_cheat_fools_the_in_kernel_judge(graded, cheat_lesson, cheat):
    """Without the trusted verdict, stock nbgrader would have given the cheated cells every point."""
    _, fools = cheats(cheat_lesson)[cheat]
    assert fools, "say which test cells the cheat fools"
    points = points_of(student_notebook(cheat_lesson))
    got = graded_cells(graded, cheat_lesson, cheat)
    for grade_id in fools:
        record = got[grade_id]["cell"].metadata["trusted_checks"]
        assert record["kernel_score"] == points[grade_id], f"{grade_id}: the cheat no longer fools the kernel"
        assert record["passed"] is False


def test_autograded_notebook_matches_the_gradebook(graded, cheat_lesson, cheat):
    """The grader's additions are gone: sources as in the gradebook, no harness cell, no raw results."""
    got = graded_cells(graded, cheat_lesson, cheat)
    sources = {grade_id: cell.source for grade_id, cell in
               cell_roles.cells_by_id(nbformat.read(reference_notebook(cheat_lesson), as_version=4)).items()}
    for grade_id, g in got.items():
        cell = g["cell"]
        assert cell.source == sources[grade_id]
        assert not any(wire.MIME in o.get("data", {}) for o in cell.outputs), "raw results left in the notebook"
        assert not any(o.output_type == "execute_result" for o in cell.outputs)
        record = cell.metadata["trusted_checks"]
        verdicts = [o for o in cell.outputs if o.output_type == "error" and o.ename == "HiddenTestFailure"]
        assert (g["score"] > 0) == record["passed"] == (not verdicts)
        if not record["passed"]:
            assert "HIDDEN TESTS" not in verdicts[0].evalue and "assert " not in verdicts[0].evalue
