"""The student sees a lesson, not the grading machinery: no grading switch and no sentence about graded copies.

A demonstration may run smaller while the notebook is autograded, but only through the course's
helpers (`lesson_helpers.demo_size`, `full_demos`, `tidy_figures`; docs/lesson-style.md). What the
student reads never names the switch: not nbgrader's NBGRADER_EXECUTION, not a `GRADING` flag, and
no sentence about how a graded copy behaves ("while your notebook is graded, ... run smaller",
"left out of graded copies"). Telling the student that hidden tests call their function on fresh
inputs is about the exercise, not the machinery, and stays.

Scanned statically (no kernel): every student notebook in lessons/ (sources and outputs), every
lesson's text source solutions/<id>.py without its hidden-test blocks (which the release removes),
and the outputs of every reference notebook.
"""

from __future__ import annotations

import json
import re

import pytest

from grader.course import reference_notebook, source_text, student_notebook

FORBIDDEN = [
    (re.compile(r"NBGRADER_EXECUTION"), "nbgrader's environment variable"),
    (re.compile(r"\bGRADING\b"), "a grading flag"),
    (re.compile(r"\bgraded cop(?:y|ies)\b", re.I), "a sentence about graded copies"),
    (re.compile(r"\bwhile (?:your |the |a )?(?:notebook |it )?(?:is )?(?:being )?(?:auto)?grad(?:ed|ing)\b", re.I),
     "a sentence about what changes while the notebook is graded"),
    (re.compile(r"\bleft out (?:of|while|when) grad", re.I), "a sentence about graded copies"),
    (re.compile(r"\bskips? the layout pass\b", re.I), "a sentence about graded copies"),
]
HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS\n.*?^[ \t]*### END HIDDEN TESTS[ \t]*$", re.S | re.M)


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def notebook_texts(path, *, sources: bool = True) -> list[tuple[str, str]]:
    """(where, text) of each cell's source (if `sources`) and each of its outputs' text."""
    nb = json.loads(path.read_text())
    found = []
    for index, cell in enumerate(nb["cells"]):
        if sources:
            found.append((f"cell {index}", _text(cell.get("source"))))
        for output in cell.get("outputs", []):
            text = _text(output.get("text")) + _text(output.get("data", {}).get("text/plain"))
            found.append((f"cell {index} output", text + _text(output.get("evalue"))))
    return found


def problems(texts: list[tuple[str, str]]) -> list[str]:
    return [f"{where}: {meaning}: {match.group(0)!r}" for where, text in texts
            for pattern, meaning in FORBIDDEN for match in pattern.finditer(text)]


def source_without_hidden_tests(lesson: str) -> str:
    return HIDDEN.sub("", source_text(lesson).read_text())


def test_the_student_notebook_shows_no_grading_switch(lesson):
    found = problems(notebook_texts(student_notebook(lesson)))
    assert not found, f"lessons/{lesson}: " + "\n".join(found)


def test_the_lesson_source_outside_its_hidden_tests_shows_no_grading_switch(lesson):
    found = problems([(f"solutions/{lesson}.py", source_without_hidden_tests(lesson))])
    found += problems(notebook_texts(reference_notebook(lesson), sources=False))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("text", [
    'GRADING = os.environ.get("NBGRADER_EXECUTION") == "autograde"',
    "if GRADING:  # a graded copy shows no widgets",
    "# While your notebook is graded, demonstrations run smaller, and figures skip the layout pass",
    "(While your notebook is graded, this section runs a shorter sequence)",
    "print the weight in each cell (left out of graded copies)",
    "The PyTorch comparison is skipped while grading.",
])
def test_the_scan_finds_each_kind_of_mention(text):
    assert problems([("planted", text)])


@pytest.mark.parametrize("text", [
    "Their visible checks run as you work; hidden tests with fresh inputs run when your notebook is graded.",
    "from lesson_helpers import demo_size\nT_big = demo_size(full=1024, small=128)",
    "Two graded exercises close the lesson.",
])
def test_the_scan_leaves_the_exercise_contract_alone(text):
    assert not problems([("fine", text)])


def test_hidden_test_blocks_are_all_that_is_left_out():
    source = "a\n### BEGIN HIDDEN TESTS\nGRADING\n### END HIDDEN TESTS\nb GRADING\n"
    assert HIDDEN.sub("", source) == "a\n\nb GRADING\n"
