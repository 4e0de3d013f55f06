"""Build student submissions from a released notebook, as fixtures for grading tests.

A submission is described in `tests/fixtures/<lesson>/submissions.toml` (see the comment at the
top of each file): which answers a student wrote, which locked cells they edited or deleted, and
which test cells should then lose their points. Building them from the current release, rather
than storing notebooks, keeps the fixtures valid whenever a lesson is edited.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import tomllib

from grader.course import reference_notebook

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@dataclass(frozen=True)
class Variant:
    name: str
    untouched: bool = False  # hand in the release exactly as it was given out
    answers: dict[str, str] = field(default_factory=dict)  # solution cell grade_id -> code
    replace: dict[str, str] = field(default_factory=dict)  # locked cell grade_id -> edited source
    delete: list[str] = field(default_factory=list)  # grade_ids of cells the student deleted
    lost: list[str] | str = field(default_factory=list)  # test grade_ids scoring 0, or "all"


def variants(lesson: str) -> list[Variant]:
    path = FIXTURES / lesson / "submissions.toml"
    if not path.is_file():
        return []
    spec = tomllib.loads(path.read_text())
    return [Variant(name=name, **fields) for name, fields in spec.items()]


def strip_markers(source: str) -> str:
    """A solution cell's code as the reference answer: the region markers removed."""
    markers = ("### BEGIN SOLUTION", "### END SOLUTION")
    return "\n".join(line for line in source.splitlines() if not any(m in line for m in markers))


def reference_answers(lesson: str) -> dict[str, str]:
    nb = nbformat.read(reference_notebook(lesson), as_version=4)
    return {cell.metadata.nbgrader["grade_id"]: strip_markers(cell.source)
            for cell in nb.cells if cell.metadata.get("nbgrader", {}).get("solution")}


def build(lesson: str, release: Path, variant: Variant) -> nbformat.NotebookNode:
    """The notebook a student following `variant` would hand in."""
    nb = nbformat.read(release, as_version=4)
    if variant.untouched:
        return nb
    answers = {**reference_answers(lesson), **variant.answers}
    unknown = (set(variant.answers) | set(variant.replace) | set(variant.delete)) - {
        cell.metadata.get("nbgrader", {}).get("grade_id") for cell in nb.cells}
    assert not unknown, f"{lesson}/{variant.name}: no cells with grade_id {sorted(unknown)}"
    kept = []
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in variant.delete:
            continue
        if grade_id in variant.replace:
            cell.source = variant.replace[grade_id]
        elif cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = answers[grade_id]
        kept.append(cell)
    nb.cells = kept
    return nb


def test_points(release: Path) -> dict[str, float]:
    """grade_id -> points of every autograded test cell of a released notebook."""
    nb = nbformat.read(release, as_version=4)
    return {cell.metadata.nbgrader["grade_id"]: cell.metadata.nbgrader["points"]
            for cell in nb.cells if cell.metadata.get("nbgrader", {}).get("grade")}


def expected_scores(release: Path, variant: Variant) -> dict[str, float]:
    points = test_points(release)
    lost = set(points) if variant.lost == "all" else set(variant.lost)
    assert lost <= set(points), f"{variant.name}: lost names unknown test cells {sorted(lost - set(points))}"
    return {grade_id: 0.0 if grade_id in lost else float(p) for grade_id, p in points.items()}
