"""grader.grading.intake.collect: every downloaded file kept as an attempt,
the submitted folder derived from all of them."""

from __future__ import annotations

import json
import os
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.errors import BadDownload
from grader.grading.intake.collect import MAX_ENTRY, collect, read_submission
from grader.grading.intake.people import People
from grader.student.submission_names import submission_filename

LESSON = "03-parallel-heads"
NOW = datetime(2026, 12, 15, 12, 0, tzinfo=UTC)


class Course:
    """A submitted folder, an attempts store and a people registry in a temporary folder."""

    def __init__(self, root: Path):
        self.root = root
        self.people = People(root / "people.json")

    def collect(self, source: Path | None = None, **options):
        return collect(LESSON, self.root / "submitted", self.root / "attempts", source, people=self.people,
                       now=NOW, **options)

    def submitted(self, student: str) -> Path:
        return self.root / "submitted" / student / LESSON / f"{LESSON}.ipynb"


@pytest.fixture
def store(tmp_path) -> Course:
    return Course(tmp_path / "course")


def folder_of(tmp_path: Path, name: str, files: list[tuple[str, str, str]]) -> Path:
    """A folder of make-submit files: (student, YYYYMMDD-HHMMSS, content)."""
    folder = tmp_path / name
    folder.mkdir()
    for student, stamp, text in files:
        (folder / submission_filename(LESSON, student, stamp)).write_text(text)
    return folder


def test_the_latest_attempt_of_each_student_is_submitted_with_its_time(tmp_path, store):
    done = store.collect(folder_of(tmp_path, "lms", [("ada", "20261129-140500", "old"),
                                                      ("ada", "20261130-090000", "new"),
                                                      ("grace", "20261129-100000", "only")]))
    assert done.format == "make-submit" and done.students == ["ada", "grace"] and done.copied == 2
    assert store.submitted("ada").read_text() == "new"
    assert (store.submitted("ada").parent / "timestamp.txt").read_text() == "2026-11-30 09:00:00 UTC"
    assert [s.reason.split(":")[0] for s in done.review] == ["an older attempt of ada"]
    assert done.submissions["ada"].time == datetime(2026, 11, 30, 9, tzinfo=UTC)


def test_downloads_in_any_order_give_the_same_submissions(tmp_path, store):
    newer = folder_of(tmp_path, "newer", [("ada", "20261130-090000", "new")])
    older = folder_of(tmp_path, "older", [("ada", "20261129-090000", "old")])
    store.collect(newer)
    again = store.collect(older)
    assert store.submitted("ada").read_text() == "new" and again.copied == 0
    assert len(list((store.root / "attempts" / LESSON / "ada").glob("*.ipynb"))) == 2  # both attempts kept


def test_collecting_again_changes_nothing(tmp_path, store):
    source = folder_of(tmp_path, "lms", [("ada", "20261129-140500", "a")])
    store.collect(source)
    stamp = store.submitted("ada").stat().st_mtime_ns
    assert store.collect(source).copied == 0 and store.submitted("ada").stat().st_mtime_ns == stamp


def test_a_hand_edit_is_kept_until_told_otherwise_and_never_lost(tmp_path, store):
    store.collect(folder_of(tmp_path, "first", [("ada", "20261129-140500", "handed in")]))
    store.submitted("ada").write_text("fixed by the instructor")
    again = store.collect(folder_of(tmp_path, "again", [("ada", "20261129-140500", "handed in")]))
    assert store.submitted("ada").read_text() == "fixed by the instructor"
    assert [s.reason for s in again.review] == ["kept as edited by hand"]
    assert read_submission(store.submitted("ada").parent, "ada").edited
    newer = folder_of(tmp_path, "newer", [("ada", "20261130-140500", "resubmitted")])
    kept = store.collect(newer)
    assert store.submitted("ada").read_text() == "fixed by the instructor"
    assert "a newer attempt arrived" in kept.review[-1].reason and "--replace-edits" in kept.review[-1].reason
    replaced = store.collect(newer, replace_edits=True)
    assert store.submitted("ada").read_text() == "resubmitted"
    [backup] = (store.root / "attempts" / LESSON / "ada").glob("edited-*.ipynb")
    assert backup.read_text() == "fixed by the instructor" and str(backup) in replaced.review[-1].reason


def test_nothing_is_chosen_silently(tmp_path, store):
    done = store.collect(folder_of(tmp_path, "lms", [("Ada", "20261129-140500", "a1"), ("ada", "20261129-140500", "a2"),
                                                      ("grace", "20261129-100000", "g1"),
                                                      ("alan", "20301129-100000", "future")]))
    assert done.students == ["grace"]
    reasons = [s.reason for s in done.skipped]
    assert sum("same time; none was chosen" in r for r in reasons) == 2 and any("in the future" in r for r in reasons)


def test_a_damaged_entry_costs_only_itself(tmp_path, store):
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as handle:
        handle.writestr(submission_filename(LESSON, "ada", "20261129-140500"), "ada's notebook")
        handle.writestr(submission_filename(LESSON, "grace", "20261129-140500"), "grace's notebook")
    data = bytearray(archive.read_bytes())
    data[data.index(b"grace's notebook") + 3] ^= 0xFF
    archive.write_bytes(bytes(data))
    done = store.collect(archive)
    assert done.students == ["ada"]
    [skipped] = done.skipped
    assert "could not be read (BadZipFile" in skipped.reason and "download it again" in skipped.reason


def test_a_source_that_is_neither_a_folder_nor_a_zip_is_refused(tmp_path, store):
    (tmp_path / "grades.csv").write_text("a,b\n")
    with pytest.raises(BadDownload, match="not a folder or a readable .zip"):
        store.collect(tmp_path / "grades.csv")


def test_a_download_of_several_formats_is_refused_with_the_misfits(tmp_path, store):
    source = folder_of(tmp_path, "lms", [("ada", "20261129-140500", "a")])
    (source / "notes.txt").write_text("not a submission")
    with pytest.raises(BadDownload, match=r"(?s)1 of 2 files are named as make-submit.*notes\.txt.*Nothing was"):
        store.collect(source)
    assert not (store.root / "attempts").exists()


def test_the_submitted_layout_of_nbgrader_collect_is_graded_as_it_is(store):
    user = "ada.lovelace-2"  # a JupyterHub user name
    folder = store.submitted(user).parent
    folder.mkdir(parents=True)
    store.submitted(user).write_text("{}")
    (folder / "timestamp.txt").write_text("2026-12-01 10:00:00.123456 UTC")  # nbgrader's own form
    (store.root / "submitted" / "Not-An-Id" / LESSON).mkdir(parents=True)
    done = store.collect()
    assert done.students == [user]
    assert done.submissions[user].time == datetime(2026, 12, 1, 10, 0, 0, 123456, tzinfo=UTC)
    assert f"hub:{user}" in store.people.persons[user].keys
    assert "'Not-An-Id' is not a student id" in done.skipped[0].reason


def test_links_are_not_followed_and_oversized_zip_entries_are_not_expanded(tmp_path, store):
    lms = tmp_path / "lms"
    lms.mkdir()
    secret = tmp_path / "secret.ipynb"
    secret.write_text("the instructor's")
    os.symlink(secret, lms / submission_filename(LESSON, "mallory", "20261129-100000"))
    done = store.collect(lms)
    assert done.students == [] and "a link" in done.skipped[0].reason

    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as handle:
        handle.writestr(submission_filename(LESSON, "bomb", "20261129-100000"), b"0" * (MAX_ENTRY + 1))
        handle.writestr(submission_filename(LESSON, "dense", "20261129-100000"), b"0" * (10 * 1024**2))
        handle.writestr(submission_filename(LESSON, "twice", "20261129-100000"), b"first")
        with pytest.warns(UserWarning, match="Duplicate name"):  # as a crafted LMS download can hold
            handle.writestr(submission_filename(LESSON, "twice", "20261129-100000"), b"second")
    done = store.collect(archive)
    reasons = sorted(s.reason for s in done.skipped)
    assert done.students == [] and len(reasons) == 3, reasons
    assert any("larger than" in r for r in reasons) and any("compressed size" in r for r in reasons)
    assert any("2 entries of this name" in r for r in reasons)


def test_each_attempt_records_what_the_download_said(tmp_path, store):
    archive = tmp_path / "canvas.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr(zipfile.ZipInfo("hoppergrace_LATE_1002_50002_whatever.ipynb", (2026, 12, 2, 9, 0, 0)), "g")
    store.collect(archive)
    [record] = (store.root / "attempts" / LESSON / "canvas_1002").glob("*.json")
    attempt = json.loads(record.read_text())
    assert attempt["lms_late"] and attempt["when"] == "2026-12-02 09:00:00 UTC" and attempt["format"] == "canvas"
    assert read_submission(store.submitted("canvas_1002").parent, "canvas_1002").upload_prefix == \
        "hoppergrace_LATE_1002_50002_"
