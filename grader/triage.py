"""What is wrong with a submission: before grading (can it be graded at all, what did the student
change in the exercise cells) and after (what happened when its cells ran).

Everything here reads notebooks and returns reasons and flags; nothing is graded here. A flag is
`name` or `name:detail` (the cell's grade_id), as it appears in the grades CSV.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from grader.sandbox import KERNEL_DIED

# Flags an instructor should look at before publishing the grade (the rest are informational).
REVIEW = {"metadata-restored", "test-cell-missing", "test-cell-edited", "locked-cell-missing",
          "locked-cell-edited", "solution-cell-missing", "kernel-died", "manual-grade", "feedback-failed"}

DESCRIPTIONS = {
    "metadata-restored": "nbgrader metadata was stripped; put back from the release by position",
    "test-cell-missing": "test cell {} was deleted; put back and run",
    "test-cell-edited": "test cell {} was edited; the original was run",
    "locked-cell-missing": "locked cell {} was deleted; put back",
    "locked-cell-edited": "locked cell {} was edited; the original was put back",
    "solution-cell-missing": "no cell is marked as the answer cell {} (deleted or re-created)",
    "cell-type-changed": "the type of cell {} was changed; changed back",
    "kernel-died": "the kernel died in {}; later cells were not run",
    "timeout": "{} ran past the time limit",
    "memory-limit": "{} ran out of memory (the memory limit)",
    "output-truncated": "output of {} was truncated",
    "manual-grade": "nbgrader asks for manual grading of {}",
    "feedback-failed": "feedback could not be generated",
}


# Error outputs that say how a cell ended: nbclient's time-out, a MemoryError under the memory limit,
# grader.sandbox's dead kernel.
ERRORS = {"CellTimeoutError": "timeout", "MemoryError": "memory-limit", KERNEL_DIED: "kernel-died"}


class Unreadable(Exception):
    """The submitted file cannot be graded at all; the message says why."""


def read_submission(path: Path) -> NotebookNode:
    """The submitted notebook, or `Unreadable` with the reason it cannot be graded."""
    data = path.read_bytes()
    if not data.strip():
        raise Unreadable("empty file")
    try:
        content = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Unreadable(f"not a notebook: invalid JSON ({exc})") from None
    if not isinstance(content, dict) or "nbformat" not in content:
        raise Unreadable("not a notebook: JSON without the notebook format")
    try:
        return nbformat.reads(data.decode(), as_version=4)
    except Exception as exc:  # nbformat raises several kinds for malformed notebooks
        raise Unreadable(f"not a readable notebook ({type(exc).__name__}: {exc})") from None


def nbgrader_cells(nb: NotebookNode) -> dict[str, NotebookNode]:
    """grade_id -> cell, for every cell carrying nbgrader metadata with an id (first one wins)."""
    cells = {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id and grade_id not in cells:
            cells[grade_id] = cell
    return cells


def test_points(release: NotebookNode) -> dict[str, float]:
    """grade_id -> points of every autograded test cell, in notebook order."""
    return {cell.metadata.nbgrader["grade_id"]: float(cell.metadata.nbgrader["points"])
            for cell in release.cells if cell.metadata.get("nbgrader", {}).get("grade")}


def lines_up(nb: NotebookNode, release: NotebookNode) -> bool:
    """Whether `nb` has the release's cells one to one: same count and types, locked cells unedited."""
    if len(nb.cells) != len(release.cells):
        return False
    return all(cell.cell_type == ref.cell_type
               and (not ref.metadata.get("nbgrader", {}).get("locked") or cell.source == ref.source)
               for cell, ref in zip(nb.cells, release.cells, strict=True))


def check(nb: NotebookNode, release: NotebookNode, others: dict[str, set[str]]) -> tuple[list[str], str | None]:
    """(flags, reason it cannot be graded or None) for a submission compared with its release.

    `others` maps the course's other lessons to their grade_ids, to recognise a notebook handed in
    for the wrong lesson.
    """
    cells, expected = nbgrader_cells(nb), nbgrader_cells(release)
    if cells and not set(cells) & set(expected):
        which = sorted(lesson for lesson, ids in others.items() if set(cells) & ids)
        return [], "the notebook of another lesson" + (f" ({', '.join(which)})" if which else "")
    if not cells:
        if lines_up(nb, release):
            return ["metadata-restored"], None
        return [], "no nbgrader metadata left (re-saved by another editor?) and cells that do not match the release"
    flags = []
    for grade_id, ref in expected.items():
        meta = ref.metadata.nbgrader
        kind = "test" if meta.get("grade") else "solution" if meta.get("solution") else "locked"
        cell = cells.get(grade_id)
        if cell is None:
            flags.append(f"{kind}-cell-missing:{grade_id}")
            continue
        if cell.cell_type != ref.cell_type:
            flags.append(f"cell-type-changed:{grade_id}")
        if meta.get("locked") and cell.source != ref.source:
            flags.append(f"{kind}-cell-edited:{grade_id}")
    return flags, None


def run_flags(autograded: NotebookNode) -> list[str]:
    """Flags for what happened while the cells ran: time-outs, the memory limit, a dead kernel,
    truncated output."""
    flags = []
    for index, cell in enumerate(autograded.cells, start=1):
        where = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"
        for output in cell.get("outputs", []):
            names = []
            if output.output_type == "error":
                if output.ename in ERRORS:
                    names.append(ERRORS[output.ename])
                if "... Traceback truncated ..." in output.get("traceback", []):
                    names.append("output-truncated")
            elif "... Output truncated ..." in output.get("text", ""):
                names.append("output-truncated")
            flags += [f"{name}:{where}" for name in names if f"{name}:{where}" not in flags]
    return flags


def describe(flag: str) -> str:
    name, _, detail = flag.partition(":")
    return DESCRIPTIONS.get(name, name).format(detail or "a cell")


def needs_review(flags: list[str]) -> bool:
    return any(flag.partition(":")[0] in REVIEW for flag in flags)


def failure_reason(result: dict) -> str:
    """One line saying why nbgrader could not grade a submission, from its API result."""
    text = "\n".join([result.get("log") or "", result.get("error") or ""])
    lines = [line.removeprefix("[ERROR] ").strip() for line in text.splitlines()]
    exceptions = [line for line in lines if re.match(r"^[\w.]+(Error|Exception|Exit): ", line)
                  and "NbGraderException" not in line]
    if exceptions:
        return f"nbgrader could not grade it: {exceptions[0]}"
    errors = [line for line in text.splitlines() if line.startswith("[ERROR]") and "Traceback" not in line]
    return "nbgrader could not grade it: " + (errors[0].removeprefix("[ERROR] ") if errors else "no reason given")
