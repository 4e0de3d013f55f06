"""Trusted hidden tests of Lesson 14 (solutions/14-long-context.py): references and fresh inputs.

Each reference is written here from the equations, independently of the notebook: the grader runs
it in its own process, so it must not import anything a submission could have changed. Every
`cases` generator starts with fixed edge cases and adds random ones; all values are drawn from
`rng`, which is seeded afresh for every grading run.

`sliding_window_attention` must never build a (T, T) array, and is checked the way Lesson 10's
checks (solutions/10-attention-cost.checks.py) and Lesson 15's check "no (T, T) table": its last
case has at least WINDOW_T = 23,200 positions (B = h = 1, hs = 1, a window of 2 to 16). One (T, T)
float64 array is then more than 4.3e9 bytes, more than the whole address space a graded kernel may
use (`KernelLimits.memory_limit = 4 * 1024**3` in grader/nbgrader_config.py). Allocating it raises
MemoryError in the kernel, which the harness reports as a raised call, so the case fails whatever
the kernel prints. A windowed answer holds (T, w) scores, under 3 MB. A float32 table (2.2 GB)
would fit, but carries seven digits against the comparison's rtol of 1e-9. The reference computes
the window as w shifted copies of the keys, (T, w) numbers.

`ring_decode_step` writes into its arguments: `written_args=(0, 1)`, so after each call the two
rings the kernel passed must hold exactly what the reference wrote into its own copies (a step
that writes into a copy, or into another slot, fails), and the other arguments must be unchanged.
The cases also make a step that reads the wrong slots fail on the output: slots that no token has
written yet hold NaN (a step that attends over all w slots before the buffer is full returns NaN),
and once the ring has wrapped, slot t % w holds the key and value of token t - w, which has just
left the window (a step that does not overwrite that slot, or writes elsewhere, attends to it).

The functions that the notebook gives and the exercises call (`softmax`, and `alibi_slopes` inside
`alibi_attention`) are sent to the kernel through `replace_globals`, so a submission that edited a
given cell, or got Exercise 4a wrong, is graded on the true one.
"""

import numpy as np

from grader.trusted import Check, Same, call

WINDOW_T = 23_200  # positions of the memory case: 8 * 23_200**2 bytes > 4 GiB


def softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def alibi_slopes(n_heads):
    # The reference code's rule (ofirpress/attention_with_linear_biases, get_slopes): the slopes of the
    # largest power of two below n_heads, then every other slope of twice as many heads, from the first.
    below = 1
    while below * 2 <= n_heads:
        below *= 2
    slopes = [2.0 ** (-8.0 * (i + 1) / below) for i in range(below)]
    slopes += [2.0 ** (-8.0 * (i + 1) / (2 * below)) for i in range(0, 2 * below, 2)][:n_heads - below]
    return np.array(slopes)


def sliding_window_attention(q, k, v, w):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    T, hs = q.shape[-2:]
    scores = np.full((*q.shape[:-1], w), -np.inf)  # (B, h, T, w): column j is the key j positions back
    for back in range(min(w, T)):
        scores[..., back:, back] = (q[..., back:, :] * k[..., :T - back, :]).sum(axis=-1) / np.sqrt(hs)
    weights = softmax(scores)
    out = np.zeros(v.shape)
    for back in range(min(w, T)):
        out[..., back:, :] += weights[..., back:, back, None] * v[..., :T - back, :]
    return out


def sliding_window_attention_cases(rng):
    def normal(*shape):
        return rng.standard_normal(shape)

    yield call(normal(1, 1, 1, 1), normal(1, 1, 1, 1), normal(1, 1, 1, 1), 1)  # one position
    yield call(normal(2, 3, 10, 4), normal(2, 3, 10, 4), normal(2, 3, 10, 4), 3)
    yield call(normal(1, 2, 9, 3), normal(1, 2, 9, 3), normal(1, 2, 9, 3), 1)  # each query reads only itself
    yield call(normal(1, 2, 9, 3), normal(1, 2, 9, 3), normal(1, 2, 9, 3), 2)
    yield call(normal(2, 1, 6, 2), normal(2, 1, 6, 2), normal(2, 1, 6, 2), 6)  # w = T: causal
    yield call(normal(1, 2, 5, 3), normal(1, 2, 5, 3), normal(1, 2, 5, 3), 11)  # w > T
    yield call(normal(1, 2, 12, 4) * 15.0, normal(1, 2, 12, 4) * 15.0, normal(1, 2, 12, 4), 4)  # large scores
    for _ in range(3):
        B, h, T, hs = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 20)), int(rng.integers(1, 6))
        w = int(rng.integers(1, T + 3))
        yield call(normal(B, h, T, hs), normal(B, h, T, hs), normal(B, h, T, hs), w)
    # The memory case: its (T, T) table cannot exist in a graded kernel (see the module docstring).
    T = int(rng.integers(WINDOW_T, WINDOW_T + 100))
    yield call(normal(1, 1, T, 1), normal(1, 1, T, 1), normal(1, 1, T, 1), int(rng.integers(2, 17)))


def ring_decode_step(K_ring, V_ring, t, q_t, k_t, v_t):
    w = K_ring.shape[1]  # written in place: the grader compares the rings after the call too
    K_ring[:, t % w], V_ring[:, t % w] = k_t, v_t
    keys, values = K_ring[:, :min(t + 1, w)], V_ring[:, :min(t + 1, w)]  # (h, n, hs): the written slots
    weights = softmax((keys * q_t[:, None, :]).sum(axis=-1) / np.sqrt(q_t.shape[-1]))  # (h, n)
    return (weights[..., None] * values).sum(axis=1)


def ring_decode_step_cases(rng):
    def ring_before(h, w, hs, t):
        # The rings as they are just before token t is written: slot j holds the latest token p < t with
        # p % w == j (so slot t % w holds token t - w once the ring has wrapped), NaN if no token has.
        K_ring, V_ring = np.full((h, w, hs), np.nan), np.full((h, w, hs), np.nan)
        for p in range(max(0, t - w), t):
            K_ring[:, p % w], V_ring[:, p % w] = rng.standard_normal((h, hs)), rng.standard_normal((h, hs))
        return K_ring, V_ring

    # (h, w, hs, t): the first token; before the ring is full; exactly full; wrapped once and more.
    for h, w, hs, t in [(1, 4, 2, 0), (2, 5, 3, 2), (1, 3, 4, 2), (3, 4, 2, 4), (2, 4, 3, 9), (1, 1, 3, 5),
                        (2, 6, 2, 17)]:
        K_ring, V_ring = ring_before(h, w, hs, t)
        yield call(K_ring, V_ring, t, rng.standard_normal((h, hs)), rng.standard_normal((h, hs)),
                   rng.standard_normal((h, hs)))
    for _ in range(3):
        h, w, hs = int(rng.integers(1, 5)), int(rng.integers(1, 9)), int(rng.integers(1, 6))
        t = int(rng.integers(0, 3 * w + 2))
        K_ring, V_ring = ring_before(h, w, hs, t)
        yield call(K_ring, V_ring, t, rng.standard_normal((h, hs)) * 3.0, rng.standard_normal((h, hs)) * 3.0,
                   rng.standard_normal((h, hs)))


def sink_window_attention(q, k, v, w, n_sink):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    T, hs = q.shape[-2:]
    allowed = np.zeros((T, T), dtype=bool)
    for t in range(T):
        for s in range(t + 1):
            allowed[t, s] = t - s < w or s < n_sink
    scores = np.einsum("...td,...sd->...ts", q, k) / np.sqrt(hs)
    return np.einsum("...ts,...sd->...td", softmax(np.where(allowed, scores, -np.inf)), v)


def sink_window_attention_cases(rng):
    def normal(*shape):
        return rng.standard_normal(shape)

    # (shape, w, n_sink): sinks inside the window early on; no sinks; a window of one; more sinks than tokens.
    fixed = [((1, 2, 7, 3), 2, 2), ((2, 3, 10, 4), 3, 0), ((1, 1, 9, 2), 1, 4), ((1, 2, 5, 3), 2, 8),
             ((2, 1, 12, 2), 4, 1), ((1, 2, 8, 3), 5, 3)]
    for shape, w, n_sink in fixed:
        yield call(normal(*shape), normal(*shape), normal(*shape), w, n_sink)
    for _ in range(3):
        B, h, T, hs = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 16)), int(rng.integers(1, 5))
        shape = (B, h, T, hs)
        yield call(normal(*shape) * 3.0, normal(*shape) * 3.0, normal(*shape), int(rng.integers(1, T + 2)),
                   int(rng.integers(0, 5)))


def alibi_slopes_cases(rng):
    for n_heads in [1, 2, 3, 4, 5, 6, 7, 8, 12, 16]:
        yield call(n_heads)
    for n_heads in rng.integers(9, 70, size=3):
        yield call(int(n_heads))


def alibi_attention(q, k, v):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    h, T, hs = q.shape[-3:]
    t, s = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")  # (T, T) each
    scores = np.einsum("...td,...sd->...ts", q, k) / np.sqrt(hs) - alibi_slopes(h)[:, None, None] * (t - s)
    return np.einsum("...ts,...sd->...td", softmax(np.where(s <= t, scores, -np.inf)), v)


def alibi_attention_cases(rng):
    def normal(*shape):
        return rng.standard_normal(shape)

    for shape in [(1, 1, 1, 2), (2, 3, 6, 4), (1, 4, 9, 3), (1, 8, 12, 2), (2, 5, 7, 3)]:
        yield call(normal(*shape), normal(*shape), normal(*shape))
    for _ in range(3):
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.integers(1, 14)), int(rng.integers(1, 5)))
        yield call(normal(*shape) * 2.0, normal(*shape) * 2.0, normal(*shape))


CHECKS = {
    "test_sliding_window_attention": Check("sliding_window_attention", sliding_window_attention,
                                           sliding_window_attention_cases, unchanged_args=True,
                                           compare=Same(rtol=1e-9, atol=1e-12), replace_globals={"softmax": softmax}),
    "test_ring_decode_step": Check("ring_decode_step", ring_decode_step, ring_decode_step_cases,
                                   unchanged_args=True, written_args=(0, 1),
                                   compare=Same(rtol=1e-9, atol=1e-12), replace_globals={"softmax": softmax}),
    "test_sink_window_attention": Check("sink_window_attention", sink_window_attention, sink_window_attention_cases,
                                        unchanged_args=True, compare=Same(rtol=1e-9, atol=1e-12),
                                        replace_globals={"softmax": softmax}),
    "test_alibi_slopes": Check("alibi_slopes", alibi_slopes, alibi_slopes_cases, compare=Same(rtol=1e-12, atol=0.0)),
    "test_alibi_attention": Check("alibi_attention", alibi_attention, alibi_attention_cases, unchanged_args=True,
                                  compare=Same(rtol=1e-9, atol=1e-12),
                                  replace_globals={"softmax": softmax, "alibi_slopes": alibi_slopes}),
}
