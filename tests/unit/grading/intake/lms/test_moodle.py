"""grader.grading.intake.lms.moodle: Moodle's download names, its worksheet and participants export, its ids,
and the grading worksheet to upload."""

from __future__ import annotations

from datetime import UTC, datetime

from grader.grading.intake.lms import moodle
from grader.grading.intake.lms.moodle import Moodle
from grader.grading.intake.roster import Roster, Student
from grader.grading.running.jobs import Result
from grader.student.submission_names import submission_filename
from tests.support import grade_rows, lms_import

POINTS = {"test_a": 3.0, "test_b": 4.0}
WORKSHEET = 'Identifier,Full name,Email address\n"Participant 88001",Ada Lovelace,ada@x\n' \
            '"Participant 88002",Grace Hopper,grace@x\n'


def test_flat_and_folder_names_say_the_participant_and_everything_in_a_folder_is_theirs():
    flat = "Ada Lovelace_88001_assignsubmission_file_03-parallel-heads.ipynb"
    made = submission_filename("03-parallel-heads", "ada", "20261201-000000")
    inner = f"Mallory_88009_assignsubmission_file_/deep/{made}"
    found = Moodle().read_download({flat: None, inner: None})
    assert (found[flat].grading_id, found[flat].name, found[flat].file_id) == (
        "moodle_88001", "Ada Lovelace", "03-parallel-heads.ipynb")
    assert found[flat].upload_prefix == "Ada Lovelace_88001_assignsubmission_file_"
    assert found[inner].key == "lms:88009" and found[inner].timestamp is None  # the make-submit name says nothing


def test_the_worksheet_and_the_participants_export_are_read_as_they_come():
    sheet = Roster.parse('Identifier,"Full name","Email address",Status\n"Participant 88001","Ada Lovelace",ada@x,\n')
    assert (sheet.kind, sheet.lms) == ("moodle-worksheet", "moodle")
    assert sheet.students == (Student("", "Ada Lovelace", "ada@x", "88001"),)
    export = Roster.parse('"First name","Surname","ID number",Username,"Email address"\nAda,Lovelace,S1,al,ada@x\n')
    assert export.kind == "moodle-export"
    assert export.students == (Student("", "Ada Lovelace", "ada@x", sis_user_id="S1", sis_login_id="al"),)


def test_the_worksheet_has_moodles_columns_one_row_per_participant(tmp_path):
    results = [Result("moodle_88001", "graded", scores={"test_a": 3.0, "test_b": 2.5})]
    rows = grade_rows("03-parallel-heads", results, POINTS, roster=WORKSHEET,
                      times={"moodle_88001": datetime(2026, 12, 1, 9, 30, tzinfo=UTC)})
    assert lms_import("moodle", tmp_path / "moodle.csv", "03-parallel-heads", rows, POINTS) == ([
        moodle.HEADER,
        ["Participant 88001", "Ada Lovelace", "ada@x", "5.5", "7", "Yes", "2026-12-01 09:30:00",
         "5.5 of 7 points; on time"],
        ["Participant 88002", "Grace Hopper", "grace@x", "", "7", "Yes", "", ""]], "")


def test_canvas_students_are_not_written_as_moodle_participants(tmp_path):
    rows = grade_rows("03-parallel-heads", [], POINTS, roster="Student,ID,SIS Login ID\nAda,1001,ada\n")
    assert lms_import("moodle", tmp_path / "moodle.csv", "03-parallel-heads", rows, POINTS)[0] == [moodle.HEADER]
