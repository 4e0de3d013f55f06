# ---
# jupyter:
#   jupytext:
#     formats: 12-induction-gpt//ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lesson 12: A two-layer GPT that learns to copy, and the heads that do it
#
# This lesson puts the course together. You build a small GPT from the parts of the earlier
# lessons (embeddings, positions, causal attention, LayerNorm), write its whole backward pass by
# hand, train it with Adam in NumPy on sequences that repeat themselves, and then open it up.
#
# Inside, you will find the best-known circuit a transformer learns: the **induction head**. One
# head in the first layer looks at the previous token; a head in the second layer uses what that
# head wrote to find "the token that came after the last time I saw the current token", and copies
# it. You will measure both heads with scores you define, knock them out one at a time, remove one
# head's output from only the keys of the next layer to prove how the two compose, read the
# copying circuit, and use the trained model to continue a sequence with a KV cache.
#
# **What you'll do**
# - build repeated random-token data and compute the loss floor of any model that cannot look back
#   at where a token was;
# - write `gpt_backward`, the backward pass through the whole model, and check every parameter's
#   gradient against finite differences at float64 (Exercise 1);
# - train the model with Adam, watch the loss of the second half, and count over several seeds how
#   often it drops the way this run does;
# - draw every head's attention, score each head as a previous-token head and as an induction head
#   and ablate each head;
# - write `path_ablation`, which removes one head's output from only the keys, the queries or the
#   values of the next layer (Exercise 2), and prove with it how the two heads compose; compare
#   zero-ablation with mean-ablation, and train a one-layer control;
# - write `ov_circuit`, the map from the token a head attends to onto the logits, and read from it
#   that the induction head copies (Exercise 3);
# - write `generate`, greedy decoding with a KV cache, equal to recomputing from scratch (Exercise 4).
#
# **What you'll learn**
# - why the second half of a repeated sequence can only be predicted by looking back, and what that
#   is worth in nats;
# - how the gradient flows down the residual stream: every block adds to it, so every block's
#   input gradient is added to it;
# - what an induction head is, how two heads in two layers make one, and how to prove which heads
#   do the work;
# - why a causal model can decode one token at a time from cached keys and values.
#
# **What you'll need**
# - multi-head causal attention and its backward pass (Lessons 3, 6 and 7), learned positions
#   (Lesson 8), the cross-entropy and Adam (Lesson 9), and LayerNorm (Lesson 11). Their code is
#   given below, so this lesson stands alone. The exercises use NumPy alone (no torch, no scipy).
#
# The four graded exercises sit where their ideas are taught, because the later sections run on
# your code. Their visible checks run as you work; hidden tests call your functions on fresh
# inputs.

# %%
import os

# One BLAS thread, set before NumPy loads: the model's matrices are small, and on a busy machine
# extra BLAS threads spend much of their time waiting for each other.
for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import time

import matplotlib.pyplot as plt
import numpy as np

from lesson_helpers import demo_size, tidy_figures  # the course's helpers for demonstrations

tidy_figures()  # labels and colourbars placed without overlap

# %% [markdown]
# ## 1. Data that can only be predicted by looking back
#
# A sequence is $P$ random tokens from a vocabulary of $V = 32$, followed by the same $P$ tokens
# again. In the first half every next token is a fresh random draw: nothing can predict it better
# than $\log V$ nats. In the second half every next token is known, *if* the model can find where
# the current token sat in the first half and read the token after it.
#
# The held-out sequences have $P = 12$: 24 tokens, the model reads the first $T = 23$ and predicts
# tokens 1 to 23. The **second-half loss** is the mean loss of the 11 predictions whose input and
# target both lie in the second half: inputs at positions $12 \dots 22$, targets at $13 \dots 23$.
# (The prediction at position 11, of the first token of the second half, is left out: it is the
# one place where the copy starts, and no token before it says so.)

# %%
V = 32  # vocabulary: tokens 0 .. 31
PERIOD = 12  # held-out sequences: 12 random tokens, then the same 12 again
T_MAX = 24  # the longest input the model reads (training sequences have 25 tokens)


def repeated_sequences(rng, n, period=PERIOD):
    """n sequences of `period` random tokens followed by the same tokens: an (n, 2 * period) int array."""
    first = rng.integers(0, V, size=(n, period))  # (n, P)
    return np.concatenate([first, first], axis=1)  # (n, P) twice -> (n, 2P)


held_out = repeated_sequences(np.random.default_rng(2), 256)  # (256, 24): never trained on
inputs_held, targets_held = held_out[:, :-1], held_out[:, 1:]  # (256, 23) each: read token t, predict t + 1
SECOND = slice(PERIOD, 2 * PERIOD - 1)  # input positions 12 .. 22, whose targets 13 .. 23 repeat tokens 1 .. 11
print("held_out:", held_out.shape, "(n, 2P)   inputs:", inputs_held.shape, "  targets:", targets_held.shape)
print("sequence 0:", " ".join(f"{t:2d}" for t in held_out[0]))
print("second half repeats the first:", np.array_equal(held_out[:, PERIOD:], held_out[:, :PERIOD]))
print("second-half predictions per sequence:", len(range(*SECOND.indices(inputs_held.shape[1]))))

# %% [markdown]
# ### The floor of a model that cannot look back at positions
#
# A **bigram** model sees only the current token. In random data the current token says nothing
# about the next one, so its best loss on every prediction is $\log V = \log 32 \approx 3.47$.
#
# A **bag-of-tokens** model sees which tokens came before, but not in what order. It can do much
# better than a bigram: it knows the next token is one of the first half's tokens, and even which of
# them the second half has not used yet. If the first half holds the multiset $S$ and the second
# half so far has used the first $k$ of them, the $P - k$ tokens still to come are, for such a model,
# in a uniformly random order (the first half was drawn at random), so its best prediction of
# target $y$ is
#
# $$p(y) = \frac{\text{count of } y \text{ among the tokens still to come}}{P - k}, \qquad
# \text{floor} = \text{mean over the second-half predictions of } -\log p(y) .$$
#
# No model that ignores the order of the tokens can expect less. The cell computes it on the
# held-out sequences.

# %%
def bag_floor(sequences, period):
    """Mean loss of the best order-blind predictor on the second-half predictions of (n, 2 * period) sequences."""
    losses = []
    for seq in sequences:
        to_come = list(seq[:period])  # the first half, as a multiset
        to_come.remove(seq[0])  # the second half starts with token 0 (not scored)
        for k in range(1, period):  # target seq[period + k] = seq[k]
            target = seq[period + k]
            losses.append(-np.log(to_come.count(target) / len(to_come)))
            to_come.remove(target)
    return float(np.mean(losses))


BIGRAM_FLOOR = float(np.log(V))
BAG_FLOOR = bag_floor(held_out, PERIOD)
print(f"bigram floor (log V):             {BIGRAM_FLOOR:.3f} nats")
print(f"bag-of-tokens floor (held-out):   {BAG_FLOOR:.3f} nats")
print(f"mean of log(11), ..., log(1) = {np.mean(np.log(np.arange(1, PERIOD))):.3f}")


def token_match_loss(sequences, period):
    """Mean loss, on the second-half predictions, of copying uniformly from after every earlier occurrence of the current token."""
    losses = []
    for seq in sequences:
        for i in range(period, 2 * period - 1):  # input positions 12 .. 22, target seq[i + 1]
            after = [seq[j + 1] for j in range(i) if seq[j] == seq[i]]  # the tokens that followed its earlier occurrences
            losses.append(-np.log(after.count(seq[i + 1]) / len(after)))
    return float(np.mean(losses))


TOKEN_MATCH = token_match_loss(held_out, PERIOD)
share_repeated = np.mean([len(np.unique(seq[:PERIOD])) < PERIOD for seq in held_out])
print(f"copy from after every earlier occurrence of the current token: {TOKEN_MATCH:.3f} nats "
      f"({100 * share_repeated:.0f}% of the held-out sequences have a repeated token in their first half)")

# %% [markdown]
# The bag floor is a little below $\frac{1}{11}\sum_{j=1}^{11} \log j$, the value it would have if
# the 12 tokens were all different: repeated tokens make some guesses easier. Strictly, the
# predictor above knows a little more than a bag of tokens could: when a token occurs more than
# once, a bag of counts cannot always tell which of its copies the second half has used. Knowing
# more can only lower the loss, so the number is still a floor for every model that ignores the
# order. Anything the model does below it, it does by using the **order** of the tokens.
#
# Finding the previous occurrence of the current token does not bring the loss to 0 either: when a
# token occurs twice in the first half, "the token after it" has two answers, and copying from
# after every earlier occurrence alike costs the last printed number. A model that also uses
# **where** the occurrences are (the copy runs in order, one position after another) can go below
# it.
#
# ### Training data: the period varies
#
# The training sequences have 25 tokens (24 inputs, 24 targets) and a period $P$ drawn anew for
# each sequence from 4 to 12: the first $P$ tokens are random and then repeat, as many times as fit.
# If the period were always 12, a model could predict the second half from positions alone ("copy
# the token 11 places back"), without ever looking at which token it is reading. Section 6 trains
# such a model and shows that it does exactly that.

# %%
PERIODS = (4, 12)  # training periods, both ends included


def training_batch(rng, n, periods=PERIODS):
    """n training sequences of T_MAX + 1 tokens: P random tokens (P drawn per sequence), repeated to the end."""
    tokens = rng.integers(0, V, size=(n, T_MAX + 1))  # (n, 25)
    period = rng.integers(periods[0], periods[1] + 1, size=n)  # (n,)
    position = np.arange(T_MAX + 1)  # (25,)
    return np.take_along_axis(tokens, position[None, :] % period[:, None], axis=1)  # (n, 25): token i is token i mod P


example = training_batch(np.random.default_rng(0), 3)  # (3, 25)
for row in example:
    period = next(p for p in range(PERIODS[0], PERIODS[1] + 1) if np.array_equal(row[p:], row[:-p]))
    print(f"period {period:2d}:", " ".join(f"{t:2d}" for t in row))

# %% [markdown]
# ## 2. Given: the parts from earlier lessons
#
# The model is made of pieces you have written before. Their code is given here.
#
# **LayerNorm** (Lesson 11) normalises each position's vector over its $C$ features, then scales and
# shifts it: $\text{LN}(x) = \gamma \odot \hat x + \beta$ with $\hat x = (x - \mu)/\sqrt{\sigma^2 + \epsilon}$.
# Its backward pass, for $g = \partial L / \partial\, \text{LN}(x)$ and $\hat g = g \odot \gamma$:
#
# $$\frac{\partial L}{\partial x} = \frac{1}{\sqrt{\sigma^2 + \epsilon}}\Big(\hat g - \text{mean}(\hat g) - \hat x \odot \text{mean}(\hat g \odot \hat x)\Big), \qquad
# \frac{\partial L}{\partial \gamma} = \sum_{\text{rows}} g \odot \hat x, \qquad \frac{\partial L}{\partial \beta} = \sum_{\text{rows}} g .$$

# %%
# Given: Lesson 1's stable softmax and Lesson 11's LayerNorm, forward and backward.
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    x = x - x.max(axis=axis, keepdims=True)  # every exponent <= 0
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(x, gamma, beta, eps=1e-5):
    """LayerNorm over the last axis: x (..., C), gamma and beta (C,) -> (..., C)."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = x.var(axis=-1, keepdims=True)  # (..., 1)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def layer_norm_backward(dout, x, gamma, eps=1e-5):
    """Gradients of LayerNorm given dout = dL/d(out) (..., C): returns (dx (..., C), dgamma (C,), dbeta (C,))."""
    rstd = 1 / np.sqrt(x.var(axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = (x - x.mean(axis=-1, keepdims=True)) * rstd  # (..., C)
    g_hat = dout * gamma  # (..., C)
    dx = rstd * (g_hat - g_hat.mean(axis=-1, keepdims=True) - x_hat * (g_hat * x_hat).mean(axis=-1, keepdims=True))
    rows = tuple(range(x.ndim - 1))  # every axis but the features
    return dx, (dout * x_hat).sum(axis=rows), dout.sum(axis=rows)


# %% [markdown]
# **Causal multi-head attention** (Lessons 3, 4 and 6) and its backward pass (Lesson 7). For an input
# $a$ `(B, T, C)` and four `(C, C)` weights, with $h$ heads of size $hs = C/h$ and the causal mask
# $M_{ij} = 0$ for $j \le i$, $-\infty$ for $j > i$:
#
# $$Q, K, V = a W_q, a W_k, a W_v \ \text{split into heads } (B, h, T, hs), \qquad
# A = \text{softmax}\Big(\frac{Q K^\top}{\sqrt{hs}} + M\Big), \qquad
# \text{out} = \text{Concat}(A V)\, W_o .$$
#
# The forward pass takes an optional `head_mask` of shape `(h,)` that multiplies each head's output
# before the heads are concatenated: section 8 sets one entry to 0 to switch a head off.

# %%
# Given: Lessons 3, 6 and 7's causal multi-head attention, forward and backward.
def split_heads(x, h):
    """(B, T, C) -> (B, h, T, hs): head i takes columns i*hs .. (i+1)*hs - 1."""
    B, T, C = x.shape
    return x.reshape(B, T, h, C // h).transpose(0, 2, 1, 3)  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)


def merge_heads(x):
    """(B, h, T, hs) -> (B, T, C): the heads side by side."""
    B, h, T, hs = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, h * hs)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)


def causal_attention(a, Wq, Wk, Wv, Wo, h, head_mask=None):
    """Causal multi-head attention of a (B, T, C): returns (out (B, T, C), cache of Q, K, V, weights, concat)."""
    B, T, C = a.shape
    Q, K, V = split_heads(a @ Wq, h), split_heads(a @ Wk, h), split_heads(a @ Wv, h)  # (B, h, T, hs) each
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(C // h)  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)  # key j > query i: -inf
    weights = softmax(scores, axis=-1)  # (B, h, T, T): row i sums to 1 over keys 0 .. i
    per_head = weights @ V  # (B, h, T, T) @ (B, h, T, hs) -> (B, h, T, hs)
    if head_mask is not None:
        per_head = per_head * np.asarray(head_mask)[None, :, None, None]  # (h,) -> (1, h, 1, 1)
    concat = merge_heads(per_head)  # (B, T, C)
    return concat @ Wo, dict(Q=Q, K=K, V=V, weights=weights, concat=concat)  # (B, T, C) @ (C, C) -> (B, T, C)


def causal_attention_backward(dout, a, cache, Wq, Wk, Wv, Wo, h):
    """Gradients given dout = dL/d(out) (B, T, C): returns (da (B, T, C), {"Wq", "Wk", "Wv", "Wo": (C, C)})."""
    Q, K, V, weights, concat = (cache[k] for k in ("Q", "K", "V", "weights", "concat"))
    B, T, C = a.shape
    hs = C // h
    dWo = concat.reshape(B * T, C).T @ dout.reshape(B * T, C)  # (C, B*T) @ (B*T, C) -> (C, C)
    dper_head = split_heads(dout @ Wo.T, h)  # (B, T, C) @ (C, C) -> (B, T, C) -> (B, h, T, hs)
    dweights = dper_head @ V.transpose(0, 1, 3, 2)  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
    dV = weights.transpose(0, 1, 3, 2) @ dper_head  # (B, h, T, T) @ (B, h, T, hs) -> (B, h, T, hs)
    dscores = weights * (dweights - (dweights * weights).sum(axis=-1, keepdims=True))  # masked entries: weight 0
    dQ = dscores @ K / np.sqrt(hs)  # (B, h, T, T) @ (B, h, T, hs) -> (B, h, T, hs)
    dK = dscores.transpose(0, 1, 3, 2) @ Q / np.sqrt(hs)  # (B, h, T, T) @ (B, h, T, hs) -> (B, h, T, hs)
    a_rows = a.reshape(B * T, C)  # (B, T, C) -> (B*T, C)
    dQ_rows, dK_rows, dV_rows = (merge_heads(d).reshape(B * T, C) for d in (dQ, dK, dV))  # (B, T, C) -> (B*T, C)
    da = (dQ_rows @ Wq.T + dK_rows @ Wk.T + dV_rows @ Wv.T).reshape(B, T, C)  # (B*T, C) -> (B, T, C)
    return da, {"Wq": a_rows.T @ dQ_rows, "Wk": a_rows.T @ dK_rows,  # (C, B*T) @ (B*T, C) -> (C, C)
                "Wv": a_rows.T @ dV_rows, "Wo": dWo}


# %% [markdown]
# **Adam** (Lesson 9), on dicts of parameters, with the state `{"t", "m", "v"}`:
#
# $$m \leftarrow \beta_1 m + (1 - \beta_1) g, \quad v \leftarrow \beta_2 v + (1 - \beta_2) g^2, \quad
# \theta \leftarrow \theta - \eta \, \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon} .$$

# %%
# Given: Lesson 9's Adam.
def adam_init(params):
    """Adam's state before the first step: t = 0, m = v = 0 for every parameter."""
    return {"t": 0, "m": {k: np.zeros_like(p) for k, p in params.items()},
            "v": {k: np.zeros_like(p) for k, p in params.items()}}


def adam_step(params, grads, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    """One Adam step on dicts of arrays: returns (new_params, new_state); the inputs are left unchanged."""
    beta1, beta2 = betas
    t = state["t"] + 1
    m = {k: beta1 * state["m"][k] + (1 - beta1) * grads[k] for k in params}
    v = {k: beta2 * state["v"][k] + (1 - beta2) * grads[k] ** 2 for k in params}
    new_params = {k: params[k] - lr * (m[k] / (1 - beta1 ** t)) / (np.sqrt(v[k] / (1 - beta2 ** t)) + eps)
                  for k in params}
    return new_params, {"t": t, "m": m, "v": v}


# %% [markdown]
# ## 3. The model
#
# Tokens `(B, T)` become vectors through a token embedding $E$ `(V, C)` plus a learned position
# embedding $P$ `(T_max, C)` (Lesson 8). Learned positions fit here: every sequence has the same
# maximum length, so every row of $P$ is trained, and their gradient is a plain sum. The first
# layer's job will be to look one position back, which needs nothing but positions; a relative
# scheme such as RoPE would do too, at the price of a rotation in the forward and backward pass.
#
# Then two **attention-only pre-norm blocks**, each adding its attention output to the residual
# stream $x$, then a final LayerNorm and the unembedding $U$ `(C, V)`:
#
# $$x_0 = E[\text{tokens}] + P[:T], \qquad x_{l+1} = x_l + \text{Attn}_l\big(\text{LN}_l(x_l)\big), \qquad
# \text{logits} = \text{LN}_f(x_2)\, U .$$
#
# Why no MLP? Lesson 11's block adds one after each attention layer. Copying a token needs only
# attention: finding the previous token, then finding the earlier occurrence and reading what came
# after it. With $C = 32$ the two MLPs (`(C, 4C)` and `(4C, C)` each) would hold more weights than
# the whole attention-only model, and section 6 times a forward pass of each: the MLPs make it
# slower (the timing cell measures by how much). This lesson leaves them out, and sections 7 and 8 show that the two layers
# of attention do the copying alone.
#
# The parameters are one flat dict, ready for Adam: `"E"`, `"P"`, for each layer $l$
# `"b{l}.ln1_gamma"`, `"b{l}.ln1_beta"` `(C,)` and `"b{l}.Wq"`, `"b{l}.Wk"`, `"b{l}.Wv"`, `"b{l}.Wo"`
# `(C, C)`, then `"lnf_gamma"`, `"lnf_beta"` `(C,)` and `"U"` `(C, V)`. The LayerNorm names are
# Lesson 11's: `ln1_gamma` and `ln1_beta` gain and shift the LayerNorm before attention; an
# attention-only block has no second one, and `lnf_` marks the final LayerNorm.

# %%
C, H, LAYERS = 32, 2, 2  # width, heads per layer (head size 16), blocks


def init_gpt(rng, vocab=V, t_max=T_MAX, width=C, layers=LAYERS):
    """Parameters of an attention-only GPT: a flat {name: array} dict."""
    std = 1 / np.sqrt(width)
    params = {"E": rng.standard_normal((vocab, width)), "P": rng.standard_normal((t_max, width))}
    for layer in range(layers):
        params[f"b{layer}.ln1_gamma"], params[f"b{layer}.ln1_beta"] = np.ones(width), np.zeros(width)
        for name in ("Wq", "Wk", "Wv", "Wo"):
            params[f"b{layer}.{name}"] = rng.standard_normal((width, width)) * std
    params["lnf_gamma"], params["lnf_beta"] = np.ones(width), np.zeros(width)
    params["U"] = rng.standard_normal((width, vocab)) * std
    return params


def gpt_forward(params, tokens, h, head_mask=None):
    """Logits (B, T, V) for tokens (B, T), and the cache the backward pass needs.

    head_mask, optional: (layers, h), multiplies each head's output (0 switches a head off).
    The cache holds "tokens" (B, T); "blocks", one dict per layer with "x_in" (its input, the
    residual stream), "a" (LN of x_in) and the attention's "Q", "K", "V", "weights", "concat";
    "x_final" (the residual stream after the last block) and "xf" (its final LayerNorm).
    """
    B, T = tokens.shape
    x = params["E"][tokens] + params["P"][:T]  # (B, T, C): token row plus position row
    blocks = []
    for layer in range(sum(1 for name in params if name.endswith(".Wq"))):
        p = {name: params[f"b{layer}.{name}"] for name in ("ln1_gamma", "ln1_beta", "Wq", "Wk", "Wv", "Wo")}
        a = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])  # (B, T, C)
        out, attention = causal_attention(a, p["Wq"], p["Wk"], p["Wv"], p["Wo"], h,
                                          None if head_mask is None else head_mask[layer])
        blocks.append(dict(x_in=x, a=a, **attention))
        x = x + out  # the residual stream: the block adds to it
    xf = layer_norm(x, params["lnf_gamma"], params["lnf_beta"])  # (B, T, C)
    logits = xf @ params["U"]  # (B, T, C) @ (C, V) -> (B, T, V)
    return logits, dict(tokens=tokens, blocks=blocks, x_final=x, xf=xf)


params_init = init_gpt(np.random.default_rng(0))
logits_init, cache_init = gpt_forward(params_init, inputs_held, H)
print("logits:", logits_init.shape, "(B, T, V)   layer-0 attention weights:", cache_init["blocks"][0]["weights"].shape,
      "(B, h, T, T)")
print(f"parameters: {sum(p.size for p in params_init.values()):,} in {len(params_init)} arrays")
future = np.triu(np.ones((inputs_held.shape[1],) * 2, dtype=bool), k=1)  # (T, T): key after query
print("no weight on a future key, in any head of any layer:",
      all(np.all(block["weights"][..., future] == 0) for block in cache_init["blocks"]))

# %% [markdown]
# ## 4. The loss: cross-entropy at every position
#
# A language model predicts at every position. For logits $z$ `(B, T, V)` and targets $y$ `(B, T)`,
# the loss is the mean over all $N = B T$ predictions:
#
# $$L = \frac{1}{N} \sum_{b, t} \Big(\log \sum_k e^{z_{btk}} - z_{bt y_{bt}}\Big), \qquad
# \frac{\partial L}{\partial z_{btk}} = \frac{1}{N}\big(\text{softmax}(z_{bt})_k - [k = y_{bt}]\big) .$$
#
# This is Lesson 9's loss, extended to any number of leading axes: `cross_entropy(logits, targets)`
# flattens the `(B, T)` positions into $N$ rows, takes each row's log-sum-exp with its maximum
# subtracted first, and returns `(loss, dlogits)`, the mean loss and its gradient `(B, T, V)`. It is
# given:

# %%
def cross_entropy(logits, targets):
    """Mean cross-entropy of logits (..., V) against integer targets (...), and dL/dlogits (..., V)."""
    vocab = logits.shape[-1]
    z = logits.reshape(-1, vocab)  # (..., V) -> (N, V)
    y = np.asarray(targets).reshape(-1)  # (...) -> (N,)
    rows = np.arange(z.shape[0])
    shifted = z - z.max(axis=1, keepdims=True)  # (N, V): every row's max is 0
    log_sum_exp = np.log(np.exp(shifted).sum(axis=1))  # (N,)
    loss = float(np.mean(log_sum_exp - shifted[rows, y]))
    dz = np.exp(shifted - log_sum_exp[:, None])  # (N, V): softmax of each row
    dz[rows, y] -= 1.0
    return loss, (dz / z.shape[0]).reshape(logits.shape)  # (N, V) -> (..., V)


# %% [markdown]
# At initialisation the loss sits **above** $\log V$. The final LayerNorm gives every position's
# vector an RMS of 1, and $U$ starts at $\mathcal{N}(0, 1/C)$, so each logit is a sum of $C$ terms
# of variance $1/C$: its standard deviation is about 1, not small. For logits $z_k$ of standard
# deviation $s$ that carry no information about the target, the expected loss is about
# $\log V + s^2/2$ (the log-sum-exp grows by $s^2/2$). Starting $U$ at a much smaller scale would
# start the loss at $\log V$; this lesson keeps the plain $1/\sqrt{C}$ scale, which costs the first
# few training steps only. The cell prints the three numbers:

# %%
loss_init, dlogits_check = cross_entropy(logits_init, targets_held)
logit_std = float(logits_init.std())
print(f"loss at init: {loss_init:.3f}   log V = {BIGRAM_FLOOR:.3f}   logit std {logit_std:.2f}, "
      f"log V + std^2 / 2 = {BIGRAM_FLOOR + logit_std ** 2 / 2:.3f}")
print("dlogits:", dlogits_check.shape, "  each position's row sums to 0:", np.allclose(dlogits_check.sum(axis=-1), 0))

# %% [markdown]
# ## 5. The backward pass through the whole model
#
# The backward pass runs the forward pass in reverse, with $g = \partial L / \partial\,\text{logits}$
# `(B, T, V)` as its start. Let $\delta = \partial L / \partial x$ be the gradient of the residual
# stream, `(B, T, C)`, as it moves down.
#
# **Unembedding and final LayerNorm.** $\text{logits} = x_f U$ with $x_f = \text{LN}_f(x_2)$:
#
# $$\frac{\partial L}{\partial U} = \sum_{b,t} x_{f,bt}^\top g_{bt} \ \ (C, V), \qquad
# \frac{\partial L}{\partial x_f} = g\, U^\top, \qquad
# \delta \leftarrow \text{LN}_f\text{-backward}\Big(\frac{\partial L}{\partial x_f}, x_2\Big) .$$
#
# **Each block, last to first.** $x_{l+1} = x_l + \text{Attn}_l(\text{LN}_l(x_l))$. The output
# $x_{l+1}$ reaches $x_l$ along two paths: straight through the residual connection, and through
# the attention and the LayerNorm. The chain rule adds them:
#
# $$\frac{\partial L}{\partial a_l} = \text{Attn-backward}(\delta), \qquad
# \delta \leftarrow \delta + \text{LN}_l\text{-backward}\Big(\frac{\partial L}{\partial a_l}, x_l\Big) .$$
#
# Forgetting the first $\delta$ (writing $\delta \leftarrow$ LN-backward(...) alone) cuts the
# residual stream: the gradient then reaches the embeddings only through the attention.
#
# **Embeddings.** $x_0 = E[\text{tokens}] + P[:T]$, so every position sends $\delta_{bt}$ to row
# $\text{tokens}_{bt}$ of $E$ and to row $t$ of $P$, and rows that are used several times **add up**:
#
# $$\frac{\partial L}{\partial E_v} = \sum_{b,t:\ \text{tokens}_{bt} = v} \delta_{bt}, \qquad
# \frac{\partial L}{\partial P_t} = \sum_b \delta_{bt} \ (t < T), \qquad \frac{\partial L}{\partial P_t} = 0 \ (t \ge T).$$
#
# In NumPy, `dE[tokens] += delta` does **not** add up repeated rows (each repeated index is written
# once, with one of the values); `np.add.at(dE, tokens, delta)` does. In this lesson's data every
# token appears at least twice.
#
# ### Exercise 1: `gpt_backward` (5 points)
#
# Write `gpt_backward(params, cache, dlogits)`: `params` as from `init_gpt`, `cache` as returned
# by `gpt_forward(params, tokens, h)`, `dlogits` `(B, T, V)`. Return a dict with the same keys and
# shapes as `params`: the gradient of the loss for every parameter. Use the given
# `causal_attention_backward` and `layer_norm_backward`; the hidden tests include a model far too
# large to differentiate numerically in a test cell's time, so the gradients must come from the
# backward pass itself. The cache says everything about the model
# that the parameters do not: the number of blocks is `len(cache["blocks"])`, and it may be 1, 2
# or more; the head count is that of each block's queries, `cache["blocks"][l]["Q"]` being
# `(B, h, T, hs)`. The inputs are not modified.

# %% nbgrader={"grade": false, "grade_id": "gpt_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def gpt_backward(params, cache, dlogits):
    """Gradients {name: array like params[name]} of the loss, given dlogits = dL/dlogits (B, T, V)."""
    ### BEGIN SOLUTION
    B, T, vocab = dlogits.shape
    width = params["U"].shape[0]
    grads = {"U": cache["xf"].reshape(B * T, width).T @ dlogits.reshape(B * T, vocab)}  # (C, B*T) @ (B*T, V)
    dxf = dlogits @ params["U"].T  # (B, T, V) @ (V, C) -> (B, T, C)
    delta, grads["lnf_gamma"], grads["lnf_beta"] = layer_norm_backward(dxf, cache["x_final"], params["lnf_gamma"])
    for layer in reversed(range(len(cache["blocks"]))):
        block = cache["blocks"][layer]
        W = [params[f"b{layer}.{name}"] for name in ("Wq", "Wk", "Wv", "Wo")]
        h = block["Q"].shape[1]  # (B, h, T, hs): the head count is the cache's
        da, dW = causal_attention_backward(delta, block["a"], block, *W, h)
        for name, grad in dW.items():
            grads[f"b{layer}.{name}"] = grad
        dx, grads[f"b{layer}.ln1_gamma"], grads[f"b{layer}.ln1_beta"] = layer_norm_backward(
            da, block["x_in"], params[f"b{layer}.ln1_gamma"])
        delta = delta + dx  # the residual path and the path through the block add up
    grads["E"] = np.zeros_like(params["E"])
    np.add.at(grads["E"], cache["tokens"], delta)  # repeated tokens accumulate
    grads["P"] = np.zeros_like(params["P"])
    grads["P"][:T] = delta.sum(axis=0)  # (B, T, C) -> (T, C); rows T .. T_max - 1 were not used
    return grads  # {name: dL/d(name)}, the keys and shapes of params
    ### END SOLUTION


# %% [markdown]
# ### Checking every gradient at float64
#
# A finite-difference check of every entry of every parameter tensor, on a small model (vocabulary
# 7, 5 positions, width 8, 2 heads, 2 blocks: 712 entries) and a batch of 3 sequences of 4 tokens
# in which tokens repeat. Each entry $\theta_i$ is nudged by $\pm 10^{-6}$ and the loss is recomputed:
#
# $$\frac{\partial L}{\partial \theta_i} \approx \frac{L(\theta + \epsilon e_i) - L(\theta - \epsilon e_i)}{2 \epsilon} .$$
#
# The LayerNorm weights start at 1 and 0 in a fresh model; here they are drawn at random, so that a
# mistake that only shows when $\gamma \ne 1$ or $\beta \ne 0$ is not hidden. A backward pass
# works for any $g = \partial L / \partial\,\text{logits}$, so the check uses the simplest loss,
#
# $$L = \sum_{b,t,k} \text{logits}_{btk}\, G_{btk}, \qquad \frac{\partial L}{\partial\,\text{logits}} = G,$$
#
# with $G$ `(B, T, V)` a fixed random array: it needs no cross-entropy, so this check depends on
# your `gpt_backward` only.

# %%
def small_model(seed, vocab=7, t_max=5, width=8, layers=2):
    """A small model with every parameter, LayerNorm weights included, drawn at random."""
    rng = np.random.default_rng(seed=seed)
    params = init_gpt(rng, vocab, t_max, width, layers)
    for name in params:
        if "ln" in name:
            params[name] = params[name] + 0.5 * rng.standard_normal(width)
    return params


def gradient_errors(params, tokens, G, h, backward, epsilon=1e-6):
    """{name: largest |analytic - numeric| / largest |numeric|} for every parameter tensor, for L = sum(logits * G)."""
    def loss_of(p):
        return float(np.sum(gpt_forward(p, tokens, h)[0] * G))

    _, cache = gpt_forward(params, tokens, h)
    analytic = backward(params, cache, G)
    errors = {}
    for name, value in params.items():
        numeric = np.zeros_like(value)
        for index in np.ndindex(*value.shape):
            plus, minus = dict(params), dict(params)
            plus[name], minus[name] = value.copy(), value.copy()
            plus[name][index] += epsilon
            minus[name][index] -= epsilon
            numeric[index] = (loss_of(plus) - loss_of(minus)) / (2 * epsilon)
        errors[name] = float(np.abs(np.asarray(analytic[name]) - numeric).max() / max(np.abs(numeric).max(), 1e-12))
    return errors


check_params = small_model(5)
check_tokens = np.array([[1, 3, 1, 3], [0, 0, 6, 2], [5, 2, 5, 2]])  # (3, 4): tokens repeat within a sequence
check_G = np.random.default_rng(6).standard_normal((3, 4, 7))  # (B, T, V): dL/dlogits
errors = gradient_errors(check_params, check_tokens, check_G, 2, gpt_backward)
print(f"{sum(p.size for p in check_params.values())} entries in {len(check_params)} tensors")
for name, error in errors.items():
    print(f"d{name:13s} {check_params[name].shape!s:8s} largest error / largest entry below 1e-6: {error < 1e-6}")

# %% nbgrader={"grade": true, "grade_id": "test_gpt_backward", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
def check_gpt_backward(params, tokens, h, seed):
    """Visible check: every gradient against finite differences, with a hint for the usual mistakes."""
    logits, cache = gpt_forward(params, tokens, h)
    dlogits = np.random.default_rng(seed=seed).standard_normal(logits.shape)  # (B, T, V): L = sum(logits * dlogits)
    before = {k: v.copy() for k, v in params.items()}, dlogits.copy()
    grads = gpt_backward(params, cache, dlogits)
    assert all(np.array_equal(params[k], before[0][k]) for k in params) and np.array_equal(dlogits, before[1]), (
        "gpt_backward modified its inputs: build new arrays")
    assert isinstance(grads, dict) and set(grads) == set(params), (
        f"return a dict with exactly the keys of params: missing {sorted(set(params) - set(grads or {}))}")
    for name in params:
        assert np.shape(grads[name]) == params[name].shape, (
            f"grads[{name!r}] has shape {np.shape(grads[name])}, expected {params[name].shape}")
    errors = gradient_errors(params, tokens, dlogits, h, lambda *args: grads)
    wrong = [name for name, error in errors.items() if not error < 1e-6]
    if wrong == ["E"]:
        raise AssertionError("dE is wrong and nothing else: repeated tokens must add up; dE[tokens] += delta keeps "
                             "only one of them, use np.add.at(dE, tokens, delta)")
    if "P" in wrong and "E" not in wrong:
        raise AssertionError("dP is wrong: sum delta over the batch, into rows 0 .. T-1; the other rows stay 0")
    if "E" in wrong and "P" in wrong and not any(n.startswith(f"b{len(cache['blocks']) - 1}.") for n in wrong):
        raise AssertionError(f"the gradients of {wrong} are wrong, the last block's are right: below each block, "
                             "delta = delta + (gradient through the LayerNorm), keep the residual path")
    assert not wrong, f"wrong gradients for {wrong} (checked by finite differences)"


check_gpt_backward(small_model(11), check_tokens, 2, seed=7)
check_gpt_backward(small_model(12, layers=1, width=4), np.array([[2, 2, 2]]), 1, seed=8)
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Training
#
# Every step draws a fresh batch of 32 training sequences, computes the loss at all 24 positions
# with `cross_entropy`, the gradients with your `gpt_backward`, and takes one Adam step with
# learning rate $10^{-2}$. Every 20 steps the model is evaluated on 128 held-out sequences: the
# second-half loss, and two scores per head, defined next, kept for the figures.

# %% [markdown]
# ### Two scores per head
#
# For an attention tensor `attn` `(B, h, T, T)`:
#
# - the **previous-token score** of a head is the mean weight that query $i$ gives to key $i - 1$,
#   over the queries $i = 1 \dots T-1$ and the batch;
# - the **induction score** with period $P$ is the mean weight that query $i$ gives to key
#   $i - P + 1$, the token just after the previous occurrence of the current one, over the queries
#   $i = P \dots T-1$ and the batch:
#
# $$\text{induction}_h = \frac{1}{B\,(T - P)} \sum_b \sum_{i = P}^{T-1} \text{attn}_{b, h, i, i - P + 1} .$$
#
# A score of 1 means the head puts all of its weight on that key at every query; a head that spreads
# its weight evenly over the keys it may see scores about the mean of $1/(i+1)$. Both are given:

# %%
def previous_token_score(attn):
    """Mean weight each query i >= 1 gives to key i - 1: attn (B, h, T, T) -> (h,)."""
    T = attn.shape[-1]
    rows = np.arange(1, T)
    return attn[:, :, rows, rows - 1].mean(axis=(0, 2))  # (B, h, T-1) -> (h,)


def induction_score(attn, period):
    """Mean weight of queries i = period .. T-1 on key i - period + 1: attn (B, h, T, T) -> (h,)."""
    T = attn.shape[-1]
    queries = np.arange(period, T)  # (T - P,)
    return attn[:, :, queries, queries - period + 1].mean(axis=(0, 2))  # (B, h, T - P) -> (h,)


# %%
BATCH, LR, EVAL_EVERY = 32, 1e-2, 20
eval_inputs, eval_targets = inputs_held[:128], targets_held[:128]  # (128, 23) each


def second_half_loss(params, inputs, targets, head_mask=None):
    """The mean loss of the second-half predictions, and the forward cache."""
    logits, cache = gpt_forward(params, inputs, H, head_mask)
    return cross_entropy(logits[:, SECOND], targets[:, SECOND])[0], cache


EARLY, LATE = 2, 22  # input positions of the in-context learning score: ~10% and ~98% into the 23


def in_context_score(params, cache, targets):
    """Loss at input position LATE minus loss at EARLY, from a forward cache: a negative score is learning in context."""
    logits = cache["xf"] @ params["U"]  # (B, T, C) @ (C, V) -> (B, T, V)
    late = cross_entropy(logits[:, LATE], targets[:, LATE])[0]
    return late - cross_entropy(logits[:, EARLY], targets[:, EARLY])[0]


def train(params, steps, data_seed, periods=PERIODS, print_every=None):
    """Adam on fresh training batches from default_rng(data_seed); returns (params, history)."""
    data_rng = np.random.default_rng(data_seed)
    state = adam_init(params)
    history = {"step": [], "second_half": [], "previous": [], "induction": [], "in_context": []}
    for step in range(steps + 1):
        if step % EVAL_EVERY == 0 or step == steps:
            loss2, cache = second_half_loss(params, eval_inputs, eval_targets)
            history["step"].append(step)
            history["second_half"].append(loss2)
            history["in_context"].append(in_context_score(params, cache, eval_targets))
            history["previous"].append(previous_token_score(cache["blocks"][0]["weights"]))  # (h,)
            if len(cache["blocks"]) > 1:  # a one-block model has no layer 1
                history["induction"].append(induction_score(cache["blocks"][1]["weights"], PERIOD))  # (h,)
            if print_every and step % print_every == 0:
                print(f"step {step:4d}   second-half loss {loss2:.3f}")
        if step == steps:
            break
        batch = training_batch(data_rng, BATCH, periods)  # (32, 25)
        logits, cache = gpt_forward(params, batch[:, :-1], H)
        _, dlogits = cross_entropy(logits, batch[:, 1:])
        params, state = adam_step(params, gpt_backward(params, cache, dlogits), state, LR)
    return params, {k: np.array(v) for k, v in history.items()}


STEPS = demo_size(full=800, small=20)
print(f"training for {STEPS} steps")
cpu_start, wall_start = time.process_time(), time.perf_counter()
params_trained, history = train(init_gpt(np.random.default_rng(0)), STEPS, data_seed=1, print_every=100)
main_cpu, main_wall = time.process_time() - cpu_start, time.perf_counter() - wall_start

# %% [markdown]
# The curve, with both floors drawn:

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
ax = axes[0]
_ = ax.plot(history["step"], history["second_half"], color="tab:blue", label="model, held-out second half")
_ = ax.axhline(BIGRAM_FLOOR, color="gray", linestyle=":", label=f"bigram floor, log V = {BIGRAM_FLOOR:.2f}")
_ = ax.axhline(BAG_FLOOR, color="tab:red", linestyle="--", label=f"bag-of-tokens floor = {BAG_FLOOR:.2f}")
ax.set_title("Second-half loss during training")
ax.set_xlabel("training step")
ax.set_ylabel("cross-entropy (nats)")
ax.legend(loc="upper right")
ax = axes[1]
for head in range(H):
    _ = ax.plot(history["step"], history["previous"][:, head], color="tab:orange", linestyle=("-", "--")[head],
                label=f"layer 0 head {head}: previous-token score")
    _ = ax.plot(history["step"], history["induction"][:, head], color="tab:green", linestyle=("-", "--")[head],
                label=f"layer 1 head {head}: induction score")
ax.set_ylim(0, 1)
ax.set_title("Head scores during training (held-out)")
ax.set_xlabel("training step")
ax.set_ylabel("mean attention weight on the scored key")
ax.legend(loc="center right", fontsize=8)
fig.suptitle(f"Training the two-layer attention-only GPT ({STEPS} steps, init default_rng(0))")
plt.show()

# %% [markdown]
# *Figure: left, the held-out second-half loss against the training step, with the bigram floor
# (grey) and the bag floor (red). Right, the two scores over the same steps: how much a
# layer-0 head looks one token back, and how much a layer-1 head looks at the token after the
# previous occurrence of the current one.*
#
# What the run shows, in numbers:

# %%
def phase_summary(history, floor=BAG_FLOOR, window=100):
    """(first step below the floor, whether the loss fell from above the floor to below half of it within `window` steps)."""
    steps, loss = history["step"], history["second_half"]
    below = np.flatnonzero(loss < floor)
    crossed = int(steps[below[0]]) if below.size else None
    sudden = any(loss[i] > floor and np.any(loss[(steps > steps[i]) & (steps <= steps[i] + window)] < floor / 2)
                 for i in range(len(steps)))
    return crossed, bool(sudden)


marks = np.flatnonzero(history["step"] % 100 == 0)
print("step:            ", " ".join(f"{s:5d}" for s in history["step"][marks]))
print("second-half loss:", " ".join(f"{v:5.2f}" for v in history["second_half"][marks]))
crossed, sudden = phase_summary(history)
print(f"first below the bag floor ({BAG_FLOOR:.2f}) at step {crossed}; from above it to below half of it "
      f"({BAG_FLOOR / 2:.2f}) within 100 steps: {sudden}")
print(f"final second-half loss {history['second_half'][-1]:.3f} = {history['second_half'][-1] / BAG_FLOOR:.2f} x the bag floor")
print(f"copying from after every earlier occurrence of the current token (section 1): {TOKEN_MATCH:.3f}; "
      f"the model below it: {history['second_half'][-1] < TOKEN_MATCH}")
span = min(100 // EVAL_EVERY, len(history["step"]) - 1)  # evaluations in 100 steps (fewer in a short run)
loss_curve = history["second_half"]
start = int((loss_curve[:-span] - loss_curve[span:]).argmax())  # where the loss falls most over `span` evaluations
before = (f"{loss_curve[start - span]:.2f} to {loss_curve[start]:.2f}" if start >= span else "not in this run")
print(f"steepest fall over {span * EVAL_EVERY} steps: {loss_curve[start]:.2f} at step {history['step'][start]} to "
      f"{loss_curve[start + span]:.2f} at step {history['step'][start + span]}; the {span * EVAL_EVERY} steps "
      f"before it: {before}")

# %% [markdown]
# The 800-step run shows the phase change most clearly in the head scores, on the right: for the
# first hundred-odd steps every score stays flat near its value at initialisation; then, within
# about a hundred steps, a layer-0 head's previous-token score and the layer-1 heads' induction
# scores climb together, and then level off. The loss, on the left, has no flat plateau: it first
# comes down steadily while the model learns which tokens to expect, and its fall steepens in the
# same hundred steps as the scores climb (the printed lines: the steepest hundred steps against the
# hundred before them), through the bag floor to well under half of it. The two heads are only
# useful together, which is why they appear together.
#
# The model also ends below the loss of copying from after every earlier occurrence of the current
# token (section 1): where a token repeats in the first half, it does not split its bet between the
# tokens that followed each occurrence; it uses the position too, since the copy runs in order.
#
# One run is one draw. The next cell trains the same model from other initialisations, on other
# batches, and counts how often the same thing happens: a fall from above the bag floor to below
# half of it within 100 steps.

# %%
SEEDS = demo_size(full=5, small=1)
print(f"{SEEDS} more runs of {STEPS} steps: init default_rng(s), batches default_rng(100 + s), for s = 1 .. {SEEDS}")
runs = [phase_summary(history) + (float(history["second_half"][-1]),)]
histories = [history]  # kept for the in-context learning score below
for seed in range(1, SEEDS + 1):
    _, history_seed = train(init_gpt(np.random.default_rng(seed=seed)), STEPS, data_seed=100 + seed)
    histories.append(history_seed)
    runs.append(phase_summary(history_seed) + (float(history_seed["second_half"][-1]),))
    print(f"seed {seed}: below the bag floor at step {runs[-1][0]}, sudden fall: {runs[-1][1]}, "
          f"final second-half loss {runs[-1][2]:.3f}")
print(f"sudden fall through the bag floor within {STEPS} steps: {sum(r[1] for r in runs)} of {len(runs)} runs "
      "(main run included)")
print(f"final second-half loss below half the bag floor: {sum(r[2] < BAG_FLOOR / 2 for r in runs)} of {len(runs)} runs")

# %% [markdown]
# The counts above are the summary to trust, not the one curve drawn: how often, in this setting and
# in this many steps, the fall happens.
#
# ### The in-context learning score
#
# Olsson et al. ("In-context Learning and Induction Heads", 2022, arXiv:2209.11895) measure in-context
# learning with one number: the loss at the 500th token of a 512-token context minus the loss at the
# 50th. A model that uses its context predicts late tokens better than early ones, so the score is
# negative; they find that it falls, in a small window of training, exactly when induction heads
# form. Our context is 23 inputs long, so the same fractions (about 10% and 98% of the way in) are
# input positions 2 and 22:
#
# $$	ext{ICL score} = \mathcal{L}_{	ext{position } 22} - \mathcal{L}_{	ext{position } 2},$$
#
# the mean loss over the 128 held-out sequences at each position. Position 2 is in the first half,
# where nothing can be copied; position 22 is in the second half. `train` recorded it at every
# evaluation of the main run (`history["in_context"]`), beside the induction scores:

# %%
icl, induction_best = history["in_context"], history["induction"].max(axis=1)  # (evaluations,) each
fig, ax = plt.subplots(figsize=(8.5, 4.2))
_ = ax.plot(history["step"], icl, color="tab:purple", label="in-context learning score (left axis)")
_ = ax.axhline(0, color="gray", linewidth=0.8)
ax.set_xlabel("training step")
ax.set_ylabel("loss at position 22 - loss at position 2 (nats)")
twin = ax.twinx()
_ = twin.plot(history["step"], induction_best, color="tab:green", linestyle="--",
              label="highest layer-1 induction score (right axis)")
twin.set_ylim(0, 1)
twin.set_ylabel("mean attention weight on the scored key")
ax.legend(handles=ax.get_lines()[:1] + twin.get_lines(), loc="center right", fontsize=8)
ax.set_title(f"In-context learning score and induction score during training ({STEPS} steps, held-out)")
plt.show()

# %% [markdown]
# *Figure: purple, the in-context learning score (left axis; below 0 means later tokens are
# predicted better than early ones); green dashed, the highest induction score among layer 1's heads
# (right axis). Look at where each one changes.*

# %%
def change_windows(history, span):
    """(start of the steepest fall of the ICL score, start of the steepest rise of the best induction score),
    each as an index into history["step"], over windows of `span` evaluations."""
    icl, best = history["in_context"], history["induction"].max(axis=1)  # (evaluations,) each
    return int((icl[:-span] - icl[span:]).argmax()), int((best[span:] - best[:-span]).argmax())


span = min(100 // EVAL_EVERY, len(history["step"]) - 1)  # evaluations in 100 steps
icl_start, ind_start = change_windows(history, span)
steps = history["step"]
print(f"in-context learning score: {icl[0]:+.2f} at step 0, {icl[-1]:+.2f} at step {steps[-1]}")
print(f"steepest fall over {span * EVAL_EVERY} steps: {icl[icl_start]:+.2f} at step {steps[icl_start]} "
      f"to {icl[icl_start + span]:+.2f} at step {steps[icl_start + span]}")
print(f"highest layer-1 induction score: steepest rise over {span * EVAL_EVERY} steps: "
      f"{induction_best[ind_start]:.2f} at step {steps[ind_start]} to "
      f"{induction_best[ind_start + span]:.2f} at step {steps[ind_start + span]}")
overlap = 0
for run, run_history in enumerate(histories):  # the main run and the seed runs above
    a, b = change_windows(run_history, span)
    overlap += abs(int(steps[a]) - int(steps[b])) < span * EVAL_EVERY
    print(f"{'main run' if run == 0 else f'seed {run}':8s}: ICL score falls fastest from step {steps[a]:3d}, "
          f"induction score rises fastest from step {steps[b]:3d}, final ICL score {run_history['in_context'][-1]:+.2f}")
print(f"the two {span * EVAL_EVERY}-step windows overlap in {overlap} of {len(histories)} runs")

# %% [markdown]
# In the 800-step run the score starts near 0 (-0.23 at step 0: an untrained model predicts every
# position about as badly) and ends at -3.10: the last input's target is predicted 3.10 nats better
# than the third's. It does not fall steadily: it is above 0 at step 180 (+1.25), then falls by
# 4.2 nats in 100 steps, to -2.95 at step 280. The highest induction score climbs fastest in the
# 100 steps from step 120 to step 220 (0.11 to 0.73), so the two windows overlap.
# Over the six runs (the main one and the five seeds of the base rate above, recorded during the
# same training), the induction score's fastest rise always starts first, 60 to 100 steps before
# the ICL score's fastest fall; the two 100-step windows overlap in 5 of 6 runs, and in the sixth
# (seed 1) they meet end to start (steps 80 to 180, then 180 to 280). Every run ends with an ICL
# score between -3.29 and -3.10.
# This is the paper's co-occurrence at our scale; it is still a correlation. The ablations of
# section 8 and the path ablation of section 9 are what show that the heads cause the copying.
#
# ### Why the period varies, and why no MLP
#
# Two choices of sections 1 and 3, measured. First, the same model trained on sequences whose
# period is **always** 12. Then its second-half loss on the held-out set is compared with the loss
# on held-out sequences of period 8, which it never saw, alongside the main model's:

# %%
FIXED_STEPS = demo_size(full=300, small=10)
params_fixed, history_fixed = train(init_gpt(np.random.default_rng(0)), FIXED_STEPS, data_seed=1, periods=(12, 12))
held_8 = repeated_sequences(np.random.default_rng(3), 128, period=8)  # (128, 16)


def loss_of_repeats(params, sequences, period):
    """Mean loss of the predictions whose input and target lie in the repeat: positions period .. 2 period - 2."""
    logits, _ = gpt_forward(params, sequences[:, :-1], H)
    return cross_entropy(logits[:, period:], sequences[:, period + 1:])[0]


print(f"trained {FIXED_STEPS} steps on period 12 only:")
print(f"  second-half loss, period 12: {loss_of_repeats(params_fixed, held_out[:128], 12):.3f}"
      f"   period 8: {loss_of_repeats(params_fixed, held_8, 8):.3f}"
      f"   previous-token scores of layer 0: {np.round(history_fixed['previous'][-1], 2)}")
print(f"trained {STEPS} steps on periods 4 to 12 (the main run):")
print(f"  second-half loss, period 12: {loss_of_repeats(params_trained, held_out[:128], 12):.3f}"
      f"   period 8: {loss_of_repeats(params_trained, held_8, 8):.3f}"
      f"   previous-token scores of layer 0: {np.round(history['previous'][-1], 2)}")
print(f"bag floor, period 8: {bag_floor(held_8, 8):.3f}")

# %% [markdown]
# Trained on one period, the model predicts that period's second half without a previous-token
# head, and fails on period 8: it learned "copy from 11 positions back", which positions alone can
# do. Varying the period removes that shortcut.
#
# Second, the cost: a forward pass of the model with Lesson 11's MLP after each attention layer
# (`(C, 4C)` and `(4C, C)`, GELU) against one of the attention-only model, on the same batch:

# %%
# NBVAL_IGNORE_OUTPUT
def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x * x * x)))  # x * x * x: x ** 3 is far slower


def mlp_blocks_forward(params, mlp, tokens, h):
    """Forward of the model with an MLP sublayer after each attention (for the timing only): logits (B, T, V)."""
    B, T = tokens.shape
    x = params["E"][tokens] + params["P"][:T]  # (B, T, C)
    for layer in range(LAYERS):
        a = layer_norm(x, params[f"b{layer}.ln1_gamma"], params[f"b{layer}.ln1_beta"])
        x = x + causal_attention(a, *(params[f"b{layer}.{n}"] for n in ("Wq", "Wk", "Wv", "Wo")), h)[0]
        m = layer_norm(x, mlp[f"b{layer}.ln2_g"], mlp[f"b{layer}.ln2_b"])  # (B, T, C)
        x = x + gelu(m @ mlp[f"b{layer}.W1"]) @ mlp[f"b{layer}.W2"]  # (B, T, 4C) -> (B, T, C)
    return layer_norm(x, params["lnf_gamma"], params["lnf_beta"]) @ params["U"]  # (B, T, V)


mlp_rng = np.random.default_rng(0)
mlp_params = {}
for layer in range(LAYERS):
    mlp_params[f"b{layer}.ln2_g"], mlp_params[f"b{layer}.ln2_b"] = np.ones(C), np.zeros(C)
    mlp_params[f"b{layer}.W1"] = mlp_rng.standard_normal((C, 4 * C)) / np.sqrt(C)
    mlp_params[f"b{layer}.W2"] = mlp_rng.standard_normal((4 * C, C)) / np.sqrt(4 * C)
timing_batch = training_batch(np.random.default_rng(0), BATCH)[:, :-1]  # (32, 24)
repeats = demo_size(full=50, small=2)
start = time.process_time()
for _ in range(repeats):
    gpt_forward(params_init, timing_batch, H)
attention_only = (time.process_time() - start) / repeats
start = time.process_time()
for _ in range(repeats):
    mlp_blocks_forward(params_init, mlp_params, timing_batch, H)
with_mlp = (time.process_time() - start) / repeats
print(f"forward pass, CPU time per batch of {BATCH}: attention-only {1e3 * attention_only:.2f} ms, "
      f"with MLPs {1e3 * with_mlp:.2f} ms ({with_mlp / attention_only:.1f}x)")
print(f"parameters of the MLPs: {sum(p.size for p in mlp_params.values()):,}; of the attention-only model: "
      f"{sum(p.size for p in params_init.values()):,}")

# %% [markdown]
# The MLPs would more than double the parameters and add to the cost of every step (the timing
# cell's ratio), for a task that, as the next sections show, two layers of attention solve alone.
#
# ## 7. Finding the heads
#
# Every head's attention on one held-out sequence, after training. The ticks carry the tokens, so
# you can read off where each query looks:

# %%
_, cache_trained = gpt_forward(params_trained, eval_inputs, H)
sequence = 0
tick_labels = [f"{i}:{token}" for i, token in enumerate(eval_inputs[sequence])]
fig, axes = plt.subplots(LAYERS, H, figsize=(12, 11.5))
for layer in range(LAYERS):
    for head in range(H):
        ax = axes[layer, head]
        image = ax.imshow(cache_trained["blocks"][layer]["weights"][sequence, head], vmin=0, vmax=1, cmap="viridis")
        ax.set_title(f"layer {layer} head {head}")
        ax.set_xlabel("key position : token")
        ax.set_ylabel("query position : token")
        ax.set_xticks(range(len(tick_labels)), tick_labels, rotation=90, fontsize=6)
        ax.set_yticks(range(len(tick_labels)), tick_labels, fontsize=6)
        fig.colorbar(image, ax=ax, label="attention weight", shrink=0.8)
fig.suptitle(f"Every head's attention on held-out sequence {sequence} (period {PERIOD}), after {STEPS} steps")
plt.show()

# %% [markdown]
# *Figure: rows are queries, columns keys; the causal mask leaves the upper triangle at 0. A
# previous-token head is one bright line just below the diagonal (key $i - 1$). An induction head,
# in the second half, is a bright line 11 positions below the diagonal: from query $i$ it looks at
# key $i - 12 + 1$, the token that followed the current token's previous occurrence. Look for both,
# and for which layer each sits in.*

# %% [markdown]
# Both scores for every head of the trained model, on the 128 held-out sequences, and for
# comparison the value a head with uniform causal rows would get:

# %%
uniform_rows = np.tril(np.ones((inputs_held.shape[1],) * 2)) / np.arange(1, inputs_held.shape[1] + 1)[:, None]
uniform_prev = float(previous_token_score(uniform_rows[None, None])[0])
uniform_ind = float(induction_score(uniform_rows[None, None], PERIOD)[0])
scores = {"previous-token": np.array([previous_token_score(b["weights"]) for b in cache_trained["blocks"]]),
          "induction": np.array([induction_score(b["weights"], PERIOD) for b in cache_trained["blocks"]])}  # (L, h)
print("head          previous-token  induction")
for layer in range(LAYERS):
    for head in range(H):
        print(f"layer {layer} head {head}   {scores['previous-token'][layer, head]:10.3f}  "
              f"{scores['induction'][layer, head]:9.3f}")
print(f"uniform rows   {uniform_prev:10.3f}  {uniform_ind:9.3f}")
for kind, table in scores.items():
    layer, head = np.unravel_index(table.argmax(), table.shape)
    rest = np.delete(table.ravel(), table.argmax())
    print(f"highest {kind} score: layer {layer} head {head}, {table.max():.3f}; the other heads at most {rest.max():.3f}")

# %%
fig, axes = plt.subplots(1, LAYERS, figsize=(11, 4), sharey=True)
width = 0.38
for layer, ax in enumerate(axes):
    heads = np.arange(H)
    _ = ax.bar(heads - width / 2, scores["previous-token"][layer], width, color="tab:orange", label="previous-token")
    _ = ax.bar(heads + width / 2, scores["induction"][layer], width, color="tab:green", label="induction")
    _ = ax.axhline(uniform_prev, color="tab:orange", linestyle=":", label="previous-token, uniform rows")
    _ = ax.axhline(uniform_ind, color="tab:green", linestyle=":", label="induction, uniform rows")
    ax.set_xticks(heads, [f"head {i}" for i in heads])
    ax.set_ylim(0, 1)
    ax.set_title(f"layer {layer}")
    ax.set_xlabel("head")
    ax.set_ylabel("score (mean attention weight)")
axes[0].legend(loc="upper left", fontsize=8)
fig.suptitle(f"Previous-token and induction scores per head (held-out, period {PERIOD})")
plt.show()

# %% [markdown]
# *Figure: one panel per layer, two bars per head; the dotted lines are the scores of a head that
# attends uniformly. A previous-token head has a tall orange bar in layer 0; an induction head a tall
# green bar in layer 1. The table above gives the numbers.*
#
# ## 8. Ablation: which heads does the model need?
#
# A score says where a head looks, not whether the model uses what it finds. To test that, switch
# one head off (its output multiplied by 0, through `head_mask`) and measure the second-half loss:

# %%
loss_intact, _ = second_half_loss(params_trained, eval_inputs, eval_targets)
print(f"intact model: second-half loss {loss_intact:.3f}   (bag floor {BAG_FLOOR:.3f})")
ablated = np.zeros((LAYERS, H))
for layer in range(LAYERS):
    for head in range(H):
        mask = np.ones((LAYERS, H))
        mask[layer, head] = 0.0
        ablated[layer, head], _ = second_half_loss(params_trained, eval_inputs, eval_targets, mask)
        print(f"layer {layer} head {head} off: second-half loss {ablated[layer, head]:.3f}  "
              f"(+{ablated[layer, head] - loss_intact:.3f})")
order = np.argsort(ablated.ravel())[::-1]
print("heads by the loss their removal costs:",
      ", ".join(f"L{i // H}H{i % H} {ablated.ravel()[i]:.2f}" for i in order))
previous_head = int(scores["previous-token"][0].argmax())  # layer 0's head with the highest previous-token score
mask = np.ones((LAYERS, H))
mask[0, previous_head] = 0.0
_, cache_without = second_half_loss(params_trained, eval_inputs, eval_targets, mask)
print(f"layer-1 induction scores, intact: {np.round(scores['induction'][1], 3)}; with layer 0 head {previous_head} "
      f"off: {np.round(induction_score(cache_without['blocks'][1]['weights'], PERIOD), 3)}")

# %%
fig, ax = plt.subplots(figsize=(7.5, 4))
labels = [f"L{layer}H{head}" for layer in range(LAYERS) for head in range(H)]
_ = ax.bar(labels, ablated.ravel(), color=["tab:orange"] * H + ["tab:green"] * H)
_ = ax.axhline(loss_intact, color="tab:blue", label=f"intact model, {loss_intact:.2f}")
_ = ax.axhline(BAG_FLOOR, color="tab:red", linestyle="--", label=f"bag floor, {BAG_FLOOR:.2f}")
ax.set_title("Second-half loss with one head switched off")
ax.set_xlabel("head switched off (layer, head)")
ax.set_ylabel("second-half loss (nats)")
ax.legend()
plt.show()

# %% [markdown]
# *Figure: one bar per switched-off head, orange for layer 0 and green for layer 1. The blue line is
# the intact model; a bar far above it marks a head the copy depends on.*
#
# Compare the printed ranking with the scores of section 7. In the 800-step run the two heads whose
# removal costs the most are the head with the highest previous-token score (layer 0) and the head
# with the highest induction score (layer 1): the pair the scores singled out. Removing the
# previous-token head costs far more than removing the induction head. Layer 1 has two heads with
# high induction scores, which share the copying, while the previous-token head has no stand-in; and
# the last printed line shows what its removal does to the induction heads: their induction scores
# collapse, because the keys they match on were written by it.
#
# ## 9. The circuit: how the two heads compose
#
# Switching a head off removes everything it writes. But the previous-token head's output reaches
# layer 1 along several roads, and only one of them should matter for an induction head. In layer
# 1 the stream $x_1$ is read three times, through one LayerNorm: by the queries, by the keys and by
# the values,
#
# $$Q = \text{LN}_1(x_1^{(q)})\, W_q, \qquad K = \text{LN}_1(x_1^{(k)})\, W_k, \qquad V = \text{LN}_1(x_1^{(v)})\, W_v,
# \qquad x_2 = x_1^{(r)} + \text{Concat}\Big(\text{softmax}\big(Q K^\top / \sqrt{hs} + M\big) V\Big) W_o,$$
#
# and in the intact model all four are the same $x_1$. Head $j$ of layer 0 wrote
# $w = \text{head}_j\, W_o^{(j)}$ `(B, T, hs) @ (hs, C)` into it. The story of an induction head
# says that $w$ at key position $s$ carries "the token before me was $t_{s-1}$", and that the layer-1
# head uses it to **match** the current token: a key effect, called **K-composition**. To test it,
# remove $w$ from one road only, $x_1^{(k)} = x_1 - w$, and leave the others intact. If the copy
# breaks with the keys alone and not with the queries or values alone, the story is proven.
#
# ### Exercise 2: `path_ablation` (4 points)
#
# Write `path_ablation(params, tokens, h, head, paths, replacement=None)` for a model of 2 or more
# blocks as `init_gpt` makes it: `tokens` `(B, T)`, `h` heads per block, `head` a head of layer 0,
# and `paths` a string of the roads to remove it from, any of `"q"`, `"k"`, `"v"` (the three reads of
# layer 1) and `"r"` (the residual stream that goes on past layer 1 to the later blocks and the
# logits). On those roads layer 1 reads $x_1 - w + \text{replacement}$ instead of $x_1$
# (`replacement` broadcastable to `(B, T, C)`; `None` means nothing is put back). Blocks after layer
# 1 run as usual on the stream layer 1 leaves. Return the pair `(logits, weights)`: the logits
# `(B, T, V)`, and layer 1's attention weights `(B, h, T, T)`. With `paths=""` this is the intact
# model; with `paths="qkvr"` it is the model with the head switched off, as in section 8.
#
# Use the given `layer_norm`, `split_heads`, `merge_heads` and `softmax`; `causal_attention` reads one
# input for all three of $Q, K, V$, so layer 1 needs its own three reads. Do not modify the inputs.

# %% nbgrader={"grade": false, "grade_id": "path_ablation", "locked": false, "schema_version": 3, "solution": true, "task": false}
def path_ablation(params, tokens, h, head, paths, replacement=None):
    """Logits (B, T, V) and layer 1's weights (B, h, T, T) with layer 0's `head` removed from the roads in `paths`."""
    ### BEGIN SOLUTION
    B, T = tokens.shape
    x0 = params["E"][tokens] + params["P"][:T]  # (B, T, C)
    width = x0.shape[-1]
    hs = width // h
    a0 = layer_norm(x0, params["b0.ln1_gamma"], params["b0.ln1_beta"])  # (B, T, C)
    out0, cache0 = causal_attention(a0, *(params[f"b0.{n}"] for n in ("Wq", "Wk", "Wv", "Wo")), h)
    rows = slice(head * hs, (head + 1) * hs)  # the head's columns of the concat, rows of W_o
    written = cache0["concat"][..., rows] @ params["b0.Wo"][rows]  # (B, T, hs) @ (hs, C) -> (B, T, C): w
    x1 = x0 + out0  # (B, T, C): the intact stream
    removed = x1 - written + (0.0 if replacement is None else replacement)  # (B, T, C)
    read = {path: removed if path in paths else x1 for path in "qkvr"}
    gamma, beta = params["b1.ln1_gamma"], params["b1.ln1_beta"]
    Q, K, V_ = (split_heads(layer_norm(read[p], gamma, beta) @ params[f"b1.W{p}"], h) for p in "qkv")  # (B, h, T, hs)
    scores = (Q @ K.transpose(0, 1, 3, 2)) / np.sqrt(hs)  # layer 1: (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)  # layer 1's causal mask
    weights = softmax(scores)  # (B, h, T, T): layer 1's attention weights
    x = read["r"] + merge_heads(weights @ V_) @ params["b1.Wo"]  # (B, h, T, hs) -> (B, T, C); @ (C, C)
    for layer in range(2, sum(1 for name in params if name.endswith(".Wq"))):
        a = layer_norm(x, params[f"b{layer}.ln1_gamma"], params[f"b{layer}.ln1_beta"])
        x = x + causal_attention(a, *(params[f"b{layer}.{n}"] for n in ("Wq", "Wk", "Wv", "Wo")), h)[0]
    return layer_norm(x, params["lnf_gamma"], params["lnf_beta"]) @ params["U"], weights  # (B, T, V), (B, h, T, T)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_path_ablation", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
def check_path_ablation():
    """Visible checks: the intact model, the head switched off, and small cases computed beforehand."""
    params, tokens = small_model(31), np.array([[1, 3, 1, 3, 5]])  # vocabulary 7, width 8, 2 blocks; (1, 5)
    before = {k: v.copy() for k, v in params.items()}, tokens.copy()
    result = path_ablation(params, tokens, 2, 0, "k")
    assert all(np.array_equal(params[k], before[0][k]) for k in params) and np.array_equal(tokens, before[1]), (
        "path_ablation modified its inputs")
    assert isinstance(result, tuple) and len(result) == 2, "return the pair (logits, weights)"
    logits, weights = (np.asarray(r) for r in result)
    assert logits.shape == (1, 5, 7) and weights.shape == (1, 2, 5, 5), (
        f"logits (B, T, V) = (1, 5, 7) and layer 1's weights (B, h, T, T) = (1, 2, 5, 5); got {logits.shape}, {weights.shape}")
    # No road: the intact model. Every road: the head switched off, as head_mask does it.
    intact, cache = gpt_forward(params, tokens, 2)
    got = path_ablation(params, tokens, 2, 0, "")
    assert np.allclose(got[0], intact, atol=1e-10) and np.allclose(got[1], cache["blocks"][1]["weights"], atol=1e-10), (
        "with paths='' the result should be the intact model's logits and layer 1's weights")
    off, cache_off = gpt_forward(params, tokens, 2, np.array([[0.0, 1.0], [1.0, 1.0]]))
    got = path_ablation(params, tokens, 2, 0, "qkvr")
    assert np.allclose(got[0], off, atol=1e-10) and np.allclose(got[1], cache_off["blocks"][1]["weights"], atol=1e-10), (
        "with paths='qkvr' the result should be the model with layer 0's head switched off (head_mask): subtract what "
        "the head writes into the stream, its columns of the concat times its rows of W_o")
    assert np.allclose(path_ablation(params, tokens, 2, 0, "r", np.zeros((5, 8)))[0],
                       path_ablation(params, tokens, 2, 0, "r")[0], atol=1e-12), "a replacement of zeros is no replacement"
    # One road at a time: the last query's weights in layer 1's head 0, computed beforehand (4 decimals).
    expected = {"k": [0.0026, 0.1917, 0.0113, 0.3608, 0.4336], "q": [0.0028, 0.206, 0.01, 0.3873, 0.3939],
                "v": [0.0029, 0.2221, 0.0114, 0.3788, 0.3847]}  # the values do not change the weights
    for road, row in expected.items():
        got_row = np.asarray(path_ablation(params, tokens, 2, 0, road)[1])[0, 0, -1]
        wrong = [other for other, other_row in expected.items()
                 if other != road and np.abs(got_row - other_row).max() < 1e-4]
        assert not wrong, f"with paths='{road}' the weights are those of paths='{wrong[0]}': read x1 - w only on road '{road}'"
        assert np.allclose(got_row, row, atol=1e-4), (
            f"paths='{road}': the last query's weights in layer 1's head 0 should be {row}, got {np.round(got_row, 4)}")
    assert np.abs(np.asarray(path_ablation(params, tokens, 2, 0, "v")[0]) - intact).max() > 1e-6, (
        "removed from the values, the head should change the logits (layer 1's output reads its values)")
    # Three blocks: the third runs on the stream layer 1 leaves.
    params3 = small_model(32, layers=3)
    assert np.allclose(path_ablation(params3, tokens, 2, 1, "")[0], gpt_forward(params3, tokens, 2)[0], atol=1e-10), (
        "with three blocks and paths='', the result should be the intact model: run the blocks after layer 1 as usual")


check_path_ablation()
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# On the trained model, the previous-token head removed from one road at a time: the second-half
# loss, and the induction scores of layer 1's heads.

# %%
def ablated_loss(paths, replacement=None, head=previous_head):
    """Second-half loss and layer 1's induction scores with layer 0's `head` removed from `paths`."""
    logits, weights1 = path_ablation(params_trained, eval_inputs, H, head, paths, replacement)
    return cross_entropy(logits[:, SECOND], eval_targets[:, SECOND])[0], induction_score(weights1, PERIOD)


print(f"previous-token head: layer 0 head {previous_head}")
print("removed from        second-half loss   layer-1 induction scores")
road_names = {"": "nothing", "k": "keys only", "q": "queries only", "v": "values only", "r": "residual only",
              "qkvr": "every road"}
road_loss = {}
for road, name in road_names.items():
    road_loss[road], ind = ablated_loss(road)
    print(f"{name:18s}  {road_loss[road]:8.3f}           {np.round(ind, 2)}")
print("every road = section 8's switched-off head:", bool(np.isclose(road_loss["qkvr"], ablated[0, previous_head])))

# %% [markdown]
# In the 800-step run, removing the previous-token head from the **keys** of layer 1, and from
# nothing else, takes the second-half loss from 0.164 to 3.85, more than twice the bag floor, and the induction scores of
# both layer-1 heads collapse (from 0.71 and 0.82 to 0.09 and 0.15). From the queries or the values
# alone it costs a few hundredths, and from the residual stream alone nothing visible. That is K-composition: the layer-1 heads find the
# earlier occurrence by matching their query (the current token) against keys that carry the
# token **before** each position, which only the previous-token head wrote.
#
# ### Zero-ablation and mean-ablation
#
# Removing $w$ leaves layer 1 a stream it never saw in training: every position lost a vector of
# the size the head always writes, so the LayerNorm and the keys see inputs off their usual
# range. Part of the damage may come from that, not from the missing information. **Mean-ablation**
# puts back the head's average output instead, $\bar w_t$, its mean over the 128 held-out sequences
# at each position $t$: the size and the position-dependent part stay, only what depends on the
# tokens is gone.

# %%
_, cache_eval = gpt_forward(params_trained, eval_inputs, H)
hs_ = C // H
head_rows = slice(previous_head * hs_, (previous_head + 1) * hs_)
written_eval = cache_eval["blocks"][0]["concat"][..., head_rows] @ params_trained["b0.Wo"][head_rows]  # (B, T, C)
mean_written = written_eval.mean(axis=0)  # (T, C): the head's mean output at each position
for road, name in [("qkvr", "every road"), ("k", "keys only")]:
    zero, _ = ablated_loss(road)
    mean, ind = ablated_loss(road, mean_written)
    print(f"{name:11s}: zero-ablation {zero:.3f}, mean-ablation {mean:.3f} (induction scores {np.round(ind, 2)})")

# %% [markdown]
# In the 800-step run, mean-ablation costs less than zero-ablation (2.94 against 4.14 for the whole head, 2.83 against
# 3.85 for the keys alone): part of zero-ablation's damage is the unusual input. But the loss stays
# well above the bag floor, and the induction scores stay collapsed: most of the damage is the lost
# information, the token before each key.
#
# ### A one-layer control
#
# If two layers are needed, one layer should not do it. The same training (the same steps, batches
# and learning rate) of a model with a single attention block, from the main run's initialisation
# and batches and from each of the base rate's:

# %%
one_block = []
for seed in range(SEEDS + 1):  # seed 0: the main run's init and batches; then the base rate's
    _, history_one = train(init_gpt(np.random.default_rng(seed=seed), layers=1), STEPS,
                           data_seed=1 if seed == 0 else 100 + seed)
    one_block.append(float(history_one["second_half"][-1]))
    print(f"seed {seed}: one block {one_block[-1]:.3f}, two blocks {runs[seed][2]:.3f}")
print(f"one block, {STEPS} steps: above the bag floor ({BAG_FLOOR:.3f}) in {sum(b > BAG_FLOOR for b in one_block)} "
      f"of {len(one_block)} runs; two blocks below it in {sum(r[2] < BAG_FLOOR for r in runs)} of {len(runs)}")

# %% [markdown]
# In all six pairs of runs one block ends above the bag floor (between 1.76 and 2.00 against 1.485),
# where two blocks reach 0.16 to 0.23: one layer of attention can look at tokens and positions, but
# not at a key built from the token **before** each position, which needs a head of an earlier
# layer to write it.
#
# ### The copying circuit
#
# Once the layer-1 head has found the position after the previous occurrence, it must write that
# position's token into the logits. Lesson 4 called $W_v^{(i)} W_o^{(i)}$ a head's **OV circuit**.
# Read from the token embeddings to the logits, leaving positions and the other heads out, it is a
# `(V, V)` matrix:
#
# $$M = \text{centre}\Big(\text{LN}_1(E)\, W_v^{(i)} W_o^{(i)}\Big) \odot \gamma_f \; U,$$
#
# where $\text{LN}_1(E)$ is layer 1's LayerNorm of every token's embedding `(V, C)`, $W_v^{(i)}$ the
# head's `(C, hs)` columns of $W_v$, $W_o^{(i)}$ its `(hs, C)` rows of $W_o$, and the centring and
# $\gamma_f$ are what the final LayerNorm does to a vector added to the stream (up to its division by
# the stream's size, which is the same for every token). Row $a$ says how much attending to token
# $a$ raises each logit. A copying head has its largest entry of each row on the diagonal.
#
# ### Exercise 3: `ov_circuit` (4 points)
#
# Write `ov_circuit(params, layer, head, h)` for a model as `init_gpt` makes it: `layer` a block,
# `head` one of its `h` heads (of size $hs = C / h$). Return $M$ `(V, V)` as defined above, step by
# step:
#
# 1. $\text{LN}_1(E)$ `(V, C)`: the given `layer_norm` of every row of $E$, with the block's own
#    `ln1_gamma` and `ln1_beta`;
# 2. times the head's columns of $W_v$ `(C, hs)` and its rows of $W_o$ `(hs, C)`: `(V, C)`;
# 3. centred: each row minus its mean over the $C$ entries;
# 4. times $\gamma_f$ (`lnf_gamma`, entry by entry), then times $U$ `(C, V)`.
#
# The final LayerNorm's $\beta_f$ adds the same vector to every position whatever it attends to, so
# it is left out. Do not modify the inputs.

# %% nbgrader={"grade": false, "grade_id": "ov_circuit", "locked": false, "schema_version": 3, "solution": true, "task": false}
def ov_circuit(params, layer, head, h):
    """(V, V): how much attending to token a (row) raises the logit of token b (column), through one head."""
    ### BEGIN SOLUTION
    hs = params["U"].shape[0] // h
    cols = slice(head * hs, (head + 1) * hs)  # the head's columns of W_v, rows of W_o
    read = layer_norm(params["E"], params[f"b{layer}.ln1_gamma"], params[f"b{layer}.ln1_beta"])  # (V, C)
    write = read @ params[f"b{layer}.Wv"][:, cols] @ params[f"b{layer}.Wo"][cols]  # (V, C) @ (C, hs) @ (hs, C)
    write = write - write.mean(axis=-1, keepdims=True)  # (V, C): the final LayerNorm's centring
    return (write * params["lnf_gamma"]) @ params["U"]  # (V, C) @ (C, V) -> (V, V)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_ov_circuit", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
def check_ov_circuit():
    """Visible checks: what M may and may not depend on, and one row computed beforehand."""
    params = small_model(31)  # vocabulary 7, width 8, 2 blocks, LayerNorm weights drawn at random
    before = {k: v.copy() for k, v in params.items()}
    M = np.asarray(ov_circuit(params, 1, 0, 2))
    assert all(np.array_equal(params[k], before[k]) for k in params), "ov_circuit modified params"
    assert M.shape == (7, 7), f"M should be (V, V) = (7, 7), got {M.shape}"

    def changed(name, new_value, layer=1, head=0):
        other = {**params, name: new_value}
        return np.asarray(ov_circuit(other, layer, head, 2))

    # What M must not read: positions, queries and keys, the other head, the other block, beta_f.
    rng = np.random.default_rng(5)
    for name in ("P", "b1.Wq", "b1.Wk", "b0.Wv", "b0.Wo", "b0.ln1_gamma", "lnf_beta"):
        assert np.allclose(changed(name, params[name] + rng.standard_normal(params[name].shape)), M, atol=1e-12), (
            f"M changed with {name}: it reads only E, the block's LayerNorm, the head's W_v and W_o, gamma_f and U")
    other_head = params["b1.Wv"].copy()
    other_head[:, 4:] += 1.0  # head 1's columns
    assert np.allclose(changed("b1.Wv", other_head), M, atol=1e-12), (
        "M changed with head 1's columns of W_v: head 0 uses columns 0 .. hs-1 of W_v and rows 0 .. hs-1 of W_o")
    # The centring: a constant added across a row of what the head writes is removed by the final LayerNorm.
    shifted = params["b1.Wo"].copy()
    shifted[:4] += 0.7  # head 0's rows, every column
    assert np.allclose(changed("b1.Wo", shifted), M, atol=1e-10), (
        "M changed when the same number was added to every column of W_o's rows: centre each row of the write, "
        "subtracting its mean over the C entries, before gamma_f and U")
    # Linear in U.
    assert np.allclose(changed("U", 2 * params["U"]), 2 * M, atol=1e-10), "M should be linear in U: ... @ U last"
    # One row, computed beforehand (4 decimals), and what the common slips give instead.
    row = np.round(M[2], 4)
    slips = {"without the centring": [0.1375, -0.1697, 1.2783, 0.475, 1.9895, 0.7234, -0.1778],
             "without gamma_f": [-0.0891, 0.371, 0.6315, 0.5735, 0.8525, 0.2632, -0.4186],
             "with E instead of LN_1(E)": [0.2607, 0.5298, -0.6141, -0.3705, -0.7273, -0.2023, -0.0286],
             "with the whole W_v W_o instead of the head's": [0.6309, -2.9711, 3.7712, -1.2947, 8.23, 4.7838, 1.7525]}
    for slip, slip_row in slips.items():
        assert np.abs(row - np.array(slip_row)).max() > 2e-4, f"row 2 of M is what M is {slip}"
    expected = [0.0637, -0.1738, 1.2904, 0.4875, 1.8895, 0.7448, -0.1842]
    assert np.allclose(row, expected, atol=2e-4), f"row 2 of M (layer 1, head 0) should be {expected}, got {row.tolist()}"
    row0 = np.round(np.asarray(ov_circuit(params, 0, 1, 2))[2], 4)
    expected0 = [-0.4859, -1.0272, -0.0058, -0.2517, -0.6883, 0.0007, 0.05]
    assert np.allclose(row0, expected0, atol=2e-4), (
        f"row 2 of M for layer 0, head 1 should be {expected0}, got {row0.tolist()}: use the block's own LayerNorm and "
        "weights, and head 1's slice")


check_ov_circuit()
print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# On the trained model: each head's circuit, and how many of its rows have their largest entry on
# the diagonal, the mark of a head that copies.

# %%
induction_head = int(scores["induction"][1].argmax())
circuits = {f"layer 1 head {head}": ov_circuit(params_trained, 1, head, H) for head in range(H)}
circuits[f"layer 0 head {previous_head}"] = ov_circuit(params_trained, 0, previous_head, H)
for name, M in circuits.items():
    on_diagonal = int((M.argmax(axis=1) == np.arange(V)).sum())
    print(f"{name}: rows whose largest entry is on the diagonal: {on_diagonal:2d} of {V}; mean diagonal "
          f"{np.diag(M).mean():6.2f}, mean off the diagonal {M[~np.eye(V, dtype=bool)].mean():6.2f}")

# %%
M = circuits[f"layer 1 head {induction_head}"]
fig, ax = plt.subplots(figsize=(6.5, 5.5))
limit = np.abs(M).max()
image = ax.imshow(M, cmap="RdBu_r", vmin=-limit, vmax=limit)
ax.set_title(f"OV circuit of layer 1 head {induction_head} (the highest induction score)")
ax.set_xlabel("logit of token b")
ax.set_ylabel("token a attended to")
fig.colorbar(image, ax=ax, label="change of logit b per unit of attention on a")
plt.show()

# %% [markdown]
# *Figure: one row per token attended to, one column per output logit. A bright red diagonal on a
# pale background is a head that copies: attending to a token raises that token's logit.*
#
# In the 800-step run both layer-1 heads copy: in all 32 rows of each, the largest entry is on the diagonal, and the
# diagonal's mean (42.68 and 72.03) stands far above the rest (about -2). The previous-token head's
# circuit is much weaker (a diagonal mean of 5.80, the largest entry on the diagonal in 19 rows of
# 32): its main job, as the key-only ablation showed, is to write the token before each position
# into the stream for layer 1's keys. Together: the previous-token head builds the keys (K-composition), the induction
# heads' QK circuit matches the current token against them, and their OV circuit copies the token
# found.
#
# ### The circuit as the papers measure it
#
# Elhage et al. ("A Mathematical Framework for Transformer Circuits", 2021, transformer-circuits.pub)
# give two measures of this circuit that need no data at all, only the weights.
#
# **Copying.** A head's full OV circuit maps a token to logits: here $M$, from the embedding through
# the head's $W_v W_o$ to the unembedding, exactly as the model computes it (layer 1's LayerNorm of
# $E$, the final LayerNorm's centring and $\gamma_f$, then $U$; your `ov_circuit`). If the head copies,
# $M$ sends each token mostly to itself, and its eigenvalues have mostly positive real parts. The
# paper's copying score is
#
# $$\text{copying} = \frac{\sum_i \lambda_i}{\sum_i |\lambda_i|} ,$$
#
# the sum of the eigenvalues $\lambda_i$ of $M$ (a real number: complex ones come in conjugate pairs)
# over the sum of their magnitudes: $+1$ when every eigenvalue is positive, $-1$ when every one is
# negative, near 0 for a matrix without a preference. Every head of the trained model, against $M$
# built the same way from random weights of the same shapes (an initialised model, `init_gpt`, 200
# seeds):

# %%
def copying_score(M):
    """Elhage et al.'s eigenvalue copying score of a (V, V) circuit: sum of eigenvalues over sum of magnitudes."""
    eigenvalues = np.linalg.eigvals(M)  # (V,), complex
    return float(eigenvalues.sum().real / np.abs(eigenvalues).sum())


print("head            copying score")
copying = {}
for layer in range(LAYERS):
    for head in range(H):
        copying[layer, head] = copying_score(ov_circuit(params_trained, layer, head, H))
        print(f"layer {layer} head {head}    {copying[layer, head]:+.3f}")
random_copying = np.array([copying_score(ov_circuit(init_gpt(np.random.default_rng(1000 + s)), layer, head, H))
                           for s in range(200) for layer in range(LAYERS) for head in range(H)])
print(f"initialised models (200 seeds, every head): mean {random_copying.mean():+.3f}, "
      f"std {random_copying.std():.3f}, largest {random_copying.max():+.3f}")

# %% [markdown]
# Both layer-1 heads score close to +1 (+0.967 and +0.999), against a mean of -0.001 (std 0.130,
# at most +0.413 in 800 heads) at initialisation: their OV circuits copy, as the diagonals above
# showed. The layer-0 heads score high too (+0.891 and +0.819), though the previous-token head's
# diagonal was weaker: the score weighs the signs of the eigenvalues by their magnitudes, so it says
# whether the circuit's action is mostly positive, not how far its diagonal stands above the rest
# of each row, which the counts above measure.
#
# **K-composition.** A layer-1 head composes with a layer-0 head through its keys when its QK
# circuit reads what the layer-0 head wrote. With row vectors, as in this course, layer-1 head $i$
# scores query $x_q$ against key $x_k$ by $x_q\, W_{QK}\, x_k^\top$ with $W_{QK} = W_q^{(i)} W_k^{(i)\top}$
# `(C, hs) @ (hs, C) -> (C, C)`, and layer-0 head $j$ writes $x\, W_{OV}$ with
# $W_{OV} = W_v^{(j)} W_o^{(j)}$ `(C, hs) @ (hs, C) -> (C, C)`. A key that holds that write scores
# $x_q\, W_{QK} W_{OV}^\top x^\top$. The paper's K-composition score (their $\|W_{QK}^{\top} W_{OV}\|_F$ in
# column-vector notation) is the size of that product relative to the sizes of its factors:
#
# $$\text{K-comp}(j \to i) = \frac{\|W_{QK}\, W_{OV}^\top\|_F}{\|W_{QK}\|_F\, \|W_{OV}\|_F} ,$$
#
# with Frobenius norms; it ignores the LayerNorm between the layers, as the paper ignores its own.
# For the Q-composition, the layer-1 queries read the write instead: $W_{OV} W_{QK}$. The baseline is
# the same score for matrices of the same shapes drawn at random (Gaussian, 500 draws), whose
# product is small only by chance:

# %%
def composition(W_QK, W_OV, side="K"):
    """The paper's composition score: Frobenius norm of the product over the product of the norms."""
    product = W_QK @ W_OV.T if side == "K" else W_OV @ W_QK  # (C, C) @ (C, C) -> (C, C)
    return float(np.linalg.norm(product) / (np.linalg.norm(W_QK) * np.linalg.norm(W_OV)))


def head_slice(head, head_size=C // H):
    return slice(head * head_size, (head + 1) * head_size)  # the head's columns of W_q, W_k, W_v, rows of W_o


def qk_ov(params, head):
    """(W_QK of layer 1's head, W_OV of layer 0's head), each (C, C)."""
    cols = head_slice(head)
    W_QK = params["b1.Wq"][:, cols] @ params["b1.Wk"][:, cols].T  # (C, hs) @ (hs, C) -> (C, C)
    W_OV = params["b0.Wv"][:, cols] @ params["b0.Wo"][cols]  # (C, hs) @ (hs, C) -> (C, C)
    return W_QK, W_OV


print("layer-0 head -> layer-1 head   K-composition   Q-composition")
k_comp = np.zeros((H, H))
for j in range(H):
    for i in range(H):
        W_QK, W_OV = qk_ov(params_trained, i)[0], qk_ov(params_trained, j)[1]
        k_comp[j, i] = composition(W_QK, W_OV, "K")
        print(f"L0H{j} -> L1H{i}                 {k_comp[j, i]:.3f}           {composition(W_QK, W_OV, 'Q'):.3f}")
rng_comp = np.random.default_rng(7)
baseline = np.array([composition(*(rng_comp.standard_normal((C, C // H)) @ rng_comp.standard_normal((C // H, C))
                                   for _ in range(2))) for _ in range(500)])
print(f"random matrices of the same shapes (500 draws): mean {baseline.mean():.3f}, std {baseline.std():.3f}, "
      f"largest {baseline.max():.3f}")
print(f"previous-token head L0H{previous_head} -> induction head L1H{induction_head}: "
      f"{k_comp[previous_head, induction_head]:.3f} = "
      f"{(k_comp[previous_head, induction_head] - baseline.mean()) / baseline.std():.1f} baseline stds above its mean")

# %% [markdown]
# The previous-token head (layer 0 head 0) K-composes with both layer-1 heads (0.269 with the
# induction head, 7.7 baseline standard deviations above the random mean of 0.175, and 0.256 with
# the other), above the largest of 500 random draws (0.219). Layer 0 head 1 gives 0.158 and 0.192,
# within about 1.4 standard deviations of the random mean, and every Q-composition is at or below
# it (0.086 to 0.161): the layer-1 heads read the previous-token head through their keys, not their
# queries, which is what the key-only path ablation of Exercise 2 showed by intervention.
#
# ## 10. Generation with a KV cache
#
# The trained model can continue a sequence: feed it the first half and the first token of the
# second half, take the most likely next token (**greedy** decoding), append it, and repeat.
#
# Recomputing the whole forward pass for every new token repeats work: with the causal mask, the
# keys and values of earlier positions never change (Lesson 6). A **KV cache** keeps, for every
# layer, the keys and values `(h, t, hs)` of the positions seen so far. Feeding one new token at
# position $t$ then needs only its own row:
#
# $$x = E[\text{token}] + P_t, \qquad \text{for each layer: } a = \text{LN}(x),\ \ q, k, v = a W_q, a W_k, a W_v
# \ (h, 1, hs), \ \ K \leftarrow [K; k],\ V \leftarrow [V; v],$$
#
# $$x \leftarrow x + \text{Concat}\Big(\text{softmax}\big(q K^\top / \sqrt{hs}\big) V\Big) W_o, \qquad
# \text{logits} = \text{LN}_f(x)\, U .$$
#
# No mask is needed: the cache holds only positions up to $t$.
#
# ### Exercise 4: `generate` (5 points)
#
# Write `generate(params, prompt, n_new, cache)`. The cache is the model's memory of the positions
# already fed: a list with one pair `(K, V)` per layer, each `(h, t_0, hs)`. It also says how many
# heads the model has. A model that has seen nothing starts from `empty_cache(params, h)`, given
# below, with $t_0 = 0$. The prompt is a 1-D int array of length $T_0 \ge 1$ that continues from the
# cache: its first token sits at position $t_0$. Take `n_new` $\ge 1$, with
# $t_0 + T_0 + n_{\text{new}} - 1 \le T_{\max}$ (the rows of $P$). Feed the prompt's tokens one at a
# time through the cache, then each new token, and return the pair `(new_tokens, cache)`:
#
# - `new_tokens`, an int array `(n_new,)`: each the `argmax` of the logits at the last fed position;
# - `cache`, a new list with one pair `(K, V)` per layer, each of shape
#   $(h,\ t_0 + T_0 + n_{\text{new}} - 1,\ hs)$: the given keys and values followed by those of
#   every position fed (the last new token is returned, not fed). The given cache is left unchanged.
#
# **Through the cache** means: each position's keys and values are computed once, when its token is
# fed, and appended to the cache; each fed token's queries attend to the keys and values in the
# cache. Running the forward pass again over the whole sequence for each new token is not allowed,
# and it cannot work here anyway: `generate` never sees the tokens behind a non-empty cache, so it
# cannot recompute their keys and values. The hidden tests continue from such caches. From an empty cache, the result must equal decoding by
# recomputing the full forward pass (given below as `generate_by_recomputing`) for every model.

# %%
def empty_cache(params, h):
    """The KV cache of a model with h heads per layer that has seen no token: [(K, V) per layer, each (h, 0, hs)]."""
    layers = sum(1 for name in params if name.endswith(".Wq"))
    hs = params["U"].shape[0] // h
    return [(np.zeros((h, 0, hs)), np.zeros((h, 0, hs))) for _ in range(layers)]


def generate_by_recomputing(params, prompt, n_new, h):
    """Greedy decoding that runs the full forward pass for every new token: returns (n_new,) ints."""
    sequence = list(prompt)
    for _ in range(n_new):
        logits, _ = gpt_forward(params, np.array(sequence)[None, :], h)  # (1, t, V)
        sequence.append(int(logits[0, -1].argmax()))
    return np.array(sequence[len(prompt):])


# %% nbgrader={"grade": false, "grade_id": "generate", "locked": false, "schema_version": 3, "solution": true, "task": false}
def generate(params, prompt, n_new, cache):
    """Greedy decoding with a KV cache: returns (new tokens (n_new,), [(K, V) per layer, each (h, t, hs)])."""
    ### BEGIN SOLUTION
    layers, width = len(cache), params["U"].shape[0]
    h, start, hs = np.shape(cache[0][0])  # the cache holds the head count and the positions fed so far
    cache = [(np.asarray(K), np.asarray(V_)) for K, V_ in cache]  # a new list: the given one stays as it was

    def feed(token, position):
        x = params["E"][token] + params["P"][position]  # (C,)
        for layer in range(layers):
            a = layer_norm(x, params[f"b{layer}.ln1_gamma"], params[f"b{layer}.ln1_beta"])  # (C,)
            q, k, v = (a @ params[f"b{layer}.{n}"] for n in ("Wq", "Wk", "Wv"))  # (C,) each
            q, k, v = (u.reshape(h, 1, hs) for u in (q, k, v))  # (C,) -> (h, 1, hs)
            K, V_ = np.concatenate([cache[layer][0], k], axis=1), np.concatenate([cache[layer][1], v], axis=1)
            cache[layer] = (K, V_)  # (h, t + 1, hs) each
            weights = softmax(q @ K.transpose(0, 2, 1) / np.sqrt(hs))  # (h, 1, hs) @ (h, hs, t+1) -> (h, 1, t+1)
            per_head = weights @ V_  # (h, 1, t+1) @ (h, t+1, hs) -> (h, 1, hs)
            x = x + per_head.reshape(width) @ params[f"b{layer}.Wo"]  # (h, 1, hs) -> (C,); (C,) @ (C, C)
        return layer_norm(x, params["lnf_gamma"], params["lnf_beta"]) @ params["U"]  # (V,)

    for position, token in enumerate(prompt, start=start):
        logits = feed(token, position)
    new_tokens = []
    for step in range(n_new):
        new_tokens.append(int(logits.argmax()))
        if step < n_new - 1:
            logits = feed(new_tokens[-1], start + len(prompt) + step)
    return np.array(new_tokens), cache
    ### END SOLUTION


# %% [markdown]
# The trained model continues a held-out sequence from its first half and one token of the second
# half. The cell compares the continuation with the true second half and with recomputation:

# %%
held_sequence = held_out[0]  # (24,)
prompt = held_sequence[:PERIOD + 1]  # (13,): the first half and the first token of the second
n_new = 2 * PERIOD - len(prompt)  # 11: the rest of the second half
new_tokens, kv = generate(params_trained, prompt, n_new, empty_cache(params_trained, H))
print("prompt:        ", " ".join(f"{t:2d}" for t in prompt))
print("generated:     ", " ".join(f"{t:2d}" for t in new_tokens))
print("true 2nd half: ", " ".join(f"{t:2d}" for t in held_sequence[len(prompt):]))
print(f"tokens copied right: {int((new_tokens == held_sequence[len(prompt):]).sum())} of {n_new}")
print("same as recomputing the full forward pass:",
      np.array_equal(new_tokens, generate_by_recomputing(params_trained, prompt, n_new, H)))
print("cache:", [tuple(K.shape) for K, _ in kv], "(h, T0 + n_new - 1, hs) keys per layer")
repeated = {int(t): int(n) for t, n in zip(*np.unique(prompt[:PERIOD], return_counts=True), strict=True) if n > 1}
print("tokens that occur more than once in the first half, with their counts:", repeated)
copied = [np.array_equal(generate(params_trained, s[:PERIOD + 1], n_new, empty_cache(params_trained, H))[0],
                         s[PERIOD + 1:]) for s in held_out[:32]]
print(f"held-out sequences 0 to 31 whose whole second half is copied right: {sum(copied)} of 32")

# %% [markdown]
# Where a token occurs more than once in the first half, "the token after its previous occurrence"
# has more than one answer, and an induction head that matches on the current token alone cannot
# tell which: such tokens are where the copy can go wrong.

# %% nbgrader={"grade": true, "grade_id": "test_generate", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
def check_generate(params, prompt, n_new, h):
    """Visible check: from an empty cache, tokens and cache against recomputation, with a hint for the usual mistakes."""
    start = empty_cache(params, h)
    before = {k: v.copy() for k, v in params.items()}, np.array(prompt).copy()
    result = generate(params, prompt, n_new, start)
    assert all(np.array_equal(params[k], before[0][k]) for k in params) and np.array_equal(prompt, before[1]), (
        "generate modified its inputs")
    assert all(K.shape[1] == 0 and V_.shape[1] == 0 for K, V_ in start), "generate modified the cache it was given"
    assert isinstance(result, tuple) and len(result) == 2, "return the pair (new_tokens, cache)"
    tokens, cache = result
    tokens = np.asarray(tokens)
    assert tokens.shape == (n_new,), f"new_tokens should have shape ({n_new},), got {tokens.shape}"
    expected = generate_by_recomputing(params, prompt, n_new, h)
    if n_new > 1 and np.array_equal(tokens[0], expected[0]) and not np.array_equal(tokens, expected):
        raise AssertionError(f"the first token is right, later ones are not ({tokens} vs {expected}): feed each new "
                             "token at its own position, t0 + len(prompt) + step, and append its k and v to the cache")
    assert np.array_equal(tokens, expected), (
        f"new tokens {tokens}, recomputation gives {expected}: each is the argmax of the logits at the last fed "
        "position; every layer's query must see all cached keys, its own included")
    fed = np.concatenate([prompt, expected[:-1]])[None, :]  # (1, T0 + n_new - 1): every token fed
    full = gpt_forward(params, fed, h)[1]["blocks"]
    assert isinstance(cache, (list, tuple)) and len(cache) == len(full), f"cache: one (K, V) pair per layer, {len(full)}"
    for layer, pair in enumerate(cache):
        K, V_ = (np.asarray(u) for u in pair)
        assert K.shape == V_.shape == full[layer]["K"][0].shape, (
            f"layer {layer}: K and V should have shape {full[layer]['K'][0].shape} (h, T0 + n_new - 1, hs), "
            f"got {K.shape} and {V_.shape}: the last new token is returned, not fed")
        assert np.allclose(K, full[layer]["K"][0], atol=1e-10) and np.allclose(V_, full[layer]["V"][0], atol=1e-10), (
            f"layer {layer}: the cached keys or values differ from the full forward pass's")


def check_continuation(params, prompt, split, n_new, h):
    """Feeding prompt[:split] first, then the rest from the cache it left, must decode as the whole prompt does."""
    whole_tokens, whole_cache = generate(params, prompt, n_new, empty_cache(params, h))
    _, first_cache = generate(params, prompt[:split], 1, empty_cache(params, h))  # feeds prompt[:split] only
    kept = [(np.array(K, copy=True), np.array(V_, copy=True)) for K, V_ in first_cache]
    tokens, cache = generate(params, prompt[split:], n_new, first_cache)
    assert all(np.array_equal(K, K0) and np.array_equal(V_, V0) for (K, V_), (K0, V0) in zip(first_cache, kept, strict=True)), (
        "generate modified the cache it was given: return a new list with new arrays")
    assert np.array_equal(np.asarray(tokens), np.asarray(whole_tokens)), (
        f"continued from the cache of prompt[:{split}], generate gave {np.asarray(tokens)}, but the whole prompt gives "
        f"{np.asarray(whole_tokens)}: the rest of the prompt starts at position t0 = K.shape[1] of the cache, and "
        "its queries must attend to the cached keys and values")
    for layer, ((K, V_), (K1, V1)) in enumerate(zip(cache, whole_cache, strict=True)):
        assert np.shape(K) == np.shape(K1) and np.allclose(K, K1, atol=1e-10) and np.allclose(V_, V1, atol=1e-10), (
            f"layer {layer}: continued from a cache, the returned cache should hold the given keys and values "
            "followed by those of every position fed")


check_generate(small_model(21), np.array([3, 1, 4]), 3, 2)
check_generate(small_model(22, layers=1), np.array([6]), 1, 1)
check_generate(small_model(23, layers=3, t_max=6), np.array([0, 2]), 5, 4)
check_continuation(small_model(24), np.array([5, 0, 5, 2]), 3, 2, 2)
check_continuation(small_model(25, layers=1, t_max=6), np.array([1, 6, 2]), 1, 4, 1)
print("Exercise 4 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## Time
#
# The CPU time of the main training run and its wall time (both vary with the machine and its
# load, so they are measured here rather than quoted):

# %%
# NBVAL_IGNORE_OUTPUT
print(f"main run: {STEPS} steps, CPU {main_cpu:.1f} s, wall {main_wall:.1f} s, "
      f"{1e3 * main_cpu / max(STEPS, 1):.1f} ms of CPU per step (evaluations included)")

# %% [markdown]
# ## Summary
#
# **Data.** Random tokens, repeated. The second half of a held-out sequence can be predicted only by
# looking back: a bigram model cannot beat $\log V$, a bag-of-tokens model cannot beat the floor
# computed in section 1.
#
# **Model.** Token and learned position embeddings, two attention-only pre-norm blocks with the
# causal mask, a final LayerNorm and the unembedding; the loss is the mean cross-entropy over every
# position.
#
# **Backward.** The gradient of the residual stream collects, below every block, the residual path
# plus the path through the attention and its LayerNorm; repeated tokens add up in $\partial L /
# \partial E$ (Exercise 1). Every parameter tensor's gradient matched finite differences at float64.
#
# **Training.** Adam on fresh batches; the run's second-half loss, its crossing of the bag floor and
# how often that happens over several seeds are printed in section 6. A fixed period let the model
# copy from a fixed offset instead, and failed on another period.
#
# **Heads.** The previous-token and induction scores and the ablations of sections 7
# and 8 name the heads that copy: a previous-token head in layer 0 and an induction head in layer 1.
#
# **Circuit.** Removed from the keys of layer 1 alone, the previous-token head breaks the copy;
# removed from the queries or the values alone it barely matters (Exercise 2): K-composition.
# Mean-ablation costs less than zero-ablation but still breaks it; one block alone stays above the
# bag floor; the layer-1 heads' OV circuits map each token to itself.
#
# **Generation.** Greedy decoding with a KV cache continues the copy and equals recomputation
# (Exercise 4).
#
# ## Next
#
# Lesson 13 adds the other half of the original Transformer: cross-attention, whose queries come
# from the output being written and whose keys and values come from an input that an encoder has
# read. A one-block encoder and a one-block decoder learn to reverse sequences, and you watch their
# cross-attention find the alignment. To read further on what this lesson found:
#
# - Olsson et al., *In-context Learning and Induction Heads* (2022), finds the same phase change
#   in language models of every size, and argues that induction heads are behind most in-context
#   learning.
# - Elhage et al., *A Mathematical Framework for Transformer Circuits* (2021), reads attention-only
#   models through their QK and OV circuits, and names Q-, K- and V-composition.
# - ARENA's chapter 1.2, *Intro to Mechanistic Interpretability*, does this lesson's analysis on a
#   trained two-layer model with TransformerLens, and goes on to find circuits in GPT-2.
# - Karpathy's nanoGPT trains a full GPT-2 (with MLPs, in PyTorch) in a few hundred lines: the
#   model of Lessons 11 and 12 at scale.
