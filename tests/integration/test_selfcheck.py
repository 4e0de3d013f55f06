"""`make check`: per-exercise verdicts a student can trust, from nbgrader's own machinery.

Every lesson: the reference answers pass with the honest verdict. Lessons with a tests/fixtures/student/<id>.toml
also get notebooks with mistakes, unattempted exercises, tampered test cells and an infinite loop,
and the exact verdict for each. `make check` on the committed Lesson 3 release (nothing attempted)
must fail.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from dataclasses import fields
from pathlib import Path

import nbformat
import pytest

from grader import cell_roles
from grader.__main__ import main as cli
from grader.course import ROOT, student_notebook
from grader.student import check as selfcheck
from tests.support import FIXTURES, Variant, build, variants

STUDENT_FIXTURES = FIXTURES / "student"
CELL_TIMEOUT = 5  # seconds per cell: an infinite loop costs this, not the 30 s of grading


def expectations() -> list[tuple[str, str, dict]]:
    cases = []
    for path in sorted(STUDENT_FIXTURES.glob("*.toml")):
        for name, spec in tomllib.loads(path.read_text()).items():
            cases.append((path.stem, name, spec))
    return cases


def notebook_for(lesson: str, spec: dict, folder: Path) -> Path:
    """Write the student notebook a fixture describes into `folder`; return its path."""
    if "submission" in spec:
        [variant] = [v for v in variants(lesson) if v.name == spec["submission"]]
    else:
        names = {f.name for f in fields(Variant)}
        variant = Variant(name="student", **{k: v for k, v in spec.items() if k in names})
    path = folder / f"{lesson}.ipynb"
    nbformat.write(build(lesson, student_notebook(lesson), variant), path)
    return path


def run_cli(*args: str, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        cli(["check", *args])
    return exit_info.value.code, capsys.readouterr().out


@pytest.mark.core_lessons("03-parallel-heads")
def test_reference_answers_pass_with_the_honest_verdict(lesson, tmp_path, capsys):
    path = notebook_for(lesson, {}, tmp_path)  # every answer the reference one
    code, out = run_cli(lesson, "--notebook", str(path), "--timeout", "60", capsys=capsys)
    assert code == 0, out
    assert re.search(r"^\s+passed\s", out, re.M) and not re.search(r"FAILED|not attempted|cannot check", out), out
    assert f"=> {selfcheck.HONEST_PASS}" in out
    assert "all tests passed" not in out.lower() and "success" not in out.lower(), out


@pytest.mark.parametrize(("lesson_id", "name", "spec"), [
    pytest.param(*case, id=f"{case[0]}-{case[1]}", marks=pytest.mark.more_cases) for case in expectations()])
def test_self_check_reports_each_exercise_as_the_fixture_says(lesson_id, name, spec, tmp_path):
    path = notebook_for(lesson_id, spec, tmp_path)
    [check] = selfcheck.main(lessons=[lesson_id], notebook=path, timeout=CELL_TIMEOUT, quiet=True)
    text = selfcheck.report(check)
    assert not check.problem, text
    assert {e.test_id: e.status for e in check.exercises} == spec["status"], text
    lines = {e.test_id: f"{e.status} {e.name} {e.message}" for e in check.exercises}
    for test_id, needle in spec.get("says", {}).items():
        assert needle in lines[test_id], f"{test_id}: expected {needle!r} in {lines[test_id]!r}\n{text}"
    assert list(check.deleted) == spec.get("deleted", []), text
    assert list(check.edited) == spec.get("edited", []), text
    for grade_id in check.deleted:
        assert f"locked cell {grade_id} was deleted" in text
    for grade_id in check.edited:
        assert f"locked cell {grade_id} was edited" in text
    everything_passed = all(s == selfcheck.PASSED for s in spec["status"].values())
    assert check.ok == (everything_passed and not check.deleted and not check.edited), text
    assert (selfcheck.HONEST_PASS in text) == check.ok, text
    assert "all tests passed" not in text.lower()


def test_make_check_runs_the_self_check_on_the_lessons_folder():
    # `-o` keeps make from reinstalling .venv if requirements.txt is newer than its stamp.
    command = ["make", "--no-print-directory", "-o", ".venv/.installed", "check", "LESSON=03-parallel-heads"]
    done = subprocess.run(command, cwd=ROOT, text=True, capture_output=True, timeout=600)
    # Failed exercises are a result, not an error: make reports no failure (exit status 0, no "Error" line).
    assert done.returncode == 0 and "Error" not in done.stderr, f"{done.stdout}{done.stderr}"
    assert "lessons/03-parallel-heads/03-parallel-heads.ipynb" in done.stdout
    tests = cell_roles.test_points(nbformat.read(student_notebook("03-parallel-heads"), as_version=4))
    assert done.stdout.count("not attempted") == len(tests) and "passed" not in done.stdout, done.stdout
    assert "Kernel is running over TCP" not in done.stdout + done.stderr, "kernel start-up noise reaches the student"
