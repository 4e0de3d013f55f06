"""Never overwrite a student's work when releasing: which lesson notebooks may be replaced, and backups.

`make release` replaces `lessons/<id>/<id>.ipynb` (nbgrader's generate_assignment deletes the whole
lesson folder, `.ipynb_checkpoints` included). A notebook may be replaced only when it is the
release it would replace: the bytes the last release wrote (their SHA-256 is recorded among
the course's facts of the term, `term/releases.json`: grader.layout.Layout.releases), or the bytes
committed in git (a fresh clone), or, in a copy without git (a zip download), the very notebook a
release of solutions/ makes now (built in memory, grader/authoring/release_in_memory.py), or no
notebook at all. Anything else is someone's work:
releasing refuses, naming the file, unless `--force`, which first copies the notebook, and
JupyterLab's checkpoint of it, to a dated backup next to the lesson folder
(`lessons/<id>.backup-<YYYYMMDD-HHMMSS>.ipynb`), outside what a release or `make dist` touches.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import nbformat
from nbformat import NotebookNode


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def recorded(releases: Path) -> dict[str, str]:
    """notebook path -> SHA-256 of the bytes the last release wrote there, as the record `releases` has it."""
    try:
        return json.loads(releases.read_text())
    except (OSError, ValueError):
        return {}


def record(releases: Path, notebook: Path) -> None:
    """Remember in the record `releases` the bytes a release just wrote to `notebook`."""
    known = recorded(releases)
    known[str(notebook.resolve())] = _sha(notebook)
    releases.parent.mkdir(parents=True, exist_ok=True)
    releases.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")


def _committed(notebook: Path) -> bool:
    """Whether `notebook` holds exactly the bytes git has for it at HEAD (False without git)."""
    try:
        head = subprocess.run(["git", "rev-parse", f"HEAD:./{notebook.name}"], cwd=notebook.parent,
                              capture_output=True, text=True, timeout=30)
        here = subprocess.run(["git", "hash-object", notebook.name], cwd=notebook.parent,
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return head.returncode == 0 and here.returncode == 0 and head.stdout.strip() == here.stdout.strip()


def _released_now(notebook: Path, released: Callable[[], NotebookNode]) -> bool:
    """Whether `notebook` holds exactly the notebook that `released()` makes (a release built in memory)."""
    try:
        return nbformat.read(notebook, as_version=nbformat.NO_CONVERT) == released()
    except Exception:  # unreadable, or no release can be made: not provably the release
        return False


def is_work(notebook: Path, releases: Path, released: Callable[[], NotebookNode] | None = None) -> bool:
    """Whether replacing `notebook` would lose something: it exists and is not the release it would replace.

    `released` makes the lesson's release in memory (release_in_memory.build_release): the notebook
    is no one's work when it is that release, as in a copy of the course without git.
    """
    if not notebook.is_file():
        return False
    if recorded(releases).get(str(notebook.resolve())) == _sha(notebook) or _committed(notebook):
        return False
    return not (released is not None and _released_now(notebook, released))


def backup(notebook: Path, *, now: datetime | None = None) -> list[Path]:
    """Copy `notebook` and its JupyterLab checkpoint next to its lesson folder; return the copies."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    folder = notebook.parent
    copies = []
    checkpoint = folder / ".ipynb_checkpoints" / f"{notebook.stem}-checkpoint.ipynb"
    for source, suffix in [(notebook, ""), (checkpoint, "-checkpoint")]:
        if source.is_file():
            target = folder.parent / f"{folder.name}.backup-{stamp}{suffix}.ipynb"
            shutil.copy2(source, target)
            copies.append(target)
    return copies
