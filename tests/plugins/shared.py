"""The session's shared folder, and the shared course and grading batch built in it from the session's start.

Every xdist worker sees the same folder (`shared`); the shared course and batch are built there once
for all of them (tests/integration/shared_batch.py), in a process of their own that starts with the
session when any selected test needs them, so that the workers run other tests meanwhile. The
fixtures that hand them to tests are tests/integration/conftest.py's `course` and `graded`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


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
