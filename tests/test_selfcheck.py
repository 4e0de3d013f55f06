"""`make check`: per-exercise verdicts a student can trust, from nbgrader's own machinery.

Every lesson: the in-memory release the check compares against is the committed one, and the
reference answers pass with the honest verdict. Lessons with a tests/fixtures/student/<id>.toml
also get notebooks with mistakes, unattempted exercises, tampered test cells and an infinite loop,
and the exact verdict for each. `make check` on the committed Lesson 3 release (nothing attempted)
must fail. (That every released test cell fails on the untouched stubs is test_release.py's.)
"""

from __future__ import annotations

import copy
import re
import subprocess
from dataclasses import fields
from pathlib import Path

import nbformat
import pytest
import tomllib
from nbgrader.preprocessors import IgnorePattern

from grader import selfcheck
from grader.__main__ import main as cli
from grader.course import REPO, lesson_ids, nbgrader_config, student_notebook
from tests.submissions import FIXTURES, Variant, build, variants

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


def test_released_notebook_built_in_memory_equals_the_committed_release(lesson):
    built = selfcheck.released_notebook(lesson)
    committed = nbformat.read(student_notebook(lesson), as_version=4)
    assert len(built.cells) == len(committed.cells), f"lessons/{lesson} is stale: run `make release`"
    for index, (a, b) in enumerate(zip(built.cells, committed.cells, strict=True)):
        assert (a.cell_type, a.source, a.metadata) == (b.cell_type, b.source, b.metadata), (
            f"cell {index} of lessons/{lesson} differs from a fresh release: run `make release`")


def test_reference_answers_pass_with_the_honest_verdict(lesson, tmp_path, capsys):
    path = notebook_for(lesson, {}, tmp_path)  # every answer the reference one
    code, out = run_cli(lesson, "--notebook", str(path), "--timeout", "60", capsys=capsys)
    assert code == 0, out
    assert re.search(r"^\s+passed\s", out, re.M) and not re.search(r"FAILED|not attempted|cannot check", out), out
    assert f"=> {selfcheck.HONEST_PASS}" in out
    assert "all tests passed" not in out.lower() and "success" not in out.lower(), out


@pytest.mark.parametrize(("lesson_id", "name", "spec"), expectations(), ids=[f"{a}-{b}" for a, b, _ in expectations()])
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


def test_every_student_fixture_names_real_lessons_and_test_cells():
    for lesson, name, spec in expectations():
        assert lesson in lesson_ids(), f"tests/fixtures/student/{lesson}.toml: no such lesson"
        release = nbformat.read(student_notebook(lesson), as_version=4)
        tests = {c.metadata.nbgrader["grade_id"] for c in release.cells
                 if c.metadata.get("nbgrader", {}).get("grade")}
        assert set(spec["status"]) == tests, f"{lesson}/{name}: `status` must list exactly {sorted(tests)}"
        assert set(spec["status"].values()) <= {selfcheck.PASSED, selfcheck.FAILED, selfcheck.NOT_ATTEMPTED}


@pytest.mark.parametrize(("stderr", "graded_as_failure"), [
    ("/tmp/ipykernel_1/123.py:3: RuntimeWarning: overflow encountered in exp\n", None),  # as the course config says
    ("Traceback (most recent call last):\n  something broke\n", True),
])
def test_stderr_in_a_test_cell_counts_exactly_as_grading_counts_it(stderr, graded_as_failure):
    config = nbgrader_config()
    if graded_as_failure is None:  # a Python warning: grading drops it when IgnorePattern is on and matches
        ignore = IgnorePattern(config=config)
        graded_as_failure = not (ignore.enabled and re.search(ignore.pattern, stderr))
    released = selfcheck.released_notebook("03-parallel-heads", config)
    executed = copy.deepcopy(released)
    for cell in executed.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = "# answered"
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text=stderr)]
    runner = selfcheck._NotebookRunner(config=config)
    exercises = selfcheck._exercises(runner.as_graded(executed), released, runner.log, 30)
    expected = selfcheck.FAILED if graded_as_failure else selfcheck.PASSED
    assert exercises and {e.status for e in exercises} == {expected}
    if graded_as_failure:
        assert all(e.message.startswith("wrote to stderr, which grading scores as a failure") for e in exercises)


def test_a_missing_notebook_is_reported_and_fails(tmp_path, capsys):
    code, out = run_cli("03-parallel-heads", "--notebook", str(tmp_path / "nowhere.ipynb"), capsys=capsys)
    assert code == 1 and "cannot check: no notebook at" in out, out


def test_without_lesson_ids_every_lesson_is_checked(tmp_path):
    results = selfcheck.main(lessons_dir=tmp_path, quiet=True)  # an empty folder: no notebooks at all
    assert [r.lesson for r in results] == lesson_ids()
    assert all(not r.ok and r.problem.startswith("no notebook at") for r in results)


def test_make_check_runs_the_self_check_on_the_lessons_folder():
    # `-o` keeps make from reinstalling .venv if requirements.txt is newer than its stamp.
    command = ["make", "--no-print-directory", "-o", ".venv/.installed", "check", "LESSON=03-parallel-heads"]
    done = subprocess.run(command, cwd=REPO, text=True, capture_output=True, timeout=600)
    assert done.returncode != 0, f"the untouched release must not pass:\n{done.stdout}"
    assert "lessons/03-parallel-heads/03-parallel-heads.ipynb" in done.stdout
    assert done.stdout.count("not attempted") == 4 and "passed" not in done.stdout, done.stdout
    assert "Kernel is running over TCP" not in done.stdout + done.stderr, "kernel start-up noise reaches the student"
