"""Trusted hidden tests of Lesson 13 (solutions/13-cross-attention.py): references and fresh inputs.

Each reference is written here from the lesson's equations, independently of the notebook, and
runs in the grading process. Every `cases` generator starts with fixed edge cases and adds random
ones; all values are drawn from `rng`.

- `cross_attention`: T_q != T_k, a padding mask (B, 1, T_k) with a sequence that has no source at
  all (fully masked rows), a causal (T, T) mask on self-attention with large scores, a mask per
  query (B, T_q, T_k), as many sequences as heads (a mask applied without its head axis then
  broadcasts onto the wrong axis), one position and one head.
- `decoder_block`: LayerNorm weights drawn at random, T != S both ways, padded sources (a source
  of one real position among them), one to three heads; the student's `cross_attention` is
  replaced by this file's, so that only the block's wiring is graded here.
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


# --- Exercise 2: the decoder block ----------------------------------------------------------------------


def _layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + eps) * gamma + beta


def decoder_block(params, y, memory, source_mask, h):
    T = y.shape[1]
    b1 = _layer_norm(y, params["dec.ln1_gamma"], params["dec.ln1_beta"])
    out, self_weights = cross_attention(b1, b1, np.tril(np.ones((T, T), dtype=bool)),
                                        *(params["dec." + n] for n in ("Wq", "Wk", "Wv", "Wo")), h)
    y1 = y + out
    b2 = _layer_norm(y1, params["dec.ln2_gamma"], params["dec.ln2_beta"])
    out, cross_weights = cross_attention(b2, memory, source_mask,
                                         *(params["dec.cross_" + n] for n in ("Wq", "Wk", "Wv", "Wo")), h)
    return y1 + out, {"b1": b1, "self_weights": self_weights, "y1": y1, "b2": b2, "cross_weights": cross_weights}


def _block(rng, C):
    """A decoder block's parameters, LayerNorms included, all drawn at random."""
    params = {}
    for norm in ("dec.ln1", "dec.ln2"):
        params[norm + "_gamma"] = 1 + 0.5 * rng.standard_normal(C)
        params[norm + "_beta"] = 0.5 * rng.standard_normal(C)
    for prefix in ("dec.", "dec.cross_"):
        for name in ("Wq", "Wk", "Wv", "Wo"):
            params[prefix + name] = rng.standard_normal((C, C)) / np.sqrt(C)
    return params


def _block_call(rng, B, T, S, h, hs, real=None):
    C = h * hs
    if real is None:
        real = rng.integers(1, S + 1, size=B)  # at least one real source position (its EOS) per sequence
    source_mask = (np.arange(S)[None, :] < np.asarray(real)[:, None])[:, None, :]  # (B, 1, S)
    return call(_block(rng, C), rng.standard_normal((B, T, C)), rng.standard_normal((B, S, C)) * 2, source_mask, h)


def decoder_block_cases(rng):
    # Fixed: T = 3 queries on S = 5 source positions, the second source padded after 2; two heads.
    yield _block_call(rng, 2, 3, 5, 2, 3, real=[5, 2])
    # One decoder position, one head, a source of one position; and T > S with three heads.
    yield _block_call(rng, 1, 1, 1, 1, 4)
    yield _block_call(rng, 3, 6, 2, 3, 2, real=[2, 1, 2])
    for _ in range(2):
        yield _block_call(rng, int(rng.integers(1, 4)), int(rng.integers(1, 7)), int(rng.integers(1, 7)),
                          int(rng.integers(1, 4)), int(rng.integers(1, 4)))


# --- Exercise 3: one decoding step that reuses the keys and values of the source ----------------------


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
    "test_decoder_block": Check("decoder_block", decoder_block, decoder_block_cases, unchanged_args=True,
                                compare=Same(rtol=1e-6, atol=1e-9), replace_globals={"cross_attention": cross_attention}),
    "test_decoder_step": Check("decoder_step", decoder_step, decoder_step_cases, unchanged_args=True,
                               compare=Same(rtol=1e-6, atol=1e-9, array_like=True),
                               replace_globals={"cross_attention": cross_attention}),
}
