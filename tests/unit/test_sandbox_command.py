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


def run_in_sandbox(argv: list[str], rundir: Path) -> subprocess.CompletedProcess:
    command, fds = bwrap.Sandbox(rundir=rundir).command(argv)
    try:
        return subprocess.run(command, pass_fds=fds, capture_output=True, text=True, timeout=30)
    finally:
        for fd in fds:
            os.close(fd)


def test_a_python_environment_under_tmp_stays_visible_inside_the_sandbox():
    """CI clones the course under /tmp: the sandbox's own /tmp must not hide the environment's folder."""
    with (tempfile.TemporaryDirectory(dir="/tmp") as env, tempfile.TemporaryDirectory(dir="/tmp") as rundir,
          tempfile.NamedTemporaryFile(dir="/tmp") as secret):
        (Path(env) / "marker").write_text("environment\n")
        with mock.patch.object(bwrap, "python_dirs", return_value=[env]):
            done = run_in_sandbox(["/bin/sh", "-c", f"cat {env}/marker; ls /tmp"], Path(rundir))
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0] == "environment"
        assert Path(secret.name).name not in lines and Path(rundir).name in lines  # only what is bound


def test_the_kernel_imports_the_course_helper_module_and_a_notebook_folder_cannot_replace_it(tmp_path):
    """grader.pipeline.guarded_execute copies lesson_helpers.py into every kernel's working folder; a file of
    that name in the submission's folder is left out, and the sandbox shows nothing else of the course."""
    from grader.student.layout import LESSON_HELPERS

    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "lesson_helpers.py").write_text("def demo_size(**sizes):\n    return 'forged'\n")
    (folder / "data.txt").write_text("the notebook's own file\n")
    rundir = tmp_path / "run"
    rundir.mkdir()
    sandbox = bwrap.Sandbox(rundir=rundir, env={"NBGRADER_EXECUTION": "autograde"},
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
    rundir = Path(tempfile.mkdtemp())
    os.chown(rundir, uid, uid)
    started = {}
    try:
        for tasks in (0, 16):
            command, fds = bwrap.Sandbox(rundir=rundir, max_tasks=tasks).command(
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
    finally:
        os.rmdir(rundir)
    assert started[0] == 60 and started[16] < 16, started
