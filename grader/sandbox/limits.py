"""The limits of one submission's kernel, declared once: `c.KernelLimits.<name>` in nbgrader_config.py.

Both classes that enforce them read them here, from the same configuration: the grading step
(grader.pipeline.guarded_execute.GuardedExecute, which also applies the rlimits to a kernel run
without the sandbox) and the kernel manager (grader.sandbox.kernel.SandboxedKernelManager: the
rlimits, the kernel's cgroup, the watchdog and the socket cap).
"""

from __future__ import annotations

from traitlets import Float, Integer
from traitlets.config import Configurable

# One BLAS thread per kernel, for every kernel the course starts to grade or test a notebook: they already
# run one per core (parallel graders, test workers), and on the lessons' small matrices OpenBLAS's other
# threads only spin, doubling the CPU time a notebook takes for the same wall time and the same numbers.
ONE_BLAS_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


class KernelLimits(Configurable):
    """What one submission's kernel may use; 0 means no limit."""

    memory_limit = Integer(0, help="Bytes of address space (RLIMIT_AS) of each process of the kernel; 0: none."
                           ).tag(config=True)
    tree_memory_limit = Integer(0, help="Bytes of memory of the kernel's cgroup, shm, tmpfs and memfd pages "
                                        "included (without a cgroup: resident memory of its process tree, polled); "
                                        "sandbox only; 0: none.").tag(config=True)
    max_processes = Integer(0, help="Tasks (processes and threads) of the kernel's cgroup (without one: processes "
                                    "of its tree, polled); sandbox only; 0: none.").tag(config=True)
    file_size_limit = Integer(0, help="Bytes of the largest file the kernel may write (RLIMIT_FSIZE); 0: none."
                              ).tag(config=True)
    disk_limit = Integer(0, help="Bytes of each writable tmpfs of the sandbox (/tmp, HOME, the working folder, "
                                 "/dev/shm); 0: no size given.").tag(config=True)
    max_message_bytes = Integer(32 * 1024**2, help="Bytes of the largest message part the grader accepts from a "
                                                   "kernel (refused at the socket, before parsing; the kernel is then "
                                                   "stopped); 0: no limit.").tag(config=True)
    interrupt_grace = Float(5.0, help="Seconds a cell over its time limit (wall or CPU) has to stop after the "
                                      "interrupt before its kernel is killed.").tag(config=True)
