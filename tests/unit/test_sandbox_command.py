"""The sandbox's mounts, run for real with a tiny program instead of a kernel."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from unittest import mock

from grader.sandbox import bwrap


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
