"""Each kernel's own cgroup, uid, /dev/shm, stdio and socket cap, seen through GuardedExecute on tiny notebooks.

These run where a cgroup can be made (root on the development and CI machines); elsewhere the ones
that need it are skipped, and the last test checks that grading then says so.
"""

from __future__ import annotations

import os
import threading
import time
from unittest import mock

import psutil
import pytest

from grader.pipeline.guarded_execute import CPU_TIMEOUT, LIMIT_EXCEEDED, NOT_RUN, WATCHDOG_ONLY
from grader.sandbox import cgroup, kernel
from grader.sandbox.cgroup import CgroupUnavailable, KernelCgroup
from tests.integration.guarded_run import needs_cgroup, run, text


def enames(cell) -> list[str]:
    return [o.get("ename") for o in cell.outputs if o.get("output_type") == "error"]


@needs_cgroup
def test_memfd_pages_count_against_the_kernels_memory_and_end_its_run():
    nb = run("import os\nfd = os.memfd_create('x')\nfor _ in range(64):\n    os.write(fd, b'x' * 2**24)",
             "print('never')", tree_memory_limit=256 * 2**20)
    assert LIMIT_EXCEEDED in enames(nb.cells[0]) and "bytes of memory" in text(nb.cells[0])
    assert enames(nb.cells[1]) == [NOT_RUN]


@needs_cgroup
def test_threads_stop_at_the_task_limit_and_the_kernel_carries_on():
    burst = ("import threading, time\nn = 0\ntry:\n    for _ in range(500):\n"
             "        threading.Thread(target=time.sleep, args=(2,), daemon=True).start()\n        n += 1\n"
             "except RuntimeError:\n    print('stopped', n)")
    nb = run(burst, "print('alive')", max_processes=40)
    stopped, count = text(nb.cells[0]).split()
    assert stopped == "stopped" and int(count) < 40
    assert text(nb.cells[1]).strip() == "alive"


@needs_cgroup
def test_a_cells_time_limit_counts_cpu_time_and_a_sleeping_cell_only_the_wall_backstop():
    started = time.monotonic()
    nb = run("x = 0\nwhile True:\n    x += 1", "import time\ntime.sleep(3)\nprint('slept')", "print('next')",
             timeout=2, wall_timeout_factor=4)  # an 8 s backstop: 3 s of sleep fits on a loaded machine
    spin, sleep, after = nb.cells
    assert enames(spin)[-1] == CPU_TIMEOUT and "KeyboardInterrupt" in enames(spin)
    assert text(sleep).strip() == "slept"  # 3 s of wall time, little CPU: under a 2 s CPU limit
    assert text(after).strip() == "next"
    assert time.monotonic() - started < 60


def test_dev_shm_is_the_kernels_own_and_size_limited():
    fill = ("import os\nn = 0\ntry:\n    with open('/dev/shm/fill', 'wb') as f:\n        for _ in range(64):\n"
            "            f.write(b'x' * 2**20)\n            n += 1\nexcept OSError as e:\n    print('full at', n)\n"
            "print(sorted(os.listdir('/dev/shm')))")
    first = run(fill, disk_limit=16 * 2**20)
    second = run("import os\nprint(sorted(os.listdir('/dev/shm')))")
    assert text(first.cells[0]).split("\n")[0] in ("full at 15", "full at 16")
    assert text(second.cells[0]).strip() == "[]"  # nothing one kernel left reaches the next


def test_the_kernel_writes_only_to_its_own_output_never_the_graders(capfd):
    forge = ("import os\nfor fd in (1, 2):\n    os.write(fd, b'\\x1b[2J FORGED-LINE\\n')\n"
             "for name in ('1', '2'):\n    open('/proc/self/fd/' + name, 'w').write('FORGED-PROC\\n')")
    nb = run(forge)
    captured = capfd.readouterr()
    assert "FORGED" not in captured.out + captured.err
    assert "is running over TCP" not in captured.out + captured.err  # nor the kernel's own banner
    assert not enames(nb.cells[0])


def test_a_message_over_the_cap_is_refused_at_the_socket_and_ends_the_run():
    huge = "from IPython.display import display\ndisplay({'text/plain': 'h' * (8 * 2**20)}, raw=True)"
    nb = run("print('small')", huge, "print('never')", max_message_bytes=2**20)
    assert text(nb.cells[0]).strip() == "small"
    assert LIMIT_EXCEEDED in enames(nb.cells[1]) and "message over" in text(nb.cells[1])
    assert "h" * 1000 not in text(nb.cells[1])
    assert enames(nb.cells[2]) == [NOT_RUN]


def test_the_keyring_calls_are_refused():
    probe = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
             "print(libc.syscall(250, 0, -3, 0), ctypes.get_errno())")
    nb = run(probe)
    assert text(nb.cells[0]).split() == ["-1", "1"]  # EPERM


def test_each_kernels_host_uid_read_from_the_host_is_neither_root_nor_the_graders():
    """Two kernels in a row: the host's process table shows each as a uid of its own (bwrap and setpriv,
    which start as root and drop to it, aside)."""
    seen: dict[int, set[int]] = {}  # kernel (its process) -> the uids it had
    parents: dict[int, int] = {}  # its process -> its parent's
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for process in psutil.Process().children(recursive=True):  # this test's own, not the machine's
                try:
                    command = process.cmdline()
                    # bwrap and setpriv start as root and drop to the kernel's uid before it runs
                    # (setpriv's command line names the kernel it is about to become)
                    if process.name() not in ("bwrap", "setpriv") and "ipykernel_launcher" in " ".join(command):
                        # every kernel's connection file has the same path in its own sandbox: key by process
                        seen.setdefault(process.pid, set()).update(process.uids())
                        parents[process.pid] = process.ppid()
                except psutil.Error:
                    pass
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        for _ in range(2):
            run("import time\ntime.sleep(1)")
    finally:
        done.set()
        watcher.join()
    # a kernel's own child between fork and exec (as subprocess makes) shows the kernel's command line:
    # it is that kernel, not another
    kernels = {pid: ids for pid, ids in seen.items() if parents.get(pid) not in seen}
    assert len(kernels) >= 2, seen
    uids = list(kernels.values())
    if os.geteuid() != 0:
        pytest.skip("an ordinary user has no other uid to give a kernel")
    for ids in uids:
        assert 0 not in ids and os.getuid() not in ids and len(ids) == 1, uids
    assert len({next(iter(ids)) for ids in uids}) == len(uids)  # distinct per kernel


def test_without_a_cgroup_grading_says_so_and_keeps_the_watchdog():
    with mock.patch.object(kernel.KernelCgroup, "create", side_effect=CgroupUnavailable("none here")):
        nb = run("import os\nfd = os.memfd_create('x')\nprint('started')", tree_memory_limit=2**30, max_processes=64)
    assert "none here" in nb.metadata[WATCHDOG_ONLY]
    assert text(nb.cells[0]).strip() == "started"


def test_without_a_cgroup_the_watchdog_counts_memfd_files():
    """memfd pages are in no process's resident memory: without a cgroup the watchdog adds up the files."""
    hoard = ("import os, time\nfd = os.memfd_create('x')\nfor _ in range(24):\n    os.write(fd, b'x' * 2**24)\n"
             "time.sleep(5)")
    with mock.patch.object(kernel.KernelCgroup, "create", side_effect=CgroupUnavailable("none here")):
        nb = run(hoard, "print('never')", tree_memory_limit=256 * 2**20)
    assert LIMIT_EXCEEDED in enames(nb.cells[0]) and "bytes" in text(nb.cells[0])
    assert enames(nb.cells[1]) == [NOT_RUN]


@needs_cgroup
def test_the_cgroup_is_gone_once_the_kernel_is():
    made: list[KernelCgroup] = []
    create = KernelCgroup.create

    def recorded(*args, **kwargs) -> KernelCgroup:
        made.append(create(*args, **kwargs))
        return made[-1]

    with mock.patch.object(kernel.KernelCgroup, "create", side_effect=recorded):
        run("print(1)")
    assert len(made) == 1 and made[0].dirs
    assert not any(folder.exists() for folder in made[0].dirs.values())
    assert not any(folder.endswith(next(iter(made[0].dirs.values())).name) for folder in cgroup_folders())


def cgroup_folders() -> list[str]:
    mounts, v2 = cgroup._mounts()
    own = cgroup._own_paths()
    roots = [os.path.join(mounts[c], own.get(c, "/").lstrip("/")) for c in mounts]
    if v2:
        roots.append(os.path.join(v2, own.get("", "/").lstrip("/")))
    return [os.path.join(root, name) for root in roots if os.path.isdir(root) for name in os.listdir(root)
            if name.startswith(kernel.RUN_FOLDER)]


@needs_cgroup
def test_cgroups_left_by_a_killed_grading_process_are_swept_and_live_ones_kept():
    stale = KernelCgroup.create(f"{kernel.RUN_FOLDER}stale-{os.getpid()}", memory=0, tasks=0)
    live = KernelCgroup.create(f"{kernel.RUN_FOLDER}live-{os.getpid()}", memory=0, tasks=0)
    try:
        # A grader with another TMPDIR sees no run folder of a kernel about to join its new cgroup: spared by age.
        KernelCgroup.sweep(kernel.RUN_FOLDER, lambda name: "stale" not in name, min_age=kernel.SWEEP_AGE)
        assert all(folder.exists() for folder in stale.dirs.values())
        KernelCgroup.sweep(kernel.RUN_FOLDER, lambda name: "stale" not in name)
        assert not any(folder.exists() for folder in stale.dirs.values())
        assert all(folder.exists() for folder in live.dirs.values())
    finally:
        stale.remove()
        live.remove()


@needs_cgroup
def test_a_cgroup_swept_before_its_kernel_joined_is_made_again():
    """Another grader (another TMPDIR, or an older version) may sweep a fresh cgroup before its kernel joins it:
    the kernel still starts, in a cgroup of its own."""
    prepare = kernel.SandboxedKernelManager._prepare_rundir

    def swept(self) -> None:
        prepare(self)
        self.cgroup.remove()

    with mock.patch.object(kernel.SandboxedKernelManager, "_prepare_rundir", swept):
        nb = run("print('ran')")  # without the cgroup made again, the kernel cannot join it and never starts
    assert text(nb.cells[0]).strip() == "ran" and WATCHDOG_ONLY not in nb.metadata, text(nb.cells[0])


@needs_cgroup
def test_limits_that_cannot_be_entered_say_why_instead_of_subprocess_alone():
    """subprocess says only "Exception occurred in preexec_fn": the child writes what failed to the stderr pipe."""
    with mock.patch.object(cgroup.KernelCgroup, "join", side_effect=PermissionError(13, "refused by the test")), \
            pytest.raises(RuntimeError, match=r"limits could not be set: PermissionError: \[Errno 13\] refused by"):
        run("print(1)")
