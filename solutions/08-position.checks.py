"""Trusted hidden tests of Lesson 8 (solutions/08-position.py): references and fresh inputs.

Each reference is written here from the equations, independently of the notebook: the grader runs
it in its own process, so it must not import anything a submission could have changed. Every
`cases` generator starts with fixed edge cases (the width d = 2, one position, unsorted and
repeated positions, several leading axes, other bases) and adds random shapes; all values are
drawn from `rng`, which is seeded afresh for every grading run.

`apply_rope` gets one input too large for the (T, d, d) rotation matrices of the lesson's section 4
(8 GiB, more than a graded kernel may address): an answer that copies `rope_matrices` and
`rope_rotate` instead of calling them (calling them is refused) runs out of memory there.

`sinusoidal_encoding` runs with the lesson's `sinusoidal_loop` and the builtin `range` refused (the
notebook's globals `sinusoidal_loop` and `range` replaced): the exercise asks for the table by
broadcasting, so an answer that calls the lesson's loop or copies it fails.

`rope_scores` is checked against a reference computed from the offsets alone: entry (m, n) is
q_m^T R(p_n - p_m) k_n / sqrt(d), built from p_n - p_m without rotating anything to an absolute
position. Some of its cases send the same q and k twice, with every position shifted by a large
constant the second time; the reference's answer is then the same matrix both times, so those
cases pass only if the student's scores do not change under the shift.

`rope_scores` may call the student's `apply_rope`. While the grader calls it, `replace_globals`
puts this file's `apply_rope` in place of the notebook's, as the visible checks do with theirs:
a wrong apply_rope costs Exercise 2 only.
"""

import numpy as np

from grader.trusted import Check, Same, call
from grader.trusted.wire import Raised


def sinusoidal_encoding(T, d):
    omega = 10000.0 ** (-np.arange(d // 2) * 2.0 / d)  # (d/2,): pair i turns at 10000^(-2i/d)
    angle = np.arange(T, dtype=float)[:, None] * omega[None, :]  # (T, d/2)
    pe = np.zeros((T, d))
    pe[:, 0::2] = np.sin(angle)  # PE(t, 2i)
    pe[:, 1::2] = np.cos(angle)  # PE(t, 2i + 1)
    return pe


def sinusoidal_encoding_cases(rng):
    # (T, d): the width 2 (one pair), one position, widths where i/d and 2i/d differ, a long table.
    shapes = [(1, 2), (6, 2), (5, 4), (3, 6), (9, 10), (1, 16), (200, 64), (4, 128)]
    shapes += [(int(rng.integers(1, 81)), 2 * int(rng.integers(1, 33))) for _ in range(3)]
    for T, d in shapes:
        yield call(T, d)


def sinusoidal_loop(*args):  # the lesson's loop, and range, refused while the student's function is called
    raise PermissionError("Exercise 1 asks for the table without sinusoidal_loop and without a Python loop")


def sinusoidal_encoding_compare(expected, got):
    if isinstance(got, Raised) and got.name == "PermissionError":
        return ("raised PermissionError: it called sinusoidal_loop or range (a copy of the lesson's loop), which the "
                "exercise forbids")
    return Same()(expected, got)


def apply_rope(x, positions, base=10000):
    d = x.shape[-1]
    theta = float(base) ** (-np.arange(d // 2) * 2.0 / d)  # (d/2,)
    angle = np.asarray(positions, dtype=float)[:, None] * theta[None, :]  # (T, d/2)
    cos, sin = np.cos(angle), np.sin(angle)
    first, second = x[..., 0::2], x[..., 1::2]  # (..., T, d/2): the pairs (2i, 2i + 1)
    out = np.zeros(x.shape)
    out[..., 0::2] = first * cos - second * sin
    out[..., 1::2] = first * sin + second * cos
    return out


def rope_matrices(*args, **kwargs):  # section 4's (d, d) matrices, refused while apply_rope is called
    raise PermissionError("Exercise 2 asks for the rotation without (d, d) matrices")


def apply_rope_compare(expected, got):
    if isinstance(got, Raised) and got.name == "PermissionError":
        return "raised PermissionError: it called rope_matrices or rope_rotate, which the exercise forbids"
    return Same()(expected, got)


LARGE_ROPE = (4, 16384)  # (T, d)


def apply_rope_cases(rng):
    # (x shape, positions, base or None for the default): no batch axis, d = 2, unsorted and repeated
    # positions, positions past a thousand, one to four leading axes, other bases.
    configs = [
        ((1, 2), [0], None),
        ((3, 2), [0, 1, 2], None),
        ((4, 6), [5, 0, 9, 2], None),
        ((2, 3, 4, 8), [1000, 1001, 1002, 1003], None),
        ((2, 5, 4), [2, 2, 7, 0, 1], 100.0),
        ((1, 1, 2, 3, 4), [3, 11, 4], None),
        ((6, 32), [0, 37, 74, 111, 148, 185], 500000.0),
    ]
    for _ in range(3):
        batch = tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, 3))))
        T, d = int(rng.integers(1, 9)), 2 * int(rng.integers(1, 11))
        configs.append(((*batch, T, d), rng.integers(0, 5000, size=T), None))
    for shape, positions, base in configs:
        x = rng.standard_normal(shape)
        positions = np.asarray(positions, dtype=np.int64)
        yield call(x, positions) if base is None else call(x, positions, base=base)
    # The base as a positional argument.
    yield call(rng.standard_normal((5, 2)), np.arange(5, dtype=np.int64) * 3, 10)
    # Too wide for section 4's matrices, copied or called: one (d, d) rotation per position is
    # T * d * d = 2**30 float64 numbers, 8 GiB, twice the address space of a graded kernel
    # (KernelLimits.memory_limit), so building them raises MemoryError; x takes 512 KiB, so the result
    # fits in what a cell may output.
    T, d = LARGE_ROPE
    yield call(rng.standard_normal((T, d)), rng.integers(0, 5000, size=T).astype(np.int64))
    # The relative-position property: one q and one k at every position (x[0] and x[1]), positions
    # shifted by a random offset; rotated, q_m . k_n must depend only on m - n.
    T, d = 10, 16
    q, k = rng.standard_normal(d), rng.standard_normal(d)
    x = np.stack([np.tile(q, (T, 1)), np.tile(k, (T, 1))])  # (2, T, d)
    yield call(x, np.arange(T, dtype=np.int64) + int(rng.integers(0, 10000)))


def rope_scores(q, k, positions):
    # (R_m q) . (R_n k) = q^T R(n - m) k: only the offsets p_n - p_m enter. Per pair, with
    # (a, b) = (q_2i, q_2i+1), (c, e) = (k_2i, k_2i+1) and alpha = (p_n - p_m) theta_i:
    # (a, b) . R(alpha) (c, e) = (a c + b e) cos(alpha) + (b c - a e) sin(alpha).
    d = q.shape[-1]
    theta = 10000.0 ** (-np.arange(d // 2) * 2.0 / d)  # (d/2,)
    p = np.asarray(positions, dtype=float)
    alpha = (p[None, :] - p[:, None])[:, :, None] * theta  # (T, T, d/2): entry (m, n) uses p_n - p_m
    qa, qb, ka, kb = q[..., 0::2], q[..., 1::2], k[..., 0::2], k[..., 1::2]  # (..., T, d/2) each
    aligned = np.einsum("...mi,...ni->...mni", qa, ka) + np.einsum("...mi,...ni->...mni", qb, kb)
    crossed = np.einsum("...mi,...ni->...mni", qb, ka) - np.einsum("...mi,...ni->...mni", qa, kb)
    return (aligned * np.cos(alpha) + crossed * np.sin(alpha)).sum(axis=-1) / np.sqrt(d)  # (..., T, T)


def rope_scores_cases(rng):
    # (q and k shape, positions): one position, d = 2, unsorted positions, two leading axes.
    configs = [((1, 2), [0]), ((4, 2), [0, 1, 2, 3]), ((5, 6), [3, 0, 8, 1, 5]),
               ((2, 3, 6, 8), [7, 8, 9, 10, 11, 12])]
    for _ in range(2):
        batch = tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, 3))))
        T, d = int(rng.integers(1, 9)), 2 * int(rng.integers(1, 11))
        configs.append(((*batch, T, d), rng.integers(0, 2000, size=T)))
    for shape, positions in configs:
        yield call(rng.standard_normal(shape), rng.standard_normal(shape), np.asarray(positions, dtype=np.int64))
    # Shift every position by the same constant: the reference gives the same scores both times.
    for shape in [(3, 5, 8), (2, 2, 4, 4)]:
        q, k = rng.standard_normal(shape), rng.standard_normal(shape)
        positions = rng.integers(0, 50, size=shape[-2])
        yield call(q, k, positions.astype(np.int64))
        yield call(q, k, (positions + int(rng.integers(10_000, 100_000))).astype(np.int64))


CHECKS = {
    "test_sinusoidal_encoding": Check("sinusoidal_encoding", sinusoidal_encoding, sinusoidal_encoding_cases,
                                      compare=sinusoidal_encoding_compare,
                                      replace_globals={"sinusoidal_loop": sinusoidal_loop, "range": sinusoidal_loop}),
    "test_apply_rope": Check("apply_rope", apply_rope, apply_rope_cases, unchanged_args=True,
                             compare=apply_rope_compare,
                             replace_globals={"rope_matrices": rope_matrices, "rope_rotate": rope_matrices}),
    "test_rope_scores": Check("rope_scores", rope_scores, rope_scores_cases, unchanged_args=True,
                              replace_globals={"apply_rope": apply_rope}),
}
