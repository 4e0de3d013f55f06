"""Trusted hidden tests of Lesson 6 (solutions/06-causal-masks.py): references and fresh inputs.

Each reference is written here from the lesson's equations, independently of the notebook: the
grader runs it in its own process, so it must not import anything a submission could have
changed. Every `cases` generator starts with fixed edge cases (one position, no batch axes, query
and key lengths that differ, fully masked rows, every row masked, an empty cache, head size 1,
scores in the thousands) and adds random shapes; all values are drawn from `rng`, which is seeded
afresh for every grading run.

The course's convention: a mask is boolean, True where attention is allowed, and a query row that
allows no key gets weights 0 and output 0 (never NaN, never uniform weights).
"""

import numpy as np

from grader.trusted import Check, Same, call
from grader.trusted.wire import Raised


def causal_mask(T):
    return np.tril(np.ones((T, T), dtype=bool))  # (T, T): True where key s <= query t


def causal_mask_cases(rng):
    for T in (1, 2, 3, 7, 10):  # 7 and 10 are longer than the lesson's sequences
        yield call(T)
    for T in rng.integers(1, 13, size=3):
        yield call(int(T))


def masked_attention(Q, K, V, mask):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    allowed = np.broadcast_to(mask, scores.shape)
    has_key = allowed.any(axis=-1, keepdims=True)  # (..., T_q, 1): does the row allow any key?
    filled = np.where(allowed, scores, -np.inf)
    row_max = np.where(has_key, filled, 0.0).max(axis=-1, keepdims=True)  # the allowed maximum; 0 if none
    e = np.exp(filled - row_max)  # blocked entries: exp(-inf) = 0
    weights = e / np.where(has_key, e.sum(axis=-1, keepdims=True), 1.0)  # a fully masked row stays 0
    return weights @ V, weights  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)


def _left_padded_causal(lengths, T):
    """(B, 1, T, T): causal & key padding, sequences padded on the left (filler queries see nothing)."""
    real = np.arange(T)[None, :] >= (T - np.asarray(lengths))[:, None]  # (B, T)
    return np.tril(np.ones((T, T), dtype=bool))[None, None] & real[:, None, None, :]


def masked_attention_cases(rng):
    def qkv(lead, T_q, T_k, d_k, d_v, scale=1.0):
        return (rng.standard_normal((*lead, T_q, d_k)) * scale, rng.standard_normal((*lead, T_k, d_k)) * scale,
                rng.standard_normal((*lead, T_k, d_v)))

    yield call(*qkv((), 1, 1, 3, 2), np.ones((1, 1), dtype=bool))  # one query, one key
    yield call(*qkv((), 5, 5, 4, 3), causal_mask(5))  # no batch axes
    yield call(*qkv((2, 3), 6, 6, 4, 4), causal_mask(6))  # (T, T) mask broadcast over (B, h)
    yield call(*qkv((3, 2), 5, 5, 4, 6), _left_padded_causal([5, 3, 1], 5))  # (B, 1, T, T), fully masked rows
    key_real = np.array([[True] * 7, [True, True, False, False, False, False, False], [False] * 7])
    yield call(*qkv((3, 2), 3, 7, 4, 5), key_real[:, None, None, :])  # (B, 1, 1, T_k), T_q != T_k, one batch all filler
    yield call(*qkv((2,), 4, 4, 3, 3), np.zeros((4, 4), dtype=bool))  # every row fully masked
    yield call(*qkv((2, 2), 6, 6, 8, 3, scale=30.0), causal_mask(6))  # scores in the thousands
    yield call(*qkv((), 4, 6, 1, 2, scale=30.0), rng.random((4, 6)) < 0.5)  # d_k = 1, a random mask
    # Blocked (future) keys scoring far above every allowed one: a softmax taken before masking underflows.
    Q, K, V = qkv((2,), 4, 4, 3, 2)
    K[:, 1:, 0] += rng.uniform(1500.0, 2500.0, size=(2, 3)) * np.sign(Q[:, :1, 0])
    yield call(Q, K, V, causal_mask(4))
    for _ in range(3):
        lead = tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, 3))))
        T_q, T_k, d_k, d_v = (int(n) for n in rng.integers(1, 7, size=4))
        mask_shape = tuple(1 if rng.random() < 0.5 else n for n in (*lead, T_q, T_k))  # size-1 axes broadcast
        mask_shape = mask_shape[int(rng.integers(0, len(lead) + 1)):]  # and leading axes may be left out
        yield call(*qkv(lead, T_q, T_k, d_k, d_v, scale=float(rng.uniform(0.5, 5.0))), rng.random(mask_shape) < 0.6)


FLOAT_RULE = {  # what a call that broke Exercise 2's floating-point rule is told
    "FloatingPointError": "raised FloatingPointError: a floating-point warning (such as -inf - (-inf) on a fully "
                          "masked row), or a change of NumPy's floating-point settings, which the exercise forbids",
    "PermissionError": "raised PermissionError: the function changed NumPy's floating-point settings (np.errstate, "
                       "np.seterr or np.seterrcall), which the exercise forbids",
}


def masked_attention_compare(expected, got):
    if isinstance(got, Raised) and got.name in FLOAT_RULE:
        return FLOAT_RULE[got.name]
    return Same()(expected, got)


def decode_step(K_cache, V_cache, q_t, k_t, v_t):
    # Row t of the full causal pass over positions 0..t: the causal mask lets query t see every key
    # s <= t, which is every key of the grown cache, so no mask is left to apply.
    K_new = np.concatenate([K_cache, k_t], axis=-2)  # (..., t, d_k) + (..., 1, d_k) -> (..., t+1, d_k)
    V_new = np.concatenate([V_cache, v_t], axis=-2)  # (..., t+1, d_v)
    scores = q_t @ np.swapaxes(K_new, -1, -2) / np.sqrt(q_t.shape[-1])  # (..., 1, t+1)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return K_new, V_new, (e / e.sum(axis=-1, keepdims=True)) @ V_new  # (..., 1, d_v)


def decode_step_cases(rng):
    configs = [((), 0, 3, 2, 1.0), ((2,), 1, 1, 1, 1.0), ((2, 3), 5, 4, 6, 1.0), ((1, 1), 0, 8, 8, 1.0),
               ((3,), 4, 5, 2, 30.0)]  # (leading axes, cached positions t, d_k, d_v, scale); the last: large scores
    for _ in range(3):
        lead = tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, 3))))
        configs.append((lead, int(rng.integers(0, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 9)), 1.0))
    for lead, t, d_k, d_v, scale in configs:
        yield call(rng.standard_normal((*lead, t, d_k)) * scale, rng.standard_normal((*lead, t, d_v)),
                   rng.standard_normal((*lead, 1, d_k)) * scale, rng.standard_normal((*lead, 1, d_k)) * scale,
                   rng.standard_normal((*lead, 1, d_v)))


CHECKS = {
    "test_causal_mask": Check("causal_mask", causal_mask, causal_mask_cases),
    "test_masked_attention": Check("masked_attention", masked_attention, masked_attention_cases,
                                   unchanged_args=True, strict_floats=True, compare=masked_attention_compare),
    "test_decode_step": Check("decode_step", decode_step, decode_step_cases, unchanged_args=True),
}
