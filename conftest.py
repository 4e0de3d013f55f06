"""Repository-wide pytest hooks, for every path pytest is pointed at (tests/ and solutions/ alike).

Each job is a plugin of its own in tests/plugins/, loaded here (pytest reads `pytest_plugins` only
from this, the root conftest):

- tests/plugins/tiers.py: the tier markers (`unit`, `kernel`, `browser`) and the suites: which tests
  are `exhaustive` (in `make test-all` only) and why (EXHAUSTIVE);
- tests/plugins/extras.py: a test that needs a missing optional extra is skipped, and the run counts them;
- tests/plugins/kernels.py: every kernel of the suite runs with one BLAS thread, and is counted;
- tests/plugins/ordering.py: the longest scopes first (SLOW_FIRST), those that read the shared batch last;
- tests/plugins/shared.py: the folder every xdist worker shares, and the shared course and grading
  batch built in it from the session's start.

Fixtures of one tier stay in its conftest.py: tests/conftest.py (the `lesson` parameter, a built
distribution), tests/unit/conftest.py (a fresh gradebook), tests/integration/conftest.py (the shared
course and batch).
"""

pytest_plugins = [
    "tests.plugins.tiers",
    "tests.plugins.extras",
    "tests.plugins.kernels",
    "tests.plugins.ordering",
    "tests.plugins.shared",
]
