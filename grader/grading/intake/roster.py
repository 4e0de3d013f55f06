"""The course's students as the LMS lists them: a roster file, read in whichever of the formats below it is.

- **The course's own**: columns `id`, `name`, and optionally `email`, `lms_id` (the student's id in
  the LMS: Canvas's user id, Moodle's participant id, Blackboard's username) and `section`.
- **An LMS's export**: each LMS module's `rosters` (grader/grading/intake/lms/: Canvas's gradebook
  export, Moodle's grading worksheet and participants export, Blackboard's Grade Centre export) say
  which columns identify it, which column gives which field, which rows are no student (Canvas's
  `Points Possible`), and which columns are grade columns, kept as `Roster.assignments` (the LMS's
  import file heads its column by one of them).

Headers are read in any case; the first format whose columns the file has is its format.
docs/grading-day.md has the table of every format. A roster row's grading id is its `id` when the
roster has that column; otherwise the people registry (grader.grading.intake.people) gives one and keeps it.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, replace
from pathlib import Path

from grader.errors import BadDownload
from grader.grading.intake.ids import ID_RULE, name_key, normalised_id
from grader.grading.intake.lms import registry
from grader.grading.intake.lms.base import RosterFormat
from grader.safe_text import for_terminal

# The course's own roster: it has the columns id and name; the LMSs' exports are their modules'
# (grader.grading.intake.lms.registry.roster_formats).
COURSE = RosterFormat("course", frozenset({"id", "name"}), {"id": "id", "name": "name", "email": "email",
                                                           "lms_id": "lms_id", "section": "section"}, numbered=False)


@dataclass(frozen=True)
class Student:
    """One row of a roster: a person as the LMS lists them (`id` "" until the registry gives one)."""

    id: str
    name: str
    email: str = ""
    lms_id: str = ""
    section: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""

    def keys(self) -> set[str]:
        """The name as an LMS may write it: first-last and last-first ("Lovelace, Ada")."""
        return name_keys(self.name)


def name_keys(name: str) -> set[str]:
    """Every rotation of the words of `name`, reduced by `name_key`: "Ada Lovelace", "Lovelace, Ada" and
    Canvas's "lovelaceada" meet."""
    words = [w for w in re.split(r"[\s,]+", name) if w]
    return {name_key("".join(words[i:] + words[:i])) for i in range(len(words))} - {""}


@dataclass(frozen=True)
class Roster:
    """The rows of one roster file, and which LMS's format it is in."""

    kind: str
    students: tuple[Student, ...]
    assignments: tuple[str, ...] = ()  # an LMS export's grade columns, "03-parallel-heads (12345)"
    lms: str = ""  # the LMS whose export it is ("" for the course's own)

    @classmethod
    def read(cls, path: Path) -> Roster:
        """The roster in `path`; BadDownload naming the line when it cannot be used."""
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as error:
            raise BadDownload(f"cannot read the roster {path}: {for_terminal(error)}") from None
        return cls.parse(text, str(path))

    @classmethod
    def parse(cls, text: str, where: str = "the roster") -> Roster:
        rows = csv.DictReader(text.splitlines())
        headers = {(c or "").strip().casefold(): c for c in rows.fieldnames or []}
        formats = [(COURSE, None), *registry.roster_formats()]
        form, lms = next(((f, lms) for f, lms in formats if f.needed <= set(headers)), (None, None))
        if form is None:
            exports = "; ".join(f"{lms.title}'s {', '.join(sorted(f.needed))}" for f, lms in formats[1:])
            raise BadDownload(f"{where} is not a roster the course reads: it needs the columns id and name, or "
                              f"is an LMS's export of the students ({exports}) (found: "
                              f"{for_terminal(', '.join(headers))})")
        students, seen = [], set()
        for number, row in enumerate(rows, start=2):
            def cell(field: str, row=row) -> str:
                return (row.get(headers.get(form.fields.get(field, ""), ""), "") or "").strip()
            fields = form.row(cell)
            if fields is None or not any(fields.values()):  # Canvas's "Points Possible" row, an empty line
                continue
            student = Student(**{"id": "", "name": "", **fields})
            if lms is None:
                ident = normalised_id(student.id)
                if ident is None:
                    raise BadDownload(f"{where}, line {number}: the id '{for_terminal(student.id)}' is not {ID_RULE}")
                if ident in seen:
                    raise BadDownload(f"{where}, line {number}: the id {ident!r} is there twice")
                seen.add(ident)
                student = replace(student, id=ident)
            elif student.lms_id and student.lms_id in seen:
                raise BadDownload(f"{where}, line {number}: the LMS id {student.lms_id} is there twice")
            elif student.lms_id:
                seen.add(student.lms_id)
            students.append(student)
        headers_as_written = [(h or "").strip() for h in rows.fieldnames or []]
        assignments = tuple(h for h in headers_as_written if form.assignment and form.assignment.match(h))
        return cls(form.kind, tuple(students), assignments, lms.name if lms else "")

    def find(self, name: str = "", lms_id: str = "", ident: str = "") -> Student | str:
        """The one row for a file the LMS says is `lms_id` and `name`, or a make-submit file of `ident`;
        else why there is none."""
        if lms_id and any(s.lms_id for s in self.students):
            rows = [s for s in self.students if s.lms_id == lms_id]
            if rows:
                return rows[0]
        candidates: list[Student] = []
        if name:
            key = name_key(name)
            candidates = [s for s in self.students if key and key in s.keys()]
        elif ident:
            key = name_key(ident)
            candidates = [s for s in self.students if s.id == ident.casefold() or (key and key in s.keys())]
        if len(candidates) == 1:
            return candidates[0]
        who = for_terminal(name or ident or lms_id)
        if candidates:
            rows = ", ".join(s.id or s.name for s in candidates)
            return f"'{who}' matches {len(candidates)} roster rows ({rows}): none chosen"
        return f"'{who}' is not on the roster"
