"""The instructor's view of a batch: progress, grades CSV, score plot and summary (no kernels here)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from grader.grading.intake.collect import Skipped
from grader.grading.outputs import report
from grader.grading.running.jobs import Result
from grader.grading.running.triage import Flag
from tests.support import grade_rows

POINTS = {"test_a": 3.0, "test_b": 2.0}
OUTCOMES = [
    Result("zoe", "graded", scores={"test_a": 3.0, "test_b": 2.0}, seconds=3.2),
    Result("ada", "graded", scores={"test_a": 0.0, "test_b": 2.0}, flags=[Flag("timeout", "a")], seconds=33.0),
    Result("bob", "failed", reason="empty file"),
    Result("cy", "graded", scores={"test_a": 3.0, "test_b": 0.0}, flags=[Flag("test-cell-missing", "test_b")],
           cached=True),
]


def test_grades_csv_has_a_row_per_student_with_points_total_status_and_flags(tmp_path):
    rows = grade_rows("01-single-head", OUTCOMES, POINTS, roster="id,name\nada,Ada\nbob,Bob\ncy,Cy\nzoe,Zoe\nsam,Sam\n")
    path = report.write_csv(tmp_path / "grades" / "lesson.csv", rows, POINTS)
    with path.open() as handle:
        rows = list(csv.reader(handle))
    assert rows == [
        ["student", "name", "test_a", "test_b", "total", "late", "penalty", "final", "status", "notes"],
        ["ada", "Ada", "0", "2", "2", "", "", "2", "graded", "timeout:a"],
        ["bob", "Bob", "", "", "", "", "", "", "failed", "empty file"],
        ["cy", "Cy", "3", "0", "3", "", "", "3", "graded", "test-cell-missing:test_b"],
        ["sam", "Sam", "", "", "", "", "", "", "no submission", ""],
        ["zoe", "Zoe", "3", "2", "5", "", "", "5", "graded", ""],
    ]


def test_score_plot_has_a_titled_labelled_panel_per_exercise_and_the_total(tmp_path):
    path = tmp_path / "lesson.png"
    figure = report.plot_scores(path, OUTCOMES, POINTS, "03-parallel-heads")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "03-parallel-heads" in figure.get_suptitle() and "3 graded" in figure.get_suptitle()
    panels = [ax for ax in figure.axes if ax.get_visible()]
    assert [ax.get_title().split(" ")[0] for ax in panels] == ["test_a", "test_b", "total"]
    assert all(ax.get_xlabel() == "points" and ax.get_ylabel() == "students" for ax in panels)
    # test_a: one student of three scored 0, two full marks.
    heights = [patch.get_height() for patch in panels[0].patches]
    assert heights == [1, 0, 0, 2] and "67% full marks" in panels[0].get_title()


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_a_bar_on_a_terminal_and_lines_in_a_log():
    log = io.StringIO()
    progress = report.Progress(2, POINTS, stream=log)
    progress.update(OUTCOMES[0])
    progress.update(OUTCOMES[2])
    progress.close()
    assert log.getvalue() == "[1/2] zoe: 5/5 (3.2 s)\n[2/2] bob: failed: empty file (0.0 s)\n"
    terminal = Terminal()
    progress = report.Progress(4, POINTS, stream=terminal, label="lesson")
    progress.update(OUTCOMES[0])
    progress.close()
    drawn = terminal.getvalue()
    assert "\r" in drawn and "lesson" in drawn and "1/4" in drawn and "<" in drawn  # the bar, redrawn: done, time left


def test_summary_lists_what_needs_attention():
    text = report.summary("lesson", OUTCOMES, [Skipped("notes.txt", "the file name does not follow x")],
                          seconds=61.0, workers=2, files={"grades": Path("grades/lesson.csv")})
    assert text.splitlines() == [
        "lesson: 4 submissions in 61 s with 2 workers",
        "  graded                   3 (1 already up to date)",
        "  failed to grade          1",
        "    bob: empty file",
        "  needing manual review    1",
        "    cy: test cell test_b was deleted; put back and run",
        "  timed out                1",
        "    ada: a ran past the time limit",
        "  hit the memory limit     0",
        "  not collected (files)    1",
        "    notes.txt: the file name does not follow x",
        "  grades: grades/lesson.csv",
    ]


def test_summary_names_each_student_beside_the_id_and_spaces_every_file_after_its_name():
    failed = Result("canvas_1001", "failed", reason="empty file")
    review = Result("canvas_1002", "graded", scores={"test_a": 3.0}, flags=[Flag("feedback-failed")],
                    feedback_error="nbgrader could not make the feedback page: ValueError: bad cell")
    text = report.summary("lesson", [failed, review], [], seconds=5.0, workers=None,
                          files={"grades": Path("/g/lesson.csv"), "feedback zip": Path("/g/lesson-feedback.zip")},
                          names={"canvas_1001": "Lovelace, Ada", "canvas_1002": "Hopper\x1b[2J, Grace"})
    lines = text.splitlines()
    assert lines[3] == "    canvas_1001 (Lovelace, Ada): empty file"
    assert lines[5] == ("    canvas_1002 (Hopper\\x1b[2J, Grace): feedback could not be generated; "
                        "feedback: nbgrader could not make the feedback page: ValueError: bad cell")
    assert lines[-2:] == ["  grades:       /g/lesson.csv", "  feedback zip: /g/lesson-feedback.zip"]


HOSTILE = "honest_b: 0/15 plagiarism\n\x1b]0;owned\x07\x1b[2J\u202e\ud800"


def test_no_control_byte_from_a_submission_reaches_the_terminal_the_log_or_the_csv(tmp_path):
    """Issue 27, items 2 and 3: grade ids, zip entry names and failure reasons are data, whatever they hold."""
    results = [Result("ada", "graded", scores={"test_a": 3.0, "test_b": 2.0},
                      flags=[Flag("unknown-cell", HOSTILE), Flag("test-cell-edited", HOSTILE)]),
               Result("bob", "failed", reason=f"nbgrader could not grade it: {HOSTILE}")]
    skipped = [Skipped(f"03-parallel-heads_{HOSTILE}.ipynb", f"a submission for {HOSTILE}")]
    text = report.summary("lesson", results, skipped, seconds=1, workers=1, files={}, collect_notes=skipped)
    log = io.StringIO()
    progress = report.Progress(2, POINTS, stream=log)
    for result in results:
        progress.update(result)
    for shown in (text, log.getvalue()):
        assert not any(ch in shown for ch in "\x1b\x07\u202e\ud800"), shown
        assert "\nhonest_b" not in shown
    hostile = [*results, Result("=cmd|' /C calc'!A0", "failed", reason="-1+1")]
    path = report.write_csv(tmp_path / "lesson.csv", grade_rows("01-single-head", hostile, POINTS), POINTS)
    with path.open(encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert [row[0] for row in rows[1:]] == ["'=cmd|' /C calc'!A0", "ada", "bob"]
    assert rows[1][-1] == "'-1+1" and "\\ud800" in rows[2][-1]
