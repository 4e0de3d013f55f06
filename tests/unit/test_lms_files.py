"""grader.grading.outputs.lesson_reports.lms_files: only the import file of the LMS the students came from."""

from __future__ import annotations

import pytest

from grader.errors import UsageError
from grader.grading.outputs.lesson_reports import lms_files
from grader.grading.running.jobs import Result
from tests.support import grade_rows

POINTS = {"test_a": 3.0}
CANVAS = "Student,ID,SIS User ID,SIS Login ID,Section\nAda,1001,S1,ada,A\n"
MOODLE = 'Identifier,Full name,Email address\n"Participant 88001",Ada Lovelace,ada@x\n'
BLACKBOARD = '"Last Name","First Name","Username","Student ID"\n"Lovelace","Ada","alovelace","S1"\n'


def test_a_canvas_course_gets_the_canvas_file_and_a_moodle_one_the_moodle_file():
    assert lms_files(grade_rows("l", [], POINTS, roster=CANVAS)) == ["canvas"]
    assert lms_files(grade_rows("l", [], POINTS, roster=MOODLE)) == ["moodle"]


def test_every_lmss_when_none_is_known_or_those_asked_for():
    hub = grade_rows("l", [Result("ada", "graded", scores={"test_a": 3.0})], POINTS)
    assert lms_files(hub) == ["canvas", "moodle", "blackboard"]
    assert lms_files(grade_rows("l", [], POINTS, roster=CANVAS), ["moodle", "canvas"]) == ["canvas", "moodle"]
    assert lms_files(grade_rows("l", [], POINTS, roster=BLACKBOARD)) == ["blackboard"]
    with pytest.raises(UsageError, match="c.LmsImport.lms names sakai: it takes canvas, moodle, blackboard"):
        lms_files(hub, ["sakai"])
