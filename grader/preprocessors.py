"""Small nbgrader preprocessors, one job each, added to nbgrader's pipelines by configuration."""

import re

from nbgrader.preprocessors import NbGraderPreprocessor

# nbval's cell markers (`# NBVAL_IGNORE_OUTPUT`, `# NBVAL_SKIP`, ...), each alone on its line.
NBVAL_MARKER = re.compile(r"^[ \t]*# ?NBVAL_[A-Z_]+[ \t]*\n?", re.MULTILINE)


class StripPairingMetadata(NbGraderPreprocessor):
    """Drop jupytext's pairing metadata from a released notebook.

    Reference notebooks in solutions/ are paired with a text source (`solutions/<lesson>.py`).
    A student's copy must not carry that pairing, or JupyterLab with jupytext would write a
    stray `.py` file next to the lesson every time the student saves.
    """

    def preprocess(self, nb, resources):
        nb.metadata.pop("jupytext", None)
        return nb, resources


class StripNbvalMarkers(NbGraderPreprocessor):
    """Remove nbval's marker comments from code cells: they instruct the course's CI, not the student."""

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.source = NBVAL_MARKER.sub("", cell.source)
        return nb, resources
