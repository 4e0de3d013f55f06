"""One cheap rehearsal of a kernel's start, before a batch: the sandbox, the uid, the run folder and the sockets.

`rehearse(limits)` starts the sandbox exactly as grader.sandbox.kernel starts a kernel's (same
options, same host uid scheme, same run folder and connection file, same TMPDIR), but runs a few
lines of Python instead of ipykernel: read the connection file, bind a socket where the kernel's
would be, find the packages a kernel imports, and answer the grader, who connects to that socket
from outside through the sandbox's root as it does for a kernel. It returns "" when all of that
worked, else what failed and what the sandbox wrote on stderr (bounded, one inert line). It takes
a small fraction of a kernel's start, so every batch can afford it (grader/grading/running/preflight.py).
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time

from grader.sandbox.bwrap import CONNECTION_FILE, RUN_DIR, Sandbox, host_path, own_uids_possible
from grader.sandbox.limits import KernelLimits
from grader.sandbox.stderr_tail import StderrTail

UIDS = (1_500_000_000, 2_000_000_000)  # grader.sandbox.kernel.SandboxedKernelManager.uid_range's default
ANSWER = b"kernel-probe-ready"
SCRIPT = f"""
import importlib.util, json, socket, sys
info = json.load(open({CONNECTION_FILE!r}))
server = socket.socket(socket.AF_UNIX)
server.bind(info["ip"] + "-1")
server.listen(1)
missing = [name for name in ("ipykernel", "zmq", "numpy") if importlib.util.find_spec(name) is None]
if missing:
    sys.exit("the kernel's packages cannot be found or read: " + ", ".join(missing))
connection, _ = server.accept()
connection.sendall({ANSWER!r})
"""


def rehearse(limits: KernelLimits, env: dict[str, str] | None = None, timeout: float = 60.0) -> str:
    """"" when a sandboxed kernel could start here, else what failed (one inert line)."""
    host_uid = random.randrange(*UIDS) if own_uids_possible() else None
    connection = json.dumps({"ip": f"{RUN_DIR}/kernel", "transport": "ipc"}).encode()
    sandbox = Sandbox(connection=connection, tmpfs_size=limits.disk_limit, host_uid=host_uid, env=env or {},
                      max_tasks=limits.max_processes if host_uid is None else 0)
    info_read, info_write = os.pipe()
    stderr_read, stderr_write = os.pipe()
    python = os.path.join(sys.prefix, "bin", "python")
    argv, fds = sandbox.command([python, "-c", SCRIPT], info_fd=info_write)
    try:
        process = subprocess.Popen(argv, pass_fds=[*fds, info_write], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=stderr_write,
                                   env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    except OSError as error:
        for fd in (info_read, stderr_read):
            os.close(fd)
        return f"bubblewrap did not start: {error}"
    finally:
        for fd in (*fds, info_write, stderr_write):
            os.close(fd)
    stderr = StderrTail(stderr_read)
    from grader.sandbox.kernel import _child_pid

    problem = ""
    try:
        child = _child_pid(info_read, timeout)
        problem = "the sandbox did not start" if child is None else _answer(process, child, timeout)
        if not problem and process.wait(timeout) != 0:
            problem = f"the sandbox ended with exit status {process.returncode}"
    except subprocess.TimeoutExpired:
        problem = f"the sandbox did not finish within {timeout:g} s"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    if not problem:
        return ""
    stderr.wait(5)
    return f"{problem}; it said: {stderr.text() or 'nothing'}"


def _answer(process: subprocess.Popen, child: int, timeout: float) -> str:
    """"" when the probe inside answered on its socket, reached from here as the grader reaches a kernel's."""
    path = host_path(child, f"{RUN_DIR}/kernel-1")
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline and process.poll() is None:
        with socket.socket(socket.AF_UNIX) as client:
            try:
                client.settimeout(max(0.1, deadline - time.monotonic()))
                client.connect(path)
                if client.recv(len(ANSWER)) == ANSWER:
                    return ""
            except OSError as error:
                last = error
        time.sleep(0.02)
    if process.poll() is not None:
        return f"the sandbox ended (exit status {process.returncode}) before the kernel answered"
    return f"the grader could not reach the kernel's socket in its run folder ({last})"
