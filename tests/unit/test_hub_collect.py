"""hub-collect's staging of the exchange's inbound folder: what it vouches for, what it refuses.

Everything in an inbound submission is written by a student's processes; these are the attacks one
student can make there on another, or on the grader (grader/hub/collect.py), next to an honest one.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from grader.hub.collect import TIME_FORMAT, stage

LESSON = "03-parallel-heads"
ME = os.getuid()
UIDS = {"ada": ME, "grace": ME + 1, "ada_lovelace": ME}  # grace's submissions must be owned by ME + 1


def submit(inbound: Path, user: str, claimed: str, *, notebook: bytes | None = b'{"cells": []}',
           secret: bool = True, suffix: str = "r4nd0m") -> Path:
    folder = inbound / f"{user}+{LESSON}+{claimed}+{suffix}"
    folder.mkdir()
    if notebook is not None:
        (folder / f"{LESSON}.ipynb").write_bytes(notebook)
    if secret:
        (folder / "submission_secret.txt").write_text("s3cret")
    (folder / "timestamp.txt").write_text(claimed)
    return folder


@pytest.fixture
def inbound(tmp_path):
    folder = tmp_path / "inbound"
    folder.mkdir()
    return folder


def now_text(delta: timedelta = timedelta()) -> str:
    return (datetime.now(UTC) + delta).strftime(TIME_FORMAT)


def test_an_honest_submission_is_staged_with_the_time_the_exchange_received_it(inbound, tmp_path):
    submit(inbound, "ada", now_text())
    staging = tmp_path / "staging"
    result = stage(inbound, staging, LESSON, uid_of=UIDS.__getitem__)
    assert result.refused == [] and result.notes == [] and len(result.staged) == 1
    [folder] = staging.iterdir()
    assert folder.name.startswith(f"ada+{LESSON}+") and folder.name.endswith("+r4nd0m")
    assert sorted(p.name for p in folder.iterdir()) == [f"{LESSON}.ipynb", "submission_secret.txt", "timestamp.txt"]
    assert (folder / f"{LESSON}.ipynb").read_bytes() == b'{"cells": []}'
    received = datetime.strptime((folder / "timestamp.txt").read_text(), TIME_FORMAT)
    assert abs(received - datetime.now(UTC).replace(tzinfo=None)) < timedelta(minutes=1)


def test_a_submission_in_another_students_name_is_refused(inbound, tmp_path):
    submit(inbound, "grace", now_text(timedelta(minutes=1)))  # written by ME, who is not grace
    result = stage(inbound, tmp_path / "staging", LESSON, uid_of=UIDS.__getitem__)
    assert result.staged == []
    [(name, why)] = result.refused
    assert name.startswith("grace+") and "not owned by grace" in why


def test_links_folders_and_missing_files_are_refused_and_never_followed(inbound, tmp_path):
    secret = tmp_path / "gradebook.db"
    secret.write_text("hidden tests")
    link = submit(inbound, "ada", now_text(), notebook=None, suffix="link")
    (link / f"{LESSON}.ipynb").symlink_to(secret)
    folder = submit(inbound, "ada", now_text(), notebook=None, suffix="folder")
    (folder / f"{LESSON}.ipynb").mkdir()
    submit(inbound, "ada", now_text(), secret=False, suffix="nosecret")
    (inbound / f"ada+{LESSON}+{now_text()}+linkeddir").symlink_to(tmp_path)
    staging = tmp_path / "staging"
    result = stage(inbound, staging, LESSON, uid_of=UIDS.__getitem__)
    assert result.staged == []
    reasons = {name.rsplit("+", 1)[1]: why for name, why in result.refused}
    assert set(reasons) == {"link", "folder", "nosecret", "linkeddir"}, reasons
    assert "not a regular file" in reasons["folder"]
    assert not any("hidden tests" in p.read_text() for p in staging.rglob("*") if p.is_file())


def test_a_forged_time_counts_as_when_the_exchange_received_it(inbound, tmp_path):
    submit(inbound, "ada", "2020-01-01 00:00:00.000000 UTC")
    staging = tmp_path / "staging"
    result = stage(inbound, staging, LESSON, uid_of=UIDS.__getitem__)
    assert len(result.staged) == 1
    [(name, note)] = result.notes
    assert "claims '2020-01-01 00:00:00.000000 UTC'" in note and "which counts" in note
    [folder] = staging.iterdir()
    assert not (folder / "timestamp.txt").read_text().startswith("2020")


def test_a_hub_name_that_is_not_a_student_id_is_refused_and_other_lessons_are_left_alone(inbound, tmp_path):
    submit(inbound, "Ada.Lovelace", now_text())
    (inbound / f"ada+01-single-head+{now_text()}+x").mkdir()
    result = stage(inbound, tmp_path / "staging", LESSON, uid_of=UIDS.__getitem__)
    assert result.staged == []
    [(name, why)] = result.refused
    assert name.startswith("Ada.Lovelace+") and "not a course student id" in why
