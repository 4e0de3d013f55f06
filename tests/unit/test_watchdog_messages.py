"""The watchdog's reading of a dropped socket: a refused over-size message while the sandbox runs on, a
kernel's own death when the sandbox ends with it."""

from __future__ import annotations

import asyncio
import subprocess

import psutil
import pytest

from grader.sandbox.kernel import SandboxedKernelManager
from grader.sandbox.limits import KernelLimits


class DroppedSockets:
    """A kernel client whose kernel's end of the sockets is gone."""

    async def refused_a_message(self) -> bool:
        return True


@pytest.mark.parametrize(("lives", "refused"), [(0.1, False), (30, True)])
def test_a_dropped_socket_is_a_refused_message_only_if_the_sandbox_runs_on(lives, refused):
    """The kernel's sockets drop when it dies, a moment before bwrap ends after it: not an over-size message."""
    manager = SandboxedKernelManager(limits=KernelLimits(max_message_bytes=1000), watch_interval=0.05,
                                     disconnect_grace=1.0)
    manager._client = DroppedSockets()
    sandbox = subprocess.Popen(["sleep", str(lives)])
    try:
        reason = asyncio.run(manager._over_message_size(psutil.Process(sandbox.pid)))
    finally:
        sandbox.kill()
        sandbox.wait()
    assert reason == ("it sent a message over 1000 bytes" if refused else "")
