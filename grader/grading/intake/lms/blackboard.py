"""Blackboard Learn: its "Assignment File Download", its Grade Centre export, its ids, and the Grade Centre
upload file.

- **Download** (Grade Centre > the assignment's column > Assignment File Download): one flat .zip
  holding, for every attempt, Blackboard's receipt `<Assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>.txt`
  and each file the student attached, `<Assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<the
  student's file name>`. The receipt's first lines are Blackboard's: `Name: <name> (<username>)`,
  `Assignment: ...`, `Date Submitted: Tuesday, 27 November 2018 15:38:53 o'clock CET` (the server's
  time, in its language and zone), `Current Grade: ...`; then the student's text (`Submission Field:`,
  `Comments:`), and last Blackboard's `Files:`, a pair of lines per file, `Original filename: <the
  student's>` and `Filename: <the name in the zip>`. From scripts that unpack these downloads:
  CodeGra.de's psef/blackboard.py (its receipt's fields, the `Name: ... (<id>)` line, the time's form) and
  its files.py (the receipt's name), vangef/BBGradebookOrganiser (the username before `_attempt_`, the
  student's name after the time, the menu path).

  What the course reads, and from where: an entry's name is cut at its *first* `_attempt_<time>`:
  before it, everything is Blackboard's (the assignment's name, then the username); what comes after
  the time and an underscore is the student's own file name, which never says who or when (a file the
  student named `x_attempt_<time>.txt` or after a classmate stays the student's attachment). An
  attempt's files belong to its receipt (same name up to the time) when the receipt's `Files:` lists
  them. Who: the username, which must be the one the receipt's `Name:` line gives in brackets and must
  end the Blackboard part of the name (so an assignment or username holding `_` is read right). When:
  the receipt's `Date Submitted`, read in `BlackboardDownload.time_zone` (the server's zone), whose
  abbreviation must be the one the receipt prints. Blackboard writes no late mark into the download:
  lateness comes from the time. A download whose files are not all receipts and their listed files
  is not Blackboard's.
- **Roster** (Grade Centre > Work Offline > Download, Full Grade Centre, comma delimited): `Last Name`,
  `First Name`, `Username`, `Student ID`, then one column per Grade Centre column,
  `<name> [Total Pts: <points> <display>] |<column id>`, kept as the roster's assignments (the order
  as scripts read the download, Zohair-coder/CS270-grading-assistant; the headers as they name them).
- **Ids**: `blackboard_<username>` (lower case; a username with other characters made readable and
  unique, grader.grading.intake.ids.script_id).
- **Import** (Grade Centre > Work Offline > Upload): `Last Name`, `First Name`, `Username`, `Student ID`,
  then the lesson's final points, every cell in quotes as Blackboard asks of a comma-delimited file.
  Blackboard matches a student by the username and a column by the id after `|` in its header; a
  header without one makes a new (text) column. So the header is `BlackboardImport.columns[<lesson>]`
  when set; else the export's column named as the lesson; else the lesson id, with a warning when an
  export is known. From Blackboard's help "Uploading External Grade Center Items" (library.blackboard.com)
  and the headers in scripts that fill the Grade Centre's file (nbeaver/offline-grades-upload).
"""

from __future__ import annotations

import csv
import re
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from traitlets import Dict, Unicode
from traitlets.config import Configurable

from grader.grading.intake.lms.base import GradeLine, Lms, Match, Opener, RosterFormat, grade_column
from grader.safe_text import for_csv, for_terminal
from grader.student.points import number

ATTEMPT = re.compile(r"_attempt_(?P<time>\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})")
NAME = re.compile(r"(?P<name>.*) \((?P<username>[^()]+)\)")
# A Grade Centre column as Blackboard's export heads it: "Lesson 3 [Total Pts: 15 Score] |123456".
COLUMN = re.compile(r"^(?P<name>.+?)\s*\[Total Pts:[^\]]*\]\s*\|(?P<id>\d+)$")
RECEIPT_BYTES = 1024**2  # a receipt is a few lines: anything longer is no receipt
TIME_FORMS = ("%d %B %Y %H:%M:%S", "%B %d, %Y %I:%M:%S %p", "%d %B %Y %I:%M:%S %p", "%B %d, %Y %H:%M:%S")
ZERO = {"UTC", "GMT", "Z"}  # names of the zero offset
IDENTITY = ["Last Name", "First Name", "Username", "Student ID"]


class BlackboardDownload(Configurable):
    """How Blackboard's Assignment File Download gives times."""

    time_zone = Unicode("UTC", help="the IANA time zone of the Blackboard server (e.g. 'Europe/Amsterdam'), "
                                    "whose local time its receipts give; the zone a receipt names must be this "
                                    "zone's at that time").tag(config=True)


class BlackboardImport(Configurable):
    """How the Blackboard Grade Centre upload file heads its column."""

    columns = Dict(help="lesson id -> the Grade Centre column's header as Blackboard's export writes it, e.g. "
                        "'Lesson 3 [Total Pts: 15 Score] |123456' (Blackboard matches the id after '|'; default: "
                        "the export's column named as the lesson, when the roster was Blackboard's export; else "
                        "the lesson id)").tag(config=True)


@dataclass(frozen=True)
class Receipt:
    """What Blackboard's receipt of an attempt says."""

    name: str
    username: str
    submitted: str  # Date Submitted, as written
    files: frozenset[str]  # the names in the zip of the attempt's files


def read_receipt(text: str) -> Receipt | None:
    """The receipt in `text`, or None when it is none: its head (the lines before the first blank one) must
    hold `Name: <name> (<username>)` and `Date Submitted:`; its files are those listed after its last
    `Files:` line, which follows everything the student wrote."""
    lines = text.replace("\r\n", "\n").split("\n")
    head = {}
    for line in lines:
        if not line.strip():
            break
        key, sep, value = line.partition(": ")
        if sep:
            head.setdefault(key.strip(), value.strip())
    who = NAME.fullmatch(head.get("Name", ""))
    if who is None or not head.get("Date Submitted"):
        return None
    last = max((i for i, line in enumerate(lines) if line.strip() == "Files:"), default=len(lines))
    files = {line.strip().removeprefix("Filename: ") for line in lines[last + 1:]
             if line.strip().startswith("Filename: ")}
    return Receipt(who["name"].strip(), who["username"].strip(), head["Date Submitted"], frozenset(files))


def receipt_time(written: str, zone_name: str) -> datetime | str:
    """A receipt's Date Submitted in UTC, read as the local time of the IANA zone `zone_name`; or why it
    cannot be read."""
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        return f"c.BlackboardDownload.time_zone {for_terminal(zone_name)!r} is no IANA time zone"
    text = written.replace(" o'clock", "").strip()
    body, _, named = text.rpartition(" ")
    if not re.fullmatch(r"[A-Z]{1,6}", named) or named in ("AM", "PM"):
        body, named = text, ""
    body = re.sub(r"^[^\W\d]+, ", "", body)  # the weekday
    for form in TIME_FORMS:
        try:
            local = datetime.strptime(body, form).replace(tzinfo=zone)
            break
        except ValueError:
            continue
    else:
        return (f"Blackboard's receipt gives the time as {for_terminal(written)!r}, which the course cannot read "
                "(it reads Blackboard's English forms): collect this file by hand")
    actual = local.tzname() or ""
    if named and named != actual and not ({named, actual} <= ZERO and not local.utcoffset()):
        return (f"Blackboard's receipt gives the time in {for_terminal(named)}, but c.BlackboardDownload.time_zone "
                f"{zone_name!r} is {actual} then: set it to the Blackboard server's zone")
    return local.astimezone(UTC)


class GradeCentre(RosterFormat):
    """The Grade Centre export: the name as "Last, First", as Canvas's sortable names are."""

    def row(self, cell):
        values = super().row(cell)
        if values is not None:
            values["name"] = ", ".join(filter(None, [values.pop("last").strip(), values.pop("first").strip()]))
        return values


class Blackboard(Lms):
    name = "blackboard"
    title = "Blackboard"
    order = 30
    settings = (BlackboardDownload, BlackboardImport)
    rosters = (GradeCentre("blackboard", frozenset({"last name", "first name", "username", "student id"}),
                            {"last": "last name", "first": "first name", "lms_id": "username",
                             "sis_user_id": "student id"}, assignment=COLUMN),)
    writes_import = True

    def read_download(self, files: Mapping[str, Opener], lesson: str = "") -> dict[str, Match]:
        receipts, attached = {}, {}
        for path in files:
            first = ATTEMPT.search(path)  # the first: Blackboard's own, before anything the student named
            if "/" in path or first is None:
                continue
            attempt, rest = (path[:first.start()], first["time"]), path[first.end():]
            if rest == ".txt":
                receipts[attempt] = path
            elif rest.startswith("_") and len(rest) > 1:
                attached.setdefault(attempt, []).append((path, rest[1:]))
        zone = BlackboardDownload(config=self.config).time_zone
        found = {}
        for (head, stamp), path in receipts.items():
            receipt = _receipt(files[path])
            if receipt is None or not head.endswith(f"_{receipt.username}") or head == f"_{receipt.username}":
                continue
            when = receipt_time(receipt.submitted, zone)
            who = dict(format=self.name, key=f"lms:{receipt.username}", grading_id=self.grading_id(receipt.username),
                       name=receipt.name, lms_id=receipt.username, upload_prefix=f"{receipt.username}_",
                       timestamp=when if isinstance(when, datetime) else None,
                       problem=when if isinstance(when, str) else "")
            found[path] = Match(file_id="", evidence=True, **who)
            for file, own in attached.get((head, stamp), []):
                if file in receipt.files:
                    found[file] = Match(file_id=own, **who)
        return found

    def write_import(self, path: Path, lesson: str, lines: Sequence[GradeLine], points: Mapping[str, float], *,
                     assignments: Sequence[str] = ()) -> str:
        configured = BlackboardImport(config=self.config).columns.get(lesson, "")
        header, warning = grade_column(lesson, configured, assignments, COLUMN, kind="column", lms="Blackboard",
                                       export="the Blackboard Grade Centre export",
                                       setting="c.BlackboardImport.columns")
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, quoting=csv.QUOTE_ALL)
            writer.writerow([for_csv(c) for c in [*IDENTITY, header]])
            for line in lines:
                if line.mine(self):
                    last, first = _last_first(line.name)
                    writer.writerow([for_csv(c) for c in [last, first, line.lms_id, line.sis_user_id,
                                                          number(line.final)]])
        return warning


def _receipt(read: Opener) -> Receipt | None:
    try:
        data = read()
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error):  # no receipt; collect reports the file
        return None
    return None if len(data) > RECEIPT_BYTES else read_receipt(data.decode("utf-8-sig", errors="replace"))


def _last_first(name: str) -> tuple[str, str]:
    """(last name, first name) of a roster's "Last, First", or of a receipt's "First Last"."""
    last, sep, first = name.partition(", ")
    if sep:
        return last, first
    first, _, last = name.rpartition(" ")
    return last, first
