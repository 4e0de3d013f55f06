"""Before a batch: a broken trusted spec, or a sandbox in which no kernel can start, refuses it once."""

from __future__ import annotations

from unittest import mock

import pytest
from traitlets.config import Config

from grader.course import ROOT, nbgrader_config
from grader.errors import BrokenSpec, KernelsCannotStart
from grader.grading import autograde
from grader.grading.running import preflight
from grader.sandbox import bwrap
from grader.trusted import spec

LESSON = "03-parallel-heads"


@pytest.fixture
def broken_spec(tmp_path, monkeypatch):
    broken = tmp_path / f"{LESSON}.checks.py"
    broken.write_text("from grader.trusted.spec import Check\nCHECKS = {'x': 1 / 0}\n")
    monkeypatch.setattr(spec, "checks_file", lambda lesson: broken)
    spec.load_spec.cache_clear()
    yield
    spec.load_spec.cache_clear()


def test_a_broken_spec_refuses_the_batch_before_any_kernel_starts(broken_spec):
    with mock.patch.object(autograde, "supervise") as supervise, \
            mock.patch.object(preflight, "rehearse") as rehearse, pytest.raises(BrokenSpec) as refused:
        autograde.main(lesson=LESSON, course=ROOT)
    message = str(refused.value)
    assert "ZeroDivisionError: division by zero" in message and f"solutions/{LESSON}.checks.py" in message
    assert "Traceback" in message and "No submission was graded" in message
    supervise.assert_not_called()
    rehearse.assert_not_called()


def test_the_specs_of_the_course_prepare_their_checks():
    preflight.check_spec(LESSON, nbgrader_config(ROOT))


def test_a_kernel_start_that_would_fail_every_submission_is_found_once_with_what_it_said():
    preflight.check_kernel(nbgrader_config(ROOT))  # this machine: a kernel starts
    config = nbgrader_config(ROOT)
    config.merge(Config({"GuardedExecute": {"kernel_env": {"PYTHONHOME": "/nonexistent"}}}))
    with pytest.raises(KernelsCannotStart) as refused:
        preflight.check_kernel(config)
    message = str(refused.value)
    assert "No module named 'encodings'" in message and "What to do" in message, message


def test_where_bubblewrap_cannot_start_the_rehearsal_says_so(monkeypatch):
    monkeypatch.setattr(bwrap, "bwrap_executable", lambda: "/nonexistent/bwrap")
    with pytest.raises(KernelsCannotStart, match="bubblewrap did not start"):
        preflight.check_kernel(nbgrader_config(ROOT))
