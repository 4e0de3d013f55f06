"""The people registry: every person grading has met, with the one id they are graded under, for the whole term.

Kept in the course's state as `people.json` (Layout.people). A person is met through a roster row
or a downloaded file, and is known from then on by the keys the LMS or hub assigned them:
`lms:<id>` (Canvas's user id, Moodle's participant id, Blackboard's username), `hub:<user name>`, or `submit:<id>`
for a `make submit` file gathered by the instructor. The id a person gets on first meeting never
changes, so no run creates a second id for a known person, whatever order runs come in:

- from a file of an LMS download, without a roster: the LMS and its id for the person (the LMS module's
  `grading_id`: `canvas_1001`, `moodle_88001`, `blackboard_alovelace`), never the name (names change
  during a term) nor anything of the part of the file name the student chose; a `make submit` file's own id;
- from an LMS's roster export: the same id its files give, so that a run with the roster and one
  without agree in either order (Moodle's participants export has no number: its ids are made from
  the names; prefer the grading worksheet);
- from a roster with an `id` column, that id. Give such a roster in the first run: a person met
  before it keeps the id they had, and the run says so.

A roster, once given, is remembered here (who is on it, their names, emails, sections and SIS ids,
and the grade columns of an LMS's export, which that LMS's import file heads its column by):
later runs without one use it. A new roster replaces it, and `apply_roster` says who was added,
removed or renamed. People removed from the roster stay known, with their work; files from them
are no longer collected.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from filelock import FileLock

from grader.errors import BadDownload
from grader.grading.intake.ids import name_key, script_id
from grader.grading.intake.lms.base import Match
from grader.grading.intake.lms.registry import get, roster_formats
from grader.grading.intake.roster import Roster, Student, name_keys


@dataclass
class Person:
    id: str
    name: str = ""
    email: str = ""
    section: str = ""
    lms_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    keys: list[str] = field(default_factory=list)
    on_roster: bool = False
    lms: str = ""  # the LMS whose id `lms_id` is ("canvas", "moodle", "blackboard"), when known


@dataclass(frozen=True)
class RosterChanges:
    """What a new roster changed: ids added and removed, (id, old name, new name) renamed, and notes."""

    added: list[str]
    removed: list[str]
    renamed: list[tuple[str, str, str]]
    notes: list[str]

    def lines(self) -> list[str]:
        found = [f"added to the roster: {', '.join(self.added)}"] * bool(self.added)
        found += [f"removed from the roster (their work stays): {', '.join(self.removed)}"] * bool(self.removed)
        found += [f"renamed: {ident}: {old!r} -> {new!r}" for ident, old, new in self.renamed]
        return found + self.notes


class People:
    """The registry as read from `path`; `save` writes it back (atomically)."""

    def __init__(self, path: Path, persons: list[Person] | None = None, roster_kind: str = "",
                 assignments: list[str] | None = None):
        self.path = path
        self.persons = {p.id: p for p in persons or []}
        self.roster_kind = roster_kind  # the format of the roster last given; "" when none was
        self.assignments = list(assignments or [])  # its grade columns, when an LMS's export

    @classmethod
    def load(cls, path: Path) -> People:
        if not path.is_file():
            return cls(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(path, [Person(**p) for p in data["people"]], data.get("roster", ""),
                       data.get("assignments", []))
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise BadDownload(f"the people registry {path} cannot be read ({type(error).__name__}: {error}); "
                              "restore it from a backup, or remove it to start the term's ids anew") from None

    def save(self) -> None:
        data = {"roster": self.roster_kind, "assignments": self.assignments,
                "people": [asdict(p) for p in sorted(self.persons.values(), key=lambda p: p.id)]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(temporary, self.path)

    @property
    def has_roster(self) -> bool:
        return bool(self.roster_kind)

    @property
    def roster_lms(self) -> str:
        """The LMS whose export the roster last given was ("" for none, or the course's own)."""
        return next((lms.name for form, lms in roster_formats() if form.kind == self.roster_kind), "")

    def roster(self) -> list[Person]:
        """The people on the roster last given, by id."""
        return sorted((p for p in self.persons.values() if p.on_roster), key=lambda p: p.id)

    def by_key(self, key: str) -> Person | None:
        return next((p for p in self.persons.values() if key in p.keys), None)

    def _new(self, wanted: str) -> str:
        """`wanted` if no one has it, else `wanted` with a number."""
        for ident in [wanted, *(f"{wanted[:60]}_{n}" for n in range(2, 1000))]:
            if ident and ident not in self.persons:
                return ident
        raise BadDownload(f"no free id for {wanted!r}")

    # ---------------------------------------------------------------- the roster

    def apply_roster(self, roster: Roster) -> RosterChanges:
        """Make `roster` the course's roster: every row a person (met before, or new), no one else on it."""
        before = {p.id for p in self.persons.values() if p.on_roster}
        added, renamed, notes, matched = [], [], [], set()
        for row in roster.students:
            person = self._known(row, matched)
            if person is None:
                wanted = row.id or _roster_id(row, roster)
                person = Person(self._new(wanted))
                self.persons[person.id] = person
                added.append(person.id)
            elif person.id not in before:
                added.append(person.id)
            if row.id and row.id != person.id:
                notes.append(f"{row.id}: graded as {person.id}, the id given when first met (ids never change)")
            if person.name and row.name and name_key(person.name) != name_key(row.name) and person.on_roster:
                renamed.append((person.id, person.name, row.name))
            matched.add(person.id)
            person.name = row.name or person.name
            for name in ("email", "section", "lms_id", "sis_user_id", "sis_login_id"):
                setattr(person, name, getattr(row, name) or getattr(person, name))
            if row.lms_id and f"lms:{row.lms_id}" not in person.keys:
                person.keys.append(f"lms:{row.lms_id}")
            if roster.lms and row.lms_id:
                person.lms = roster.lms
        for person in self.persons.values():
            person.on_roster = person.id in matched
        self.roster_kind = roster.kind
        self.assignments = list(roster.assignments)
        return RosterChanges(sorted(added), sorted(before - matched), renamed, notes)

    def _known(self, row: Student, taken: set[str]) -> Person | None:
        """The person already met whom `row` is: by LMS id, then id, then (uniquely) name."""
        if row.lms_id and (person := self.by_key(f"lms:{row.lms_id}")):
            return person
        if row.id and row.id in self.persons and not self.persons[row.id].lms_id:
            return self.persons[row.id]
        if not row.lms_id:
            same = [p for p in self.persons.values() if p.id not in taken and name_keys(p.name) & row.keys()]
            if len(same) == 1:
                return same[0]
        return None

    # ---------------------------------------------------------------- files

    def identify(self, found: Match) -> Person | str:
        """The person a downloaded file is (meeting them now if need be), or why it is no one's."""
        known = self.by_key(found.key)
        if known is not None:
            if self.has_roster and not known.on_roster:
                return f"{known.id} is no longer on the roster"
            return known
        if self.has_roster:
            people = self.roster()
            table = Roster("", tuple(Student(p.id, p.name, lms_id=p.lms_id) for p in people))
            row = table.find(found.name, found.lms_id, found.student_id)
            if isinstance(row, str):
                return row
            person = self.persons[row.id]
            if found.lms_id and person.lms_id and person.lms_id != found.lms_id:
                return f"'{found.name}' has LMS id {found.lms_id}, but the roster gives {person.id} {person.lms_id}"
            person.keys.append(found.key)
            person.lms = person.lms or (found.format if found.lms_id else "")
            return person
        if found.lms_id:  # the LMS's user: the id its number gives
            person = Person(self._new(found.grading_id), found.name, lms_id=found.lms_id, keys=[found.key],
                            lms=found.format)
        else:  # a make-submit file: the id its name gives, someone else's already or not
            wanted = found.grading_id
            if wanted in self.persons:
                return f"the id {wanted} is already someone else's (another LMS's or the hub's)"
            person = Person(wanted, keys=[found.key])
        self.persons[person.id] = person
        return person

    def folder(self, ident: str) -> Person:
        """The person whose work is in the submitted folder `ident` (put there by nbgrader collect from
        a hub, or by hand): known by that id, or met now under it."""
        if ident not in self.persons:
            self.persons[ident] = Person(ident, keys=[f"hub:{ident}"], on_roster=False)
        return self.persons[ident]


def _roster_id(row: Student, roster: Roster) -> str:
    """The id of a roster row that has no `id` column: the one its files give without a roster (the LMS's
    `grading_id` of its `lms_id`), so that runs with and without the roster agree in either order; without a
    number (Moodle's participants export), one made from the name (`script_id`)."""
    lms = get(roster.lms) if row.lms_id else None
    return lms.grading_id(row.lms_id) if lms else script_id(row.name or row.email)


@contextmanager
def registry(path: Path) -> Iterator[People]:
    """The registry, held against other batches until the block ends, then saved."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.with_suffix(".lock")):
        people = People.load(path)
        yield people
        people.save()
