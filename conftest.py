"""Repository-wide pytest hooks, for every path pytest is pointed at (tests/ and solutions/ alike).

A lesson that needs an optional extra (`OPTIONAL_REQUIREMENTS` in grader/course.py) has all of
its tests skipped, with the install command as the reason, where that extra is not installed:
the nbval cells of its reference notebook and every test parametrized with its id. They are
never silently passed. tests/conftest.py holds the fixtures; this hook lives here so that it
also applies to `pytest solutions/<id>`, which does not load tests/conftest.py.
"""

from __future__ import annotations

import pytest

from grader.course import SOLUTIONS, lesson_ids, missing_requirements


def lesson_of(item: pytest.Item) -> str | None:
    """The lesson a test item checks: an nbval cell of solutions/<id>/, or a test parametrized with it.

    Any parameter whose value is a lesson id counts, whatever its name (`lesson`, `spec_lesson`,
    `cheat_lesson`, ...), so that a new parametrized test cannot forget the optional extras.
    """
    if SOLUTIONS in item.path.parents:
        return item.path.relative_to(SOLUTIONS).parts[0]
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec else {}
    known = lesson_ids()
    return next((value for value in params.values() if isinstance(value, str) and value in known), None)


def pytest_collection_modifyitems(config, items):
    for item in items:
        lesson = lesson_of(item)
        missing = missing_requirements(lesson) if lesson else {}
        if missing:
            install = " and ".join(sorted(set(missing.values())))
            item.add_marker(pytest.mark.skip(
                reason=f"optional extra: run `{install}` ({lesson} needs {', '.join(missing)}, not installed)"))
