"""grader.grading.running.worker: a submission whose feedback page nbgrader cannot make is graded, and says why."""

from __future__ import annotations

import shutil

from grader.course import student_notebook
from grader.grading.running import worker
from grader.grading.running.jobs import Job
from grader.layout import Layout

LESSON = "01-single-head"


class FeedbackFails:
    """nbgrader's API as the worker calls it: grading succeeds, the feedback page does not."""

    config = None

    def __init__(self, layout: Layout):
        self.layout = layout

    def autograde(self, lesson, student, **_):
        target = self.layout.autograded_notebook(student, lesson)
        target.parent.mkdir(parents=True)
        shutil.copyfile(self.layout.submitted_notebook(student, lesson), target)
        return {"success": True, "log": "", "error": ""}

    def generate_feedback(self, lesson, student, **_):
        return {"success": False, "log": "[ERROR] There was an error processing assignment",
                "error": "Traceback (most recent call last):\n  ...\nValueError: the cell \x1b[2Jis bad\n"}


def test_a_feedback_failure_is_graded_with_its_reason_for_the_log_and_the_overview(tmp_path, monkeypatch):
    layout = Layout(tmp_path, tmp_path / "release", tmp_path / "submitted", tmp_path / "autograded",
                    tmp_path / "feedback")
    layout.release_notebook(LESSON).parent.mkdir(parents=True)
    shutil.copyfile(student_notebook(LESSON), layout.release_notebook(LESSON))
    layout.submitted_notebook("ada", LESSON).parent.mkdir(parents=True)
    shutil.copyfile(student_notebook(LESSON), layout.submitted_notebook("ada", LESSON))
    monkeypatch.setattr(worker, "prepare", lambda job: FeedbackFails(layout))
    monkeypatch.setattr(worker.Layout, "of", staticmethod(lambda config: layout))
    result = worker.grade(Job(str(tmp_path), LESSON, "ada", force=True))
    assert result.status == "graded" and [str(f) for f in result.flags] == ["feedback-failed"]
    assert result.feedback_error == "nbgrader could not make the feedback page: ValueError: the cell \\x1b[2Jis bad"
    assert "feedback: Traceback (most recent call last):" in result.detail and "\x1b" not in result.detail
