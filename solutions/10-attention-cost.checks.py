"""Trusted hidden tests of Lesson 10 (solutions/10-attention-cost.py): references and fresh inputs.

Each reference is written here from the equations, independently of the notebook: the grader runs
it in its own process, so it must not import anything a submission could have changed. Every
`cases` generator starts with fixed edge cases and adds random ones; all values are drawn from
`rng`, which is seeded afresh for every grading run.

How "without materialising a (T, T) array" is checked without taking the kernel's word for it:
the last case of `online_softmax_attention_cases` has at least 23,200 queries and as many keys.
Its full score table alone, Tq * Tk float64 numbers, is more than 4.3e9 bytes, larger than the
whole address space a graded kernel may use (`KernelLimits.memory_limit = 4 * 1024**3` bytes in
grader/nbgrader_config.py; a kernel with NumPy and one BLAS thread already maps about 0.2 GiB of
it). Allocating such an array raises MemoryError in the kernel, which the harness reports as a
raised call: the case fails whatever the kernel prints. A blockwise pass holds one (Tq, block)
strip of scores, 22 to 34 MB here, but still computes every one of the Tq * Tk scores: the lesson's
reference solution took about 6 s of CPU time on the 2-core machine the course was developed on.
If the memory limit is ever raised, raise MEMORY_CASE_T with it
(tests/integration/test_10_attention_cost.py checks that the case still cannot fit).

The inputs stay small on the wire (d = dv = 1: three arrays of about 23,250 float64 numbers, under
1 MB in the cell source). The expected output is computed here, in the grading process, without a
(Tq, Tk) array either: the keys of that case take only 64 distinct values, and the reference merges
equal keys (a key that occurs c times weighs c times as much and carries the sum of its values), so
it costs Tq * 64 exponentials instead of Tq * Tk (about 0.1 s instead of about 6). The merge is
exact for any input; for the other cases, whose keys are all distinct, it changes nothing.

Comparisons are tight (rtol 1e-9): a correct float64 kernel agrees to about 1e-13, while a float32
score table, which is half the size and would fit in the memory limit, carries only about seven
significant digits.

`flash_attention_backward` is checked the same way. Its inputs include the forward's output O and
row-wise log-sum-exp L, computed here from Q, K and V (one case rounds them as mixed-precision
training saves them, so a backward that ignores them and recomputes the forward fails). The expected
gradients are FlashAttention's backward equations evaluated on the saved O and L, over the distinct
keys like the forward: the full attention backward's whenever O and L are the forward's. Its last
case is the same kind of memory case (at least MEMORY_CASE_T queries and keys, d = dv = 1, 64
distinct keys): a backward that builds any (Tq, Tk) float64 array, the probabilities, their
gradient or the scores, raises MemoryError there, and a float32 table loses the precision. A
blockwise backward recomputes every probability and its gradient, about 1.5 times the work of the
forward pass over the same case.
"""

import numpy as np

from grader.trusted import Check, Same, call

MEMORY_CASE_T = 23_200  # fewest queries and keys of the memory case: 8 * 23_200**2 bytes > 4 GiB
MEMORY_CASE_DISTINCT_KEYS = 64


def online_softmax_attention(Q, K, V, block):
    # softmax(Q K^T / sqrt(d)) V, exactly, computed in chunks of query rows over the distinct keys.
    # `block` cannot change the answer; it is the student's argument only.
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    *lead, Tq, d = Q.shape
    Tk, dv = K.shape[-2], V.shape[-1]
    Qs = Q.reshape(-1, Tq, d)  # leading axes flattened: (n, Tq, d)
    Ks = K.reshape(-1, Tk, d)  # (n, Tk, d)
    Vs = V.reshape(-1, Tk, dv)  # (n, Tk, dv)
    out = np.empty((Qs.shape[0], Tq, dv))
    for n in range(Qs.shape[0]):
        keys, which, counts = np.unique(Ks[n], axis=0, return_inverse=True, return_counts=True)  # (G, d)
        value_sums = np.zeros((len(keys), dv))
        np.add.at(value_sums, which.reshape(-1), Vs[n])  # (G, dv): sum of the values of each distinct key
        rows = max(1, 2**22 // len(keys))  # query rows per chunk: at most 4M scores at a time
        for start in range(0, Tq, rows):
            scores = Qs[n, start:start + rows] @ keys.T / np.sqrt(d)  # (rows, d) @ (d, G) -> (rows, G)
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))  # one copy of each distinct key
            out[n, start:start + rows] = (weights @ value_sums) / (weights @ counts)[:, None]  # (rows, dv)
    return out.reshape(*lead, Tq, dv)


def online_softmax_attention_cases(rng):
    def normal(*shape):
        return rng.standard_normal(shape)

    # Fixed edge cases: (Q, K, V, block).
    yield call(normal(7, 3), normal(7, 3), normal(7, 3), 3)  # Tk = 7 is not a multiple of the block
    yield call(normal(5, 4), normal(6, 4), normal(6, 2), 1)  # blocks of one key; Tq != Tk, dv != d
    yield call(normal(4, 2), normal(6, 2), normal(6, 3), 6)  # exactly one block
    yield call(normal(4, 2), normal(6, 2), normal(6, 3), 50)  # a block larger than Tk
    yield call(normal(2, 3, 4, 5), normal(2, 3, 9, 5), normal(2, 3, 9, 3), 4)  # batch and heads
    yield call(normal(1, 8), normal(13, 8), normal(13, 8), 5)  # one new query against 13 keys
    rising = np.sort(rng.random(12))[:, None] * 4.0  # (12, 1) increasing keys, positive queries:
    yield call(rng.random((3, 1)) + 0.5, rising, normal(12, 2), 3)  # the running max rises in every block
    yield call(normal(3, 6, 8) * 400.0, normal(3, 10, 8), normal(3, 10, 4), 3)  # scores in the thousands
    # Random shapes.
    for _ in range(3):
        lead = [(), (2,), (2, 3)][int(rng.integers(3))]
        Tq, Tk, d, dv = (int(n) for n in rng.integers(1, 17, size=4))
        block = int(rng.integers(1, Tk + 4))
        yield call(normal(*lead, Tq, d), normal(*lead, Tk, d), normal(*lead, Tk, dv), block)
    # The memory case: its (Tq, Tk) score table cannot exist in a graded kernel (see the module docstring).
    Tq, Tk = (int(n) for n in rng.integers(MEMORY_CASE_T, MEMORY_CASE_T + 100, size=2))
    distinct = normal(MEMORY_CASE_DISTINCT_KEYS, 1)
    K = distinct[rng.integers(0, MEMORY_CASE_DISTINCT_KEYS, size=Tk)]  # (Tk, 1)
    yield call(normal(Tq, 1), K, normal(Tk, 1), int(rng.integers(120, 180)))


def online_softmax_merge(m_a, l_a, o_a, m_b, l_b, o_b):
    # The state (m, l, o) of the union of two disjoint parts of the keys, each given relative to its own max.
    m = np.maximum(m_a, m_b)
    scale_a, scale_b = np.exp(m_a - m), np.exp(m_b - m)  # 0 for an empty state (m = -inf), which is never both
    return m, l_a * scale_a + l_b * scale_b, o_a * scale_a + o_b * scale_b


def _state(scores, values):
    """The state of one part of the keys, from its scores (..., Tq, n) and values (..., n, dv)."""
    m = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - m)
    return m, e.sum(axis=-1, keepdims=True), e @ values


def online_softmax_merge_cases(rng):
    def states(lead, Tq, n_a, n_b, dv, scale=1.0, shift_b=0.0):
        scores = rng.standard_normal((*lead, Tq, n_a + n_b)) * scale
        scores[..., n_a:] += shift_b  # part B's scores moved up (or down) against part A's
        values = rng.standard_normal((*lead, n_a + n_b, dv))
        return call(*_state(scores[..., :n_a], values[..., :n_a, :]), *_state(scores[..., n_a:], values[..., n_a:, :]))

    yield states((), 4, 3, 2, 3, shift_b=2.0)  # B holds the larger max for every query
    yield states((), 4, 3, 2, 3, shift_b=-2.0)  # A holds it
    yield states((), 6, 1, 5, 2)  # one key against five; either max may win
    yield states((2, 3), 5, 4, 4, 2)  # batch and heads
    yield states((), 3, 4, 3, 2, scale=1000.0)  # maxima thousands apart
    # An empty part for some queries: A empty for queries 0 and 1, B empty for query 3.
    m_a, l_a, o_a = _state(rng.standard_normal((4, 3)), rng.standard_normal((3, 2)))
    m_b, l_b, o_b = _state(rng.standard_normal((4, 5)), rng.standard_normal((5, 2)))
    m_a[:2], l_a[:2], o_a[:2] = -np.inf, 0.0, 0.0
    m_b[3], l_b[3], o_b[3] = -np.inf, 0.0, 0.0
    yield call(m_a, l_a, o_a, m_b, l_b, o_b)
    for _ in range(3):
        lead = [(), (2,), (2, 3)][int(rng.integers(3))]
        Tq, n_a, n_b, dv = (int(n) for n in rng.integers(1, 9, size=4))
        yield states(lead, Tq, n_a, n_b, dv, scale=float(rng.choice([1.0, 30.0])), shift_b=float(rng.normal(0, 3)))


def _distinct_keys(K, V):
    """The distinct rows of K (G, d), which distinct row each key is (Tk,), their counts (G,) and value sums (G, dv)."""
    keys, which, counts = np.unique(K, axis=0, return_inverse=True, return_counts=True)
    which = which.reshape(-1)
    value_sums = np.zeros((len(keys), V.shape[-1]))
    np.add.at(value_sums, which, V)
    return keys, which, counts, value_sums


def _row_chunks(Tq, G):
    """Slices of query rows such that a chunk of scores over G distinct keys holds at most 4M numbers."""
    rows = max(1, 2**22 // G)
    return [slice(start, start + rows) for start in range(0, Tq, rows)]


def _forward_with_lse(Q, K, V):
    # O = softmax(Q K^T / sqrt(d)) V and L = log sum_j exp(Q K^T / sqrt(d)), per query row, exactly,
    # over the distinct keys (a key occurring c times adds log c to its score's weight).
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    *lead, Tq, d = Q.shape
    Tk, dv = K.shape[-2], V.shape[-1]
    Qs, Ks, Vs = Q.reshape(-1, Tq, d), K.reshape(-1, Tk, d), V.reshape(-1, Tk, dv)  # leading axes flattened
    O, L = np.empty((Qs.shape[0], Tq, dv)), np.empty((Qs.shape[0], Tq, 1))
    for n in range(Qs.shape[0]):
        keys, _, counts, value_sums = _distinct_keys(Ks[n], Vs[n])
        for rows in _row_chunks(Tq, len(keys)):
            scores = Qs[n, rows] @ keys.T / np.sqrt(d) + np.log(counts)  # (rows, G): log of each group's weight
            top = scores.max(axis=1, keepdims=True)  # (rows, 1)
            weights = np.exp(scores - top)  # (rows, G)
            total = weights.sum(axis=1, keepdims=True)  # (rows, 1)
            O[n, rows] = (weights / counts) @ value_sums / total  # each key of a group weighs weights / counts
            L[n, rows] = top + np.log(total)
    return O.reshape(*lead, Tq, dv), L.reshape(*lead, Tq, 1)


def flash_attention_backward(Q, K, V, O, L, dO, block):
    # FlashAttention's backward from the saved O and L, exactly, over the distinct keys (`block`
    # cannot change the answer). With P_ij = exp(s_ij - L_i), the same for every key j of a group g,
    # D_i = dO_i . O_i and dS_ij = P_ig (dO_i . v_j - D_i):
    #   dV_j = sum_i P_ig dO_i,
    #   dQ_i = sum_g P_ig k_g (dO_i . Vsum_g - c_g D_i) / sqrt(d),
    #   dK_j = ((sum_i P_ig q_i dO_i^T) v_j - sum_i P_ig D_i q_i) / sqrt(d).
    # When O and L are the forward's, these are the gradients of softmax(Q K^T / sqrt(d)) V.
    Q, K, V, O, L, dO = (np.asarray(a, dtype=np.float64) for a in (Q, K, V, O, L, dO))
    *lead, Tq, d = Q.shape
    Tk, dv = K.shape[-2], V.shape[-1]
    Qs, Ks, Vs = Q.reshape(-1, Tq, d), K.reshape(-1, Tk, d), V.reshape(-1, Tk, dv)  # leading axes flattened
    Os, Ls, dOs = O.reshape(-1, Tq, dv), L.reshape(-1, Tq, 1), dO.reshape(-1, Tq, dv)
    dQ, dK, dV = np.empty(Qs.shape), np.empty(Ks.shape), np.empty(Vs.shape)
    for n in range(Qs.shape[0]):
        keys, which, counts, value_sums = _distinct_keys(Ks[n], Vs[n])
        G = len(keys)
        dV_group = np.zeros((G, dv))  # sum_i P_ig dO_i
        outer = np.zeros((G, d, dv))  # sum_i P_ig q_i dO_i^T
        shift = np.zeros((G, d))  # sum_i P_ig D_i q_i
        for rows in _row_chunks(Tq, G):
            q, g_out = Qs[n, rows], dOs[n, rows]  # (r, d), (r, dv)
            P = np.exp(q @ keys.T / np.sqrt(d) - Ls[n, rows])  # (r, G): the probability of one key of each group
            D = (g_out * Os[n, rows]).sum(axis=1, keepdims=True)  # (r, 1)
            dQ[n, rows] = (P * (g_out @ value_sums.T - D * counts)) @ keys / np.sqrt(d)  # (r, G) @ (G, d)
            dV_group += P.T @ g_out
            outer += np.einsum("ig,id,ie->gde", P, q, g_out)
            shift += P.T @ (D * q)
        dV[n] = dV_group[which]
        dK[n] = (np.einsum("jde,je->jd", outer[which], Vs[n]) - shift[which]) / np.sqrt(d)
    return dQ.reshape(Q.shape), dK.reshape(K.shape), dV.reshape(V.shape)


def flash_attention_backward_cases(rng):
    def normal(*shape):
        return rng.standard_normal(shape)

    def with_saved(Q, K, V, block):  # the forward's O and L, then an upstream gradient dO like O
        O, L = _forward_with_lse(Q, K, V)
        return call(Q, K, V, O, L, normal(*O.shape), block)

    # Fixed edge cases: (Q, K, V, block).
    yield with_saved(normal(7, 3), normal(7, 3), normal(7, 3), 3)  # Tk = 7 is not a multiple of the block
    yield with_saved(normal(5, 4), normal(6, 4), normal(6, 2), 1)  # blocks of one key; Tq != Tk, dv != d
    yield with_saved(normal(4, 2), normal(6, 2), normal(6, 3), 6)  # exactly one block
    yield with_saved(normal(4, 2), normal(6, 2), normal(6, 3), 50)  # a block larger than Tk
    yield with_saved(normal(2, 3, 4, 5), normal(2, 3, 9, 5), normal(2, 3, 9, 3), 4)  # batch and heads
    yield with_saved(normal(1, 8), normal(13, 8), normal(13, 8), 5)  # one query against 13 keys
    yield with_saved(normal(3, 6, 8) * 400.0, normal(3, 10, 8), normal(3, 10, 4), 3)  # scores in the thousands
    # O saved in float16 and L in float32, as mixed-precision training keeps them: the backward
    # uses them as saved, so one that recomputes the forward instead gets other numbers.
    Q, K, V = normal(2, 6, 5), normal(2, 9, 5), normal(2, 9, 3)
    O, L = _forward_with_lse(Q, K, V)
    yield call(Q, K, V, O.astype(np.float16).astype(np.float64), L.astype(np.float32).astype(np.float64),
               normal(2, 6, 3), 4)
    # Random shapes.
    for _ in range(3):
        lead = [(), (2,), (2, 3)][int(rng.integers(3))]
        Tq, Tk, d, dv = (int(n) for n in rng.integers(1, 17, size=4))
        block = int(rng.integers(1, Tk + 4))
        yield with_saved(normal(*lead, Tq, d), normal(*lead, Tk, d), normal(*lead, Tk, dv), block)
    # The memory case: no (Tq, Tk) array fits in a graded kernel (see the module docstring).
    Tq, Tk = (int(n) for n in rng.integers(MEMORY_CASE_T, MEMORY_CASE_T + 100, size=2))
    distinct = normal(MEMORY_CASE_DISTINCT_KEYS, 1)
    K = distinct[rng.integers(0, MEMORY_CASE_DISTINCT_KEYS, size=Tk)]  # (Tk, 1)
    Q, V = normal(Tq, 1), normal(Tk, 1)
    O, L = _forward_with_lse(Q, K, V)
    # O and L saved in float32, as training often keeps them.
    yield call(Q, K, V, O.astype(np.float32), L.astype(np.float32), normal(Tq, 1), int(rng.integers(120, 180)))


DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int8": 1}


def kv_cache_bytes(n_layers, n_heads, n_kv_heads, head_dim, T, dtype):
    if isinstance(dtype, str):
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"unknown dtype {dtype!r}")
        n_bytes = DTYPE_BYTES[dtype]
    elif isinstance(dtype, int) and not isinstance(dtype, bool) and dtype >= 1:
        n_bytes = dtype
    else:
        raise ValueError(f"not a dtype: {dtype!r}")
    if min(n_layers, n_heads, n_kv_heads, head_dim) < 1 or T < 0 or n_heads % n_kv_heads:
        raise ValueError("impossible configuration")
    return T * 2 * n_layers * n_kv_heads * head_dim * n_bytes  # one key and one value per KV head, per layer


def kv_cache_bytes_cases(rng):
    # (n_layers, n_heads, n_kv_heads, head_dim, T, dtype)
    yield call(24, 16, 16, 64, 2048, "float32")  # multi-head: every head keeps its K and V
    yield call(32, 32, 8, 128, 4096, "bfloat16")  # grouped-query
    yield call(28, 28, 4, 128, 1000, 2)  # grouped-query, bytes given as an int
    yield call(16, 8, 1, 256, 77, "int8")  # multi-query
    yield call(1, 1, 1, 1, 1, "float64")
    yield call(3, 6, 3, 4, 0, "float16")  # an empty cache
    yield call(12, 12, 5, 64, 10, "float16").raises(ValueError)  # 5 does not divide 12
    yield call(12, 8, 16, 64, 10, "float16").raises(ValueError)  # more KV heads than query heads
    yield call(12, 12, 12, 64, 10, "fp16").raises(ValueError)  # not one of the names
    yield call(12, 12, 12, 64, 10, 0).raises(ValueError)  # no bytes per number
    yield call(12, 12, 12, 64, -1, "float16").raises(ValueError)  # negative length
    yield call(0, 12, 12, 64, 10, "float16").raises(ValueError)  # no layers
    yield call(4, 4, 4, 0, 10, 2).raises(ValueError)  # empty heads
    for _ in range(4):
        n_kv = int(rng.choice([1, 2, 4, 8]))
        n_heads = n_kv * int(rng.choice([1, 2, 4, 8]))
        dtype = [*DTYPE_BYTES, 1, 2, 3, 4][int(rng.integers(len(DTYPE_BYTES) + 4))]
        yield call(int(rng.integers(1, 49)), n_heads, n_kv, int(rng.choice([32, 64, 80, 96, 128])),
                   int(rng.integers(0, 100_001)), dtype)


CHECKS = {
    "test_online_softmax_attention": Check("online_softmax_attention", online_softmax_attention,
                                           online_softmax_attention_cases, unchanged_args=True,
                                           compare=Same(rtol=1e-9, atol=1e-10), strict_floats=True),
    "test_online_softmax_merge": Check("online_softmax_merge", online_softmax_merge, online_softmax_merge_cases,
                                       unchanged_args=True, compare=Same(rtol=1e-10, atol=1e-12), strict_floats=True),
    "test_kv_cache_bytes": Check("kv_cache_bytes", kv_cache_bytes, kv_cache_bytes_cases),
    "test_flash_attention_backward": Check("flash_attention_backward", flash_attention_backward,
                                           flash_attention_backward_cases, unchanged_args=True,
                                           compare=Same(rtol=1e-9, atol=1e-10), strict_floats=True),
}
