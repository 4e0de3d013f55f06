"""`make check`'s pieces that start no kernel: verdicts from outputs, missing notebooks, the fixtures."""

from __future__ import annotations

import copy
import re
import tomllib

import nbformat
import pytest
from nbgrader.preprocessors import IgnorePattern

from grader import cell_roles
from grader.__main__ import main as cli
from grader.course import lesson_ids, nbgrader_config, student_notebook
from grader.student import check as selfcheck
from grader.student import originals
from tests.support import FIXTURES


def expectations() -> list[tuple[str, str, dict]]:
    return [(path.stem, name, spec) for path in sorted((FIXTURES / "student").glob("*.toml"))
            for name, spec in tomllib.loads(path.read_text()).items()]


def run_cli(*args: str, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        cli(["check", *args])
    return exit_info.value.code, capsys.readouterr().out


def test_every_student_fixture_names_real_lessons_and_test_cells():
    for lesson, name, spec in expectations():
        assert lesson in lesson_ids(), f"tests/fixtures/student/{lesson}.toml: no such lesson"
        release = nbformat.read(student_notebook(lesson), as_version=4)
        tests = set(cell_roles.test_points(release))
        assert set(spec["status"]) == tests, f"{lesson}/{name}: `status` must list exactly {sorted(tests)}"
        assert set(spec["status"].values()) <= {selfcheck.PASSED, selfcheck.FAILED, selfcheck.NOT_ATTEMPTED}


@pytest.mark.parametrize(("stderr", "graded_as_failure"), [
    ("/tmp/ipykernel_1/123.py:3: RuntimeWarning: overflow encountered in exp\n", None),  # as the course config says
    ("WARNING:root:the inputs are small\n", False),  # logging's default format: a warning, kept as one (issue 27)
    ("Traceback (most recent call last):\n  something broke\n", True),
])
def test_stderr_in_a_test_cell_counts_exactly_as_grading_counts_it(stderr, graded_as_failure):
    config = nbgrader_config()
    if graded_as_failure is None:  # a Python warning: grading drops it when IgnorePattern is on and matches
        ignore = IgnorePattern(config=config)
        graded_as_failure = not (ignore.enabled and re.search(ignore.pattern, stderr))
    released = originals.original_notebook("03-parallel-heads", config)
    executed = copy.deepcopy(released)
    for cell in executed.cells:
        if cell_roles.kind(cell) == "solution":
            cell.source = "# answered"
        if cell_roles.is_graded(cell):
            cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text=stderr)]
    runner = selfcheck._NotebookRunner(config=config)
    exercises = selfcheck._exercises(runner.as_graded(executed), released, runner.log, 30)
    expected = selfcheck.FAILED if graded_as_failure else selfcheck.PASSED
    assert exercises and {e.status for e in exercises} == {expected}
    if graded_as_failure:
        assert all(e.message.startswith("wrote to stderr, which grading scores as a failure") for e in exercises)


def test_a_missing_notebook_is_reported_and_fails(tmp_path, capsys):
    code, out = run_cli("03-parallel-heads", "--notebook", str(tmp_path / "nowhere.ipynb"), capsys=capsys)
    assert code == 2 and "cannot check: no notebook at" in out, out  # 2: could not check (documented)


def test_without_lesson_ids_every_lesson_is_checked(tmp_path):
    results = selfcheck.main(lessons_dir=tmp_path, quiet=True)  # an empty folder: no notebooks at all
    assert [r.lesson for r in results] == lesson_ids()
    assert all(not r.ok and r.problem.startswith("no notebook at") for r in results)


