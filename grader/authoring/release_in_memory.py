"""A lesson's student notebook exactly as `make release` makes it, built in memory from solutions/.

The course's self-check takes its original locked cells from here (the course's nbgrader
configuration names `build_release` as `Originals.builder`, grader/student/originals.py), and
`make dist` uses it to refuse a stale lessons/.
"""

from __future__ import annotations

import nbformat
from nbformat import NotebookNode
from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import SaveCells
from traitlets import import_item
from traitlets.config import Config

from grader.course import nbgrader_config, reference_notebook


def build_release(lesson: str, config: Config | None = None) -> NotebookNode:
    """The student notebook of `lesson` as released, written nowhere.

    The reference notebook goes through the course's `GenerateAssignment` preprocessors (solutions
    replaced by stubs, hidden tests removed, cells locked, checksums computed), except `SaveCells`,
    which writes the test cells to the instructor's gradebook.
    """
    config = config if config is not None else nbgrader_config()
    path = reference_notebook(lesson)
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    generator = GenerateAssignment(config=config)
    resources = {"nbgrader": {"assignment": lesson, "notebook": lesson}, "metadata": {"path": str(path.parent)}}
    for preprocessor in generator.preprocessors:
        if isinstance(preprocessor, str):
            preprocessor = import_item(preprocessor)
        if preprocessor is SaveCells:
            continue
        nb, resources = preprocessor(parent=generator).preprocess(nb, resources)
    return nb
