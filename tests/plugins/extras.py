"""Optional extras (grader.extras.EXTRAS): a test that needs a missing one is skipped, and the run says so.

A test that needs an extra is marked `extra` and, where the extra is missing, skipped with its name
and install command; the run ends with one line that counts the skips per missing extra. A lesson's
tests need the extras of grader.extras.LESSON_EXTRAS (its nbval cells, and every test parametrized
with its id or marked `lesson(id)`); any other test asks with `@pytest.mark.needs("playwright", "chromium")`.
"""

from __future__ import annotations

from collections import Counter

import pytest

from grader.extras import EXTRAS, LESSON_EXTRAS
from tests.support import lesson_of

_skipped_by_extra: Counter = Counter()


def pytest_configure(config):
    config.addinivalue_line("markers", "extra: needs an optional extra (grader.extras.EXTRAS)")
    config.addinivalue_line("markers", "needs(*extras): the optional extras a test needs, by name")
    config.addinivalue_line("markers", "lesson(id): the lesson a test checks, whose extras it needs "
                                       "(tests.support.lesson_of; a test parametrized with lesson ids needs no mark)")


def extras_of(item: pytest.Item) -> list[str]:
    lesson = lesson_of(item)
    named = [name for marker in item.iter_markers("needs") for name in marker.args]
    return list(dict.fromkeys([*(LESSON_EXTRAS.get(lesson, ()) if lesson else ()), *named]))


@pytest.hookimpl(tryfirst=True)  # before pytest's own deselection by marker (-m) reads the markers
def pytest_collection_modifyitems(config, items):
    missing = {name: extra for name, extra in EXTRAS.items() if extra.missing()}
    for item in items:
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


def pytest_runtest_logreport(report):
    if report.skipped and report.when == "setup" and "optional extra not installed" in str(report.longrepr):
        for name in EXTRAS:
            if f"{name} (install:" in str(report.longrepr):
                _skipped_by_extra[name] += 1


@pytest.hookimpl(trylast=True)  # after the kernels' line (tests/plugins/kernels.py)
def pytest_terminal_summary(terminalreporter):
    if not _skipped_by_extra:
        terminalreporter.write_line("optional extras: all installed, nothing skipped for want of one")
        return
    parts = [f"{name} ({EXTRAS[name].install}): {count} test{'s' * (count != 1)} skipped"
             for name, count in sorted(_skipped_by_extra.items())]
    terminalreporter.write_line("optional extras missing: " + "; ".join(parts))
