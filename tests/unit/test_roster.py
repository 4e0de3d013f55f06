"""grader.grading.intake.roster: the roster as each LMS exports it, and the course's own."""

from __future__ import annotations

import pytest

from grader.errors import BadDownload
from grader.grading.intake.roster import Roster, Student

CANVAS_EXPORT = ('Student,ID,SIS User ID,SIS Login ID,Section,Lesson 3 (5503),Current Score\n'
                 '    Points Possible,,,,,15,\n'
                 '"Lovelace, Ada",1001,S1,ada@uni.example,A,,\n'
                 '"Student, Test",1999,,,A,,\n')
MOODLE_WORKSHEET = ('Identifier,"Full name","Email address",Status,Grade,"Maximum Grade"\n'
                    '"Participant 88001","Ada Lovelace",ada@uni.example,Submitted,,15.00\n')
MOODLE_EXPORT = '"First name","Last name","ID number",Username,"Email address"\nAda,Lovelace,S1,alovelace,ada@x\n'


@pytest.mark.parametrize(("text", "kind", "student"), [
    ("id,name,email,lms_id,section\nADA,Ada Lovelace,ada@x,1001,A\n", "course",
     Student("ada", "Ada Lovelace", "ada@x", "1001", "A")),
    (CANVAS_EXPORT, "canvas", Student("", "Lovelace, Ada", "", "1001", "A", "S1", "ada@uni.example")),
    (MOODLE_WORKSHEET, "moodle-worksheet", Student("", "Ada Lovelace", "ada@uni.example", "88001")),
    (MOODLE_EXPORT, "moodle-export", Student("", "Ada Lovelace", "ada@x", sis_user_id="S1", sis_login_id="alovelace")),
])
def test_each_lms_export_is_read_as_it_comes(text, kind, student):
    roster = Roster.parse(text)
    assert roster.kind == kind and roster.students[0] == student


def test_canvas_points_possible_row_is_skipped_and_names_match_either_word_order():
    roster = Roster.parse(CANVAS_EXPORT)
    assert [s.lms_id for s in roster.students] == ["1001", "1999"]
    assert roster.find(name="lovelaceada").lms_id == "1001"  # as Canvas's download writes the name
    assert roster.find(name="Ada Lovelace").lms_id == "1001"
    assert roster.find(lms_id="1999").name == "Student, Test"


@pytest.mark.parametrize(("text", "message"), [
    ("name,email\nAda,a@x\n", "needs the columns id and name"),
    ("id,name\nada lovelace,Ada\n", "line 2: the id 'ada lovelace' is not"),
    ("id,name\nada,Ada\nADA,Ada L\n", "line 3: the id 'ada' is there twice"),
    ("Student,ID,SIS Login ID\nA,1,a\nB,1,b\n", "line 3: the LMS id 1 is there twice"),
    ("id,name\n\x1b]0;owned\x07,Eve\n", r"\x1b]0;owned\x07"),  # shown escaped, never sent to the terminal
])
def test_a_roster_that_cannot_be_used_is_refused_with_the_line(text, message):
    with pytest.raises(BadDownload) as refused:
        Roster.parse(text)
    assert message in str(refused.value) and "\x1b" not in str(refused.value)


def test_an_ambiguous_name_chooses_no_one_and_control_characters_are_shown_inert():
    roster = Roster.parse("id,name\nalan,Alan Turing\nalan2,Alan Turing\neve,Eve\u202e Evil\n")
    assert roster.find(name="Alan Turing") == "'Alan Turing' matches 2 roster rows (alan, alan2): none chosen"
    reason = roster.find(name="Mallory\x1b[2J")
    assert isinstance(reason, str) and "\x1b" not in reason and "\\x1b" in reason


def test_canvas_exports_assignment_columns_are_kept_and_remembered(tmp_path):
    from grader.grading.intake.people import People

    text = ('Student,ID,SIS User ID,SIS Login ID,Section,01-single-head (5501),Lesson 2 (5502),Current Score\n'
            '    Points Possible,,,,,7,9,\n"Lovelace, Ada",1001,S1,ada,A,,,\n')
    roster = Roster.parse(text)
    assert roster.assignments == ("01-single-head (5501)", "Lesson 2 (5502)")  # not "Current Score"
    people = People(tmp_path / "people.json")
    people.apply_roster(roster)
    people.save()
    assert People.load(tmp_path / "people.json").assignments == ["01-single-head (5501)", "Lesson 2 (5502)"]
    people.apply_roster(Roster.parse("id,name\nada,Ada\n"))
    assert people.assignments == []  # another roster: no export known any more
