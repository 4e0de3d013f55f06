"""Points, as every output of the course computes and writes them: a student's total, and its text.

One home, so that the terminal, the log, the grades CSV, the LMS import files and the student's
feedback page never disagree about a number (`number`) or about when a total exists (`total`).
"""

from __future__ import annotations

from collections.abc import Mapping

GRADED = "graded"


def total(status: str, scores: Mapping[str, float | None]) -> float | None:
    """The sum of `scores`, or None unless the submission was graded and every exercise has points."""
    if status != GRADED or any(score is None for score in scores.values()):
        return None
    return float(sum(score for score in scores.values() if score is not None))


def number(value: float | None, missing: str = "") -> str:
    """Points as a person writes them, everywhere: at most two decimals, no trailing zeros ("7", "6.3",
    "0.33"); `missing` for none."""
    if value is None:
        return missing
    text = f"{float(value):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text
