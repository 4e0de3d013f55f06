"""The pristine releases of a student distribution: where its self-check finds the original locked cells.

A student distribution (`make dist`, grader/authoring/dist.py) has no solutions/ to build a release
from. It ships each lesson's released notebook twice: in `lessons/<id>/<id>.ipynb` for the student
to work in, and untouched in `.course/releases/<id>.ipynb` (written read-only), whose SHA-256 is
recorded in `.course/manifest.json`. The distribution's `grader/course.py` names that folder
(`RELEASES`) and lists its lessons from the manifest; the course repository's does neither, and
there the self-check builds each release from solutions/ instead (`grader.student.check`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from grader import course
from grader.errors import DamagedCopy

MANIFEST = "manifest.json"  # in the parent folder of RELEASES, i.e. .course/manifest.json


def folder() -> Path | None:
    """`.course/releases` in a student distribution; None in the course repository."""
    where = getattr(course, "RELEASES", None)
    return Path(where) if where is not None else None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest(releases: Path) -> dict:
    """The distribution's manifest: {"releases": {lesson: sha256}, "files": {path: sha256}}."""
    path = releases.parent / MANIFEST
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise DamagedCopy(f"this copy of the course is damaged: cannot read {path} ({error}); "
                          "download the course again") from error


def lesson_ids(releases: Path) -> list[str]:
    """The lessons of the distribution, in order, as its manifest lists them."""
    return sorted(manifest(releases)["releases"])


def pristine(lesson: str) -> NotebookNode | None:
    """The released notebook of `lesson` as the distribution shipped it, or None outside a distribution.

    Refuses (DamagedCopy) a pristine copy that is missing or whose bytes no longer match the
    manifest's checksum: the self-check would otherwise compare the student's work with a damaged
    original.
    """
    releases = folder()
    if releases is None:
        return None
    expected = manifest(releases)["releases"].get(lesson)
    path = releases / f"{lesson}.ipynb"
    try:
        data = path.read_bytes()
    except OSError as error:
        raise DamagedCopy(f"this copy of the course is damaged: the original of {lesson} ({path}) cannot be "
                          f"read ({error}); download the course again") from error
    if expected is None or sha256(data) != expected:
        raise DamagedCopy(f"this copy of the course is damaged: the original of {lesson} ({path}) was changed "
                          "(its checksum is not the one in .course/manifest.json); download the course again")
    return nbformat.reads(data.decode("utf-8"), as_version=4)
