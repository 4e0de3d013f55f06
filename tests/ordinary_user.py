"""Run a command as an ordinary user from a test run as root, with the environment where it is.

`as_ordinary_user(uid, needed)` is an argv prefix: bubblewrap, run by root (no user namespace), shows
the machine as it is, except that a folder other users cannot enter (`/root`, where the environment
lives on the development and CI machines) is replaced by a tmpfs holding only the `needed` paths;
then `setpriv` drops to `uid` with no groups. Nothing of the host changes. `unused_uid()` is a uid no
account owns and no process runs as.
"""

from __future__ import annotations

import os
import pwd
import random
import sys
from pathlib import Path

import psutil

from grader.sandbox.bwrap import SETPRIV, bwrap_executable

UIDS = (1_000_000, 1_400_000)  # drawn from here: no account owns them (and below the kernels' own uids)


def unused_uid() -> int:
    """A uid that no account owns and no process runs as."""
    running = {process.info["uids"].real for process in psutil.process_iter(["uids"]) if process.info["uids"]}
    while True:
        uid = random.randrange(*UIDS)
        try:
            pwd.getpwuid(uid)
        except KeyError:
            if uid not in running:
                return uid


def as_ordinary_user(uid: int, needed: list[str]) -> list[str]:
    """argv prefix that runs a command as `uid` (no groups) in a view of the machine where each path of
    `needed` is readable (`visible_to_all`)."""
    return [*visible_to_all(needed, always=True), "--", SETPRIV, f"--reuid={uid}", f"--regid={uid}",
            "--clear-groups", "--"]


def visible_to_all(needed: list[str], *, always: bool = False) -> list[str]:
    """argv prefix (bwrap, run by root: no user namespace; nothing of the host changes) of a view of the
    machine where each path of `needed` is readable by every user: a folder above one that other users
    cannot enter is replaced by a tmpfs holding only what is needed under it. Empty when every path is
    readable as it is, unless `always`; without `always` it ends with bwrap's `--`."""
    hidden, dirs, binds = [], [], []
    for path in sorted(map(os.path.abspath, needed), key=len):
        if any(path == bound or path.startswith(bound + "/") for bound in binds):
            continue
        ancestors = [str(parent) for parent in reversed(Path(path).parents)][1:]
        closed = next((a for a in ancestors if not os.stat(a).st_mode & 0o001), None)
        if closed is None:
            continue  # readable as it is
        hidden.append(closed)
        dirs += [a for a in ancestors if a.startswith(closed + "/")]
        binds.append(path)
    if not hidden and not always:
        return []
    args = [bwrap_executable(), "--dev-bind", "/", "/"]
    for folder in dict.fromkeys(hidden):
        args += ["--perms", "0755", "--tmpfs", folder]
    for folder in dict.fromkeys(dirs):
        args += ["--perms", "0755", "--dir", folder]
    for path in binds:
        args += ["--ro-bind", path, path]
    return args if always else [*args, "--"]


def user_env(home: Path, uid: int, **extra: str) -> dict[str, str]:
    return {"PATH": f"{sys.prefix}/bin:/usr/bin:/bin", "HOME": str(home), "USER": f"u{uid}", "LOGNAME": f"u{uid}",
            "LANG": "C.UTF-8", **extra}
