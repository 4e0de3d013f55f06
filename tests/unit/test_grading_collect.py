"""Collecting submissions: LMS downloads (folder or .zip) into nbgrader's submitted layout."""

from __future__ import annotations

import os
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest
from nbgrader.utils import parse_utc

from grader.errors import BadDownload
from grader.grading.collect import MAX_ENTRY, Skipped, collect, parse_name, student_id
from grader.student.submission_names import submission_filename

LESSON = "03-parallel-heads"


NOW = datetime(2026, 12, 15, 12, 0, tzinfo=timezone.utc)


def test_file_names_follow_the_shared_submission_pattern():
    assert parse_name(submission_filename(LESSON, "ada_lovelace", "20261129-140500"), LESSON, now=NOW) == (
        "ada_lovelace", datetime(2026, 11, 29, 14, 5, tzinfo=timezone.utc))


@pytest.mark.parametrize(("name", "reason"), [
    ("homework.ipynb", "does not follow"),
    (f"{LESSON}_ada_attempt_20261129-140500_{LESSON}.py", "does not follow"),
    (f"{LESSON}_ada-lovelace_attempt_20261129-140500_{LESSON}.ipynb", "does not follow"),
    ("02-scaling_ada_attempt_20261129-140500_02-scaling.ipynb", "a submission for 02-scaling"),
    (f"{LESSON}_ada_attempt_20261129-140500_02-scaling.ipynb", "a submission for"),
    (f"{LESSON}_ada_attempt_20261340-140500_{LESSON}.ipynb", "not YYYYMMDD-HHMMSS"),
    (f"{LESSON}_ada_attempt_20270101-000000_{LESSON}.ipynb", "in the future"),
    (f"{LESSON}_{'a' * 65}_attempt_20261129-140500_{LESSON}.ipynb", "at most 64"),
    (f"{LESSON}_{'a' * 5000}_attempt_20261129-140500_{LESSON}.ipynb", "at most 64"),
    (f"{LESSON}_аda_attempt_20261129-140500_{LESSON}.ipynb", "ASCII"),  # a Cyrillic а: a look-alike of ada
])
def test_names_that_cannot_be_attributed_are_reported(name, reason):
    skipped = parse_name(name, LESSON, now=NOW)
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
    collected = collect(LESSON, submitted, downloads(tmp_path / "lms"), now=NOW)
    assert collected.students == ["ada", "grace"]
    assert (collected.copied, collected.superseded) == (2, 1)
    assert collected.skipped == [Skipped("notes.txt", collected.skipped[0].reason)]
    assert (submitted / "ada" / LESSON / f"{LESSON}.ipynb").read_text() == "new"
    stamp = (submitted / "ada" / LESSON / "timestamp.txt").read_text()
    assert parse_utc(stamp).isoformat() == "2026-11-30T09:00:00"  # nbgrader reads the attempt's time


def test_collecting_again_changes_nothing_until_a_new_attempt_arrives(tmp_path):
    source, submitted = downloads(tmp_path / "lms"), tmp_path / "submitted"
    collect(LESSON, submitted, source, now=NOW)
    notebook = submitted / "grace" / LESSON / f"{LESSON}.ipynb"
    before = notebook.stat().st_mtime_ns
    assert collect(LESSON, submitted, source, now=NOW).copied == 0
    assert notebook.stat().st_mtime_ns == before
    (source / submission_filename(LESSON, "grace", "20261201-080000")).write_text("again")
    assert collect(LESSON, submitted, source, now=NOW).copied == 1
    assert notebook.read_text() == "again"


def test_a_zip_with_folders_is_collected_like_a_folder(tmp_path):
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr(f"course/{submission_filename(LESSON, 'ada', '20261129-140500')}", "zipped")
        handle.writestr(f"__MACOSX/course/._{submission_filename(LESSON, 'ada', '20261129-140500')}", "junk")
        handle.writestr("course/Ada Lovelace - homework.ipynb", "{}")
    collected = collect(LESSON, tmp_path / "submitted", archive)
    assert collected.students == ["ada"]
    assert [s.file for s in collected.skipped] == ["course/Ada Lovelace - homework.ipynb"]  # its path in the download
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


def test_a_submitted_folder_not_named_by_a_student_id_is_listed_not_graded(tmp_path):
    # The gradebook holds only ids collect makes (grader.grading.gradebook_check refuses others), so a
    # folder put there by hand as "Ada" would be graded once and then stop every later batch.
    submitted = tmp_path / "submitted"
    for name in ("Ada", "grace-h", "ok_1"):
        (submitted / name / LESSON).mkdir(parents=True)
        (submitted / name / LESSON / f"{LESSON}.ipynb").write_text("{}")
    collected = collect(LESSON, submitted)
    assert collected.students == ["ok_1"]
    reasons = {Path(s.file).name: s.reason for s in collected.skipped}
    assert set(reasons) == {"Ada", "grace-h"}
    assert reasons["Ada"].endswith("rename it to 'ada'") and "not a student id" in reasons["grace-h"]


def test_a_source_that_is_neither_a_folder_nor_a_zip_is_refused(tmp_path):
    (tmp_path / "grades.csv").write_text("student,total\n")
    with pytest.raises(BadDownload, match="not a folder or a .zip"):
        collect(LESSON, tmp_path / "submitted", tmp_path / "grades.csv")


def test_ids_are_normalised_so_that_case_and_compatibility_forms_are_one_student():
    assert student_id("Ada_LOVELACE") == student_id("ａｄａ_lovelace") == "ada_lovelace"  # full-width letters: NFKC
    assert student_id("аda") is None and student_id("ada-l") is None and student_id("") is None


def test_nothing_is_chosen_silently(tmp_path):
    lms, submitted = tmp_path / "lms", tmp_path / "submitted"
    lms.mkdir()
    for student, stamp, text in [("Ada", "20261129-140500", "a1"), ("ada", "20261129-140500", "a2"),  # one id, tied
                                 ("grace", "20261129-100000", "g1"), ("GRACE", "20261130-100000", "g2"),
                                 ("alan", "20301129-100000", "future")]:
        (lms / submission_filename(LESSON, student, stamp)).write_text(text)
    collected = collect(LESSON, submitted, lms, now=NOW)
    assert collected.students == ["grace"]
    reasons = {s.file: s.reason for s in collected.skipped}
    assert sum("same time; none was chosen" in r for r in reasons.values()) == 2
    assert any("in the future" in r for r in reasons.values())
    assert (submitted / "grace" / LESSON / f"{LESSON}.ipynb").read_text() == "g2"
    assert [s.reason for s in collected.review] == [
        f"an older attempt of grace: {submission_filename(LESSON, 'GRACE', '20261130-100000')} was collected"]


def test_an_attempt_replacing_one_from_another_file_is_collected_and_listed(tmp_path):
    submitted = tmp_path / "submitted"
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    (first / submission_filename(LESSON, "grace", "20261129-100000")).write_text("mine")
    collect(LESSON, submitted, first, now=NOW)
    (second / submission_filename(LESSON, "Grace", "20261130-100000")).write_text("someone else's")
    collected = collect(LESSON, submitted, second, now=NOW)
    assert [s.reason.split(" collected earlier")[0] for s in collected.review] == ["replaces grace's attempt"]


def test_links_are_not_followed_and_oversized_zip_entries_are_not_expanded(tmp_path):
    lms = tmp_path / "lms"
    lms.mkdir()
    secret = tmp_path / "secret.ipynb"
    secret.write_text("the instructor's")
    os.symlink(secret, lms / submission_filename(LESSON, "mallory", "20261129-100000"))
    collected = collect(LESSON, tmp_path / "submitted", lms, now=NOW)
    assert collected.students == [] and "a link" in collected.skipped[0].reason

    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as handle:
        handle.writestr(submission_filename(LESSON, "bomb", "20261129-100000"), b"0" * (MAX_ENTRY + 1))
        handle.writestr(submission_filename(LESSON, "dense", "20261129-100000"), b"0" * (10 * 1024**2))
        handle.writestr(submission_filename(LESSON, "twice", "20261129-100000"), b"first")
        with pytest.warns(UserWarning, match="Duplicate name"):  # as a crafted LMS download can hold
            handle.writestr(submission_filename(LESSON, "twice", "20261129-100000"), b"second")
    collected = collect(LESSON, tmp_path / "submitted-zip", archive, now=NOW)
    reasons = sorted(s.reason for s in collected.skipped)
    assert collected.students == [] and len(reasons) == 3, reasons
    assert any("larger than" in r for r in reasons) and any("compressed size" in r for r in reasons)
    assert any("2 entries of this name" in r for r in reasons)
