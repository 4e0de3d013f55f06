"""Feedback step: nbgrader's ClearHiddenTests, on the test cells only.

Hidden tests live only in test cells, which the autograde step restored from the gradebook. nbgrader's
own step looks at every cell and fails the whole feedback page when a student's cell holds a
`### BEGIN HIDDEN TESTS` line (with or without its END): the student then gets no page and never
learns why. Here a student's cell keeps whatever it says; it hides nothing of the instructor's.
"""

from __future__ import annotations

from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests as NbgraderClearHiddenTests


class ClearHiddenTests(NbgraderClearHiddenTests):
    """nbgrader's ClearHiddenTests, skipping every cell that is not a test cell."""

    def preprocess_cell(self, cell, resources, cell_index):
        if not utils.is_grade(cell):
            return cell, resources
        return super().preprocess_cell(cell, resources, cell_index)
