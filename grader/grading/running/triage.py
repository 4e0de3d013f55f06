"""What is wrong with a submission, before grading (can it be graded, what did the student change)
and after (what happened while its cells ran). Nothing is graded here.

Findings are `Flag`s: a name from FLAGS and the cell it concerns. In the grades CSV a flag is
written `name:cell` (`str(flag)`), and `Flag.parse` reads it back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from grader import cell_roles
from grader.pipeline.guarded_execute import (
    GRADER_UID,
    KERNEL_DIED,
    LIMIT_EXCEEDED,
    OUTPUT_CAPPED,
    SUBMISSION_TIMEOUT,
    UNSAFE,
    WATCHDOG_ONLY,
)
from grader.pipeline.repair_cells import STRIPPED, RepairCells, refusal


@dataclass(frozen=True)
class Kind:
    """One kind of flag: what it says (with `{}` for the cell), and whether a person should look."""

    text: str
    review: bool = False


FLAGS = {
    "metadata-restored": Kind("nbgrader metadata was stripped; put back from the release by position", review=True),
    "test-cell-missing": Kind("test cell {} was deleted; put back and run", review=True),
    "test-cell-edited": Kind("test cell {} was edited; the original was run", review=True),
    "locked-cell-missing": Kind("locked cell {} was deleted; put back", review=True),
    "locked-cell-edited": Kind("locked cell {} was edited; the original was put back", review=True),
    "solution-cell-missing": Kind("no cell is marked as the answer cell {} (deleted or re-created)", review=True),
    "cell-type-changed": Kind("the type of cell {} was changed; changed back"),
    "metadata-edited": Kind("the nbgrader metadata of cell {} was edited; put back from the gradebook", review=True),
    "points-edited": Kind("the points of test cell {} were edited; put back from the gradebook", review=True),
    "cell-pasted": Kind("cell {} appears more than once (pasted); each copy ran as an ordinary cell"),
    "unknown-cell": Kind("cell {} has nbgrader metadata the lesson does not know; graded as an ordinary cell",
                         review=True),
    "kernel-died": Kind("the kernel died in {}; later cells were not run", review=True),
    "timeout": Kind("{} ran past the time limit"),
    "memory-limit": Kind("{} ran out of memory (the memory limit)"),
    "output-truncated": Kind("output of {} was truncated"),
    "disk-limit": Kind("{} filled a writable folder of the sandbox to its size limit, or a file to the file size "
                       "limit; the write was refused", review=True),
    "limit-exceeded": Kind("{} went over a limit of the sandbox (memory or processes); the kernel was stopped",
                           review=True),
    "unsafe-no-sandbox": Kind("graded without the sandbox (--unsafe-no-sandbox): the result cannot be trusted",
                              review=True),
    "no-cgroup": Kind("the kernel had no cgroup of its own: memory was only watched by polling, and time limits "
                      "counted wall time"),
    "grader-uid": Kind("the kernel ran as the grader's own host uid (an ordinary user has no other to give it), "
                       "uid 65534 without capabilities in its user namespace"),
    "manual-grade": Kind("nbgrader asks for manual grading of {}", review=True),
    "feedback-failed": Kind("feedback could not be generated", review=True),
}


@dataclass(frozen=True)
class Flag:
    """A finding about one submission: `name` (a key of FLAGS) and the cell it concerns, if any."""

    name: str
    cell: str = ""

    def __post_init__(self) -> None:
        if self.name not in FLAGS:
            raise ValueError(f"unknown flag {self.name!r}")

    def __str__(self) -> str:
        return f"{self.name}:{self.cell}" if self.cell else self.name

    @classmethod
    def parse(cls, text: str) -> Flag:
        name, _, cell = text.partition(":")
        return cls(name, cell)

    @property
    def needs_review(self) -> bool:
        return FLAGS[self.name].review

    def describe(self) -> str:
        return FLAGS[self.name].text.format(self.cell or "a cell")


# Error outputs that say how a cell ended: nbclient's time-out, a MemoryError under the memory limit,
# and grader.pipeline.guarded_execute's own (a dead or stopped kernel, dropped output, the notebook's
# time limit).
ERRORS = {"CellTimeoutError": "timeout", SUBMISSION_TIMEOUT: "timeout", "MemoryError": "memory-limit",
          KERNEL_DIED: "kernel-died", LIMIT_EXCEEDED: "limit-exceeded", OUTPUT_CAPPED: "output-truncated"}


# The start of an OSError's message when a write went over a tmpfs's size (ENOSPC) or RLIMIT_FSIZE (EFBIG).
DISK_FULL = ("[Errno 28] ", "[Errno 27] ")


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


def inspect_submission(nb: NotebookNode, release: NotebookNode, others: dict[str, set[str]], *,
                       limits: RepairCells) -> tuple[list[Flag], str | None]:
    """(flags, reason it cannot be graded or None) for a submission compared with its release.

    `others` maps the course's other lessons to their grade_ids, to recognise a notebook handed in
    for the wrong lesson; `limits` the course's size limits (grader.pipeline.repair_cells.size_limits), so
    that the batch refuses exactly what nbgrader's own step refuses.
    """
    cells, expected = cell_roles.cells_by_id(nb), cell_roles.cells_by_id(release)
    refused = refusal(nb, release, others, limits)
    if refused:
        return [], refused
    if not cells:
        if cell_roles.lines_up(nb, release):
            return [Flag("metadata-restored")], None
        return [], STRIPPED
    flags = []
    for grade_id, ref in expected.items():
        role = "test" if cell_roles.is_graded(ref) else "solution" if cell_roles.kind(ref) == "solution" else "locked"
        cell = cells.get(grade_id)
        if cell is None:
            flags.append(Flag(f"{role}-cell-missing", grade_id))
            continue
        if cell.cell_type != ref.cell_type:
            flags.append(Flag("cell-type-changed", grade_id))
        if cell_roles.is_locked(ref) and cell.source != ref.source:
            flags.append(Flag(f"{role}-cell-edited", grade_id))
        if (cell_roles.kind(cell), cell_roles.is_graded(cell), cell_roles.is_locked(cell)) != (
                cell_roles.kind(ref), cell_roles.is_graded(ref), cell_roles.is_locked(ref)):
            flags.append(Flag("metadata-edited", grade_id))
        elif cell_roles.is_graded(ref) and cell_roles.meta(cell).get("points") != cell_roles.meta(ref).get("points"):
            flags.append(Flag("points-edited", grade_id))
    ids = [cell_roles.grade_id(cell) for cell in nb.cells if cell_roles.grade_id(cell)]
    flags += [Flag("cell-pasted", grade_id) for grade_id in dict.fromkeys(ids) if ids.count(grade_id) > 1]
    flags += [Flag("unknown-cell", cell_id) for cell_id in cells if cell_id not in expected]
    flags += [Flag("unknown-cell", f"cell {index}") for index, cell in enumerate(nb.cells, start=1)
              if cell_roles.meta(cell) and not cell_roles.grade_id(cell)]
    return flags, None


def run_flags(autograded: NotebookNode) -> list[Flag]:
    """Flags for what happened while the cells ran: time-outs, the memory limit, a dead kernel,
    truncated output."""
    flags: list[Flag] = [Flag("unsafe-no-sandbox")] if autograded.metadata.get(UNSAFE) else []
    flags += [Flag("no-cgroup")] if autograded.metadata.get(WATCHDOG_ONLY) else []
    flags += [Flag("grader-uid")] if autograded.metadata.get(GRADER_UID) else []
    for index, cell in enumerate(autograded.cells, start=1):
        where = cell_roles.grade_id(cell) or f"cell {index}"
        for output in cell.get("outputs", []):
            names = []
            if output.output_type == "error":
                if output.ename in ERRORS:
                    names.append(ERRORS[output.ename])
                if "... Traceback truncated ..." in output.get("traceback", []):
                    names.append("output-truncated")
                if str(output.get("evalue", "")).startswith(DISK_FULL):
                    names.append("disk-limit")
            elif "... Output truncated ..." in output.get("text", ""):
                names.append("output-truncated")
            flags += [flag for name in names if (flag := Flag(name, where)) not in flags]
    return flags


def kernel_deaths(autograded: NotebookNode) -> list[str]:
    """What the grader wrote where a kernel died or was stopped (with what it said), one text per cell."""
    return [f"{cell_roles.grade_id(cell) or f'cell {index}'}: {output.evalue}"
            for index, cell in enumerate(autograded.cells, start=1) for output in cell.get("outputs", [])
            if output.output_type == "error" and output.get("ename") in (KERNEL_DIED, LIMIT_EXCEEDED)]


def needs_review(flags: list[Flag]) -> bool:
    return any(flag.needs_review for flag in flags)


def failure_reason(result: dict, what: str = "nbgrader could not grade it") -> str:
    """One line saying why nbgrader could not grade a submission (or, with `what`, do another step such as
    making its feedback page), from its API result."""
    text = "\n".join([result.get("log") or "", result.get("error") or ""])
    lines = [line.removeprefix("[ERROR] ").strip() for line in text.splitlines()]
    exceptions = [line for line in lines if re.match(r"^[\w.]+(Error|Exception|Exit): ", line)
                  and "NbGraderException" not in line]
    if exceptions:
        return f"{what}: {exceptions[0]}"
    errors = [line for line in text.splitlines() if line.startswith("[ERROR]") and "Traceback" not in line]
    return f"{what}: " + (errors[0].removeprefix("[ERROR] ") if errors else "no reason given")
