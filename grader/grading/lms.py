"""Whose each file of an LMS download is: the download formats of Canvas, Moodle and `make submit`, and the roster.

Every format is one nbgrader `FileNameCollectorPlugin` named-group regular expression, matched
against the file's path inside the download ("folder/file.ipynb"), all kept in `FORMATS` and
configurable as `c.DownloadFormats.formats` in nbgrader_config.py (a dict, name -> regex, tried in
order). The groups a format may give:

- `student_id`: the id itself (a `make submit` name);
- `name`, `lms_id`: the student's name as the LMS wrote it, and the LMS's number for the student;
- `late`: non-empty when the LMS marked the submission late;
- `timestamp`: the submission time as YYYYMMDD-HHMMSS (UTC);
- `file_id`: the file's own name, as the student uploaded it.

The patterns, as each LMS documents or writes them:

- Canvas, "Download Submissions": one .zip, every file at its top level named
  `<name>_<user id>_<submission id>_<original name>`, the name being the student's sortable name
  squashed to lower case ("lovelaceada"), with `LATE_` before the user id when Canvas marked the
  submission late, and `-1`, `-2`... added to the original name of a resubmitted file.
- Moodle, "Download all submissions": `<Full Name>_<participant id>_assignsubmission_file_<original
  name>`, or, with "Download submissions in folders", a folder `<Full Name>_<participant
  id>_assignsubmission_file_` per student holding the files unrenamed.
- A plain folder of `make submit` files: `<lesson>_<student>_attempt_<YYYYMMDD-HHMMSS>_<lesson>.ipynb`
  (`grader.student.submission_names.SUBMISSION_REGEXP`).

Which student a file is: with a roster (`Roster.read`), the roster row whose `lms_id` is the
file's, else whose name (either word order, case, accents and punctuation ignored) is the file's,
else whose id is the file's `student_id`; a file that matches no row, or several, is not
collected, with the reason. Without a roster, the id is made from the name in the file name,
transliterated to ASCII (anyascii) so that a name in any script gives a readable id, plus the
LMS's number for the student where the LMS gives one, which makes it unique.
"""

from __future__ import annotations

import csv
import hashlib
import logging
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from anyascii import anyascii
from nbgrader.plugins import FileNameCollectorPlugin
from traitlets import Dict
from traitlets.config import Configurable

from grader.course import lesson_ids
from grader.errors import BadDownload
from grader.safe_text import for_terminal
from grader.student.submission_names import SUBMISSION_REGEXP, SUBMISSION_TIME_FORMAT

FORMATS = {
    "moodle": r"(?P<name>[^/]+?)_(?P<lms_id>\d+)_assignsubmission_file_(?:/)?(?P<file_id>[^/]+)\Z",
    "canvas": r"(?P<name>[^_/]+)_(?:(?P<late>LATE)_)?(?P<lms_id>\d+)_(?P<submission_id>\d+)_(?P<file_id>[^/]+)\Z",
    "make-submit": r"(?:.*/)?" + SUBMISSION_REGEXP + r"\Z",
}


# Part of how an id is made from a name (ids must stay the same from one batch to the next): not a setting.
MAX_READABLE = 48  # characters of the readable part of an id made from a name


class DownloadFormats(Configurable):
    """The file name patterns of LMS downloads, configurable as `c.DownloadFormats.formats`."""

    formats = Dict(default_value=FORMATS, help="format name -> nbgrader FileNameCollectorPlugin named_regexp, "
                                               "tried in order").tag(config=True)


@dataclass(frozen=True)
class Match:
    """What a file's path in a download says about it."""

    format: str
    file_id: str
    student_id: str = ""
    name: str = ""
    lms_id: str = ""
    late: bool = False
    timestamp: datetime | None = None


_QUIET = logging.getLogger("grader.grading.lms")  # nbgrader's plugin logs every file a format does not match
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False
_QUIET.setLevel(logging.ERROR)


def match(path: str, formats: dict[str, str] | None = None) -> Match | None:
    """The first format whose pattern matches `path` (a .ipynb file's path in the download), or None."""
    for name, regexp in (formats or FORMATS).items():
        groups = FileNameCollectorPlugin(named_regexp=regexp, valid_ext=[".ipynb"], log=_QUIET).collect(path)
        if groups and groups.get("file_id"):
            when = None
            if groups.get("timestamp"):
                try:
                    when = datetime.strptime(groups["timestamp"], SUBMISSION_TIME_FORMAT).replace(tzinfo=timezone.utc)
                except ValueError:
                    return None
            return Match(name, groups["file_id"], groups.get("student_id") or "", groups.get("name") or "",
                         groups.get("lms_id") or "", bool(groups.get("late")), when)
    return None


def other_lesson(file_id: str, lesson: str) -> str | None:
    """The other lesson a file's own name says it is for, if any (`02-scaling.ipynb` for 03)."""
    for other in lesson_ids():
        if other != lesson and file_id.startswith(other) and not file_id.startswith(lesson):
            return other
    return None


def name_key(name: str) -> str:
    """`name` reduced for comparison: NFKD, accents dropped, case-folded, letters and digits only."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(ch for ch in decomposed.casefold() if ch.isalnum() and not unicodedata.combining(ch))


def readable_id(name: str) -> str:
    """`name` as a readable ASCII id: accents dropped, other scripts transliterated (anyascii; a
    caseless script such as Chinese one word per character: "李雷" gives "li_lei"), lower case, every
    run of other characters one underscore; "" when nothing readable is left."""
    stripped = "".join(ch for ch in unicodedata.normalize("NFKD", name) if not unicodedata.combining(ch))
    spaced = "".join(ch if ch.isascii() else (f" {anyascii(ch)} " if ch.lower() == ch.upper() else anyascii(ch))
                     for ch in stripped)
    return re.sub(r"[^a-z0-9]+", "_", spaced.lower()).strip("_")


def script_id(name: str) -> str:
    """A readable ASCII id for a name typed in another script, unique to its exact letters:
    `readable_id(name)` plus six hex digits of the name's SHA-256 ("李雷" gives `li_lei_` and the
    digits), so that a look-alike ("аda" with a Cyrillic а) never becomes the id of "ada"."""
    digest = hashlib.sha256(unicodedata.normalize("NFKC", name).casefold().encode()).hexdigest()[:6]
    return f"{readable_id(name)[:MAX_READABLE]}_{digest}".lstrip("_")


@dataclass(frozen=True)
class Student:
    """One row of the roster."""

    id: str
    name: str
    email: str = ""
    lms_id: str = ""
    section: str = ""

    def keys(self) -> set[str]:
        """The name as an LMS may write it: first-last and last-first ("Lovelace, Ada")."""
        words = [w for w in re.split(r"[\s,]+", self.name) if w]
        return {name_key("".join(words[i:] + words[:i])) for i in range(len(words))} - {""}


class Roster:
    """The course's students, from a CSV exported from the LMS.

    Columns read (header names, any case): `id` (the student id grading uses: at most 64 ASCII
    letters, digits or underscores once lower-cased), `name`, and optionally `email`, `lms_id`
    (Canvas's user id, or Moodle's participant id for this assignment) and `section` (written into
    the Canvas import CSV). Other columns are ignored.
    """

    def __init__(self, students: list[Student]):
        self.students = students

    @classmethod
    def read(cls, path: Path) -> Roster:
        """The roster in `path`; BadDownload naming the row when a row's id is unusable or repeated."""
        from grader.grading.collect import MAX_ID, student_id

        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as error:
            raise BadDownload(f"cannot read the roster {path}: {for_terminal(error)}") from None
        rows = csv.DictReader(text.splitlines())
        columns = {(c or "").strip().casefold(): c for c in rows.fieldnames or []}
        if "id" not in columns or "name" not in columns:
            raise BadDownload(f"the roster {path} needs the columns id and name (found: "
                              f"{for_terminal(', '.join(columns))})")
        students, seen = [], set()
        for number, row in enumerate(rows, start=2):
            def cell(column: str, row=row) -> str:
                return (row.get(columns.get(column, ""), "") or "").strip()
            ident = student_id(cell("id"))
            if ident is None:
                shown = for_terminal(cell("id"))
                raise BadDownload(f"the roster {path}, line {number}: the id '{shown}' is not at most "
                                  f"{MAX_ID} ASCII letters, digits or underscores")
            if ident in seen:
                raise BadDownload(f"the roster {path}, line {number}: the id {ident!r} is there twice")
            seen.add(ident)
            students.append(Student(ident, cell("name"), cell("email"), cell("lms_id"), cell("section")))
        return cls(students)

    def find(self, found: Match) -> Student | str:
        """The one roster row `found` belongs to, or why there is none."""
        if found.lms_id and any(s.lms_id for s in self.students):
            rows = [s for s in self.students if s.lms_id == found.lms_id]
            if rows:
                return rows[0] if len(rows) == 1 else f"LMS id {found.lms_id} is on {len(rows)} roster rows"
        candidates = []
        if found.name:
            key = name_key(found.name)
            candidates = [s for s in self.students if key and key in s.keys()]
        elif found.student_id:
            key = name_key(found.student_id)
            candidates = [s for s in self.students if s.id == found.student_id.casefold()
                          or (key and key in s.keys())]
        if len(candidates) == 1:
            return candidates[0]
        who = for_terminal(found.name or found.student_id)
        if candidates:
            return f"'{who}' matches {len(candidates)} roster rows ({', '.join(s.id for s in candidates)}): none chosen"
        return f"'{who}' is not on the roster"


def identify(found: Match, roster: Roster | None) -> str:
    """The student id for `found`, or "" when the roster has no one row for it (see `Roster.find`)."""
    if roster is not None:
        row = roster.find(found)
        return row.id if isinstance(row, Student) else ""
    if found.student_id:
        return found.student_id
    base = readable_id(found.name)[:MAX_READABLE] or "student"
    return f"{base}_{found.lms_id}" if found.lms_id else script_id(found.name)


def attribute(path: str, modified: datetime, lesson: str, *, now: datetime | None = None, roster: Roster | None = None,
              formats: dict[str, str] | None = None):
    """(student id, time of the attempt) for the file at `path` in a download, or the `Skipped` saying why not.

    `modified` is the file's time in the download, used where the format gives none (Canvas and
    Moodle name no time): the time the LMS wrote the file.
    """
    from grader.grading.collect import CLOCK_SKEW, MAX_ID, Skipped, parse_name, student_id

    found = match(path, formats)
    base = path.rsplit("/", 1)[-1]
    if found is not None and found.format == "make-submit" and not found.student_id.isascii():
        base = base.replace(f"_{found.student_id}_attempt_", f"_{script_id(found.student_id)}_attempt_", 1)
    if found is None or found.format == "make-submit":
        parsed = parse_name(base, lesson, now=now)
        if isinstance(parsed, Skipped):
            reason = parsed.reason
            if found is None and "does not follow" in reason:
                reason += f", nor any LMS download format ({', '.join(formats or FORMATS)})"
            return Skipped(for_terminal(path), reason)
        if roster is None:
            return parsed
        found = Match("make-submit", base, student_id=found.student_id if found else parsed[0], timestamp=parsed[1])
    if other := other_lesson(found.file_id, lesson):
        return Skipped(for_terminal(path), f"a submission for {other}, not {lesson}")
    when = found.timestamp or modified
    if when > (now or datetime.now(timezone.utc)) + CLOCK_SKEW:
        return Skipped(for_terminal(path), f"its time {when:%Y-%m-%d %H:%M:%S} UTC is in the future")
    ident = identify(found, roster)
    if not ident:
        return Skipped(for_terminal(path), roster.find(found))
    student = student_id(ident)
    if student is None:
        return Skipped(for_terminal(path),
                       f"the student id must be at most {MAX_ID} ASCII letters, digits or underscores")
    return student, when


def record_names(db_url: str, course_id: str, roster: Roster, students: list[str]) -> None:
    """Give each of `students` that is on the roster its name and email in nbgrader's gradebook
    (shown by nbgrader's formgrader): the last word of the name as the last name."""
    from grader.gradebook import open_gradebook

    rows = {s.id: s for s in roster.students}
    with open_gradebook(db_url, course_id) as gradebook:
        for student in students:
            if row := rows.get(student):
                *first, last = row.name.split() or [""]
                gradebook.update_or_create_student(student, first_name=" ".join(first) or None,
                                                   last_name=last or None, email=row.email or None)
