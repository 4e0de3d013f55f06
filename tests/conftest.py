"""Fixtures for every tier: the `lesson` parameter."""

from __future__ import annotations

from grader.course import lesson_ids


def pytest_generate_tests(metafunc):
    if "lesson" in metafunc.fixturenames:
        metafunc.parametrize("lesson", lesson_ids())
