"""Each lesson's notebook as released: where the self-check takes the original locked cells from.

Not from the student's notebook (a deleted cell leaves no trace there, and checksums in the
metadata travel with any edit), and not from git (the student may have committed their work, or
have no git at all). In a student distribution (`make dist`), the originals are the pristine
copies it ships in `.course/releases/<id>.ipynb` (written read-only), each checked against its
SHA-256 in `.course/manifest.json`. The course repository has no such copies: its nbgrader
configuration names, as `Originals.builder`, the function that builds the release in memory from
solutions/ (grader/authoring/release_in_memory.py), so that this module imports none of the
instructor's code.
"""

from __future__ import annotations

import hashlib

import nbformat
from nbformat import NotebookNode
from traitlets import Unicode, import_item
from traitlets.config import Config, Configurable

from grader.errors import DamagedCopy
from grader.student import layout


class Originals(Configurable):
    """Where the released notebook of each lesson comes from."""

    builder = Unicode("", help="Import name of a function (lesson, config) -> the lesson's released notebook, "
                               "built in memory. The course repository sets it; empty in a student distribution, "
                               "whose originals are the pristine copies in .course/releases/.").tag(config=True)

    def notebook(self, lesson: str) -> NotebookNode:
        if self.builder:
            return import_item(self.builder)(lesson, self.config)
        return pristine(lesson)


def original_notebook(lesson: str, config: Config | None = None) -> NotebookNode:
    """The notebook of `lesson` exactly as released, as `config` (default: this copy's) says to find it."""
    return Originals(config=config if config is not None else layout.nbgrader_config()).notebook(lesson)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pristine(lesson: str) -> NotebookNode:
    """The released notebook of `lesson` as the distribution shipped it.

    Refuses (DamagedCopy) a pristine copy that is missing or whose bytes no longer match the
    manifest's checksum: the self-check would otherwise compare the student's work with a damaged
    original.
    """
    expected = layout.manifest()["releases"].get(lesson)
    path = layout.RELEASES / f"{lesson}.ipynb"
    try:
        data = path.read_bytes()
    except OSError as error:
        raise DamagedCopy(f"this copy of the course is damaged: the original of {lesson} ({path}) cannot be "
                          f"read ({error}); download the course again") from error
    if expected is None or sha256(data) != expected:
        raise DamagedCopy(f"this copy of the course is damaged: the original of {lesson} ({path}) was changed "
                          "(its checksum is not the one in .course/manifest.json); download the course again")
    return nbformat.reads(data.decode("utf-8"), as_version=4)
