"""Trusted hidden tests of Lesson 12 (solutions/12-induction-gpt.py): references and fresh inputs.

Each reference is written here from the lesson's equations, independently of the notebook, and
runs in the grading process. The model's forward pass is defined here too: `gpt_backward` is
called with a cache built by this forward pass on a fresh small model, and `generate` is compared
with greedy decoding by recomputation on fresh small models. Every `cases` generator starts with
fixed edge cases (one block, one head, one position, tokens repeated within a sequence, LayerNorm
weights away from 1 and 0) and adds random ones; all values are drawn from `rng`.

`path_ablation` is compared with a reference that removes what layer 0's head writes from the
chosen reads of layer 1 (queries, keys, values) and from the residual stream, on fresh small models
of two and three blocks, every single road, none, all of them, and a replacement put back.

`ov_circuit` is compared with the lesson's M on fresh models of one to three blocks, in every layer
and for heads other than the first, with LayerNorm weights drawn away from 1 and 0, so that leaving
out the block's LayerNorm, the centring or the final gamma gives another matrix.

`gpt_backward` also gets one case far too large to differentiate numerically within the test
cell's time limit: a model of width 64 with three blocks of four heads, a vocabulary of 64 and 64
positions (61,952 parameters), on one sequence of 64 tokens. Differences of the forward pass need
two forward passes per parameter for central differences and four for a five-point stencil, more
than 100,000 passes of milliseconds each; the backward pass takes milliseconds once. Its inputs
and result stay within a test cell's output limit (about 0.5 MB of gradients).
"""

import numpy as np

from grader.trusted import Check, Same, call

# --- The model (the lesson's gpt_forward), for the two checks that need one -------------------------


def _layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + eps) * gamma + beta


def _layer_norm_backward(dout, x, gamma, eps=1e-5):
    rstd = 1 / np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    x_hat = (x - x.mean(axis=-1, keepdims=True)) * rstd
    g_hat = dout * gamma
    dx = rstd * (g_hat - g_hat.mean(axis=-1, keepdims=True) - x_hat * (g_hat * x_hat).mean(axis=-1, keepdims=True))
    rows = tuple(range(x.ndim - 1))
    return dx, (dout * x_hat).sum(axis=rows), dout.sum(axis=rows)


def _split(x, h):  # (B, T, C) -> (B, h, T, hs)
    B, T, C = x.shape
    return x.reshape(B, T, h, C // h).transpose(0, 2, 1, 3)


def _merge(x):  # (B, h, T, hs) -> (B, T, C)
    B, h, T, hs = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, h * hs)


def _layers(params):
    return sum(1 for name in params if name.endswith(".Wq"))


def _forward(params, tokens, h):
    """The lesson's gpt_forward: (logits (B, T, V), cache)."""
    B, T = tokens.shape
    x = params["E"][tokens] + params["P"][:T]
    blocks = []
    for layer in range(_layers(params)):
        a = _layer_norm(x, params[f"b{layer}.ln1_gamma"], params[f"b{layer}.ln1_beta"])
        Q, K, V = (_split(a @ params[f"b{layer}.{n}"], h) for n in ("Wq", "Wk", "Wv"))
        scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(Q.shape[-1])
        scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = weights / weights.sum(axis=-1, keepdims=True)
        concat = _merge(weights @ V)
        blocks.append({"x_in": x, "a": a, "Q": Q, "K": K, "V": V, "weights": weights, "concat": concat})
        x = x + concat @ params[f"b{layer}.Wo"]
    xf = _layer_norm(x, params["lnf_gamma"], params["lnf_beta"])
    return xf @ params["U"], {"tokens": tokens, "blocks": blocks, "x_final": x, "xf": xf}


def _model(rng, vocab, t_max, width, layers):
    """A fresh model with every parameter drawn at random, LayerNorm weights included."""
    params = {"E": rng.standard_normal((vocab, width)), "P": rng.standard_normal((t_max, width))}
    for layer in range(layers):
        params[f"b{layer}.ln1_gamma"] = 1 + 0.5 * rng.standard_normal(width)
        params[f"b{layer}.ln1_beta"] = 0.5 * rng.standard_normal(width)
        for name in ("Wq", "Wk", "Wv", "Wo"):
            params[f"b{layer}.{name}"] = rng.standard_normal((width, width)) / np.sqrt(width)
    params["lnf_gamma"] = 1 + 0.5 * rng.standard_normal(width)
    params["lnf_beta"] = 0.5 * rng.standard_normal(width)
    params["U"] = rng.standard_normal((width, vocab)) / np.sqrt(width)
    return params


# --- Exercise 1: the backward pass ------------------------------------------------------------------


def gpt_backward(params, cache, dlogits):
    B, T, vocab = dlogits.shape
    width = params["U"].shape[0]
    grads = {"U": cache["xf"].reshape(B * T, width).T @ dlogits.reshape(B * T, vocab)}
    delta, grads["lnf_gamma"], grads["lnf_beta"] = _layer_norm_backward(dlogits @ params["U"].T, cache["x_final"],
                                                                 params["lnf_gamma"])
    for layer in reversed(range(len(cache["blocks"]))):
        block = cache["blocks"][layer]
        Wq, Wk, Wv, Wo = (params[f"b{layer}.{n}"] for n in ("Wq", "Wk", "Wv", "Wo"))
        Q, K, V, weights = block["Q"], block["K"], block["V"], block["weights"]
        h, hs = Q.shape[1], Q.shape[-1]  # (B, h, T, hs): the cache carries the head count
        grads[f"b{layer}.Wo"] = block["concat"].reshape(B * T, width).T @ delta.reshape(B * T, width)
        dper_head = _split(delta @ Wo.T, h)
        dweights = dper_head @ V.transpose(0, 1, 3, 2)
        dV = weights.transpose(0, 1, 3, 2) @ dper_head
        dscores = weights * (dweights - (dweights * weights).sum(axis=-1, keepdims=True))
        dQ, dK = dscores @ K / np.sqrt(hs), dscores.transpose(0, 1, 3, 2) @ Q / np.sqrt(hs)
        a_rows = block["a"].reshape(B * T, width)
        dQ, dK, dV = (_merge(d).reshape(B * T, width) for d in (dQ, dK, dV))
        for name, d in (("Wq", dQ), ("Wk", dK), ("Wv", dV)):
            grads[f"b{layer}.{name}"] = a_rows.T @ d
        da = (dQ @ Wq.T + dK @ Wk.T + dV @ Wv.T).reshape(B, T, width)
        dx, grads[f"b{layer}.ln1_gamma"], grads[f"b{layer}.ln1_beta"] = _layer_norm_backward(da, block["x_in"],
                                                                                    params[f"b{layer}.ln1_gamma"])
        delta = delta + dx  # the residual path plus the path through the block
    grads["E"] = np.zeros_like(params["E"])
    np.add.at(grads["E"], cache["tokens"], delta)
    grads["P"] = np.zeros_like(params["P"])
    grads["P"][:T] = delta.sum(axis=0)
    return grads


def _backward_call(rng, B, T, vocab, t_max, width, layers, h, tokens=None):
    params = _model(rng, vocab, t_max, width, layers)
    if tokens is None:
        tokens = rng.integers(0, vocab, size=(B, T))
    _, cache = _forward(params, tokens, h)
    return call(params, cache, rng.standard_normal((B, T, vocab)) * 0.3)


def gpt_backward_cases(rng):
    # Fixed: two blocks, tokens repeated within a sequence, fewer positions than rows of P.
    yield _backward_call(rng, 2, 4, 5, 6, 8, 2, 2, tokens=np.array([[1, 3, 1, 3], [4, 4, 4, 0]]))
    # One block, one head, one position.
    yield _backward_call(rng, 1, 1, 3, 2, 4, 1, 1)
    # Three blocks: the residual path has to carry the gradient through all of them.
    yield _backward_call(rng, 2, 3, 4, 3, 6, 3, 3)
    for _ in range(2):
        h = int(rng.integers(1, 4))
        t_max = int(rng.integers(2, 7))
        yield _backward_call(rng, int(rng.integers(1, 4)), int(rng.integers(1, t_max + 1)), int(rng.integers(2, 8)),
                             t_max, h * int(rng.integers(1, 4)), int(rng.integers(1, 4)), h)
    yield _backward_call(rng, *LARGE_MODEL)  # no time to differentiate numerically


LARGE_MODEL = (1, 64, 64, 64, 64, 3, 4)  # (B, T, vocab, t_max, width, layers, h): 61,952 parameters


# --- Exercise 4: greedy generation with a KV cache ---------------------------------------------------


def generate(params, prompt, n_new, cache):
    """Greedy decoding that continues from `cache`, each fed position's keys and values computed once.

    With an empty cache this is decoding by recomputation (the cases check that too); with a cache
    of t0 positions, the prompt's first token sits at position t0 and attends to the cached keys
    and values, whose tokens the function never sees: only an answer that uses the cache can match.
    """
    layers, width = len(cache), params["U"].shape[0]
    keys = [np.asarray(pair[0], dtype=float) for pair in cache]  # (h, t0, hs) per layer
    values = [np.asarray(pair[1], dtype=float) for pair in cache]
    h, t0, hs = keys[0].shape
    logits, sequence = None, [int(t) for t in prompt]
    for position in range(t0, t0 + len(prompt) + n_new - 1):
        token = sequence[position - t0]
        x = params["E"][token] + params["P"][position]  # (C,)
        for layer in range(layers):
            a = _layer_norm(x, params[f"b{layer}.ln1_gamma"], params[f"b{layer}.ln1_beta"])
            q, k, v = (np.einsum("c,cia->ia", a, params[f"b{layer}.{n}"].reshape(width, h, hs))  # (h, hs) each
                       for n in ("Wq", "Wk", "Wv"))
            keys[layer] = np.concatenate([keys[layer], k[:, None]], axis=1)  # (h, t + 1, hs)
            values[layer] = np.concatenate([values[layer], v[:, None]], axis=1)
            scores = np.einsum("ia,ita->it", q, keys[layer]) / np.sqrt(hs)  # (h, t + 1)
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights = weights / weights.sum(axis=1, keepdims=True)
            x = x + np.einsum("it,ita->ia", weights, values[layer]).reshape(width) @ params[f"b{layer}.Wo"]
        logits = _layer_norm(x, params["lnf_gamma"], params["lnf_beta"]) @ params["U"]  # (V,)
        if position - t0 + 1 >= len(prompt):
            sequence.append(int(logits.argmax()))
    return np.array(sequence[len(prompt):]), [(K, V) for K, V in zip(keys, values, strict=True)]


def _generate_call(rng, prompt_length, n_new, vocab, width, layers, h, history=0, t_max=None):
    """A fresh model, a prompt, and a cache: empty, or the keys and values of `history` earlier positions."""
    t_max = history + prompt_length + n_new - 1 if t_max is None else t_max
    params = _model(rng, vocab, t_max, width, layers)
    hs = width // h
    cache = [(rng.standard_normal((h, history, hs)), rng.standard_normal((h, history, hs))) for _ in range(layers)]
    return call(params, rng.integers(0, vocab, size=prompt_length), n_new, cache)


def generate_cases(rng):
    # Fixed, from an empty cache: a prompt of 3, 4 new tokens, 2 blocks of 2 heads, P exactly long enough.
    yield _generate_call(rng, 3, 4, 6, 8, 2, 2)
    # One token in, one out: nothing is fed after the prompt.
    yield _generate_call(rng, 1, 1, 5, 4, 1, 1, t_max=3)
    # Three blocks, a longer run of new tokens.
    yield _generate_call(rng, 2, 6, 7, 6, 3, 3)
    # Continuing from a cache of earlier positions, whose tokens generate never sees: 4 of them with
    # 2 heads in 2 blocks; 1 with one head in one block and a one-token prompt; 3 with 3 heads.
    yield _generate_call(rng, 2, 3, 6, 8, 2, 2, history=4)
    yield _generate_call(rng, 1, 2, 5, 4, 1, 1, history=1)
    yield _generate_call(rng, 3, 2, 7, 6, 2, 3, history=3)
    for history in (0, int(rng.integers(1, 5))):
        h = int(rng.integers(1, 4))
        yield _generate_call(rng, int(rng.integers(1, 6)), int(rng.integers(1, 7)), int(rng.integers(3, 9)),
                             h * int(rng.integers(1, 4)), int(rng.integers(1, 4)), h, history=history)




# --- Exercise 2: path ablation (K-composition) ------------------------------------------------------


def _attend(params, layer, a_q, a_k, a_v, h):
    """Layer `layer`'s attention from three inputs (queries, keys, values): (output (B, T, C), weights, per head)."""
    T = a_q.shape[1]
    Q, K, V = (_split(a @ params[f"b{layer}.{n}"], h) for a, n in ((a_q, "Wq"), (a_k, "Wk"), (a_v, "Wv")))
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    per_head = weights @ V  # (B, h, T, hs)
    return _merge(per_head) @ params[f"b{layer}.Wo"], weights, per_head


def path_ablation(params, tokens, h, head, paths, replacement=None):
    B, T = tokens.shape
    x0 = params["E"][tokens] + params["P"][:T]
    a0 = _layer_norm(x0, params["b0.ln1_gamma"], params["b0.ln1_beta"])
    out0, _, per_head = _attend(params, 0, a0, a0, a0, h)
    hs = x0.shape[-1] // h
    written = per_head[:, head] @ params["b0.Wo"][head * hs:(head + 1) * hs]  # (B, T, hs) @ (hs, C): what it writes
    x1 = x0 + out0
    removed = x1 - written + (0.0 if replacement is None else replacement)
    stream = {path: (removed if path in paths else x1) for path in "qkvr"}
    gamma, beta = params["b1.ln1_gamma"], params["b1.ln1_beta"]
    out1, weights1, _ = _attend(params, 1, *(_layer_norm(stream[p], gamma, beta) for p in "qkv"), h)
    x = stream["r"] + out1
    for layer in range(2, _layers(params)):
        a = _layer_norm(x, params[f"b{layer}.ln1_gamma"], params[f"b{layer}.ln1_beta"])
        x = x + _attend(params, layer, a, a, a, h)[0]
    return _layer_norm(x, params["lnf_gamma"], params["lnf_beta"]) @ params["U"], weights1


def _path_call(rng, B, T, vocab, width, layers, h, head, paths, replace=False):
    params = _model(rng, vocab, T + int(rng.integers(0, 3)), width, layers)
    tokens = rng.integers(0, vocab, size=(B, T))
    if not replace:
        return call(params, tokens, h, head, paths)
    return call(params, tokens, h, head, paths, replacement=rng.standard_normal((T, width)))  # one row per position


def path_ablation_cases(rng):
    # Fixed: each single path, two heads in two blocks; all paths (the head switched off); no path (the
    # intact model); one head; three blocks (the third reads the stream layer 1 left); a replacement.
    for paths in ("k", "q", "v", "r"):
        yield _path_call(rng, 2, 5, 6, 8, 2, 2, 1, paths)
    yield _path_call(rng, 1, 4, 5, 6, 2, 3, 2, "qkvr")
    yield _path_call(rng, 2, 3, 5, 4, 2, 1, 0, "k")
    yield _path_call(rng, 1, 6, 7, 8, 3, 2, 0, "qk")
    yield _path_call(rng, 2, 4, 6, 8, 2, 2, 0, "kr", replace=True)
    yield _path_call(rng, 1, 3, 4, 4, 2, 2, 1, "")
    for _ in range(2):
        h = int(rng.integers(1, 4))
        paths = "".join(p for p in "qkvr" if rng.random() < 0.5)
        yield _path_call(rng, int(rng.integers(1, 3)), int(rng.integers(2, 7)), int(rng.integers(3, 8)),
                         h * int(rng.integers(1, 4)), int(rng.integers(2, 4)), h, int(rng.integers(h)), paths,
                         replace=bool(rng.random() < 0.5))




# --- Exercise 3: the OV circuit ---------------------------------------------------------------------


def ov_circuit(params, layer, head, h):
    """(V, V): LN_1(E) through the head's W_v columns and W_o rows, centred, times gamma_f, then U."""
    width = params["U"].shape[0]
    hs = width // h
    embedded = _layer_norm(params["E"], params[f"b{layer}.ln1_gamma"], params[f"b{layer}.ln1_beta"])  # (V, C)
    value = embedded @ params[f"b{layer}.Wv"][:, head * hs:(head + 1) * hs]  # (V, hs)
    written = value @ params[f"b{layer}.Wo"][head * hs:(head + 1) * hs]  # (V, C)
    centred = written - written.mean(axis=1, keepdims=True)
    return (centred * params["lnf_gamma"]) @ params["U"]


def _ov_call(rng, vocab, width, layers, h, layer, head):
    return call(_model(rng, vocab, int(rng.integers(1, 6)), width, layers), layer, head, h)


def ov_circuit_cases(rng):
    # Fixed: the last head of layer 1 in two blocks; layer 0; one head of width 4; the middle block of
    # three, whose LayerNorm is not layer 1's; a vocabulary smaller than the width.
    yield _ov_call(rng, 6, 8, 2, 2, 1, 1)
    yield _ov_call(rng, 5, 6, 2, 3, 0, 2)
    yield _ov_call(rng, 4, 4, 1, 1, 0, 0)
    yield _ov_call(rng, 7, 12, 3, 4, 1, 3)
    yield _ov_call(rng, 3, 10, 2, 5, 1, 2)
    for _ in range(3):
        h, layers = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        yield _ov_call(rng, int(rng.integers(2, 12)), h * int(rng.integers(1, 5)), layers, h,
                       int(rng.integers(layers)), int(rng.integers(h)))


CHECKS = {
    "test_gpt_backward": Check("gpt_backward", gpt_backward, gpt_backward_cases, unchanged_args=True,
                               compare=Same(rtol=1e-6, atol=1e-9)),
    "test_path_ablation": Check("path_ablation", path_ablation, path_ablation_cases, unchanged_args=True,
                                compare=Same(rtol=1e-6, atol=1e-9)),
    "test_ov_circuit": Check("ov_circuit", ov_circuit, ov_circuit_cases, unchanged_args=True,
                             compare=Same(rtol=1e-6, atol=1e-9)),
    "test_generate": Check("generate", generate, generate_cases, unchanged_args=True,
                           compare=Same(rtol=1e-6, atol=1e-9, array_like=True)),
}
