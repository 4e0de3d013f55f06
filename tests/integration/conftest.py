"""The kernel tier's shared fixtures: one temporary course, and one parallel grading batch.

`graded` grades fixture submissions (tests/fixtures/<lesson>/submissions.toml) and cheats
(tests/fixtures/cheats/<lesson>.toml) of every lesson in one batch: under `make test` each lesson's
core fixtures (the reference, one common mistake, one cheat, and one lesson's untouched release:
tests.support.core_variants), and all of them
when the session runs any exhaustive test (`make test-all`). It grades with the course's own grader
(grader.grading.running.supervisor, one more at a time than there are cores), once per test session; the
round trip and the cheat suite both read it. Both are built once for all xdist workers, usually in
the background while the first tests run (tests/integration/shared_batch.py).
"""

from __future__ import annotations

import pytest

from tests.integration.shared_batch import Graded, lessons_wanted, shared_batch, shared_course, wants_every_case
from tests.support import Course


@pytest.fixture(scope="session")
def course(shared) -> Course:
    """Every lesson released from the committed solutions/ into a temporary course."""
    return shared_course(shared)


@pytest.fixture(scope="session")
def graded(request, course, shared) -> Graded:
    """The shared batch, graded (tests.integration.shared_batch.batch_submissions says which submissions)."""
    return shared_batch(shared, wants_every_case(request.session), lessons_wanted(request.session))
