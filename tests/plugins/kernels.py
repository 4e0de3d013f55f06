"""The kernel environment of a test run: one BLAS thread for every kernel, and every kernel start counted.

- Every kernel of the suite (nbval's, and the tests' own) runs with one BLAS thread, as grading kernels
  do (grader.sandbox.limits.ONE_BLAS_THREAD): the same outputs for half the CPU time.
- Kernel starts are counted, per tier, and the run ends with one line that says how many: every
  kernel that IPython starts runs a startup file of the session's own IPYTHONDIR, which notes the
  test it started in (PYTEST_CURRENT_TEST); each graded, sandboxed kernel (whose environment is the
  sandbox's, not the session's) writes one line through the hook that tests.support.make_course
  configures.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from grader.sandbox.limits import ONE_BLAS_THREAD
from tests.plugins.tiers import TIERS
from tests.support import GRADED_KERNELS

_KERNELS = "kernels.log"  # one line per IPython kernel: the test it started in
_counted: list[Path] = []


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # once per run, before any xdist worker starts
        _count_kernels(Path(tempfile.mkdtemp(prefix="course-test-kernels-")))
        for name, value in ONE_BLAS_THREAD.items():  # every kernel of the suite, as every grading kernel
            os.environ.setdefault(name, value)


def _count_kernels(folder: Path) -> None:
    startup = folder / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-count-this-kernel.py").write_text(
        "import os\n"
        f"with open({str(folder / _KERNELS)!r}, 'a') as log:\n"
        "    log.write(os.environ.get('PYTEST_CURRENT_TEST', '') + '\\n')\n")
    os.environ["IPYTHONDIR"] = str(folder / "ipython")
    os.environ.setdefault(GRADED_KERNELS, str(folder / "graded.log"))
    _counted.append(folder)


def pytest_unconfigure(config):
    for folder in _counted:
        shutil.rmtree(folder, ignore_errors=True)


def _kernel_line() -> str:
    """`kernels started: N (unit a, kernel b, browser c), M of them sandboxed for grading`."""
    [folder] = _counted
    tiers = Counter()
    log = folder / _KERNELS
    for test in log.read_text().splitlines() if log.is_file() else []:
        parts = Path(test.split("::")[0]).parts
        tiers[TIERS.get(parts[1], "kernel") if parts[:1] == ("tests",) and len(parts) > 1 else "kernel"] += 1
    graded = folder / "graded.log"
    sandboxed = len(graded.read_text().splitlines()) if graded.is_file() else 0
    tiers["kernel"] += sandboxed
    counts = ", ".join(f"{tier} {tiers[tier]}" for tier in dict.fromkeys(TIERS.values()))
    return f"kernels started: {sum(tiers.values())} ({counts}), {sandboxed} of them sandboxed for grading"


def pytest_terminal_summary(terminalreporter):
    if _counted:
        terminalreporter.write_line(_kernel_line())
