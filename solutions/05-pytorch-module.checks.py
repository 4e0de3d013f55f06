"""Trusted hidden tests of Lesson 5 (solutions/05-pytorch-module.py): references and fresh inputs.

The lesson's exercises are written in PyTorch, but this spec is not: every reference is NumPy,
written here from the equations, so the grading process never imports torch (nor anything a
submission could have changed). The three exercises take and return tensors (`tensors=True`): the
kernel-side harness hands the student's function `torch.from_numpy` views of the inputs drawn here
(float32, PyTorch's default, as in the lesson) and converts the tensors it returns back to NumPy
arrays before reporting them; a NumPy array where a tensor belongs is rejected there. The float32
results are compared with float64 references, within the tolerance the visible checks use.

Every `cases` generator starts with fixed edge cases (one head, one position, one head per
feature, GPT-2's head size, a width of one) that every common mistake fails, then adds random
shapes; all values are drawn from `rng`, which is seeded afresh for every grading run.
"""

import numpy as np

from grader.trusted import Check, Same, call


def split_heads(qkv_out, n_head):
    B, T, three_C = qkv_out.shape
    C = three_C // 3
    D = C // n_head
    q, k, v = (qkv_out[..., i * C:(i + 1) * C] for i in range(3))  # (B, T, 3C) -> three (B, T, C): [q | k | v]
    return tuple(t.reshape(B, T, n_head, D).transpose(0, 2, 1, 3) for t in (q, k, v))  # (B, T, H, D) -> (B, H, T, D)


def split_heads_cases(rng):
    shapes = [(1, 1, 4, 1), (3, 5, 12, 4), (2, 7, 64, 8), (2, 4, 6, 6), (1, 3, 10, 2), (2, 3, 12, 3)]  # (B, T, C, H)
    for _ in range(2):
        H = int(rng.integers(2, 9))
        shapes.append((int(rng.integers(1, 4)), int(rng.integers(2, 9)), H * int(rng.integers(1, 9)), H))
    for B, T, C, H in shapes:
        yield call(rng.standard_normal((B, T, 3 * C)).astype(np.float32), H)


def scaled_attention_weights(q, k):
    q, k = q.astype(np.float64), k.astype(np.float64)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])  # (B, H, T, D) @ (B, H, D, T) -> (B, H, T, T)
    scores -= scores.max(axis=-1, keepdims=True)  # the max subtracted: exp cannot overflow
    weights = np.exp(scores)
    return weights / weights.sum(axis=-1, keepdims=True)  # each row, over the keys, sums to 1


def scaled_attention_weights_cases(rng):
    shapes = [(1, 1, 1, 4), (2, 4, 7, 9), (3, 2, 6, 25), (1, 12, 10, 64), (2, 1, 5, 4), (1, 3, 4, 36)]  # (B, H, T, D)
    shapes += [(int(rng.integers(1, 4)), int(rng.integers(1, 7)), int(rng.integers(2, 11)), int(D))
               for D in rng.choice([2, 3, 5, 8, 12, 20, 32, 48], size=2, replace=False)]
    for shape in shapes:
        yield call(rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32))


def unpack_weights(qkv_weight, proj_weight):
    C = proj_weight.shape[0]
    blocks = [qkv_weight[i * C:(i + 1) * C] for i in range(3)]  # nn.Linear's (out, in) blocks: W_q^T, W_k^T, W_v^T
    return tuple(block.T for block in blocks) + (proj_weight.T,)  # Lesson 3's (in, out) layout, used as X @ W


def unpack_weights_cases(rng):
    for C in [1, 2, 3, 12, 48]:  # fixed widths: one feature (a transpose changes nothing), then several
        yield call(rng.standard_normal((3 * C, C)).astype(np.float32), rng.standard_normal((C, C)).astype(np.float32))
    for C in (int(n) for n in rng.integers(4, 41, size=2)):
        yield call(rng.standard_normal((3 * C, C)).astype(np.float32), rng.standard_normal((C, C)).astype(np.float32))


CHECKS = {
    "test_split_heads": Check("split_heads", split_heads, split_heads_cases, unchanged_args=True, tensors=True),
    "test_scaled_attention_weights": Check("scaled_attention_weights", scaled_attention_weights,
                                           scaled_attention_weights_cases, compare=Same(atol=1e-6), tensors=True),
    "test_unpack_weights": Check("unpack_weights", unpack_weights, unpack_weights_cases, unchanged_args=True,
                                 tensors=True),
}
