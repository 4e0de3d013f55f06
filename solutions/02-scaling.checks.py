"""Trusted hidden tests of Lesson 2 (solutions/02-scaling.py): references, fresh inputs, the quiz's key.

Each reference is written here from the equations, independently of the notebook: the grader runs
it in its own process, so it must not import anything a submission could have changed. Every
`cases` generator starts with fixed edge cases (no batch axis, one position, d_k = 1, one-hot rows,
scores in the hundreds) and adds random shapes; all values are drawn from `rng`, which is seeded
afresh for every grading run. The quiz has no inputs: its kernel side only reports the letters the
student chose, and the answer key below is compared with them here, in the grading process.
"""

import numpy as np

from grader.trusted import Check, Same, call


def scaled_dot_product_attention(Q, K, V):
    scores = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(Q.shape[-1])  # (..., T_q, T_k)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))  # every exponent <= 0: no overflow
    weights /= weights.sum(axis=-1, keepdims=True)  # each query's row sums to 1 over the keys
    return np.einsum("...qk,...kv->...qv", weights, V), weights  # (..., T_q, d_v), (..., T_q, T_k)


def scaled_dot_product_attention_cases(rng):
    shapes = [((), 1, 1, 1, 1), ((3,), 4, 6, 9, 2), ((2, 2, 2), 3, 5, 100, 4), ((1, 4), 7, 7, 256, 8),
              ((5,), 2, 3, 25, 25)]  # (leading axes, T_q, T_k, d_k, d_v): no batch axis, one position, d_k = 1
    for _ in range(2):
        lead = tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, 3))))
        shapes.append((lead, *(int(n) for n in rng.integers(1, 8, size=2)), int(rng.integers(1, 65)),
                       int(rng.integers(1, 9))))
    for lead, T_q, T_k, d_k, d_v in shapes:
        yield call(rng.standard_normal((*lead, T_q, d_k)), rng.standard_normal((*lead, T_k, d_k)),
                   rng.standard_normal((*lead, T_k, d_v)))
    # Scores in the hundreds (std about 900), and key 0 equal to query 0 (a score near 7200 in each
    # batch): a softmax without the max subtraction overflows, whatever the draw.
    Q, K = rng.standard_normal((2, 6, 64)) * 30, rng.standard_normal((2, 6, 64)) * 30
    K[:, 0] = Q[:, 0]
    yield call(Q, K, rng.standard_normal((2, 6, 5)))


def softmax_backward(p, grad_p):
    jacobian = p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]  # diag(p) - p p^T, (..., T, T)
    return np.einsum("...ji,...j->...i", jacobian, grad_p)  # dL/ds = J^T dL/dp for every row, (..., T)


def _softmax_rows(rng, shape, spread):
    """Softmax rows of `shape` (..., T): the softmax of random scores with standard deviation `spread`."""
    scores = rng.standard_normal(shape) * spread
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_backward_cases(rng):
    # One row of one key (the gradient is 0), one row without a batch axis, one to three batch axes.
    for shape in [(1,), (5,), (3, 4), (2, 3, 6), (1, 1, 2), (2, 2, 2, 3)]:
        yield call(_softmax_rows(rng, shape, 2.0), rng.standard_normal(shape))
    yield call(np.eye(6)[rng.permutation(6)], rng.standard_normal((6, 6)))  # one-hot rows: J = 0, no gradient
    yield call(np.full((3, 5), 0.2), rng.standard_normal((3, 5)))  # uniform rows
    yield call(_softmax_rows(rng, (4, 8), 8.0), rng.standard_normal((4, 8)) * 10)  # nearly saturated rows
    for _ in range(3):
        shape = (*(int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, 3)))), int(rng.integers(2, 10)))
        yield call(_softmax_rows(rng, shape, float(rng.uniform(0.5, 5.0))), rng.standard_normal(shape))


def predicted_score_std(d_model, d_k, weight_std, scaled):
    var_entry = d_model * weight_std ** 2  # each q_j (and k_j) sums d_model products of variance weight_std^2
    var_score = d_k * var_entry ** 2  # q . k sums d_k independent products q_j k_j of variance var_entry^2
    return float(np.sqrt(var_score / d_k if scaled else var_score))


def predicted_score_std_cases(rng):
    configs = [(100, 25, 0.3, False), (100, 25, 0.3, True), (768, 64, 0.02, True), (768, 64, 0.02, False),
               (12, 3, 2.0, False), (1, 1, 1.0, True), (4096, 128, 0.01, True)]  # (d_model, d_k, weight_std, scaled)
    for scaled in (False, True):
        configs.append((int(rng.integers(1, 2049)), int(rng.integers(1, 257)),
                        float(10 ** rng.uniform(-2, 0.5)), scaled))
    for config in configs:
        yield call(*config)


QUIZ_KEY = {"q1": "b", "q2": "c", "q3": "d", "q4": "c"}


def quiz_answers():
    return dict(QUIZ_KEY)


def quiz_answers_cases(rng):
    yield call()  # no inputs: the kernel reports the student's letters, the key stays here


def quiz_letters(expected, got):
    """None if every answer is the key's letter (case and surrounding spaces ignored), else the wrong ones."""
    if not isinstance(got, dict) or set(got) != set(expected):
        return "the answers could not be read: set q1, q2, q3 and q4 to letters"
    wrong = [name for name in sorted(expected)
             if not (isinstance(got[name], str) and got[name].strip().lower() == expected[name])]
    return f"not right yet: {', '.join(wrong)}" if wrong else None


CHECKS = {
    "test_scaled_dot_product_attention": Check("scaled_dot_product_attention", scaled_dot_product_attention,
                                               scaled_dot_product_attention_cases, strict_floats=True),
    "test_softmax_backward": Check("softmax_backward", softmax_backward, softmax_backward_cases,
                                   compare=Same(array_like=True), unchanged_args=True),
    "test_predicted_score_std": Check("predicted_score_std", predicted_score_std, predicted_score_std_cases,
                                      compare=Same(rtol=0.01)),
    "test_quiz": Check("quiz_answers", quiz_answers, quiz_answers_cases, compare=quiz_letters, fixed_inputs=True),
}
