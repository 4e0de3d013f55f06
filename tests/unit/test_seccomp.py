"""The kernels' seccomp filter, tried for real: inside the sandbox each refused call fails, the rest works."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from unittest import mock

import pytest

from grader.sandbox import bwrap, seccomp

pyseccomp = pytest.importorskip("pyseccomp")

# name -> arguments: each call made with arguments that would succeed, or fail otherwise than EPERM, unfiltered.
CALLS = {
    "io_uring_setup": (8, "params"),
    "userfaultfd": (0,),
    "bpf": (0, 0, 0),
    "perf_event_open": ("attr", 0, -1, -1, 0),
    "keyctl": (0, -3, 0),  # KEYCTL_GET_KEYRING_ID of the session keyring
    "add_key": (b"user", b"probe", b"x", 1, -3),
    "unshare": (0x10000000,),  # CLONE_NEWUSER
    "setns": (-1, 0),
    "mount": (b"none", b"/tmp", b"tmpfs", 0, 0),
    "ptrace": (0, 0, 0, 0),  # PTRACE_TRACEME
    "process_vm_readv": (1, 0, 0, 0, 0, 0),
    "kexec_load": (0, 0, 0, 0),
    "open_by_handle_at": (-1, 0, 0),
}
PROBE = r"""
import ctypes, json, os, subprocess, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
numbers, calls = json.loads(sys.argv[1]), json.loads(sys.argv[2])
buffer = ctypes.create_string_buffer(128)  # a zeroed perf_event_attr or io_uring_params
def argument(value):
    if value in ("attr", "params"):
        return ctypes.c_void_p(ctypes.addressof(buffer))
    if isinstance(value, str):  # "b:text": a C string
        return ctypes.c_char_p(value[2:].encode())
    return ctypes.c_long(value)
results = {}
for name, args in calls.items():
    ctypes.set_errno(0)
    result = libc.syscall(numbers[name], *map(argument, args))
    results[name] = 0 if result >= 0 else ctypes.get_errno()
thread = threading.Thread(target=lambda: None)
thread.start()
thread.join()
results["subprocess"] = subprocess.run(["/bin/true"]).returncode
pid = os.fork()
if pid == 0:
    os._exit(0)
results["fork"] = os.waitpid(pid, 0)[1]
print(json.dumps(results))
"""


def _tried(calls: dict[str, tuple], filtered: bool) -> dict[str, int]:
    """Errno of each call made inside the sandbox (0: it succeeded), with or without the filter."""
    arch = pyseccomp.system_arch()
    numbers = {name: pyseccomp.resolve_syscall(arch, name) for name in calls}
    encoded = {name: [f"b:{a.decode()}" if isinstance(a, bytes) else a for a in args] for name, args in calls.items()}
    with mock.patch.object(bwrap, "filter_fd", seccomp.filter_fd if filtered else lambda: None):
        command, fds = bwrap.Sandbox().command([os.path.join(sys.prefix, "bin", "python"), "-c", PROBE,
                                                json.dumps(numbers), json.dumps(encoded)])
    try:
        done = subprocess.run(command, pass_fds=fds, capture_output=True, text=True, timeout=60)
    finally:
        for fd in fds:
            os.close(fd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_sandbox_refuses_every_call_kernels_never_need_and_still_runs_processes_and_threads():
    got = _tried(CALLS, filtered=True)
    refused = {name: errno.errorcode.get(got[name], got[name]) for name in CALLS if got[name] != errno.EPERM}
    assert not refused, f"allowed inside the sandbox (errno, 0: success): {refused}"
    assert got["subprocess"] == 0 and got["fork"] == 0


def test_without_the_filter_the_same_probe_reaches_calls_docker_refuses():
    """The probe is able to fail: unfiltered, io_uring and userfaultfd answer otherwise than EPERM here."""
    got = _tried({name: CALLS[name] for name in ("io_uring_setup", "userfaultfd")}, filtered=False)
    if got["io_uring_setup"] == got["userfaultfd"] == errno.EPERM:
        pytest.skip("this machine's kernel refuses io_uring and userfaultfd by itself")
