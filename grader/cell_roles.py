"""nbgrader's cell metadata, read in one place: each cell's grade_id, role and points.

Every module of the course that asks "which cell is this?" asks here, never
`cell.metadata["nbgrader"]` itself.
"""

from __future__ import annotations

import copy
import re
from typing import Literal

from nbformat import NotebookNode

CellRole = Literal["test", "solution", "locked", "task"]  # what a cell is to nbgrader

# How a lesson names its exercises (docs/lesson-style.md): a markdown heading "### Exercise 3: <title>",
# and, where one exercise has several graded parts, a paragraph opening with "**(a)**", "**(b)**", ...
EXERCISE_HEADING = re.compile(r"^#{1,6}[ \t]+Exercise[ \t]+(\d+[a-z]?)\b", re.IGNORECASE)
PART_MARKER = re.compile(r"^(?:\*\*|__)\(([a-z])\)(?:\*\*|__)")
FENCE = re.compile(r"^[ \t]{0,3}(?:```|~~~)")


def meta(cell: NotebookNode) -> dict:
    """The cell's nbgrader metadata ({} for a cell nbgrader does not know)."""
    return cell.get("metadata", {}).get("nbgrader", {})


def set_meta(cell: NotebookNode, info: dict | None) -> None:
    """Give the cell this nbgrader metadata (a copy), or none at all when `info` is None."""
    if info is None:
        cell.metadata.pop("nbgrader", None)
    else:
        cell.metadata["nbgrader"] = copy.deepcopy(dict(info))


def grade_id(cell: NotebookNode) -> str | None:
    return meta(cell).get("grade_id") or None


def kind(cell: NotebookNode) -> CellRole | None:
    """What the cell is to nbgrader: an autograded test, an answer, a locked cell, a task, or None."""
    info = meta(cell)
    if info.get("grade") and not info.get("solution"):
        return "test"
    if info.get("solution"):
        return "solution"
    if info.get("task"):
        return "task"
    if info.get("locked"):
        return "locked"
    return None


def is_test(cell: NotebookNode) -> bool:
    """An autograded test cell (graded, not an answer)."""
    return cell.cell_type == "code" and kind(cell) == "test"


def is_graded(cell: NotebookNode) -> bool:
    """A cell that carries points: an autograded test, or an answer graded by hand."""
    return bool(meta(cell).get("grade"))


def is_locked(cell: NotebookNode) -> bool:
    return bool(meta(cell).get("locked"))


def points(cell: NotebookNode) -> float:
    return float(meta(cell).get("points", 0))


def cells_by_id(nb: NotebookNode) -> dict[str, NotebookNode]:
    """grade_id -> cell, for every cell with nbgrader metadata and an id (the first one wins)."""
    cells: dict[str, NotebookNode] = {}
    for cell in nb.cells:
        name = grade_id(cell)
        if name and name not in cells:
            cells[name] = cell
    return cells


def test_points(nb: NotebookNode) -> dict[str, float]:
    """grade_id -> points of every autograded test cell, in notebook order."""
    return {grade_id(cell): points(cell) for cell in nb.cells if is_graded(cell)}


def solution_ids(nb: NotebookNode) -> list[str]:
    """grade_ids of the answer cells, in notebook order."""
    return [grade_id(cell) for cell in nb.cells if kind(cell) == "solution"]


def lines_up(nb: NotebookNode, release: NotebookNode) -> bool:
    """Whether `nb` has the release's cells one to one: same count and types, locked cells unedited."""
    if len(nb.cells) != len(release.cells):
        return False
    return all(cell.cell_type == ref.cell_type and (not is_locked(ref) or cell.source == ref.source)
               for cell, ref in zip(nb.cells, release.cells, strict=True))


def restore_locked_cells(nb: NotebookNode, release: NotebookNode,
                         same=lambda cell, original: cell.source == original.source):
    """The cells of `nb` with every locked cell of `release` as released, as grading restores them.

    Returns (cells, deleted, edited): the new cell list; grade_ids of locked cells that were
    missing and put back; grade_ids of locked cells that differed (`same` is False) or were
    duplicated, replaced by the original (a duplicate is dropped). A missing cell goes right after
    the closest earlier cell of the release that is still there, or before the closest later one
    (the rule of grader.pipeline.repair_cells, which grading uses).
    """
    originals = {grade_id(c): c for c in release.cells if is_locked(c) and grade_id(c)}
    cells, seen, edited = [], set(), []
    for cell in nb.cells:
        name = grade_id(cell)
        if name in originals:
            if (name in seen or not same(cell, originals[name])) and name not in edited:
                edited.append(name)
            if name in seen:
                continue
            seen.add(name)
            cell = copy.deepcopy(originals[name])
        cells.append(cell)
    order = [grade_id(c) for c in release.cells if grade_id(c)]
    deleted = [name for name in order if name in originals and name not in seen]
    for name in deleted:
        cells.insert(insertion_index(cells, order, name), copy.deepcopy(originals[name]))
    return cells, deleted, edited


def insertion_index(cells: list[NotebookNode], order: list[str], missing: str) -> int:
    """Where a missing cell goes back: after the closest earlier cell of `order` still in `cells`,
    else before the closest later one, else at the end."""
    present = {name: index for index, cell in enumerate(cells) if (name := grade_id(cell)) in order}
    position = order.index(missing)
    before = [present[name] for name in order[:position] if name in present]
    after = [present[name] for name in order[position + 1:] if name in present]
    return max(before) + 1 if before else min(after) if after else len(cells)


def exercise_labels(nb: NotebookNode) -> dict[str, str]:
    """grade_id -> the lesson's own name of its exercise ("Exercise 3a"), for every graded cell, in notebook order.

    Read from the notebook's markdown: a graded cell takes the number of the last "Exercise N" heading
    above it, and the letter of the last "**(a)**" part opening a paragraph between that heading and
    the cell. Read it from the release (or the source), never from a submission: a student can edit
    markdown. See `cell_labels` for the rules of what a lesson leaves unnamed.
    """
    labels = cell_labels(nb)
    return {name: labels[name] for name in test_points(nb)}


def cell_labels(nb: NotebookNode) -> dict[str, str]:
    """grade_id -> the lesson's name of its exercise, for every answer and graded cell, in notebook order.

    Each label is unique among the graded cells: where the lesson leaves one unnamed, the label is
    made up in a fixed way. Several graded cells under one heading without parts become "Exercise 3a",
    "Exercise 3b", ... in order (their answer cells keep "Exercise 3"); a graded cell above every
    exercise heading is named by its grade_id; a label that would repeat an earlier graded cell's gets
    its grade_id after it: "Exercise 2 (test_x)".
    """
    places: dict[str, tuple[int, str | None, str]] = {}  # grade_id -> (heading's serial, its number, part letter)
    place: tuple[int, str | None, str] = (0, None, "")
    for cell in nb.cells:
        if cell.get("cell_type") == "markdown":
            place = _exercise_after(cell.get("source", ""), place)
            continue
        name = grade_id(cell)
        if name and name not in places and (is_graded(cell) or kind(cell) == "solution"):
            places[name] = place
    graded = set(test_points(nb))
    # Several graded cells in one place the lesson did not split into parts: a, b, c in order.
    crowded: dict[tuple[int, str | None, str], list[str]] = {}
    for name, (serial, number, part) in places.items():
        if name in graded and number is not None and not part:
            crowded.setdefault((serial, number, part), []).append(name)
    letters = {name: chr(ord("a") + i) if i < 26 else f"-{i + 1}"
               for names in crowded.values() if len(names) > 1 for i, name in enumerate(names)}
    labels, taken = {}, set()
    for name, (_, number, part) in places.items():
        label = name if number is None else f"Exercise {number}{letters.get(name, part)}"
        if name in graded:
            if label in taken:
                label = f"{label} ({name})"
            taken.add(label)
        labels[name] = label
    return labels


def _exercise_after(source: object, place: tuple[int, str | None, str]) -> tuple[int, str | None, str]:
    """(heading's serial, exercise number, part letter) in force after a markdown cell, given those before it."""
    serial, number, part = place
    text = source if isinstance(source, str) else "".join(str(line) for line in source or [])
    fenced, paragraph_start = False, True
    for line in text.splitlines():
        if FENCE.match(line):
            fenced, paragraph_start = not fenced, False
            continue
        if fenced:
            continue
        stripped = line.strip()
        if heading := EXERCISE_HEADING.match(stripped):
            serial, number, part = serial + 1, heading.group(1), ""
        elif paragraph_start and number is not None and (marker := PART_MARKER.match(stripped)):
            part = marker.group(1)
        paragraph_start = not stripped or stripped.startswith("#")
    return serial, number, part
