"""Trusted hidden tests of Lesson 9 (solutions/09-learning.py): references and fresh inputs.

Each reference is written here from the equations, independently of the notebook: the grader runs
it in its own process, so it must not import anything a submission could have changed. Every
`cases` generator starts with fixed edge cases (one row, one class, logits of +-1000, a fresh Adam
state, hyperparameters other than the lesson's) and adds random ones; all values are drawn from
`rng`, which is seeded afresh for every grading run. Both checks run with floating-point warnings
raised as errors (`strict_floats`): a softmax that overflows, a log of 0, or a bias correction
that divides by 1 - beta**0 = 0 fails the call instead of printing a warning.
"""

import numpy as np

from grader.trusted import Check, call


def cross_entropy_and_grad(logits, targets):
    N = logits.shape[0]
    rows = np.arange(N)
    row_max = logits.max(axis=1)  # (N,)
    log_sum_exp = row_max + np.log(np.exp(logits - row_max[:, None]).sum(axis=1))  # (N,): log sum_k e^z_k
    loss = float(np.mean(log_sum_exp - logits[rows, targets]))
    probabilities = np.exp(logits - log_sum_exp[:, None])  # (N, K): softmax of each row
    one_hot = np.zeros_like(logits)
    one_hot[rows, targets] = 1.0
    return loss, (probabilities - one_hot) / N  # dL/dz for the MEAN loss


def cross_entropy_and_grad_cases(rng):
    # Fixed: one row of one class; a small batch (the gradient must be divided by N); K = 2.
    yield call(rng.standard_normal((1, 1)) * 3, np.array([0]))
    yield call(rng.standard_normal((3, 4)), np.array([0, 3, 3]))
    yield call(rng.standard_normal((6, 2)) * 5, rng.integers(0, 2, size=6))
    # Logits of +-1000: exp overflows without the max subtraction, and the log of a softmax
    # computed first meets exact zeros. Row 0's target sits at -1000 (a loss near 2000).
    huge = rng.choice([-1000.0, 1000.0], size=(4, 5))
    huge[0] = [1000.0, -1000.0, 0.0, 500.0, -3.0]
    huge[1] = 1000.0  # all equal: a loss of log 5
    huge[2] = -1000.0  # all equal and very negative: a naive sum of exponentials is exactly 0
    yield call(huge, np.array([1, 4, 2, int(rng.integers(5))]))
    # Every target the same class, and moderate logits of another width.
    yield call(rng.standard_normal((5, 7)) * 2, np.full(5, int(rng.integers(7))))
    # Random: N rows, K classes, scales from 0.1 to about 300, and one at the size of the fixed +-1000 case.
    for scale in (10 ** rng.uniform(-1, 2.5), 10 ** rng.uniform(-1, 2.5), 800.0):
        N, K = int(rng.integers(1, 21)), int(rng.integers(2, 16))
        yield call(rng.standard_normal((N, K)) * scale, rng.integers(0, K, size=N))


def adam_step(params, grads, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    t = state["t"] + 1  # the bias correction uses the incremented count
    new_params, new_m, new_v = {}, {}, {}
    for name, theta in params.items():
        g = grads[name]
        new_m[name] = beta1 * state["m"][name] + (1 - beta1) * g
        new_v[name] = beta2 * state["v"][name] + (1 - beta2) * np.square(g)
        m_hat = new_m[name] / (1 - beta1 ** t)
        v_hat = new_v[name] / (1 - beta2 ** t)
        new_params[name] = theta - lr * m_hat / (np.sqrt(v_hat) + eps)
    return new_params, {"t": t, "m": new_m, "v": new_v}


def _adam_inputs(rng, shapes, t, zero_share=0.0):
    """params, grads and a state at step count t for parameters of the given {name: shape}."""
    params = {name: rng.standard_normal(shape) * 0.1 for name, shape in shapes.items()}
    grads = {name: rng.standard_normal(shape) * 10 ** rng.uniform(-4, 0) for name, shape in shapes.items()}
    for g in grads.values():
        g[rng.random(g.shape) < zero_share] = 0.0  # exact zeros: v may be 0, and eps keeps the step finite
    if t == 0:
        m = {name: np.zeros(shape) for name, shape in shapes.items()}
        v = {name: np.zeros(shape) for name, shape in shapes.items()}
    else:
        m = {name: rng.standard_normal(shape) * 0.01 for name, shape in shapes.items()}
        v = {name: rng.standard_normal(shape) ** 2 * 1e-4 for name, shape in shapes.items()}
    return params, grads, {"t": t, "m": m, "v": v}


def adam_step_cases(rng):
    # Fixed: the first step from a fresh state with the lesson's settings (no bias correction moves
    # each entry 3.16 times too far; a t used before its increment divides by 0).
    yield call(*_adam_inputs(rng, {"w": (3,)}, 0), 0.01, (0.9, 0.999), 1e-8)
    # A fresh state with other settings, several parameters, some gradients exactly 0.
    yield call(*_adam_inputs(rng, {"W": (2, 3), "b": (4,)}, 0, zero_share=0.3), 0.1, (0.5, 0.75), 1e-3)
    # Mid-training: a state at t = 4 with nonzero averages.
    yield call(*_adam_inputs(rng, {"Wq": (3, 3), "br": (5,)}, 4), 0.003, (0.8, 0.99), 1e-6)
    # Late: beta1**t is negligible at t = 999, beta2**t is not.
    yield call(*_adam_inputs(rng, {"Wo": (2, 2)}, 999), 0.01, (0.9, 0.999), 1e-8)
    # All gradients zero: the parameters still move, by the decaying momentum.
    params, grads, state = _adam_inputs(rng, {"Wr": (4, 2)}, 2)
    yield call(params, {"Wr": np.zeros((4, 2))}, state, 0.05, (0.9, 0.999), 1e-8)
    # Random: names, shapes, step counts and settings.
    for _ in range(2):
        names = rng.choice(["Wq", "Wk", "Wv", "Wo", "Wr", "br"], size=int(rng.integers(1, 4)), replace=False)
        shapes = {str(name): tuple(int(n) for n in rng.integers(1, 5, size=int(rng.integers(1, 3)))) for name in names}
        yield call(*_adam_inputs(rng, shapes, int(rng.integers(0, 50)), zero_share=0.2),
                   float(10 ** rng.uniform(-4, -1)), (float(rng.uniform(0.5, 0.95)), float(rng.uniform(0.9, 0.9999))),
                   float(10 ** rng.uniform(-10, -4)))


CHECKS = {
    "test_cross_entropy_and_grad": Check("cross_entropy_and_grad", cross_entropy_and_grad, cross_entropy_and_grad_cases,
                                         unchanged_args=True, strict_floats=True),
    "test_adam_step": Check("adam_step", adam_step, adam_step_cases, unchanged_args=True, strict_floats=True),
}
