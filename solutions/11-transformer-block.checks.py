"""Trusted hidden tests of Lesson 11 (solutions/11-transformer-block.py): references and fresh inputs.

Each reference is written here from the exercise's statement, independently of the notebook: the
grader runs it in its own process, so it must not import anything a submission could have changed.
Every `cases` generator starts with fixed cases that each common-mistake fixture fails (one feature,
a constant position, a variance near eps, one head, one position, a causal and a padding mask, the
last head, a > b), then adds random shapes; all values are drawn from `rng`, which is seeded afresh
for every grading run.

`layer_norm_backward` is judged twice, in this process: against the reference, and against central
differences of this file's own `layer_norm` on the same inputs. The reference hands its gradients
back in a tuple that also holds the inputs (the kernel only ever sees plain arrays), and
`agrees_with_finite_differences` differentiates the forward pass numerically, entry by entry. A
reference that disagreed would be the instructor's mistake and raises `SpecError`.

`layer_norm_backward` also gets one case that numerical differentiation cannot pass: one position
of 50,000 features (float64; its three gradients, 1.2 MB, fit a cell's output), checked against the
reference alone to rtol 1e-9. Central differences need 100,000 forward passes over the position
(about 23 s of CPU here) and reach only about 1e-6 of relative error there, since every pass sums
50,000 terms; a five-point stencil, which could get closer, needs 200,000 passes (about 46 s), past
the test cell's limit. An analytic answer in float64 agrees with the reference to about 1e-14.
The case cannot grow: at 80,000 features the gradients' base64 passes the 2 MiB a cell may print.
Complex-step differentiation (one complex forward pass per entry, exact to rounding) takes 51 s of
CPU for dx alone here (59 s in batches of 500 perturbed copies), also past the limit, though with
the least margin: a grading machine twice as fast as this one would let it through.

`mlp_backward` gets one float32 case of 2,000 positions of width 64 whose 32,768 weight entries
would each need two forward passes over all positions (an hour of work); it is checked against the
reference (in float64 from the same inputs) to a tolerance a float32 answer meets.

`transformer_block` and `mlp_head_interaction` call the student's `layer_norm` and `gelu` and the
provided attention layer; during the hidden calls the kernel sees this file's definitions under
those names instead (`replace_globals`), so a mistake in another exercise, or an edited provided
cell, costs only its own points.
"""

from typing import Any

import numpy as np

from grader.trusted import Check, Same, call
from grader.trusted.spec import SpecError

# ------------------------------------------------------------------ references, also sent to the kernel
# Plain top-level defs that use only np, as replace_globals requires.


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)  # (..., 1)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)  # (..., 1), divided by C
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h, mask=None, bq=0.0, bk=0.0, bv=0.0, bo=0.0):
    B, T, C = X.shape
    hs = C // h
    Q = (X @ Wq + bq).reshape(B, T, h, hs).transpose(0, 2, 1, 3)  # (B, h, T, hs)
    K = (X @ Wk + bk).reshape(B, T, h, hs).transpose(0, 2, 1, 3)
    V = (X @ Wv + bv).reshape(B, T, h, hs).transpose(0, 2, 1, 3)
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(hs)  # (B, h, T, T)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    concat = (weights @ V).transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, h, T, hs) -> (B, T, C)
    return concat @ Wo + bo, {"weights": weights, "concat": concat}


def causal_mask(T):
    return np.tril(np.ones((T, T), dtype=bool))


def transformer_block(x, params, h, mask=None):
    p = params
    a = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    x1 = x + multi_head_attention_forward(a, p["Wq"], p["Wk"], p["Wv"], p["Wo"], h, mask,
                                          p["bq"], p["bk"], p["bv"], p["bo"])[0]
    z = layer_norm(x1, p["ln2_gamma"], p["ln2_beta"])
    return x1 + gelu(z @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]


def mlp_head_interaction(x, concat, params, h, a, b):
    p = params
    C = concat.shape[-1]
    hs = C // h

    def mlp_output(dropped):
        kept = concat.copy()
        for head in dropped:
            kept[..., head * hs:(head + 1) * hs] = 0.0
        z = layer_norm(x + kept @ p["Wo"] + p["bo"], p["ln2_gamma"], p["ln2_beta"])
        return gelu(z @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]

    return mlp_output([]) - mlp_output([a]) - mlp_output([b]) + mlp_output([a, b])


# ------------------------------------------------------------------ LayerNorm backward, with finite differences


def trusted_layer_norm_backward(dout, x, gamma, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = (x - mean) / sigma
    g = dout * gamma
    dx = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) / sigma
    leading = tuple(range(x.ndim - 1))
    return dx, (dout * x_hat).sum(axis=leading), dout.sum(axis=leading)


class _TupleWithInputs(tuple):
    """The reference's tuple result, with the call's inputs attached (grading process only)."""


def layer_norm_backward(dout, x, gamma, eps=1e-5):
    as64 = (np.asarray(a, dtype=np.float64) for a in (dout, x, gamma))  # float32 inputs: computed in float64
    result = _TupleWithInputs(trusted_layer_norm_backward(*as64, eps))
    result.inputs = (np.array(dout, copy=True), np.array(x, copy=True), np.array(gamma, copy=True), eps)
    return result


def central_differences(f, x, step=1e-6):
    """Gradient of the scalar f() with respect to the float64 array x (perturbed in place, then restored)."""
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + step
        f_plus = f()
        x[index] = original - step
        f_minus = f()
        x[index] = original
        grad[index] = (f_plus - f_minus) / (2 * step)
    return grad


def layer_norm_numerical(dout, x, gamma, eps):
    x, gamma = x.copy(), gamma.copy()
    beta = np.zeros_like(gamma)

    def loss():
        return np.sum(layer_norm(x, gamma, beta, eps) * dout)

    return [central_differences(loss, x), central_differences(loss, gamma), central_differences(loss, beta)]


LARGE_BACKWARD = (1, 50_000)  # (positions, C): one position of 50,000 features


def agrees_with_finite_differences(expected: Any, got: Any) -> str | None:
    """Same as the reference (default tolerance), and each gradient within tolerance of central differences."""
    inputs = getattr(expected, "inputs", None)
    if inputs is None:
        raise SpecError("the reference's result lost the inputs it was computed from")
    if inputs[1].size > 10_000:  # the large case: the reference alone decides, to a precision differences cannot reach
        return Same(rtol=1e-9, atol=1e-11)(expected, got)
    problem = Same()(expected, got)
    if problem is not None:
        return problem
    for name, reference, student, numeric in zip(("dx", "dgamma", "dbeta"), expected, got,
                                                 layer_norm_numerical(*inputs), strict=True):
        if not np.allclose(reference, numeric, rtol=1e-5, atol=1e-6):
            raise SpecError(f"the reference ({name}) disagrees with central differences of the forward pass")
        if not np.allclose(np.asarray(student), numeric, rtol=1e-5, atol=1e-6):
            return f"wrong values ({name}): they disagree with central differences of the forward pass"
    return None


# ------------------------------------------------------------------ fresh inputs


def _affine(rng, C):
    return 1 + 0.5 * rng.standard_normal(C), rng.standard_normal(C)


def layer_norm_cases(rng):
    shapes = [(4, 1), (1, 2), (3, 5), (2, 3, 8), (2, 2, 2, 6), (7,)]  # C = 1: every x_hat is 0
    shapes += [tuple(int(n) for n in rng.integers(1, 6, size=int(rng.integers(1, 4)))) + (int(rng.integers(2, 20)),)
               for _ in range(3)]
    for shape in shapes:
        gamma, beta = _affine(rng, shape[-1])
        yield call(rng.standard_normal(shape) * 3 + 2, gamma, beta)
    gamma, beta = _affine(rng, 5)
    yield call(np.full((2, 5), 1.5), gamma, beta)  # constant positions: the output is beta
    yield call(rng.standard_normal((3, 5)) * 1e-3, gamma, beta)  # variance near eps: eps inside the root matters
    yield call(rng.standard_normal((3, 5)) * 1e-2, gamma, beta, eps=1e-3)  # another eps, by keyword
    yield call(rng.standard_normal((2, 4)), gamma[:4], beta[:4], 0.5)  # and positionally


def layer_norm_backward_cases(rng):
    shapes = [(1, 2), (3, 1), (2, 6), (2, 3, 5), (1, 2, 2, 4)]
    shapes += [tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(1, 3)))) + (int(rng.integers(2, 8)),)
               for _ in range(2)]
    for shape in shapes:
        gamma, _ = _affine(rng, shape[-1])
        yield call(rng.standard_normal(shape), rng.standard_normal(shape) * 2 + 1, gamma)
    gamma, _ = _affine(rng, 4)
    yield call(rng.standard_normal((2, 4)), rng.standard_normal((2, 4)) * 0.05, gamma, eps=1e-3)  # eps matters
    gamma, _ = _affine(rng, LARGE_BACKWARD[1])  # beyond what numerical differentiation can pass
    yield call(rng.standard_normal(LARGE_BACKWARD), rng.standard_normal(LARGE_BACKWARD) * 2 + 1, gamma)


def gelu_cases(rng):
    yield call(np.array([0.0, 1.0, -1.0, 2.0, -3.0, 0.5]))
    yield call(np.linspace(-8.0, 8.0, 41).reshape(41, 1))
    yield call(rng.standard_normal((2, 3, 4)) * 3)
    yield call(np.array([[-50.0, 50.0], [1e-8, -1e-8]]))  # saturated ends, and near zero
    for _ in range(2):
        shape = tuple(int(n) for n in rng.integers(1, 6, size=int(rng.integers(1, 4))))
        yield call(rng.standard_normal(shape) * float(rng.uniform(0.5, 4)))


def _block_params(rng, C):
    def weight(fan_in, fan_out):
        return rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)

    def vector(n, centre):
        return centre + 0.3 * rng.standard_normal(n)

    return {"ln1_gamma": vector(C, 1.0), "ln1_beta": vector(C, 0.0),
            "Wq": weight(C, C), "bq": vector(C, 0.0), "Wk": weight(C, C), "bk": vector(C, 0.0),
            "Wv": weight(C, C), "bv": vector(C, 0.0), "Wo": weight(C, C), "bo": vector(C, 0.0),
            "ln2_gamma": vector(C, 1.0), "ln2_beta": vector(C, 0.0),
            "W1": weight(C, 4 * C), "b1": vector(4 * C, 0.0), "W2": weight(4 * C, C), "b2": vector(C, 0.0)}


def transformer_block_cases(rng):
    configs = [(2, 5, 8, 2, "causal"), (1, 1, 4, 1, None), (2, 4, 6, 3, None), (3, 6, 12, 4, "causal"),
               (2, 5, 8, 4, "padding")]  # (B, T, C, h, mask)
    for _ in range(2):
        h = int(rng.integers(1, 4))
        configs.append((int(rng.integers(1, 4)), int(rng.integers(1, 7)), h * int(rng.integers(1, 4)), h,
                        ["causal", None][int(rng.integers(2))]))
    for B, T, C, h, kind in configs:
        x = rng.standard_normal((B, T, C)) * 2 + 0.5
        params = _block_params(rng, C)
        if kind is None:
            yield call(x, params, h)
        elif kind == "causal":
            yield call(x, params, h, causal_mask(T))
        else:  # keys at or after each sequence's length are padding; every query keeps key 0
            lengths = rng.integers(1, T + 1, size=B)
            yield call(x, params, h, mask=(np.arange(T)[None, :] < lengths[:, None])[:, None, None, :])  # (B, 1, 1, T)


def mlp_head_interaction_cases(rng):
    configs = [(2, 3, 8, 2, 0, 1), (1, 1, 6, 3, 2, 0), (2, 4, 12, 4, 3, 1), (1, 2, 10, 5, 1, 4)]  # (B, T, C, h, a, b)
    for _ in range(2):
        h = int(rng.integers(2, 6))
        a, b = (int(i) for i in rng.choice(h, size=2, replace=False))
        configs.append((int(rng.integers(1, 4)), int(rng.integers(1, 5)), h * int(rng.integers(1, 4)), h, a, b))
    for B, T, C, h, a, b in configs:
        x = rng.standard_normal((B, T, C)) * 0.5 + 0.3  # a stream with an offset, so that LN_2 matters
        yield call(x, rng.standard_normal((B, T, C)), _block_params(rng, C), h, a, b)


PROVIDED = {"softmax": softmax, "multi_head_attention_forward": multi_head_attention_forward,
            "causal_mask": causal_mask}  # the lesson's provided functions

CHECKS = {
    "test_layer_norm": Check("layer_norm", layer_norm, layer_norm_cases, unchanged_args=True),
    "test_layer_norm_backward": Check("layer_norm_backward", layer_norm_backward, layer_norm_backward_cases,
                                      unchanged_args=True, compare=agrees_with_finite_differences),
    "test_gelu": Check("gelu", gelu, gelu_cases, unchanged_args=True),
    "test_transformer_block": Check("transformer_block", transformer_block, transformer_block_cases,
                                    unchanged_args=True,
                                    replace_globals={**PROVIDED, "layer_norm": layer_norm, "gelu": gelu}),
    "test_mlp_head_interaction": Check("mlp_head_interaction", mlp_head_interaction, mlp_head_interaction_cases,
                                       unchanged_args=True, replace_globals={"layer_norm": layer_norm, "gelu": gelu}),
}


# ------------------------------------------------------------------ the MLP's backward pass


def mlp_backward(dout, z, params):
    p = {k: np.asarray(params[k], dtype=np.float64) for k in ("W1", "b1", "W2", "b2")}
    dout, z = np.asarray(dout, dtype=np.float64), np.asarray(z, dtype=np.float64)  # float32 inputs: in float64
    u = z @ p["W1"] + p["b1"]
    k = np.sqrt(2.0 / np.pi)
    s = np.tanh(k * (u + 0.044715 * u**3))
    du = (dout @ p["W2"].T) * (0.5 * (1 + s) + 0.5 * u * (1 - s**2) * k * (1 + 3 * 0.044715 * u**2))
    a = gelu(u)
    rows = tuple(range(z.ndim - 1))
    return (du @ p["W1"].T, np.tensordot(z, du, axes=(rows, rows)), du.sum(axis=rows),
            np.tensordot(a, dout, axes=(rows, rows)), dout.sum(axis=rows))


LARGE_MLP = (1, 2000, 64)  # (B, T, C), float32: the weights alone have 32,768 entries, each two passes over all


def mlp_backward_cases(rng):
    for shape in [(1, 1), (3, 2), (2, 3, 4), (1, 2, 2, 3)]:  # one feature; one position; leading axes
        C = shape[-1]
        yield call(rng.standard_normal(shape), rng.standard_normal(shape) * 1.5, _block_params(rng, C))
    C = 5
    yield call(rng.standard_normal((2, C)), rng.standard_normal((2, C)) * 6, _block_params(rng, C))  # saturated GELU
    for _ in range(2):
        shape = tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(1, 3)))) + (int(rng.integers(1, 7)),)
        yield call(rng.standard_normal(shape), rng.standard_normal(shape), _block_params(rng, shape[-1]))
    B, T, C = LARGE_MLP  # no time to differentiate numerically
    params = {k: v.astype(np.float32) for k, v in _block_params(rng, C).items()}
    yield call(rng.standard_normal(LARGE_MLP).astype(np.float32), rng.standard_normal(LARGE_MLP).astype(np.float32),
               params)


def same_mlp_gradients(expected: Any, got: Any) -> str | None:
    """The reference's gradients to the default tolerance, or, for the large float32 case, to a float32 answer's."""
    large = np.size(expected[0]) > 20_000  # dz has the shape of z: only the large case is this big
    return (Same(rtol=1e-4, atol=1e-4) if large else Same())(expected, got)


CHECKS["test_mlp_backward"] = Check("mlp_backward", mlp_backward, mlp_backward_cases, unchanged_args=True,
                                    compare=same_mlp_gradients, replace_globals={"gelu": gelu})
