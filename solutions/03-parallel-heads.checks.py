"""Trusted hidden tests of Lesson 3 (solutions/03-parallel-heads.py): references and fresh inputs.

Each reference is written here from the equations, independently of the notebook: the grader runs
it in its own process, so it must not import anything a submission could have changed. Every
`cases` generator starts with fixed edge cases (one head, one position, head size 1, a batch whose
B, T and h all differ, first and last head) and adds random shapes; all values are drawn from
`rng`, which is seeded afresh for every grading run.

Two exercises call another one's function: the layer calls `split_heads`, and the sweep calls the
layer. `replace_globals` gives each, during its hidden calls, this file's definition under that
name, so a mistake in one exercise costs that exercise's points only.
"""

import numpy as np

from grader.trusted import Check, Same, call


def split_heads(x, h):
    return np.stack(np.split(x, h, axis=-1), axis=1)  # h blocks (B, T, hs) of consecutive columns -> (B, h, T, hs)


def split_heads_cases(rng):
    shapes = [(1, 1, 5, 1), (2, 3, 12, 4), (3, 4, 6, 6), (2, 5, 8, 2), (1, 2, 12, 3)]  # (B, T, C, h)
    for _ in range(3):
        h, hs = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        shapes.append((int(rng.integers(1, 4)), int(rng.integers(1, 7)), h * hs, h))
    for B, T, C, h in shapes:
        yield call(rng.standard_normal((B, T, C)), h)


def multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h):
    """The layer from its equations, head by head in einsum form; also the sweep's stand-in for the student's."""
    B, T, C = X.shape
    if C % h:
        raise ValueError(f"C={C} is not divisible by h={h}")
    hs = C // h
    Q, K, V = (np.einsum("btc,cia->bita", X, W.reshape(C, h, hs)) for W in (Wq, Wk, Wv))  # (B, h, T, hs)
    scores = np.einsum("bita,bisa->bits", Q, K) / np.sqrt(hs)  # (B, h, T, T): q_t . k_s in head i
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)  # each row sums to 1 over the keys
    per_head = np.einsum("bits,bisa->bita", weights, V)  # (B, h, T, hs)
    concat = np.concatenate([per_head[:, i] for i in range(h)], axis=-1)  # (B, T, C), head i in columns i*hs:(i+1)*hs
    out = concat @ Wo
    return out, {"Q": Q, "K": K, "V": V, "weights": weights, "per_head": per_head, "concat": concat}


def multi_head_attention_forward_cases(rng):
    configs = [(1, 4, 8, 1), (2, 1, 12, 3), (3, 5, 12, 4), (2, 4, 6, 6), (1, 3, 20, 2)]  # (B, T, C, h)
    for _ in range(2):
        h, hs = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        configs.append((int(rng.integers(1, 4)), int(rng.integers(1, 7)), h * hs, h))
    for B, T, C, h in configs:
        X = rng.standard_normal((B, T, C))
        Wq, Wk, Wv, Wo = (rng.standard_normal((C, C)) / np.sqrt(C) for _ in range(4))  # unit-scale q and k
        yield call(X, Wq, Wk, Wv, Wo, h)


def zero_value_columns(Wv, h, head):
    hs = Wv.shape[1] // h
    zeroed = Wv.copy()
    zeroed[:, head * hs:(head + 1) * hs] = 0.0  # head i's value features are columns i*hs:(i+1)*hs
    return zeroed


def zero_value_columns_cases(rng):
    configs = [(12, 3, 0), (12, 3, 2), (40, 8, 5), (7, 1, 0), (6, 6, 5)]  # (C, h, head)
    for _ in range(3):
        h, hs = int(rng.integers(2, 7)), int(rng.integers(1, 6))
        configs.append((h * hs, h, int(rng.integers(h))))
    for C, h, head in configs:
        yield call(rng.standard_normal((C, C)), h, head)


def per_head_change(concat_a, concat_b, h):
    B, T, C = concat_a.shape
    return np.abs(concat_a - concat_b).reshape(B, T, h, C // h).max(axis=(0, 1, 3))  # (B, T, h, hs) -> (h,)


def per_head_change_cases(rng):
    shapes = [(1, 2, 6, 3), (3, 5, 16, 4), (2, 4, 24, 8), (2, 3, 5, 1)]  # (B, T, C, h)
    shapes += [(int(rng.integers(1, 4)), int(rng.integers(1, 6)), h * int(rng.integers(1, 5)), h)
               for h in rng.integers(2, 7, size=2)]
    for B, T, C, h in shapes:
        yield call(rng.standard_normal((B, T, C)), rng.standard_normal((B, T, C)), h)
    # The lesson's experiment: only one head's block moves.
    B, T, C, h = 2, 3, 20, 5
    concat_a = rng.standard_normal((B, T, C))
    concat_b = concat_a.copy()
    head = int(rng.integers(h))
    concat_b[:, :, head * 4:(head + 1) * 4] += rng.standard_normal((B, T, 4))
    yield call(concat_a, concat_b, h)


def sweep_head_counts(X, h_values, seed=0, scale=0.2):
    """For each h, the layer with the same four matrices (a new generator per h) and its scaled scores' spread."""
    B, T, C = X.shape
    bad = [n for n in h_values if C % n]
    if bad:
        raise ValueError(f"C={C} is not divisible by h in {bad}")
    report = []
    for n in h_values:
        draws = np.random.default_rng(seed=seed)  # one generator per head count: every h gets the same matrices
        Wq, Wk, Wv, Wo = (draws.standard_normal((C, C)) * scale for _ in range(4))
        out, cache = multi_head_attention_forward(X, Wq, Wk, Wv, Wo, n)
        hs = C // n
        scores = np.einsum("bita,bisa->bits", cache["Q"], cache["K"]) / np.sqrt(hs)  # (B, h, T, T), scaled
        report.append({"h": n, "hs": hs, "weights_shape": cache["weights"].shape, "out_shape": out.shape,
                       "score_std": float(scores.std())})
    return report


def sweep_head_counts_cases(rng):
    # Called as the visible checks call it: X and h_values by position, seed and scale by keyword or not at all.
    # Several head counts per call (a generator shared across them draws other matrices for the second),
    # a seed other than 0 and a scale other than 0.2 (a sweep that ignores either), h = 1 and h = C.
    yield call(rng.standard_normal((3, 5, 48)), [1, 3, 6, 16], seed=7, scale=0.3)
    yield call(rng.standard_normal((1, 2, 12)), [12, 4])
    for C in rng.choice([12, 18, 24, 30, 36], size=2, replace=False):
        divisors = [n for n in range(1, int(C) + 1) if C % n == 0]
        h_values = [int(n) for n in rng.choice(divisors, size=3, replace=False)]  # in no particular order
        yield call(rng.standard_normal((int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(C))), h_values,
                   seed=int(rng.integers(0, 2**31)), scale=float(rng.uniform(0.05, 0.5)))
    yield call(rng.standard_normal((2, 3, 48)), [1, 5]).raises(ValueError)
    yield call(rng.standard_normal((1, 4, 20)), [2, 4, 3], seed=1, scale=0.1).raises(ValueError)


CHECKS = {
    "test_split_heads": Check("split_heads", split_heads, split_heads_cases, unchanged_args=True),
    # The layer may call the student's split_heads: it sees this spec's during the hidden calls.
    "test_multi_head_attention_forward": Check("multi_head_attention_forward", multi_head_attention_forward,
                                               multi_head_attention_forward_cases, unchanged_args=True,
                                               replace_globals={"split_heads": split_heads}),
    "test_zero_value_columns": Check("zero_value_columns", zero_value_columns, zero_value_columns_cases,
                                     unchanged_args=True),
    "test_per_head_change": Check("per_head_change", per_head_change, per_head_change_cases,
                                  compare=Same(array_like=True)),
    # The sweep calls the student's layer: it runs with this spec's, so only the sweep itself is graded,
    # on values (the scores' spread, from the matrices it drew), not only on shapes.
    "test_sweep_head_counts": Check("sweep_head_counts", sweep_head_counts, sweep_head_counts_cases,
                                    replace_globals={"multi_head_attention_forward": multi_head_attention_forward}),
}
