"""The course's students as the LMS lists them: a roster file, read in whichever of the formats below it is.

- **The course's own**: columns `id`, `name`, and optionally `email`, `lms_id` (Canvas's user id or
  Moodle's participant id) and `section`.
- **Canvas's gradebook export** (Grades > Export): `Student` (the sortable name, "Lovelace, Ada"), `ID`
  (Canvas's user id: the number in the download's file names), `SIS User ID`, `SIS Login ID`,
  `Section`, then one column per assignment ("03-parallel-heads (12345)": its name and Canvas's id),
  kept as `Roster.assignments` (the Canvas import CSV takes its column from them). The `Points
  Possible` row is skipped.
- **Moodle's grading worksheet** (the assignment's "Download grading worksheet"): `Identifier`
  ("Participant 88001": the participant id in the download's file names), `Full name`,
  `Email address`, then the grade columns.
- **Moodle's participants or grades export**: `First name`, `Last name` (or `Surname`), `Email
  address`, and optionally `ID number` and `Username`. It has no participant id, so downloads are
  matched to it by name.

Headers are read in any case. Which column gives what is in `COLUMNS`; docs/grading-day.md has
the same table. A roster row's grading id is its `id` when the roster has that column; otherwise the
people registry (grader.grading.intake.people) gives one and keeps it.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, replace
from pathlib import Path

from grader.errors import BadDownload
from grader.grading.intake.ids import ID_RULE, name_key, normalised_id
from grader.safe_text import for_terminal

# kind -> (columns that identify it, {field of Student: header, lower case})
COLUMNS = {
    "course": ({"id", "name"}, {"id": "id", "name": "name", "email": "email", "lms_id": "lms_id",
                                 "section": "section"}),
    "canvas": ({"student", "id", "sis login id"}, {"name": "student", "lms_id": "id", "sis_user_id": "sis user id",
                                                  "sis_login_id": "sis login id", "section": "section"}),
    "moodle-worksheet": ({"identifier", "full name"}, {"lms_id": "identifier", "name": "full name",
                                                       "email": "email address"}),
    "moodle-export": ({"first name", "email address"}, {"first": "first name", "last": "last name",
                                                        "surname": "surname", "email": "email address",
                                                        "sis_user_id": "id number", "sis_login_id": "username"}),
}


# A column of Canvas's gradebook export that is an assignment: its name, then Canvas's id in brackets.
ASSIGNMENT = re.compile(r"^(?P<name>.+?)\s*\((?P<id>\d+)\)$")


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
    assignments: tuple[str, ...] = ()  # Canvas's export: its assignment columns, "03-parallel-heads (12345)"

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
        kind = next((k for k, (needed, _) in COLUMNS.items() if needed <= set(headers)), None)
        if kind is None:
            raise BadDownload(f"{where} is not a roster the course reads: it needs the columns id and name, or "
                              "is Canvas's gradebook export or Moodle's grading worksheet or participants "
                              f"export (found: {for_terminal(', '.join(headers))})")
        fields = COLUMNS[kind][1]
        students, seen = [], set()
        for number, row in enumerate(rows, start=2):
            def cell(field: str, row=row) -> str:
                return (row.get(headers.get(fields.get(field, ""), ""), "") or "").strip()
            student = _student(kind, cell)
            if student is None:  # Canvas's "Points Possible" row, an empty line
                continue
            if kind == "course":
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
        assignments = tuple(h for h in headers_as_written if kind == "canvas" and ASSIGNMENT.match(h))
        return cls(kind, tuple(students), assignments)

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


def _student(kind: str, cell) -> Student | None:
    if kind == "moodle-export":
        name = " ".join(filter(None, [cell("first"), cell("last") or cell("surname")]))
        if not name:
            return None
        return Student("", name, cell("email"), sis_user_id=cell("sis_user_id"), sis_login_id=cell("sis_login_id"))
    lms_id = cell("lms_id")
    if kind == "moodle-worksheet":
        lms_id = "".join(re.findall(r"\d+", lms_id))
    if kind == "canvas" and (not lms_id or cell("name").casefold() == "points possible"):
        return None
    if kind != "course" and not lms_id:
        return None
    if kind == "course" and not (cell("id") or cell("name")):
        return None
    return Student(cell("id"), cell("name"), cell("email"), lms_id, cell("section"), cell("sis_user_id"),
                   cell("sis_login_id"))
