"""Tiers and suites: the markers that say what a test starts, and which tests only `make test-all` runs.

- Tiers: a test under tests/unit or tests/policy starts no kernel (marker `unit`); tests/integration
  and the nbval cells of solutions/ start kernels (`kernel`); tests/e2e drives a browser (`browser`).
- Suites: `make test` runs every test but the exhaustive ones, `make test-all` runs them all. A test
  is exhaustive when it carries a marker that says why (EXHAUSTIVE): it checks one more case of a
  kind that `make test` already checks once, it proves that another route reaches the same verdicts,
  or it drives a real browser. Such tests get the marker `exhaustive` here, which `make test` deselects.
"""

from __future__ import annotations

import pytest

from grader.course import ROOT, SOLUTIONS

# The folder of tests/ a test is in -> its tier's marker.
TIERS = {"unit": "unit", "policy": "unit", "integration": "kernel", "e2e": "browser"}
# Why a test is in `make test-all` only: marker -> what it does that `make test` already covers once.
EXHAUSTIVE = {
    "more_cases": "one more case of a kind make test checks once (a fixture, cheat, attack or lesson)",
    "same_verdicts": "another route to verdicts make test checks (plain nbgrader, full size, other CPUs, Dask, "
                     "PostgreSQL, an ordinary user)",
    "browser": "drives a real browser (tests/e2e)",
    "full_size": "re-executes at full size a reference notebook that takes more than 15 s of CPU, most of it "
                 "training models (FULL_SIZE); make test runs every one of its cells at grading size in the shared "
                 "batch (tests/integration/test_round_trip.py)",
}
# The reference notebooks whose full-size nbval is in make test-all only: each takes more than 15 s of CPU alone
# (nbval, 2026-12-08), most of it in training runs that grading shortens (lesson_helpers.demo_size): Lesson 9 16
# seeds (19 s), Lesson 12 a base rate over six runs and six one-layer controls (94 s), Lesson 13 a base rate over
# 20 runs, Lesson 14 five position schemes (17 s), Lesson 15 33 recall models (20 s), Lesson 16 its
# encoder-decoder and its sampling, beam and speculative runs (15 s). Lesson 2, the next, takes 12 s.
FULL_SIZE = ("09-learning", "12-induction-gpt", "13-cross-attention", "14-long-context", "15-latent-and-linear",
             "16-decoding")


def pytest_configure(config):
    config.addinivalue_line("markers", "unit: starts no kernel and no browser (tests/unit, tests/policy)")
    config.addinivalue_line("markers", "kernel: starts Jupyter kernels (tests/integration, nbval of solutions/)")
    for name, why in EXHAUSTIVE.items():
        if name != "browser":
            config.addinivalue_line("markers", f"{name}: in make test-all only: {why}")
    config.addinivalue_line("markers", "browser: drives a real browser (tests/e2e); in make test-all only")
    config.addinivalue_line("markers", "exhaustive: in make test-all only (any test with a marker of EXHAUSTIVE)")


@pytest.hookimpl(tryfirst=True)  # before pytest's own deselection by marker (-m) reads the markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        if SOLUTIONS in item.path.parents:
            item.add_marker(pytest.mark.kernel)
            if item.path.parent.name in FULL_SIZE:
                item.add_marker(pytest.mark.full_size)
        elif (ROOT / "tests") in item.path.parents:
            tier = item.path.relative_to(ROOT / "tests").parts[0]
            if tier in TIERS:
                item.add_marker(getattr(pytest.mark, TIERS[tier]))
        if any(item.get_closest_marker(name) for name in EXHAUSTIVE):
            item.add_marker(pytest.mark.exhaustive)
