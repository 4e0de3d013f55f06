"""`make submit`: the lesson notebook alone, named so that the instructor's collect step takes it.

The name must parse with `grader.student.submission_names.SUBMISSION_REGEXP` back into the student id, the time and
the lesson's notebook, and the instructor's `grader.grading.intake.collect` must file it under that student.
"""

from __future__ import annotations

import re
import subprocess
from datetime import datetime, timedelta, timezone

import nbformat
import pytest

from grader import cell_roles
from grader.course import ROOT, student_notebook
from grader.student import check as selfcheck
from grader.student import submit
from grader.student.submission_names import SUBMISSION_REGEXP
from tests.support import Variant, build

LESSON = "03-parallel-heads"


def test_a_passing_notebook_is_copied_as_is_and_collected_by_the_instructor(tmp_path, capsys):
    notebook = tmp_path / "work" / f"{LESSON}.ipynb"
    notebook.parent.mkdir()
    nbformat.write(build(LESSON, student_notebook(LESSON), Variant("reference")), notebook)
    out = tmp_path / "submissions"
    when = datetime(2026, 11, 29, 15, 5, 30, tzinfo=timezone(timedelta(hours=1)))  # 14:05:30 UTC

    path = submit.main(lesson=LESSON, name="Ada Lovelace", notebook=notebook, out=out, now=when, timeout=60)

    printed = capsys.readouterr().out
    assert path == out / f"{LESSON}_ada_lovelace_attempt_20261129-140530_{LESSON}.ipynb"
    assert sorted(out.iterdir()) == [path], "the submission is the notebook and nothing else"
    assert path.read_bytes() == notebook.read_bytes()
    assert f"=> {selfcheck.HONEST_PASS}" in printed and "WARNING" not in printed, printed
    assert "Upload this one file" in printed
    assert printed.rstrip().splitlines()[-1] == "deadline: none set for this lesson"  # the course sets none

    from grader.grading.intake import collect  # the instructor's side: files each download under its student
    from grader.grading.intake.people import People

    submitted = tmp_path / "submitted"
    collected = collect.collect(LESSON, submitted, tmp_path / "attempts", out, people=People(tmp_path / "people.json"))
    assert collected.students == ["ada_lovelace"] and not collected.skipped, collected
    assert (submitted / "ada_lovelace" / LESSON / f"{LESSON}.ipynb").read_bytes() == notebook.read_bytes()
    assert (submitted / "ada_lovelace" / LESSON / "timestamp.txt").read_text().startswith("2026-11-29 14:05:30")


@pytest.mark.more_cases  # make test submits once, a passing notebook (above)
def test_make_submit_warns_about_a_failing_self_check_but_still_writes_the_file(tmp_path):
    # The committed release, untouched: every exercise "not attempted". `-o` keeps make from
    # reinstalling .venv when requirements.txt is newer than its stamp.
    done = subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", "submit", f"LESSON={LESSON}",
                           "NAME=Zoë O'Brien", f"SUBMISSIONS={tmp_path}"],
                          cwd=ROOT, text=True, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = list(tmp_path.iterdir())
    match = re.fullmatch(SUBMISSION_REGEXP, path.name)
    assert match and match.group("student_id") == "zoe_o_brien" and path.name.startswith(f"{LESSON}_")
    assert path.read_bytes() == student_notebook(LESSON).read_bytes()
    tests = cell_roles.test_points(nbformat.read(student_notebook(LESSON), as_version=4))
    assert done.stdout.count("not attempted") == len(tests) and "WARNING" in done.stdout, done.stdout
    assert selfcheck.HONEST_PASS not in done.stdout


def test_make_submit_without_a_name_says_how_to_give_one():
    done = subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", "submit", f"LESSON={LESSON}"],
                          cwd=ROOT, text=True, capture_output=True, timeout=120)
    assert done.returncode != 0 and "NAME=ada_lovelace" in done.stderr, done.stdout + done.stderr
