"""The committed student notebooks reveal nothing, carry no course tooling, and equal an in-memory release."""

from __future__ import annotations

import json
import re

import nbformat

from grader.authoring.release_in_memory import build_release
from grader.course import LESSONS, ROOT, student_notebook
from grader.pipeline.strip_nbval_markers import NBVAL_MARKER, StripNbvalMarkers
from tests.support import may_show, secret_lines

MARKERS = re.compile(r"BEGIN SOLUTION|END SOLUTION|BEGIN HIDDEN TESTS|END HIDDEN TESTS|BEGIN MARK SCHEME")


def test_reference_notebooks_have_secrets_to_protect(lesson):
    # Guards the leak test below: it must have solution and hidden-test lines to look for.
    assert len(secret_lines(lesson)) >= 5


def test_no_solution_or_hidden_test_text_anywhere_in_lessons(lesson):
    secrets = secret_lines(lesson)
    leaks = []
    for path in sorted(p for p in LESSONS.rglob("*") if p.is_file()):
        text = path.read_text(errors="replace")
        if MARKERS.search(text):
            leaks.append(f"{path.relative_to(ROOT)}: an nbgrader marker")
        if not may_show(str(path.relative_to(LESSONS)), lesson):
            leaks += [f"{path.relative_to(ROOT)}: {line!r}" for line in secrets if line in text]
    assert not leaks, "solution or hidden-test text reached lessons/:\n" + "\n".join(leaks[:20])


def test_release_carries_no_jupytext_pairing(lesson):
    # Otherwise saving the lesson in JupyterLab would write a stray .py next to it.
    assert "jupytext" not in json.loads(student_notebook(lesson).read_text())["metadata"]




def test_release_carries_no_nbval_marker(lesson):
    # They instruct the course's CI; the release pipeline strips them (StripNbvalMarkers).
    text = student_notebook(lesson).read_text()
    assert "NBVAL_" not in text, f"lessons/{lesson}: an nbval marker reached the student"


def test_nbval_markers_are_stripped_and_nothing_else():
    cell = nbformat.v4.new_code_cell("# NBVAL_IGNORE_OUTPUT\nx = 1  # NBVAL_SKIP stays: not alone on its line\n"
                                     "    # NBVAL_CHECK_OUTPUT\nprint(x)")
    nb = nbformat.v4.new_notebook(cells=[cell, nbformat.v4.new_markdown_cell("# NBVAL_SKIP in prose stays")])
    StripNbvalMarkers().preprocess(nb, {})
    assert nb.cells[0].source == "x = 1  # NBVAL_SKIP stays: not alone on its line\nprint(x)"
    assert nb.cells[1].source == "# NBVAL_SKIP in prose stays"
    assert NBVAL_MARKER.search("# NBVAL_RAISES_EXCEPTION") and not NBVAL_MARKER.search("x = 1 # NBVAL_SKIP")


def test_the_release_built_in_memory_equals_the_committed_release(lesson):
    built = build_release(lesson)
    committed = nbformat.read(student_notebook(lesson), as_version=4)
    assert len(built.cells) == len(committed.cells), f"lessons/{lesson} is stale: run `make release`"
    for index, (a, b) in enumerate(zip(built.cells, committed.cells, strict=True)):
        assert (a.cell_type, a.source, a.metadata) == (b.cell_type, b.source, b.metadata), (
            f"cell {index} of lessons/{lesson} differs from a fresh release: run `make release`")
