"""Trusted hidden tests of Lesson 16 (solutions/16-decoding.py): references and fresh inputs.

Each reference is written here from the lesson's specification, independently of the notebook, and
runs in the grading process. Every `cases` generator starts with fixed edge cases and adds random
ones; all values are drawn from `rng`.

The two samplers' specifications pin how the generator is used (one `rng.random(B)` call for
`sample_tokens`; one `rng.random()` per examined draft and one for the last token for
`speculative_step`) and how a uniform number becomes a token (the inverse of the cumulative
distribution, in sorted order, or in token-id order). So the checks compare the exact draws, and the
generator's state after the call (`Rng`), not only the distributions: a sampler that is close but
wrong (a nucleus one token short, no renormalisation, min(1, q/p), a residual that is not normalised)
draws other tokens on the cases built to tell them apart. `sample_tokens` gets batches of thousands
of rows of the same logits, so a wrong distribution shows in many rows at once.

- `sample_tokens`: ties between logits, temperature 0, top-k at and beyond V, top-p where the crossing
  token matters and where renormalising after top-k moves the nucleus, logits in the hundreds.
- `sampler_check`: correct samples, samples from a wrong distribution, a token of probability 0 drawn
  and not drawn, a target with one possible token, other z.
- `beam_search`: untrained decoders whose hypotheses end with EOS at any length (so the length
  penalty and the finished hypotheses matter), widths 1 to 5, alpha from 0 to 3, max_len from 2 to 6.
  `decoder_step` is the lesson's given function, sent to the kernel (`replace_globals`).
- `speculative_step`: a draft equal to the target (always accepted: the bonus token), a draft that
  proposes a token the target gives probability 0 (always rejected), residuals with several entries
  (normalisation), gamma from 1 to 5.
"""

import numpy as np

from grader.trusted import Check, Rng, Same, call

BOS, EOS = 1, 2


def softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def inverse_cdf(probs, u):
    return int(min(np.searchsorted(np.cumsum(probs), u, side="right"), len(probs) - 1))


# --- Exercise 1: temperature, top-k, top-p ----------------------------------------------------------


def sample_tokens(logits, rng, temperature=1.0, top_k=0, top_p=1.0):
    logits = np.asarray(logits, dtype=np.float64)
    B, V = logits.shape
    order = np.argsort(-logits, axis=1, kind="stable")
    ranked = np.take_along_axis(logits, order, axis=1)
    if temperature == 0:
        probs = (np.arange(V)[None, :] == 0).astype(float).repeat(B, axis=0)
    else:
        probs = softmax(ranked / temperature, axis=1)
    if top_k > 0:
        probs = np.where(np.arange(V)[None, :] < top_k, probs, 0.0)
        probs = probs / probs.sum(axis=1, keepdims=True)
    if top_p < 1.0:
        before = np.concatenate([np.zeros((B, 1)), np.cumsum(probs, axis=1)[:, :-1]], axis=1)
        probs = np.where(before < top_p, probs, 0.0)
        probs = probs / probs.sum(axis=1, keepdims=True)
    u = rng.random(B)
    tokens = np.empty(B, dtype=np.int64)
    for b in range(B):
        kept = np.flatnonzero(probs[b] > 0)
        rank = min(int(np.searchsorted(np.cumsum(probs[b]), u[b], side="right")), int(kept[-1]))
        tokens[b] = order[b, rank]
    return tokens


def compare_tokens(expected, got):
    """The draws must be the specified ones, row by row."""
    problem = Same()(expected, got)
    if problem is None or not isinstance(got, np.ndarray) or got.shape != expected.shape:
        return problem
    wrong = int((got != expected).sum())
    return f"{wrong} of {len(expected)} tokens differ from the specified draws (the shape is right)"


def sample_tokens_cases(rng):
    def seed():
        return Rng(int(rng.integers(2**31)))

    def tiled(logits, n):
        return np.tile(np.asarray(logits, dtype=float), (n, 1))

    # Fixed: one row of probabilities whose nucleus the crossing token decides.
    yield call(tiled(np.log([0.05, 0.5, 0.15, 0.3]), 4000), seed(), top_p=0.7)
    # Renormalising after top-k moves the nucleus: the top 3 renormalised reach 0.83 at the second token.
    yield call(tiled(np.log([0.05, 0.5, 0.15, 0.3]), 4000), seed(), top_k=3, top_p=0.83)
    # The same, crossing token dropped by an off-by-one: 0.5 + 0.3 = 0.8 < 0.85 needs the third token.
    yield call(tiled(np.log([0.05, 0.5, 0.15, 0.3]), 4000), seed(), top_p=0.85)
    # Ties: equal logits rank by token id.
    yield call(tiled([1.0, 3.0, 3.0, 0.0, 3.0], 500), seed(), top_k=2)
    yield call(tiled([1.0, 3.0, 3.0, 0.0, 3.0], 500), seed(), temperature=0)
    # Temperature alone, top-k >= V, large logits.
    yield call(tiled(rng.standard_normal(6), 3000), seed(), temperature=0.6)
    yield call(tiled(rng.standard_normal(5), 1000), seed(), top_k=9)
    yield call(tiled(rng.standard_normal(7) * 100.0, 500), seed(), temperature=30.0, top_p=0.9)
    yield call(rng.standard_normal((1, 6)), seed(), temperature=0)  # one row, greedy
    # Random batches of different rows with every knob.
    for _ in range(3):
        B, V = int(rng.integers(1, 300)), int(rng.integers(2, 12))
        yield call(rng.standard_normal((B, V)) * 2.0, seed(), temperature=float(rng.choice([0.5, 1.0, 1.7])),
                   top_k=int(rng.integers(0, V + 2)), top_p=float(rng.choice([0.3, 0.75, 0.95, 1.0])))
    yield call(tiled(rng.standard_normal(8) * 1.5, 4000), seed(), temperature=1.3, top_k=6,
               top_p=float(rng.uniform(0.5, 0.9)))


# --- Exercise 2: the chi-squared test of a sampler ----------------------------------------------------


def sampler_check(samples, target, z=4.0):
    samples, target = np.asarray(samples), np.asarray(target, dtype=np.float64)
    counts = np.bincount(samples, minlength=len(target)).astype(float)
    possible = target > 0
    d = int(possible.sum()) - 1
    threshold = 0.0 if d == 0 else float(d * (1 - 2 / (9 * d) + z * np.sqrt(2 / (9 * d))) ** 3)
    if counts[~possible].sum() > 0:
        return float("inf"), threshold, False
    expected = len(samples) * target[possible]
    statistic = float(((counts[possible] - expected) ** 2 / expected).sum())
    return statistic, threshold, bool(statistic <= threshold)


def sampler_check_cases(rng):
    def dist(K, zeros=0):
        p = rng.random(K) + 0.05
        p[rng.permutation(K)[:zeros]] = 0.0
        return p / p.sum()

    p = dist(5, zeros=1)
    yield call(rng.choice(5, size=3000, p=p), p)  # a correct sampler, a token of probability 0 never drawn
    q = 0.7 * p + 0.3 * dist(5)
    yield call(rng.choice(5, size=3000, p=q), p)  # a wrong sampler: mass on the zero token, inf
    q = 0.8 * p + 0.2 * np.roll(p, 1) * (p > 0)
    q = q / q.sum()
    yield call(rng.choice(5, size=20000, p=q), p)  # close but wrong, on the support
    yield call(rng.choice(4, size=500, p=dist(4)), dist(4), z=2.5)  # another z, samples far from the target
    yield call(np.full(50, 3), np.array([0.0, 0.0, 0.0, 1.0]))  # one possible token: d = 0
    yield call(np.array([0, 1, 1, 2, 2, 2]), np.array([0.2, 0.3, 0.5]), z=1.0)
    for _ in range(3):
        K = int(rng.integers(2, 30))
        p = dist(K, zeros=int(rng.integers(0, K - 1)))
        yield call(rng.choice(K, size=int(rng.integers(100, 5000)), p=p), p, z=float(rng.uniform(1.0, 5.0)))


# --- Exercise 3: beam search --------------------------------------------------------------------------


def decoder_step(params, tokens, cache, cross_kv, source_valid):
    """Lesson 13's decoding step (the lesson's given function), written out with nothing but NumPy."""

    def layer_norm(x, gamma, beta, eps=1e-5):
        mean = x.mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + eps) * gamma + beta

    def attend(q, K, V, allowed):
        scores = np.einsum("bhd,bhsd->bhs", q, K) / np.sqrt(q.shape[-1])
        scores = np.where(allowed[:, None, :], scores, -np.inf)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return np.einsum("bhs,bhsd->bhd", e / e.sum(axis=-1, keepdims=True), V)

    K_self, V_self = (np.asarray(a, dtype=float) for a in cache)
    K_cross, V_cross = (np.asarray(a, dtype=float) for a in cross_kv)
    B, h, t, hs = K_self.shape
    C = h * hs
    y = params["E"][np.asarray(tokens)] + params["P_dec"][t]
    a = layer_norm(y, params["dec.ln1_gamma"], params["dec.ln1_beta"])
    q, k, v = ((a @ params[name]).reshape(B, h, hs) for name in ("dec.Wq", "dec.Wk", "dec.Wv"))
    K_self = np.concatenate([K_self, k[:, :, None]], axis=2)
    V_self = np.concatenate([V_self, v[:, :, None]], axis=2)
    y = y + attend(q, K_self, V_self, np.ones((B, t + 1), dtype=bool)).reshape(B, C) @ params["dec.Wo"]
    a = layer_norm(y, params["dec.ln2_gamma"], params["dec.ln2_beta"])
    read = attend((a @ params["dec.cross_Wq"]).reshape(B, h, hs), K_cross, V_cross, np.asarray(source_valid, bool))
    y = y + read.reshape(B, C) @ params["dec.cross_Wo"]
    return layer_norm(y, params["lnf_gamma"], params["lnf_beta"]) @ params["U"], (K_self, V_self)


def beam_search(params, cross_kv, source_valid, beam_width, alpha=0.0, max_len=9):
    K_cross, V_cross = (np.asarray(a, dtype=float) for a in cross_kv)
    h, hs = K_cross.shape[1], K_cross.shape[3]
    V = params["U"].shape[1]
    live_tokens, live_scores = [[]], np.zeros(1)
    cache = (np.zeros((1, h, 0, hs)), np.zeros((1, h, 0, hs)))
    finished = []
    for _ in range(max_len):
        n = len(live_tokens)
        fed = np.array([tokens[-1] if tokens else BOS for tokens in live_tokens])
        logits, cache = decoder_step(params, fed, cache, (np.repeat(K_cross, n, 0), np.repeat(V_cross, n, 0)),
                                     np.repeat(np.asarray(source_valid, bool), n, 0))
        log_p = logits - logits.max(axis=1, keepdims=True)
        log_p = log_p - np.log(np.exp(log_p).sum(axis=1, keepdims=True))
        total = (live_scores[:, None] + log_p).reshape(-1)
        keep = np.argsort(-total, kind="stable")[:beam_width - len(finished)]
        next_tokens, next_scores, rows = [], [], []
        for flat in keep:
            parent, token = divmod(int(flat), V)
            if token == EOS:
                finished.append((live_tokens[parent] + [token], float(total[flat])))
            else:
                next_tokens.append(live_tokens[parent] + [token])
                next_scores.append(float(total[flat]))
                rows.append(parent)
        live_tokens, live_scores = next_tokens, np.array(next_scores)
        if not rows:
            break
        cache = (cache[0][rows], cache[1][rows])
    finished += list(zip(live_tokens, live_scores.tolist(), strict=True))
    scores = [log_prob / ((5 + len(tokens)) / 6) ** alpha for tokens, log_prob in finished]
    best = int(np.argmax(scores))
    return np.array(finished[best][0], dtype=np.int64), float(finished[best][1]), float(scores[best])


def _decoder_case(rng, vocab, h, hs, S, beam_width, alpha, max_len, eos_bias=0.0):
    C = h * hs
    params = {"E": rng.standard_normal((vocab, C)), "P_dec": rng.standard_normal((max_len + 1, C))}
    for norm in ("dec.ln1", "dec.ln2", "lnf"):
        params[norm + "_gamma"] = 1 + 0.3 * rng.standard_normal(C)
        params[norm + "_beta"] = 0.3 * rng.standard_normal(C)
    for name in ("dec.Wq", "dec.Wk", "dec.Wv", "dec.Wo", "dec.cross_Wq", "dec.cross_Wo"):
        params[name] = rng.standard_normal((C, C)) / np.sqrt(C)
    params["U"] = 2 * rng.standard_normal((C, vocab)) / np.sqrt(C)
    params["U"][:, EOS] += eos_bias * params["U"][:, EOS] / np.abs(params["U"][:, EOS]).max()
    cross_kv = (rng.standard_normal((1, h, S, hs)), rng.standard_normal((1, h, S, hs)))
    valid = np.arange(S)[None, :] < int(rng.integers(1, S + 1))
    return call(params, cross_kv, valid, beam_width, alpha=alpha, max_len=max_len)


def _greedy(params, cross_kv, source_valid, max_len):
    """Greedy decoding's tokens (beam search of width 1)."""
    return beam_search(params, cross_kv, source_valid, 1, max_len=max_len)[0]


def _extended_after_eos(params, cross_kv, source_valid, width, alpha, max_len):
    """The tokens of a beam search that never sets finished hypotheses aside (EOS extended like any token)."""
    K_cross, V_cross = (np.asarray(a, dtype=float) for a in cross_kv)
    h, hs, V = K_cross.shape[1], K_cross.shape[3], params["U"].shape[1]
    live, scores = [[]], np.zeros(1)
    cache = (np.zeros((1, h, 0, hs)), np.zeros((1, h, 0, hs)))
    for _ in range(max_len):
        n = len(live)
        fed = np.array([t[-1] if t else BOS for t in live])
        logits, cache = decoder_step(params, fed, cache, (np.repeat(K_cross, n, 0), np.repeat(V_cross, n, 0)),
                                     np.repeat(np.asarray(source_valid, bool), n, 0))
        log_p = np.log(softmax(logits, axis=1))
        total = (scores[:, None] + log_p).reshape(-1)
        keep = np.argsort(-total, kind="stable")[:width]
        live = [live[int(f) // V] + [int(f) % V] for f in keep]
        scores = total[keep]
        cache = (cache[0][keep // V], cache[1][keep // V])
        if all(t[-1] == EOS for t in live):
            break
    penalised = [sc / ((5 + len(t)) / 6) ** alpha for t, sc in zip(live, scores, strict=True)]
    return np.array(live[int(np.argmax(penalised))])


def _telling_case(rng, *shape):
    """A case of this shape on which greedy decoding, a search that extends finished hypotheses, and (for
    alpha > 0) the unpenalised choice give other tokens than beam search: drawn again (up to 200 times)."""
    vocab, h, hs, S, width, alpha, max_len = shape
    for _ in range(200):
        case = _decoder_case(rng, *shape)
        params, cross_kv, valid = case.args[:3]
        tokens = beam_search(params, cross_kv, valid, width, alpha=alpha, max_len=max_len)[0]
        if width > 1 and np.array_equal(tokens, _greedy(params, cross_kv, valid, max_len)):
            continue
        if alpha > 0 and np.array_equal(tokens, beam_search(params, cross_kv, valid, width, max_len=max_len)[0]):
            continue
        if width > 1 and np.array_equal(tokens, _extended_after_eos(params, cross_kv, valid, width, alpha, max_len)):
            continue
        return case
    return case


def beam_search_cases(rng):
    # Fixed shapes: (vocab, h, hs, S, width, alpha, max_len); each tells greedy decoding from beam search,
    # and each with alpha > 0 tells the length penalty from none.
    yield _decoder_case(rng, 7, 2, 4, 3, 1, 0.0, 6)  # width 1: greedy decoding itself
    for shape in [(7, 2, 4, 3, 3, 0.0, 6), (7, 2, 4, 3, 4, 1.0, 6), (6, 1, 3, 2, 4, 3.0, 5), (8, 3, 2, 4, 5, 0.6, 4),
                  (7, 2, 4, 3, 5, 0.0, 2), (9, 2, 3, 5, 2, 1.5, 6)]:
        yield _telling_case(rng, *shape)
    for _ in range(6):
        vocab = int(rng.integers(5, 10))
        yield _decoder_case(rng, vocab, int(rng.integers(1, 4)), int(rng.integers(2, 5)), int(rng.integers(1, 6)),
                            int(rng.integers(1, 6)), float(rng.choice([0.0, 0.6, 1.0, 2.0])), int(rng.integers(2, 7)))


# --- Exercise 4: the speculative accept/reject step ---------------------------------------------------


def speculative_step(p, q, draft, rng):
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    out = []
    for i, x in enumerate(np.asarray(draft)):
        r = rng.random()
        if r < p[i, x] / q[i, x]:
            out.append(int(x))
            continue
        residual = np.maximum(p[i] - q[i], 0.0)
        out.append(inverse_cdf(residual / residual.sum(), rng.random()))
        return np.array(out, dtype=np.int64)
    out.append(inverse_cdf(p[len(out)], rng.random()))
    return np.array(out, dtype=np.int64)


def speculative_step_cases(rng):
    def seed():
        return Rng(int(rng.integers(2**31)))

    def rows(n, V, spread=1.5, zeros=0):
        logits = spread * rng.standard_normal((n, V))
        for row in logits:
            row[rng.permutation(V)[:zeros]] = -np.inf
        return softmax(logits, axis=1)

    def case(gamma, V, p=None, q=None, zeros_p=0):
        p = rows(gamma + 1, V, zeros=zeros_p) if p is None else p
        q = rows(gamma, V) if q is None else q
        draft = np.array([rng.choice(V, p=row) for row in q])
        return call(p, q, draft, seed())

    # Fixed, with fixed generators: a rejection whose uniform number falls where the normalised and the
    # unnormalised residual give different tokens (and where min(1, q/p) accepts instead).
    yield call(np.array([[0.1, 0.2, 0.3, 0.4], [0.25] * 4]), np.array([[0.4, 0.3, 0.2, 0.1]]), np.array([0]), Rng(10))
    yield call(np.array([[0.4, 0.3, 0.2, 0.1], [0.05, 0.55, 0.35, 0.05], [0.25] * 4]),
               np.array([[0.3, 0.3, 0.2, 0.2], [0.3, 0.1, 0.1, 0.5]]), np.array([0, 3]), Rng(5))
    p = rows(4, 5)
    yield case(3, 5, p=p, q=p[:3].copy())  # the draft equals the target: all accepted, then the bonus
    yield case(1, 4, p=np.array([[0.0, 0.5, 0.5, 0.0], [0.25] * 4]), q=np.array([[0.7, 0.1, 0.1, 0.1]]))
    for _ in range(12):  # residuals with several entries; min(1, q/p) and an unnormalised residual differ here
        yield case(int(rng.integers(1, 4)), int(rng.integers(3, 7)), zeros_p=int(rng.integers(0, 2)))
    for _ in range(10):  # drafts far from the target: many rejections
        V = int(rng.integers(2, 9))
        gamma = int(rng.integers(1, 6))
        yield case(gamma, V, q=rows(gamma, V, spread=3.0))
    for _ in range(6):  # drafts close to the target: many bonus tokens
        V, gamma = int(rng.integers(2, 9)), int(rng.integers(1, 6))
        p = rows(gamma + 1, V)
        q = 0.9 * p[:gamma] + 0.1 * rows(gamma, V)
        yield case(gamma, V, p=p, q=q)


CHECKS = {
    "test_sample_tokens": Check("sample_tokens", sample_tokens, sample_tokens_cases, unchanged_args=True,
                                compare=compare_tokens, replace_globals={"softmax": softmax}),
    "test_sampler_check": Check("sampler_check", sampler_check, sampler_check_cases, unchanged_args=True,
                                compare=Same(rtol=1e-9, atol=1e-12)),
    "test_beam_search": Check("beam_search", beam_search, beam_search_cases, unchanged_args=True,
                              compare=Same(rtol=1e-6, atol=1e-9, array_like=True),
                              replace_globals={"decoder_step": decoder_step, "softmax": softmax}),
    "test_speculative_step": Check("speculative_step", speculative_step, speculative_step_cases, unchanged_args=True,
                                   compare=Same(array_like=True), replace_globals={"inverse_cdf": inverse_cdf}),
}
