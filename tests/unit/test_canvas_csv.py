"""grader.grading.outputs.canvas_csv: Canvas's import columns, filled from the roster, one row per roster student."""

from __future__ import annotations

import csv

from grader.grading.outputs import canvas_csv
from grader.grading.running.jobs import Result
from tests.support import grade_rows

LESSON = "03-parallel-heads"
POINTS = {"test_a": 3.0, "test_b": 4.0}
EXPORT = ('Student,ID,SIS User ID,SIS Login ID,Section\n"Lovelace, Ada",1001,S1,ada,A\n'
          '"Hopper, Grace",1002,S2,grace,B\n')


def written(tmp_path, **options) -> list[list[str]]:
    results = [Result("canvas_1001", "graded", scores={"test_a": 3.0, "test_b": 2.0})]
    rows = grade_rows(LESSON, results, POINTS, roster=EXPORT)
    path = canvas_csv.write(tmp_path / "canvas.csv", LESSON, rows, POINTS, **options)
    return list(csv.reader(path.read_text().splitlines()))


def test_every_roster_student_once_with_the_identity_canvas_matches(tmp_path):
    assert written(tmp_path) == [
        [*canvas_csv.IDENTITY, LESSON], ["Points Possible", "", "", "", "", "7"],
        ["Lovelace, Ada", "1001", "S1", "ada", "A", "5"],
        ["Hopper, Grace", "1002", "S2", "grace", "B", ""]]  # no submission: Canvas keeps what it has


def test_the_column_can_name_the_assignment_and_exercises_come_only_on_request(tmp_path):
    rows = written(tmp_path, column="Lesson 3 (5503)", per_exercise=True)
    assert rows[0] == [*canvas_csv.IDENTITY, "Lesson 3 (5503)", f"{LESSON}: test_a", f"{LESSON}: test_b"]
    assert rows[1][5:] == ["7", "3", "4"] and rows[2][5:] == ["5", "3", "2"]


def test_without_a_roster_the_grading_id_is_the_login(tmp_path):
    rows = grade_rows(LESSON, [Result("ada", "graded", scores={"test_a": 3.0, "test_b": 4.0})], POINTS)
    path = canvas_csv.write(tmp_path / "canvas.csv", LESSON, rows, POINTS)
    assert list(csv.reader(path.read_text().splitlines()))[2] == ["ada", "", "", "ada", "", "7"]


EXPORT_ASSIGNMENTS = ["Lesson 1 (5501)", "03-Parallel-Heads (5503)"]


def test_the_column_is_the_exports_assignment_named_as_the_lesson():
    assert canvas_csv.column(LESSON, "", EXPORT_ASSIGNMENTS) == ("03-Parallel-Heads (5503)", "")
    assert canvas_csv.column(LESSON) == (LESSON, "")  # no export known: the lesson id, as before


def test_the_configured_column_wins_and_is_warned_about_when_the_export_lacks_it():
    assert canvas_csv.column(LESSON, "Lesson 1 (5501)", EXPORT_ASSIGNMENTS) == ("Lesson 1 (5501)", "")
    header, warning = canvas_csv.column(LESSON, "Lesson 3 (9999)", EXPORT_ASSIGNMENTS)
    assert header == "Lesson 3 (9999)"
    assert warning == ("WARNING: the Canvas import CSV's column 'Lesson 3 (9999)' is no assignment of the Canvas "
                       "gradebook export given as the roster (c.CanvasImport.columns gives 'Lesson 3 (9999)'): "
                       "importing it would create a new assignment in Canvas. Set c.CanvasImport.columns = "
                       "{'03-parallel-heads': '<the assignment's header>'}; the export's assignments: "
                       "Lesson 1 (5501), 03-Parallel-Heads (5503)")


def test_an_export_without_the_lessons_assignment_is_warned_about():
    header, warning = canvas_csv.column(LESSON, "", ["Lesson 1 (5501)"])
    assert header == LESSON
    assert "(no assignment of the export is named 03-parallel-heads)" in warning
    assert warning.endswith("the export's assignments: Lesson 1 (5501)")
