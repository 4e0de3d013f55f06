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
