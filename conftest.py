"""Repository-wide pytest hooks, for every path pytest is pointed at (tests/ and solutions/ alike).

A lesson that needs an optional extra (`OPTIONAL_REQUIREMENTS` in grader/course.py) has all of
its tests skipped, with the install command as the reason, where that extra is not installed:
the nbval cells of its reference notebook and every test parametrized with its id. They are
never silently passed. tests/conftest.py holds the fixtures; this hook lives here so that it
also applies to `pytest solutions/<id>`, which does not load tests/conftest.py.
"""

from __future__ import annotations

import pytest

from grader.course import SOLUTIONS, missing_requirements


def lesson_of(item: pytest.Item) -> str | None:
    """The lesson a test item checks: an nbval cell of solutions/<id>/, or a test parametrized with it."""
    if SOLUTIONS in item.path.parents:
        return item.path.relative_to(SOLUTIONS).parts[0]
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec else {}
    lesson = params.get("lesson") or params.get("lesson_id")
    return lesson if isinstance(lesson, str) else None


def pytest_collection_modifyitems(config, items):
    for item in items:
        lesson = lesson_of(item)
        missing = missing_requirements(lesson) if lesson else {}
        if missing:
            install = " and ".join(sorted(set(missing.values())))
            item.add_marker(pytest.mark.skip(
                reason=f"optional extra: run `{install}` ({lesson} needs {', '.join(missing)}, not installed)"))
