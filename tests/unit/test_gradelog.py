"""grader.grading.outputs.gradelog: one inert line per graded submission."""

from __future__ import annotations

from grader.grading.outputs import gradelog
from grader.grading.running.jobs import Result

POINTS = {"test_a": 3.0, "test_b": 4.0}


def test_the_log_has_one_line_per_submission_with_its_fields(tmp_path):
    log = tmp_path / "logs" / "x.log"
    gradelog.append(log, "03-parallel-heads", Result("ada", "graded", scores=dict(POINTS), seconds=3.21), POINTS)
    gradelog.append(log, "03-parallel-heads", Result("eve\nx", "failed", reason="bad\x1b[2J", seconds=1), POINTS)
    failed = Result("bob", "failed", reason="grader error", detail="Traceback\nError\x1b")
    gradelog.append(log, "03-parallel-heads", failed, POINTS)
    lines = log.read_text().splitlines()
    assert len(lines) == 3 and lines[2].split("\t")[6] == "Traceback\\nError\\x1b"
    assert lines[0].split("\t")[1:] == ["ada", "03-parallel-heads", "7/7", "graded", "3.2"]
    assert "\x1b" not in lines[1] and lines[1].split("\t")[1] == "eve\\nx"


def test_a_feedback_failure_says_why_in_the_log():
    graded = Result("ada", "graded", scores=dict(POINTS), seconds=2.0,
                    feedback_error="nbgrader could not make the feedback page: ValueError: bad\x1b")
    fields = gradelog.line("03-parallel-heads", graded, POINTS).split("\t")
    assert fields[4] == "graded; no feedback page: nbgrader could not make the feedback page: ValueError: bad\\x1b"
