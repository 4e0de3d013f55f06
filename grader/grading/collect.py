"""Gather a lesson's submissions into nbgrader's submitted layout.

Submissions arrive in one of two ways:

- already in nbgrader's layout, `<submitted>/<student>/<lesson>/<lesson>.ipynb` (for example from
  `nbgrader collect`, or copied there by hand);
- as notebooks downloaded from a learning-management system, in a folder or a .zip, named by
  nbgrader's zip_collect conventions (`grader.course.SUBMISSION_REGEXP`), as students' `make
  submit` names them: `<lesson>_<student>_attempt_<YYYYMMDD-HHMMSS>_<lesson>.ipynb`.

Downloaded notebooks are copied into the submitted layout with the attempt's time in
`timestamp.txt` (which nbgrader reads); a student's latest attempt wins. A file that cannot be
attributed to a student of this lesson is not collected, and the reason is reported.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from grader.course import SUBMISSION_REGEXP, SUBMISSION_TIME_FORMAT


@dataclass(frozen=True)
class Skipped:
    """A file that was not collected, and why."""

    file: str
    reason: str


@dataclass
class Collected:
    students: list[str]  # every student with a submission of the lesson, sorted
    skipped: list[Skipped] = field(default_factory=list)
    copied: int = 0  # downloaded notebooks new or changed since the last collection
    superseded: int = 0  # older attempts of a student who submitted again


def collect(lesson: str, submitted: Path, source: Path | None = None) -> Collected:
    """Copy the downloads in `source` (a folder or .zip, if given) into `submitted`, then list the
    lesson's submissions found there."""
    skipped, copied, superseded = [], 0, 0
    if source is not None:
        latest: dict[str, tuple[str, str, bytes]] = {}
        for name, read in _downloads(source):
            attempt = parse_name(name, lesson)
            if isinstance(attempt, Skipped):
                skipped.append(attempt)
                continue
            student, timestamp = attempt
            if student in latest:
                superseded += 1
                if latest[student][0] >= timestamp:
                    continue
            latest[student] = (timestamp, name, read())
        for student, (timestamp, _, content) in sorted(latest.items()):
            copied += _store(submitted / student / lesson, lesson, timestamp, content)
    students, misplaced = _submitted(submitted, lesson)
    return Collected(students, skipped + misplaced, copied, superseded)


def parse_name(name: str, lesson: str) -> tuple[str, str] | Skipped:
    """(student, timestamp) from a downloaded file's name, or why the file is not collected."""
    expected = f"{lesson}_<student>_attempt_<YYYYMMDD-HHMMSS>_{lesson}.ipynb"
    match = re.fullmatch(SUBMISSION_REGEXP, name)
    if match is None or not name.endswith(".ipynb"):
        return Skipped(name, f"the file name does not follow {expected}")
    other = name.split("_", 1)[0]
    if other != lesson or match["file_id"] != f"{lesson}.ipynb":
        return Skipped(name, f"a submission for {other}, not {lesson}")
    try:
        datetime.strptime(match["timestamp"], SUBMISSION_TIME_FORMAT)
    except ValueError:
        return Skipped(name, f"the time in the file name is not YYYYMMDD-HHMMSS: {match['timestamp']}")
    return match["student_id"], match["timestamp"]


def _downloads(source: Path) -> Iterator[tuple[str, Callable[[], bytes]]]:
    """(file name, function returning its bytes) for every file of a folder or .zip."""
    def hidden(parts: tuple[str, ...]) -> bool:  # .DS_Store, __MACOSX/ and the like
        return any(part.startswith((".", "__MACOSX")) for part in parts)

    if source.is_dir():
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            if not hidden(path.relative_to(source).parts):
                yield path.name, path.read_bytes
    elif zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as archive:
            for info in sorted(archive.infolist(), key=lambda i: i.filename):
                parts = tuple(info.filename.split("/"))
                if not info.is_dir() and not hidden(parts):
                    yield parts[-1], lambda info=info: archive.read(info)
    else:
        raise SystemExit(f"{source}: not a folder or a .zip of downloaded submissions")


def _store(folder: Path, lesson: str, timestamp: str, content: bytes) -> bool:
    """Write one submission and its timestamp.txt; False when it was already there unchanged."""
    notebook, stamp = folder / f"{lesson}.ipynb", folder / "timestamp.txt"
    when = datetime.strptime(timestamp, SUBMISSION_TIME_FORMAT).strftime("%Y-%m-%d %H:%M:%S UTC")
    if notebook.is_file() and notebook.read_bytes() == content and stamp.is_file() and stamp.read_text() == when:
        return False
    folder.mkdir(parents=True, exist_ok=True)
    notebook.write_bytes(content)
    stamp.write_text(when)
    return True


def _submitted(submitted: Path, lesson: str) -> tuple[list[str], list[Skipped]]:
    """Students with `<student>/<lesson>/<lesson>.ipynb`, and folders holding some other notebook."""
    students, misplaced = [], []
    for folder in sorted(submitted.glob(f"*/{lesson}")):
        if (folder / f"{lesson}.ipynb").is_file():
            students.append(folder.parent.name)
        elif others := sorted(p.name for p in folder.glob("*.ipynb")):
            misplaced.append(Skipped(str(folder / others[0]),
                                     f"expected {lesson}.ipynb in {folder.parent.name}'s submission folder"))
    return students, misplaced
