"""Where a hub keeps the course's exchange and shared files: the settings of grader/hub/jupyterhub_config.py.

The hub gives every server the same environment variables (ATTENTION_EXCHANGE, ATTENTION_COURSE_ID,
ATTENTION_SHARED), so that an instructor's terminal runs the course's hub commands without options.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from grader.errors import HubRefused
from grader.safe_text import for_terminal


def exchange_root() -> Path:
    return Path(os.environ.get("ATTENTION_EXCHANGE", "/srv/nbgrader/exchange"))


def course_id() -> str:
    return os.environ.get("ATTENTION_COURSE_ID", "attention")


def shared_folder() -> Path:
    return Path(os.environ.get("ATTENTION_SHARED", "/srv/attention/shared"))


def require_exchange(root: Path) -> None:
    """Refuse an exchange root that is missing, or that not every user can write to."""
    try:
        mode = root.stat().st_mode
    except OSError as error:
        raise HubRefused(f"the exchange {root} cannot be used ({error.strerror}); create it as root: "
                         f"`mkdir -p {root} && chmod 1777 {root}`") from None
    if not stat.S_ISDIR(mode) or mode & 0o777 != 0o777:
        raise HubRefused(f"the exchange {root} must be a folder every user can write to (mode 1777 or 0777, "
                         f"it is {oct(mode & 0o7777)}): `chmod 1777 {root}` as root")


def nbgrader(course: Path, *args: str) -> str:
    """Run `nbgrader <args>` in the course's root, as the instructor would in a terminal; its log, or
    HubRefused with that log when it fails."""
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, capture_output=True, text=True)
    log = done.stdout + done.stderr
    if done.returncode != 0 or "| ERROR]" in log:
        tail = "\n".join(for_terminal(line) for line in log.strip().splitlines()[-15:])
        raise HubRefused(f"`nbgrader {' '.join(args)}` failed (exit status {done.returncode}):\n{tail}")
    return log
