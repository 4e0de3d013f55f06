"""lesson_helpers.py, which every lesson imports: full-size demonstrations except in a checking or grading kernel."""

from __future__ import annotations

import matplotlib
import pytest

import lesson_helpers
from grader.student.layout import LESSON_HELPERS, with_lesson_helpers


@pytest.mark.parametrize(("execution", "full"), [(None, True), ("autograde", False), ("validate", False), ("", True)])
def test_demonstrations_run_small_only_while_checked_or_graded(monkeypatch, execution, full):
    if execution is None:
        monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    else:
        monkeypatch.setenv("NBGRADER_EXECUTION", execution)
    assert lesson_helpers.full_demos() is full
    assert lesson_helpers.demo_size(full=1024, small=128) == (1024 if full else 128)
    with matplotlib.rc_context():
        lesson_helpers.tidy_figures()
        assert matplotlib.rcParams["figure.constrained_layout.use"] is full


def test_the_sizes_are_named_so_a_reader_cannot_swap_them():
    with pytest.raises(TypeError):
        lesson_helpers.demo_size(1024, 128)


def test_kernels_started_with_the_lesson_helpers_environment_find_the_module_first():
    env = with_lesson_helpers({"PYTHONPATH": "/elsewhere", "HOME": "/home/x"})
    assert env["PYTHONPATH"].split(":") == [str(LESSON_HELPERS.parent), "/elsewhere"] and env["HOME"] == "/home/x"
    assert with_lesson_helpers(env) == env  # not added twice
    assert LESSON_HELPERS.is_file() and lesson_helpers.__file__ == str(LESSON_HELPERS)
