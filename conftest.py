"""Repository-wide pytest hooks, for every path pytest is pointed at (tests/ and solutions/ alike).

- Tiers: a test under tests/unit starts no kernel (marker `unit`); tests/integration and the nbval
  cells of solutions/ start kernels (`kernel`); tests/e2e drives a browser (`browser`).
- Suites: `make test` runs every test but the exhaustive ones, `make test-all` runs them all. A test
  is exhaustive when it carries a marker that says why (EXHAUSTIVE): it checks one more case of a
  kind that `make test` already checks once, it proves that another route reaches the same verdicts,
  or it drives a real browser. Such tests get the marker `exhaustive` here, which `make test` deselects.
- Optional extras (grader.extras.EXTRAS): a test that needs one is marked `extra` and, where the
  extra is missing, skipped with its name and install command; the run ends with one line that
  counts the skips per missing extra. A lesson's tests need the extras of grader.extras.LESSON_EXTRAS
  (its nbval cells, and every test parametrized with its id); any other test asks with
  `@pytest.mark.needs("playwright", "chromium")`.
- xdist: `--dist loadscope` keeps each reference notebook's nbval cells on one worker, in order.
  The longest scopes go first (SLOW_FIRST) and the tests that read the shared grading batch last,
  while the batch is built in the background from the session's start (`shared_batch_in_background`).
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

import pytest

from grader.course import REPO, SOLUTIONS
from grader.extras import EXTRAS, LESSON_EXTRAS
from grader.sandbox.limits import ONE_BLAS_THREAD
from tests.support import GRADED_KERNELS, lesson_of

TIERS = {"unit": "unit", "integration": "kernel", "e2e": "browser"}
# Why a test is in `make test-all` only: marker -> what it does that `make test` already covers once.
EXHAUSTIVE = {
    "more_cases": "one more case of a kind make test checks once (a fixture, cheat, attack or lesson)",
    "same_verdicts": "another route to verdicts make test checks (plain nbgrader, full size, other CPUs, Dask, "
                     "PostgreSQL, an ordinary user)",
    "browser": "drives a real browser (tests/e2e)",
}
# The longest scopes (a module, or a reference notebook's nbval cells), started first so that no
# worker is left with one of them at the end; the scopes that read the shared batch's grades run last.
SLOW_FIRST = [
    "solutions/12-induction-gpt/12-induction-gpt.ipynb",
    "tests/integration/test_hostile.py",
    "tests/e2e/test_hub.py",
    "tests/integration/test_release_drift.py",
    "solutions/05-pytorch-module/05-pytorch-module.ipynb",
    "solutions/09-learning/09-learning.ipynb",
    "solutions/13-cross-attention/13-cross-attention.ipynb",
]
_skipped_by_extra: Counter = Counter()


def pytest_configure(config):
    config.addinivalue_line("markers", "unit: starts no kernel and no browser (tests/unit)")
    config.addinivalue_line("markers", "kernel: starts Jupyter kernels (tests/integration, nbval of solutions/)")
    for name, why in EXHAUSTIVE.items():
        if name != "browser":
            config.addinivalue_line("markers", f"{name}: in make test-all only: {why}")
    config.addinivalue_line("markers", "browser: drives a real browser (tests/e2e); in make test-all only")
    config.addinivalue_line("markers", "exhaustive: in make test-all only (any test with a marker of EXHAUSTIVE)")
    config.addinivalue_line("markers", "extra: needs an optional extra (grader.extras.EXTRAS)")
    config.addinivalue_line("markers", "needs(*extras): the optional extras a test needs, by name")
    config.addinivalue_line("markers", "lesson(id): the lesson a test checks, whose extras it needs "
                                       "(tests.support.lesson_of; a test parametrized with lesson ids needs no mark)")
    if not hasattr(config, "workerinput"):  # once per run, before any xdist worker starts
        _count_kernels(Path(tempfile.mkdtemp(prefix="course-test-kernels-")))
        for name, value in ONE_BLAS_THREAD.items():  # every kernel of the suite, as every grading kernel
            os.environ.setdefault(name, value)


_KERNELS = "kernels.log"  # one line per IPython kernel: the test it started in


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


_counted: list[Path] = []


@pytest.fixture(scope="session")
def shared(tmp_path_factory) -> Path:
    """A folder every xdist worker of this session sees (the session's own folder without xdist)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session", autouse=True)
def shared_batch_in_background(request, shared):
    """Start building the shared course and grading batch beside the first tests, if any test needs them."""
    from tests.integration import shared_batch

    session = request.session
    builder = None
    if shared_batch.needs_shared_batch(session):
        builder = shared_batch.start_in_background(shared, shared_batch.wants_every_case(session),
                                                   shared_batch.lessons_wanted(session))
    yield
    if builder is not None:
        builder.wait()


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
    counts = ", ".join(f"{tier} {tiers[tier]}" for tier in TIERS.values())
    return f"kernels started: {sum(tiers.values())} ({counts}), {sandboxed} of them sandboxed for grading"


def extras_of(item: pytest.Item) -> list[str]:
    lesson = lesson_of(item)
    named = [name for marker in item.iter_markers("needs") for name in marker.args]
    return list(dict.fromkeys([*(LESSON_EXTRAS.get(lesson, ()) if lesson else ()), *named]))


@pytest.hookimpl(tryfirst=True)  # before pytest's own deselection by marker (-m) reads the markers
def pytest_collection_modifyitems(config, items):
    order_scopes(items)
    missing = {name: extra for name, extra in EXTRAS.items() if extra.missing()}
    for item in items:
        if SOLUTIONS in item.path.parents:
            item.add_marker(pytest.mark.kernel)
        elif (REPO / "tests") in item.path.parents:
            tier = item.path.relative_to(REPO / "tests").parts[0]
            if tier in TIERS:
                item.add_marker(getattr(pytest.mark, TIERS[tier]))
        if any(item.get_closest_marker(name) for name in EXHAUSTIVE):
            item.add_marker(pytest.mark.exhaustive)
        needed = extras_of(item)
        if not needed:
            continue
        unknown = [name for name in needed if name not in EXTRAS]
        assert not unknown, f"{item.nodeid}: unknown extras {unknown}; grader.extras.EXTRAS has {sorted(EXTRAS)}"
        item.add_marker(pytest.mark.extra)
        absent = [missing[name] for name in needed if name in missing]
        if absent:
            item.add_marker(pytest.mark.skip(reason="optional extra not installed: " + "; ".join(
                f"{extra.name} (install: `{extra.install}`)" for extra in absent)))


def order_scopes(items: list[pytest.Item]) -> None:
    """Longest scopes first (SLOW_FIRST), those that read the shared batch last, the rest as collected.

    A scope that needs only the shared course (ready seconds after the start) is not held back.

    Scopes stay whole and in their own order (xdist's loadscope runs them in this order with
    --no-loadscope-reorder, the Makefile's setting).
    """
    scopes: dict[str, list[pytest.Item]] = {}
    for item in items:
        scopes.setdefault(item.nodeid.split("::")[0], []).append(item)

    def rank(scope: str) -> tuple[int, int]:
        if scope in SLOW_FIRST:
            return 0, SLOW_FIRST.index(scope)
        reads_batch = any("graded" in getattr(item, "fixturenames", ()) for item in scopes[scope])
        return (2 if reads_batch else 1), 0

    items[:] = [item for scope in sorted(scopes, key=rank) for item in scopes[scope]]


def pytest_runtest_logreport(report):
    if report.skipped and report.when == "setup" and "optional extra not installed" in str(report.longrepr):
        for name in EXTRAS:
            if f"{name} (install:" in str(report.longrepr):
                _skipped_by_extra[name] += 1


def pytest_terminal_summary(terminalreporter):
    if _counted:
        terminalreporter.write_line(_kernel_line())
    if not _skipped_by_extra:
        terminalreporter.write_line("optional extras: all installed, nothing skipped for want of one")
        return
    parts = [f"{name} ({EXTRAS[name].install}): {count} test{'s' * (count != 1)} skipped"
             for name, count in sorted(_skipped_by_extra.items())]
    terminalreporter.write_line("optional extras missing: " + "; ".join(parts))
