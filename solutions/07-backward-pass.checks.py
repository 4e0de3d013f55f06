"""Trusted hidden tests of Lesson 7 (solutions/07-backward-pass.py): references and fresh inputs.

Each reference is written here from the equations, independently of the notebook: the grader runs
it in its own process, so it must not import anything a submission could have changed.

Every hidden call is judged twice, in this process. First against the reference, with the default
tolerance (`Same`). Then against **central differences of this file's own forward pass** on the
same inputs: the reference hands its gradients back in a tuple, dict or array subclass that also
holds the inputs it was called with (those objects never leave the grading process; the kernel only
ever sees the plain arrays), and `AgreesWithFiniteDifferences` differentiates the forward pass
numerically, in float64, entry by entry. A reference that disagreed with the finite differences
would be the instructor's mistake and raises `SpecError`; a student's result that disagreed gets a
generic message. The inputs are kept small so that the differences cost well under a second.

Every backward pass also gets one case far too large to differentiate numerically within the test
cell's time limit (central differences of the forward pass need two forward passes per input entry:
for attention and the layer, each over a (1000, 1000) table of scores; for the softmax, 220,000
passes over one row of 110,000 scores, more than the cell's limit). The softmax case's weights come
in float32, as mixed-precision training keeps them, so that the result fits a cell's output; a
float32 answer matches the reference well within the tolerance. An answer that
differentiates the provided forward numerically (`numerical_gradient`) instead of running the
backward pass cannot finish it. That case is checked against the reference alone. Its inputs stay
small in bytes: the results of a test cell must fit the grader's output limit.

Every `cases` generator starts with fixed edge cases that each common-mistake fixture fails (one
position, one key, one head, head size 1, cross-attention with T_q != T_k, d_v != d_k, a causally
masked and a saturated softmax), then adds random shapes; all values are drawn from `rng`, which
is seeded afresh for every grading run.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.trusted import Check, Same, call
from grader.trusted.spec import SpecError

# ------------------------------------------------------------------ the forward passes
# The lesson's provided functions, with the notebook's names and results. They compute the finite
# differences here, and during the hidden calls the kernel sees them in place of the notebook's
# (`replace_globals`), so a submission that edited a provided cell is graded on the true layer. Plain
# top-level defs that use only np, as replace_globals requires.


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))  # the row max subtracted: exp cannot overflow
    return e / e.sum(axis=axis, keepdims=True)


def attention_forward(Q, K, V):
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    A = np.exp(S - S.max(axis=-1, keepdims=True))
    A = A / A.sum(axis=-1, keepdims=True)  # (..., T_q, T_k)
    return A @ V, A  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)


def mha_forward(X, Wq, Wk, Wv, Wo, h):
    B, T, C = X.shape
    hs = C // h
    Q, K, V = ((X @ W).reshape(B, T, h, hs).transpose(0, 2, 1, 3) for W in (Wq, Wk, Wv))  # (B, h, T, hs)
    S = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(hs)  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
    A = np.exp(S - S.max(axis=-1, keepdims=True))
    A = A / A.sum(axis=-1, keepdims=True)  # (B, h, T, T)
    per_head = A @ V  # (B, h, T, hs)
    concat = per_head.transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
    return concat @ Wo, dict(Q=Q, K=K, V=V, A=A, per_head=per_head, concat=concat)  # (B, T, C) @ (C, C)


# ------------------------------------------------------------------ trusted backward passes
# The first two are also sent to the kernel (replace_globals), so a mistake in one exercise costs
# only that exercise's points: plain top-level defs that use only np.


def trusted_softmax_backward(A, dA):
    return A * (dA - np.sum(dA * A, axis=-1, keepdims=True))  # (..., T_q, T_k) * ((..., T_q, T_k) - (..., T_q, 1))


def trusted_attention_backward(Q, K, V, dOut):
    scale = 1 / np.sqrt(Q.shape[-1])
    S = scale * (Q @ np.swapaxes(K, -1, -2))  # (..., T_q, T_k)
    A = np.exp(S - S.max(axis=-1, keepdims=True))
    A = A / A.sum(axis=-1, keepdims=True)  # (..., T_q, T_k)
    dV = np.swapaxes(A, -1, -2) @ dOut  # (..., T_k, T_q) @ (..., T_q, d_v) -> (..., T_k, d_v)
    dA = dOut @ np.swapaxes(V, -1, -2)  # (..., T_q, d_v) @ (..., d_v, T_k) -> (..., T_q, T_k)
    dS = A * (dA - np.sum(dA * A, axis=-1, keepdims=True))  # (..., T_q, T_k)
    dQ = scale * (dS @ K)  # (..., T_q, T_k) @ (..., T_k, d_k) -> (..., T_q, d_k)
    dK = scale * (np.swapaxes(dS, -1, -2) @ Q)  # (..., T_k, T_q) @ (..., T_q, d_k) -> (..., T_k, d_k)
    return dQ, dK, dV


def trusted_mha_backward(X, Wq, Wk, Wv, Wo, h, dOut):
    B, T, C = X.shape
    hs = C // h
    R = B * T

    def split(Y):  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)
        return Y.reshape(B, T, h, hs).transpose(0, 2, 1, 3)

    def merge(G):  # (B, h, T, hs) -> (B, T, h, hs) -> (B*T, C)
        return G.transpose(0, 2, 1, 3).reshape(R, C)

    Q, K, V = split(X @ Wq), split(X @ Wk), split(X @ Wv)  # (B, h, T, hs)
    concat = merge(attention_forward(Q, K, V)[0])  # (B*T, C)
    dOut_rows = dOut.reshape(R, C)  # (B, T, C) -> (B*T, C)
    dQ, dK, dV = (merge(g) for g in trusted_attention_backward(Q, K, V, split(dOut_rows @ Wo.T)))  # (B*T, C)
    X_rows = X.reshape(R, C)  # (B, T, C) -> (B*T, C)
    return {"dX": (dQ @ Wq.T + dK @ Wk.T + dV @ Wv.T).reshape(B, T, C),  # three paths, (B*T, C) -> (B, T, C)
            "dWq": X_rows.T @ dQ, "dWk": X_rows.T @ dK, "dWv": X_rows.T @ dV,  # (C, B*T) @ (B*T, C) -> (C, C)
            "dWo": concat.T @ dOut_rows}  # (C, B*T) @ (B*T, C) -> (C, C)


# ------------------------------------------------------------------ results that remember their inputs


class _ArrayWithInputs(np.ndarray):
    """The reference's array result, with the call's inputs attached (grading process only)."""


class _TupleWithInputs(tuple):
    """The reference's tuple result, with the call's inputs attached (grading process only)."""


class _DictWithInputs(dict):
    """The reference's dict result, with the call's inputs attached (grading process only)."""


def _with_inputs(result, inputs):
    if isinstance(result, np.ndarray):
        result = np.asarray(result).view(_ArrayWithInputs)
    elif isinstance(result, tuple):
        result = _TupleWithInputs(result)
    else:
        result = _DictWithInputs(result)
    result.inputs = tuple(np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in inputs)
    return result


def softmax_backward(A, dA):
    return _with_inputs(trusted_softmax_backward(A, dA), (A, dA))


def attention_backward(Q, K, V, dOut):
    return _with_inputs(trusted_attention_backward(Q, K, V, dOut), (Q, K, V, dOut))


def mha_backward(X, Wq, Wk, Wv, Wo, h, dOut):
    return _with_inputs(trusted_mha_backward(X, Wq, Wk, Wv, Wo, h, dOut), (X, Wq, Wk, Wv, Wo, h, dOut))


# ------------------------------------------------------------------ finite differences


def central_differences(f, x, eps=1e-5):
    """Gradient of the scalar f() with respect to the float64 array x (perturbed in place, then restored)."""
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + eps
        f_plus = f()
        x[index] = original - eps
        f_minus = f()
        x[index] = original
        grad[index] = (f_plus - f_minus) / (2 * eps)
    return grad


def softmax_numerical(A, dA):
    """dL/dS for L = sum(softmax(S) * dA), at scores S = log A (softmax(log A) = A; masked zeros stay -inf)."""
    with np.errstate(divide="ignore"):
        S = np.log(A)
    return [(None, central_differences(lambda: np.sum(softmax(S) * dA), S))]


def attention_numerical(Q, K, V, dOut):
    Q, K, V = Q.copy(), K.copy(), V.copy()

    def loss():
        return np.sum(attention_forward(Q, K, V)[0] * dOut)

    return [(i, central_differences(loss, x)) for i, x in enumerate((Q, K, V))]


def mha_numerical(X, Wq, Wk, Wv, Wo, h, dOut):
    variables = {"dX": X.copy(), "dWq": Wq.copy(), "dWk": Wk.copy(), "dWv": Wv.copy(), "dWo": Wo.copy()}

    def loss():
        return np.sum(mha_forward(variables["dX"], variables["dWq"], variables["dWk"], variables["dWv"],
                                  variables["dWo"], h)[0] * dOut)

    return [(key, central_differences(loss, x)) for key, x in variables.items()]


def _part(result, key):
    return result if key is None else result[key]


@dataclass(frozen=True)
class AgreesWithFiniteDifferences:
    """Same as the reference (default tolerance), and every gradient within tolerance of central differences."""

    numerical: Callable[..., list]  # numerical(*inputs) -> [(key in the result, or None for the whole, gradient)]
    rtol: float = 1e-5
    atol: float = 1e-7
    max_entries: int = 5_000  # inputs with more entries in all are checked against the reference alone

    def __call__(self, expected: Any, got: Any) -> str | None:
        problem = Same()(expected, got)
        if problem is not None:
            return problem
        inputs = getattr(expected, "inputs", None)
        if inputs is None:
            raise SpecError("the reference's result lost the inputs it was computed from")
        if sum(np.size(x) for x in inputs if isinstance(x, np.ndarray)) > self.max_entries:
            return None  # too large to differentiate numerically here too: the reference alone decides
        for key, numeric in self.numerical(*inputs):
            where = "" if key is None else f" ({key if isinstance(key, str) else f'item {key}'})"
            if not np.allclose(_part(expected, key), numeric, rtol=self.rtol, atol=self.atol):
                raise SpecError(f"the reference{where} disagrees with central differences of the forward pass")
            if not np.allclose(np.asarray(_part(got, key)), numeric, rtol=self.rtol, atol=self.atol):
                return f"wrong values{where}: they disagree with central differences of the forward pass"
        return None


# ------------------------------------------------------------------ fresh inputs


# The cases too large to differentiate numerically in the test cell's 30 s: central differences
# need two forward passes per input entry (24,000 and 8,256 entries here), each over a (1000, 1000)
# table of scores, which is minutes of work at the least; the backward pass is milliseconds.
LARGE_ATTENTION = ((), 1000, 1000, 8, 8)  # (leading axes, T_q, T_k, d_k, d_v)
LARGE_LAYER = (1, 1000, 8, 2)  # (B, T, C, h)
LARGE_SOFTMAX = (1, 110_000)  # (T_q, T_k): one row of 110,000 scores, in float32 (440 KB per array)


def softmax_backward_cases(rng):
    configs = [((1, 1), 1.0), ((1, 5), 1.0), ((5, 5), 1.0), ((2, 3, 4, 6), 1.0),
               ((2, 6, 6), 30.0)]  # (shape, scale of the scores): the last one saturated
    configs += [(tuple(int(n) for n in rng.integers(1, 7, size=int(rng.integers(2, 5)))), 1.0) for _ in range(2)]
    for shape, scale in configs:
        yield call(softmax(scale * rng.standard_normal(shape)), rng.standard_normal(shape))
    T = 5  # a causally masked head (Lesson 6): weights above the diagonal are exactly 0
    masked = np.where(np.tril(np.ones((T, T), dtype=bool)), rng.standard_normal((3, T, T)), -np.inf)  # (3, T, T)
    yield call(softmax(masked), rng.standard_normal((3, T, T)))
    # No time to differentiate numerically. Kept in float32, as mixed-precision training keeps them, so
    # that the result fits a cell's output.
    A, dA = softmax(rng.standard_normal(LARGE_SOFTMAX)), rng.standard_normal(LARGE_SOFTMAX)
    yield call(A.astype(np.float32), dA.astype(np.float32))


def attention_backward_cases(rng):
    configs = [((), 5, 5, 3, 2), ((), 1, 4, 2, 3), ((2,), 6, 6, 5, 5), ((2, 3), 4, 7, 8, 2),
               ((1, 2, 2), 3, 3, 1, 4), ((2,), 3, 1, 3, 2)]  # (leading axes, T_q, T_k, d_k, d_v)
    for _ in range(2):
        lead = tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, 3))))
        T = int(rng.integers(2, 7))
        configs.append((lead, T, T, int(rng.integers(1, 7)), int(rng.integers(1, 7))))
    configs.append(LARGE_ATTENTION)  # no time to differentiate numerically
    for lead, T_q, T_k, d_k, d_v in configs:
        yield call(rng.standard_normal((*lead, T_q, d_k)), rng.standard_normal((*lead, T_k, d_k)),
                   rng.standard_normal((*lead, T_k, d_v)), rng.standard_normal((*lead, T_q, d_v)))


def mha_backward_cases(rng):
    configs = [(1, 1, 4, 1), (2, 3, 6, 3), (1, 4, 6, 2), (2, 5, 4, 4), (3, 2, 8, 2)]  # (B, T, C, h)
    for _ in range(2):
        h = int(rng.integers(1, 4))
        configs.append((int(rng.integers(1, 4)), int(rng.integers(1, 6)), h * int(rng.integers(1, 4)), h))
    configs.append(LARGE_LAYER)  # no time to differentiate numerically
    for B, T, C, h in configs:
        X = rng.standard_normal((B, T, C))
        Wq, Wk, Wv, Wo = (0.5 * rng.standard_normal((C, C)) for _ in range(4))
        yield call(X, Wq, Wk, Wv, Wo, h, rng.standard_normal((B, T, C)))


PROVIDED = {"softmax": softmax, "attention_forward": attention_forward}  # the lesson's forward functions

CHECKS = {
    "test_softmax_backward": Check("softmax_backward", softmax_backward, softmax_backward_cases, unchanged_args=True,
                                   compare=AgreesWithFiniteDifferences(softmax_numerical)),
    "test_attention_backward": Check("attention_backward", attention_backward, attention_backward_cases,
                                     unchanged_args=True, compare=AgreesWithFiniteDifferences(attention_numerical),
                                     replace_globals={**PROVIDED, "softmax_backward": trusted_softmax_backward}),
    "test_mha_backward": Check("mha_backward", mha_backward, mha_backward_cases, unchanged_args=True,
                               compare=AgreesWithFiniteDifferences(mha_numerical),
                               replace_globals={**PROVIDED, "mha_forward": mha_forward,
                                                "attention_backward": trusted_attention_backward,
                                                "softmax_backward": trusted_softmax_backward}),
}
