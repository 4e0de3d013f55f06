"""Before a batch starts any kernel: what would fail every submission is found once, with what to do.

`preflight(course, lesson, config)` runs once per batch, in the process that grades it
(grader/grading/autograde.py), and refuses the whole batch with one message:

- `BrokenSpec` when the lesson's trusted spec (solutions/<lesson>.checks.py) cannot prepare its
  checks for the release: the spec is loaded and its checks prepared exactly as for a submission
  (grader.pipeline.inject_trusted_checks), with the traceback, bounded;
- `KernelsCannotStart` when the rehearsal of a kernel's start (grader.sandbox.kernel_probe: the
  same sandbox, limits, uid scheme, run folder, sockets and TMPDIR as a submission's kernel, with a
  few lines of Python in place of ipykernel) fails: what bwrap, setpriv or the interpreter wrote is
  in the message. It costs a fraction of one kernel's start and leaves no thread or ZeroMQ context
  in this process, from which the grading processes are forked.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from traitlets.config import Config

from grader.errors import BrokenSpec, KernelsCannotStart
from grader.grading.running.failure_detail import bounded, traceback_of
from grader.layout import Layout
from grader.sandbox.kernel_probe import rehearse

KERNEL_HELP = ("No submission was graded. Every kernel starts this way, so every submission would have failed. "
               "What to do: read what the sandbox said above. Usual causes: the Python environment or a folder "
               "above it cannot be read by another user (run `make env` in a folder others can enter, or grade "
               "as root); bubblewrap or util-linux's setpriv missing (`apt-get install bubblewrap util-linux`); "
               "user namespaces disabled (sysctl kernel.unprivileged_userns_clone=1).")


def preflight(course: Path, lesson: str, config: Config, *, sandbox: bool = True) -> None:
    """Refuse the batch (BrokenSpec, KernelsCannotStart) when something would fail every submission."""
    check_spec(lesson, config)
    if sandbox:
        check_kernel(config)


def check_spec(lesson: str, config: Config) -> None:
    """Prepare the lesson's trusted checks for its release notebook, as grading does; BrokenSpec if that fails."""
    from grader.pipeline.inject_trusted_checks import InjectTrustedChecks

    release = Layout.of(config).release_notebook(lesson)
    if not release.is_file():  # not released: grading says so itself
        return
    nb = nbformat.read(release, as_version=4)
    try:
        InjectTrustedChecks(config=config).preprocess(nb, {"nbgrader": {"assignment": lesson, "notebook": lesson}})
    except Exception as error:
        raise BrokenSpec(f"the trusted checks of {lesson} cannot be prepared, so no submission can be graded: "
                         f"{type(error).__name__}: {bounded(str(error), 500)}\n"
                         f"traceback: {traceback_of(error)}\n"
                         f"What to do: fix solutions/{lesson}.checks.py (`python -m pytest "
                         "tests/unit/test_trusted_checks.py` checks every spec), then grade again. "
                         "No submission was graded.") from None


def check_kernel(config: Config) -> None:
    """Rehearse a sandboxed kernel's start as grading would (grader.sandbox.kernel_probe); KernelsCannotStart if
    it fails."""
    from grader.pipeline.guarded_execute import GuardedExecute
    from grader.sandbox.limits import KernelLimits

    failure = rehearse(KernelLimits(config=config), GuardedExecute(config=config).kernel_environment())
    if failure:
        raise KernelsCannotStart(f"a sandboxed kernel cannot start on this machine: {failure}\n{KERNEL_HELP}")
