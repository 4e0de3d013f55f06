"""One kernel's own cgroup: memory (tmpfs, shm and memfd pages included), tasks (threads included), an
equal CPU weight, and the CPU time it used.

`KernelCgroup.create(name, memory=..., tasks=...)` makes it before the kernel starts, under the grading
process's own cgroup: cgroup v2 where the memory and pids controllers are delegated there, else the
v1 `memory` and `pids` hierarchies (with `cpu` and `cpuacct` where they are mounted), as root has them
on the development and CI machines. The kernel joins it between fork and exec (`join`, run in the
child), so every process and thread it ever starts is counted. `remove()` kills whatever is left in it
and deletes it. Where neither version can be made, `create` raises CgroupUnavailable with the reason.

The kernel enforces the limits: a memory limit is an OOM kill inside the cgroup (read back by
`oom_kills`), a task limit makes fork and thread creation fail. Nothing here polls.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REMOVE_WAIT = 2.0  # seconds to wait for the killed tasks to leave before a cgroup is given up on
V1_REQUIRED = ("memory", "pids")
V1_OPTIONAL = ("cpu", "cpuacct")
V1_SHARES = 1024  # cpu.shares of every kernel: the same weight for each
V2_WEIGHT = 100  # cpu.weight of every kernel


class CgroupUnavailable(RuntimeError):
    """No cgroup can be made for a kernel here; the message says why."""


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and "" -> its v2 path."""
    paths = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _mounts() -> tuple[dict[str, str], str | None]:
    """(v1 controller -> its hierarchy's mount point, the cgroup2 mount point or None)."""
    v1, v2 = {}, None
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, target, fstype, options, *_ = line.split()
        if fstype == "cgroup2" and v2 is None:
            v2 = target
        elif fstype == "cgroup":
            for option in options.split(","):
                if option in (*V1_REQUIRED, *V1_OPTIONAL):
                    v1.setdefault(option, target)
    return v1, v2


def _write(path: Path, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


@dataclass
class KernelCgroup:
    """A kernel's cgroup: one folder per v1 hierarchy, or one v2 folder."""

    version: int
    dirs: dict[str, Path] = field(default_factory=dict)  # controller ("" for v2) -> folder

    @classmethod
    def create(cls, name: str, *, memory: int, tasks: int) -> KernelCgroup:
        """A new cgroup called `name` with these limits (0: none); CgroupUnavailable where none can be made."""
        reasons = []
        for make in (cls._create_v2, cls._create_v1):
            try:
                return make(name, memory, tasks)
            except (CgroupUnavailable, OSError) as error:
                reasons.append(str(error))
        raise CgroupUnavailable("; ".join(reasons))

    @classmethod
    def _create_v2(cls, name: str, memory: int, tasks: int) -> KernelCgroup:
        _, mount = _mounts()
        if mount is None:
            raise CgroupUnavailable("cgroup v2: not mounted")
        parent = Path(mount) / _own_paths().get("", "/").lstrip("/")
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if not {"memory", "pids"} <= set(enabled):
            raise CgroupUnavailable(f"cgroup v2: memory and pids are not delegated to {parent}")
        folder = parent / name
        folder.mkdir()
        group = cls(2, {"": folder})
        try:
            if memory:
                _write(folder / "memory.max", str(memory))
                with contextlib.suppress(OSError):
                    _write(folder / "memory.swap.max", "0")
            if tasks:
                _write(folder / "pids.max", str(tasks))
            if "cpu" in enabled:
                _write(folder / "cpu.weight", str(V2_WEIGHT))
        except OSError:
            group.remove()
            raise
        return group

    @classmethod
    def _create_v1(cls, name: str, memory: int, tasks: int) -> KernelCgroup:
        mounts, _ = _mounts()
        missing = [c for c in V1_REQUIRED if c not in mounts]
        if missing:
            raise CgroupUnavailable(f"cgroup v1: no {' or '.join(missing)} hierarchy")
        own = _own_paths()
        group = cls(1)
        try:
            for controller in (*V1_REQUIRED, *V1_OPTIONAL):
                if controller not in mounts:
                    continue
                folder = Path(mounts[controller]) / own.get(controller, "/").lstrip("/") / name
                if folder in group.dirs.values():  # co-mounted with a controller already made (cpu,cpuacct)
                    group.dirs[controller] = folder
                    continue
                try:
                    folder.mkdir()
                except OSError as error:
                    if controller in V1_REQUIRED:
                        raise CgroupUnavailable(f"cgroup v1: cannot create {folder}: {error.strerror}") from None
                    continue
                group.dirs[controller] = folder
            if memory:
                _write(group.dirs["memory"] / "memory.limit_in_bytes", str(memory))
            if tasks:
                _write(group.dirs["pids"] / "pids.max", str(tasks))
            if "cpu" in group.dirs:
                _write(group.dirs["cpu"] / "cpu.shares", str(V1_SHARES))
        except BaseException:
            group.remove()
            raise
        return group

    @staticmethod
    def sweep(prefix: str, in_use: Callable[[str], bool], min_age: float = 0.0) -> None:
        """Delete the empty cgroups named `prefix...` that `in_use(name)` disowns: those of kernels whose
        grading process was killed before it could remove them. A cgroup with tasks is never deleted, nor one
        made less than `min_age` seconds ago (a kernel about to join it, of a grader whose TMPDIR, where
        `in_use` looks, is another)."""
        mounts, v2 = _mounts()
        own = _own_paths()
        parents = [Path(mounts[c]) / own.get(c, "/").lstrip("/") for c in (*V1_REQUIRED, *V1_OPTIONAL) if c in mounts]
        if v2:
            parents.append(Path(v2) / own.get("", "/").lstrip("/"))
        for parent in dict.fromkeys(parents):
            with contextlib.suppress(OSError):
                for folder in parent.glob(f"{prefix}*"):
                    if folder.is_dir() and not in_use(folder.name):
                        with contextlib.suppress(OSError):  # busy (tasks left), or removed meanwhile
                            made = folder.stat()
                            if time.time() - max(made.st_mtime, made.st_ctime) >= min_age:
                                folder.rmdir()

    def describe(self) -> str:
        what = "cgroup v2" if self.version == 2 else "cgroup v1 (" + ", ".join(sorted(self.dirs)) + ")"
        return f"{what} {next(iter(self.dirs.values())).name}"

    def join(self) -> None:
        """Move the calling process into this cgroup (run between fork and exec: its children follow)."""
        for folder in dict.fromkeys(self.dirs.values()):
            _write(folder / "cgroup.procs", "0")

    def _file(self, controller: str, name: str) -> Path | None:
        folder = self.dirs.get("" if self.version == 2 else controller)
        return folder / name if folder is not None else None

    def cpu_seconds(self) -> float | None:
        """CPU seconds used by every task that was ever in this cgroup; None where it is not counted."""
        try:
            if self.version == 2:
                for line in (self.dirs[""] / "cpu.stat").read_text().splitlines():
                    key, value = line.split()
                    if key == "usage_usec":
                        return int(value) / 1e6
                return None
            path = self._file("cpuacct", "cpuacct.usage")
            return int(path.read_text()) / 1e9 if path is not None else None
        except (OSError, ValueError):
            return None

    def oom_kills(self) -> int:
        """Processes the kernel killed in this cgroup for going over its memory limit."""
        path = self._file("memory", "memory.events" if self.version == 2 else "memory.oom_control")
        with contextlib.suppress(OSError, ValueError, AttributeError):
            for line in path.read_text().splitlines():
                key, value = line.split()
                if key == "oom_kill":
                    return int(value)
        return 0

    def pids(self) -> list[int]:
        pids: set[int] = set()
        for folder in dict.fromkeys(self.dirs.values()):
            with contextlib.suppress(OSError, ValueError):
                pids.update(map(int, (folder / "cgroup.procs").read_text().split()))
        return sorted(pids)

    def kill(self) -> None:
        """SIGKILL every process in the cgroup (cgroup.kill where there is one)."""
        kill_file = self._file("", "cgroup.kill") if self.version == 2 else None
        if kill_file is not None and kill_file.exists():
            with contextlib.suppress(OSError):
                _write(kill_file, "1")
                return
        for _ in range(100):  # a process forking while it is killed adds one more: look again
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        """Kill what is left in the cgroup and delete it; a folder whose tasks do not leave in time stays."""
        self.kill()
        deadline = time.monotonic() + REMOVE_WAIT
        for folder in reversed(list(dict.fromkeys(self.dirs.values()))):
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as error:
                    if error.errno != errno.EBUSY or time.monotonic() > deadline:
                        break
                    self.kill()
                    time.sleep(0.01)
