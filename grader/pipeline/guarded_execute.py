"""Autograde step: run a submission's cells in a sandbox, so that no notebook can harm grading.

`GuardedExecute` is nbgrader's `Execute` preprocessor (nbgrader still scores every cell) with:

- the sandbox (grader.sandbox): each kernel is a fresh process in its own bubblewrap namespaces,
  with no network, a read-only view of the Python environment and nothing else of the machine,
  talking to the grader over IPC sockets, as a host uid of its own when the grader is root, in a
  cgroup of its own. Where the sandbox cannot start, grading refuses with the reason;
  `sandbox = False` (`--unsafe-no-sandbox`) runs kernels unconfined and says so in the notebook's
  metadata and first cell, which the feedback, CSV and summary repeat. Where no cgroup can be made,
  the notebook's metadata says so (`WATCHDOG_ONLY`), and the CSV and summary repeat it; so too
  where the kernel has no host uid of its own (`GRADER_UID`: the grader is an ordinary user);
- limits per submission: those of the kernel (grader.sandbox.limits.KernelLimits: address space
  per process, memory and tasks of the kernel's cgroup, file size, the size of each writable tmpfs,
  message size at the socket), time per cell and per notebook, and output in bytes per cell and per
  notebook (kept as received, so a huge output never sits in the grader's memory);
- time per cell (`timeout`) counts the CPU time of the kernel's cgroup, so a busy machine does not
  cost an honest cell its points; wall time stops a cell only at `wall_timeout_factor` times that
  (a cell that sleeps or waits). Without a cgroup, `timeout` is wall time, as in nbgrader. A cell
  over its limit is interrupted through the kernel manager's `interrupt_kernel()`, gets a
  `CellTimeoutError` output, and is killed with its kernel if it still runs
  `KernelLimits.interrupt_grace` seconds later (the CPU time by the kernel manager's watchdog,
  the wall time by a watch here; nbclient's own `timeout` is off meanwhile);
- a kernel that dies, or ignores the interrupt after a time-out, ends the notebook, not the
  submission: the cell that was running gets an error output and every later code cell is marked
  as not run. nbgrader then scores the test cells that ran before and gives 0 to the others;
- grading shortcuts (`grading_shortcuts`): the kernel is told that it is being graded, with the
  `NBGRADER_EXECUTION` that nbgrader sets in the grading process (the sandbox clears every other
  variable), so a lesson's demonstration cells run a smaller version (lesson_helpers.py), and it gets
  `shortcut_arguments`, such as a lower figure resolution. Off, every cell runs as `make reference`
  runs it; the graded verdicts are the same either way (tests/integration/test_grading_shortcuts.py);
- the course's files that every lesson imports (`course_files`: lesson_helpers.py), copied into the
  sandboxed kernel's working folder, since the sandbox shows it nothing else of the course.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time

from nbclient.exceptions import DeadKernelError
from nbclient.util import ensure_async, run_sync
from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell, new_output
from nbgrader.preprocessors import Execute
from traitlets import Bool, Dict, Instance, Integer, List, Unicode, default

from grader.safe_text import for_terminal
from grader.sandbox.bwrap import probe
from grader.sandbox.kernel import SandboxedKernelManager
from grader.sandbox.limits import KernelLimits
from grader.student.layout import LESSON_HELPERS

# `ename` of the error outputs put in the cell that was running when the kernel died or was stopped,
# and in the cells after it; grader.grading.running.triage reads them back to flag the submission.
KERNEL_DIED = "KernelDied"
NOT_RUN = "NotRun"
OUTPUT_CAPPED = "OutputLimit"
SUBMISSION_TIMEOUT = "SubmissionTimeout"
LIMIT_EXCEEDED = "LimitExceeded"  # the kernel was killed for a limit (memory, processes, message size, CPU)
CPU_TIMEOUT = "CellTimeoutError"  # the cell used its CPU time limit and was interrupted
UNSAFE = "graded_without_sandbox"  # notebook metadata key set when the sandbox was off
WATCHDOG_ONLY = "graded_without_cgroup"  # notebook metadata key: why the kernel had no cgroup
GRADER_UID = "graded_as_grader_uid"  # notebook metadata key: the kernel had no host uid of its own (ordinary user)
EXECUTION_VARIABLE = "NBGRADER_EXECUTION"  # "autograde" in the grading process (nbgrader sets it)


class KernelStartError(RuntimeError):
    """A submission's kernel did not start; the message holds what its sandbox wrote (bounded, escaped)."""


class GuardedExecute(Execute):
    """nbgrader's Execute in a sandbox, with per-submission limits, surviving a kernel that dies."""

    sandbox = Bool(True, help="Run each kernel in the bubblewrap sandbox. False is unsafe: the kernel can "
                              "then read and change grades, and the results say so.").tag(config=True)
    notebook_timeout = Integer(600, help="Seconds all of a submission's cells may take together; 0: none."
                               ).tag(config=True)
    output_bytes_per_cell = Integer(0, help="Bytes of output kept per cell; 0: no limit.").tag(config=True)
    output_bytes_per_notebook = Integer(0, help="Bytes of output kept per notebook; 0: no limit.").tag(config=True)
    kernel_env = Dict({}, help="Environment variables set for each submission's kernel.").tag(config=True)
    cell_cpu_log = Unicode("", help="A file to which each graded notebook appends one JSON line: the CPU seconds "
                                    "of each graded cell (where counted), by grade_id. Empty: none written."
                            ).tag(config=True)
    wall_timeout_factor = Integer(4, help="Where a cell's CPU time is counted (a cgroup), the wall-clock limit of a "
                                          "cell is this many times `timeout`.").tag(config=True)
    grading_shortcuts = Bool(True, help="Tell each kernel that it is being graded (NBGRADER_EXECUTION, as nbgrader "
                                        "set it for this process), so that lessons run their demonstrations at a "
                                        "smaller size, and start it with shortcut_arguments. False: every cell "
                                        "runs as it does outside grading.").tag(config=True)
    shortcut_arguments = List(Unicode(), [], help="Kernel arguments added to extra_arguments while "
                                                  "grading_shortcuts is on.").tag(config=True)
    limits = Instance(KernelLimits, help="The kernel's limits: c.KernelLimits of this step's configuration.")
    course_files = Dict({LESSON_HELPERS.name: str(LESSON_HELPERS)},
                        help="name -> path of the course's files copied into each sandboxed kernel's working "
                             "folder, beside the notebook's own: the module the lessons import.").tag(config=True)

    # A cell that floods its output must not fail the submission: wait longer for the output to
    # arrive once the cell is done, and carry on without the rest if it does not.
    iopub_timeout = Integer(30, allow_none=True, help=Execute.iopub_timeout.help).tag(config=True)
    raise_on_iopub_timeout = Bool(False, help=Execute.raise_on_iopub_timeout.help).tag(config=True)

    _stopped = ""  # why the kernel is gone ("" while it runs)
    cell_cpu: dict[int, float]  # after preprocess: CPU seconds of each code cell (by index) where counted

    @default("limits")
    def _configured_limits(self) -> KernelLimits:
        return KernelLimits(parent=self)

    def preprocess(self, nb, resources=None, km=None):
        self.limits  # noqa: B018 (read now, not first in the forked child of an unconfined kernel)
        self._stopped, self._started = "", time.monotonic()
        self._wall_limit, self._wall_hit = None, False
        self._bytes: dict[int, int] = {}
        self._notebook_bytes = 0
        self._capped: set[int] = set()
        self.cell_cpu = {}
        if self.sandbox:
            probe()  # refuses with the reason where the sandbox cannot start
            self.kernel_manager_class = SandboxedKernelManager
        else:
            nb.metadata[UNSAFE] = True
            nb.cells.insert(0, new_markdown_cell(
                "**Graded without the sandbox** (`--unsafe-no-sandbox`): this submission's code ran with the "
                "grader's own permissions, so its results cannot be trusted.", metadata={"deletable": False}))
        nb, resources = super().preprocess(nb, resources, km)
        if self.cell_cpu_log:
            graded = {cell.metadata.get("nbgrader", {}).get("grade_id", str(index)): round(self.cell_cpu[index], 3)
                      for index, cell in enumerate(nb.cells)
                      if index in self.cell_cpu and cell.metadata.get("nbgrader", {}).get("grade")}
            with open(self.cell_cpu_log, "a") as log:  # one short write per line: parallel graders do not mix
                log.write(json.dumps({"notebook": (resources or {}).get("unique_key", ""), "cells": graded}) + "\n")
        return nb, resources

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        if isinstance(km, SandboxedKernelManager):
            km.limits = self.limits
            km.sandbox_env = self.kernel_environment()
            km.course_files = dict(self.course_files)
        return km

    def kernel_environment(self) -> dict[str, str]:
        """The variables the kernel gets from grading: kernel_env, and while grading_shortcuts is on,
        nbgrader's NBGRADER_EXECUTION (lesson_helpers.py reads it)."""
        told = {}
        if self.grading_shortcuts and os.environ.get(EXECUTION_VARIABLE):
            told[EXECUTION_VARIABLE] = os.environ[EXECUTION_VARIABLE]
        return {**told, **self.kernel_env}

    async def async_start_new_kernel(self, **kwargs):
        if not self.sandbox:  # unconfined: limits through rlimits on the kernel process only
            kwargs.setdefault("preexec_fn", self._limit_unconfined)
            inherited = {name: value for name, value in os.environ.items() if name != EXECUTION_VARIABLE}
            kwargs.setdefault("env", {**inherited, **self.kernel_environment()})
        configured = self.extra_arguments
        if self.grading_shortcuts:
            self.extra_arguments = [*configured, *self.shortcut_arguments]
        try:
            await super().async_start_new_kernel(**kwargs)
        finally:
            self.extra_arguments = configured

    # nbclient binds the synchronous wrapper to its own coroutine: rebind it to the one above.
    start_new_kernel = run_sync(async_start_new_kernel)

    async def async_start_new_kernel_client(self):
        km = self.km  # nbclient forgets it when the start fails
        try:
            client = await super().async_start_new_kernel_client()
        except Exception as error:  # the kernel never answered: say what its sandbox wrote
            said = km.stderr_text() if isinstance(km, SandboxedKernelManager) else ""
            raise KernelStartError(f"the kernel did not start ({type(error).__name__}: {for_terminal(error)}); "
                                   f"its sandbox said: {said or 'nothing'}") from None
        isolation = getattr(self.km, "isolation", "")
        if isolation.startswith("no cgroup"):
            self.nb.metadata[WATCHDOG_ONLY] = isolation
            self.log.warning("kernel without a cgroup of its own: %s", isolation)
        host_user = getattr(self.km, "host_user", "")
        if host_user:
            self.nb.metadata[GRADER_UID] = host_user
            self.log.warning("kernel without a host uid of its own: %s", host_user)
        return client

    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    def _limit_unconfined(self) -> None:
        import resource

        limits = ((resource.RLIMIT_AS, self.limits.memory_limit), (resource.RLIMIT_FSIZE, self.limits.file_size_limit))
        for which, value in limits:
            if value:
                resource.setrlimit(which, (value, value))

    def preprocess_cell(self, cell: NotebookNode, resources, index: int):
        if cell.cell_type != "code":
            return super().preprocess_cell(cell, resources, index)
        if not self._stopped and self.notebook_timeout and time.monotonic() - self._started > self.notebook_timeout:
            self._stopped = f"the notebook ran past its time limit ({self.notebook_timeout} s)"
            cell.outputs = [_error(SUBMISSION_TIMEOUT, self._stopped)]
            cell.execution_count = None
            run_sync(self.kill_kernel)()
            return cell, self.resources
        if self._stopped:
            cell.outputs = [_error(NOT_RUN, f"not run: {self._stopped} in an earlier cell")]
            cell.execution_count = None
            return cell, self.resources
        configured = self.timeout
        counted = isinstance(self.km, SandboxedKernelManager) and self.km.start_cell(configured or 0)
        # Counted, the limit is CPU time and wall time only a backstop; either way async_execute_cell
        # watches the wall time, in place of nbclient's own timeout.
        self._wall_limit = configured * self.wall_timeout_factor if counted and configured else configured
        self._wall_hit, self.timeout = False, None
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
            if counted and self.km.cell_over_cpu:
                cell.outputs.append(_error(CPU_TIMEOUT, f"the cell used more than {configured} s of CPU time "
                                                        "and was interrupted"))
            elif self._wall_hit:
                cell.outputs.append(_error(CPU_TIMEOUT, f"the cell ran for more than {self._wall_limit} s "
                                                        "and was interrupted"))
            return cell, resources
        except DeadKernelError:
            killed_for = self.km.stop_reason() if isinstance(self.km, SandboxedKernelManager) else ""
            if killed_for:
                self._stopped = f"the kernel was stopped: {killed_for}"
                cell.outputs.append(_error(LIMIT_EXCEEDED, self._stopped))
            elif self._stopped:  # it ignored the interrupt after its time limit
                cell.outputs.append(_error("CellTimeoutError", self._stopped))
            else:
                said = self.km.stderr_text() if isinstance(self.km, SandboxedKernelManager) else ""
                self._stopped = "the kernel died"
                self.log.warning("the kernel died; its sandbox said: %s", said or "nothing")
                cell.outputs.append(_error(KERNEL_DIED, "the kernel died while running this cell (it exited, "
                                           "crashed, or ran out of memory)" + (f"; it said: {said}" if said else "")))
            return cell, self.resources
        finally:
            self.timeout = configured
            used = self.km.end_cell() if counted else None
            if used is not None:
                self.cell_cpu[index] = used

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        """nbclient's async_execute_cell, with the cell's wall-clock limit watched beside it."""
        watch = asyncio.ensure_future(self._watch_wall_time(self._wall_limit)) if self._wall_limit else None
        try:
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        finally:
            if watch is not None:
                watch.cancel()

    # nbclient binds the synchronous wrapper to its own coroutine: rebind it to the one above.
    execute_cell = run_sync(async_execute_cell)

    async def _watch_wall_time(self, limit: float) -> None:
        """At `limit` seconds, interrupt the cell; KernelLimits.interrupt_grace seconds later, stop the kernel (nbclient
        then finds it dead and the cell ends with DeadKernelError)."""
        await asyncio.sleep(limit)
        self._wall_hit = True
        self.log.error("cell over its time limit (%s s): interrupting the kernel", limit)
        with contextlib.suppress(Exception):  # a kernel that cannot take it is stopped after the grace
            await ensure_async(self.km.interrupt_kernel())
        await asyncio.sleep(self.limits.interrupt_grace)
        self._stopped = "a cell ignored the interrupt after its time limit, and the kernel was stopped"
        await self.kill_kernel()

    async def kill_kernel(self) -> None:
        """Stop the kernel at once: SIGKILL to its sandbox's processes, or jupyter_client's immediate shutdown."""
        kill = getattr(self.km, "kill_tree", None)
        if kill is not None:
            kill()
        elif self.km is not None and self.km.has_kernel:
            await ensure_async(self.km.shutdown_kernel(now=True))

    def output(self, outs, msg, display_id, cell_index):
        """Keep an output only while the cell and the notebook are under their byte limits."""
        if msg["msg_type"] in ("stream", "display_data", "execute_result", "error", "update_display_data"):
            size = len(json.dumps(msg.get("content", {}), default=str))
            cell = self._bytes.get(cell_index, 0) + size
            over_cell = self.output_bytes_per_cell and cell > self.output_bytes_per_cell
            over_notebook = (self.output_bytes_per_notebook
                             and self._notebook_bytes + size > self.output_bytes_per_notebook)
            if over_cell or over_notebook:
                if cell_index not in self._capped:
                    self._capped.add(cell_index)
                    limit = (f"{self.output_bytes_per_cell} bytes per cell" if over_cell
                             else f"{self.output_bytes_per_notebook} bytes per notebook")
                    outs.append(_error(OUTPUT_CAPPED, f"output beyond {limit} was dropped"))
                return None
            self._bytes[cell_index] = cell
            self._notebook_bytes += size
        return super().output(outs, msg, display_id, cell_index)


def _error(ename: str, evalue: str) -> NotebookNode:
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])
