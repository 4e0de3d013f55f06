"""Autograde step: run a submission's cells so that no notebook can harm the grading batch.

`GuardedExecute` is nbgrader's `Execute` preprocessor (nbgrader still scores every cell) with these
additions, configured in grader/nbgrader_config.py:

- a memory limit: the kernel process starts with `RLIMIT_AS` set (through the `preexec_fn` that
  jupyter_client passes on to `subprocess.Popen`), so a cell that allocates far more than the
  machine has gets a `MemoryError` in that cell instead of starving the machine;
- a dead kernel ends the notebook, not the submission: when `os._exit()` or a crash kills the
  kernel, the cell that was running and every code cell after it get an error output and are not
  run. nbgrader then scores the test cells that ran before the crash and gives 0 to the others,
  instead of failing the whole submission;
- environment variables for the kernel (the course sets one BLAS thread per kernel: with several
  kernels grading at once, BLAS threads that spin-wait for a core slow every kernel down).
"""

from __future__ import annotations

import functools
import os

from nbclient.exceptions import DeadKernelError
from nbclient.util import run_sync
from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from traitlets import Dict, Integer

try:
    import resource
except ImportError:  # Windows: no resource limits
    resource = None

# `ename` of the error outputs put in the cell that was running when the kernel died, and in the
# cells after it; grader.grading.triage reads them back to flag the submission.
KERNEL_DIED = "KernelDied"
NOT_RUN = "NotRun"


def limit_address_space(limit: int) -> None:
    """Runs in the kernel's process between fork and exec (`subprocess.Popen`'s preexec_fn)."""
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


class GuardedExecute(Execute):
    """nbgrader's Execute with a per-kernel memory limit, surviving a kernel that dies."""

    memory_limit = Integer(
        0, help="Bytes of address space (RLIMIT_AS) a submission's kernel may use; 0 means no limit."
    ).tag(config=True)

    kernel_env = Dict(
        {}, help="Environment variables set for each submission's kernel, on top of the grader's own."
    ).tag(config=True)

    _kernel_died = False

    async def async_start_new_kernel(self, **kwargs):
        if self.memory_limit > 0 and resource is not None:
            kwargs.setdefault("preexec_fn", functools.partial(limit_address_space, self.memory_limit))
        if self.kernel_env:
            kwargs.setdefault("env", {**os.environ, **self.kernel_env})
        await super().async_start_new_kernel(**kwargs)

    # nbclient binds the synchronous wrapper to its own coroutine: rebind it to the one above.
    start_new_kernel = run_sync(async_start_new_kernel)

    def preprocess(self, nb, resources=None, km=None):
        self._kernel_died = False
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell: NotebookNode, resources, index: int):
        if cell.cell_type != "code":
            return super().preprocess_cell(cell, resources, index)
        if self._kernel_died:
            cell.outputs = [_error(NOT_RUN, "not run: the kernel died in an earlier cell")]
            cell.execution_count = None
            return cell, self.resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._kernel_died = True
            cell.outputs.append(_error(KERNEL_DIED, "the kernel died while running this cell "
                                       "(os._exit(), a crash, or the memory limit)"))
            return cell, self.resources


def _error(ename: str, evalue: str) -> NotebookNode:
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])
