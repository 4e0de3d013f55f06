"""Small nbgrader preprocessors, one job each, added to nbgrader's pipelines by configuration."""

from nbgrader.preprocessors import NbGraderPreprocessor


class StripPairingMetadata(NbGraderPreprocessor):
    """Drop jupytext's pairing metadata from a released notebook.

    Reference notebooks in solutions/ are paired with a text source (`solutions/<lesson>.py`).
    A student's copy must not carry that pairing, or JupyterLab with jupytext would write a
    stray `.py` file next to the lesson every time the student saves.
    """

    def preprocess(self, nb, resources):
        nb.metadata.pop("jupytext", None)
        return nb, resources
