"""`make submit`'s student ids: every name becomes an id that survives the submission file name."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from nbgrader.utils import parse_utc

from grader.errors import CannotSubmit
from grader.student import submit
from grader.student.submission_names import SUBMISSION_REGEXP, SUBMISSION_TIME_FORMAT, submission_filename

LESSON = "03-parallel-heads"


@pytest.mark.parametrize(("name", "expected"), [
    ("Ada Lovelace", "ada_lovelace"),
    ("Zoë O'Brien", "zoe_o_brien"),
    ("  grace__HOPPER  ", "grace_hopper"),
    ("s1234567", "s1234567"),
    ("Ngô Bảo Châu", "ngo_bao_chau"),
    ("Attempt Ada", "attempt_ada"),  # the word the file-name pattern splits on, where it is harmless
    ("ada_attempted", "ada_attempted"),
    ("ada-lovelace@uni.example", "ada_lovelace_uni_example"),
    ("李雷", "李雷"),  # letters of any script are letters; the instructor's collect makes them `li_lei_<hash>`
    ("Пётр Иванов", "петр_иванов"),
])
def test_student_names_become_ids_that_survive_the_file_name(name, expected):
    student = submit.id_from_name(name)
    assert student == expected
    stamp = datetime(2026, 11, 29, 14, 5, 30, tzinfo=UTC).strftime(SUBMISSION_TIME_FORMAT)
    match = re.fullmatch(SUBMISSION_REGEXP, submission_filename(LESSON, student, stamp))
    assert match and match.group("student_id") == student
    assert match.group("file_id") == f"{LESSON}.ipynb"
    assert datetime.strptime(match.group("timestamp"), "%Y%m%d-%H%M%S") == datetime(2026, 11, 29, 14, 5, 30)
    # nbgrader's own zip_collect reads the time the same way (it misreads YYYY-MM-DD-HH-MM-SS).
    assert parse_utc(match.group("timestamp")).replace(tzinfo=None) == datetime(2026, 11, 29, 14, 5, 30)


@pytest.mark.parametrize("name", ["", "   ", "!!!", "alan attempt 2", "alan_attempt_2026-01-01"])
def test_a_name_that_cannot_be_an_unambiguous_id_is_refused_with_an_example(name):
    with pytest.raises(CannotSubmit, match="NAME=ada_lovelace"):
        submit.id_from_name(name)




@pytest.mark.parametrize("content", ['{"cells": [', "not json at all", '{"a": 1}'])
def test_a_file_that_is_not_a_notebook_is_not_handed_in_and_the_checkpoint_is_named(tmp_path, content):
    folder = tmp_path / LESSON
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    broken = folder / f"{LESSON}.ipynb"
    broken.write_text(content)
    (folder / ".ipynb_checkpoints" / f"{LESSON}-checkpoint.ipynb").write_text("{}")
    out = tmp_path / "submissions"
    with pytest.raises(CannotSubmit) as refused:
        submit.main(lesson=LESSON, name="Ada", notebook=broken, out=out)
    assert "Nothing was handed in" in str(refused.value) and "-checkpoint.ipynb" in str(refused.value)
    assert not out.exists()
    (folder / ".ipynb_checkpoints" / f"{LESSON}-checkpoint.ipynb").unlink()
    with pytest.raises(CannotSubmit, match="save it there again"):
        submit.main(lesson=LESSON, name="Ada", notebook=broken, out=out)
