"""A jupyter_client kernel manager whose kernels start in a bubblewrap sandbox, with per-submission limits.

`SandboxedKernelManager` is what grader.pipeline.guarded_execute gives nbclient as its
`kernel_manager_class`. Each kernel gets:

- its own run folder (mode 700) holding the connection file and the IPC sockets: the transport is
  `ipc`, never TCP, so there is no port for anything else on the machine to reach;
- the sandbox of grader.sandbox.bwrap;
- rlimits set between fork and exec, inherited by everything it starts: address space per process
  (`memory_limit`), file size (`file_size_limit`), no core files, and, when it runs as a uid of its
  own, the number of processes (`max_processes`);
- a watchdog in the grading process that adds up the resident memory and counts the processes of
  the kernel's whole tree every `WATCH_INTERVAL` seconds, and kills the tree when either goes over
  `tree_memory_limit` or `max_processes` (`killed_for` then says why);
- when the kernel is shut down, bwrap and everything in its PID namespace are killed and the run
  folder is removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import resource
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import psutil
from jupyter_client import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from traitlets import Bool, Dict, Integer, Type, Unicode

from grader.sandbox.bwrap import Sandbox, copied_files, real_uid_possible
from grader.sandbox.client import PromptKernelClient
from grader.sandbox.template import Template, TemplateError, kernel_args, template_for

WATCH_INTERVAL = 0.1  # seconds between two looks at the kernel's process tree
_uids = itertools.count(0)


def _next_uid() -> int:
    """A host uid for the next kernel of this process, distinct from those of other grading processes."""
    return 200_000 + (os.getpid() % 40_000) * 20 + next(_uids) % 20


def _memory(process: psutil.Process) -> int:
    """Bytes the process holds: its proportional share of the pages it shares with others (PSS),
    so that forked processes do not count their common pages once each; RSS where PSS is unknown."""
    try:
        full = process.memory_full_info()
        return getattr(full, "pss", full.rss)
    except psutil.AccessDenied:
        with contextlib.suppress(psutil.Error):
            return process.memory_info().rss
    except psutil.Error:
        pass
    return 0


def _tree(root: psutil.Process) -> list[psutil.Process]:
    """`root` and its descendants, read from their own /proc entries: psutil's `children()` reads the
    stat file of every process on the machine, a real cost at ten looks a second beside a busy batch."""
    if not _CHILDREN_FILES:
        return [root, *root.children(recursive=True)]
    tree, todo = [root], [root.pid]
    while todo:
        pid = todo.pop()
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as children:
                    for child in map(int, children.read().split()):
                        with contextlib.suppress(psutil.Error):
                            tree.append(psutil.Process(child))
                            todo.append(child)
    return tree


_CHILDREN_FILES = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")  # CONFIG_PROC_CHILDREN


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.Error:
        return 0


class SandboxProvisioner(LocalProvisioner):
    """Launches the kernel command inside the sandbox described by its SandboxedKernelManager."""

    async def launch_kernel(self, cmd: list[str], **kwargs):
        km: SandboxedKernelManager = self.parent
        sandbox = Sandbox(rundir=km.rundir, tmpfs_size=km.disk_limit, real_uid=km.real_uid, env=km.sandbox_env,
                          course_files=dict(km.course_files))
        argv, fds = sandbox.command(cmd, cwd=str(kwargs.pop("cwd", "") or ""))
        kwargs["pass_fds"] = fds
        kwargs["cwd"] = str(km.rundir)
        kwargs["env"] = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # bwrap's own; the kernel's is set inside
        kwargs["preexec_fn"] = km.set_limits
        try:
            info = await super().launch_kernel(argv, **kwargs)
        finally:
            for fd in fds:
                os.close(fd)
        km.start_watchdog(self.process.pid)
        return info

    async def send_signal(self, signum: int) -> None:
        if signum in (signal.SIGKILL, signal.SIGTERM):  # bwrap does not pass these on: end the whole tree
            self.parent.kill_tree()
            # and wait (a few ms) until it is gone: jupyter_client would otherwise look again in 0.1 s.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=1)
            return
        await super().send_signal(signum)

    async def cleanup(self, restart: bool = False) -> None:
        self.parent.kill_tree()
        await super().cleanup(restart)
        self.parent.remove_rundir()


class ForeignProcess:
    """What jupyter_client needs of a Popen, for a kernel process that is not this process's child."""

    stdin = stdout = stderr = None
    returncode: int | None = None

    def __init__(self, pid: int):
        self.pid = pid
        self._process = psutil.Process(pid)

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                if self._process.status() == psutil.STATUS_ZOMBIE:
                    self.returncode = -signal.SIGKILL
            except psutil.Error:
                self.returncode = -signal.SIGKILL  # reaped by the template: the code is not ours to read
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        with contextlib.suppress(psutil.Error):
            self._process.wait(timeout)
        self.returncode = self.poll() if self.returncode is None else self.returncode
        return self.returncode if self.returncode is not None else -signal.SIGKILL

    def send_signal(self, signum: int) -> None:
        with contextlib.suppress(psutil.Error):
            self._process.send_signal(signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class WarmProvisioner(SandboxProvisioner):
    """Forks the kernel from this process's warm template (grader.sandbox.template) instead of starting it cold."""

    async def launch_kernel(self, cmd: list[str], **kwargs):
        km: SandboxedKernelManager = self.parent
        sandbox = Sandbox(rundir=km.rundir, tmpfs_size=km.disk_limit, env=km.sandbox_env)
        limits = {"memory": km.memory_limit, "file_size": km.file_size_limit, "processes": km.max_processes}
        pid = km.template.start_kernel(rundir=km.rundir, args=kernel_args(cmd), env=sandbox.kernel_env(),
                                       limits=limits, tmpfs_size=km.disk_limit,
                                       files=copied_files(str(kwargs.get("cwd", "") or ""), dict(km.course_files)))
        self.process = ForeignProcess(pid)
        self.pid, self.pgid, self.cwd = pid, None, str(km.rundir)
        km.start_watchdog(pid)
        return self.connection_info


class SandboxedKernelManager(AsyncKernelManager):
    """An AsyncKernelManager for one sandboxed, single-use kernel."""

    memory_limit = Integer(0, help="Bytes of address space (RLIMIT_AS) of each process; 0: none.").tag(config=True)
    tree_memory_limit = Integer(0, help="Bytes of resident memory of the kernel's whole process tree; 0: none.")
    max_processes = Integer(0, help="Processes (and threads, for RLIMIT_NPROC) the kernel's tree may have; 0: none.")
    file_size_limit = Integer(0, help="Bytes of the largest file the kernel may write (RLIMIT_FSIZE); 0: none.")
    disk_limit = Integer(0, help="Bytes of each writable tmpfs in the sandbox; 0: no size given.")
    sandbox_env = Dict({}, help="Environment variables of the kernel (nothing else of the grader's reaches it).")
    course_files = Dict({}, help="name -> path of course files copied into the kernel's working folder, "
                                 "beside the notebook's own (the lessons' helper module).")
    killed_for = Unicode("", help="Set when the watchdog killed the kernel: what it exceeded.")
    client_factory = Type(PromptKernelClient, klass=PromptKernelClient)  # ready without 0.2 s of silence
    warm = Bool(True, help="Fork the kernel from this process's warm template (grader.sandbox.template); "
                           "False, or a template that cannot start: a cold kernel in its own bwrap.")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.transport = "ipc"
        self.template: Template | None = None
        self.rundir: Path | None = None
        self._watchdog: asyncio.Task | None = None
        self._root_pid: int | None = None

    def _prepare_rundir(self) -> None:
        """The run folder: inside the warm template's folder when there is one, else on its own."""
        if self.warm and kernel_args(self.kernel_spec.argv) is not None:
            try:
                self.template = template_for(env=dict(self.sandbox_env), tmpfs_size=self.disk_limit)
            except TemplateError as error:
                self.log.warning("starting a cold kernel: %s", error)
        if self.template is not None:
            self.rundir, self.real_uid = self.template.new_rundir(), self.template.real_uid
        else:
            self.rundir = Path(tempfile.mkdtemp(prefix="grader-kernel-"))
            self.real_uid = _next_uid() if real_uid_possible() else None
            if self.real_uid is not None:
                os.chown(self.rundir, self.real_uid, self.real_uid)
        self.ip = str(self.rundir / "kernel")  # ipc needs an absolute path, or kernel and client disagree
        self.connection_file = str(self.rundir / "connection.json")

    async def _async_pre_start_kernel(self, **kw):
        if self.provisioner is None:
            self._prepare_rundir()
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", None) or os.urandom(16).hex()
            provisioner = WarmProvisioner if self.template is not None else SandboxProvisioner
            self.provisioner = provisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self)
            # Interrupts travel as a control message: a signal to bwrap would not reach the kernel.
            self.kernel_spec.interrupt_mode = "message"
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        if self.real_uid is not None:  # the kernel reads its connection file as its own user
            os.chown(self.connection_file, self.real_uid, self.real_uid)
        return cmd, kw

    def set_limits(self) -> None:
        """Runs in the child between fork and exec; the limits hold for bwrap, the kernel and its children."""
        limits = [(resource.RLIMIT_CORE, 0)]
        if self.memory_limit:
            limits.append((resource.RLIMIT_AS, self.memory_limit))
        if self.file_size_limit:
            limits.append((resource.RLIMIT_FSIZE, self.file_size_limit))
        if self.max_processes and self.real_uid is not None:  # per uid: only meaningful for a uid of its own
            limits.append((resource.RLIMIT_NPROC, self.max_processes))
        for which, value in limits:
            resource.setrlimit(which, (value, value))

    def start_watchdog(self, pid: int) -> None:
        self._root_pid = pid
        if self.tree_memory_limit or self.max_processes:
            self._watchdog = asyncio.get_event_loop().create_task(self._watch(pid))

    async def _watch(self, pid: int) -> None:
        try:
            root = psutil.Process(pid)
        except psutil.Error:
            return
        while _alive(root):
            try:
                tree = _tree(root)
            except psutil.Error:  # a process of the tree ended while it was read: look again
                tree = [root]
            # RSS is cheap to read and never below PSS: the costly PSS only when RSS is over the limit.
            over = self.tree_memory_limit and sum(_rss(process) for process in tree) > self.tree_memory_limit
            if over and sum(_memory(process) for process in tree) > self.tree_memory_limit:
                self.killed_for = f"the submission's processes used more than {self.tree_memory_limit} bytes"
            elif self.max_processes and len(tree) > self.max_processes:
                self.killed_for = f"the submission started more than {self.max_processes} processes"
            if self.killed_for:
                self.kill_tree()
                return
            await asyncio.sleep(WATCH_INTERVAL)

    def kill_tree(self) -> None:
        """SIGKILL bwrap and everything under it (its PID namespace dies with it)."""
        if self._root_pid is None:
            return
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(self._root_pid)
            for process in [*root.children(recursive=True), root]:
                with contextlib.suppress(psutil.Error):
                    process.send_signal(signal.SIGKILL)

    def remove_rundir(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self.rundir is not None:
            shutil.rmtree(self.rundir, ignore_errors=True)
