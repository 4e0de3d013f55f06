"""grader.grading.intake.lms.canvas: Canvas's download names, its gradebook export, its ids and its import CSV."""

from __future__ import annotations

from traitlets.config import Config

from grader.grading.intake.lms import canvas
from grader.grading.intake.lms.canvas import Canvas
from grader.grading.intake.roster import Roster, Student
from grader.grading.running.jobs import Result
from tests.support import grade_rows, lms_import

LESSON = "03-parallel-heads"
POINTS = {"test_a": 3.0, "test_b": 4.0}
EXPORT = ('Student,ID,SIS User ID,SIS Login ID,Section\n"Lovelace, Ada",1001,S1,ada,A\n'
          '"Hopper, Grace",1002,S2,grace,B\n')


def test_a_download_name_says_who_and_the_late_mark_and_the_rest_is_the_students():
    path = "hoppergrace_LATE_1002_50002_03-parallel-heads-1.ipynb"
    found = Canvas().read_download({path: None})[path]
    assert (found.key, found.grading_id, found.name, found.lms_id, found.late, found.file_id) == (
        "lms:1002", "canvas_1002", "hoppergrace", "1002", True, "03-parallel-heads-1.ipynb")
    assert found.upload_prefix == "hoppergrace_LATE_1002_50002_" and found.timestamp is None
    assert Canvas().read_download({"folder/ada_1001_5_x.ipynb": None, "ada_x_5_y.ipynb": None}) == {}


def test_the_gradebook_export_is_read_with_its_assignments_and_without_points_possible():
    roster = Roster.parse('Student,ID,SIS User ID,SIS Login ID,Section,Lesson 3 (5503),Current Score\n'
                          '    Points Possible,,,,,15,\n"Lovelace, Ada",1001,S1,ada@uni.example,A,,\n')
    assert (roster.kind, roster.lms, roster.assignments) == ("canvas", "canvas", ("Lesson 3 (5503)",))
    assert roster.students == (Student("", "Lovelace, Ada", "", "1001", "A", "S1", "ada@uni.example"),)


def written(tmp_path, config=None, assignments=()):
    results = [Result("canvas_1001", "graded", scores={"test_a": 3.0, "test_b": 2.0})]
    rows = grade_rows(LESSON, results, POINTS, roster=EXPORT)
    return lms_import("canvas", tmp_path / "canvas.csv", LESSON, rows, POINTS, config=config, assignments=assignments)


def test_every_roster_student_once_with_the_identity_canvas_matches(tmp_path):
    assert written(tmp_path) == ([
        [*canvas.IDENTITY, LESSON], ["Points Possible", "", "", "", "", "7"],
        ["Lovelace, Ada", "1001", "S1", "ada", "A", "5"],
        ["Hopper, Grace", "1002", "S2", "grace", "B", ""]], "")  # no submission: Canvas keeps what it has


def test_the_column_can_name_the_assignment_and_exercises_come_only_on_request(tmp_path):
    config = Config({"CanvasImport": {"columns": {LESSON: "Lesson 3 (5503)"}, "per_exercise": True}})
    rows, warning = written(tmp_path, config)
    assert rows[0] == [*canvas.IDENTITY, "Lesson 3 (5503)", f"{LESSON}: test_a", f"{LESSON}: test_b"]
    assert rows[1][5:] == ["7", "3", "4"] and rows[2][5:] == ["5", "3", "2"] and warning == ""


def test_without_a_roster_the_grading_id_is_the_login(tmp_path):
    rows = grade_rows(LESSON, [Result("ada", "graded", scores={"test_a": 3.0, "test_b": 4.0})], POINTS)
    assert lms_import("canvas", tmp_path / "c.csv", LESSON, rows, POINTS)[0][2] == ["ada", "", "", "ada", "", "7"]


EXPORT_ASSIGNMENTS = ["Lesson 1 (5501)", "03-Parallel-Heads (5503)"]


def test_the_column_is_the_exports_assignment_named_as_the_lesson(tmp_path):
    assert canvas.column(LESSON, "", EXPORT_ASSIGNMENTS) == ("03-Parallel-Heads (5503)", "")
    assert canvas.column(LESSON) == (LESSON, "")  # no export known: the lesson id, as before
    assert written(tmp_path, assignments=EXPORT_ASSIGNMENTS)[0][0][-1] == "03-Parallel-Heads (5503)"


def test_the_configured_column_wins_and_is_warned_about_when_the_export_lacks_it():
    assert canvas.column(LESSON, "Lesson 1 (5501)", EXPORT_ASSIGNMENTS) == ("Lesson 1 (5501)", "")
    header, warning = canvas.column(LESSON, "Lesson 3 (9999)", EXPORT_ASSIGNMENTS)
    assert header == "Lesson 3 (9999)"
    assert warning == ("WARNING: the Canvas import CSV's column 'Lesson 3 (9999)' is no assignment of the Canvas "
                       "gradebook export given as the roster (c.CanvasImport.columns gives 'Lesson 3 (9999)'): "
                       "importing it would create a new assignment in Canvas. Set c.CanvasImport.columns = "
                       "{'03-parallel-heads': '<the assignment's header>'}; the export's assignments: "
                       "Lesson 1 (5501), 03-Parallel-Heads (5503)")


def test_an_export_without_the_lessons_assignment_is_warned_about():
    header, warning = canvas.column(LESSON, "", ["Lesson 1 (5501)"])
    assert header == LESSON
    assert "(no assignment of the export is named 03-parallel-heads)" in warning
    assert warning.endswith("the export's assignments: Lesson 1 (5501)")
