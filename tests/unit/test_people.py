"""grader.grading.intake.people: one id per person for the whole term, the roster remembered,
whatever order runs come in."""

from __future__ import annotations

import pytest

from grader.grading.intake.lms.base import Match
from grader.grading.intake.lms.registry import decide
from grader.grading.intake.people import People, registry
from grader.grading.intake.roster import Roster
from grader.student.submission_names import submission_filename

HEAD = "Student,ID,SIS User ID,SIS Login ID,Section\n"
CANVAS_1 = HEAD + '"Lovelace, Ada",1001,S1,ada,A\n"Hopper, Grace",1002,S2,grace,A\n'
CANVAS_2 = HEAD + '"Lovelace, Ada",1001,S1,ada,B\n"Hopper, Grace M.",1002,S2,g,A\n"Smith, Sam",1005,S5,sam,A\n'


def canvas_file(name: str, number: str) -> Match:
    path = f"{name}_{number}_7{number}_03-parallel-heads.ipynb"
    return decide([path])[1][path]


def test_a_person_keeps_one_id_with_and_without_the_roster_in_either_order(tmp_path):
    first = People(tmp_path / "a.json")
    first.apply_roster(Roster.parse(CANVAS_1))
    ada_first = first.identify(canvas_file("lovelaceada", "1001")).id
    second = People(tmp_path / "b.json")
    ada_second = second.identify(canvas_file("lovelaceada", "1001")).id
    second.apply_roster(Roster.parse(CANVAS_1))
    assert ada_first == ada_second == "canvas_1001"
    assert sorted(second.persons) == ["canvas_1001", "canvas_1002"]  # no second id for anyone


def test_the_roster_is_remembered_and_a_new_one_says_who_changed(tmp_path):
    with registry(tmp_path / "people.json") as people:
        people.apply_roster(Roster.parse(CANVAS_1))
    people = People.load(tmp_path / "people.json")
    assert people.has_roster and [p.id for p in people.roster()] == ["canvas_1001", "canvas_1002"]
    assert people.identify(canvas_file("nobody", "1999")) == "'nobody' is not on the roster"
    changes = people.apply_roster(Roster.parse(CANVAS_2))
    assert changes.added == ["canvas_1005"] and changes.removed == []
    assert changes.renamed == [("canvas_1002", "Hopper, Grace", "Hopper, Grace M.")]
    assert people.persons["canvas_1001"].section == "B" and people.persons["canvas_1002"].sis_login_id == "g"
    gone = people.apply_roster(Roster.parse(CANVAS_1))
    assert gone.removed == ["canvas_1005"] and "canvas_1005" in people.persons  # known still, with their work
    assert people.identify(canvas_file("smithsam", "1005")) == "canvas_1005 is no longer on the roster"


def test_a_course_roster_gives_its_own_ids_and_says_when_one_was_given_earlier(tmp_path):
    people = People(tmp_path / "people.json")
    people.identify(canvas_file("lovelaceada", "1001"))
    changes = people.apply_roster(Roster.parse("id,name,lms_id\nada,Ada Lovelace,1001\ngrace,Grace Hopper,1002\n"))
    assert sorted(p.id for p in people.roster()) == ["canvas_1001", "grace"]
    assert changes.notes == ["ada: graded as canvas_1001, the id given when first met (ids never change)"]


def test_make_submit_ids_are_normalised_and_look_alikes_stay_apart(tmp_path):
    people = People(tmp_path / "people.json")

    def submit(student: str):
        name = submission_filename("03-parallel-heads", student, "20261129-140500")
        return people.identify(decide([name], "03-parallel-heads")[1][name])

    assert submit("Ada").id == submit("ada").id == "ada"
    cyrillic = submit("аda")  # a Cyrillic а
    assert cyrillic.id != "ada" and cyrillic.id.startswith("ada_")
    assert submit("李雷").id.startswith("li_lei_")


def test_a_damaged_registry_is_refused_with_what_to_do(tmp_path):
    (tmp_path / "people.json").write_text("{not json")
    with pytest.raises(Exception, match="restore it from a backup"):
        People.load(tmp_path / "people.json")


def test_the_registry_is_held_against_another_batch(tmp_path):
    """While one batch holds the registry, another cannot take it (filelock, as the test suite locks too)."""
    from filelock import FileLock, Timeout

    path = tmp_path / "term" / "people.json"
    with registry(path):
        with pytest.raises(Timeout):
            FileLock(path.with_suffix(".lock")).acquire(timeout=0.1)
    with FileLock(path.with_suffix(".lock")).acquire(timeout=0.1):
        pass
