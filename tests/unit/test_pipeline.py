"""The pipelines: nbgrader's own steps in nbgrader's order, with the course's steps where they belong."""

from __future__ import annotations

import random
import re

import nbformat
import pytest
from nbconvert.preprocessors.sanitize import SanitizeHTML
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from nbgrader.converters import Autograde, GenerateAssignment, GenerateFeedback
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheckCellMetadata
from nbgrader.preprocessors import ClearHiddenTests, Execute, OverwriteCells
from traitlets.utils.importstring import import_item

from grader import notebook, pipeline
from grader.course import nbgrader_config
from grader.pipeline.check_cell_metadata import CheckCellMetadata
from grader.pipeline.guarded_execute import GuardedExecute
from grader.pipeline.inject_trusted_checks import InjectTrustedChecks
from grader.pipeline.repair_cells import RepairCells
from grader.pipeline.strip_nbval_markers import StripNbvalMarkers
from grader.pipeline.strip_pairing_metadata import StripPairingMetadata
from grader.pipeline.verify_trusted_checks import VerifyTrustedChecks


def classes(steps: list) -> list[type]:
    return [import_item(step) if isinstance(step, str) else step for step in steps]


def nbgrader_default(converter, trait: str) -> list[type]:
    return list(converter.class_traits()[trait].default())


OURS = {StripNbvalMarkers, StripPairingMetadata, InjectTrustedChecks, VerifyTrustedChecks}
STANDS_FOR = {RepairCells: OverwriteCells, GuardedExecute: Execute, CheckCellMetadata: NbgraderCheckCellMetadata}


@pytest.mark.parametrize(("steps", "converter", "trait", "added"), [
    (pipeline.release_steps, GenerateAssignment, "preprocessors", []),
    (pipeline.sanitize_steps, Autograde, "sanitize_preprocessors", []),
    (pipeline.autograde_steps, Autograde, "autograde_preprocessors", []),
    (pipeline.feedback_steps, GenerateFeedback, "preprocessors", [ClearHiddenTests, SanitizeHTML]),
], ids=["release", "sanitize", "autograde", "feedback"])
def test_each_pipeline_is_nbgraders_with_the_course_steps(steps, converter, trait, added):
    """Catches an nbgrader upgrade that changes its pipelines: every nbgrader step is still there, in order."""
    ours = classes(steps())
    theirs = [STANDS_FOR.get(step, step) for step in ours if step not in OURS and step not in added]
    assert theirs == nbgrader_default(converter, trait)
    for step, base in STANDS_FOR.items():
        assert issubclass(step, base)


def test_the_configuration_assigns_exactly_these_pipelines():
    config = nbgrader_config()
    assert config.GenerateAssignment.preprocessors == pipeline.release_steps()
    assert config.Autograde.sanitize_preprocessors == pipeline.sanitize_steps()
    assert config.Autograde.autograde_preprocessors == pipeline.autograde_steps()
    assert config.GenerateFeedback.preprocessors == pipeline.feedback_steps()
    assert config.GenerateFeedback.exporter_class == pipeline.feedback_exporter()


def test_the_verdict_is_decided_last_and_the_inputs_chosen_right_before_execution():
    steps = classes(pipeline.autograde_steps())
    assert steps[steps.index(InjectTrustedChecks) + 1] is GuardedExecute
    assert steps[steps.index(VerifyTrustedChecks) + 1].__name__ == "SaveAutoGrades"


def locked(grade_id: str, source: str) -> nbformat.NotebookNode:
    return new_code_cell(source, metadata={"nbgrader": {"grade_id": grade_id, "locked": True, "grade": True,
                                                        "points": 1, "solution": False}})


def answer(grade_id: str) -> nbformat.NotebookNode:
    return new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": grade_id, "solution": True, "grade": False,
                                                         "locked": False}})


def release() -> nbformat.NotebookNode:
    return new_notebook(cells=[new_markdown_cell("intro"), answer("a"), locked("test_a", "check a"),
                               answer("b"), locked("test_b", "check b")])


@pytest.mark.parametrize(("kept", "expected"), [
    (["intro", "a", "b", "test_b"], ["intro", "a", "test_a", "b", "test_b"]),  # after the closest earlier cell
    (["intro", "test_b"], ["intro", "test_a", "test_b"]),  # its answer gone too: before the closest later one
    (["intro"], ["intro", "test_a", "test_b"]),  # nothing of the lesson left: at the end, in order
])
def test_a_deleted_locked_cell_goes_back_where_grading_puts_it(kept, expected):
    cells = {notebook.grade_id(c) or "intro": c for c in release().cells}
    nb = new_notebook(cells=[cells[name] for name in kept])
    restored, deleted, edited = notebook.restore_locked_cells(nb, release())
    assert [notebook.grade_id(c) or "intro" for c in restored] == expected
    assert deleted == [name for name in ("test_a", "test_b") if name not in kept] and edited == []


def test_an_edited_or_pasted_locked_cell_is_put_back_once():
    nb = release()
    nb.cells[2].source = "assert True  # edited"
    nb.cells.append(locked("test_b", "check b"))
    restored, deleted, edited = notebook.restore_locked_cells(nb, release())
    assert [c.source for c in restored if notebook.is_locked(c)] == ["check a", "check b"]
    assert deleted == [] and edited == ["test_a", "test_b"]


class FakeGradebook:
    """The two gradebook queries RepairCells.add_missing_grade_cells makes."""

    def __init__(self, nb):
        class Cell:
            def __init__(self, cell):
                self.name, self.source = notebook.grade_id(cell), cell.source
                self.cell_type, self.max_score = cell.cell_type, notebook.points(cell)
                self.locked = notebook.is_locked(cell)

        source = [Cell(c) for c in nb.cells if notebook.grade_id(c)]
        self.notebook = type("Nb", (), {"source_cells": source, "solution_cells": [c for c in source if not c.locked],
                                        "grade_cells": [c for c in source if c.locked]})()

    def find_notebook(self, *args):
        return self.notebook


def test_repair_cells_restores_a_run_of_deleted_cells_where_the_self_check_does():
    nb = new_notebook(cells=[new_markdown_cell("intro"), locked("test_b", "check b")])  # answer a and test a gone
    repair = RepairCells()
    repair.gradebook, repair._release = FakeGradebook(release()), release()
    repair.notebook_id, repair.assignment_id = "n", "a"
    repair.missing_cell_transform = lambda source, max_score, is_solution: locked(source.name, source.source)
    repaired, _ = repair.add_missing_grade_cells(nb, {})
    self_checked, _, _ = notebook.restore_locked_cells(nb, release())
    assert [notebook.grade_id(c) for c in repaired.cells] == [notebook.grade_id(c) for c in self_checked]


def test_a_feedback_page_keeps_no_script_and_carries_a_strict_policy():
    from grader.pipeline.safe_feedback_page import CSP, harden

    page = ('<html><head><script src="https://cdn.example/mathjax.js"></script></head><body><p>ok</p>'
            "<SCRIPT type='text/x-mathjax-config'>MathJax.Hub.Config({})</SCRIPT><a href='javascript:alert(2)'>a</a>"
            "<img src=x onerror=alert(3) alt=i><iframe src='https://example.com'></iframe><script>alert(1)")
    safe = harden(page)
    assert "<script" not in safe.lower() and "alert(1)" not in safe and "<p>ok</p>" in safe
    assert "javascript:" not in safe and "onerror" not in safe and "<iframe" not in safe and "alt=i" in safe
    assert safe.index(CSP) < safe.index("<body>") and "default-src 'none'" in CSP
    assert "was not kept" in harden("<html><head></head><body>" + "x" * 5000 + "</body></html>", max_bytes=1000)


def _harden_by_the_plain_patterns(page: str) -> str:
    """`harden(page)`, with script URLs and event handlers found by the plain patterns (tried at every position)."""
    from grader.pipeline.safe_feedback_page import ACTIVE_TAGS, CSP, SCRIPT

    script_url = re.compile(r"""((?:href|src|action|formaction|xlink:href)\s*=\s*["']?)\s*"""
                            r"(?:javascript|vbscript|data:text/html)", re.IGNORECASE)
    handler = re.compile(r"""(<[^>]*?)\son[a-z]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+)""", re.IGNORECASE)
    page = script_url.sub(r"\1#removed-", SCRIPT.sub("", page))
    while handler.search(page):
        page = handler.sub(r"\1", page)
    page = ACTIVE_TAGS.sub("", page)
    if re.search(r"<script\b", page, re.IGNORECASE):
        page = page[: re.search(r"<script\b", page, re.IGNORECASE).start()]
    return f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' + page  # no <head> in these pages


def test_a_feedback_page_is_hardened_exactly_as_the_plain_patterns_would_harden_it():
    from grader.pipeline.safe_feedback_page import harden

    pieces = ["href", "HRef", "src", "SRC", "xlink:href", "formaction", "action", "data", " ", "  ", "\t", "\n",
              "\u00a0", "=", "==", "'", '"', "javascript", "JavaScript", "vbscript", "data:text/html", ":alert(1)",
              "<a ", "<img ", "<b", ">", " onerror", " ONLOAD", "=alert(2)", " on", "one", "x", "iVBORw0KGgo+/9A=",
              "<script>", "</script>", "<p>", "<iframe ", "<form>"]
    draw = random.Random(7)
    for _ in range(3000):
        page = "".join(draw.choice(pieces) for _ in range(draw.randint(1, 24)))
        assert harden(page) == _harden_by_the_plain_patterns(page), repr(page)


def test_cell_contents_are_sanitised_for_feedback():
    cell = new_code_cell("x", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": "<b onmouseover='alert(1)'>hi</b><iframe src='x'></iframe>",
                              "application/javascript": "alert(1)", "text/plain": "hi"})])
    markdown = new_markdown_cell("<script>alert(1)</script> [x](javascript:alert(1)) <img src=x onerror=alert(1)>")
    nb = new_notebook(cells=[cell, markdown])
    config = nbgrader_config()
    sanitise = SanitizeHTML(config=config)
    nb, _ = sanitise.preprocess(nb, {})
    text = nbformat.writes(nb).lower()
    assert "application/javascript" not in text and "onmouseover=" not in text and "<iframe" not in text
    assert "<script>" not in text and "<img" not in text  # escaped: shown as text, never as a tag


def _page_notebook(answer: str) -> nbformat.NotebookNode:
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
    figure = nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"})
    printed = nbformat.v4.new_output("stream", name="stdout", text="weights (4, 4)\n")
    cells = [new_markdown_cell("# Title\nThe scores $QK^T$ in `(T, T)`."),
             new_code_cell("import numpy as np\nx = np.ones((4, 4))  # (T, T)", outputs=[figure]),
             new_code_cell(answer, outputs=[printed])]
    for number, cell in enumerate(cells):
        cell.id = f"cell-{number}"
    return new_notebook(cells=cells, metadata={"language_info": {"name": "python", "pygments_lexer": "ipython3"}})


def test_a_feedback_page_is_nbconverts_own_page_made_cheaper():
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter

    from grader.pipeline.safe_feedback_page import SafeFeedbackExporter, harden

    def normalised(page: str) -> str:
        return str(BeautifulSoup(page, features="html.parser"))

    for answer in ("def f(x):\n    return x.T", "def f(x):\n    return x  # a second page, other cells"):
        nb = _page_notebook(answer)
        ours, _ = SafeFeedbackExporter(template_name="lab").from_notebook_node(nb)
        stock, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
        assert normalised(ours) == normalised(harden(stock))
        assert 'alt="No description has been provided for this image"' in ours and 'tabindex="0"' in ours


def test_a_feedback_page_renders_a_changed_cell_anew():
    from grader.pipeline.safe_feedback_page import SafeFeedbackExporter

    first, _ = SafeFeedbackExporter(template_name="lab").from_notebook_node(_page_notebook("y = 1"))
    second, _ = SafeFeedbackExporter(template_name="lab").from_notebook_node(_page_notebook("y = 2"))
    assert first != second and first.replace(">1<", ">2<") == second


def test_a_primed_process_renders_the_lessons_own_cells_from_its_caches(monkeypatch):
    import uuid

    from nbconvert.filters.highlight import Highlight2HTML

    from grader.pipeline.safe_feedback_page import SafeFeedbackExporter, prime

    lesson = _page_notebook(f"lesson_cell = {uuid.uuid4().int}")  # a cell no other test has rendered
    prime(SafeFeedbackExporter(template_name="lab"), lesson)
    highlighted = []
    real = Highlight2HTML.__call__
    monkeypatch.setattr(Highlight2HTML, "__call__", lambda self, source, *a, **k: highlighted.append(source)
                        or real(self, source, *a, **k))
    SafeFeedbackExporter(template_name="lab").from_notebook_node(lesson)
    assert highlighted == []
    answered = _page_notebook(f"answer = {uuid.uuid4().int}")
    SafeFeedbackExporter(template_name="lab").from_notebook_node(answered)
    assert highlighted == [answered.cells[2].source]


def test_rendered_cells_stay_within_their_budget_and_an_oversized_one_is_still_returned():
    from grader.pipeline.safe_feedback_page import _Rendered

    kept = _Rendered(budget=100)
    for name in "abc":
        assert kept.get((name,), lambda name=name: name * 40) == name * 40
    assert [key[0] for key in kept._items] == ["b", "c"] and kept._used == 82  # the oldest went first
    assert _Rendered(budget=10).get(("big",), lambda: "x" * 50) == "x" * 50
