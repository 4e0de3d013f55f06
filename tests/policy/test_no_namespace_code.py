"""The project builds no namespace of its own: bubblewrap does, and setpriv drops the user."""

from __future__ import annotations

import re

from grader.course import ROOT
from grader.sandbox import seccomp

# A call of a namespace or mount syscall, by name, or a constant copied from the kernel's headers.
FORBIDDEN = re.compile(r"\b(unshare|setns|capset|clone3?|mount|umount2?|pivot_root)\s*\(|\bCLONE_NEW[A-Z]+|"
                       r"\bMS_(BIND|REC|PRIVATE|MOVE|RDONLY|REMOUNT|NOSUID|NODEV|NOEXEC)\b|\bSYS_(CAPSET|UNSHARE|SETNS|MOUNT)\b|"
                       r"\bctypes\.CDLL\b")


def test_no_source_of_the_grader_or_benchmarks_calls_namespace_syscalls():
    sources = [*(ROOT / "grader").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in sources
             for number, line in enumerate(path.read_text().splitlines(), start=1) if FORBIDDEN.search(line)]
    assert not found, found


def test_the_pattern_finds_what_the_warm_template_held():
    held = ["unshare(CLONE_NEWNS | CLONE_NEWPID)", "mount(None, '/', None, MS_REC | MS_PRIVATE)",
            "libc = ctypes.CDLL(None, use_errno=True)", "_check(libc.syscall(SYS_CAPSET, h, d), 'capset')"]
    assert all(FORBIDDEN.search(line) for line in held)


def test_the_kernel_filter_comes_from_libseccomp():
    program = seccomp.kernel_filter()
    assert program is not None and len(program) % 8 == 0  # whole BPF instructions, as libseccomp exports them
