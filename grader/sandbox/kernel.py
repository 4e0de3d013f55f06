"""A jupyter_client kernel manager whose kernels start in a bubblewrap sandbox, each in a cgroup of its own.

`SandboxedKernelManager` is what grader.pipeline.guarded_execute gives nbclient as its
`kernel_manager_class`. Each kernel is started cold, used for one notebook and killed. It gets:

- a run folder inside its sandbox, on a small tmpfs of its own (grader.sandbox.bwrap's `RUN_DIR`),
  holding its copy of the connection file and the IPC sockets: the transport is `ipc`, never TCP, so
  there is no port for anything else on the machine to reach. The grader keeps its own connection
  file in a host folder of its own (mode 700, under TMPDIR) that the kernel never sees, and reaches
  the sockets through the kernel's root (`/proc/<pid>/root`), whatever TMPDIR is;
- the sandbox of grader.sandbox.bwrap, and, when the grader runs as root, a host uid of its own,
  chosen at random from `uid_range` (which no file of the machine is expected to own) and held by
  the run folder's name, so no two kernels of the machine share one;
- its own cgroup (grader.sandbox.cgroup), made before it starts and removed after: memory
  (`tree_memory_limit`, shm, tmpfs and memfd pages included), tasks (`max_processes`, threads
  included), the same CPU weight as every other kernel, and the CPU time a cell uses
  (`start_cell`/`end_cell`: a cell over its CPU limit is interrupted, then killed if it carries on);
  where no cgroup can be made, `isolation` says so and a watchdog in the grading process adds up
  the resident memory and the memfd files of the kernel's tree and counts its processes every
  `watch_interval` seconds;
- the limits of grader.sandbox.limits.KernelLimits, read from the same configuration as grading's;
- rlimits set between fork and exec: address space per process (`memory_limit`), file size
  (`file_size_limit`), no core files, and, with a uid of its own, the number of tasks. Run as an
  ordinary user, the number of tasks is set inside the sandbox instead (grader.sandbox.bwrap's
  `max_tasks`), where the kernel's own user namespace counts it for this kernel alone; `host_user`
  then says that the kernel is the grader's own uid on the host;
- stdin and stdout on /dev/null; stderr on a pipe that the grader reads, keeping a bounded tail
  (grader.sandbox.stderr_tail): nothing it writes reaches the grader's terminal or log as it is, and
  a kernel that dies says why (`stderr_text`: bwrap's, setpriv's and the interpreter's messages);
- clients whose sockets refuse any message over `max_message_bytes` before it is parsed
  (grader.sandbox.capped_client); a kernel that sends one is killed (`killed_for` says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
import zmq
from jupyter_client import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from traitlets import Dict, Float, Instance, Tuple, Type, Unicode, default

from grader.sandbox.bwrap import (
    CONNECTION_FILE,
    RUN_DIR,
    SANDBOX_UID,
    Sandbox,
    host_path,
    own_uids_possible,
    user_task_limit_possible,
)
from grader.sandbox.capped_client import CappedKernelClient
from grader.sandbox.cgroup import CgroupUnavailable, KernelCgroup
from grader.sandbox.limits import KernelLimits
from grader.sandbox.stderr_tail import StderrTail

RUN_FOLDER = "grader-kernel-"
SWEEP_AGE = 3600.0  # seconds: a cgroup younger is never swept (its kernel may be about to join it, or just ended)


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


def _memfd_bytes(tree: list[psutil.Process]) -> int:
    """Bytes of the memfd files the processes of `tree` hold open: pages no resident-memory figure counts
    (each file once, however many descriptors name it)."""
    files: dict[tuple[int, int], int] = {}
    for process in tree:
        with contextlib.suppress(OSError):
            for entry in os.scandir(f"/proc/{process.pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(entry.path).startswith("/memfd:"):
                        status = os.stat(entry.path)
                        files[status.st_dev, status.st_ino] = status.st_blocks * 512
    return sum(files.values())


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


def _child_pid(fd: int, timeout: float = 30.0) -> int | None:
    """The kernel's host pid from bwrap's `--info-fd` JSON read from `fd` (closed here); None when bwrap
    ended without one (it could not start: its stderr says why)."""
    data, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 4096) if ready else b""
            data += chunk
            with contextlib.suppress(ValueError, KeyError, TypeError):
                return int(json.loads(data)["child-pid"])
            if ready and not chunk:
                return None
        return None
    finally:
        os.close(fd)


class SandboxProvisioner(LocalProvisioner):
    """Launches the kernel command inside the sandbox described by its SandboxedKernelManager."""

    async def launch_kernel(self, cmd: list[str], **kwargs):
        km: SandboxedKernelManager = self.parent
        with open(km.connection_file, "rb") as handle:  # the kernel's copy: its sockets in its own run folder
            info = {**json.load(handle), "ip": f"{RUN_DIR}/kernel"}
        cmd = [CONNECTION_FILE if part == km.connection_file else part for part in cmd]
        sandbox = Sandbox(connection=json.dumps(info).encode(), tmpfs_size=km.limits.disk_limit,
                          host_uid=km.host_uid, env=km.sandbox_env, course_files=dict(km.course_files),
                          max_tasks=km.limits.max_processes if km.host_uid is None else 0)
        info_read, info_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        argv, fds = sandbox.command(cmd, cwd=str(kwargs.pop("cwd", "") or ""), info_fd=info_write)
        kwargs["pass_fds"] = [*fds, info_write]
        kwargs["cwd"] = str(km.rundir)
        kwargs["env"] = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # bwrap's own; the kernel's is set inside
        kwargs["preexec_fn"] = km.enter_limits
        # Never the grader's own stdout and stderr: what the kernel writes to stderr goes to a pipe read here.
        kwargs["stdin"] = kwargs["stdout"] = subprocess.DEVNULL
        kwargs["stderr"] = stderr_write
        km.keep_cgroup()
        km.stderr = StderrTail(stderr_read)
        try:
            await super().launch_kernel(argv, **kwargs)
        except subprocess.SubprocessError as error:  # bwrap was never run: say what the child wrote first
            os.close(stderr_write)
            stderr_write = -1
            os.close(info_read)
            raise RuntimeError(f"the kernel's sandbox could not be started ({error}): "
                               f"{km.stderr_text() or 'nothing said'}") from None
        except BaseException:
            os.close(info_read)
            raise
        finally:
            for fd in (*fds, info_write, stderr_write):
                if fd >= 0:
                    os.close(fd)
        km.start_watchdog(self.process.pid)
        child = _child_pid(info_read)
        if child is not None:  # the grader's sockets: the kernel's, reached through its root
            km.ip = host_path(child, f"{RUN_DIR}/kernel")
        self.connection_info = km.get_connection_info()
        return self.connection_info

    async def send_signal(self, signum: int) -> None:
        if signum in (signal.SIGKILL, signal.SIGTERM):  # bwrap does not pass these on: end the whole tree
            self.parent.kill_tree()
            # and wait until it is gone: jupyter_client would otherwise look again only after its poll interval.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=1)
            return
        await super().send_signal(signum)

    async def cleanup(self, restart: bool = False) -> None:
        self.parent.kill_tree()
        await super().cleanup(restart)
        self.parent.remove_rundir()


class SandboxedKernelManager(AsyncKernelManager):
    """An AsyncKernelManager for one sandboxed, single-use kernel."""

    limits = Instance(KernelLimits, help="The kernel's limits (c.KernelLimits in the configuration).")
    watch_interval = Float(0.1, help="Seconds between two looks of the watchdog at the kernel: its CPU time per "
                                     "cell, and without a cgroup its memory and processes.").tag(config=True)
    disconnect_grace = Float(2.0, help="Seconds the sandbox has to end after the kernel dropped its sockets "
                                       "before the drop counts as a refused over-size message.").tag(config=True)
    uid_range = Tuple((1_500_000_000, 2_000_000_000), help="Host uids given to kernels, one each at random, when "
                      "the grader is root: a range no file or user of the machine has.").tag(config=True)
    sandbox_env = Dict({}, help="Environment variables of the kernel (nothing else of the grader's reaches it).")
    course_files = Dict({}, help="name -> path of course files copied into the kernel's working folder, "
                                 "beside the notebook's own (the lessons' helper module).")
    killed_for = Unicode("", help="Set when the kernel was killed for a limit: what it exceeded.")
    isolation = Unicode("", help="Set at start: the kernel's cgroup, or why it has none and only the watchdog.")
    host_user = Unicode("", help="Set at start where the kernel has no host uid of its own: which uid it is "
                                 "on the host instead, and why.")
    client_factory = Type(CappedKernelClient, klass=CappedKernelClient)

    @default("limits")
    def _configured_limits(self) -> KernelLimits:
        return KernelLimits(parent=self)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.transport = "ipc"
        self.rundir: Path | None = None
        self.host_uid: int | None = None
        self.cgroup: KernelCgroup | None = None
        self._watchdog: asyncio.Task | None = None
        self._root_pid: int | None = None
        self._client: CappedKernelClient | None = None
        self.stderr: StderrTail | None = None
        self._cell: tuple[float, float] | None = None  # (CPU seconds at the cell's start, its CPU limit)
        self._interrupted_at: float | None = None
        self.cell_over_cpu = False  # the last cell went over its CPU limit and was interrupted

    def _prepare_rundir(self) -> None:
        """The run folder, the host uid (root only) and the cgroup, all before the kernel starts."""
        if own_uids_possible():
            while True:  # the folder's name holds the uid: no two kernels of this machine get the same one
                uid = random.randrange(*self.uid_range)
                rundir = Path(tempfile.gettempdir()) / f"{RUN_FOLDER}{uid}"
                try:
                    rundir.mkdir(mode=0o700)
                    break
                except FileExistsError:
                    continue
            self.rundir, self.host_uid = rundir, uid
        else:
            self.rundir = Path(tempfile.mkdtemp(prefix=RUN_FOLDER))
        # Kernels whose grading process was killed left their cgroups behind (their run folders are gone). A
        # grader with another TMPDIR keeps its run folders elsewhere: its new cgroups are spared by their age.
        KernelCgroup.sweep(RUN_FOLDER, lambda name: (self.rundir.parent / name).exists(), min_age=SWEEP_AGE)
        try:
            self.cgroup = KernelCgroup.create(self.rundir.name, memory=self.limits.tree_memory_limit,
                                              tasks=self.limits.max_processes)
            self.isolation = self.cgroup.describe()
        except CgroupUnavailable as error:
            if self.host_uid is not None:
                tasks = "tasks limited by RLIMIT_NPROC of its own host uid"
            elif user_task_limit_possible() and os.geteuid() != 0:  # the limit never binds a uid mapped to root
                tasks = "tasks limited by RLIMIT_NPROC in its own user namespace"
            else:
                tasks = "processes counted by polling"
            self.isolation = f"no cgroup ({error}): memory watched by polling, {tasks}, time limits in wall time"
        if self.host_uid is None:
            self.host_user = (f"the grader's own uid {os.getuid()} on the host (uid {SANDBOX_UID} without "
                              "capabilities in its user namespace): only root can give a kernel a uid of its own")
        self.ip = str(self.rundir / "kernel")  # ipc needs an absolute path, or kernel and client disagree
        self.connection_file = str(self.rundir / "connection.json")
        if self.limits.max_message_bytes:  # this manager's own socket (control) refuses over-size messages too
            self.context.setsockopt(zmq.MAXMSGSIZE, self.limits.max_message_bytes)

    async def start_kernel(self, **kw) -> None:
        """Make the run folder, uid and cgroup, install the sandbox's provisioner, then start as jupyter_client does."""
        if self.provisioner is None:
            self._prepare_rundir()
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", None) or os.urandom(16).hex()
            self.provisioner = SandboxProvisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self)
            # Interrupts travel as a control message: a signal to bwrap would not reach the kernel.
            self.kernel_spec.interrupt_mode = "message"
        try:
            await super().start_kernel(**kw)
        except BaseException:  # a kernel that never started: free this manager's ZeroMQ context and files now,
            await self.cleanup_resources()  # not in the garbage collector (a ResourceWarning in whatever runs then)
            raise

    def client(self, **kwargs) -> CappedKernelClient:
        """A client whose sockets refuse messages over max_message_bytes; the watchdog watches it."""
        kwargs.setdefault("max_message_bytes", self.limits.max_message_bytes)
        self._client = super().client(**kwargs)
        return self._client

    def enter_limits(self) -> None:
        """Runs in the child between fork and exec: into the cgroup, and the rlimits, for bwrap, the
        kernel and everything it starts. What fails is written to stderr (the pipe the grader reads) first:
        subprocess reports only that an exception occurred here."""
        try:
            if self.cgroup is not None:
                try:
                    self.cgroup.join()
                except FileNotFoundError:  # swept by another grader since keep_cgroup: make it again, then join
                    KernelCgroup.create(self.rundir.name, memory=self.limits.tree_memory_limit,
                                        tasks=self.limits.max_processes).join()
            limits = [(resource.RLIMIT_CORE, 0)]
            if self.limits.memory_limit:
                limits.append((resource.RLIMIT_AS, self.limits.memory_limit))
            if self.limits.file_size_limit:
                limits.append((resource.RLIMIT_FSIZE, self.limits.file_size_limit))
            if self.limits.max_processes and self.host_uid is not None:  # per uid: only for a uid of its own
                limits.append((resource.RLIMIT_NPROC, self.limits.max_processes))
            for which, value in limits:
                resource.setrlimit(which, (value, value))
        except BaseException as error:
            os.write(2, f"grader: the kernel's limits could not be set: {type(error).__name__}: {error}\n".encode())
            raise

    def keep_cgroup(self) -> None:
        """Right before the kernel starts: make its cgroup again if a grader of another course or version swept it
        meanwhile (its sweep found no run folder of this kernel in its own TMPDIR), so that the kernel can join it."""
        if self.cgroup is not None and not all(folder.is_dir() for folder in self.cgroup.dirs.values()):
            self.cgroup.remove()
            self.cgroup = KernelCgroup.create(self.rundir.name, memory=self.limits.tree_memory_limit,
                                              tasks=self.limits.max_processes)

    def cleanup_ipc_files(self) -> None:
        """Nothing to remove: the sockets were in the sandbox's own run folder, a tmpfs gone with it. (Their
        path through /proc/<pid>/root could name another process's files once the kernel's pid is reused.)"""

    def stderr_text(self, wait: float = 1.0) -> str:
        """What the kernel's sandbox wrote to stderr (bounded, one inert line); "" for nothing.
        Waits up to `wait` seconds for the rest of it once the kernel is gone."""
        if self.stderr is None:
            return ""
        if not (self.provisioner is not None and getattr(self.provisioner, "process", None) is not None
                and self.provisioner.process.poll() is None):
            self.stderr.wait(wait)
        return self.stderr.text()

    def cpu_seconds(self) -> float | None:
        """CPU seconds the kernel's cgroup has used so far; None without a cgroup that counts them."""
        return self.cgroup.cpu_seconds() if self.cgroup is not None else None

    def start_cell(self, cpu_limit: float) -> bool:
        """A cell starts with `cpu_limit` CPU seconds; False where CPU time is not counted (wall time only)."""
        used = self.cpu_seconds()
        self.cell_over_cpu, self._interrupted_at = False, None
        self._cell = (used, cpu_limit) if used is not None and cpu_limit else None
        return self._cell is not None

    def end_cell(self) -> float | None:
        """The cell is over: the CPU seconds it used (None where not counted)."""
        cell, self._cell = self._cell, None
        used = self.cpu_seconds()
        return used - cell[0] if cell is not None and used is not None else None

    def stop_reason(self) -> str:
        """Why the kernel was killed for a limit, "" when it was not (read after it died)."""
        if not self.killed_for and self.cgroup is not None and self.cgroup.oom_kills():
            self.killed_for = (f"the submission's processes used more than {self.limits.tree_memory_limit} bytes "
                               "of memory")
        return self.killed_for

    def start_watchdog(self, pid: int) -> None:
        self._root_pid = pid
        self._watchdog = asyncio.get_event_loop().create_task(self._watch(pid))

    async def _watch(self, pid: int) -> None:
        try:
            root = psutil.Process(pid)
        except psutil.Error:
            return
        while _alive(root):
            reason = self._over_memory_or_tasks(root) or await self._over_message_size(root)
            if reason:
                self.killed_for = reason
                self.kill_tree()
                return
            await self._check_cell_cpu()
            await asyncio.sleep(self.watch_interval)

    def _over_memory_or_tasks(self, root: psutil.Process) -> str:
        if self.cgroup is not None:  # the kernel enforces both; an OOM kill ends the whole run
            return self.stop_reason()
        try:
            tree = _tree(root)
        except psutil.Error:  # a process of the tree ended while it was read: look again
            tree = [root]
        # RSS is cheap to read and never below PSS: the costly PSS only when RSS is over the limit.
        memory, tasks = self.limits.tree_memory_limit, self.limits.max_processes
        if memory:
            memfd = _memfd_bytes(tree)
            over = sum(_rss(process) for process in tree) + memfd > memory
            if over and sum(_memory(process) for process in tree) + memfd > memory:
                return f"the submission's processes used more than {memory} bytes"
        if tasks and len(tree) > tasks:
            return f"the submission started more than {tasks} processes"
        return ""

    async def _over_message_size(self, root: psutil.Process) -> str:
        if self._client is None or not self.limits.max_message_bytes:
            return ""
        if not await self._client.refused_a_message():
            return ""
        # A kernel that ends drops its sockets too, a moment before bwrap (`root`) ends after it: the drop was
        # a refused message only if the sandbox still runs disconnect_grace seconds later.
        deadline = time.monotonic() + self.disconnect_grace
        while _alive(root) and time.monotonic() < deadline:
            await asyncio.sleep(self.watch_interval)
        return f"it sent a message over {self.limits.max_message_bytes} bytes" if _alive(root) else ""

    async def _check_cell_cpu(self) -> None:
        """Interrupt a cell once it has used its CPU limit; kill the kernel if it still runs interrupt_grace later."""
        if self._cell is None:
            return
        start, limit = self._cell
        used = self.cpu_seconds()
        if used is None or used - start <= limit:
            return
        if self._interrupted_at is None:
            self._interrupted_at = time.monotonic()
            self.cell_over_cpu = True
            with contextlib.suppress(Exception):  # a kernel that cannot take it is killed after the grace
                await self.interrupt_kernel()
        elif time.monotonic() - self._interrupted_at > self.limits.interrupt_grace:
            self.killed_for = f"a cell used more than {limit:g} s of CPU time and ignored the interrupt"
            self.kill_tree()

    def kill_tree(self) -> None:
        """SIGKILL bwrap and everything under it: its cgroup, or its process tree without one."""
        if self.cgroup is not None:
            self.cgroup.kill()
        if self._root_pid is None:
            return
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(self._root_pid)
            for process in [*root.children(recursive=True), root]:
                with contextlib.suppress(psutil.Error):
                    process.send_signal(signal.SIGKILL)

    def remove_rundir(self) -> None:
        """After the kernel: stop watching, remove its cgroup and its run folder."""
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.rundir is not None:
            shutil.rmtree(self.rundir, ignore_errors=True)
