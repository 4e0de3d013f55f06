"""Fixtures for every tier: the `lesson` parameter.

A test that takes `lesson` runs once per lesson. Marked `core_lessons(id, ...)`, it runs for the
lessons named under `make test`, and for the others only under `make test-all` (`more_cases`).
"""

from __future__ import annotations

import pytest

from grader.course import lesson_ids


def pytest_configure(config):
    config.addinivalue_line("markers", "core_lessons(*ids): with a `lesson` parameter, the lessons make test runs")


def pytest_generate_tests(metafunc):
    if "lesson" in metafunc.fixturenames:
        core = metafunc.definition.get_closest_marker("core_lessons")
        metafunc.parametrize("lesson", [
            pytest.param(lesson, marks=() if core is None or lesson in core.args else pytest.mark.more_cases)
            for lesson in lesson_ids()])


@pytest.fixture(scope="session")
def distribution(tmp_path_factory):
    """A fresh student distribution of every lesson (`make dist`, every deadline past), built once per test
    process: copy it to change it."""
    from grader.authoring import dist
    from tests.support import every_lesson_closed

    out = tmp_path_factory.mktemp("dist") / "attention-student"
    dist.main(out=out, config=every_lesson_closed())
    return out
