"""A seccomp filter, compiled by libseccomp, that refuses the kernel keyring calls (bwrap's `--seccomp`).

A process keeps the session keyring it inherits, whatever its uid: without this filter a kernel
started by root could list, read and add keys of root's session keyring. `add_key`, `keyctl` and
`request_key` fail with EPERM inside the sandbox; every other call is allowed. libseccomp builds the
BPF program (through pyseccomp, its ctypes binding); nothing here writes BPF by hand.
"""

from __future__ import annotations

import errno
import os
import tempfile
from functools import cache

KEYRING_CALLS = ("add_key", "keyctl", "request_key")


@cache
def keyring_filter() -> bytes | None:
    """The compiled filter for this machine's architecture, or None where libseccomp is not available."""
    try:
        import pyseccomp
    except (ImportError, OSError):  # no binding, or no libseccomp.so.2
        return None
    syscall_filter = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    for name in KEYRING_CALLS:
        syscall_filter.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
    with tempfile.TemporaryFile() as handle:
        syscall_filter.export_bpf(handle)
        handle.seek(0)
        return handle.read()


def filter_fd() -> int | None:
    """A readable descriptor holding the filter, for bwrap's `--seccomp FD` (the caller closes it), or None."""
    program = keyring_filter()
    if program is None:
        return None
    read, write = os.pipe()
    os.write(write, program)  # a few hundred bytes: well under a pipe's buffer
    os.close(write)
    return read
