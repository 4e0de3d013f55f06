"""Warm kernels: a template per grading process, in a sandbox of its own, forks each submission's kernel.

A cold kernel spends most of its start importing ipykernel, NumPy and matplotlib. The template
(grader/sandbox/template_server.py) imports them once and never runs student code; each kernel is
a fresh fork of it, used for one submission and then killed with everything it started. The fork
takes new mount, PID, network, IPC, UTS, cgroup and user namespaces, fresh tmpfs folders, its own
run folder only, the same limits as a cold kernel, and uid 65534 without capabilities: what
grader.sandbox.bwrap gives a cold kernel (see the module docstring of template_server.py).

`template_for(...)` returns this process's running template for a kernel environment, starting
it on first use; a process forked from this one once it is ready (grader.grading.supervisor's
jobs) shares it.
`Template.start_kernel` returns the host pid of the new kernel's session process, whose death
ends the kernel and its whole PID namespace.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

from grader.sandbox.bwrap import TEMPLATE_SERVER, Sandbox, real_uid_possible

SERVER = Path(__file__).with_name("template_server.py")
START_TIMEOUT = 60  # seconds for the template to import its libraries
REQUEST_TIMEOUT = 30  # seconds for a kernel's namespaces to be ready
INLINE = "module://matplotlib_inline.backend_inline"


class TemplateError(RuntimeError):
    """The template could not start, or could not start a kernel; the message says why."""


class Template:
    """One running template: its sandboxed process, its socket and the folder of its kernels' run folders."""

    def __init__(self, *, env: dict[str, str], real_uid: int | None, tmpfs_size: int):
        self.owner = os.getpid()
        self.real_uid = real_uid
        self.runs = Path(tempfile.mkdtemp(prefix="grader-runs-"))
        if real_uid is not None:
            os.chown(self.runs, real_uid, real_uid)
        self.socket = self.runs / "template.sock"
        # What a kernel reads at import time comes from here: the same environment as a cold kernel's.
        template_env = {**env, "MPLBACKEND": INLINE, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
        sandbox = Sandbox(rundir=self.runs, tmpfs_size=tmpfs_size, real_uid=real_uid, env=template_env)
        argv, fds = sandbox.command([sys.executable, TEMPLATE_SERVER, str(self.socket), str(self.runs)],
                                    template=SERVER)
        try:
            self.process = subprocess.Popen(argv, pass_fds=fds, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                                            start_new_session=True)
        finally:
            for fd in fds:
                os.close(fd)
        self.ready = False  # until it has said so: see wait_ready()
        atexit.register(self.stop)

    def wait_ready(self) -> None:
        """Wait until the template has imported its libraries; TemplateError (and stopped) if it fails.

        Only the process that started it can wait: a process forked before then gets TemplateError.
        """
        if self.ready:
            return
        if os.getpid() != self.owner:
            raise TemplateError("the kernel template was not ready when this process was forked")
        ready, _, _ = select.select([self.process.stdout], [], [], START_TIMEOUT)
        line = self.process.stdout.readline() if ready else b""
        self.process.stdout.close()
        if line.strip() != b"ready":
            self.stop()
            raise TemplateError(f"the kernel template did not start (exit code {self.process.poll()})")
        self.ready = True

    def alive(self) -> bool:
        try:
            running = psutil.Process(self.process.pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False
        return running and (not self.ready or self.socket.exists())

    def new_rundir(self) -> Path:
        """A run folder (mode 700) for one kernel, inside the folder the template can see."""
        rundir = Path(tempfile.mkdtemp(prefix="kernel-", dir=self.runs))
        if self.real_uid is not None:
            os.chown(rundir, self.real_uid, self.real_uid)
        return rundir

    def start_kernel(self, *, rundir: Path, args: list[str], env: dict[str, str], limits: dict[str, int],
                     tmpfs_size: int, files: list[tuple[str, str]]) -> int:
        """Fork a kernel for `ipykernel_launcher args`; returns the host pid of its session process."""
        request = {"rundir": str(rundir), "args": args, "env": env, "limits": limits, "tmpfs_size": tmpfs_size,
                   "files": [name for name, _ in files]}
        fds = [os.dup(1), os.dup(2), *(os.open(path, os.O_RDONLY | os.O_NOFOLLOW) for _, path in files)]
        replies: dict = {}
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(REQUEST_TIMEOUT)
                conn.connect(str(self.socket))
                socket.send_fds(conn, [json.dumps(request).encode()], fds)
                with conn.makefile("rb") as stream:
                    for line in stream:  # {"pid"} from the template, {"ready"} or {"error"} from the kernel
                        replies.update(json.loads(line))
        except (OSError, ValueError) as error:
            raise TemplateError(f"the kernel template did not answer: {error}") from None
        finally:
            for fd in fds:
                os.close(fd)
        if "error" in replies or not replies.get("ready") or "pid" not in replies:
            raise TemplateError(f"the kernel template could not start a kernel: {replies.get('error', replies)}")
        return self._host_pid(int(replies["pid"]))

    def _host_pid(self, pid: int) -> int:
        """The host pid of the template's child whose pid in the template's namespace is `pid`."""
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.process.pid).children(recursive=True):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    status = Path(f"/proc/{child.pid}/status").read_text()
                    nspid = next(line for line in status.splitlines() if line.startswith("NSpid:")).split()
                    if int(nspid[2]) == pid:
                        return child.pid
        raise TemplateError("the kernel's process could not be found")

    def stop(self) -> None:
        """Kill the template and every kernel it started; remove its folder (only in the process that made it)."""
        if os.getpid() != self.owner:
            return
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(self.process.pid)
            for process in [*root.children(recursive=True), root]:
                with contextlib.suppress(psutil.Error):
                    process.send_signal(signal.SIGKILL)
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        shutil.rmtree(self.runs, ignore_errors=True)


_templates: dict[tuple, Template] = {}
# Read when a notebook runs, never at import: each kernel gets them, and they do not make a template differ.
RUNTIME_ONLY = frozenset({"NBGRADER_EXECUTION"})


def template_for(*, env: dict[str, str], tmpfs_size: int, real_uid: int | None = None, wait: bool = True) -> Template:
    """This process's template for kernels with environment `env`, started (or restarted) as needed.

    `wait=False` returns as soon as it is starting, so that the caller can do other work meanwhile;
    a later call with `wait=True` (the default) waits until it is ready.
    """
    if real_uid is None and real_uid_possible():
        real_uid = 199_999 - os.getpid() % 40_000  # one uid per grading command, apart from cold kernels' uids
    env = {name: value for name, value in env.items() if name not in RUNTIME_ONLY}
    key = (tuple(sorted(env.items())), tmpfs_size)
    template = _templates.get(key)
    if template is not None and not template.alive():
        template.stop()
        template = None
    if template is None:
        template = _templates[key] = Template(env=env, real_uid=real_uid, tmpfs_size=tmpfs_size)
    if wait:
        try:
            template.wait_ready()
        except TemplateError:
            _templates.pop(key, None)
            raise
    return template


def kernel_args(cmd: list[str]) -> list[str] | None:
    """The arguments of `python -m ipykernel_launcher ...` run by this environment's python, else None.

    A kernelspec's bare `python` counts: jupyter_client runs it as `sys.executable`.
    """
    if len(cmd) < 3 or cmd[1:3] != ["-m", "ipykernel_launcher"]:
        return None
    own = cmd[0] in {"python", f"python{sys.version_info[0]}", f"python{sys.version_info[0]}.{sys.version_info[1]}"}
    return cmd[3:] if own or os.path.realpath(cmd[0]) == os.path.realpath(sys.executable) else None
