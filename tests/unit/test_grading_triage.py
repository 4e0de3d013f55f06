"""What the grader tells apart before and after running a submission (no kernels here)."""

from __future__ import annotations

import copy

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from grader import cell_roles
from grader.grading.running import triage
from grader.grading.running.triage import Flag
from grader.pipeline.guarded_execute import KERNEL_DIED, NOT_RUN
from grader.pipeline.repair_cells import RepairCells

LIMITS = RepairCells()  # the course's defaults


def release() -> nbformat.NotebookNode:
    def meta(grade_id, **kinds):
        base = {"grade": False, "solution": False, "locked": False, "schema_version": 3, "task": False}
        return {"nbgrader": {**base, "grade_id": grade_id, **kinds}}

    return new_notebook(cells=[
        new_markdown_cell("# Lesson"),
        new_code_cell("def double(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()",
                      metadata=meta("double", solution=True)),
        new_code_cell("assert double(2) == 4", metadata=meta("test_double", grade=True, locked=True, points=2)),
        new_code_cell("def half(x):\n    raise NotImplementedError()", metadata=meta("half", solution=True)),
        new_code_cell("assert half(4) == 2", metadata=meta("test_half", grade=True, locked=True, points=1)),
    ])


def answered() -> nbformat.NotebookNode:
    nb = copy.deepcopy(release())
    nb.cells[1].source, nb.cells[3].source = "def double(x):\n    return 2 * x", "def half(x):\n    return x / 2"
    return nb


@pytest.mark.parametrize(("content", "reason"), [
    (b"", "empty file"),
    (b"  \n", "empty file"),
    (b'{"cells": [', "invalid JSON"),
    (b"\xff\xfe not text", "invalid JSON"),
    (b'{"answer": 42}', "not a notebook"),
    (b"[1, 2]", "not a notebook"),
    (b'{"nbformat": 4, "nbformat_minor": 5, "cells": 3}', "not a readable notebook"),
])
def test_files_that_are_not_notebooks_are_told_apart(tmp_path, content, reason):
    path = tmp_path / "submission.ipynb"
    path.write_bytes(content)
    with pytest.raises(triage.Unreadable, match=reason):
        triage.read_submission(path)


def test_a_notebook_is_read(tmp_path):
    path = tmp_path / "submission.ipynb"
    nbformat.write(answered(), path)
    assert triage.read_submission(path).cells[1].source.endswith("return 2 * x")


def test_answers_alone_raise_no_flag():
    assert triage.inspect_submission(answered(), release(), {}, limits=LIMITS) == ([], None)
    assert cell_roles.test_points(release()) == {"test_double": 2.0, "test_half": 1.0}


def test_changes_to_exercise_cells_are_flagged_by_cell():
    nb = answered()
    nb.cells[2].source = "pass"  # edited test
    nb.cells[3] = new_markdown_cell(nb.cells[3].source, metadata=nb.cells[3].metadata)  # retyped answer
    del nb.cells[4]  # deleted test
    flags, reason = triage.inspect_submission(nb, release(), {}, limits=LIMITS)
    assert reason is None
    assert [str(flag) for flag in flags] == ["test-cell-edited:test_double", "cell-type-changed:half",
                                             "test-cell-missing:test_half"]
    assert triage.needs_review(flags) and not triage.needs_review([Flag("cell-type-changed", "half")])
    assert Flag.parse(str(flags[0])) == flags[0]
    with pytest.raises(ValueError, match="unknown flag"):
        Flag("made-up")


def test_a_notebook_of_another_lesson_is_named():
    other = new_notebook(cells=[new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": "sweep", "solution": True}})])
    others = {"02-scaling": {"sweep"}, "04-proof": {"w_o"}}
    assert triage.inspect_submission(other, release(), others, limits=LIMITS) == (
        [], "the notebook of another lesson (02-scaling)")


def test_stripped_metadata_is_restorable_only_when_the_cells_line_up():
    nb = answered()
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
    assert cell_roles.lines_up(nb, release())
    assert triage.inspect_submission(nb, release(), {}, limits=LIMITS) == ([Flag("metadata-restored")], None)
    del nb.cells[0]
    flags, reason = triage.inspect_submission(nb, release(), {}, limits=LIMITS)
    assert not flags and "no nbgrader metadata left" in reason


def test_what_happened_while_the_cells_ran_is_flagged():
    nb = release()
    error = new_output("error", ename="CellTimeoutError", evalue="", traceback=["CellTimeoutError"])
    nb.cells[1].outputs = [error]
    nb.cells[2].outputs = [new_output("error", ename="MemoryError", evalue="", traceback=[])]
    nb.cells[3].outputs = [new_output("stream", name="stdout", text="0\n... Output truncated ...")]
    nb.cells[4].outputs = [new_output("error", ename=KERNEL_DIED, evalue="", traceback=[])]
    nb.cells.append(new_code_cell("print(1)", outputs=[new_output("error", ename=NOT_RUN, evalue="", traceback=[])]))
    assert [str(flag) for flag in triage.run_flags(nb)] == ["timeout:double", "memory-limit:test_double",
                                                            "output-truncated:half", "kernel-died:test_half"]
    assert Flag("kernel-died", "test_half").describe() == "the kernel died in test_half; later cells were not run"


def test_the_reason_nbgrader_failed_is_its_exception():
    result = {"success": False, "log": "[INFO] Sanitizing\n[ERROR] There was an error processing assignment\n"
              "[ERROR] Traceback (most recent call last):\n  File \"x.py\", line 1\n"
              "[ERROR] KeyError: 'concat_heads'\n",
              "error": "nbgrader.converters.base.NbGraderException: Please see the the above traceback"}
    assert triage.failure_reason(result) == "nbgrader could not grade it: KeyError: 'concat_heads'"
    assert triage.failure_reason({"success": False, "log": "[ERROR] Kernel died before replying"}) == (
        "nbgrader could not grade it: Kernel died before replying")


def test_a_pasted_cell_and_edited_points_are_flagged_and_graded():
    """Issue 27 items 4 and 6: a pasted copy costs nothing but is flagged; points set to 1000 are flagged."""
    nb = answered()
    nb.cells.insert(3, copy.deepcopy(nb.cells[2]))  # JupyterLab's copy and paste: metadata and all
    cell_roles.meta(nb.cells[-1])["points"] = 1000
    flags, reason = triage.inspect_submission(nb, release(), {}, limits=LIMITS)
    assert reason is None
    assert [str(flag) for flag in flags] == ["points-edited:test_half", "cell-pasted:test_double"]
    assert triage.needs_review([Flag("points-edited", "x")]) and not triage.needs_review([Flag("cell-pasted", "x")])


def test_a_notebook_far_larger_than_its_release_is_refused_before_it_runs():
    """Issue 27 item 11: 100,000 markdown cells, or a few enormous ones, are refused with the reason."""
    many = answered()
    cell = new_markdown_cell("x")  # made once: nbformat validates every cell it makes
    many.cells += [nbformat.from_dict(cell) for _ in range(5000)]
    assert "far larger than its release: 5005 cells" in triage.inspect_submission(many, release(), {}, limits=LIMITS)[1]
    huge = answered()
    huge.cells.append(new_markdown_cell("x" * (2 * 1024**2)))
    assert "characters of cells" in triage.inspect_submission(huge, release(), {}, limits=LIMITS)[1]
    fine = answered()
    fine.cells += [new_markdown_cell("a note of my own " * 100) for _ in range(50)]
    assert triage.inspect_submission(fine, release(), {}, limits=LIMITS) == ([], None)


def test_the_batch_refuses_by_the_configured_limits_as_nbgraders_step_does(tmp_path, monkeypatch):
    """c.RepairCells.size_factor moved away from its default reaches the batch's pre-check too."""
    from traitlets.config import Config

    from grader.grading.running import worker
    from grader.pipeline.repair_cells import size_limits

    big = answered()
    big.cells += [new_markdown_cell("x") for _ in range(400)]  # 405 cells: over 4 x 5 + 200, under 100 x 5 + 200
    assert "far larger" in triage.inspect_submission(big, release(), {}, limits=LIMITS)[1]
    config = Config()
    config.RepairCells.size_factor = 100.0
    assert triage.inspect_submission(big, release(), {}, limits=size_limits(config)) == ([], None)
    # The worker hands the pre-check the limits of the very configuration nbgrader's API grades with.
    seen = []
    monkeypatch.setattr(worker.triage, "inspect_submission", lambda *a, limits: seen.append(limits) or ([], "stop"))
    monkeypatch.setattr(worker, "prepare", lambda job: type("Api", (), {"config": config})())
    release_path = tmp_path / "release" / "l" / "l.ipynb"
    release_path.parent.mkdir(parents=True)
    nbformat.write(release(), release_path)
    monkeypatch.setattr(worker.Paths, "of", classmethod(lambda cls, layout, lesson, student: cls(
        tmp_path / "s.ipynb", tmp_path / "a" / "a.ipynb", tmp_path / "f" / "f.html", release_path)))
    monkeypatch.setattr(worker.Layout, "of", staticmethod(lambda config: None))
    nbformat.write(big, tmp_path / "s.ipynb")
    result = worker.grade(worker.Job(course=str(tmp_path), lesson="l", student="s"))
    assert result.reason == "stop" and [limits.size_factor for limits in seen] == [100.0]
