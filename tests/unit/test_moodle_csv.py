"""grader.grading.outputs.moodle_csv: Moodle's grading worksheet, with the participant ids of the download."""

from __future__ import annotations

import csv
from datetime import UTC, datetime

from grader.grading.outputs import moodle_csv
from grader.grading.running.jobs import Result
from tests.support import grade_rows

POINTS = {"test_a": 3.0, "test_b": 4.0}
WORKSHEET = 'Identifier,Full name,Email address\n"Participant 88001",Ada Lovelace,ada@x\n' \
            '"Participant 88002",Grace Hopper,grace@x\n'


def test_the_worksheet_has_moodles_columns_one_row_per_participant(tmp_path):
    results = [Result("moodle_88001", "graded", scores={"test_a": 3.0, "test_b": 2.5})]
    rows = grade_rows("03-parallel-heads", results, POINTS, roster=WORKSHEET,
                      times={"moodle_88001": datetime(2026, 12, 1, 9, 30, tzinfo=UTC)})
    path = moodle_csv.write(tmp_path / "moodle.csv", rows, POINTS)
    assert list(csv.reader(path.read_text().splitlines())) == [
        moodle_csv.HEADER,
        ["Participant 88001", "Ada Lovelace", "ada@x", "5.5", "7", "Yes", "2026-12-01 09:30:00",
         "5.5 of 7 points; on time"],
        ["Participant 88002", "Grace Hopper", "grace@x", "", "7", "Yes", "", ""]]


def test_canvas_students_are_not_written_as_moodle_participants(tmp_path):
    rows = grade_rows("03-parallel-heads", [], POINTS, roster="Student,ID,SIS Login ID\nAda,1001,ada\n")
    path = moodle_csv.write(tmp_path / "moodle.csv", rows, POINTS)
    assert list(csv.reader(path.read_text().splitlines())) == [moodle_csv.HEADER]
