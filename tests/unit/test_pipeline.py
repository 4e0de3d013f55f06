"""The pipelines: nbgrader's own steps in nbgrader's order, with the course's steps where they belong."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from nbgrader.converters import Autograde, GenerateAssignment, GenerateFeedback
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheckCellMetadata
from nbgrader.preprocessors import ClearHiddenTests, Execute, IgnorePattern, LimitOutput, OverwriteCells, SaveAutoGrades
from traitlets.utils.importstring import import_item

from grader import cell_roles, pipeline
from grader.course import nbgrader_config
from grader.pipeline.check_cell_metadata import CheckCellMetadata
from grader.pipeline.clean_feedback import CleanFeedbackCells
from grader.pipeline.clear_hidden_tests import ClearHiddenTests as OnlyTestCells
from grader.pipeline.exercise_labels import ExerciseLabels
from grader.pipeline.guarded_execute import GuardedExecute
from grader.pipeline.inject_trusted_checks import InjectTrustedChecks
from grader.pipeline.repair_cells import RepairCells
from grader.pipeline.strip_grader_metadata import StripGraderMetadata
from grader.pipeline.strip_nbval_markers import StripNbvalMarkers
from grader.pipeline.strip_pairing_metadata import StripPairingMetadata
from grader.pipeline.verify_trusted_checks import VerifyTrustedChecks


def classes(steps: list) -> list[type]:
    return [import_item(step) if isinstance(step, str) else step for step in steps]


def nbgrader_default(converter, trait: str) -> list[type]:
    return list(converter.class_traits()[trait].default())


OURS = {StripNbvalMarkers, StripPairingMetadata, InjectTrustedChecks, VerifyTrustedChecks}
STANDS_FOR = {RepairCells: OverwriteCells, GuardedExecute: Execute, CheckCellMetadata: NbgraderCheckCellMetadata,
              OnlyTestCells: ClearHiddenTests}


@pytest.mark.parametrize(("steps", "converter", "trait", "added"), [
    (pipeline.release_steps, GenerateAssignment, "preprocessors", []),
    (pipeline.sanitize_steps, Autograde, "sanitize_preprocessors", [StripGraderMetadata]),
    (pipeline.autograde_steps, Autograde, "autograde_preprocessors", []),
    (pipeline.feedback_steps, GenerateFeedback, "preprocessors", [ExerciseLabels, OnlyTestCells,
                                                                         CleanFeedbackCells]),
], ids=["release", "sanitize", "autograde", "feedback"])
def test_each_pipeline_is_nbgraders_with_the_course_steps(steps, converter, trait, added):
    """Catches an nbgrader upgrade that changes its pipelines: every nbgrader step is still there, in order."""
    ours = classes(steps())
    theirs = [STANDS_FOR.get(step, step) for step in ours if step not in OURS and step not in added]
    left_out = set(classes(list(pipeline.LEFT_OUT)))
    assert theirs == [step for step in nbgrader_default(converter, trait) if step not in left_out]
    for step, base in STANDS_FOR.items():
        assert issubclass(step, base)


def test_a_step_left_out_of_nbgraders_pipeline_did_nothing_under_the_course_configuration():
    """AssignLatePenalties is out: the course sets no nbgrader late-penalty method, so it wrote 0."""
    from nbgrader.preprocessors import AssignLatePenalties

    config = nbgrader_config()
    assert set(pipeline.LEFT_OUT) == {"nbgrader.preprocessors.AssignLatePenalties"}
    assert "LateSubmissionPlugin" not in config and "AssignLatePenalties" not in config
    step = AssignLatePenalties(config=config)
    assert step.plugin_class(config=config).late_submission_penalty("ada", 7.0, 3600.0) is None
    assert all("AssignLatePenalties" not in s for s in pipeline.autograde_steps())


def test_the_configuration_assigns_exactly_these_pipelines():
    config = nbgrader_config()
    assert config.GenerateAssignment.preprocessors == pipeline.release_steps()
    assert config.Autograde.sanitize_preprocessors == pipeline.sanitize_steps()
    assert config.Autograde.autograde_preprocessors == pipeline.autograde_steps()
    assert config.GenerateFeedback.preprocessors == pipeline.feedback_steps()
    assert config.GenerateFeedback.exporter_class == pipeline.feedback_exporter()


def test_the_verdict_is_decided_last_and_the_inputs_chosen_right_before_execution():
    """The trusted checks judge outside the kernel: inputs injected right before execution, the verdict decided
    right before the grades are saved, after every step that trims outputs."""
    steps = classes(pipeline.autograde_steps())
    verify = steps.index(VerifyTrustedChecks)
    assert steps[steps.index(InjectTrustedChecks) + 1] is GuardedExecute
    assert steps[verify + 1] is SaveAutoGrades
    assert steps.index(IgnorePattern) < verify and steps.index(LimitOutput) < verify


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
    cells = {cell_roles.grade_id(c) or "intro": c for c in release().cells}
    nb = new_notebook(cells=[cells[name] for name in kept])
    restored, deleted, edited = cell_roles.restore_locked_cells(nb, release())
    assert [cell_roles.grade_id(c) or "intro" for c in restored] == expected
    assert deleted == [name for name in ("test_a", "test_b") if name not in kept] and edited == []


def test_an_edited_or_pasted_locked_cell_is_put_back_once():
    nb = release()
    nb.cells[2].source = "assert True  # edited"
    nb.cells.append(locked("test_b", "check b"))
    restored, deleted, edited = cell_roles.restore_locked_cells(nb, release())
    assert [c.source for c in restored if cell_roles.is_locked(c)] == ["check a", "check b"]
    assert deleted == [] and edited == ["test_a", "test_b"]


class FakeGradebook:
    """The two gradebook queries RepairCells.add_missing_grade_cells makes."""

    def __init__(self, nb):
        class Cell:
            def __init__(self, cell):
                self.name, self.source = cell_roles.grade_id(cell), cell.source
                self.cell_type, self.max_score = cell.cell_type, cell_roles.points(cell)
                self.locked = cell_roles.is_locked(cell)

        source = [Cell(c) for c in nb.cells if cell_roles.grade_id(c)]
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
    self_checked, _, _ = cell_roles.restore_locked_cells(nb, release())
    assert [cell_roles.grade_id(c) for c in repaired.cells] == [cell_roles.grade_id(c) for c in self_checked]


def test_a_feedback_page_carries_a_strict_policy_and_a_size_cap():
    from grader.page_policy import CSP
    from grader.pipeline.safe_feedback_page import harden

    safe = harden("<html><head></head><body><p>ok</p></body></html>")
    assert safe.index(CSP) < safe.index("<body>") and "default-src 'none'" in CSP
    assert "was not kept" in harden("<html><head></head><body>" + "x" * 5000 + "</body></html>", max_bytes=1000)


def _page_notebook(answer: str) -> nbformat.NotebookNode:
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
    figure = nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"})
    printed = nbformat.v4.new_output("stream", name="stdout", text="weights (4, 4)\n")
    cells = [new_markdown_cell("# Title\nThe scores $QK^T$ in `(T, T)`."),
             new_code_cell("import numpy as np\nx = np.ones((4, 4))  # (T, T)", outputs=[figure]),
             new_code_cell(answer, outputs=[printed],  # an answer cell: highlighted (the lesson's own code is not)
                           metadata={"nbgrader": {"grade_id": "f", "solution": True, "grade": False, "locked": False}})]
    for number, cell in enumerate(cells):
        cell.id = f"cell-{number}"
    return new_notebook(cells=cells, metadata={"language_info": {"name": "python", "pygments_lexer": "ipython3"}})


def test_a_feedback_page_is_nbconverts_own_page_made_cheaper():
    from bs4 import BeautifulSoup
    from jinja2 import pass_context
    from nbconvert.exporters import HTMLExporter

    from grader.pipeline.safe_feedback_page import (
        PLAIN_TOKENS,
        TEMPLATE,
        TEMPLATES,
        SafeFeedbackExporter,
        exercises,
        harden,
    )

    class Stock(HTMLExporter):  # nbconvert's own exporter, with the course's template and markdown
        @pass_context
        def markdown2html(self, context, source):
            return SafeFeedbackExporter.markdown2html(self, context, source)

    def normalised(page: str) -> str:
        return str(BeautifulSoup(page, features="html.parser"))

    grades = {"nbgrader": {"notebook": "lesson", "score": 1, "max_score": 2, "late_penalty": 0}}
    for answer in ("def f(x):\n    return x.T", "def f(x):\n    return x  # a second page, other cells"):
        nb = _page_notebook(answer)
        ours, _ = SafeFeedbackExporter().from_notebook_node(nb, dict(grades))
        stock, _ = Stock(template_name=TEMPLATE, extra_template_basedirs=[TEMPLATES]).from_notebook_node(
            nb, {**grades, "nbgrader_exercises": exercises(nb)})
        assert normalised(ours) == normalised(harden(PLAIN_TOKENS.sub(r"\1", stock)))
        assert 'alt="No description has been provided for this image"' in ours and "<math" in ours


def test_a_feedback_page_renders_a_changed_cell_anew():
    from grader.pipeline.safe_feedback_page import SafeFeedbackExporter

    first, _ = SafeFeedbackExporter().from_notebook_node(_page_notebook("y = 1"))
    second, _ = SafeFeedbackExporter().from_notebook_node(_page_notebook("y = 2"))
    assert first != second and first.replace("y = 1", "y = 2") == second


@pytest.mark.parametrize("student", ["### BEGIN HIDDEN TESTS\nx = 1",
                                     "# ### BEGIN HIDDEN TESTS\n# ### END HIDDEN TESTS"])
def test_a_students_hidden_test_marker_hides_nothing_and_costs_them_no_feedback(student):
    """Issue 27 item 7: nbgrader's step raised on the student's cell, and the student got no feedback page."""
    test = locked("test_f", "assert f() == 1\n### BEGIN HIDDEN TESTS\nassert f(2) == 2\n### END HIDDEN TESTS")
    nb = new_notebook(cells=[answer("f"), new_code_cell(student), test])
    with pytest.raises(RuntimeError):
        ClearHiddenTests().preprocess(nbformat.from_dict(nb), {})
    cleared, _ = OnlyTestCells().preprocess(nb, {})
    assert cleared.cells[1].source == student and cleared.cells[2].source == "assert f() == 1"
