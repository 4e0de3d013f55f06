"""A submission cannot carry the grader's own metadata into its result: the first autograde step drops it."""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from grader import pipeline
from grader.grading.running import triage
from grader.pipeline.guarded_execute import GRADER_UID, UNSAFE, WATCHDOG_ONLY
from grader.pipeline.strip_grader_metadata import CELL_KEYS, NOTEBOOK_KEYS, StripGraderMetadata
from grader.trusted.prepared_checks import RESOURCE


def forged() -> nbformat.NotebookNode:
    nb = new_notebook(cells=[new_code_cell("x = 1", metadata={RESOURCE: {"passed": True}, "tags": ["kept"]})])
    nb.metadata.update({UNSAFE: True, WATCHDOG_ONLY: "no cgroup (forged)", GRADER_UID: "forged",
                        RESOURCE: {"seed": 0}, "kernelspec": {"name": "python3"}})
    return nb


def test_every_key_the_grader_writes_is_dropped_and_nothing_else():
    nb = forged()
    assert triage.run_flags(nb)  # as handed in, the keys would be read as the grader's flags
    nb, _ = StripGraderMetadata().preprocess(nb, {})
    assert not set(NOTEBOOK_KEYS) & set(nb.metadata) and nb.metadata.kernelspec == {"name": "python3"}
    assert not set(CELL_KEYS) & set(nb.cells[0].metadata) and nb.cells[0].metadata.tags == ["kept"]
    assert triage.run_flags(nb) == []


def test_it_runs_first_when_autograding():
    assert pipeline.sanitize_steps()[0].endswith(".StripGraderMetadata")


def test_a_refused_write_over_a_size_limit_is_flagged():
    cell = new_code_cell("fill()", metadata={"nbgrader": {"grade_id": "answer"}})
    cell.outputs = [new_output("error", ename="OSError", evalue="[Errno 28] No space left on device", traceback=[])]
    assert triage.run_flags(new_notebook(cells=[cell])) == [triage.Flag("disk-limit", "answer")]
