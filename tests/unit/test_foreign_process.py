"""grader.sandbox.kernel: a kernel killed through its provisioner is gone when the call returns."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import psutil

from grader.sandbox.kernel import ForeignProcess, SandboxedKernelManager, SandboxProvisioner


def test_a_killed_kernel_is_gone_when_the_provisioner_returns():
    """jupyter_client looks again only 0.1 s later at a kernel still there after its kill."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    manager = SandboxedKernelManager()
    manager._root_pid = child.pid
    provisioner = SandboxProvisioner(kernel_id="k", kernel_spec=None, parent=manager)
    provisioner.process = ForeignProcess(child.pid)
    asyncio.run(provisioner.send_signal(signal.SIGKILL))
    assert not psutil.pid_exists(child.pid)  # reaped, not a zombie waiting for its parent
    assert provisioner.process.poll() == -signal.SIGKILL
    child.wait(timeout=5)
