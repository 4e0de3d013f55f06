"""The sandbox's mounts, run for real with a tiny program instead of a kernel."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from unittest import mock

import pytest

from grader.sandbox import bwrap
from tests.ordinary_user import as_ordinary_user, unused_uid


def run_in_sandbox(argv: list[str]) -> subprocess.CompletedProcess:
    command, fds = bwrap.Sandbox().command(argv)
    try:
        return subprocess.run(command, pass_fds=fds, capture_output=True, text=True, timeout=30)
    finally:
        for fd in fds:
            os.close(fd)


def test_a_python_environment_under_tmp_stays_visible_inside_the_sandbox():
    """CI clones the course under /tmp: the sandbox's own /tmp must not hide the environment's folder."""
    with tempfile.TemporaryDirectory(dir="/tmp") as env, tempfile.NamedTemporaryFile(dir="/tmp") as secret:
        (Path(env) / "marker").write_text("environment\n")
        with mock.patch.object(bwrap, "python_dirs", return_value=[env]):
            done = run_in_sandbox(["/bin/sh", "-c", f"cat {env}/marker; ls /tmp"])
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0] == "environment"
        assert Path(secret.name).name not in lines  # only what is bound


def test_the_kernel_imports_the_course_helper_module_and_a_notebook_folder_cannot_replace_it(tmp_path):
    """grader.pipeline.guarded_execute copies lesson_helpers.py into every kernel's working folder; a file of
    that name in the submission's folder is left out, and the sandbox shows nothing else of the course."""
    from grader.student.layout import LESSON_HELPERS

    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "lesson_helpers.py").write_text("def demo_size(**sizes):\n    return 'forged'\n")
    (folder / "data.txt").write_text("the notebook's own file\n")
    sandbox = bwrap.Sandbox(env={"NBGRADER_EXECUTION": "autograde"},
                            course_files={LESSON_HELPERS.name: str(LESSON_HELPERS)})
    probe = ("import lesson_helpers, pathlib; print(lesson_helpers.demo_size(full='full', small='small')); "
             "print(pathlib.Path('data.txt').read_text().strip()); "
             "import importlib.util; print(importlib.util.find_spec('grader') is None)")
    command, fds = sandbox.command([os.path.join(bwrap.sys.prefix, "bin", "python"), "-c", probe], cwd=str(folder))
    try:
        done = subprocess.run(command, pass_fds=fds, capture_output=True, text=True, timeout=60)
    finally:
        for fd in fds:
            os.close(fd)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["small", "the notebook's own file", "True"]



def test_an_ordinary_users_sandbox_limits_the_tasks_of_its_own_user_namespace():
    """Without a uid of its own (an ordinary user), RLIMIT_NPROC set inside the sandbox counts this sandbox's
    tasks, threads included, and not the other processes of the grader's uid. Run as root, the sandbox is
    started as an ordinary uid (RLIMIT_NPROC never binds a process that is root on the host)."""
    spawn = ("import threading, time\nn = 0\ntry:\n    for _ in range(60):\n"
             "        threading.Thread(target=time.sleep, args=(2,), daemon=True).start()\n        n += 1\n"
             "except RuntimeError:\n    pass\nprint(n)")
    uid = unused_uid() if os.geteuid() == 0 else os.getuid()
    prefix = as_ordinary_user(uid, [*bwrap.python_dirs(), bwrap.sys.prefix]) if os.geteuid() == 0 else []
    started = {}
    for tasks in (0, 16):
        command, fds = bwrap.Sandbox(max_tasks=tasks).command(
            [os.path.join(bwrap.sys.prefix, "bin", "python"), "-c", spawn])
        try:
            done = subprocess.run([*prefix, *command], pass_fds=fds, capture_output=True, text=True, timeout=60,
                                  env={"PATH": "/usr/bin:/bin"})
        finally:
            for fd in fds:
                os.close(fd)
        if prefix and done.returncode != 0 and done.stderr.startswith("bwrap:"):
            pytest.skip(f"an ordinary user cannot make the sandbox's namespaces here: {done.stderr.strip()}")
        assert done.returncode == 0, done.stderr
        started[tasks] = int(done.stdout)
    assert started[0] == 60 and started[16] < 16, started


@pytest.mark.parametrize("own_uid", [False, True], ids=["sandbox-uid", "own-host-uid"])
def test_the_run_folder_is_a_small_tmpfs_the_kernel_can_always_reach(own_uid, monkeypatch, tmp_path):
    """Whatever TMPDIR is (here under a folder only root may enter), the kernel reads its connection file and
    makes its sockets in a run folder of its own; writing more than the folder's size fails there, on no disk
    of the host; /proc/loadavg and /proc/pressure show nothing of the machine."""
    if own_uid and not bwrap.own_uids_possible():
        pytest.skip("only root gives a kernel a host uid of its own")
    private = tmp_path / "private"
    (private / "tmp").mkdir(parents=True)
    private.chmod(0o700)
    monkeypatch.setenv("TMPDIR", str(private / "tmp"))
    probe = ("import os, pathlib, socket\n"
             f"run = pathlib.Path({bwrap.RUN_DIR!r})\n"
             "print(pathlib.Path(" + repr(bwrap.CONNECTION_FILE) + ").read_text())\n"
             "socket.socket(socket.AF_UNIX).bind(str(run / 'kernel-1'))\n"
             "try:\n    (run / 'fill').write_bytes(b'x' * (4 * 2**20))\n    print('wrote 4 MiB')\n"
             "except OSError as error:\n    print('refused', error.errno)\n"
             "print(open('/proc/loadavg').read().strip(), os.listdir('/proc/pressure') if os.path.isdir("
             "'/proc/pressure') else [])\n")
    sandbox = bwrap.Sandbox(connection=b'{"ip": "/run/kernel/kernel"}', host_uid=1_666_000_001 if own_uid else None)
    command, fds = sandbox.command([os.path.join(bwrap.sys.prefix, "bin", "python"), "-c", probe])
    try:
        done = subprocess.run(command, pass_fds=fds, capture_output=True, text=True, timeout=60)
    finally:
        for fd in fds:
            os.close(fd)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ['{"ip": "/run/kernel/kernel"}', "refused 28", "0.00 0.00 0.00 1/1 1 []"]
