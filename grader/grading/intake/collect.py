"""Gather a lesson's submissions: every file handed in is kept as a fact, and nbgrader's submitted
folder is derived from those facts on every run.

Submissions arrive in two ways:

- as notebooks downloaded from an LMS, in a folder or a .zip (`source`): the download's format is
  decided once for all its files (grader.grading.intake.lms.registry.decide), and each file's person comes from
  what the LMS wrote (grader.grading.intake.people), never from the part of the name the student chose;
- already in nbgrader's layout, `<submitted>/<student>/<lesson>/<lesson>.ipynb` with nbgrader's
  `timestamp.txt`: put there by `nbgrader collect` from a JupyterHub exchange (the folder is the
  hub's user name), or by hand. These are graded as they are.

Every downloaded notebook is kept in `<attempts>/<lesson>/<student>/<sha256>.ipynb`, with what the
download said of it (`.json`: its path in the download, the time the LMS gives it, the LMS's late
mark). From all the attempts a student ever handed in, the latest is the submission: the same
facts give the same submissions whatever order the downloads came in. The submission goes into the
submitted folder with its time in `timestamp.txt` (which nbgrader reads) and `collected.json`
(which attempt it is, and the SHA-256 of what was written).

A submission the instructor edited by hand (its bytes differ from what was written) is never
replaced silently: the run keeps the edit and says so, also when a newer attempt arrives, unless
`replace_edits`; the edit is then kept beside the attempts (`edited-<sha256>.ipynb`).

Nothing is chosen silently, and a bad file costs only itself:

- a file that cannot be read (a damaged .zip entry), links, entries over MAX_ENTRY bytes or MAX_RATIO
  times their compressed size, times in the future, a file that is not a notebook, and a person not
  on the roster are "not collected", with the reason;
- of several attempts of one student, the latest is collected and the others are noted; two at
  the same latest time are not chosen between.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from traitlets.config import Config

from grader.errors import BadDownload
from grader.grading.intake.ids import ID_RULE, in_future, normalised_id, parse_time
from grader.grading.intake.lms import registry
from grader.grading.intake.lms.base import Match
from grader.grading.intake.people import People
from grader.layout import TIMESTAMP
from grader.safe_text import for_terminal

# Bounds on what a download may hold, against hostile input; constants, not settings: an honest
# notebook is far below each.
MAX_ENTRY = 64 * 1024**2  # bytes of one downloaded notebook
MAX_RATIO = 200  # how many times its compressed size a zip entry may expand to
RECORD = "collected.json"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S UTC"


@dataclass(frozen=True)
class Skipped:
    """A file that was not collected (or was, but needs a look), and why."""

    file: str
    reason: str


@dataclass(frozen=True)
class Attempt:
    """One notebook a student handed in, as the download gave it: a fact of the term."""

    student: str
    sha256: str
    when: str  # TIME_FORMAT, UTC
    file: str  # its path in the download
    format: str
    lms_late: bool = False
    upload_prefix: str = ""

    @property
    def time(self) -> datetime:
        return datetime.strptime(self.when, TIME_FORMAT).replace(tzinfo=UTC)


@dataclass(frozen=True)
class Submission:
    """What is graded for one student: when it was handed in and what the LMS said of it."""

    student: str
    time: datetime | None
    lms_late: bool = False
    file: str = ""
    format: str = ""  # "" for a submission put in the submitted folder by nbgrader collect or by hand
    upload_prefix: str = ""
    edited: bool = False


@dataclass
class Collected:
    students: list[str]  # every student with a submission of the lesson, sorted
    skipped: list[Skipped] = field(default_factory=list)  # files not collected, with the reason
    review: list[Skipped] = field(default_factory=list)  # collected, or passed over, and worth a look
    format: str = ""  # the download's format, when there was one
    copied: int = 0  # submissions new or changed in the submitted folder
    submissions: dict[str, Submission] = field(default_factory=dict)


def collect(lesson: str, submitted: Path, attempts: Path, source: Path | None = None, *, people: People,
            now: datetime | None = None, config: Config | None = None, forced: str | None = None,
            replace_edits: bool = False) -> Collected:
    """Keep the downloads in `source` (a folder or .zip, if given) as attempts, then derive the
    lesson's submitted folder from every attempt stored, and list its submissions. `config`: the course's
    configuration (the LMSs' own settings); `forced`: the download's format, when given (--format)."""
    result = Collected([])
    store = attempts / lesson
    if source is not None:
        entries = list(_downloads(source, result.skipped))
        if entries:
            result.format, matches = registry.decide({path: read for path, read, _ in entries}, lesson, forced=forced,
                                                     config=config)
            for path, read, modified in entries:
                _keep(lesson, store, path, matches[path], read, modified, people, result, now)
    for folder in sorted(p for p in store.glob("*") if p.is_dir()) if store.is_dir() else []:
        _derive(lesson, submitted / folder.name / lesson, folder, result, replace_edits)
    result.students, misplaced = _submitted(submitted, lesson)
    result.skipped += misplaced
    for student in result.students:
        result.submissions[student] = read_submission(submitted / student / lesson, student)
        if not (store / student).is_dir():
            people.folder(student)
    return result


def read_submission(folder: Path, student: str) -> Submission:
    """The facts of the submission in `folder` (its time from nbgrader's timestamp.txt)."""
    time = None
    if (folder / TIMESTAMP).is_file():
        try:
            time = parse_time((folder / TIMESTAMP).read_text(errors="replace"))
        except (ValueError, OverflowError):
            time = None
    record = _record(folder)
    if not record:
        return Submission(student, time)
    notebook = folder / f"{folder.name}.ipynb"
    edited = notebook.is_file() and _sha(notebook.read_bytes()) != record.get("written")
    return Submission(student, time, bool(record.get("lms_late")), record.get("file", ""), record.get("format", ""),
                      record.get("upload_prefix", ""), edited)


def _keep(lesson: str, store: Path, path: str, found: Match, read: Callable[[], bytes], modified: datetime,
          people: People, result: Collected, now: datetime | None) -> None:
    """Store one downloaded file as an attempt of the person the LMS says it is, or list why not."""
    shown = for_terminal(path)
    if found.evidence:  # the LMS's own record of a submission (Blackboard's receipt), read by its module
        return
    if not path.endswith(".ipynb"):
        result.skipped.append(Skipped(shown, "not a notebook (.ipynb): not graded"))
        return
    if found.problem:
        result.skipped.append(Skipped(shown, for_terminal(found.problem)))
        return
    when = found.timestamp or modified
    if in_future(when, now):
        result.skipped.append(Skipped(shown, f"its time {when:%Y-%m-%d %H:%M:%S} UTC is in the future"))
        return
    person = people.identify(found)
    if isinstance(person, str):
        result.skipped.append(Skipped(shown, person))
        return
    try:
        content = read()
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        result.skipped.append(Skipped(shown, f"could not be read ({type(error).__name__}: {for_terminal(error)}): "
                                             "download it again from the LMS, or collect it by hand"))
        return
    digest = _sha(content)
    attempt = Attempt(person.id, digest, when.strftime(TIME_FORMAT), path, found.format, found.late,
                      found.upload_prefix)
    folder = store / person.id
    record = folder / f"{digest}.json"
    if record.is_file():
        earlier = Attempt(**json.loads(record.read_text(encoding="utf-8")))
        if earlier.time <= attempt.time:  # the same notebook again: it was handed in at the first time
            return
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{digest}.ipynb").write_bytes(content)
    record.write_text(json.dumps(asdict(attempt), ensure_ascii=False) + "\n", encoding="utf-8")


def _attempts(folder: Path) -> list[Attempt]:
    found = []
    for record in sorted(folder.glob("*.json")):
        try:
            found.append(Attempt(**json.loads(record.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue
    return found


def _derive(lesson: str, folder: Path, kept: Path, result: Collected, replace_edits: bool) -> None:
    """Put the latest of a student's attempts (kept in `kept`) in their submitted `folder`, keeping a hand edit."""
    tries = sorted(_attempts(kept), key=lambda a: (a.time, a.sha256))
    if not tries:
        return
    latest = tries[-1]
    tied = [a for a in tries if a.time == latest.time]
    record = _record(folder)
    notebook, stamp = folder / f"{lesson}.ipynb", folder / TIMESTAMP
    edited = bool(record) and notebook.is_file() and _sha(notebook.read_bytes()) != record.get("written")
    if len(tied) > 1:
        result.skipped += [Skipped(for_terminal(a.file), f"{len(tied)} files of {a.student} have the same time; "
                                   "none was chosen") for a in tied]
        if folder.is_dir() and not edited:
            shutil.rmtree(folder)
        return
    for older in tries[:-1]:
        result.review.append(Skipped(for_terminal(older.file), f"an older attempt of {older.student}: "
                                                               f"{for_terminal(latest.file)} is graded"))
    if edited and record.get("attempt") == latest.sha256:
        result.review.append(Skipped(f"{latest.student}/{lesson}", "kept as edited by hand"))
        return
    if edited and not replace_edits:
        result.review.append(Skipped(f"{latest.student}/{lesson}", "kept as edited by hand; a newer attempt "
                                     f"arrived ({for_terminal(latest.file)}): add --replace-edits "
                                     "(REPLACE_EDITS=1) to grade it instead"))
        return
    try:
        written = (kept / f"{latest.sha256}.ipynb").read_bytes()
    except OSError as error:
        result.skipped.append(Skipped(for_terminal(latest.file), f"its stored copy cannot be read: {error}"))
        return
    if edited:
        backup = kept / f"edited-{_sha(notebook.read_bytes())}.ipynb"
        shutil.copyfile(notebook, backup)
        result.review.append(Skipped(f"{latest.student}/{lesson}", f"the hand edit was replaced by "
                                     f"{for_terminal(latest.file)}; the edit is kept in {backup}"))
    new_record = {"attempt": latest.sha256, "written": _sha(written), **asdict(latest)}
    if notebook.is_file() and notebook.read_bytes() == written and stamp.is_file() \
            and stamp.read_text() == latest.when and record == new_record:
        return
    folder.mkdir(parents=True, exist_ok=True)
    notebook.write_bytes(written)
    stamp.write_text(latest.when)
    (folder / RECORD).write_text(json.dumps(new_record, ensure_ascii=False) + "\n", encoding="utf-8")
    result.copied += 1


def _record(folder: Path) -> dict:
    try:
        return json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


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
                skipped.append(Skipped(for_terminal(str(relative)), "a link, not a file: not followed"))
            elif path.is_file() and any(parent.is_symlink() for parent in relative.parents if str(parent) != "."):
                skipped.append(Skipped(for_terminal(str(relative)), "inside a linked folder: not followed"))
            elif path.is_file():
                if path.stat().st_size > MAX_ENTRY:
                    skipped.append(Skipped(for_terminal(str(relative)), f"larger than {MAX_ENTRY} bytes"))
                else:
                    yield (relative.as_posix(), lambda path=path: _read_capped(path.open("rb")),
                           datetime.fromtimestamp(path.stat().st_mtime, UTC))
        return
    try:
        archive = zipfile.ZipFile(source)
    except (OSError, zipfile.BadZipFile) as error:
        raise BadDownload(f"{source}: not a folder or a readable .zip of downloaded submissions "
                          f"({type(error).__name__}: {for_terminal(error)})") from None
    counts = Counter(info.filename for info in archive.infolist())
    for name in sorted(name for name, count in counts.items() if count > 1):
        skipped.append(Skipped(for_terminal(name), f"the .zip holds {counts[name]} entries of this name; "
                                                   "none was chosen"))
    for info in sorted(archive.infolist(), key=lambda i: i.filename):
        parts = tuple(info.filename.split("/"))
        if info.is_dir() or hidden(parts) or counts[info.filename] > 1:
            continue
        if (info.external_attr >> 16) & 0o170000 == 0o120000:
            skipped.append(Skipped(for_terminal(info.filename), "a link, not a file: not followed"))
        elif info.file_size > MAX_ENTRY:
            skipped.append(Skipped(for_terminal(info.filename), f"larger than {MAX_ENTRY} bytes"))
        elif info.compress_size and info.file_size > MAX_RATIO * info.compress_size:
            skipped.append(Skipped(for_terminal(info.filename), f"expands to over {MAX_RATIO} times its compressed "
                                                                "size"))
        else:
            yield info.filename, lambda info=info: _read_capped(archive.open(info)), _zip_time(info)


def _zip_time(info: zipfile.ZipInfo) -> datetime:
    """A zip entry's time (zip stores no time zone: read as UTC)."""
    try:
        return datetime(*info.date_time, tzinfo=UTC)
    except ValueError:
        return datetime(1980, 1, 1, tzinfo=UTC)


def _read_capped(handle) -> bytes:
    """The stream's bytes, refusing more than MAX_ENTRY whatever its header said."""
    with handle:
        data = handle.read(MAX_ENTRY + 1)
    if len(data) > MAX_ENTRY:
        raise ValueError(f"larger than {MAX_ENTRY} bytes")
    return data


def _submitted(submitted: Path, lesson: str) -> tuple[list[str], list[Skipped]]:
    """Students with `<student>/<lesson>/<lesson>.ipynb`, and folders that are not graded, with why:
    one holding some other notebook, or named with something other than a student id."""
    students, misplaced = [], []
    for folder in sorted(submitted.glob(f"*/{lesson}")):
        name = folder.parent.name
        if folder.parent.is_symlink() or folder.is_symlink():
            misplaced.append(Skipped(for_terminal(str(folder)), "a link in the submitted folder: not followed"))
        elif normalised_id(name) != name:  # put there by hand: the gradebook takes only ids collect makes
            ident = normalised_id(name)
            rename = f": rename it to {ident!r}" if ident and not (submitted / ident).exists() else ""
            misplaced.append(Skipped(for_terminal(str(folder.parent)), f"the folder name {for_terminal(name)!r} is "
                                     f"not a student id ({ID_RULE}, lower case){rename}"))
        elif (folder / f"{lesson}.ipynb").is_file():
            students.append(name)
        elif others := sorted(p.name for p in folder.glob("*.ipynb")):
            misplaced.append(Skipped(for_terminal(str(folder / others[0])),
                                     f"expected {lesson}.ipynb in {name}'s submission folder"))
    return students, misplaced
