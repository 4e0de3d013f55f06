"""grader.cell_roles's exercise labels: each graded cell named as its lesson names it ("Exercise 3a")."""

from __future__ import annotations

import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader import cell_roles
from grader.course import reference_notebook, student_notebook

HEADING = re.compile(r"^#+ +Exercise (\d+)\b", re.M)  # the lesson's own headings, read independently here
PRINTED = re.compile(r"Exercise (\w+) visible checks passed")  # what a test cell tells the student it checked


def test_every_graded_cell_of_a_lesson_is_labelled_by_the_exercise_heading_above_it(lesson):
    nb = nbformat.read(student_notebook(lesson), as_version=4)
    labels = cell_roles.exercise_labels(nb)
    assert list(labels) == list(cell_roles.test_points(nb)), "one label per graded cell, in notebook order"
    heading, headings, under = None, [], {}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for number in HEADING.findall(cell.source):
                heading = number
                headings.append(number)
        elif cell_roles.is_graded(cell):
            name = cell_roles.grade_id(cell)
            assert heading is not None, f"{lesson}: {name} sits above every exercise heading"
            under[name] = heading
            assert re.fullmatch(rf"Exercise {heading}[a-z]?", labels[name]), (lesson, name, labels[name])
            printed = PRINTED.findall(cell.source)
            if printed:  # the test cell's own message names the exercise: the label must be the same
                assert labels[name] == f"Exercise {printed[-1]}", (lesson, name, labels[name], printed)
    assert len(set(labels.values())) == len(labels), f"{lesson}: labels repeat: {labels}"
    assert set(under.values()) == set(headings), f"{lesson}: an exercise heading with no graded cell under it"
    assert cell_roles.exercise_labels(nbformat.read(reference_notebook(lesson), as_version=4)) == labels, \
        "the source notebook names the exercises as the release does"


def md(source: str):
    return new_markdown_cell(source)


def answer(name: str):
    return new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": name, "solution": True, "grade": False}})


def test_(name: str, points: float = 1):
    return new_code_cell("assert x", metadata={"nbgrader": {"grade_id": name, "grade": True, "solution": False,
                                                            "locked": True, "points": points}})


test_.__test__ = False  # a cell builder, not a test


def test_parts_take_the_letter_of_the_bold_marker_that_opens_their_paragraph():
    nb = new_notebook(cells=[
        md("## 3. Heads\n\n### Exercise 3: independence (2 + 2 points)\n\nIntro.\n\n**(a)** Write `f`."),
        answer("f"), test_("test_f"),
        md("**(b)** Write `g`; as in **(a)**, not in place.\nA line that says (c) changes nothing."),
        answer("g"), test_("test_g"),
        md("### Checking it\n\nA heading that names no exercise leaves the label as it was."), test_("test_h"),
        md("### Exercise 4: the sweep"), answer("k"), test_("test_k"),
    ])
    assert cell_roles.exercise_labels(nb) == {"test_f": "Exercise 3a", "test_g": "Exercise 3b",
                                            "test_h": "Exercise 3b (test_h)", "test_k": "Exercise 4"}
    assert cell_roles.cell_labels(nb)["g"] == "Exercise 3b" and cell_roles.cell_labels(nb)["k"] == "Exercise 4"


def test_what_the_lesson_leaves_unnamed_is_named_the_same_way_every_time():
    nb = new_notebook(cells=[
        test_("test_intro"),  # above every exercise heading: its grade_id
        md("```python\n# Exercise 9: a comment in a code block, no heading\n```\n### Exercise 1: two tests, no parts"),
        answer("f"), test_("test_f1"), test_("test_f2"),  # lettered in order; their answer keeps the number
        md("### Exercise 1: the same number again"), test_("test_again"),
        md("#### exercise 2B: another case"), test_("test_b"),
    ])
    nb.cells[1].source = nb.cells[1].source.splitlines(keepends=True)  # a source as a list of lines, as on disk
    assert cell_roles.exercise_labels(nb) == {"test_intro": "test_intro", "test_f1": "Exercise 1a",
                                            "test_f2": "Exercise 1b", "test_again": "Exercise 1",
                                            "test_b": "Exercise 2B"}
    assert cell_roles.cell_labels(nb)["f"] == "Exercise 1"


def test_a_repeated_label_gets_its_grade_id():
    nb = new_notebook(cells=[md("### Exercise 2"), answer("f"), test_("test_f"),
                             md("### Exercise 2 (again)"), answer("g"), test_("test_g")])
    assert cell_roles.exercise_labels(nb) == {"test_f": "Exercise 2", "test_g": "Exercise 2 (test_g)"}


@pytest.mark.parametrize("source", ["**(a)** in a heading's line\n### Exercise 5", "### Exercise 5\ntext **(a)** here",
                                    "### Exercise 5\n- **(a)** in a list"])
def test_a_part_marker_counts_only_at_the_start_of_a_paragraph_after_the_heading(source):
    nb = new_notebook(cells=[md(source), test_("test_f")])
    assert cell_roles.exercise_labels(nb) == {"test_f": "Exercise 5"}
