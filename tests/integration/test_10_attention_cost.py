"""Lesson 10's memory checks: the hidden inputs whose score table cannot fit in a graded kernel.

The trusted spec (solutions/10-attention-cost.checks.py) proves that a submission does not build
the whole (Tq, Tk) score table, in the forward (`online_softmax_attention`) or in the backward
(`flash_attention_backward`), by handing it one input whose table is larger than the address space
a graded kernel is given. These tests keep that proof true: the case is larger than the configured
limit, such an array really cannot be allocated under it while a blockwise strip can, and the
references that compute the expected results cheaply (by merging repeated keys) are exact.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from grader.course import nbgrader_config
from grader.trusted import load_spec, wire

LESSON = "10-attention-cost"
pytestmark = pytest.mark.lesson(LESSON)
CHECK = "test_online_softmax_attention"
BACKWARD = "test_flash_attention_backward"


def memory_cases(seeds=range(5), check_id=CHECK):
    check = load_spec(LESSON).checks[check_id]
    return [list(check.cases(np.random.default_rng(seed)))[-1] for seed in seeds]


def full_backward(Q, K, V, dO):
    """Lesson 7's backward of softmax(Q K^T / sqrt(d)) V, with the whole (Tq, Tk) weights."""
    d = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)
    P = np.exp(scores - scores.max(axis=-1, keepdims=True))
    P /= P.sum(axis=-1, keepdims=True)
    dP = dO @ np.swapaxes(V, -1, -2)
    dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))
    return dS @ K / np.sqrt(d), np.swapaxes(dS, -1, -2) @ Q / np.sqrt(d), np.swapaxes(P, -1, -2) @ dO


def configured_limit() -> int:
    limit = nbgrader_config().KernelLimits.memory_limit
    assert limit > 0, "graded kernels have no memory limit: the memory case of Lesson 10 proves nothing"
    return int(limit)


@pytest.mark.parametrize("check_id", [CHECK, BACKWARD])
def test_memory_case_score_table_exceeds_the_kernel_memory_limit(check_id):
    limit = configured_limit()
    for case in memory_cases(check_id=check_id):
        Q, K, V, block = case.args[:3] + case.args[-1:]
        table = Q.shape[-2] * K.shape[-2] * 8  # bytes of the (Tq, Tk) float64 score table
        assert table > limit, f"raise MEMORY_CASE_T: a {Q.shape[-2]} x {K.shape[-2]} table fits in {limit} bytes"
        strip = Q.shape[-2] * block * 8
        assert strip < limit // 40, "a blockwise strip of scores should be small next to the limit"
        payload = sum(a.nbytes for a in case.args[:-1])
        assert payload < 2**21, f"keep the memory case small on the wire ({payload} bytes)"


def test_under_the_limit_the_table_raises_memory_error_and_a_strip_does_not():
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


def test_reference_with_repeated_keys_equals_plain_attention():
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


def test_backward_reference_with_repeated_keys_equals_the_full_backward():
    spec = load_spec(LESSON)
    check = spec.checks[BACKWARD]
    forward = spec.checks[CHECK].reference
    rng = np.random.default_rng(4)
    for lead, Tq, Tk, d, dv, distinct in [((), 700, 3000, 1, 1, 64), ((2, 3), 40, 90, 4, 5, 7), ((), 50, 60, 3, 2, 60)]:
        keys = rng.standard_normal((*lead, distinct, d))
        K = np.take(keys, rng.integers(0, distinct, size=Tk), axis=-2)  # (..., Tk, d), keys repeated
        Q, V = rng.standard_normal((*lead, Tq, d)), rng.standard_normal((*lead, Tk, dv))
        dO = rng.standard_normal((*lead, Tq, dv))
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)
        top = scores.max(axis=-1, keepdims=True)
        L = top + np.log(np.exp(scores - top).sum(axis=-1, keepdims=True))  # (..., Tq, 1)
        saved_out = forward(Q, K, V, 16)
        for got, want in zip(check.reference(Q, K, V, saved_out, L, dO, 16), full_backward(Q, K, V, dO), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)


def test_backward_cases_hand_over_the_forward_output_and_log_sum_exp():
    check = load_spec(LESSON).checks[BACKWARD]
    cases = list(check.cases(np.random.default_rng(5)))
    exact = [c for c in cases if c is not cases[-1]]
    rounded = 0
    for case in exact:
        Q, K, V, saved_out, L, dO, _ = case.args
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        top = scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores - top)
        want_L = top + np.log(weights.sum(axis=-1, keepdims=True))
        want_O = weights / weights.sum(axis=-1, keepdims=True) @ V
        assert L.shape == want_L.shape and saved_out.shape == want_O.shape and dO.shape == saved_out.shape
        if np.allclose(saved_out, want_O, rtol=1e-12, atol=1e-13) and np.allclose(L, want_L, rtol=1e-13):
            continue
        rounded += 1  # the case with O and L as mixed-precision training saves them
        np.testing.assert_array_equal(saved_out, want_O.astype(np.float16).astype(np.float64))
        assert np.allclose(L, want_L, rtol=1e-6) and not np.allclose(saved_out, want_O, rtol=1e-6)
    assert rounded == 1


@pytest.mark.parametrize("check_id", [CHECK, BACKWARD])
def test_memory_case_results_fit_in_the_output_allowed_per_cell(check_id):
    # The kernel sends back each result, and with unchanged_args each argument's digest, as cell output.
    check = load_spec(LESSON).checks[check_id]
    allowed = nbgrader_config().GuardedExecute.output_bytes_per_cell
    for seed in range(3):
        cases = list(check.cases(np.random.default_rng(seed)))
        sent = []
        for case in cases:
            sent += [wire.encode(check.expected(case))]
            sent += [wire.digest(wire.encode(a)) for a in case.args] if check.unchanged_args else []
        size = len(json.dumps(sent))
        assert size < allowed * 0.97, f"{check_id}: {size} bytes of results and arguments; a cell may output {allowed}"
