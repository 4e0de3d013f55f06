"""Plain `nbgrader autograde` with the course's configuration refuses what `python -m grader autograde`
refuses, because the refusal lives in the pipeline (grader.pipeline.repair_cells), not in the course's CLI.

Issue 27: Lesson 3's notebook handed in as Lesson 1's scored 4/7 under plain nbgrader (its given
`softmax` and `attention` pass Lesson 1's put-back tests); a notebook of 100,000 markdown cells took
minutes of a worker; a pasted cell failed the whole submission with a KeyError.
"""

from __future__ import annotations

import pytest
from nbgrader.api import Gradebook, MissingEntry

from tests.support import batch_scores, build_notebook, make_course

pytestmark = pytest.mark.same_verdicts  # the same refusals through plain nbgrader autograde

LESSON, OTHER = "01-single-head", "03-parallel-heads"


def test_plain_nbgrader_refuses_another_lessons_notebook_and_a_huge_one_and_grades_a_pasted_cell(tmp_path):
    course = make_course(tmp_path / "course", lessons=[LESSON, OTHER])
    release = course.release(LESSON)
    course.submit(LESSON, {
        "other_lesson": build_notebook(OTHER, course.release(OTHER), {}),
        "huge": build_notebook(LESSON, release, {"pad_cells": 5000}),
        "pasted": build_notebook(LESSON, release, {"first": {"paste": ["solution", "test"]}}),
    })
    done = course.nbgrader("autograde", LESSON, "--force")
    log = done.stdout + done.stderr
    with Gradebook(course.db_url) as gradebook:
        def scores(student: str) -> dict[str, float] | None:
            try:
                grades = gradebook.find_submission_notebook(LESSON, LESSON, student).grades
            except MissingEntry:
                return None
            return {g.name: g.score for g in grades}

        assert not any((scores("other_lesson") or {}).values()), scores("other_lesson")
        assert f"the notebook of another lesson ({OTHER})" in log
        assert not any((scores("huge") or {}).values()), scores("huge")
        assert "far larger than its release" in log
        assert scores("pasted") == batch_scores(LESSON, release, {}), log[-3000:]
