"""Trusted hidden tests of Lesson 1 (solutions/01-single-head.py): references and fresh inputs.

Each reference is written here from the equations, independently of the notebook: the grader runs
it in its own process, so it must not import anything a submission could have changed. Every
`cases` generator starts with fixed edge cases (one position, a length-1 axis, every axis of a
4-D array, inputs far from zero, slices offset by a thousand) and adds random shapes; all values
are drawn from `rng`, which is seeded afresh for every grading run.

`attention` calls the student's `softmax`. While the grader calls the student's `attention`,
`replace_globals` puts this file's `softmax` in place of the notebook's (and puts the student's
back afterwards), as the visible checks do with theirs: a wrong softmax costs Exercise 1 only.
"""

import numpy as np

from grader.trusted import Check, Same, call


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))  # each slice's max becomes 0: no overflow
    return e / e.sum(axis=axis, keepdims=True)


def softmax_cases(rng):
    # Every axis of 1-D to 4-D arrays, once near zero and once shifted far below it (exp underflows
    # without the max subtracted).
    for shape, axis in [((6,), 0), ((3, 1), -1), ((5, 4), 0), ((2, 3, 4), 0), ((2, 3, 4), -2), ((2, 2, 3, 5), 2),
                        ((1,), -1), ((2, 1, 3, 2), -1)]:
        x = rng.standard_normal(shape) * 3
        yield call(x, axis=axis)
        yield call(x - 5000.0, axis=axis)
    yield call(rng.standard_normal((3, 5)) * 3 + 1000.0)  # the default axis, and exp would overflow
    yield call(rng.standard_normal((4, 7)) * 400, axis=-1)  # rows spanning more than 700: entries underflow to 0
    # Slices a thousand apart: each needs its own max (one max for the whole array underflows).
    yield call(rng.standard_normal((3, 4)) * 3 + np.array([[0.0], [-1000.0], [1000.0]]), axis=-1)
    yield call(rng.standard_normal((4, 3)) * 3 + np.array([[0.0, -1000.0, 1000.0]]), axis=0)
    offsets = rng.choice([-1.0, 1.0], size=(2, 1, 4)) * rng.uniform(800.0, 1200.0, size=(2, 1, 4))
    yield call(rng.standard_normal((2, 3, 4)) * 3 + offsets, axis=1)
    for _ in range(3):
        ndim = int(rng.integers(1, 5))
        shape = tuple(int(n) for n in rng.integers(1, 6, size=ndim))
        x = rng.standard_normal(shape) * rng.uniform(0.5, 5.0) + rng.uniform(-3000.0, 3000.0)
        yield call(x, axis=int(rng.integers(-ndim, ndim)))


def attention(Q, K, V):
    weights = softmax(Q @ np.swapaxes(K, -2, -1), axis=-1)  # (..., T, d_k) @ (..., d_k, T) -> (..., T, T)
    return weights @ V, weights  # (..., T, T) @ (..., T, d_v) -> (..., T, d_v)


def attention_cases(rng):
    # (batch axes, T, d_k, d_v): no batch axis, one position, T != d_v, one to three batch axes.
    shapes = [((), 1, 3, 2), ((), 6, 2, 5), ((3,), 5, 4, 4), ((2, 3), 5, 4, 6), ((2, 1, 3), 2, 3, 1)]
    for _ in range(3):
        batch = tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, 4))))
        shapes.append((batch, *(int(n) for n in rng.integers(1, 7, size=3))))
    for batch, T, d_k, d_v in shapes:
        yield call(rng.standard_normal((*batch, T, d_k)), rng.standard_normal((*batch, T, d_k)),
                   rng.standard_normal((*batch, T, d_v)))
    # Scores in the thousands: only a softmax with the max subtracted stays finite.
    yield call(rng.standard_normal((2, 4, 8)) * 30, rng.standard_normal((2, 4, 8)) * 30, rng.standard_normal((2, 4, 8)))


CHECKS = {
    "test_softmax": Check("softmax", softmax, softmax_cases, unchanged_args=True),
    "test_attention": Check("attention", attention, attention_cases, unchanged_args=True,
                            compare=Same(array_like=True), replace_globals={"softmax": softmax}),
}
