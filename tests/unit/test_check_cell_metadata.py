"""grader.pipeline.check_cell_metadata: the same verdict, and the same reason, as nbgrader's CheckCellMetadata."""

from __future__ import annotations

import copy

import nbformat
import pytest
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheckCellMetadata

from grader import cell_roles
from grader.course import ROOT
from grader.pipeline.check_cell_metadata import CheckCellMetadata

RELEASE = nbformat.read(ROOT / "lessons/03-parallel-heads/03-parallel-heads.ipynb", as_version=4)


def _graded_cell(nb):
    return next(cell for cell in nb.cells if cell_roles.meta(cell).get("grade"))


CHANGES = {
    "unchanged": lambda meta, nb: None,
    "points as text": lambda meta, nb: meta.update(points="two"),
    "grade as text": lambda meta, nb: meta.update(grade="yes"),
    "no locked key": lambda meta, nb: meta.pop("locked"),
    "no points": lambda meta, nb: meta.pop("points"),
    "empty grade_id": lambda meta, nb: meta.update(grade_id=""),
    "no grade_id": lambda meta, nb: meta.pop("grade_id"),
    "old schema": lambda meta, nb: meta.update(schema_version=1),
    "newer schema": lambda meta, nb: meta.update(schema_version=4),
    "unknown key": lambda meta, nb: meta.update(bonus=10),
    "metadata a list": lambda meta, nb: _graded_cell(nb).metadata.update(nbgrader=[1, 2]),
    "duplicate grade_id": lambda meta, nb: cell_roles.meta(
        next(c for c in nb.cells if cell_roles.meta(c).get("solution"))).update(grade_id=meta["grade_id"]),
    "markdown grade cell": lambda meta, nb: _graded_cell(nb).update(cell_type="markdown"),
}


def _verdict(step, nb) -> tuple:
    try:
        step.preprocess(nb, {})
    except Exception as error:  # noqa: BLE001 (the verdict is what is compared)
        reason = error.__context__ if error.__context__ is not None else error
        return type(error).__name__, str(error), type(reason).__name__, getattr(reason, "message", str(reason))
    return ("accepted",)


@pytest.mark.parametrize("change", CHANGES)
def test_a_notebook_is_accepted_or_refused_as_nbgrader_does_for_the_same_reason(change):
    verdicts = []
    for step in (CheckCellMetadata(), NbgraderCheckCellMetadata()):
        nb = copy.deepcopy(RELEASE)
        CHANGES[change](cell_roles.meta(_graded_cell(nb)), nb)
        verdicts.append(_verdict(step, nb))
    assert verdicts[0] == verdicts[1]
    assert (verdicts[0] == ("accepted",)) == (change == "unchanged")
