"""Helpers the lessons import in their setup cell: how large a demonstration runs, how figures are finished.

A lesson's demonstrations (cells that only show or time something, and grade nothing) run in full
when you run the notebook. While the notebook is being checked (`make check`, JupyterLab's
Validate button) or graded, nobody reads their output, and they may run a smaller version to
save time: `demo_size(full=..., small=...)` picks the size, `full_demos()` says whether
optional extras (widget redraws, numbers printed in heatmap cells, comparisons with other
libraries) run, and `tidy_figures()` turns on matplotlib's constrained layout only for the full
run. No graded exercise depends on them, and what a lesson's text says holds at both sizes.

The lessons import this module by name (`import lesson_helpers`), from the course's root folder:
the course's environment, `make lab`, `make check` and the grading kernels all put it in reach.
It reads nbgrader's NBGRADER_EXECUTION, which is "validate" in a checking kernel and "autograde"
in a grading kernel, each time it is asked, never at import.
"""

from __future__ import annotations

import os

__all__ = ["demo_size", "full_demos", "tidy_figures"]


SMALL_DEMOS = {"validate", "autograde"}  # NBGRADER_EXECUTION while a notebook is checked or graded


def full_demos() -> bool:
    """True when demonstrations run in full: always, except while the notebook is being checked or graded."""
    return os.environ.get("NBGRADER_EXECUTION") not in SMALL_DEMOS


def demo_size(*, full, small):
    """`full` for the demonstration's size; `small` instead while the notebook is being checked or graded.

    Use it only for cells that grade nothing, and print the size the cell ran (or say in the
    text what changes), so that everything printed stays true at both sizes.
    """
    return full if full_demos() else small


def tidy_figures() -> None:
    """Lay out every later figure with matplotlib's constrained layout (labels and colourbars do not overlap).

    While the notebook is being checked or graded the layout pass is skipped; the figures are then drawn
    with a fixed spacing between panels, and cost far less.
    """
    import matplotlib.pyplot as plt

    plt.rcParams["figure.constrained_layout.use"] = full_demos()
