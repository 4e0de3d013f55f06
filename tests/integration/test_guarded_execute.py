"""GuardedExecute on its own: the sandbox's view, a dying kernel, output kept in bytes, no silent unsafe mode,
what the kernel is told while grading."""

from __future__ import annotations

import os
from unittest import mock

import pytest

from grader.course import ROOT
from grader.pipeline.guarded_execute import (
    KERNEL_DIED,
    NOT_RUN,
    OUTPUT_CAPPED,
    UNSAFE,
    KernelStartError,
)
from grader.sandbox import bwrap
from tests.integration.guarded_run import run, text


def test_the_kernel_sees_neither_the_course_nor_the_network_and_dies_alone():
    probe = f"import os, socket\nprint(os.path.exists({str(ROOT / 'grader')!r}), os.getuid(), os.getpid() < 10)\n"
    probe += "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\nexcept OSError:\n    print('no network')"
    nb = run(
        probe,
        "print('x' * 5000)",
        "import os, time\nos.write(2, b'last words \\x1b[2J\\n')\ntime.sleep(0.5)\nos._exit(3)",
        "print('never')",
        output_bytes_per_cell=1000,
    )
    first, flood, exit_cell, after = nb.cells
    exists, uid, *rest = text(first).split()
    assert exists == "False" and rest == ["True", "no", "network"]
    if os.geteuid() == 0:  # a host uid of its own, the same inside and out
        assert int(uid) not in (0, os.getuid(), 65534)
    else:
        assert uid == "65534"
    assert any(o.get("ename") == OUTPUT_CAPPED for o in flood.outputs) and "x" * 5000 not in text(flood)
    [died] = [o for o in exit_cell.outputs if o.get("ename") == KERNEL_DIED]
    assert died.evalue.endswith("it said: last words \\x1b[2J"), died.evalue  # its stderr, escaped
    assert [o.get("ename") for o in after.outputs] == [NOT_RUN]


def test_a_kernel_that_cannot_start_says_why_in_one_inert_line():
    with pytest.raises(KernelStartError) as raised:
        run("print(1)", kernel_env={"PYTHONHOME": "/nonexistent"})
    message = str(raised.value)
    assert "Kernel died before replying" in message and "No module named 'encodings'" in message, message
    assert "\n" not in message and "PYTHONHOME = '/nonexistent'\\n" in message


def test_without_a_sandbox_grading_refuses_unless_told_and_then_says_so():
    with mock.patch.object(bwrap, "bwrap_executable", side_effect=bwrap.SandboxUnavailable("no bwrap here")):
        bwrap.probe.cache_clear()
        try:
            with pytest.raises(bwrap.SandboxUnavailable, match="no bwrap here"):
                run("print(1)")
        finally:
            bwrap.probe.cache_clear()
    nb = run("print(1)", sandbox=False)
    assert nb.metadata[UNSAFE] is True and "Graded without the sandbox" in nb.cells[0].source


def test_the_kernel_is_told_it_is_graded_unless_the_shortcuts_are_off():
    """nbgrader sets NBGRADER_EXECUTION in the grading process and the sandbox clears the kernel's environment:
    GuardedExecute passes it on, with the shortcut arguments, only while grading_shortcuts is on."""
    argument = "--InlineBackend.figure_formats=png"
    probe = ("import os, sys\nprint(os.environ.get('NBGRADER_EXECUTION'), os.environ.get('OPENBLAS_NUM_THREADS'), "
             f"{argument!r} in sys.argv)")
    settings = {"kernel_env": {"OPENBLAS_NUM_THREADS": "1"}, "shortcut_arguments": [argument]}
    with mock.patch.dict(os.environ, {"NBGRADER_EXECUTION": "autograde"}):  # as `nbgrader autograde` sets it
        told = run(probe, **settings)
        not_told = run(probe, grading_shortcuts=False, **settings)
        unconfined = run(probe, sandbox=False, grading_shortcuts=False, **settings)
    assert text(told.cells[0]).split() == ["autograde", "1", "True"]
    assert text(not_told.cells[0]).split() == ["None", "1", "False"]
    assert text(unconfined.cells[-1]).split() == ["None", "1", "False"]
