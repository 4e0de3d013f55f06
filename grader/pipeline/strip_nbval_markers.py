"""Release step, first of all: remove nbval's marker comments, which instruct the course's CI, not the student."""

import re

from nbgrader.preprocessors import NbGraderPreprocessor

# nbval's cell markers (`# NBVAL_IGNORE_OUTPUT`, `# NBVAL_SKIP`, ...), each alone on its line.
NBVAL_MARKER = re.compile(r"^[ \t]*# ?NBVAL_[A-Z_]+[ \t]*(\n|$)", re.MULTILINE)


class StripNbvalMarkers(NbGraderPreprocessor):
    """Drop every line of a code cell that is only an nbval marker.

    It runs before nbgrader locks cells and computes checksums, so the gradebook and the release agree.
    """

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.source = NBVAL_MARKER.sub("", cell.source)
        return nb, resources
