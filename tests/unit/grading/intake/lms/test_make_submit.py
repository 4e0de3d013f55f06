"""grader.grading.intake.lms.make_submit: the course's own `make submit` names, gathered by the instructor."""

from __future__ import annotations

from datetime import UTC, datetime

from grader.grading.intake.lms.make_submit import MakeSubmit
from grader.student.submission_names import submission_filename

LESSON = "03-parallel-heads"


def read(name: str, lesson: str = LESSON):
    return MakeSubmit().read_download({name: None}, lesson).get(name)


def test_the_name_gives_the_normalised_id_and_the_time_in_utc():
    found = read(f"gathered/{submission_filename(LESSON, 'Ada', '20261129-140500')}")
    assert (found.key, found.grading_id, found.student_id, found.problem) == ("submit:ada", "ada", "Ada", "")
    assert found.timestamp == datetime(2026, 11, 29, 14, 5, tzinfo=UTC) and found.upload_prefix == "Ada_"
    assert read(submission_filename(LESSON, "李雷", "20261129-140500")).grading_id.startswith("li_lei_")


def test_a_time_that_is_none_or_blackboards_form_is_not_this_format():
    assert read(submission_filename(LESSON, "ada", "20261399-999999")) is None
    assert read(f"{LESSON}_ada_attempt_2026-11-29-14-05-00_{LESSON}.ipynb") is None


def test_another_lessons_file_or_a_bad_id_is_no_submission_of_the_lesson():
    assert read(submission_filename("01-single-head", "ada", "20261129-140500")).problem == \
        f"a submission for 01-single-head, not {LESSON}"
    assert read(f"{LESSON}_ada_attempt_20261129-140500_notes.ipynb").problem == \
        f"a submission for {LESSON}, not {LESSON}"
    assert read(submission_filename(LESSON, "x" * 70, "20261129-140500")).problem.startswith("the student id must")


def test_it_gives_way_to_any_lms():
    assert MakeSubmit.fallback and not MakeSubmit.writes_import and MakeSubmit.rosters == ()
