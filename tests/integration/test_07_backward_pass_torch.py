"""Lesson 7's trusted reference gradients against PyTorch's autograd (an optional extra).

The hidden tests of 07-backward-pass judge students against the reference formulas in
solutions/07-backward-pass.checks.py (and against finite differences). This test checks those
formulas once more, independently, against automatic differentiation in float64, on fresh random
inputs with leading batch and head axes, T_q != T_k and d_v != d_k. Skipped where torch is not
installed: it is not part of the course's core environment.
"""

from __future__ import annotations

import numpy as np
import pytest

from grader.trusted.spec import load_spec

try:
    import torch
except ImportError:  # every test here is then skipped, naming the extra (tests/plugins/extras.py)
    torch = None


LESSON = "07-backward-pass"
pytestmark = [pytest.mark.needs("torch"), pytest.mark.lesson(LESSON)]
BOUND = 1e-10  # float64: the formulas and autograd differ only by rounding


def references():
    checks = load_spec(LESSON).checks
    return {name: checks[f"test_{name}"].reference for name in ("softmax_backward", "attention_backward",
                                                                 "mha_backward")}


def tensors(*arrays):
    return [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]


def attention(Q, K, V):
    return torch.softmax(Q @ K.transpose(-1, -2) / Q.shape[-1] ** 0.5, dim=-1) @ V


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_softmax_backward_matches_autograd(seed):
    rng = np.random.default_rng(seed)
    S, dA = rng.standard_normal((2, 3, 4, 6)), rng.standard_normal((2, 3, 4, 6))  # (B, h, T_q, T_k)
    (St,) = tensors(S)
    A = torch.softmax(St, dim=-1)
    (A * torch.tensor(dA)).sum().backward()
    got = references()["softmax_backward"](A.detach().numpy(), dA)
    assert np.abs(np.asarray(got) - St.grad.numpy()).max() < BOUND


@pytest.mark.parametrize(("lead", "T_q", "T_k", "d_k", "d_v"), [((), 5, 5, 4, 3), ((2, 3), 4, 7, 8, 2),
                                                                ((1, 2, 2), 3, 3, 1, 4)])
def test_attention_backward_matches_autograd(lead, T_q, T_k, d_k, d_v):
    rng = np.random.default_rng(len(lead) + 10 * T_k)
    Q, K, V = (rng.standard_normal((*lead, T, d)) for T, d in [(T_q, d_k), (T_k, d_k), (T_k, d_v)])
    dOut = rng.standard_normal((*lead, T_q, d_v))
    Qt, Kt, Vt = tensors(Q, K, V)
    (attention(Qt, Kt, Vt) * torch.tensor(dOut)).sum().backward()
    got = references()["attention_backward"](Q, K, V, dOut)
    for ours, theirs in zip(got, (Qt, Kt, Vt), strict=True):
        assert np.abs(ours - theirs.grad.numpy()).max() < BOUND


@pytest.mark.parametrize(("B", "T", "C", "h"), [(1, 1, 4, 1), (2, 3, 6, 3), (2, 5, 8, 2), (3, 4, 12, 4)])
def test_mha_backward_matches_autograd(B, T, C, h):
    rng = np.random.default_rng(B * 100 + T * 10 + h)
    X = rng.standard_normal((B, T, C))
    weights = [0.5 * rng.standard_normal((C, C)) for _ in range(4)]
    dOut = rng.standard_normal((B, T, C))
    Xt, Wq, Wk, Wv, Wo = tensors(X, *weights)
    hs = C // h

    def split(Y):  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)
        return Y.reshape(B, T, h, hs).transpose(1, 2)

    per_head = attention(split(Xt @ Wq), split(Xt @ Wk), split(Xt @ Wv))  # (B, h, T, hs)
    out = per_head.transpose(1, 2).reshape(B, T, C) @ Wo  # (B, T, h, hs) -> (B, T, C) @ (C, C)
    (out * torch.tensor(dOut)).sum().backward()
    got = references()["mha_backward"](X, *weights, h, dOut)
    assert set(got) == {"dX", "dWq", "dWk", "dWv", "dWo"}
    for key, tensor in [("dX", Xt), ("dWq", Wq), ("dWk", Wk), ("dWv", Wv), ("dWo", Wo)]:
        assert np.abs(got[key] - tensor.grad.numpy()).max() < BOUND, key
