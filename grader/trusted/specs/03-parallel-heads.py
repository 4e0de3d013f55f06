"""Trusted hidden tests of Lesson 3 (solutions/03-parallel-heads.py): references and fresh inputs.

Each reference is written here from the equations, independently of the notebook: the grader runs
it in its own process, so it must not import anything a submission could have changed. Every
`cases` generator starts with fixed edge cases (one head, one position, first and last head) and
adds random shapes; all values are drawn from `rng`, which is seeded afresh for every grading run.
"""

import numpy as np

from grader.trusted import Check, Same, call


def concat_heads(per_head):
    B, h, T, hs = per_head.shape
    return per_head.transpose(0, 2, 1, 3).reshape(B, T, h * hs)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)


def concat_heads_cases(rng):
    shapes = [(1, 1, 3, 5), (3, 2, 4, 7), (2, 8, 5, 3), (4, 3, 1, 2), (1, 4, 6, 1)]  # (B, h, T, hs)
    shapes += [tuple(int(n) for n in rng.integers(1, 7, size=4)) for _ in range(3)]
    for shape in shapes:
        yield call(rng.standard_normal(shape))


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
    B, T, C = X.shape
    bad = [n for n in h_values if C % n]
    if bad:
        raise ValueError(f"C={C} is not divisible by h in {bad}")
    return [{"h": n, "hs": C // n, "scores_shape": (B, n, T, T), "out_shape": (B, T, C)} for n in h_values]


def sweep_head_counts_cases(rng):
    yield call(rng.standard_normal((3, 5, 48)), [1, 3, 6, 16])
    yield call(rng.standard_normal((1, 2, 12)), [12, 4])
    for C in rng.choice([12, 18, 24, 30, 36], size=2, replace=False):
        divisors = [n for n in range(1, int(C) + 1) if C % n == 0]
        h_values = [int(n) for n in rng.choice(divisors, size=3, replace=False)]  # in no particular order
        yield call(rng.standard_normal((int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(C))), h_values)
    yield call(rng.standard_normal((2, 3, 48)), [1, 5]).raises(ValueError)
    yield call(rng.standard_normal((1, 4, 20)), [2, 4, 3]).raises(ValueError)


CHECKS = {
    "test_concat_heads": Check("concat_heads", concat_heads, concat_heads_cases, unchanged_args=True),
    "test_zero_value_columns": Check("zero_value_columns", zero_value_columns, zero_value_columns_cases,
                                     unchanged_args=True),
    "test_per_head_change": Check("per_head_change", per_head_change, per_head_change_cases,
                                  compare=Same(array_like=True)),
    "test_sweep_head_counts": Check("sweep_head_counts", sweep_head_counts, sweep_head_counts_cases),
}
