"""Release step, last: drop jupytext's pairing metadata from the student's copy."""

from nbgrader.preprocessors import NbGraderPreprocessor


class StripPairingMetadata(NbGraderPreprocessor):
    """Remove `metadata.jupytext`.

    Reference notebooks are paired with a text source (`solutions/<lesson>.py`); a student's copy
    that kept the pairing would make JupyterLab with jupytext write a stray `.py` on every save.
    """

    def preprocess(self, nb, resources):
        nb.metadata.pop("jupytext", None)
        return nb, resources
