"""Trusted hidden tests of Lesson 15 (solutions/15-latent-and-linear.py): references and fresh inputs.

Each reference is written here from the equations, independently of the notebook: the grader runs
it in its own process, so it must not import anything a submission could have changed. Every
`cases` generator starts with fixed edge cases and adds random ones; all values are drawn from
`rng`, which is seeded afresh for every grading run.

Two exercises are about what is never built, and both are checked the way Lesson 10's checks
(solutions/10-attention-cost.checks.py) check "no (T, T) table": by a case whose forbidden array
cannot exist in a graded kernel, whose address space is limited to 4 GiB
(`KernelLimits.memory_limit` in grader/nbgrader_config.py). Allocating it raises MemoryError in the
kernel, which the harness reports as a raised call, so the case fails whatever the kernel prints.

- `mla_decode_absorbed`: the last case has a cache of at least MLA_CACHE_T = 60,000 latents of width
  2 and two heads of size MLA_HEAD_SIZE = 9,600. One head's keys, (T, hs) float64, are more than
  4.6e9 bytes; the latents are under 1 MB and the absorbed form needs a few MB. A float32 key table
  (2.3 GB) would fit, but carries seven digits against the comparison's rtol of 1e-8. The expected
  output is computed here in the absorbed form, so the reference itself never forms keys.
- `causal_linear_attention`: the last case has at least LINEAR_T = 23,200 positions with d = dv = 1.
  Its (T, T) table of similarities alone is more than 4.3e9 bytes. The reference computes the
  recurrence as cumulative sums, (T, d, dv) numbers. Comparisons are tight (rtol 1e-9).

The functions that the notebook gives and the exercises call (`softmax`, `phi`) are sent to the
kernel through `replace_globals`, so a submission that edited a given cell is graded on the true one.
"""

import numpy as np

from grader.trusted import Check, Same, call

MLA_CACHE_T = 60_000  # cached latents of the memory case: one head's keys need T * hs * 8 bytes
MLA_HEAD_SIZE = 9_600  # 60_000 * 9_600 * 8 = 4.6e9 bytes > 4 GiB
LINEAR_T = 23_200  # positions of the linear memory case: 8 * 23_200**2 bytes > 4 GiB


def softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def phi(x):
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def _weights(rng, C, n_heads, hs, d_c):
    H = n_heads * hs
    return (rng.standard_normal((C, H)) / np.sqrt(C), rng.standard_normal((C, d_c)) / np.sqrt(C),
            rng.standard_normal((d_c, H)) / np.sqrt(d_c), rng.standard_normal((d_c, H)) / np.sqrt(d_c),
            rng.standard_normal((H, C)) / np.sqrt(H))


def absorbed_matrices(W_q, W_uk, W_uv, W_o, n_heads):
    C, H = W_q.shape
    d_c, hs = W_uk.shape[0], H // n_heads
    W_qk = np.einsum("chs,dhs->hcd", W_q.reshape(C, n_heads, hs), W_uk.reshape(d_c, n_heads, hs))
    W_vo = np.einsum("dhs,hsc->hdc", W_uv.reshape(d_c, n_heads, hs), W_o.reshape(n_heads, hs, C))
    return W_qk, W_vo


def absorbed_matrices_cases(rng):
    # (C, n_heads, hs, d_c); d_c > 1 and hs > 1 in the first cases, so a reshape that should be a
    # transpose scrambles the result.
    shapes = [(8, 2, 3, 5), (6, 1, 4, 3), (12, 4, 1, 2), (5, 3, 2, 7), (9, 3, 3, 3)]
    shapes += [tuple(int(n) for n in rng.integers(1, 9, size=4)) for _ in range(3)]
    for C, n_heads, hs, d_c in shapes:
        W_q, _, W_uk, W_uv, W_o = _weights(rng, C, n_heads, hs, d_c)
        yield call(W_q, W_uk, W_uv, W_o, n_heads)


def mla_decode_absorbed(x, c_cache, W_q, W_dkv, W_uk, W_uv, W_o, n_heads):
    # The absorbed form, computed independently: fold W_uk^T into the query, average the latents,
    # then up-project the average and apply W_o.
    C, H = W_q.shape
    d_c, hs = W_dkv.shape[1], H // n_heads
    cache = np.concatenate([np.asarray(c_cache, dtype=np.float64).reshape(-1, d_c), (x @ W_dkv)[None]], axis=0)
    q_lat = np.einsum("hs,dhs->hd", (x @ W_q).reshape(n_heads, hs), W_uk.reshape(d_c, n_heads, hs))  # (h, d_c)
    weights = softmax(q_lat @ cache.T / np.sqrt(hs), axis=-1)  # (h, T + 1)
    mixed = weights @ cache  # (h, d_c)
    heads = np.einsum("hd,dhs->hs", mixed, W_uv.reshape(d_c, n_heads, hs))  # (h, hs)
    return heads.reshape(H) @ W_o, cache


def mla_decode_absorbed_cases(rng):
    # (T cached, C, n_heads, hs, d_c)
    shapes = [(0, 6, 2, 3, 4), (1, 5, 1, 4, 2), (7, 8, 4, 2, 3), (5, 4, 3, 5, 6), (12, 10, 2, 4, 1)]
    shapes += [(int(rng.integers(0, 20)), *(int(n) for n in rng.integers(1, 9, size=4))) for _ in range(3)]
    for T, C, n_heads, hs, d_c in shapes:
        W = _weights(rng, C, n_heads, hs, d_c)
        yield call(rng.standard_normal(C), rng.standard_normal((T, d_c)), *W, n_heads)
    # Scores in the hundreds: the softmax must subtract its max.
    W = _weights(rng, 6, 2, 3, 4)
    yield call(rng.standard_normal(6) * 40.0, rng.standard_normal((9, 4)) * 40.0, *W, 2)
    # The memory case: forming one head's keys or values cannot fit (see the module docstring).
    T = int(rng.integers(MLA_CACHE_T, MLA_CACHE_T + 100))
    W = _weights(rng, 2, 2, MLA_HEAD_SIZE, 2)
    yield call(rng.standard_normal(2), rng.standard_normal((T, 2)), *W, 2)


def causal_linear_attention(Q, K, V):
    fQ, fK = phi(np.asarray(Q, dtype=np.float64)), phi(np.asarray(K, dtype=np.float64))
    V = np.asarray(V, dtype=np.float64)
    S = np.cumsum(fK[..., :, :, None] * V[..., :, None, :], axis=-3)  # (..., T, d, dv): S_t for every t
    z = np.cumsum(fK, axis=-2)  # (..., T, d)
    return np.einsum("...td,...tde->...te", fQ, S) / (fQ * z).sum(axis=-1, keepdims=True)


def causal_linear_attention_cases(rng):
    def normal(*shape):
        return rng.standard_normal(shape)

    yield call(normal(1, 3), normal(1, 3), normal(1, 2))  # one position: the output is v_0
    yield call(normal(6, 4), normal(6, 4), normal(6, 2))
    yield call(normal(5, 1), normal(5, 1), normal(5, 3))  # d = 1
    yield call(normal(2, 3, 7, 5), normal(2, 3, 7, 5), normal(2, 3, 7, 4))  # batch and heads
    yield call(normal(9, 3) * 5.0, normal(9, 3) * 5.0, normal(9, 3))  # features far from 1
    for _ in range(3):
        lead = [(), (2,), (2, 3)][int(rng.integers(3))]
        T, d, dv = (int(n) for n in rng.integers(1, 12, size=3))
        yield call(normal(*lead, T, d), normal(*lead, T, d), normal(*lead, T, dv))
    # The memory case: its (T, T) table cannot exist in a graded kernel (see the module docstring).
    T = int(rng.integers(LINEAR_T, LINEAR_T + 100))
    yield call(normal(T, 1), normal(T, 1), normal(T, 1))


def linear_attention_step(S, z, q, k, v):
    fq, fk = phi(np.asarray(q, dtype=np.float64)), phi(np.asarray(k, dtype=np.float64))
    S_new = S + fk[..., :, None] * v[..., None, :]
    z_new = z + fk
    return np.einsum("...d,...de->...e", fq, S_new) / (fq * z_new).sum(axis=-1, keepdims=True), S_new, z_new


def linear_attention_step_cases(rng):
    def state(lead, d, dv, t):  # the state after t tokens of a random sequence
        K, V = rng.standard_normal((*lead, t, d)), rng.standard_normal((*lead, t, dv))
        return (phi(K)[..., :, None] * V[..., None, :]).sum(axis=-3), phi(K).sum(axis=-2)

    for lead, d, dv, t in [((), 3, 2, 0), ((), 4, 3, 5), ((), 1, 1, 2), ((2, 3), 5, 2, 4), ((3,), 2, 6, 1)]:
        S, z = state(lead, d, dv, t)
        yield call(S, z, rng.standard_normal((*lead, d)), rng.standard_normal((*lead, d)),
                   rng.standard_normal((*lead, dv)))
    for _ in range(3):
        lead = [(), (2,), (2, 3)][int(rng.integers(3))]
        d, dv, t = (int(n) for n in rng.integers(1, 8, size=3))
        S, z = state(lead, d, dv, t)
        yield call(S, z, rng.standard_normal((*lead, d)) * 3.0, rng.standard_normal((*lead, d)) * 3.0,
                   rng.standard_normal((*lead, dv)))


CHECKS = {
    "test_absorbed_matrices": Check("absorbed_matrices", absorbed_matrices, absorbed_matrices_cases,
                                    unchanged_args=True, compare=Same(rtol=1e-9, atol=1e-12)),
    "test_mla_decode_absorbed": Check("mla_decode_absorbed", mla_decode_absorbed, mla_decode_absorbed_cases,
                                      unchanged_args=True, compare=Same(rtol=1e-8, atol=1e-10),
                                      replace_globals={"softmax": softmax}),
    "test_causal_linear_attention": Check("causal_linear_attention", causal_linear_attention,
                                          causal_linear_attention_cases, unchanged_args=True,
                                          compare=Same(rtol=1e-9, atol=1e-10), replace_globals={"phi": phi}),
    "test_linear_attention_step": Check("linear_attention_step", linear_attention_step, linear_attention_step_cases,
                                        unchanged_args=True, compare=Same(rtol=1e-9, atol=1e-10),
                                        replace_globals={"phi": phi}),
}
