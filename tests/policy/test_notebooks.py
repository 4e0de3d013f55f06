"""Static checks of every notebook: kernels, committed outputs, and text sources in sync."""

from __future__ import annotations

import json
from pathlib import Path

import jupytext
import nbformat
import pytest

from grader import cell_roles
from grader.course import LESSONS, ROOT, SOLUTIONS, reference_notebook, source_text

ALL_NOTEBOOKS = sorted(p for folder in (SOLUTIONS, LESSONS) for p in folder.rglob("*.ipynb")
                       if ".ipynb_checkpoints" not in p.parts)


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_kernelspec_is_python3(path: Path):
    kernelspec = json.loads(path.read_text())["metadata"].get("kernelspec", {})
    assert kernelspec.get("name") == "python3", f"{path}: kernelspec {kernelspec.get('name')!r}, expected 'python3'"


def test_every_reference_notebook_has_a_text_source():
    orphans = [p for p in SOLUTIONS.glob("*/*.ipynb") if not source_text(p.stem).is_file()]
    assert not orphans, f"reference notebooks without solutions/<id>.py: {orphans}"


def test_reference_notebook_was_executed_cleanly(lesson):
    nb = nbformat.read(reference_notebook(lesson), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    unexecuted = [i for i, c in enumerate(code) if c.execution_count is None]
    assert not unexecuted, f"code cells {unexecuted} have no stored outputs: run `make reference`"
    assert "widgets" not in nb.metadata, "widget state is stored (random ids, copied to students): `make reference`"
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), "cells were not run top to bottom in one kernel"
    for i, cell in enumerate(code):
        for out in cell.outputs:
            assert out.output_type != "error", f"code cell {i} stores an error: {out.get('ename')}"
            assert not (out.output_type == "stream" and out.name == "stderr"), (
                f"code cell {i} writes to stderr (nbgrader scores such cells zero): {out.text[:200]!r}")


def cell_inputs(nb) -> list[tuple]:
    return [(c.cell_type, c.source.strip(), cell_roles.meta(c) or None) for c in nb.cells]


def test_text_source_and_reference_notebook_are_in_sync(lesson):
    from_text = jupytext.read(source_text(lesson))
    from_notebook = nbformat.read(reference_notebook(lesson), as_version=4)
    assert cell_inputs(from_text) == cell_inputs(from_notebook), (
        f"solutions/{lesson}.py and its notebook differ: run `make reference LESSON={lesson}`")
