"""Trusted hidden tests of Lesson 13 (solutions/13-cross-attention.py): references and fresh inputs.

Each reference is written here from the lesson's equations, independently of the notebook, and
runs in the grading process. Every `cases` generator starts with fixed edge cases and adds random
ones; all values are drawn from `rng`.

- `cross_attention`: T_q != T_k, a padding mask (B, 1, T_k) with a sequence that has no source at
  all (fully masked rows), a causal (T, T) mask on self-attention with large scores, a mask per
  query (B, T_q, T_k), as many sequences as heads (a mask applied without its head axis then
  broadcasts onto the wrong axis), one position and one head.
- `reversal_alignment`: sources of different lengths in tables wider than the longest one, a
  source of one token, several heads.
- `decoder_step`: a decoder whose parameters hold no cross-attention Wk and Wv, with keys and
  values of the source drawn at random (they are no projection of anything the step could see),
  and self-attention caches of 0 or more earlier positions, also drawn at random: only a step that
  reads both as given can match.
"""

import numpy as np

from grader.trusted import Check, Same, call

# --- Exercise 1: cross-attention with a mask ---------------------------------------------------------


def cross_attention(x_q, x_kv, mask, Wq, Wk, Wv, Wo, h):  # also stands in for the student's in decoder_step
    B, T_q, C = x_q.shape
    T_k, hs = x_kv.shape[1], C // h
    Q = (x_q @ Wq).reshape(B, T_q, h, hs).transpose(0, 2, 1, 3)  # (B, h, T_q, hs)
    K = (x_kv @ Wk).reshape(B, T_k, h, hs).transpose(0, 2, 1, 3)  # (B, h, T_k, hs)
    V = (x_kv @ Wv).reshape(B, T_k, h, hs).transpose(0, 2, 1, 3)
    allowed = np.broadcast_to(np.asarray(mask, dtype=bool), (B, T_q, T_k))[:, None]  # (B, 1, T_q, T_k)
    scores = np.einsum("bhqd,bhkd->bhqk", Q, K) / np.sqrt(hs)
    blocked = np.where(allowed, scores, -np.inf)
    any_key = allowed.any(axis=-1, keepdims=True)  # (B, 1, T_q, 1)
    shift = np.where(any_key, blocked.max(axis=-1, keepdims=True), 0.0)  # 0 on a row with no allowed key
    e = np.exp(np.where(allowed, scores - shift, -np.inf))  # blocked: exp(-inf) = 0
    weights = e / np.where(any_key, e.sum(axis=-1, keepdims=True), 1.0)  # rows with no allowed key: 0
    concat = np.einsum("bhqk,bhkd->bqhd", weights, V).reshape(B, T_q, C)
    return concat @ Wo, weights


def _weights(rng, C, scale=1.0):
    return [rng.standard_normal((C, C)) * scale / np.sqrt(C) for _ in range(4)]


def cross_attention_cases(rng):
    # Fixed: T_q = 3 on T_k = 5, a padding mask (B, 1, T_k), sequence 1 has no source; B = h = 2.
    padding = np.array([[True, True, True, False, False], [False] * 5])[:, None, :]
    yield call(rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 5, 6)), padding, *_weights(rng, 6), 2)
    # Self-attention with a causal mask (T, T) and large scores, one head.
    x = rng.standard_normal((2, 4, 4)) * 30
    yield call(x, x.copy(), np.tril(np.ones((4, 4), dtype=bool)), *_weights(rng, 4, 3.0), 1)
    # A mask per query (B, T_q, T_k), T_q > T_k, three heads, one row with no allowed key.
    per_query = rng.random((3, 4, 2)) < 0.6
    per_query[1, 2] = False
    yield call(rng.standard_normal((3, 4, 6)), rng.standard_normal((3, 2, 6)), per_query, *_weights(rng, 6), 3)
    # One position, one key, one head.
    yield call(rng.standard_normal((1, 1, 2)), rng.standard_normal((1, 1, 2)), np.ones((1, 1, 1), dtype=bool),
               *_weights(rng, 2), 1)
    for _ in range(3):
        h = int(rng.integers(1, 4))
        B, T_q, T_k = (int(n) for n in rng.integers(1, 6, size=3))
        lengths = rng.integers(0, T_k + 1, size=B)
        mask = (np.arange(T_k)[None, :] < lengths[:, None])[:, None, :]  # (B, 1, T_k)
        yield call(rng.standard_normal((B, T_q, 2 * h)), rng.standard_normal((B, T_k, 2 * h)), mask,
                   *_weights(rng, 2 * h), h)


# --- Exercise 2: the reversal alignment ---------------------------------------------------------------


def reversal_alignment(weights, lengths):
    total, count = np.zeros(weights.shape[1]), 0
    for b, S in enumerate(np.asarray(lengths)):
        for t in range(int(S)):
            total += weights[b, :, t, int(S) - 1 - t]
            count += 1
    return total / count


def _attention_rows(rng, lengths, h, T_q, T_k):
    """Random weights (B, h, T_q, T_k) whose rows sum to 1 over each source's S + 1 real keys."""
    weights = rng.random((len(lengths), h, T_q, T_k)) ** 3
    weights *= (np.arange(T_k)[None, :] <= np.asarray(lengths)[:, None])[:, None, None, :]
    return weights / weights.sum(axis=-1, keepdims=True)


def reversal_alignment_cases(rng):
    # Fixed: lengths 2 and 5 in a table wider than the longest source (T_k = 8), two heads.
    yield call(_attention_rows(rng, [2, 5], 2, 6, 8), np.array([2, 5]))
    # One source of one token; three sources that all fill the table.
    yield call(_attention_rows(rng, [1], 3, 1, 2), np.array([1]))
    yield call(_attention_rows(rng, [4, 1, 3], 1, 4, 5), np.array([4, 1, 3]))
    for _ in range(3):
        B, h = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        lengths = rng.integers(1, 8, size=B)
        T_q = int(lengths.max() + rng.integers(0, 3))
        yield call(_attention_rows(rng, lengths, h, T_q, T_q + 1 + int(rng.integers(0, 3))), lengths)


# --- Exercise 3: one decoding step that reuses the keys and values of the source ----------------------


def _layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + eps) * gamma + beta


def _attend(q, K, V, allowed):
    """q (B, h, hs) on K, V (B, h, S, hs), allowed (B, S) with a real key in every row: (B, h, hs)."""
    scores = np.einsum("bhd,bhsd->bhs", q, K) / np.sqrt(q.shape[-1])
    scores = np.where(allowed[:, None, :], scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.einsum("bhs,bhsd->bhd", e / e.sum(axis=-1, keepdims=True), V)


def decoder_step(params, tokens, cache, cross_kv, source_valid):
    K_self, V_self = (np.asarray(a, dtype=float) for a in cache)
    K_cross, V_cross = (np.asarray(a, dtype=float) for a in cross_kv)
    B, h, t, hs = K_self.shape
    C = h * hs

    def heads(x, W):  # (B, C) @ (C, C) -> (B, h, hs)
        return (x @ W).reshape(B, h, hs)

    y = params["E"][np.asarray(tokens)] + params["P_dec"][t]  # (B, C)
    a = _layer_norm(y, params["dec.ln1_gamma"], params["dec.ln1_beta"])
    q, k, v = heads(a, params["dec.Wq"]), heads(a, params["dec.Wk"]), heads(a, params["dec.Wv"])
    K_self = np.concatenate([K_self, k[:, :, None]], axis=2)  # (B, h, t + 1, hs)
    V_self = np.concatenate([V_self, v[:, :, None]], axis=2)
    y = y + _attend(q, K_self, V_self, np.ones((B, t + 1), dtype=bool)).reshape(B, C) @ params["dec.Wo"]
    a = _layer_norm(y, params["dec.ln2_gamma"], params["dec.ln2_beta"])
    read = _attend(heads(a, params["dec.cross_Wq"]), K_cross, V_cross, np.asarray(source_valid, dtype=bool))
    y = y + read.reshape(B, C) @ params["dec.cross_Wo"]
    return _layer_norm(y, params["lnf_gamma"], params["lnf_beta"]) @ params["U"], (K_self, V_self)


def _decoder(rng, vocab, t_max, C):
    """The parameters a decoding step gets, all drawn at random: no encoder, no cross-attention Wk or Wv."""
    params = {"E": rng.standard_normal((vocab, C)), "P_dec": rng.standard_normal((t_max, C))}
    for norm in ("dec.ln1", "dec.ln2", "lnf"):
        params[norm + "_gamma"] = 1 + 0.5 * rng.standard_normal(C)
        params[norm + "_beta"] = 0.5 * rng.standard_normal(C)
    for name in ("dec.Wq", "dec.Wk", "dec.Wv", "dec.Wo", "dec.cross_Wq", "dec.cross_Wo"):
        params[name] = rng.standard_normal((C, C)) / np.sqrt(C)
    params["U"] = rng.standard_normal((C, vocab)) / np.sqrt(C)
    return params


def _step_call(rng, B, h, hs, t, S, vocab=7, valid=None):
    params = _decoder(rng, vocab, t + 1 + int(rng.integers(0, 3)), h * hs)
    cache = (rng.standard_normal((B, h, t, hs)), rng.standard_normal((B, h, t, hs)))
    cross_kv = (rng.standard_normal((B, h, S, hs)) * 2, rng.standard_normal((B, h, S, hs)))
    if valid is None:
        lengths = rng.integers(1, S + 1, size=B)  # at least one real source position per sequence
        valid = np.arange(S)[None, :] < lengths[:, None]
    return call(params, rng.integers(0, vocab, size=B), cache, cross_kv, valid)


def decoder_step_cases(rng):
    # Fixed: the first step (empty cache), two sequences, two heads, the second source padded.
    yield _step_call(rng, 2, 2, 3, 0, 5, valid=np.array([[True] * 5, [True, True, False, False, False]]))
    # A later step: 3 cached positions, one sequence, one head, a source of one position.
    yield _step_call(rng, 1, 1, 4, 3, 1)
    # Three heads, three sequences, one cached position, padded sources.
    yield _step_call(rng, 3, 3, 2, 1, 4, valid=np.array([[True, False, False, False], [True] * 4,
                                                          [True, True, True, False]]))
    for _ in range(2):
        yield _step_call(rng, int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4)),
                         int(rng.integers(0, 5)), int(rng.integers(1, 7)))


CHECKS = {
    "test_cross_attention": Check("cross_attention", cross_attention, cross_attention_cases, unchanged_args=True,
                                  strict_floats=True, compare=Same(rtol=1e-6, atol=1e-9)),
    "test_reversal_alignment": Check("reversal_alignment", reversal_alignment, reversal_alignment_cases,
                                     unchanged_args=True, compare=Same(array_like=True)),
    "test_decoder_step": Check("decoder_step", decoder_step, decoder_step_cases, unchanged_args=True,
                               compare=Same(rtol=1e-6, atol=1e-9, array_like=True),
                               replace_globals={"cross_attention": cross_attention}),
}
