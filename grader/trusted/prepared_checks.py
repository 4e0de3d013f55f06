"""The trusted checks of one grading run, as the grading process prepares and keeps them while the kernel runs.

`grader.pipeline.inject_trusted_checks` fills a `Run` into nbconvert's resources under RESOURCE;
`grader.pipeline.verify_trusted_checks` takes it out. The kernel never sees it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.trusted.spec import Check

RESOURCE = "trusted_checks"  # key in nbconvert's resources, and of the verdicts in the notebook's metadata
HARNESS = Path(__file__).resolve().parent / "harness.py"  # the kernel-side code, run by the bootstrap cell
FAILURE = "HiddenTestFailure"  # ename of the error output a failed trusted check gets


@dataclass
class Prepared:
    """One check of one grading run, as the grading process keeps it while the kernel runs."""

    check: Check
    source: str  # the test cell's source as restored from the gradebook
    expected: list[Any]  # the reference's outcome for each call
    sent: list[tuple]  # each call's positional arguments, exactly as the kernel received them
    n_args: list[int | None]  # what decode_results expects back for each call
    rngs: list[tuple] = field(default_factory=list)  # per call: the states its Rng generators must end in
    written: list[tuple] = field(default_factory=list)  # per call: the arguments as the reference left them


@dataclass
class Run:
    token: str  # names this grading run; results carrying another token are rejected
    seed: int
    bootstrap_id: str
    entry: str  # the kernel-side name of the harness
    prepared: dict[str, Prepared]
