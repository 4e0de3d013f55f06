"""LMS downloads and the roster: Canvas's zip, Moodle's folders and flat files, a folder of `make submit` files."""

from __future__ import annotations

import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from grader.errors import BadDownload
from grader.grading import lms
from grader.grading.collect import collect
from grader.student.submission_names import submission_filename

LESSON = "03-parallel-heads"
NOW = datetime(2026, 12, 15, 12, 0, tzinfo=timezone.utc)
WHEN = (2026, 12, 1, 9, 30, 0)  # the zip entries' time: the time the LMS wrote them

ROSTER = """id,name,email,lms_id,section
ada,Ada Lovelace,ada@uni.example,1001,A
grace,Grace Hopper,grace@uni.example,1002,A
li_lei,李雷,li@uni.example,1003,B
alan,Alan Turing,alan@uni.example,,B
alan2,Alan Turing,alan2@uni.example,,B
"""


def roster(tmp_path: Path, text: str = ROSTER) -> lms.Roster:
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    return lms.Roster.read(path)


def zipped(path: Path, entries: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in entries.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=WHEN), text)
    return path


CANVAS = {  # Canvas "Download Submissions": <name>_[LATE_]<user id>_<submission id>_<original name>
    "lovelaceada_1001_50001_03-parallel-heads.ipynb": "ada's",
    "hoppergrace_LATE_1002_50002_03-parallel-heads-1.ipynb": "grace's, late, resubmitted",
    "李雷_1003_50003_my work.ipynb": "li's",
    "nobodyelse_1999_50009_03-parallel-heads.ipynb": "not on the roster",
    "lovelaceada_1001_50001_02-scaling.ipynb": "the wrong lesson",
}
# Moodle "Download submissions in folders": <Full Name>_<participant id>_assignsubmission_file_/<file>
MOODLE_FOLDERS = {
    "Ada Lovelace_88001_assignsubmission_file_/03-parallel-heads.ipynb": "ada's",
    "Grace Hopper_88002_assignsubmission_file_/notebook.ipynb": "grace's",
    "Alan Turing_88003_assignsubmission_file_/03-parallel-heads.ipynb": "one of two Alans",
}
MOODLE_FLAT = {"Ada Lovelace_88001_assignsubmission_file_03-parallel-heads.ipynb": "ada's"}


def test_each_format_is_recognised_with_its_groups():
    canvas = lms.match("hoppergrace_LATE_1002_50002_03-parallel-heads-1.ipynb")
    assert (canvas.format, canvas.name, canvas.lms_id, canvas.late, canvas.file_id) == (
        "canvas", "hoppergrace", "1002", True, "03-parallel-heads-1.ipynb")
    assert not lms.match("lovelaceada_1001_50001_03-parallel-heads.ipynb").late
    moodle = lms.match("Ada Lovelace_88001_assignsubmission_file_/03-parallel-heads.ipynb")
    assert (moodle.format, moodle.name, moodle.lms_id) == ("moodle", "Ada Lovelace", "88001")
    assert lms.match("Ada Lovelace_88001_assignsubmission_file_03-parallel-heads.ipynb").format == "moodle"
    plain = lms.match(submission_filename(LESSON, "ada", "20261129-140500"))
    assert (plain.format, plain.student_id) == ("make-submit", "ada")
    assert lms.match("homework.ipynb") is None and lms.match("lovelaceada_1001_50001_notes.txt") is None


def test_a_canvas_zip_with_a_roster_collects_by_roster_id_and_lists_the_rest(tmp_path):
    submitted = tmp_path / "submitted"
    done = collect(LESSON, submitted, zipped(tmp_path / "submissions.zip", CANVAS), now=NOW, roster=roster(tmp_path))
    assert done.students == ["ada", "grace", "li_lei"]
    assert (submitted / "grace" / LESSON / f"{LESSON}.ipynb").read_text() == "grace's, late, resubmitted"
    assert (submitted / "ada" / LESSON / "timestamp.txt").read_text() == "2026-12-01 09:30:00 UTC"
    reasons = {s.file: s.reason for s in done.skipped}
    assert "not on the roster" in reasons["nobodyelse_1999_50009_03-parallel-heads.ipynb"]
    assert "a submission for 02-scaling" in reasons["lovelaceada_1001_50001_02-scaling.ipynb"]


def test_a_canvas_zip_without_a_roster_gives_readable_unique_ids(tmp_path):
    done = collect(LESSON, tmp_path / "submitted", zipped(tmp_path / "s.zip", CANVAS), now=NOW)
    assert done.students == ["hoppergrace_1002", "li_lei_1003", "lovelaceada_1001", "nobodyelse_1999"]


def test_moodle_folders_match_the_roster_by_name_and_refuse_an_ambiguous_one(tmp_path):
    table = roster(tmp_path)
    done = collect(LESSON, tmp_path / "submitted", zipped(tmp_path / "m.zip", MOODLE_FOLDERS), now=NOW, roster=table)
    assert done.students == ["ada", "grace"]
    [alan] = [s for s in done.skipped if s.file.startswith("Alan")]
    assert "matches 2 roster rows (alan, alan2): none chosen" in alan.reason
    flat = collect(LESSON, tmp_path / "flat", zipped(tmp_path / "f.zip", MOODLE_FLAT), now=NOW, roster=table)
    assert flat.students == ["ada"]


def test_moodle_without_a_roster_uses_the_name_and_participant_id(tmp_path):
    done = collect(LESSON, tmp_path / "submitted", zipped(tmp_path / "m.zip", MOODLE_FOLDERS), now=NOW)
    assert done.students == ["ada_lovelace_88001", "alan_turing_88003", "grace_hopper_88002"]


def test_a_plain_folder_of_make_submit_files_works_with_and_without_a_roster(tmp_path):
    folder = tmp_path / "lms"
    folder.mkdir()
    for student in ("ada_lovelace", "grace", "李雷", "аda"):  # the last with a Cyrillic а
        (folder / submission_filename(LESSON, student, "20261129-140500")).write_text(student)
    plain = collect(LESSON, tmp_path / "plain", folder, now=NOW)
    cyrillic, chinese = lms.script_id("аda"), lms.script_id("李雷")
    assert chinese.startswith("li_lei_") and cyrillic.startswith("ada_") and cyrillic != "ada"
    assert plain.students == sorted(["ada_lovelace", "grace", chinese, cyrillic])
    with_roster = collect(LESSON, tmp_path / "rostered", folder, now=NOW, roster=roster(tmp_path))
    assert with_roster.students == ["ada", "grace", "li_lei"]  # the look-alike matches no one: not collected
    assert any("not on the roster" in s.reason for s in with_roster.skipped)


@pytest.mark.parametrize(("text", "message"), [
    ("name,email\nAda,a@x\n", "needs the columns id and name"),
    ("id,name\nada lovelace,Ada\n", "line 2: the id 'ada lovelace' is not"),
    ("id,name\nada,Ada\nADA,Ada L\n", "line 3: the id 'ada' is there twice"),
    ("id,name\n\x1b]0;owned\x07,Eve\n", r"\x1b]0;owned\x07"),  # shown escaped, never sent to the terminal
])
def test_a_roster_that_cannot_be_used_is_refused_with_the_line(tmp_path, text, message):
    with pytest.raises(BadDownload) as refused:
        roster(tmp_path, text)
    assert message in str(refused.value) and "\x1b" not in str(refused.value)


def test_roster_names_with_control_characters_are_matched_and_shown_inert(tmp_path):
    table = roster(tmp_path, "id,name\neve,Eve\u202e Evil\n")
    found = lms.match("Mallory\x1b[2J_88009_assignsubmission_file_/x.ipynb")
    reason = table.find(found)
    assert isinstance(reason, str) and "\x1b" not in reason and "\\x1b" in reason


def test_readable_ids_from_names_in_any_script():
    assert lms.readable_id("李雷") == "li_lei"
    assert lms.readable_id("Zoë O'Brien") == "zoe_o_brien"
    assert lms.readable_id("Пётр") == "petr"
    assert lms.readable_id("!!!") == ""


def test_roster_names_and_emails_reach_the_gradebook(tmp_path, gradebook_url):
    from nbgrader.api import Gradebook

    url = gradebook_url
    with Gradebook(url) as book:
        book.update_or_create_student("ada")
    lms.record_names(url, "", roster(tmp_path), ["ada", "not_on_roster"])
    with Gradebook(url) as book:
        ada = book.find_student("ada")
        assert (ada.first_name, ada.last_name, ada.email) == ("Ada", "Lovelace", "ada@uni.example")
