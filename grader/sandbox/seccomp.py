"""A seccomp filter, compiled by libseccomp, that refuses the system calls kernels never need (bwrap's `--seccomp`).

It starts from what Docker's default profile refuses a container without added capabilities and keeps
refusing all of it that no lesson, NumPy, matplotlib, IPython or ipykernel uses:

- the kernel keyring (`add_key`, `keyctl`, `request_key`): a process keeps the session keyring it
  inherits, whatever its uid, so without this a kernel started by root could read root's keys;
- new attack surface of the host kernel: `io_uring_*`, `userfaultfd`, `bpf`, `perf_event_open`;
- other namespaces and mounts: `unshare`, `setns`, `clone` with any namespace flag, `mount`,
  `umount2`, `pivot_root` and the new mount API (`fsopen`, `fsmount`, `move_mount`, `open_tree`...);
- reading or changing other processes and the machine: `ptrace`, `process_vm_readv`/`writev`,
  `kcmp`, `kexec_*`, modules, `reboot`, `swapon`/`swapoff`, clocks, `acct`, `quotactl`, `syslog`,
  handles to files by number (`open_by_handle_at`);
- `clone3` fails with ENOSYS (as in Docker), so that the C library falls back to `clone`, whose
  flags a filter can read.

Every refused call fails with EPERM (clone3: ENOSYS); every other call is allowed. libseccomp builds
the BPF program for this machine's architecture (through pyseccomp, its ctypes binding); nothing here
writes BPF by hand. tests/unit/test_seccomp.py tries each refused call inside the sandbox.
"""

from __future__ import annotations

import errno
import os
import tempfile
from functools import cache

KEYRING_CALLS = ("add_key", "keyctl", "request_key")
REFUSED_CALLS = (
    *KEYRING_CALLS,
    "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "bpf", "perf_event_open",
    "unshare", "setns", "mount", "umount2", "pivot_root", "mount_setattr", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
    "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "settimeofday", "clock_settime", "clock_adjtime",
    "adjtimex", "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "uselib", "vhangup", "sethostname",
    "setdomainname", "fanotify_init", "nfsservctl", "iopl", "ioperm", "_sysctl", "sysfs", "ustat", "vm86",
    "vm86old", "create_module", "get_kernel_syms", "query_module",
)
# clone's flags that make a namespace (new mount, cgroup, UTS, IPC, user, PID, network and time namespaces).
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)


@cache
def kernel_filter() -> bytes | None:
    """The compiled filter for this machine's architecture, or None where libseccomp is not available."""
    try:
        import pyseccomp
    except (ImportError, OSError):  # no binding, or no libseccomp.so.2
        return None
    syscall_filter = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    for name in REFUSED_CALLS:
        try:
            syscall_filter.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
        except (ValueError, RuntimeError, OSError):  # not a call of this architecture (vm86 on x86-64, say)
            continue
    syscall_filter.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in NAMESPACE_FLAGS:
        with_flag = pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag)
        syscall_filter.add_rule(pyseccomp.ERRNO(errno.EPERM), "clone", with_flag)
    with tempfile.TemporaryFile() as handle:
        syscall_filter.export_bpf(handle)
        handle.seek(0)
        return handle.read()




def filter_fd() -> int | None:
    """A readable descriptor holding the filter, for bwrap's `--seccomp FD` (the caller closes it), or None."""
    program = kernel_filter()
    if program is None:
        return None
    read, write = os.pipe()
    os.write(write, program)  # a few hundred bytes: well under a pipe's buffer
    os.close(write)
    return read
