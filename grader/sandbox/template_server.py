"""A warm template: it imports the kernel's libraries once, then forks one fresh, single-use kernel per request.

This file runs inside the template's own sandbox (grader.sandbox.template starts it there with
`python <this file> <socket> <runs folder>`), so it imports only the standard library and the
kernel's own packages, never the course. It never runs student code.

Per request, on one connection of the unix socket: a JSON line {"rundir", "args", "env", "limits",
"tmpfs_size", "files": [names]} with descriptors attached (SCM_RIGHTS): the grader's stdout and
stderr for the kernel, then the files to copy into its working directory. The template
forks a session process S and answers {"pid": S's pid in the template's namespace}. S takes new
mount, PID, network, IPC, UTS and cgroup namespaces, mounts fresh tmpfs folders (/tmp, HOME, the
working directory, and over the runs folder, so that only its own run folder stays in view),
copies the files in and forks the kernel K, PID 1 of its namespace. K mounts its own /proc, sets
the limits, enters a user namespace of its own as uid 65534 (which leaves it no capability over
any of those namespaces), drops every capability, sends {"ready": true} and runs ipykernel.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import platform
import random
import resource
import shutil
import signal
import socket
import sys

LAUNCH_ENV = dict(os.environ)  # before the imports below, some of which set variables a kernel also gets

# ---- the warm imports: what every kernel would otherwise import again (MPLBACKEND is set by the caller)
import ipykernel.debugger  # noqa: E402, F401
import ipykernel.ipkernel  # noqa: E402, F401
import matplotlib  # noqa: E402
import matplotlib.pyplot  # noqa: E402, F401
import matplotlib_inline.backend_inline  # noqa: E402
import numpy  # noqa: E402
import psutil  # noqa: E402, F401
from ipykernel.kernelapp import IPKernelApp  # noqa: E402

IMPORTED_ENV = {name: value for name, value in os.environ.items() if name not in LAUNCH_ENV}
SANDBOX_UID = 65534
HOME = "/home/student"
WORKDIR = f"{HOME}/work"
HOME_FOLDERS = (".ipython", ".jupyter", ".local/share/jupyter/runtime", ".config/matplotlib")

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 4096, 8192, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 1, 24, 38, 47, 4
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
LINUX_CAPABILITY_VERSION_3 = 0x20080522
LIMITS = {"memory": resource.RLIMIT_AS, "file_size": resource.RLIMIT_FSIZE, "processes": resource.RLIMIT_NPROC}

libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def unshare(flags: int) -> None:
    _check(libc.unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int = 0, data: str | None = None) -> None:
    _check(libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                      ctypes.c_ulong(flags), data and data.encode()), f"mount {target}")


def prctl(option: int, arg: int, arg3: int = 0) -> None:
    _check(libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(arg3), 0, 0), f"prctl {option}")


def drop_capabilities() -> None:
    """No capability left in any set: bounding, ambient, effective, permitted, inheritable."""
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two all-zero {effective, permitted, inheritable}
    _check(libc.syscall(SYS_CAPSET[platform.machine()], header, data), "capset")
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def tmpfs(target: str, size: int, mode: str = "0755") -> None:
    options = f"mode={mode}" + (f",size={size}" if size else "")
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, options)


def python_dirs() -> list[str]:
    """The interpreter's folders, as grader.sandbox.bwrap.python_dirs finds them."""
    dirs = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    dirs.add(os.path.abspath(sys.prefix))
    return sorted(dirs)


def write(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


def close_other_fds(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def copy_in(names: list[str], fds: list[int]) -> None:
    for name, fd in zip(names, fds, strict=True):
        with os.fdopen(fd, "rb") as source, open(os.path.join(WORKDIR, os.path.basename(name)), "wb") as target:
            while chunk := source.read(1 << 20):
                target.write(chunk)


def session(conn: socket.socket, request: dict, fds: list[int], runs: str) -> None:
    """S: new namespaces and folders, then the kernel as PID 1 of its own PID namespace."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the template gone, S goes too
    os.setsid()  # out of the template's process group, which kill(0, ...) would otherwise reach
    close_other_fds({conn.fileno(), *fds})
    rundir = request["rundir"]
    unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    size = int(request.get("tmpfs_size") or 0)
    covered = ("/tmp", runs)
    # Kept across the new folders: this kernel's run folder, and the Python environment where it lies
    # under one of them (a checkout under /tmp). Bound aside in the new HOME first, then moved back.
    kept = [rundir, *(path for path in python_dirs() if any(path == top or path.startswith(top + "/")
                                                            for top in covered))]
    tmpfs(HOME, size)
    aside = []
    for index, path in enumerate(kept):
        os.makedirs(place := f"{HOME}/.kept/{index}")
        mount(path, place, None, MS_BIND | MS_REC)
        aside.append(place)
    tmpfs("/tmp", size, "1777")
    tmpfs("/opt", 4096)  # this file, bound there for the template alone
    os.makedirs(runs, exist_ok=True)
    tmpfs(runs, 1024 * 1024, "0711")  # the other kernels' run folders out of view
    for path, place in zip(kept, aside, strict=True):
        os.makedirs(path, exist_ok=True)
        mount(place, path, None, MS_MOVE)
        if path != rundir:
            mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    shutil.rmtree(f"{HOME}/.kept", ignore_errors=True)
    for folder in ("work", *HOME_FOLDERS):
        os.makedirs(os.path.join(HOME, folder), exist_ok=True)
    tmpfs(WORKDIR, size)
    copy_in(request.get("files", []), fds[2:])
    socket.sethostname("sandbox")
    kernel = os.fork()
    if kernel == 0:
        try:
            run_kernel(conn, request, fds[:2])
        finally:
            os._exit(1)
    conn.close()
    _, status = os.waitpid(kernel, 0)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def run_kernel(conn: socket.socket, request: dict, output: list[int]) -> None:
    """K: PID 1 of its namespace; its own /proc, limits, an unprivileged user, then ipykernel."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setsid()  # a session and process group of its own, as bwrap's --new-session gives a cold kernel
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name, value in request.get("limits", {}).items():
        if value:
            resource.setrlimit(LIMITS[name], (value, value))
    unshare(CLONE_NEWUSER)  # the namespaces above belong to the template's user namespace: no power over them
    write("/proc/self/setgroups", "deny")
    write("/proc/self/uid_map", f"{SANDBOX_UID} 0 1")
    write("/proc/self/gid_map", f"{SANDBOX_UID} 0 1")
    drop_capabilities()
    os.environ.clear()
    os.environ.update({**IMPORTED_ENV, **request["env"], "PWD": WORKDIR})
    os.chdir(WORKDIR)
    os.umask(0o022)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for target, fd in enumerate(output, start=1):  # the grader's stdout and stderr, as a cold kernel has them
        os.dup2(fd, target)
        os.close(fd)
    random.seed()  # the template's random states would otherwise repeat in every kernel
    numpy.random.seed()
    conn.sendall(b'{"ready": true}\n')
    conn.close()
    gc.unfreeze()
    sys.argv = [sys.executable, "-m", "ipykernel_launcher", *request["args"]]
    app = IPKernelApp.instance()
    app.initialize(request["args"])
    matplotlib_inline.backend_inline._enable_matplotlib_integration()
    app.start()
    os._exit(0)


def reap(signum=None, frame=None) -> None:
    """Wait for every session that ended, so that their CPU time adds up in the template's (benchmarks)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def serve(path: str, runs: str) -> None:
    """Answer requests until the socket is closed or the template is killed."""
    signal.signal(signal.SIGCHLD, reap)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    null = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null, 1)  # the grader stops reading; each kernel gets the grader's own output instead
    os.close(null)
    while True:
        conn, _ = listener.accept()
        try:
            message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 253)  # 253: the most one message carries
            request = json.loads(message)
        except (OSError, ValueError) as error:
            conn.sendall(json.dumps({"error": f"bad request: {error}"}).encode() + b"\n")
            conn.close()
            continue
        pid = os.fork()
        if pid == 0:
            listener.close()
            try:
                session(conn, request, fds, runs)
            except BaseException as error:  # noqa: BLE001 (reported to the grader, then exit)
                try:
                    conn.sendall(json.dumps({"error": f"{type(error).__name__}: {error}"}).encode() + b"\n")
                finally:
                    os._exit(1)
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        conn.close()
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    if sys.path and sys.path[0] in ("", os.path.dirname(os.path.abspath(__file__))):
        del sys.path[0]  # as ipykernel_launcher does; IPython puts the working directory back
    matplotlib.get_backend()  # resolved here, once
    gc.collect()
    gc.freeze()  # the template's objects stay out of every kernel's garbage collections
    serve(sys.argv[1], sys.argv[2])
