"""The declared hand-outs are every earlier answer the released notebooks give, and `make dist` gates them on deadlines.

grader/authoring/handouts.py declares, per lesson, the working answers to earlier exercises its
released notebook gives. Here every function of every released notebook is run against every
earlier lesson's hidden checks (tests.support.answers_among): what passes must be declared, and
what is declared must pass. The gate (grader/authoring/dist_steps.py) is checked on its own: a
hand-out is open until its exercise's deadline plus the longest extension has passed, and the
refusal names every open case. No build here (tests/integration/test_dist_gate.py builds).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache

import nbformat
import pytest

from grader.authoring import dist_steps
from grader.authoring.handouts import HANDOUTS, Handout, handouts
from grader.course import lesson_ids, student_notebook
from grader.errors import DistributionRefused
from grader.grading.policy.late import LatePolicy
from grader.trusted import load_spec
from tests.support import answers_among, deadlines_config, notebook_functions

L1, L2, L3 = lesson_ids()[:3]
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


@cache
def released_functions(lesson: str) -> dict:
    return notebook_functions(nbformat.read(student_notebook(lesson), as_version=4), f"<{lesson}>")


def found_handouts(lesson: str) -> set[Handout]:
    """Every function of `lesson`'s released notebook that answers an earlier lesson's exercise."""
    functions = released_functions(lesson)
    return {Handout(earlier, grade_id, name) for earlier in lesson_ids() if earlier < lesson
            for name, grade_id in answers_among(functions, earlier)}


def policy(deadlines: dict[str, str], extensions: dict | None = None) -> LatePolicy:
    return LatePolicy(config=deadlines_config(deadlines, extensions))


def test_the_declared_handouts_are_exactly_what_the_released_notebooks_give():
    wrong = []
    for lesson in lesson_ids():
        found, declared = found_handouts(lesson), set(handouts(lesson))
        wrong += [f"{lesson}: add {h} (its `{h.function}` passes {h.lesson}'s hidden checks of {h.grade_id})"
                  for h in sorted(found - declared)]
        wrong += [f"{lesson}: remove {h} (its release has no `{h.function}` that passes {h.lesson}'s hidden checks "
                  f"of {h.grade_id})"
                  for h in sorted(declared - found)]
    assert not wrong, "grader/authoring/handouts.py disagrees with the released notebooks:\n" + "\n".join(wrong)


def test_the_table_names_only_lessons_and_exercises_the_course_has():
    for lesson, given in HANDOUTS.items():
        assert lesson in lesson_ids(), f"HANDOUTS names {lesson}, which the course does not have"
        for handout in given:
            assert handout.lesson < lesson, f"{lesson}: {handout} is not an earlier lesson's"
            assert handout.grade_id in load_spec(handout.lesson).checks, f"{lesson}: no exercise {handout.grade_id}"


def test_the_search_finds_a_handout_and_passes_over_a_lookalike():
    """Lesson 2's softmax answers Lesson 1's; the released exercises (NotImplementedError) answer nothing; a
    softmax over the wrong axis is no answer; a layer that returns another cache still hands out its output."""
    assert ("softmax", "test_softmax") in answers_among(released_functions(L2), L1)
    assert answers_among(released_functions(L1), L1) == []
    namespace = {}
    exec("import numpy as np\n"  # noqa: S102
         "def wrong_axis(x, axis=-1):\n    e = np.exp(x - x.max(axis=0, keepdims=True))\n"
         "    return e / e.sum(axis=0, keepdims=True)\n", namespace)
    assert answers_among({"wrong_axis": namespace["wrong_axis"]}, L1) == []
    layer = load_spec(L3).checks["test_multi_head_attention_forward"].reference
    assert ("other_cache", "test_multi_head_attention_forward") in answers_among(
        {"other_cache": lambda *args: (layer(*args)[0], {"mine": 1})}, L3)


def test_a_handout_is_open_until_its_deadline_and_longest_extension_have_passed():
    deadline = {L1: "2026-12-04 11:00:00 UTC"}
    assert dist_steps.open_answers([L1, L2, L3], policy(deadline), NOW) == []
    assert dist_steps.open_answers([L3], policy({}), NOW) == [
        dist_steps.OpenAnswer(L3, h, None) for h in handouts(L3)], "no deadline: open"
    later = policy({L1: "2026-12-04 13:00:00 UTC"})
    assert {a.lesson for a in dist_steps.open_answers([L1, L2, L3], later, NOW)} == {L2, L3}
    extended = policy(deadline, {L1: {"ada": 2, "alan": 0.5}})  # closes at 13:00
    [answer] = dist_steps.open_answers([L2], extended, NOW)
    assert answer.closes == datetime(2026, 12, 4, 13, 0, tzinfo=UTC)
    assert dist_steps.open_answers([L2], extended, datetime(2026, 12, 4, 13, 0, 1)) == [], "a naive now is UTC"


def test_the_refusal_names_every_open_case_and_what_to_do():
    with pytest.raises(DistributionRefused) as refused:
        dist_steps.refuse_open_answers([L1, L2, L3], policy({L1: "2026-12-05 23:59:00 UTC"},
                                                                {L1: {"ada": 48}}), NOW)
    text = str(refused.value)
    assert f"refusing to publish {L2}, {L3}" in text
    for lesson in (L2, L3):
        for h in handouts(lesson):
            assert f"{lesson} hands out `{h.function}`, a working answer to {L1}'s exercise {h.grade_id}" in text
    assert "2026-12-05 23:59:00 UTC" in text and "closes 2026-12-07 23:59:00 UTC" in text
    assert "c.LatePolicy.deadlines" in text and "leave it out for now: LESSONS=01." in text
    with pytest.raises(DistributionRefused, match=f"{L1} has no deadline, so it is open"):
        dist_steps.refuse_open_answers([L2], policy({}), NOW)
    dist_steps.refuse_open_answers([L1], policy({}), NOW)  # Lesson 1 hands out nothing
