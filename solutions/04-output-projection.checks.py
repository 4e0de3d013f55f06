"""Trusted hidden tests of Lesson 4 (solutions/04-output-projection.py): references and fresh inputs.

Each reference is written here from the exercise's statement, independently of the notebook: the
grader runs it in its own process, so it must not import anything a submission could have changed.
Every `cases` generator starts with fixed cases (one head, one position, head size 1, a batch whose
B, T and h all differ, the last head, a signed change, changes below atol) and adds random shapes;
all values and seeds are drawn from `rng`, which is seeded afresh for every grading run.

`fold_into_wv` is judged by what the fold is for: the layer run with the student's W_v and W_o = I
must give the output of the layer with the original W_v and the block-diagonal W_o, on inputs and
query and key projections the kernel never sees (drawn in this process from the call's own
arguments). A W_o with a weight outside its diagonal blocks must raise ValueError.
"""

import numpy as np

from grader.trusted import Check, Same, call
from grader.trusted.wire import Raised


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


def _layer(X, Wq, Wk, Wv, Wo, h):
    B, T, C = X.shape
    hs = C // h
    Q, K, V = ((X @ W).reshape(B, T, h, hs).transpose(0, 2, 1, 3) for W in (Wq, Wk, Wv))  # (B, h, T, hs)
    S = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(hs)  # (B, h, T, T)
    A = np.exp(S - S.max(axis=-1, keepdims=True))
    A = A / A.sum(axis=-1, keepdims=True)
    return (A @ V).transpose(0, 2, 1, 3).reshape(B, T, C) @ Wo  # (B, h, T, hs) -> (B, T, C) @ (C, C)


class _FoldWithInputs(np.ndarray):
    """The reference's folded W_v, with the call's W_v, W_o and h attached (grading process only)."""


def fold_into_wv(Wv, Wo_blockdiag, h):
    C = Wv.shape[0]
    hs = C // h
    same_head = np.arange(C)[:, None] // hs == np.arange(C)[None, :] // hs  # (C, C)
    if np.any(Wo_blockdiag[~same_head] != 0):
        raise ValueError("W_o has weights outside its diagonal blocks")
    folded = np.zeros((C, C))
    for i in range(h):  # head i's value columns, then its own block
        block = slice(i * hs, (i + 1) * hs)
        folded[:, block] = Wv[:, block] @ Wo_blockdiag[block, block]
    result = folded.view(_FoldWithInputs)
    result.inputs = (Wv.copy(), Wo_blockdiag.copy(), h)
    return result


def same_layer_output(expected, got):
    """The layer with the student's W_v and W_o = I gives the block-diagonal layer's output on fresh inputs."""
    if isinstance(expected, Raised) or isinstance(got, Raised):
        return Same()(expected, got)
    if not isinstance(got, np.ndarray) or got.dtype.kind not in "iuf" or got.shape != expected.shape:
        return Same()(np.asarray(expected), got)  # names the wrong type or shape
    Wv, Wo, h = expected.inputs
    C = Wv.shape[0]
    draw = np.random.default_rng(abs(hash((C, h, float(Wv.sum()), float(Wo.sum())))) % 2**32)
    for B, T in [(1, 1), (2, 5)]:
        X = draw.standard_normal((B, T, C))
        Wq, Wk = draw.standard_normal((C, C)) * 0.5, draw.standard_normal((C, C)) * 0.5
        if not np.allclose(_layer(X, Wq, Wk, np.asarray(got, dtype=float), np.eye(C), h),
                           _layer(X, Wq, Wk, Wv, Wo, h), rtol=1e-5, atol=1e-8):
            return "with your W_v and W_o = I, the layer's output differs from the block-diagonal layer's"
    return None


def _block_diagonal(rng, C, h):
    same_head = np.arange(C)[:, None] // (C // h) == np.arange(C)[None, :] // (C // h)
    return np.where(same_head, rng.standard_normal((C, C)), 0.0)  # (C, C), zero outside the diagonal blocks


def fold_into_wv_cases(rng):
    for C, h in [(6, 1), (5, 5), (12, 3), (20, 4), (64, 4), (12, 6)]:  # one head; head size 1; ...
        yield call(rng.standard_normal((C, C)), _block_diagonal(rng, C, h), h)
    for _ in range(2):
        h, hs = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        yield call(rng.standard_normal((h * hs, h * hs)), _block_diagonal(rng, h * hs, h), h)
    yield call(rng.standard_normal((8, 8)), rng.standard_normal((8, 8)), 2).raises(ValueError)  # dense
    Wo = _block_diagonal(rng, 12, 3)
    Wo[0, 11] = 0.25  # one weight from head 0's rows into the last head's columns
    yield call(rng.standard_normal((12, 12)), Wo, 3).raises(ValueError)
    Wo = _block_diagonal(rng, 12, 4)
    Wo[3, 2] = -1.0  # head 1's first row, head 0's last column: just below the diagonal blocks
    yield call(rng.standard_normal((12, 12)), Wo, 4).raises(ValueError)


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


CHECKS = {
    "test_head_contributions": Check("head_contributions", head_contributions, head_contributions_cases,
                                     unchanged_args=True),
    "test_fold_into_wv": Check("fold_into_wv", fold_into_wv, fold_into_wv_cases, unchanged_args=True,
                               compare=same_layer_output),
    "test_dims_changed_by_dropping": Check("dims_changed_by_dropping", dims_changed_by_dropping,
                                           dims_changed_by_dropping_cases, unchanged_args=True),
}
