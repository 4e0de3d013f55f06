"""Collecting submissions: LMS downloads (folder or .zip) into nbgrader's submitted layout."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from nbgrader.utils import parse_utc

from grader.course import submission_filename
from grader.grading.collect import Skipped, collect, parse_name

LESSON = "03-parallel-heads"


def test_file_names_follow_the_shared_submission_pattern():
    assert parse_name(submission_filename(LESSON, "ada_lovelace", "20261129-140500"), LESSON) == (
        "ada_lovelace", "20261129-140500")


@pytest.mark.parametrize(("name", "reason"), [
    ("homework.ipynb", "does not follow"),
    (f"{LESSON}_ada_attempt_20261129-140500_{LESSON}.py", "does not follow"),
    (f"{LESSON}_ada-lovelace_attempt_20261129-140500_{LESSON}.ipynb", "does not follow"),
    ("02-scaling_ada_attempt_20261129-140500_02-scaling.ipynb", "a submission for 02-scaling"),
    (f"{LESSON}_ada_attempt_20261129-140500_02-scaling.ipynb", "a submission for"),
    (f"{LESSON}_ada_attempt_20261340-140500_{LESSON}.ipynb", "not YYYYMMDD-HHMMSS"),
])
def test_names_that_cannot_be_attributed_are_reported(name, reason):
    skipped = parse_name(name, LESSON)
    assert isinstance(skipped, Skipped) and reason in skipped.reason and skipped.file == name


def downloads(folder: Path) -> Path:
    folder.mkdir()
    for student, stamp, text in [("ada", "20261129-140500", "old"), ("ada", "20261130-090000", "new"),
                                 ("grace", "20261129-100000", "only")]:
        (folder / submission_filename(LESSON, student, stamp)).write_text(text)
    (folder / "notes.txt").write_text("not a submission")
    (folder / ".DS_Store").write_text("ignored")
    return folder


def test_a_download_folder_is_collected_with_the_latest_attempt_of_each_student(tmp_path):
    submitted = tmp_path / "submitted"
    collected = collect(LESSON, submitted, downloads(tmp_path / "lms"))
    assert collected.students == ["ada", "grace"]
    assert (collected.copied, collected.superseded) == (2, 1)
    assert collected.skipped == [Skipped("notes.txt", collected.skipped[0].reason)]
    assert (submitted / "ada" / LESSON / f"{LESSON}.ipynb").read_text() == "new"
    stamp = (submitted / "ada" / LESSON / "timestamp.txt").read_text()
    assert parse_utc(stamp).isoformat() == "2026-11-30T09:00:00"  # nbgrader reads the attempt's time


def test_collecting_again_changes_nothing_until_a_new_attempt_arrives(tmp_path):
    source, submitted = downloads(tmp_path / "lms"), tmp_path / "submitted"
    collect(LESSON, submitted, source)
    notebook = submitted / "grace" / LESSON / f"{LESSON}.ipynb"
    before = notebook.stat().st_mtime_ns
    assert collect(LESSON, submitted, source).copied == 0
    assert notebook.stat().st_mtime_ns == before
    (source / submission_filename(LESSON, "grace", "20261201-080000")).write_text("again")
    assert collect(LESSON, submitted, source).copied == 1
    assert notebook.read_text() == "again"


def test_a_zip_with_folders_is_collected_like_a_folder(tmp_path):
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr(f"course/{submission_filename(LESSON, 'ada', '20261129-140500')}", "zipped")
        handle.writestr(f"__MACOSX/course/._{submission_filename(LESSON, 'ada', '20261129-140500')}", "junk")
        handle.writestr("course/Ada Lovelace - homework.ipynb", "{}")
    collected = collect(LESSON, tmp_path / "submitted", archive)
    assert collected.students == ["ada"]
    assert [s.file for s in collected.skipped] == ["Ada Lovelace - homework.ipynb"]
    assert (tmp_path / "submitted" / "ada" / LESSON / f"{LESSON}.ipynb").read_text() == "zipped"


def test_the_submitted_layout_is_used_as_it_is(tmp_path):
    submitted = tmp_path / "submitted"
    (submitted / "ada" / LESSON).mkdir(parents=True)
    (submitted / "ada" / LESSON / f"{LESSON}.ipynb").write_text("{}")
    (submitted / "bob" / LESSON).mkdir(parents=True)
    (submitted / "bob" / LESSON / "Untitled.ipynb").write_text("{}")
    (submitted / "eve" / "02-scaling").mkdir(parents=True)
    collected = collect(LESSON, submitted)
    assert collected.students == ["ada"]
    assert len(collected.skipped) == 1 and "bob" in collected.skipped[0].reason
    assert collected.skipped[0].file.endswith("Untitled.ipynb")


def test_a_source_that_is_neither_a_folder_nor_a_zip_is_refused(tmp_path):
    (tmp_path / "grades.csv").write_text("student,total\n")
    with pytest.raises(SystemExit, match="not a folder or a .zip"):
        collect(LESSON, tmp_path / "submitted", tmp_path / "grades.csv")
