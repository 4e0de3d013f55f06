"""Open the lessons in JupyterLab as a student sees them (`make lab`).

The server runs from the repository root, so nbgrader's "Validate" button in the notebook
toolbar reads the course's nbgrader_config.py, and serves `lessons/`. nbgrader installs its
instructor tools too (formgrader, "Create Assignment", the course list) and an "Assignments" tab
for its exchange, which this course does not use: students hand in with `make submit`. The
folder grader/jupyter/ switches those off and keeps the Validate button; it is added to
JUPYTER_CONFIG_PATH for this server only, so the student's own Jupyter configuration is neither
read differently nor written. (`jupyter lab` started by hand shows nbgrader's full interface.)
The course's JupyterLab settings (grader/jupyter/lab-settings/overrides.json) turn off the
Jupyter news feed and update check, so a fresh environment asks no question about them.

Run as root (containers, cloud VMs, lab images), it passes JupyterLab's `--allow-root` and says so.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from grader.student.layout import JUPYTER_CONFIG, LESSONS, ROOT, with_lesson_helpers

LAB_SETTINGS = JUPYTER_CONFIG / "lab-settings"  # JupyterLab's app settings: overrides.json


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the lab server: `base` (default: this process's) plus the student config.

    MPLBACKEND is dropped: exported as Agg it reaches the kernels, and plt.show() draws nothing.
    The kernels inherit it, PYTHONPATH included, so that every lesson can `import lesson_helpers`.
    """
    env = dict(os.environ if base is None else base)
    env.pop("MPLBACKEND", None)
    paths = [p for p in env.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep) if p]
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join([str(JUPYTER_CONFIG), *paths])
    return with_lesson_helpers(env)


def command(*, root_dir: Path = LESSONS, jupyter_args: Sequence[str] = (), as_root: bool | None = None) -> list[str]:
    """The command line of the lab server; run it from the repository root with `environment()`.

    `as_root` (default: whether this process's effective uid is 0) adds `--allow-root`, without
    which JupyterLab refuses to start as root.
    """
    if as_root is None:
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    root = ["--allow-root"] if as_root and "--allow-root" not in jupyter_args else []
    return [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={Path(root_dir).resolve()}",
            f"--LabApp.app_settings_dir={LAB_SETTINGS}", *root, *jupyter_args]


def main(*, root_dir: Path = LESSONS, jupyter_args: Sequence[str] = ()) -> None:
    """Replace this process with the JupyterLab server (Ctrl+C stops it, as with `jupyter lab`)."""
    argv = command(root_dir=root_dir, jupyter_args=jupyter_args)
    if "--allow-root" in argv and "--allow-root" not in jupyter_args:
        print("Running as root: starting JupyterLab with --allow-root.", flush=True)
    os.chdir(ROOT)
    sys.stdout.flush()
    os.execve(argv[0], argv, environment())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root-dir", type=Path, default=LESSONS, help="folder to serve (default: lessons/)")
    parser.add_argument("jupyter_args", nargs="*", metavar="-- JUPYTER_ARGS",
                        help="passed to `jupyter lab` after a `--`, e.g. -- --no-browser --port=8899")


def run(args: argparse.Namespace) -> None:
    main(root_dir=args.root_dir, jupyter_args=args.jupyter_args)
