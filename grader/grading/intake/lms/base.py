"""What an LMS module gives the grader: one small interface, `Lms`, and the plain data it speaks in.

An LMS module (canvas.py, moodle.py, blackboard.py, make_submit.py) holds everything the grader knows of
one LMS, and nothing else does:

- its download: `read_download` says, for every file of a download it recognises as its own, who
  the file is, when it was handed in and whether the LMS marked it late (a `Match`), from what the LMS
  wrote and never from the part of a name the student chose;
- its roster: `rosters`, the exports the LMS gives of a course's students (`RosterFormat`: the
  columns that identify it, which column gives what, the grade columns it heads);
- its identity: `grading_id`, the id a person the LMS numbers gets for the whole term;
- its import file: `write_import`, the grades as the LMS's own import reads them, from `GradeLine`s.

The registry (registry.py) lists the modules; intake, policy and outputs call them only through it
and this interface, and never compare an LMS's name.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from traitlets.config import Config, Configurable

from grader.grading.intake.ids import normalised_id, script_id

Opener = Callable[[], bytes]  # returns a downloaded file's bytes (capped; may raise OSError, ValueError, ...)


@dataclass(frozen=True)
class Match:
    """What an LMS says of one file of its download.

    `key` is who the file is, as the LMS assigned it (`lms:<the LMS's id>`, or `submit:<id>` for a
    make-submit file), and `grading_id` the id that person gets when first met; `name` is the name the
    LMS wrote, matched against the roster. `file_id` is the student's own file name, which never says
    who or when. `evidence` marks a file that is the LMS's own record of a submission (Blackboard's
    receipt), kept out of grading without a note; `problem`, a file of the format that is still no
    submission of the lesson, and why."""

    format: str
    key: str
    grading_id: str
    file_id: str
    name: str = ""
    lms_id: str = ""
    student_id: str = ""  # a make-submit file's own id, matched against a course roster's ids
    late: bool = False
    timestamp: datetime | None = None  # None: the time the file was written into the download
    upload_prefix: str = ""  # the start of the name the LMS gave the file, for naming the feedback to upload
    problem: str = ""
    evidence: bool = False


@dataclass(frozen=True)
class RosterFormat:
    """One export of a course's students: the headers that identify it (lower case), and which header
    gives which field of a roster row (grader.grading.intake.roster.Student)."""

    kind: str  # as people.json remembers the roster last given: "canvas", "moodle-worksheet", ...
    needed: frozenset[str]
    fields: Mapping[str, str]
    assignment: re.Pattern | None = None  # a grade column the LMS's import matches by (`name` group: its name)
    skip: Callable[[Callable[[str], str]], bool] = lambda cell: False  # a row that is no student
    numbered: bool = True  # every row carries the LMS's id for the student

    def row(self, cell: Callable[[str], str]) -> dict[str, str] | None:
        """The roster row's fields from `cell(field)` (the row's cell of that field's header), or None when
        the row is no student."""
        values = {name: cell(name) for name in self.fields}
        if self.skip(cell) or (self.numbered and not values.get("lms_id")):
            return None
        return values


@dataclass(frozen=True)
class GradeLine:
    """One student's grade as an LMS's import file needs it (built from a row of grader.grading.policy.grades)."""

    student: str  # the grading id
    name: str  # the roster's name, else the grading id
    final: float | None  # the lesson's points after any penalty; None: no grade
    lms: str = ""  # the LMS the person's `lms_id` is from, "" when unknown
    lms_id: str = ""
    email: str = ""
    section: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    scores: Mapping[str, float | None] = field(default_factory=dict)  # per exercise, None unless graded
    time: datetime | None = None  # of the graded submission
    lateness: str = ""  # "on time", "late 1 d 2 h", ...

    def mine(self, lms: Lms) -> bool:
        """Whether the person has an id of `lms` (or an id of no known LMS, from the course's roster)."""
        return bool(self.lms_id) and self.lms in (lms.name, "")


class Lms(ABC):
    """One LMS: its download, its roster exports, its ids and its import file."""

    name: ClassVar[str]  # the download format's name (--format), the import file's (<lesson>-<name>.csv), ids' prefix
    title: ClassVar[str]  # as people call it: "Canvas"
    order: ClassVar[int] = 50  # its place among the LMSs: the order formats are tried, rosters recognised, files listed
    fallback: ClassVar[bool] = False  # its download is used only when no other format fits the whole download
    settings: ClassVar[tuple[type[Configurable], ...]] = ()  # its option classes (traitlets, with help=)
    rosters: ClassVar[tuple[RosterFormat, ...]] = ()
    writes_import: ClassVar[bool] = False

    def __init__(self, config: Config | None = None):
        self.config = config or Config()  # the course's configuration, for the LMS's own settings

    @abstractmethod
    def read_download(self, files: Mapping[str, Opener], lesson: str = "") -> dict[str, Match]:
        """A Match for every file of the download (path in the download -> its bytes) that this LMS's download
        holds as it names them; files it would not have written are left out. `lesson`: the lesson graded
        (a file of the format that is no submission of it gets a `problem`)."""

    def grading_id(self, lms_id: str) -> str:
        """The grading id of the person this LMS knows as `lms_id`: `canvas_1001`. Only the LMS's id, never the
        name: a name can change during the term, and the id must not."""
        wanted = f"{self.name}_{lms_id}"
        return normalised_id(wanted) or script_id(wanted)

    def write_import(self, path: Path, lesson: str, lines: Sequence[GradeLine], points: Mapping[str, float], *,
                     assignments: Sequence[str] = ()) -> str:
        """Write the grades of `lesson` to `path` as this LMS's grade import reads them; return a warning for the
        instructor, or "". `assignments`: the grade columns of this LMS's export given as the roster."""
        raise NotImplementedError(f"{self.title} has no import file")


class NamedFiles(Lms):
    """An LMS whose every file says who and when by its path alone, as one regular expression (the syntax of
    nbgrader's FileNameCollectorPlugin) matched against the file's whole path in the download."""

    pattern: ClassVar[str]

    def read_download(self, files: Mapping[str, Opener], lesson: str = "") -> dict[str, Match]:
        found = {}
        for path in files:
            fits = re.fullmatch(self.pattern, path, flags=re.DOTALL)
            if fits and (match := self.read_name({k: v or "" for k, v in fits.groupdict().items()}, path, lesson)):
                found[path] = match
        return found

    @abstractmethod
    def read_name(self, groups: dict[str, str], path: str, lesson: str) -> Match | None:
        """The Match of a path whose pattern gave `groups`, or None when it is still not this LMS's."""


def grade_column(lesson: str, configured: str, assignments: Sequence[str], pattern: re.Pattern, *, export: str,
                 setting: str, kind: str, lms: str) -> tuple[str, str]:
    """(the import file's header for `lesson`, a warning or ""): `configured` (the LMS's `columns` setting)
    wins; else the one grade column of the LMS's export (`assignments`, as people.json remembers them) named
    `lesson`, compared without case; else the lesson id. The warning, when an export is known and the header is
    none of its columns (`kind`: what the LMS calls one, `export`: the export's name, `setting`: the option)."""
    named = [a for a in assignments if (m := pattern.match(a)) and m["name"].strip().casefold() == lesson.casefold()]
    header = configured or (named[0] if len(named) == 1 else lesson)
    if not assignments or header in assignments:
        return header, ""
    where = (f"{setting} gives {header!r}" if configured else
             f"{len(named)} {kind}s of the export are named {lesson}" if named else
             f"no {kind} of the export is named {lesson}")
    return header, (f"WARNING: the {lms} import CSV's column {header!r} is no {kind} of {export} given as the "
                    f"roster ({where}): importing it would create a new {kind} in {lms}. Set {setting} = "
                    f"{{{lesson!r}: '<the {kind}'s header>'}}; the export's {kind}s: {', '.join(assignments)}")
