"""Lesson 10's memory check: the hidden input whose score table cannot fit in a graded kernel.

The trusted spec (grader/trusted/specs/10-attention-cost.py) proves that a submission does not build
the whole (Tq, Tk) score table by handing it one input whose table is larger than the address space
a graded kernel is given. These tests keep that proof true: the case is larger than the configured
limit, such an array really cannot be allocated under it while a blockwise strip can, and the
reference that computes the expected output cheaply (by merging repeated keys) is exact.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from grader.course import nbgrader_config
from grader.trusted import load_spec

LESSON = "10-attention-cost"
CHECK = "test_online_softmax_attention"


def memory_cases(seeds=range(5)):
    check = load_spec(LESSON).checks[CHECK]
    return [list(check.cases(np.random.default_rng(seed)))[-1] for seed in seeds]


def configured_limit() -> int:
    limit = nbgrader_config().GuardedExecute.memory_limit
    assert limit > 0, "graded kernels have no memory limit: the memory case of Lesson 10 proves nothing"
    return int(limit)


@pytest.mark.parametrize("lesson_name", [LESSON])
def test_memory_case_score_table_exceeds_the_kernel_memory_limit(lesson_name):
    limit = configured_limit()
    for case in memory_cases():
        Q, K, V, block = case.args
        table = Q.shape[-2] * K.shape[-2] * 8  # bytes of the (Tq, Tk) float64 score table
        assert table > limit, f"raise MEMORY_CASE_T: a {Q.shape[-2]} x {K.shape[-2]} table fits in {limit} bytes"
        strip = Q.shape[-2] * block * 8
        assert strip < limit // 40, "a blockwise strip of scores should be small next to the limit"
        payload = sum(a.nbytes for a in (Q, K, V))
        assert payload < 2**20, f"keep the memory case small on the wire ({payload} bytes)"


@pytest.mark.parametrize("lesson_name", [LESSON])
def test_under_the_limit_the_table_raises_memory_error_and_a_strip_does_not(lesson_name):
    (case,) = memory_cases([0])
    Q, K, _, block = case.args
    Tq, Tk = Q.shape[-2], K.shape[-2]
    script = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({configured_limit()}, {configured_limit()}))\n"
        "import numpy as np\n"
        f"strip = np.ones(({Tq}, {block}))\n"
        "try:\n"
        f"    np.ones(({Tq}, {Tk}))\n"
        "except MemoryError:\n"
        "    print('MemoryError')\n"
        "else:\n"
        "    print('allocated')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "MemoryError"


@pytest.mark.parametrize("lesson_name", [LESSON])
def test_reference_with_repeated_keys_equals_plain_attention(lesson_name):
    check = load_spec(LESSON).checks[CHECK]
    rng = np.random.default_rng(3)
    for lead, Tq, Tk, d, dv, distinct in [((), 700, 3000, 1, 1, 64), ((2, 3), 40, 90, 4, 5, 7), ((), 50, 60, 3, 2, 60)]:
        keys = rng.standard_normal((*lead, distinct, d))
        K = np.take(keys, rng.integers(0, distinct, size=Tk), axis=-2)  # (..., Tk, d), keys repeated
        Q, V = rng.standard_normal((*lead, Tq, d)), rng.standard_normal((*lead, Tk, dv))
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        expected = weights / weights.sum(axis=-1, keepdims=True) @ V
        np.testing.assert_allclose(check.reference(Q, K, V, 16), expected, rtol=1e-12, atol=1e-13)
