"""Fixtures for every tier: the `lesson` parameter, and a registry of kernel templates of a test's own."""

from __future__ import annotations

from unittest import mock

import pytest

from grader.course import lesson_ids
from grader.sandbox import template


def pytest_generate_tests(metafunc):
    if "lesson" in metafunc.fixturenames:
        metafunc.parametrize("lesson", lesson_ids())


@pytest.fixture
def own_templates():
    """An empty template registry for this test (templates earlier tests left running are set aside).

    Yields the registry; the templates started in it are stopped afterwards.
    """
    with mock.patch.dict(template._templates, clear=True):
        yield template._templates
        for started in list(template._templates.values()):
            started.stop()
