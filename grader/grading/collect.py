"""Gather a lesson's submissions into nbgrader's submitted layout, trusting no file name blindly.

Submissions arrive in one of two ways:

- already in nbgrader's layout, `<submitted>/<student>/<lesson>/<lesson>.ipynb` (for example from
  `nbgrader collect`, or copied there by hand);
- as notebooks downloaded from a learning-management system, in a folder or a .zip: Canvas's
  "Download Submissions", Moodle's, or students' `make submit` files named by nbgrader's
  zip_collect conventions (`grader.student.submission_names.SUBMISSION_REGEXP`),
  `<lesson>_<student>_attempt_<YYYYMMDD-HHMMSS>_<lesson>.ipynb`. Which student a file is, with or
  without a roster, is grader.grading.lms's to say.

The student id in a name is normalised (Unicode NFKC, case-folded) and must then be ASCII letters,
digits and underscores, at most MAX_ID characters: `Ada` and `ada` are one student, and a name in
another script gets an id of its own (`lms.script_id`), never a look-alike's. Times are parsed, never
compared as text. A downloaded attempt is copied with its time in `timestamp.txt` (which nbgrader
reads) and the file it came from in `collected_from.txt`. Nothing is chosen silently:

- of several attempts of one student, the latest is collected and the others are listed;
- a time in the future, two files with the same student and time, links, and zip entries over
  MAX_ENTRY bytes or MAX_RATIO times their compressed size are not collected, with the reason;
- an attempt that replaces one collected earlier from a file of another name is collected and
  listed for review.

A file that cannot be read or stored is "not collected" with the reason; none stops the batch.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from grader.errors import BadDownload
from grader.student.submission_names import SUBMISSION_REGEXP, SUBMISSION_TIME_FORMAT

# Bounds on what a download may hold, against hostile input; constants, not settings: an honest
# notebook is far below each, and a student id's length is part of the file-name convention.
MAX_ID = 64  # characters of a student id
MAX_ENTRY = 64 * 1024**2  # bytes of one downloaded notebook
MAX_RATIO = 200  # how many times its compressed size a zip entry may expand to
CLOCK_SKEW = timedelta(minutes=10)  # how far in the future a submission time may be
SAFE_ID = re.compile(r"[a-z0-9_]+")


@dataclass(frozen=True)
class Skipped:
    """A file that was not collected (or was, but needs a look), and why."""

    file: str
    reason: str


@dataclass
class Collected:
    students: list[str]  # every student with a submission of the lesson, sorted
    skipped: list[Skipped] = field(default_factory=list)  # files not collected, with the reason
    review: list[Skipped] = field(default_factory=list)  # files collected, or passed over, that need a look
    copied: int = 0  # downloaded notebooks new or changed since the last collection
    superseded: int = 0  # older attempts of a student who submitted again


@dataclass(frozen=True)
class Attempt:
    student: str
    when: datetime
    file: str
    read: Callable[[], bytes]


def student_id(raw: str) -> str | None:
    """The normalised id of `raw` (NFKC, case-folded), or None when it is not a safe id."""
    ident = unicodedata.normalize("NFKC", raw).casefold()
    return ident if SAFE_ID.fullmatch(ident) and len(ident) <= MAX_ID else None


def parse_name(name: str, lesson: str, *, now: datetime | None = None) -> tuple[str, datetime] | Skipped:
    """(student, time of the attempt, in UTC) from a downloaded file's name, or why it is not collected."""
    expected = f"{lesson}_<student>_attempt_<YYYYMMDD-HHMMSS>_{lesson}.ipynb"
    match = re.fullmatch(SUBMISSION_REGEXP, name)
    if match is None or not name.endswith(".ipynb"):
        return Skipped(name, f"the file name does not follow {expected}")
    other = name.split("_", 1)[0]
    if other != lesson or match["file_id"] != f"{lesson}.ipynb":
        return Skipped(name, f"a submission for {other}, not {lesson}")
    try:
        when = datetime.strptime(match["timestamp"], SUBMISSION_TIME_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        return Skipped(name, f"the time in the file name is not YYYYMMDD-HHMMSS: {match['timestamp']}")
    if when > (now or datetime.now(timezone.utc)) + CLOCK_SKEW:
        return Skipped(name, f"its time {match['timestamp']} is in the future")
    student = student_id(match["student_id"])
    if student is None:
        return Skipped(name, f"the student id must be at most {MAX_ID} ASCII letters, digits or underscores")
    return student, when


def collect(lesson: str, submitted: Path, source: Path | None = None, *, now: datetime | None = None,
            roster=None, formats: dict[str, str] | None = None) -> Collected:
    """Copy the downloads in `source` (a folder or .zip, if given) into `submitted`, then list the
    lesson's submissions found there.

    Each file is attributed to a student by grader.grading.lms: its download format (`formats`,
    default `lms.FORMATS`) and, if given, the `roster` (an `lms.Roster`)."""
    from grader.grading import lms

    result = Collected([])
    if source is not None:
        attempts: dict[str, list[Attempt]] = {}
        for name, read, modified in _downloads(source, result.skipped):
            parsed = lms.attribute(name, modified, lesson, now=now, roster=roster, formats=formats)
            if isinstance(parsed, Skipped):
                result.skipped.append(parsed)
            else:
                attempts.setdefault(parsed[0], []).append(Attempt(parsed[0], parsed[1], name, read))
        for student, tries in sorted(attempts.items()):
            _collect_student(submitted / student / lesson, lesson, tries, result)
    students, misplaced = _submitted(submitted, lesson)
    result.students, result.skipped = students, result.skipped + misplaced
    return result


def _collect_student(folder: Path, lesson: str, tries: list[Attempt], result: Collected) -> None:
    tries = sorted(tries, key=lambda a: a.when)
    latest = tries[-1]
    tied = [a for a in tries if a.when == latest.when]
    if len(tied) > 1:
        result.skipped += [Skipped(a.file, f"{len(tied)} files claim student {a.student} at the same time; "
                                           "none was chosen") for a in tied]
        return
    for older in tries[:-1]:
        result.superseded += 1
        result.review.append(Skipped(older.file, f"an older attempt of {older.student}: {latest.file} was collected"))
    try:
        content = latest.read()
        earlier = folder / "collected_from.txt"
        if earlier.is_file() and earlier.read_text().splitlines()[0] not in (latest.file, ""):
            result.review.append(Skipped(latest.file, f"replaces {latest.student}'s attempt collected earlier from "
                                                      f"{earlier.read_text().splitlines()[0]}"))
        result.copied += _store(folder, lesson, latest, content)
    except (OSError, ValueError) as error:
        result.skipped.append(Skipped(latest.file, f"could not be collected: {type(error).__name__}: {error}"))


def _downloads(source: Path, skipped: list[Skipped]) -> Iterator[tuple[str, Callable[[], bytes], datetime]]:
    """(path in the download, function returning its bytes, time it was last changed, as UTC) for
    every acceptable file of a folder or .zip."""
    def hidden(parts: tuple[str, ...]) -> bool:  # .DS_Store, __MACOSX/ and the like
        return any(part.startswith((".", "__MACOSX")) for part in parts)

    if source.is_dir():
        for path in sorted(source.rglob("*")):
            relative = path.relative_to(source)
            if hidden(relative.parts):
                continue
            if path.is_symlink():
                skipped.append(Skipped(str(relative), "a link, not a file: not followed"))
            elif path.is_file() and any(parent.is_symlink() for parent in relative.parents if str(parent) != "."):
                skipped.append(Skipped(str(relative), "inside a linked folder: not followed"))
            elif path.is_file():
                if path.stat().st_size > MAX_ENTRY:
                    skipped.append(Skipped(path.name, f"larger than {MAX_ENTRY} bytes"))
                else:
                    yield (str(relative), lambda path=path: _read_capped(path.open("rb")),
                           datetime.fromtimestamp(path.stat().st_mtime, timezone.utc))
    elif zipfile.is_zipfile(source):
        archive = zipfile.ZipFile(source)
        counts = Counter(info.filename for info in archive.infolist())
        for name in sorted(name for name, count in counts.items() if count > 1):
            skipped.append(Skipped(name, f"the .zip holds {counts[name]} entries of this name; none was chosen"))
        for info in sorted(archive.infolist(), key=lambda i: i.filename):
            parts = tuple(info.filename.split("/"))
            if info.is_dir() or hidden(parts) or counts[info.filename] > 1:
                continue
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                skipped.append(Skipped(info.filename, "a link, not a file: not followed"))
            elif info.file_size > MAX_ENTRY:
                skipped.append(Skipped(parts[-1], f"larger than {MAX_ENTRY} bytes"))
            elif info.compress_size and info.file_size > MAX_RATIO * info.compress_size:
                skipped.append(Skipped(parts[-1], f"expands to over {MAX_RATIO} times its compressed size"))
            else:
                yield info.filename, lambda info=info: _read_capped(archive.open(info)), _zip_time(info)
    else:
        raise BadDownload(f"{source}: not a folder or a .zip of downloaded submissions")


def _zip_time(info: zipfile.ZipInfo) -> datetime:
    """A zip entry's time (zip stores no time zone: read as UTC)."""
    try:
        return datetime(*info.date_time, tzinfo=timezone.utc)
    except ValueError:
        return datetime(1980, 1, 1, tzinfo=timezone.utc)


def _read_capped(handle) -> bytes:
    """The stream's bytes, refusing more than MAX_ENTRY whatever its header said."""
    with handle:
        data = handle.read(MAX_ENTRY + 1)
    if len(data) > MAX_ENTRY:
        raise ValueError(f"larger than {MAX_ENTRY} bytes")
    return data


def _store(folder: Path, lesson: str, attempt: Attempt, content: bytes) -> bool:
    """Write one submission, its timestamp.txt and collected_from.txt; False when already there unchanged."""
    notebook, stamp, origin = folder / f"{lesson}.ipynb", folder / "timestamp.txt", folder / "collected_from.txt"
    when = attempt.when.strftime("%Y-%m-%d %H:%M:%S UTC")
    record = f"{attempt.file}\n{hashlib.sha256(content).hexdigest()}\n"
    if notebook.is_file() and notebook.read_bytes() == content and stamp.is_file() and stamp.read_text() == when:
        return False
    folder.mkdir(parents=True, exist_ok=True)
    notebook.write_bytes(content)
    stamp.write_text(when)
    origin.write_text(record)
    return True


def _submitted(submitted: Path, lesson: str) -> tuple[list[str], list[Skipped]]:
    """Students with `<student>/<lesson>/<lesson>.ipynb`, and folders that are not graded, with why:
    one holding some other notebook, or named with something other than a student id."""
    students, misplaced = [], []
    for folder in sorted(submitted.glob(f"*/{lesson}")):
        name = folder.parent.name
        if folder.parent.is_symlink() or folder.is_symlink():
            misplaced.append(Skipped(str(folder), "a link in the submitted folder: not followed"))
        elif student_id(name) != name:  # put there by hand: the gradebook takes only ids collect makes
            ident = student_id(name)
            rename = f": rename it to {ident!r}" if ident and not (submitted / ident).exists() else ""
            misplaced.append(Skipped(str(folder.parent), f"the folder name {name!r} is not a student id (at most "
                                     f"{MAX_ID} lowercase ASCII letters, digits or underscores){rename}"))
        elif (folder / f"{lesson}.ipynb").is_file():
            students.append(name)
        elif others := sorted(p.name for p in folder.glob("*.ipynb")):
            misplaced.append(Skipped(str(folder / others[0]), f"expected {lesson}.ipynb in {name}'s submission folder"))
    return students, misplaced
