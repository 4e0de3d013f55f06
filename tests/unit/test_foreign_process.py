"""grader.sandbox.kernel.ForeignProcess: a killed kernel is gone when kill() returns."""

from __future__ import annotations

import signal
import subprocess
import sys

import psutil

from grader.sandbox.kernel import ForeignProcess


def test_kill_returns_once_the_process_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    process = ForeignProcess(child.pid)
    assert process.poll() is None
    process.kill()
    # Gone, not merely signalled: here the waiting reaped it (a warm kernel is reaped by its template).
    assert not psutil.pid_exists(child.pid)
    assert process.poll() == -signal.SIGKILL
    child.wait(timeout=5)
