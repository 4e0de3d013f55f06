"""Autograde step, sanitising: put a damaged submission back into a shape nbgrader can grade.

`RepairCells` takes the place of nbgrader's OverwriteCells (grader/pipeline). It does everything
OverwriteCells does (restores locked cells, cell types and points from the gradebook, and puts back
deleted test cells), and copes with the damage below, on which nbgrader 0.9 fails the whole submission
or grades what it should refuse:

- every cell lost its nbgrader metadata (the notebook was re-saved by an editor that drops it):
  if the cells still line up one to one with the released notebook, the release's metadata is
  put back by position; otherwise grading fails with that reason (grader.grading.running.triage reports it);
- a cell whose grade_id the gradebook does not know (a test cell pasted from another lesson, a
  made-up "bonus" cell), or nbgrader metadata without a grade_id: nbgrader 0.9 raises a KeyError
  and scores nothing; here the cell loses its nbgrader metadata and runs as an ordinary cell;
- nbgrader metadata edited on a known cell (`grade` set to false, say): nbgrader 0.9 fails with
  "Inconsistent checksums"; here the cell's role (grade, solution, task, locked) is put back from
  the gradebook before anything else is compared;
- stripped metadata with cells that do not line up with the release: refused with that reason,
  as `python -m grader autograde` refuses it (grader.grading.running.triage), so both paths agree;
- a cell pasted in JupyterLab (an exact copy of an answer or test cell, nbgrader metadata and all):
  nbgrader's DeduplicateIds empties the copy's metadata, and OverwriteCells then raises a KeyError;
  here the copy runs as an ordinary cell and costs nothing;
- the notebook of another lesson (no grade_id in common with the release): refused with that reason,
  as `python -m grader autograde` refuses it, so a plain `nbgrader autograde` does not grade it
  against this lesson's tests either;
- a notebook far larger than its release (`too_large`: more than `size_factor` times its cells or
  its source characters, plus a margin): refused before any kernel starts, with the reason;
- a test cell was deleted together with the exercise cell before it: nbgrader re-inserts a
  missing test cell right after the cell that precedes it in the source notebook, and raises a
  KeyError when that one is missing too. Here it goes after the closest earlier exercise cell
  that is still present, or before the closest later one (`grader.cell_roles.insertion_index`, which
  the students' self-check uses too).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import nbformat
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import OverwriteCells
from traitlets import Float, Integer

from grader import cell_roles
from grader.safe_text import for_terminal

STRIPPED = "no nbgrader metadata left (re-saved by another editor?) and cells that do not match the release"
ANOTHER_LESSON = "the notebook of another lesson"
SIZE_FACTOR, EXTRA_CELLS, EXTRA_CHARACTERS = 4.0, 200, 1024**2


def source_size(nb) -> int:
    """Characters of the notebook's cell sources and attachments (what grading renders, outputs aside)."""
    size = 0
    for cell in nb.cells:
        source = cell.get("source", "")
        size += len(source) if isinstance(source, str) else sum(len(str(line)) for line in source)
        attachments = cell.get("attachments")
        if isinstance(attachments, dict):
            size += sum(len(str(data)) for bundle in attachments.values() if isinstance(bundle, dict)
                        for data in bundle.values())
    return size


def too_large(nb, release, *, factor: float = SIZE_FACTOR, extra_cells: int = EXTRA_CELLS,
              extra_characters: int = EXTRA_CHARACTERS) -> str | None:
    """Why `nb` is far larger than its `release` in cells or source characters, or None when it is not."""
    cells, limit = len(nb.cells), int(factor * len(release.cells)) + extra_cells
    if cells > limit:
        return (f"far larger than its release: {cells} cells, where the release has {len(release.cells)} "
                f"(at most {limit} are graded)")
    size, limit = source_size(nb), int(factor * source_size(release)) + extra_characters
    if size > limit:
        return (f"far larger than its release: {size} characters of cells, where the release has "
                f"{source_size(release)} (at most {limit} are graded)")
    return None


def another_lesson(nb, release, others: dict[str, set[str]] | Callable[[], dict[str, set[str]]]) -> str | None:
    """The reason `nb` is another lesson's notebook (its grade_ids none of the release's), or None.

    `others` maps the course's other lessons to their grade_ids (or makes that map, only when it is
    needed), to name the lesson it belongs to.
    """
    cells = cell_roles.cells_by_id(nb)
    if not cells or set(cells) & set(cell_roles.cells_by_id(release)):
        return None
    others = others() if callable(others) else others
    which = sorted(lesson for lesson, ids in others.items() if set(cells) & ids)
    return ANOTHER_LESSON + (f" ({', '.join(which)})" if which else "")


def other_lessons(release_root: Path, lesson: str,
                  read: Callable[[Path], nbformat.NotebookNode] | None = None) -> dict[str, set[str]]:
    """The grade_ids of every released lesson under `release_root` but `lesson`, by lesson (its folder's name).

    `read` reads a released notebook (the batch passes one that reads each version once per process).
    """
    read = read or (lambda path: nbformat.read(path, as_version=4))
    return {path.parent.name: set(cell_roles.cells_by_id(read(path)))
            for path in sorted(release_root.glob("*/*.ipynb")) if path.parent.name != lesson}


def refusal(nb, release, others: dict[str, set[str]] | Callable[[], dict[str, set[str]]],
            limits: RepairCells) -> str | None:
    """Why `nb` is refused before any kernel starts, or None: the one rule of both nbgrader's step
    (`RepairCells`) and the batch's pre-check (grader.grading.running.triage).

    `limits` is a RepairCells configured as the course is (`size_limits(config)`), so that
    `c.RepairCells.size_factor`, `extra_cells` and `extra_characters` mean the same in both.
    """
    return too_large(nb, release, factor=limits.size_factor, extra_cells=limits.extra_cells,
                     extra_characters=limits.extra_characters) or another_lesson(nb, release, others)


class RepairCells(OverwriteCells):
    """nbgrader's OverwriteCells, also repairing stripped metadata, pasted cells and runs of deleted cells."""

    size_factor = Float(SIZE_FACTOR, help="A submission with more than this many times its release's cells or "
                                          "source characters (plus the margins below) is refused.").tag(config=True)
    extra_cells = Integer(EXTRA_CELLS, help="Cells a submission may add beyond size_factor times the release's."
                          ).tag(config=True)
    extra_characters = Integer(EXTRA_CHARACTERS, help="Characters of source a submission may add beyond "
                                                      "size_factor times the release's.").tag(config=True)

    def preprocess(self, nb, resources):
        self._release = self._read_release(resources["nbgrader"]["assignment"], resources["nbgrader"]["notebook"])
        self._roles = None
        if self._release is not None:
            assignment = resources["nbgrader"]["assignment"]
            refused = refusal(nb, self._release, lambda: other_lessons(self._release_root(), assignment), self)
            if refused:
                raise ValueError(refused)
        for index, cell in enumerate(nb.cells, start=1):
            if "nbgrader" in cell.get("metadata", {}) and not cell.metadata.nbgrader:
                # A pasted copy whose metadata nbgrader's DeduplicateIds emptied: an ordinary cell now.
                self.log.warning("Cell %d is a pasted copy of another cell: graded as an ordinary cell", index)
                del cell.metadata["nbgrader"]
        if self._release is not None and not cell_roles.cells_by_id(nb):
            if not cell_roles.lines_up(nb, self._release):
                raise ValueError(STRIPPED)
            self.log.warning("No nbgrader metadata in the submission: restoring it from the release by position")
            for cell, ref in zip(nb.cells, self._release.cells, strict=True):
                if cell_roles.meta(ref):
                    cell_roles.set_meta(cell, cell_roles.meta(ref))
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        info = cell_roles.meta(cell)
        if info:
            roles = self._gradebook_roles()
            grade_id = cell_roles.grade_id(cell)
            if grade_id not in roles:
                self.log.warning("Cell %s is not in the gradebook: graded as an ordinary cell",
                                 for_terminal(grade_id))
                cell_roles.set_meta(cell, None)
                return cell, resources
            for role, value in roles[grade_id].items():
                if info.get(role, False) != value:
                    self.report_change(grade_id, role, value, info.get(role, False))
                    info[role] = value
        return super().preprocess_cell(cell, resources, cell_index)

    def missing_cell_transform(self, source_cell, max_score, is_solution=False, is_task=False):
        """nbgrader's re-created cell, with a cell id (nbformat warns about a cell without one)."""
        cell = super().missing_cell_transform(source_cell, max_score, is_solution=is_solution, is_task=is_task)
        cell.id = re.sub(r"[^A-Za-z0-9_-]", "-", f"restored-{source_cell.name}")[:64]
        return cell

    def _gradebook_roles(self) -> dict[str, dict[str, bool]]:
        """grade_id -> its role flags, for every cell the gradebook knows in this notebook."""
        if self._roles is None:
            source = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
            grade = {c.name for c in source.grade_cells}
            solution = {c.name for c in source.solution_cells}
            task = {c.name for c in source.task_cells}
            self._roles = {c.name: {"grade": c.name in grade, "solution": c.name in solution, "task": c.name in task,
                                    "locked": bool(c.locked)} for c in source.source_cells}
            self._roles |= {name: {"grade": name in grade, "solution": name in solution, "task": name in task}
                            for name in (grade | solution | task) - set(self._roles)}
        return self._roles

    def add_missing_grade_cells(self, nb, resources):
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        sources = {cell.name: cell for cell in source_nb.source_cells}
        solutions = {cell.name for cell in source_nb.solution_cells}
        # Notebook order of the exercise cells: the release's, or the gradebook's (nbgrader's own).
        order = [name for name in (cell_roles.cells_by_id(self._release) if self._release else sources)
                 if name in sources]
        order += [name for name in sources if name not in order]
        present = {cell_roles.grade_id(cell) for cell in nb.cells}
        for grade_cell in sorted(source_nb.grade_cells, key=lambda cell: order.index(cell.name)):
            if grade_cell.name in present:
                continue
            self.log.warning("Missing grade cell %s encountered, adding to notebook", grade_cell.name)
            cell = self.missing_cell_transform(sources[grade_cell.name], grade_cell.max_score,
                                               is_solution=grade_cell.name in solutions)
            nb.cells.insert(cell_roles.insertion_index(nb.cells, order, grade_cell.name), cell)
            present.add(grade_cell.name)
        return nb, resources

    def _release_root(self) -> Path:
        """The folder of every lesson's release (nbgrader's release directory)."""
        coursedir = CourseDirectory(config=self.config)
        return Path(coursedir.format_path(coursedir.release_directory, ".", "x")).parent

    def _read_release(self, assignment: str, name: str):
        coursedir = CourseDirectory(config=self.config)
        path = Path(coursedir.format_path(coursedir.release_directory, ".", assignment)) / f"{name}.ipynb"
        return nbformat.read(path, as_version=4) if path.is_file() else None


def size_limits(config) -> RepairCells:
    """The size limits of `config` (its `RepairCells` settings), for `refusal` outside nbgrader's pipeline."""
    return RepairCells(config=config)
