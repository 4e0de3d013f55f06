"""The order of the run: the longest scopes first, those that read the shared grading batch last.

xdist's `--dist loadscope` keeps each test module, and each reference notebook's nbval cells, on one
worker, in order; with `--no-loadscope-reorder` (the Makefile's setting) it runs the scopes in the
order given here, while the shared batch is built in the background from the session's start
(tests/plugins/shared.py).
"""

from __future__ import annotations

import pytest

# The longest scopes (a module, or a reference notebook's nbval cells), started first so that no
# worker is left with one of them at the end; the scopes that read the shared batch's grades run last.
SLOW_FIRST = [
    "solutions/12-induction-gpt/12-induction-gpt.ipynb",
    "tests/integration/test_hostile.py",
    "tests/e2e/test_hub.py",
    "tests/integration/test_release_drift.py",
    "tests/integration/test_sandbox_limits.py",  # waits for wall-clock backstops: beside the batch, which uses the CPU
    "tests/integration/test_grading_term.py",  # waits for its grading processes: beside the batch too
    "solutions/05-pytorch-module/05-pytorch-module.ipynb",
    "solutions/09-learning/09-learning.ipynb",
    "solutions/13-cross-attention/13-cross-attention.ipynb",
    "solutions/14-long-context/14-long-context.ipynb",
    "solutions/15-latent-and-linear/15-latent-and-linear.ipynb",
    "solutions/16-decoding/16-decoding.ipynb",
]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    order_scopes(items)


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
