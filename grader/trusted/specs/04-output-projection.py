"""Trusted hidden tests of Lesson 4 (solutions/04-output-projection.py): references and fresh inputs.

Each reference is written here from the exercise's statement, independently of the notebook: the
grader runs it in its own process, so it must not import anything a submission could have changed.
Every `cases` generator starts with fixed cases (one head, one position, head size 1, a batch whose
B, T and h all differ, the last head, a signed change, changes below atol) and adds random shapes;
all values and seeds are drawn from `rng`, which is seeded afresh for every grading run.

`block_diagonal_wo` takes a NumPy Generator, which cannot cross the kernel boundary as data. Its
cases pass `Rng(seed)` instead: the kernel-side harness and the grading process each hand the
function `np.random.default_rng(seed)`, and the grader compares both the matrix and the state the
generator is left in, so that drawing the blocks in another order, drawing more than the h blocks
or drawing from a copy all fail, as the exercise's fixed draw order requires.
"""

import numpy as np

from grader.trusted import Check, Rng, call
from grader.trusted.spec import describe


def head_contributions(concat, Wo, h):
    hs = concat.shape[-1] // h
    blocks = [slice(i * hs, (i + 1) * hs) for i in range(h)]
    return np.stack([concat[..., s] @ Wo[s, :] for s in blocks], axis=1)  # head i's columns @ its rows: (B, h, T, C)


def head_contributions_cases(rng):
    configs = [(1, 1, 5, 1), (2, 3, 20, 4), (3, 2, 12, 6), (2, 5, 6, 6), (1, 4, 12, 3)]  # (B, T, C, h)
    for _ in range(3):
        h, hs = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        configs.append((int(rng.integers(1, 4)), int(rng.integers(1, 6)), h * hs, h))
    for B, T, C, h in configs:
        yield call(rng.standard_normal((B, T, C)), rng.standard_normal((C, C)), h)


def block_diagonal_wo(C, h, rng, scale=0.2):
    hs = C // h
    Wo = np.zeros((C, C))
    for i in range(h):  # block 0 first, each (hs, hs) in row-major order, then block 1, ...
        block = slice(i * hs, (i + 1) * hs)
        Wo[block, block] = rng.standard_normal((hs, hs)) * scale
    return Wo


def block_diagonal_wo_cases(rng):
    def fresh():  # a generator for the student's function, as its seed
        return Rng(int(rng.integers(2**63)))

    yield call(12, 3, fresh())  # the default scale
    yield call(10, 1, fresh(), scale=0.5)  # one head: the whole matrix is one block
    yield call(40, 8, fresh())
    yield call(6, 6, fresh(), scale=2.0)  # head size 1: a diagonal matrix
    yield call(36, 4, fresh(), scale=0.2)
    for _ in range(3):
        h, hs = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        yield call(h * hs, h, fresh(), scale=float(rng.uniform(0.1, 2.0)))


def dims_changed_by_dropping(concat, Wo, head, h, atol=1e-9):
    hs = concat.shape[-1] // h
    dropped = concat.copy()
    dropped[..., head * hs:(head + 1) * hs] = 0.0  # head `head` outputs nothing
    change = np.abs(dropped @ Wo - concat @ Wo)  # (B, T, C)
    return int((change > atol).any(axis=(0, 1)).sum())  # a dimension counts once, wherever it moves


def dims_changed_by_dropping_cases(rng):
    configs = [(3, 5, 24, 3, 2), (1, 1, 8, 1, 0), (2, 4, 30, 5, 0), (2, 3, 16, 8, 7)]  # (B, T, C, h, head)
    for _ in range(2):
        h, hs = int(rng.integers(2, 7)), int(rng.integers(1, 6))
        configs.append((int(rng.integers(1, 4)), int(rng.integers(1, 6)), h * hs, h, int(rng.integers(h))))
    for B, T, C, h, head in configs:
        concat = rng.standard_normal((B, T, C))
        Wo = rng.standard_normal((C, C)) * (rng.random((C, C)) < 0.3)  # sparse: some dims unreachable
        yield call(concat, Wo, head, h)
        late = concat.copy()
        late[0, 0] = 0.0  # nothing changes at [0, 0], only at the other positions
        yield call(late, Wo, head, h)
        yield call(np.abs(concat), np.abs(Wo), head, h)  # every change is negative
        yield call(np.abs(concat), -np.abs(Wo), head, h)  # every change is positive
        yield call(concat * 1e-6, Wo, head, h, atol=1e-3)  # every change is below atol
    # A block-diagonal Wo: a head reaches only its own hs dimensions.
    B, T, C, h = 2, 3, 20, 5
    head_of_dim = np.arange(C) // (C // h)
    Wo = rng.standard_normal((C, C)) * (head_of_dim[:, None] == head_of_dim[None, :])
    yield call(rng.standard_normal((B, T, C)), Wo, int(rng.integers(h)), h)


def attention_param_count(C, bias=False):
    weights = 4 * C * C  # W_q, W_k, W_v, W_o, each (C, C)
    return weights + 4 * C if bias else weights  # one bias vector of length C per projection


def exactly_an_int(expected, got):
    """The exercise asks for an int: a float, even of the right value, does not count."""
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, np.integer)):
        return f"returned {describe(got)}, expected an int"
    return None if int(got) == expected else "wrong number of parameters"


def attention_param_count_cases(rng):
    widths = [1, 64, 100, 1024, 12288]
    widths += [int(C) for C in rng.integers(2, 5000, size=3)]
    for C in widths:
        yield call(C)
        yield call(C, bias=True)
    yield call(int(rng.integers(2, 5000)), bias=False)


CHECKS = {
    "test_head_contributions": Check("head_contributions", head_contributions, head_contributions_cases,
                                     unchanged_args=True),
    "test_block_diagonal_wo": Check("block_diagonal_wo", block_diagonal_wo, block_diagonal_wo_cases),
    "test_dims_changed_by_dropping": Check("dims_changed_by_dropping", dims_changed_by_dropping,
                                           dims_changed_by_dropping_cases, unchanged_args=True),
    "test_attention_param_count": Check("attention_param_count", attention_param_count, attention_param_count_cases,
                                        compare=exactly_an_int),
}
