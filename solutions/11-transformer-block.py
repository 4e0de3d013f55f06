# ---
# jupyter:
#   jupytext:
#     formats: 11-transformer-block//ipynb,py:percent
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
# # Lesson 11: The transformer block: the residual stream, LayerNorm and the MLP
#
# Lessons 1 to 10 built attention and nothing around it. In a GPT, attention is one half of a
# **block**; the other half is a small two-layer network, the MLP, and both halves read from and
# add to one running vector per position, the **residual stream**. Before each half reads the
# stream, a **LayerNorm** rescales it. This lesson builds the block in the pre-norm form GPT-2
# uses,
#
# $$x_1 = x + \text{attn}\big(\text{LN}_1(x)\big), \qquad x_2 = x_1 + \text{mlp}\big(\text{LN}_2(x_1)\big),$$
#
# and measures what each part does. It also finishes the story of $W_o$ that Lesson 4 started:
# what the output projection means once its output is *added* to a stream.
#
# **What you'll do**
# - fold one attention layer's dense $W_o$ into the next layer's projections when nothing sits
#   between them, and see the residual addition and the LayerNorm stop the fold;
# - write `layer_norm` and its backward pass `layer_norm_backward`, check the gradient with finite
#   differences, and draw the LayerNorm Jacobian; compare RMSNorm;
# - write `gelu` in its tanh form and measure its largest difference from the exact erf form;
# - write `transformer_block`, the pre-norm block with a causal mask;
# - write `mlp_head_interaction` and measure where two heads first combine non-linearly;
# - write the MLP's backward pass, `mlp_backward`, GELU's derivative included;
# - stack 1 to 32 blocks, pre-norm and post-norm, and measure the size of the stream and of the
#   gradient reaching the first block;
# - count the block's parameters, $12C^2 + 13C$, and rebuild GPT-2 small's total from it.
#
# **What you'll learn**
# - why each head writes a rank-$hs$ map into the stream, and why $W_o$ is not "folded away" there;
# - what LayerNorm removes (the mean and the scale of each position) and what RMSNorm keeps;
# - that heads add in the stream and first interact in the MLP;
# - what pre-norm and post-norm do to the stream and the gradient at initialisation, as measured here.
#
# **What you'll need**
# - the multi-head layer of Lessons 3 and 4, the causal mask of Lesson 6, and the backward pass
#   and finite-difference check of Lesson 7. The exercises use NumPy alone (no torch, no scipy).
#
# Six graded exercises sit in the lesson, each where its idea is taught. Their visible checks run
# as you work; hidden tests with fresh inputs run when your notebook is graded.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np

# %% [markdown]
# ## 0. The attention layer, with biases and a mask
#
# The layer is the multi-head layer of Lessons 3 and 6, with one addition that GPT-2 has: a bias
# vector after each of the four projections. With $hs = C/h$, head $i$ of a sequence $X$ of shape
# `(T, C)` computes
#
# $$\text{head}_i = \text{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{hs}} + M\right) V_i, \qquad
# Q = X W_q + b_q,\; K = X W_k + b_k,\; V = X W_v + b_v,$$
#
# where $M$ is $0$ where the boolean `mask` is `True` and $-\infty$ where it is `False`, and the
# layer's output is $\text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})\, W_o + b_o$. The causal
# mask of Lesson 6 lets position $t$ see positions $s \le t$.

# %%
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))  # the row max subtracted: every exponent <= 0
    return e / e.sum(axis=axis, keepdims=True)


def causal_mask(T):
    """(T, T) boolean array, True where key position s <= query position t (Lesson 6)."""
    positions = np.arange(T)
    return positions[None, :] <= positions[:, None]  # (1, T) vs (T, 1) -> (T, T)


def multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h, mask=None, bq=0.0, bk=0.0, bv=0.0, bo=0.0):
    """Multi-head self-attention with biases: X (B, T, C) -> (out (B, T, C), cache of intermediates).

    mask: boolean, broadcastable to (B, h, T, T), True where query t may attend to key s; None: no mask.
    """
    B, T, C = X.shape
    hs = C // h

    def heads(W, b):  # project, then split: (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)
        return (X @ W + b).reshape(B, T, h, hs).transpose(0, 2, 1, 3)

    Q, K, V = heads(Wq, bq), heads(Wk, bk), heads(Wv, bv)
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(hs)  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # blocked scores -> -inf -> weight exactly 0
    weights = softmax(scores)  # (B, h, T, T)
    per_head = weights @ V  # (B, h, T, T) @ (B, h, T, hs) -> (B, h, T, hs)
    concat = per_head.transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
    return concat @ Wo + bo, {"weights": weights, "concat": concat}  # (B, T, C) @ (C, C) -> (B, T, C)


# %% [markdown]
# A block has sixteen parameter arrays, kept in one dictionary. For width $C$:
#
# | key | shape | what it is |
# |---|---|---|
# | `ln1_gamma`, `ln1_beta` | `(C,)` | gain and bias of the LayerNorm before attention |
# | `Wq`, `Wk`, `Wv`, `Wo` | `(C, C)` | the four projections of the attention layer |
# | `bq`, `bk`, `bv`, `bo` | `(C,)` | their biases |
# | `ln2_gamma`, `ln2_beta` | `(C,)` | gain and bias of the LayerNorm before the MLP |
# | `W1`, `b1` | `(C, 4C)`, `(4C,)` | the MLP's first layer, 4 times wider than the stream |
# | `W2`, `b2` | `(4C, C)`, `(C,)` | the MLP's second layer, back to width $C$ |
#
# `init_block_params` draws every weight matrix from $\mathcal{N}(0, 1/\text{fan-in})$, so that
# a unit-size input gives unit-size outputs, with biases $0$, gains $1$ and LayerNorm biases $0$,
# as at the start of training. With `random_affine=True` it also draws the biases and gains at
# random, so that a mistake in how they are used shows up in the numbers.

# %%
def init_block_params(C, rng, random_affine=False):
    """One block's parameters for width C (the keys of the table above), drawn from rng."""
    def weight(fan_in, fan_out):
        return rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)  # N(0, 1/fan_in)

    def vector(n, centre):
        return centre + (0.2 * rng.standard_normal(n) if random_affine else np.zeros(n))

    return {"ln1_gamma": vector(C, 1.0), "ln1_beta": vector(C, 0.0),
            "Wq": weight(C, C), "bq": vector(C, 0.0), "Wk": weight(C, C), "bk": vector(C, 0.0),
            "Wv": weight(C, C), "bv": vector(C, 0.0), "Wo": weight(C, C), "bo": vector(C, 0.0),
            "ln2_gamma": vector(C, 1.0), "ln2_beta": vector(C, 0.0),
            "W1": weight(C, 4 * C), "b1": vector(4 * C, 0.0), "W2": weight(4 * C, C), "b2": vector(C, 0.0)}


# %% [markdown]
# The lesson's data: $B = 2$ sequences of $T = 8$ positions, width $C = 32$, $h = 4$ heads of size
# $hs = 8$, drawn from `np.random.default_rng(11)`.

# %%
rng = np.random.default_rng(11)
B, T, C, h = 2, 8, 32, 4
hs = C // h
x = rng.standard_normal((B, T, C))  # the stream entering the block, (B, T, C)
params = init_block_params(C, rng, random_affine=True)
mask = causal_mask(T)  # (T, T), broadcasts against (B, h, T, T)
print("x:", x.shape, "| mask:", mask.shape, "|", len(params), "parameter arrays")

# %% [markdown]
# ## 1. The residual stream
#
# In Lessons 3 and 4 the layer's output was the end of the story. In a block it is added to its
# input: position $t$ carries a vector $x_t \in \mathbb{R}^C$, the attention half reads a
# normalised copy of it, and writes its output back by **addition**. The MLP half then reads the
# updated vector and adds its own output. Nothing is ever overwritten; every layer reads the sum of
# everything written before it. That running sum is the **residual stream**, a shared bus that
# every later layer reads and writes.
#
# Lesson 4 wrote the attention output as a sum over heads. With $a = \text{LN}_1(x)$ and
# $A_i$ head $i$'s `(T, T)` attention weights, head $i$ writes
#
# $$A_i\, (a W_v^{(i)} + b_v^{(i)})\, W_o^{(i)}, \qquad W_v^{(i)} W_o^{(i)} \in \mathbb{R}^{C \times C},\ \text{rank} \le hs,$$
#
# into the stream: $W_v^{(i)}$ is head $i$'s `(C, hs)` columns of $W_v$, $W_o^{(i)}$ its `(hs, C)`
# rows of $W_o$. Each head reads the whole stream and writes a rank-$hs$ update to all of it.

# %%
Wv_heads = params["Wv"].reshape(C, h, hs).transpose(1, 0, 2)  # (C, C) -> (C, h, hs) -> (h, C, hs): W_v^(i)
Wo_rows = params["Wo"].reshape(h, hs, C)  # (C, C) -> (h, hs, C): W_o^(i)
value_maps = Wv_heads @ Wo_rows  # (h, C, hs) @ (h, hs, C) -> (h, C, C)
print("value maps W_v^(i) W_o^(i):", value_maps.shape, "(h, C, C); ranks:",
      [int(np.linalg.matrix_rank(m)) for m in value_maps], "= hs =", hs)

# %% [markdown]
# ### Without the stream, a dense $W_o$ folds away
#
# Lesson 4 showed that a block-diagonal $W_o$ folds into $W_v$. Without a stream, a dense one folds
# too. Put two attention layers back to back, nothing between them. The second reads
# $\text{concat}\, W_o$ through its projections $W_q', W_k', W_v'$, and a matrix product is
# associative:
#
# $$(\text{concat}\, W_o)\, W' = \text{concat}\, (W_o W'), \qquad W' \in \{W_q', W_k', W_v'\}.$$
#
# So the first layer with $W_o = I$, followed by a second layer with projections $W_o W_q'$,
# $W_o W_k'$, $W_o W_v'$, gives the same two-layer output. (Biases are left out here; they fold
# the same way.)

# %%
second = init_block_params(C, np.random.default_rng(12))  # a second layer's projections
identity = np.eye(C)


def two_layers(X, Wo_first, Wq2, Wk2, Wv2):
    """attn2(attn1(X)) with nothing in between; the first layer's output projection is Wo_first."""
    first_out, _ = multi_head_attention_forward(X, params["Wq"], params["Wk"], params["Wv"], Wo_first, h, mask)
    return multi_head_attention_forward(first_out, Wq2, Wk2, Wv2, second["Wo"], h, mask)[0]


Wo = params["Wo"]
plain = two_layers(x, Wo, second["Wq"], second["Wk"], second["Wv"])
folded = two_layers(x, identity, Wo @ second["Wq"], Wo @ second["Wk"], Wo @ second["Wv"])  # (C, C) @ (C, C)
print("no stream: W_o = I with W_o folded into the next layer, same output to 1e-10:",
      np.allclose(plain, folded, rtol=0, atol=1e-10))

# %% [markdown]
# ### The stream stops the fold
#
# Now add each layer's output to the stream. The second layer reads $x + \text{concat}\, W_o$, and
# the fold would need
#
# $$(x + \text{concat}\, W_o)\, W' = (x + \text{concat})\, (W_o W'),$$
#
# which is false: $x$ never passed through $W_o$, so $x W' \ne x W_o W'$. The cell measures how far
# apart the two networks are. (A LayerNorm between the two layers is a second, separate obstacle;
# section 2 measures it on its own, once you have written LayerNorm.)

# %%
def two_layers_in_stream(X, Wo_first, Wq2, Wk2, Wv2):
    """The first layer's output added to the stream; the second layer reads the stream."""
    first_out, _ = multi_head_attention_forward(X, params["Wq"], params["Wk"], params["Wv"], Wo_first, h, mask)
    stream = X + first_out  # (B, T, C)
    return multi_head_attention_forward(stream, Wq2, Wk2, Wv2, second["Wo"], h, mask)[0]


plain = two_layers_in_stream(x, Wo, second["Wq"], second["Wk"], second["Wv"])
folded = two_layers_in_stream(x, identity, Wo @ second["Wq"], Wo @ second["Wk"], Wo @ second["Wv"])
print(f"residual stream: largest |plain - folded| = {np.abs(plain - folded).max():.2f}, "
      f"largest |plain| = {np.abs(plain).max():.2f}")

# %% [markdown]
# With the stream, the "folded" network computes something else: the differences are as large as
# the outputs themselves. So $W_o$ has a job in a block that it does not have between two bare
# attention layers: it decides **where in the shared stream** each head's result is written,
# alongside the input and everything earlier layers wrote. The next sections build the two parts
# that read the stream: the LayerNorm and the MLP.
#
# ## 2. LayerNorm
#
# LayerNorm normalises each position's vector on its own, over its $C$ features: it subtracts the
# mean, divides by the standard deviation, then applies a learned per-feature gain $\gamma$ and
# bias $\beta$, both of shape `(C,)`. For one position $x \in \mathbb{R}^C$:
#
# $$\mu = \frac{1}{C}\sum_{j=1}^{C} x_j, \qquad \sigma^2 = \frac{1}{C}\sum_{j=1}^{C} (x_j - \mu)^2, \qquad
# \hat{x} = \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}}, \qquad y = \gamma \odot \hat{x} + \beta .$$
#
# The variance divides by $C$, not $C - 1$ (`np.var`'s default), and the small $\varepsilon$ sits
# inside the square root, so a constant vector gives $\hat{x} = 0$ instead of a division by zero.
#
# ### Exercise 1: LayerNorm (2 points)
#
# Write `layer_norm(x, gamma, beta, eps=1e-5)`. `x` has any number of leading axes and $C$
# features on its last axis, `(..., C)`; `gamma` and `beta` have shape `(C,)`. Return $y$, of the
# shape of `x`, normalising each position over its last axis only. Do not modify the inputs.

# %% nbgrader={"grade": false, "grade_id": "layer_norm", "locked": false, "schema_version": 3, "solution": true, "task": false}
def layer_norm(x, gamma, beta, eps=1e-5):
    """LayerNorm over the last axis: x (..., C), gamma (C,), beta (C,) -> (..., C)."""
    ### BEGIN SOLUTION
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = x.var(axis=-1, keepdims=True)  # (..., 1), divided by C
    return gamma * (x - mean) / np.sqrt(var + eps) + beta  # (C,) * (..., C) + (C,)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_layer_norm", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def check_layer_norm():
    """Visible checks: properties and small cases computed by hand."""
    # Hand case: [0, 2] has mean 1 and variance 1, so x_hat = [-1, 1]; with eps = 0, gamma [2, 3], beta [1, -1]:
    got = layer_norm(np.array([[0.0, 2.0]]), np.array([2.0, 3.0]), np.array([1.0, -1.0]), eps=0.0)
    assert isinstance(got, np.ndarray), f"layer_norm should return a NumPy array, got {type(got).__name__}"
    assert got.shape == (1, 2), f"the output has the shape of x, (1, 2); got {got.shape}"
    if np.allclose(got, [[2 * -1 / np.sqrt(2) + 1, 3 / np.sqrt(2) - 1]]):
        raise AssertionError("you divided the variance by C - 1: LayerNorm's variance divides by C (np.var's default)")
    assert np.allclose(got, [[-1.0, 2.0]]), f"[0, 2] with gamma [2, 3], beta [1, -1], eps=0 should give [-1, 2], got {got}"
    # eps inside the square root: [0, 0.001] has variance 2.5e-7, so x_hat = -+0.0005 / sqrt(2.5e-7 + 1e-5) = -+0.156.
    got = layer_norm(np.array([0.0, 0.001]), np.ones(2), np.zeros(2), eps=1e-5)
    if np.allclose(np.abs(got), 0.0005 / (0.0005 + 1e-5), atol=1e-3):
        raise AssertionError("eps was added to the standard deviation: it goes inside the square root, "
                             "sqrt(var + eps)")
    assert np.allclose(got, [-0.15617, 0.15617], atol=1e-4), f"[0, 0.001] with eps=1e-5 should give about [-0.156, 0.156], got {got}"
    # A constant position: x_hat = 0, so y = beta.
    beta = np.array([0.5, -1.0, 2.0])
    assert np.allclose(layer_norm(np.full((2, 3), 4.0), np.array([3.0, 3.0, 3.0]), beta), beta), (
        "a constant vector has x_hat = 0, so its output is beta")
    # Per position: mean 0 and variance 1 (gamma 1, beta 0); each position normalised on its own.
    rng_ = np.random.default_rng(0)
    x_ = rng_.standard_normal((2, 3, 5)) * np.array([[[1.0]], [[10.0]]]) + 3.0  # sequences of different scales
    x_copy = x_.copy()
    y = layer_norm(x_, np.ones(5), np.zeros(5))
    assert np.array_equal(x_, x_copy), "layer_norm modified x"
    assert y.shape == x_.shape, f"the output has the shape of x, {x_.shape}; got {y.shape}"
    assert np.allclose(y.mean(axis=-1), 0.0), (
        "some position's output does not have mean 0: normalise over the LAST axis (the C features) of each position, "
        "not over the batch or the positions")
    assert np.allclose(y.var(axis=-1), 1.0, atol=1e-4), "each position's output should have variance 1 (gamma 1, beta 0)"
    # gamma scales feature j, beta shifts it.
    gamma, beta = rng_.standard_normal(5), rng_.standard_normal(5)
    assert np.allclose(layer_norm(x_, gamma, beta), gamma * y + beta), "y = gamma * x_hat + beta, feature by feature"


check_layer_norm()
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# On the lesson's stream, every position of the output has mean 0 and variance 1 before $\gamma$
# and $\beta$. Adding a constant to a position, or multiplying it by a positive number, changes
# nothing but the tiny effect of $\varepsilon$:

# %%
ones, zeros = np.ones(C), np.zeros(C)
y = layer_norm(x, ones, zeros)  # (B, T, C)
print("per-position mean within 1e-12 of 0:", np.allclose(y.mean(axis=-1), 0, atol=1e-12),
      "| per-position variance within 1e-4 of 1:", np.allclose(y.var(axis=-1), 1, atol=1e-4))
print("LN(5 x + 3) equals LN(x) to 1e-4 (eps makes them differ slightly):",
      np.allclose(layer_norm(5 * x + 3, ones, zeros), y, rtol=0, atol=1e-4))

# %% [markdown]
# ### A LayerNorm alone also stops the fold
#
# Back to two attention layers without a stream, but now the second reads a LayerNorm (gain 1,
# bias 0) of the first one's output. The fold needs $\text{LN}(\text{concat}\, W_o)\, W' =
# \text{LN}(\text{concat})\, W_o W'$, that is, $\text{LN}(y W_o) = \text{LN}(y)\, W_o$ for every
# row $y$. For a general $W_o$ that is false: $W_o$ changes each row's mean and spread, which the
# LayerNorm then removes. It is true for some matrices, though: a permutation of the features, or
# any orthogonal $R$ that maps the all-ones vector to itself, keeps every row's mean and its
# spread, so $\text{LN}(y R) = \text{LN}(y) R$. The cell measures the fold through the LayerNorm
# with the lesson's $W_o$, and checks the commuting case with a reflection $R = I - 2 v v^\top$,
# $v \perp \mathbf{1}$, $\lVert v \rVert = 1$.

# %%
def two_layers_through_norm(X, Wo_first, Wq2, Wk2, Wv2):
    """attn2(LN(attn1(X))): no stream, a LayerNorm (gain 1, bias 0) between the two layers."""
    first_out, _ = multi_head_attention_forward(X, params["Wq"], params["Wk"], params["Wv"], Wo_first, h, mask)
    normed = layer_norm(first_out, np.ones(C), np.zeros(C))  # (B, T, C)
    return multi_head_attention_forward(normed, Wq2, Wk2, Wv2, second["Wo"], h, mask)[0]


plain = two_layers_through_norm(x, Wo, second["Wq"], second["Wk"], second["Wv"])
folded = two_layers_through_norm(x, identity, Wo @ second["Wq"], Wo @ second["Wk"], Wo @ second["Wv"])
print(f"LayerNorm between, no stream: largest |plain - folded| = {np.abs(plain - folded).max():.2f}, "
      f"largest |plain| = {np.abs(plain).max():.2f}")
v = np.random.default_rng(13).standard_normal(C)
v = v - v.mean()  # (C,), orthogonal to the all-ones vector
v = v / np.linalg.norm(v)
R = np.eye(C) - 2 * np.outer(v, v)  # (C, C): orthogonal, R @ ones = ones
rows = np.random.default_rng(14).standard_normal((B, T, C))
print("a reflection R that fixes the all-ones vector: LN(y R) = LN(y) R to 1e-10:",
      np.allclose(layer_norm(rows @ R, np.ones(C), np.zeros(C)), layer_norm(rows, np.ones(C), np.zeros(C)) @ R,
                  rtol=0, atol=1e-10))

# %% [markdown]
# The LayerNorm alone breaks the fold with the lesson's $W_o$: the differences are about a quarter of
# the outputs' size, smaller than the residual addition's in section 1 but nowhere near rounding.
# Only matrices that keep every row's mean and spread pass through a LayerNorm.
#
# ### RMSNorm: what it drops
#
# RMSNorm, used by LLaMA and many later models, keeps only the division. It does not subtract the
# mean and has no bias:
#
# $$\text{RMSNorm}(x) = \gamma \odot \frac{x}{\sqrt{\frac{1}{C}\sum_j x_j^2 + \varepsilon}} .$$
#
# On a position whose mean is zero the two agree (with $\beta = 0$); a common offset on every feature
# is removed by LayerNorm and kept by RMSNorm:

# %%
def rms_norm(x, gamma, eps=1e-5):
    """RMSNorm over the last axis: x (..., C), gamma (C,) -> (..., C)."""
    return gamma * x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps)  # (..., C) / (..., 1)


centred = x - x.mean(axis=-1, keepdims=True)  # (B, T, C), every position's mean removed
print("mean-zero positions: RMSNorm equals LayerNorm to 1e-12:",
      np.allclose(rms_norm(centred, ones), layer_norm(centred, ones, zeros), rtol=0, atol=1e-12))
shifted = centred + 3.0  # the same positions with an offset of 3 on every feature
print(f"offset of 3: LayerNorm output mean {np.abs(layer_norm(shifted, ones, zeros).mean(axis=-1)).max():.3f} "
      f"(largest over positions), RMSNorm output mean {rms_norm(shifted, ones).mean(axis=-1).min():.3f} (smallest)")

# %% [markdown]
# After an offset of 3, LayerNorm's output still has mean 0 at every position, while RMSNorm's
# output keeps a mean of at least 0.93 at every position: RMSNorm lets the component along the all-ones direction
# through, and leaves it to the layers after it to deal with. What it saves is one mean per
# position and the $C$ parameters of $\beta$.
#
# ## 3. LayerNorm backward
#
# For one position, write $\sigma = \sqrt{\sigma^2 + \varepsilon}$. Each $\hat{x}_i$ depends on
# every $x_j$, through $\mu$ and $\sigma$. Differentiating $\hat{x}_i = (x_i - \mu)/\sigma$, with
# $\partial \mu / \partial x_j = 1/C$ and $\partial \sigma / \partial x_j = (x_j - \mu)/(C \sigma) = \hat{x}_j / C$,
# gives the `(C, C)` Jacobian
#
# $$\frac{\partial \hat{x}_i}{\partial x_j} = \frac{1}{\sigma}\left(\delta_{ij} - \frac{1}{C} - \frac{\hat{x}_i \hat{x}_j}{C}\right).$$
#
# Two of its properties follow from section 2: adding the same number to every $x_j$ changes
# nothing, so the Jacobian times the all-ones vector is zero; and scaling $x - \mu$ changes nothing,
# so the Jacobian times $\hat{x}$ is zero (up to the small $\varepsilon$). The cell builds it for one
# position of width 8 and checks both.

# %%
def layer_norm_jacobian(x_row, eps=1e-5):
    """d x_hat / d x for one position x_row (C,): the (C, C) matrix above."""
    C_ = x_row.shape[-1]
    sigma = np.sqrt(x_row.var() + eps)
    x_hat = (x_row - x_row.mean()) / sigma  # (C,)
    return (np.eye(C_) - 1 / C_ - np.outer(x_hat, x_hat) / C_) / sigma, x_hat  # (C, C)


x_small = np.random.default_rng(3).standard_normal(8) * 2.0  # one position, C = 8
J, x_hat_small = layer_norm_jacobian(x_small)
sigma_small = np.sqrt(x_small.var() + 1e-5)
print("J:", J.shape, "| J @ ones = 0:", np.allclose(J @ np.ones(8), 0, atol=1e-12),
      "| J @ x_hat = 0 (to 1e-5):", np.allclose(J @ x_hat_small, 0, atol=1e-5), "| J symmetric:", np.allclose(J, J.T))
print(f"(1 - 1/C) / sigma = {(1 - 1 / 8) / sigma_small:.3f}, -1 / (C sigma) = {-1 / (8 * sigma_small):.3f}; "
      f"diagonal from {np.diag(J).min():.3f} to {np.diag(J).max():.3f}")

fig, ax = plt.subplots(figsize=(6.2, 5.2), constrained_layout=True)
limit = np.abs(J).max()
image = ax.imshow(J, cmap="RdBu_r", vmin=-limit, vmax=limit)
for i in range(8):
    for j in range(8):
        ax.text(j, i, f"{J[i, j]:.2f}", ha="center", va="center", fontsize=8)
ax.set_xticks(range(8))
ax.set_yticks(range(8))
ax.set_xlabel("input feature j")
ax.set_ylabel("output feature i")
ax.set_title(f"LayerNorm Jacobian d x_hat_i / d x_j, one position (C = 8, sigma = {np.sqrt(x_small.var()):.2f})")
fig.colorbar(image, ax=ax, label="d x_hat_i / d x_j")
plt.show()

# %% [markdown]
# *Figure: the diagonal holds the largest entries, at most $(1 - 1/C)/\sigma$ and smaller for the
# features far from the mean (the $\hat{x}_i^2$ term). Off the diagonal, most entries sit near
# $-1/(C\sigma)$; where both features are far from the mean, $\hat{x}_i \hat{x}_j / (C\sigma)$ moves
# them up or down. Each output feature depends on the other input features, not only on its own.*
#
# A backward pass never builds the Jacobian. Given $d y = \partial L / \partial y$ of shape `(..., C)`
# and $g = dy \odot \gamma$, multiplying by the Jacobian collapses into two means per position:
#
# $$dx = \frac{1}{\sigma}\Big(g - \operatorname{mean}(g) - \hat{x} \odot \operatorname{mean}(g \odot \hat{x})\Big), \qquad
# d\gamma = \sum_{\text{positions}} dy \odot \hat{x}, \qquad d\beta = \sum_{\text{positions}} dy,$$
#
# with the means over the $C$ features of each position, and the sums over every leading axis:
# $\gamma$ and $\beta$ are shared by every position, so their gradients add up over all of them,
# as the weight gradients of Lesson 7 did.
#
# ### Exercise 2: LayerNorm backward (3 points)
#
# Write `layer_norm_backward(dout, x, gamma, eps=1e-5)` for $y = $ `layer_norm(x, gamma, beta, eps)`.
# `dout` and `x` have shape `(..., C)`, `gamma` shape `(C,)`. Return the tuple `(dx, dgamma, dbeta)`:
# `dx` of the shape of `x`, `dgamma` and `dbeta` of shape `(C,)`. ($\beta$ is not an argument: the
# gradient does not depend on it.) Do not modify the inputs. Use NumPy alone (no torch, no scipy).
# Advice, not a graded rule: write it without a loop over positions; the means over the last axis
# do every position at once.
#
# The answer is the formula above. Central differences are for checking it, not a way to compute
# it: the hidden tests call your function on fresh inputs, one of them a position of tens of
# thousands of features, far too large to differentiate numerically in the time a test cell has,
# and checked to a precision that differences cannot reach. Build no `(C, C)` Jacobian either.

# %% nbgrader={"grade": false, "grade_id": "layer_norm_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def layer_norm_backward(dout, x, gamma, eps=1e-5):
    """Gradients of LayerNorm: dout, x (..., C), gamma (C,) -> (dx (..., C), dgamma (C,), dbeta (C,))."""
    ### BEGIN SOLUTION
    sigma = np.sqrt(x.var(axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = (x - x.mean(axis=-1, keepdims=True)) / sigma  # (..., C)
    g = dout * gamma  # (..., C)
    dx = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) / sigma
    leading = tuple(range(x.ndim - 1))  # every axis but the features
    return dx, (dout * x_hat).sum(axis=leading), dout.sum(axis=leading)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_layer_norm_backward", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_layer_norm_backward():
    """Visible checks: two cases worked out by hand, and properties that any correct backward pass has."""
    # Hand case, eps = 0: x = [-1, 0, 1] has mu = 0, sigma = sqrt(2/3), x_hat = [-1.2247, 0, 1.2247].
    # With gamma = 1 and dout = [1, 0, 0]: g = [1, 0, 0], mean(g) = 1/3, mean(g * x_hat) = -0.4082, so
    # dx = ([1, 0, 0] - 1/3 + 0.4082 * x_hat) / sigma = [1/6, -1/3, 1/6] / sigma = [0.2041, -0.4082, 0.2041].
    x1, dout1 = np.array([[-1.0, 0.0, 1.0]]), np.array([[1.0, 0.0, 0.0]])
    copies = x1.copy(), dout1.copy()
    got = layer_norm_backward(dout1, x1, np.ones(3), eps=0.0)
    assert np.array_equal(x1, copies[0]) and np.array_equal(dout1, copies[1]), "layer_norm_backward modified its inputs"
    assert isinstance(got, tuple) and len(got) == 3, "return the tuple (dx, dgamma, dbeta)"
    dx, dgamma, dbeta = (np.asarray(g) for g in got)
    assert dx.shape == (1, 3), f"dx has the shape of x, (1, 3); got {dx.shape}"
    assert dgamma.shape == dbeta.shape == (3,), (
        f"dgamma and dbeta have the shape of gamma, (3,); got {dgamma.shape} and {dbeta.shape}: "
        "sum over every axis but the last (gamma and beta are shared by all positions)")
    if np.abs(dx - [[1.2247, 0.0, 0.0]]).max() < 1e-4:
        raise AssertionError("dx = dout * gamma / sigma leaves out how mu and sigma depend on x: "
                             "subtract mean(g) and x_hat * mean(g * x_hat) before dividing by sigma")
    assert np.allclose(dx, [[0.204124, -0.408248, 0.204124]], atol=1e-5), f"dx should be [0.2041, -0.4082, 0.2041], got {dx}"
    assert np.allclose(dgamma, [-1.224745, 0.0, 0.0], atol=1e-5), f"dgamma = sum of dout * x_hat = [-1.2247, 0, 0], got {dgamma}"
    assert np.allclose(dbeta, [1.0, 0.0, 0.0]), f"dbeta = sum of dout = [1, 0, 0], got {dbeta}"
    # A second hand case, shape (2, 1, 3), gamma [2, -1, 0.5], eps = 0 (worked out the same way, to 6 decimals).
    x2 = np.array([[[0.0, 1.0, 5.0]], [[2.0, -2.0, 0.0]]])
    dout2 = np.array([[[1.0, -1.0, 2.0]], [[0.5, 0.0, -1.0]]])
    dx, dgamma, dbeta = (np.asarray(g) for g in layer_norm_backward(dout2, x2, np.array([2.0, -1.0, 0.5]), eps=0.0))
    assert dgamma.shape == (3,) and np.allclose(dbeta, [1.5, -1.0, 1.0]), (
        f"dbeta sums dout over every leading axis: [1.5, -1, 1], got {dbeta}")
    assert np.allclose(dgamma, [-0.313448, 0.46291, 2.77746], atol=1e-5), f"dgamma: expected [-0.3134, 0.4629, 2.7775], got {dgamma}"
    assert np.allclose(dx, [[[0.176347, -0.220433, 0.044087]], [[0.204124, 0.204124, -0.408248]]], atol=1e-5), (
        f"dx: expected [[0.1763, -0.2204, 0.0441]], [[0.2041, 0.2041, -0.4082]], got {dx.tolist()}")
    # Properties on random inputs: each position's dx sums to 0 and is orthogonal to x - mu (the Jacobian
    # sends the all-ones vector and x_hat to zero); scaling x by 5 and shifting it by 3 divides dx by 5.
    rng_ = np.random.default_rng(1)
    x_, dout_ = rng_.standard_normal((2, 3, 5)) * 2 + 1, rng_.standard_normal((2, 3, 5))
    gamma = 1 + rng_.standard_normal(5)
    dx, dgamma, dbeta = (np.asarray(g) for g in layer_norm_backward(dout_, x_, gamma, eps=1e-12))
    assert np.allclose(dx.sum(axis=-1), 0, atol=1e-7), "each position's dx should sum to 0"
    assert np.allclose((dx * (x_ - x_.mean(axis=-1, keepdims=True))).sum(axis=-1), 0, atol=1e-7), (
        "each position's dx should be orthogonal to x - mu: subtract x_hat * mean(g * x_hat)")
    dx5, dgamma5, _ = (np.asarray(g) for g in layer_norm_backward(dout_, 5 * x_ + 3, gamma, eps=1e-12))
    assert np.allclose(dx5, dx / 5, atol=1e-7) and np.allclose(dgamma5, dgamma, atol=1e-7), (
        "LN(5x + 3) = LN(x): dx should be divided by 5, dgamma unchanged")
    dx_g = np.asarray(layer_norm_backward(dout_ * gamma, x_, np.ones(5), eps=1e-12)[0])
    assert np.allclose(dx_g, dx, atol=1e-7), "dx depends on dout and gamma through g = dout * gamma only"


check_layer_norm_backward()
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# On the lesson's stream, in the style of Lesson 7: the relative error between your gradients
# and central differences of `layer_norm`, for the loss $L = \sum y \odot dy$.

# %%
def numerical_gradient(f, x, eps=1e-5):
    """Central differences of the scalar f() with respect to every entry of x (changed in place, then restored)."""
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


def relative_error(a, b):
    """||a - b|| / max(||a||, ||b||)."""
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b)))


dy = np.random.default_rng(4).standard_normal((B, T, C))  # the gradient arriving from above, (B, T, C)
x_check, gamma_check, beta_check = x.copy(), params["ln1_gamma"].copy(), params["ln1_beta"].copy()
dx, dgamma, dbeta = layer_norm_backward(dy, x_check, gamma_check)


def ln_loss():
    return np.sum(layer_norm(x_check, gamma_check, beta_check) * dy)


for name, analytic, variable in [("dx", dx, x_check), ("dgamma", dgamma, gamma_check), ("dbeta", dbeta, beta_check)]:
    print(f"{name:6s} {str(analytic.shape):12s} relative error below 1e-7:",
          relative_error(analytic, numerical_gradient(ln_loss, variable)) < 1e-7)
print("each position's dx sums to 0 (a common offset cannot change the output):",
      np.allclose(dx.sum(axis=-1), 0, atol=1e-12))

# %% [markdown]
# ## 4. The MLP and GELU
#
# The MLP reads each position on its own: a layer 4 times wider than the stream, a non-linearity,
# and a layer back to width $C$:
#
# $$\text{mlp}(z) = \text{GELU}(z W_1 + b_1)\, W_2 + b_2, \qquad z \in \mathbb{R}^{T \times C},\ W_1 \in \mathbb{R}^{C \times 4C},\ W_2 \in \mathbb{R}^{4C \times C}.$$
#
# GELU weighs its input by the probability that a standard normal variable is below it,
# $\text{GELU}(u) = u\, \Phi(u) = \frac{u}{2}\left(1 + \operatorname{erf}(u/\sqrt{2})\right)$. GPT-2
# uses a cheaper approximation with $\tanh$:
#
# $$\text{GELU}_{\tanh}(u) = \frac{u}{2}\left(1 + \tanh\!\left(\sqrt{2/\pi}\,\big(u + 0.044715\, u^3\big)\right)\right).$$
#
# ### Exercise 3: GELU, tanh form (2 points)
#
# Write `gelu(x)`: the tanh form above, applied to every entry of an array `x` of any shape.
# Return an array of the same shape.

# %% nbgrader={"grade": false, "grade_id": "gelu", "locked": false, "schema_version": 3, "solution": true, "task": false}
def gelu(x):
    """GELU, tanh approximation, entry by entry: x (any shape) -> the same shape."""
    ### BEGIN SOLUTION
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_gelu", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def check_gelu():
    """Visible checks: values worked out by hand, and the shape of the curve."""
    got = gelu(np.array([0.0, 1.0, -1.0]))
    assert isinstance(got, np.ndarray) and got.shape == (3,), "gelu returns an array of the shape of x"
    # u = 1: sqrt(2/pi) * 1.044715 = 0.833554, tanh of it = 0.682384, so GELU(1) = 0.5 * 1.682384 = 0.841192.
    if np.isclose(got[1], 0.841345, atol=2e-6):
        raise AssertionError("gelu(1) = 0.841345 is the exact erf form: the exercise asks for the tanh form (0.841192)")
    if np.isclose(got[1], 2 * 0.841192, atol=1e-5):
        raise AssertionError("gelu(1) is twice 0.841192: the factor 1/2 in front is missing")
    assert np.isclose(got[0], 0.0), f"gelu(0) = 0, got {got[0]}"
    assert np.isclose(got[1], 0.841192, atol=1e-6), f"gelu(1) = 0.841192 (tanh form), got {got[1]:.6f}"
    assert np.isclose(got[2], -0.158808, atol=1e-6), f"gelu(-1) = 1 - 0.841192 - 1 = -0.158808, got {got[2]:.6f}"
    # u = 2: the cube matters; with 0.044715 * u**2 instead the value is 1.94005, not 1.95460.
    assert np.isclose(gelu(np.array(2.0)), 1.954598, atol=1e-5), "gelu(2) = 1.954598: 0.044715 multiplies u**3"
    grid = np.linspace(-8, 8, 33).reshape(3, 11)
    out = gelu(grid)
    assert out.shape == grid.shape, "gelu works entry by entry on any shape"
    assert np.allclose(out[grid > 6], grid[grid > 6], atol=1e-6) and np.allclose(out[grid < -6], 0, atol=1e-6), (
        "GELU(u) is about u for large u and about 0 for very negative u")


check_gelu()
print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# How close is the approximation? The cell evaluates both forms on a fine grid and finds the largest
# difference ($\operatorname{erf}$ comes from Python's `math` module, one value at a time).

# %%
def gelu_erf(u):
    """GELU, exact form u * Phi(u), entry by entry."""
    return 0.5 * u * (1.0 + np.vectorize(math.erf)(u / np.sqrt(2.0)))


u = np.linspace(-6, 6, 2401)  # (2401,) points, step 0.005
difference = gelu(u) - gelu_erf(u)
worst = np.argmax(np.abs(difference))
print(f"largest |tanh form - erf form| on [-6, 6]: {abs(difference[worst]):.1e} at u = {u[worst]:+.2f}")

fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), constrained_layout=True)
axes[0].plot(u, gelu_erf(u), label="GELU, erf form")
axes[0].plot(u, gelu(u), ls="--", label="GELU, tanh form")
axes[0].plot(u, np.maximum(u, 0), lw=0.8, color="grey", label="ReLU, for comparison")
axes[0].set_xlim(-4, 4)
axes[0].set_ylim(-0.5, 4)
axes[0].set_xlabel("input u")
axes[0].set_ylabel("output")
axes[0].set_title("GELU and ReLU")
axes[0].legend()
axes[1].plot(u, difference)
axes[1].set_xlabel("input u")
axes[1].set_ylabel("tanh form - erf form")
axes[1].set_title("The approximation's error")
plt.show()

# %% [markdown]
# *Figure: left, the two GELU curves lie on top of each other; unlike ReLU, GELU dips slightly below
# zero for negative inputs and is smooth at 0. Right, the difference between them stays within a few
# parts in $10^4$ and vanishes for large $|u|$.*
#
# Counting parameters, the MLP has $C \cdot 4C + 4C$ in its first layer and $4C \cdot C + C$ in its
# second: $8C^2 + 5C$, twice the attention layer's $4C^2 + 4C$. Section 9 counts the whole block.
#
# ## 5. The block
#
# The pre-norm block normalises a copy of the stream before each half and adds each half's output
# to the uncopied stream:
#
# $$x_1 = x + \text{attn}\big(\text{LN}_1(x)\big), \qquad \text{out} = x_1 + \text{mlp}\big(\text{LN}_2(x_1)\big),$$
#
# with $\text{LN}_1$ using `ln1_gamma`, `ln1_beta`, attention using `Wq`, ..., `bo` and `mask`, $\text{LN}_2$
# using `ln2_gamma`, `ln2_beta`, and the MLP using `W1`, `b1`, `W2`, `b2`. Both LayerNorms use the
# default `eps`.
#
# ### Exercise 4: the transformer block (3 points)
#
# Write `transformer_block(x, params, h, mask=None)`: `x` of shape `(B, T, C)`, `params` the
# dictionary of section 0, `h` the number of heads, and `mask` a boolean array broadcastable to
# `(B, h, T, T)` or `None` (no mask), passed on to the attention layer. Return `out`, of shape
# `(B, T, C)`. Use `layer_norm`, `gelu` and the provided `multi_head_attention_forward`. Do not
# modify `x` or `params`.

# %% nbgrader={"grade": false, "grade_id": "transformer_block", "locked": false, "schema_version": 3, "solution": true, "task": false}
def transformer_block(x, params, h, mask=None):
    """One pre-norm block: x (B, T, C) -> (B, T, C)."""
    ### BEGIN SOLUTION
    p = params
    attn_out, _ = multi_head_attention_forward(layer_norm(x, p["ln1_gamma"], p["ln1_beta"]), p["Wq"], p["Wk"], p["Wv"],
                                               p["Wo"], h, mask, p["bq"], p["bk"], p["bv"], p["bo"])
    x1 = x + attn_out  # (B, T, C): attention's output added to the stream
    hidden = gelu(layer_norm(x1, p["ln2_gamma"], p["ln2_beta"]) @ p["W1"] + p["b1"])  # (B, T, C) @ (C, 4C) -> (B, T, 4C)
    return x1 + hidden @ p["W2"] + p["b2"]  # (B, T, 4C) @ (4C, C) -> (B, T, C), added to the stream
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_transformer_block", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def _normalise_stand_in(x, gamma, beta, eps=None):
    """A stand-in for LayerNorm, so that these checks do not depend on Exercise 1: it centres each position
    and divides by its largest |entry| (not LayerNorm's standard deviation; with C = 2 the two agree).
    The checks below test properties that any such normalisation has."""
    centred = x - x.mean(axis=-1, keepdims=True)  # (..., C)
    return gamma * centred / (np.abs(centred).max(axis=-1, keepdims=True) + 1e-12) + beta


def _gelu_erf(x):
    """The exact GELU, x * Phi(x), so that these checks do not depend on Exercise 3 (whose tanh form
    differs from it by at most a few parts in 10^4)."""
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(np.asarray(x) / math.sqrt(2.0)))


def _call_with_known_good(function, *args):
    """function(*args) while layer_norm and gelu are the stand-ins above (Exercises 1 and 3 are graded on their own)."""
    saved = {name: globals().get(name) for name in ("layer_norm", "gelu")}
    globals().update(layer_norm=_normalise_stand_in, gelu=_gelu_erf)
    try:
        return function(*args)
    finally:
        globals().update(saved)


def check_transformer_block(C_, h_, seed):
    """Visible checks: properties of a pre-norm block, none of which needs a working block to compute."""
    rng_ = np.random.default_rng(seed=seed)
    x_ = rng_.standard_normal((2, 5, C_))
    p = init_block_params(C_, rng_, random_affine=True)
    copies = x_.copy(), {k: v.copy() for k, v in p.items()}
    out = _call_with_known_good(transformer_block, x_, p, h_)
    assert np.array_equal(x_, copies[0]) and all(np.array_equal(p[k], v) for k, v in copies[1].items()), (
        "transformer_block modified x or params")
    assert isinstance(out, np.ndarray) and out.shape == x_.shape, f"the block returns an array of shape (B, T, C) = {x_.shape}"
    # Both halves switched off (their output weights and biases zero): the stream passes through unchanged.
    silent = dict(p, Wo=np.zeros((C_, C_)), bo=np.zeros(C_), W2=np.zeros((4 * C_, C_)), b2=np.zeros(C_))
    assert np.allclose(_call_with_known_good(transformer_block, x_, silent, h_), x_), (
        "with Wo, bo, W2, b2 all zero the block should return x itself: each half's output is ADDED to the stream")
    # Attention off, W1 zero: the MLP outputs the constant gelu(b1) @ W2 + b2 at every position.
    constant = dict(p, Wo=np.zeros((C_, C_)), bo=np.zeros(C_), W1=np.zeros((C_, 4 * C_)))
    expected = x_ + _gelu_erf(p["b1"]) @ p["W2"] + p["b2"]  # (4C,) @ (4C, C) -> (C,), at every position
    assert np.allclose(_call_with_known_good(transformer_block, x_, constant, h_), expected), (
        "with attention off and W1 = 0 the block should return x + gelu(b1) @ W2 + b2: "
        "the MLP is gelu(z @ W1 + b1) @ W2 + b2, added to the stream")
    # Pre-norm: both halves read LayerNorm'd copies, so a constant added to every feature passes straight through.
    assert np.allclose(_call_with_known_good(transformer_block, x_ + 7.0, p, h_), out + 7.0), (
        "block(x + 7) should equal block(x) + 7: each half reads LN(stream), which ignores a common offset, "
        "and adds to the stream. A missing LayerNorm, or a LayerNorm AFTER the addition (post-norm), breaks this")
    # The mask is passed on: with the causal mask, changing the last position changes no earlier output.
    causal = causal_mask(5)
    changed = x_.copy()
    changed[:, -1] += 1.0
    moved = np.abs(_call_with_known_good(transformer_block, changed, p, h_, causal)
                   - _call_with_known_good(transformer_block, x_, p, h_, causal))  # (2, 5, C)
    assert moved[:, :-1].max() < 1e-12, "with the causal mask, the last position must not change earlier outputs: pass mask on"
    assert moved[:, -1].max() > 1e-3, "changing the last position should change its own output"


check_transformer_block(32, 4, seed=0)
check_transformer_block(6, 1, seed=1)  # one head
print("Exercise 4 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# On the lesson's data, with the causal mask: the stream keeps its shape, and each half changes it
# by an update of about the stream's own size.

# %%
out = transformer_block(x, params, h, mask)
x1 = x + multi_head_attention_forward(layer_norm(x, params["ln1_gamma"], params["ln1_beta"]), params["Wq"],
                                      params["Wk"], params["Wv"], params["Wo"], h, mask, params["bq"],
                                      params["bk"], params["bv"], params["bo"])[0]  # (B, T, C)


def rms(a):
    return float(np.sqrt(np.mean(a**2)))


print("out:", out.shape, f"| RMS of x {rms(x):.2f}, of the attention update {rms(x1 - x):.2f}, "
      f"of the MLP update {rms(out - x1):.2f}, of out {rms(out):.2f}")

# %% [markdown]
# ## 6. Where two heads first interact
#
# Lesson 4 measured the **interaction** of two heads $a \ne b$,
# $\Delta_{ab} = f - f_{-a} - f_{-b} + f_{-a,-b}$, where $f_{-a}$ is a quantity computed with head
# $a$'s columns of the concat set to zero. For the attention layer's output, $f = \text{concat}\,
# W_o + b_o$, it is zero: $W_o$ adds the heads, it never gates or multiplies them. The stream
# $x_1 = x + \text{concat}\, W_o + b_o$ is a sum too, so $\Delta_{ab}$ of the stream is zero.
#
# The MLP is the first step that reads the stream non-linearly: $\text{LN}_2$ divides by a standard
# deviation that depends on all heads at once, and GELU bends what $W_1$ reads. So for the MLP's
# output, $f = \text{mlp}(\text{LN}_2(x_1))$, nothing forces $\Delta_{ab}$ to be zero.
#
# ### Exercise 5: the heads' interaction in the MLP (3 points)
#
# Write `mlp_head_interaction(x, concat, params, h, a, b)`. `x` is the stream before attention and
# `concat` the attention layer's concatenated heads, both `(B, T, C)`; head $i$'s part of `concat`
# is columns $i \cdot hs$ to $(i+1) \cdot hs - 1$. For a set $S$ of dropped heads, let
#
# $$f_{-S} = \text{mlp}\big(\text{LN}_2(x + \text{concat}_{-S}\, W_o + b_o)\big),$$
#
# where $\text{concat}_{-S}$ is `concat` with the columns of the heads in $S$ set to zero, and
# $\text{LN}_2$ and the MLP use the `params` of section 0 (`eps` at its default). Return
# $\Delta_{ab} = f - f_{-a} - f_{-b} + f_{-a,-b}$, of shape `(B, T, C)`. Do not modify the inputs.

# %% nbgrader={"grade": false, "grade_id": "mlp_head_interaction", "locked": false, "schema_version": 3, "solution": true, "task": false}
def mlp_head_interaction(x, concat, params, h, a, b):
    """Interaction of heads a and b in the MLP's output: x, concat (B, T, C) -> (B, T, C)."""
    ### BEGIN SOLUTION
    p = params
    head_of_dim = np.arange(concat.shape[-1]) // (concat.shape[-1] // h)  # (C,): the head of each column

    def mlp_output(dropped):
        kept = np.where(np.isin(head_of_dim, dropped), 0.0, concat)  # (B, T, C), dropped heads' columns zeroed
        stream = x + kept @ p["Wo"] + p["bo"]  # (B, T, C) @ (C, C) -> (B, T, C)
        hidden = gelu(layer_norm(stream, p["ln2_gamma"], p["ln2_beta"]) @ p["W1"] + p["b1"])  # (B, T, 4C)
        return hidden @ p["W2"] + p["b2"]  # (B, T, 4C) @ (4C, C) -> (B, T, C)

    return mlp_output([]) - mlp_output([a]) - mlp_output([b]) + mlp_output([a, b])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_mlp_head_interaction", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def _normalise_stand_in(x, gamma, beta, eps=None):
    """A stand-in for LayerNorm, so that these checks do not depend on Exercise 1: it centres each position
    and divides by its largest |entry| (not LayerNorm's standard deviation; with C = 2 the two agree).
    The checks below test properties that any such normalisation has."""
    centred = x - x.mean(axis=-1, keepdims=True)  # (..., C)
    return gamma * centred / (np.abs(centred).max(axis=-1, keepdims=True) + 1e-12) + beta


def _gelu_erf(x):
    """The exact GELU, x * Phi(x), so that these checks do not depend on Exercise 3 (whose tanh form
    differs from it by at most a few parts in 10^4)."""
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(np.asarray(x) / math.sqrt(2.0)))


def _call_with_known_good(function, *args):
    """function(*args) while layer_norm and gelu are the stand-ins above (Exercises 1 and 3 are graded on their own)."""
    saved = {name: globals().get(name) for name in ("layer_norm", "gelu")}
    globals().update(layer_norm=_normalise_stand_in, gelu=_gelu_erf)
    try:
        return function(*args)
    finally:
        globals().update(saved)


def check_mlp_head_interaction():
    """Visible checks: two cases worked out by hand, and properties."""
    # Hand case: C = 2, h = 2 (head 0 = column 0, head 1 = column 1), W_o, W_1, W_2 the identity, all biases 0,
    # gains 1: the MLP is gelu(LN(stream)) (C = 2: the stand-in equals LayerNorm). With x = 0 and concat = [1, -1]:
    #   f       = gelu(LN([1, -1])) = gelu([1, -1]);  f_-0 = gelu(LN([0, -1])) = gelu([1, -1]);
    #   f_-1    = gelu(LN([1, 0]))  = gelu([1, -1]);  f_-0,-1 = gelu(LN([0, 0])) = gelu([0, 0]) = 0,
    # so Delta = -gelu([1, -1]) = [-0.8412, 0.1588] (to about 1e-4: these checks use the exact GELU).
    eye, zero = np.eye(2), np.zeros(2)
    p = {"Wo": eye, "bo": zero, "ln2_gamma": np.ones(2), "ln2_beta": zero, "W1": eye, "b1": zero, "W2": eye, "b2": zero}
    x0, concat = np.zeros((1, 1, 2)), np.array([[[1.0, -1.0]]])
    copies = x0.copy(), concat.copy()
    got = _call_with_known_good(mlp_head_interaction, x0, concat, p, 2, 0, 1)
    assert np.array_equal(x0, copies[0]) and np.array_equal(concat, copies[1]), "mlp_head_interaction modified its inputs"
    assert isinstance(got, np.ndarray) and got.shape == (1, 1, 2), f"return an array of shape (B, T, C) = (1, 1, 2), got {np.shape(got)}"
    if np.allclose(got, [[[0.8412, -0.1588]]], atol=1e-3):
        raise AssertionError("the sign is flipped: Delta = f - f_-a - f_-b + f_-a,-b")
    assert np.allclose(got, [[[-0.8412, 0.1588]]], atol=1e-3), f"the hand case should give [-0.8412, 0.1588], got {got.ravel()}"
    # The same heads read on top of a stream x = [3, 0]: every stream is then about [+, -] after LN, so Delta is about 0.
    got = _call_with_known_good(mlp_head_interaction, np.array([[[3.0, 0.0]]]), concat, p, 2, 0, 1)
    assert np.allclose(got, 0.0, atol=1e-3), (
        f"with x = [3, 0] every f is about gelu([1, -1]), so Delta is about 0; got {got.ravel()}: "
        "the MLP reads the STREAM, x + concat @ Wo + bo, not the attention output alone")
    # Properties on random inputs: symmetric in a and b; zero when head b's part of concat is zero.
    rng_ = np.random.default_rng(5)
    C_, h_ = 12, 3
    p = init_block_params(C_, rng_, random_affine=True)
    x_, concat_ = rng_.standard_normal((2, 4, C_)), rng_.standard_normal((2, 4, C_))
    d01 = _call_with_known_good(mlp_head_interaction, x_, concat_, p, h_, 0, 1)
    assert np.allclose(d01, _call_with_known_good(mlp_head_interaction, x_, concat_, p, h_, 1, 0)), (
        "Delta_ab should equal Delta_ba")
    assert np.abs(d01).max() > 1e-3, "the MLP's interaction of two heads is not zero on random inputs"
    silent_b = concat_.copy()
    silent_b[..., 4:8] = 0.0  # head 1 outputs nothing: dropping it changes nothing
    assert np.allclose(_call_with_known_good(mlp_head_interaction, x_, silent_b, p, h_, 0, 1), 0.0), (
        "when head b's columns of concat are already zero, Delta_ab is zero: drop a head by zeroing its columns "
        "i*hs:(i+1)*hs of concat")


check_mlp_head_interaction()
print("Exercise 5 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# On the lesson's block: the interaction of every pair of heads, in the stream and in the MLP's
# output, as the largest $|\Delta_{ab}|$ over every position and feature.

# %%
a_in = layer_norm(x, params["ln1_gamma"], params["ln1_beta"])  # LN_1(x), (B, T, C)
concat = multi_head_attention_forward(a_in, params["Wq"], params["Wk"], params["Wv"], params["Wo"], h, mask,
                                      params["bq"], params["bk"], params["bv"], params["bo"])[1]["concat"]


def stream_head_interaction(x, concat, params, h, a, b):
    """Delta_ab of the stream x + concat_-S @ Wo + bo: (B, T, C)."""
    head_of_dim = np.arange(concat.shape[-1]) // (concat.shape[-1] // h)

    def stream(dropped):
        return x + np.where(np.isin(head_of_dim, dropped), 0.0, concat) @ params["Wo"] + params["bo"]  # (B, T, C)

    return stream([]) - stream([a]) - stream([b]) + stream([a, b])


table = np.zeros((2, h, h))  # (stream or MLP, head a, head b)
for a in range(h):
    for b in range(h):
        if a != b:
            table[0, a, b] = np.abs(stream_head_interaction(x, concat, params, h, a, b)).max()
            table[1, a, b] = np.abs(mlp_head_interaction(x, concat, params, h, a, b)).max()
print("stream: largest |Delta_ab| over all pairs below 1e-12:", table[0].max() < 1e-12)
print(f"MLP output: smallest and largest max |Delta_ab| over the pairs: "
      f"{table[1][~np.eye(h, dtype=bool)].min():.3f}, {table[1].max():.3f}; RMS of the MLP output {rms(out - x1):.2f}")

fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), constrained_layout=True)
for ax, values, title in zip(axes, table, ["in the stream x_1", "in the MLP's output"], strict=True):
    image = ax.imshow(values, cmap="magma", vmin=0, vmax=table.max())
    for i in range(h):
        for j in range(h):
            ax.text(j, i, "-" if i == j else f"{values[i, j]:.2f}", ha="center", va="center",
                    color="white" if values[i, j] < 0.6 * table.max() else "black")
    ax.set_xticks(range(h))
    ax.set_yticks(range(h))
    ax.set_xlabel("head b")
    ax.set_ylabel("head a")
    ax.set_title(f"largest |Delta_ab| {title}")
fig.colorbar(image, ax=axes, label="largest |Delta_ab| over positions and features")
fig.suptitle("Interaction of two heads: zero in the stream, not zero after the MLP")
plt.show()

# %% [markdown]
# *Figure: left, every pair of heads has zero interaction in the stream: the heads only add there.
# Right, after the MLP every pair interacts. The diagonal (a head with itself) is not defined.*
#
# One draw of weights could be a lucky one. The cell repeats the measurement for ten seeds of the
# block's weights and inputs and reports, for each seed, the smallest pair's interaction in the MLP.

# %%
smallest = []
for seed in range(10):
    rng_s = np.random.default_rng(seed=seed)
    x_s = rng_s.standard_normal((B, T, C))
    p_s = init_block_params(C, rng_s)
    concat_s = multi_head_attention_forward(layer_norm(x_s, p_s["ln1_gamma"], p_s["ln1_beta"]), p_s["Wq"], p_s["Wk"],
                                            p_s["Wv"], p_s["Wo"], h, mask)[1]["concat"]
    smallest.append(min(np.abs(mlp_head_interaction(x_s, concat_s, p_s, h, a, b)).max()
                        for a in range(h) for b in range(a + 1, h)))
print("seeds 0-9, the smallest pair's max |Delta_ab| in the MLP:", np.round(smallest, 2))
print("seeds where some pair of heads does not interact in the MLP (below 1e-6):", sum(s < 1e-6 for s in smallest), "of 10")

# %% [markdown]
# In all ten seeds every pair of heads interacts in the MLP. In a block, the MLP right after
# attention is where the heads of a layer first combine non-linearly: $W_o$ places each head's
# result in the stream, and the LayerNorm and the GELU that read the stream are what combine them.
#
# ## 7. The MLP's backward pass
#
# Section 8 measures gradients through stacks of blocks, so it needs the MLP's backward pass. For
# one block's MLP, with $z$ `(..., C)` its input,
#
# $$u = z W_1 + b_1 \ (\ldots, 4C), \qquad a = \text{GELU}_{\tanh}(u), \qquad \text{out} = a W_2 + b_2 \ (\ldots, C),$$
#
# and $d\text{out} = \partial L / \partial\, \text{out}$, the chain rule runs back through the three steps:
#
# $$da = d\text{out}\, W_2^\top, \qquad du = da \odot \text{GELU}_{\tanh}'(u), \qquad dz = du\, W_1^\top,$$
#
# $$dW_2 = \sum_{\text{positions}} a^\top d\text{out}, \quad db_2 = \sum_{\text{positions}} d\text{out}, \quad
# dW_1 = \sum_{\text{positions}} z^\top du, \quad db_1 = \sum_{\text{positions}} du .$$
#
# The GELU's derivative follows from its tanh form, with $k = \sqrt{2/\pi}$ and
# $s = \tanh\big(k (u + 0.044715\, u^3)\big)$:
#
# $$\text{GELU}_{\tanh}'(u) = \frac{1}{2}(1 + s) + \frac{u}{2}\,(1 - s^2)\, k\, (1 + 3 \cdot 0.044715\, u^2) .$$
#
# ### Exercise 6: the MLP's backward pass (3 points)
#
# Write `mlp_backward(dout, z, params)`: `dout` and `z` of shape `(..., C)` (any number of leading
# axes), `params` the dictionary of section 0 (only `W1`, `b1`, `W2`, `b2` are used). Return the tuple
# `(dz, dW1, db1, dW2, db2)`, each of the shape of what it differentiates: `dz` like `z`, `dW1`
# `(C, 4C)`, `db1` `(4C,)`, `dW2` `(4C, C)`, `db2` `(C,)`. Write the GELU's derivative yourself, from the
# formula above; use your `gelu` for $a$. Use NumPy alone (no torch, no scipy), and do not modify the
# inputs. The hidden tests include inputs too large to differentiate numerically in a test cell's
# time.

# %% nbgrader={"grade": false, "grade_id": "mlp_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def mlp_backward(dout, z, params):
    """Gradients of mlp(z) = gelu(z W1 + b1) W2 + b2: dout, z (..., C) -> (dz, dW1, db1, dW2, db2)."""
    ### BEGIN SOLUTION
    p = params
    u = z @ p["W1"] + p["b1"]  # (..., C) @ (C, 4C) -> (..., 4C)
    k = np.sqrt(2.0 / np.pi)
    s = np.tanh(k * (u + 0.044715 * u**3))  # (..., 4C)
    gelu_prime = 0.5 * (1 + s) + 0.5 * u * (1 - s**2) * k * (1 + 3 * 0.044715 * u**2)  # (..., 4C)
    du = (dout @ p["W2"].T) * gelu_prime  # (..., C) @ (C, 4C) -> (..., 4C)
    a_rows = gelu(u).reshape(-1, u.shape[-1])  # (..., 4C) -> (N, 4C)
    dout_rows, du_rows = dout.reshape(-1, dout.shape[-1]), du.reshape(-1, du.shape[-1])  # (N, C), (N, 4C)
    z_rows = z.reshape(-1, z.shape[-1])  # (..., C) -> (N, C)
    return (du @ p["W1"].T, z_rows.T @ du_rows, du_rows.sum(axis=0),  # (..., 4C) @ (4C, C); (C, N) @ (N, 4C)
            a_rows.T @ dout_rows, dout_rows.sum(axis=0))  # (4C, N) @ (N, C)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_mlp_backward", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
DZ_EXPECTED = np.array([[2.027885], [8.376582]])  # the small case above, computed beforehand
DW1_EXPECTED = np.array([[0.267757, 4.284436, 0.254891, 0.270344]])
DB1_EXPECTED = np.array([1.033298, -3.886546, -0.256483, 0.57544])
DW2_EXPECTED = np.array([[0.66333], [-5.124117], [0.030817], [1.406846]])
DZ_WITHOUT_GELU = np.array([[-2.0], [4.0]])  # dout W2^T W1^T, GELU' left out


def _exact_gelu(x):
    """The exact GELU, x * Phi(x), so that these checks do not depend on Exercise 3 (the small case's values,
    computed with the tanh form, move by less than 1e-3 in dW2, the only gradient that uses GELU itself)."""
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(np.asarray(x) / math.sqrt(2.0)))


def _mlp_backward_with_exact_gelu(*args):
    """mlp_backward(*args) while gelu is the stand-in above (Exercise 3 is graded on its own)."""
    saved = globals().get("gelu")
    globals()["gelu"] = _exact_gelu
    try:
        return mlp_backward(*args)
    finally:
        globals()["gelu"] = saved


def check_mlp_backward():
    """Visible checks: a small case computed beforehand (6 decimals), and properties."""
    # C = 1 (4C = 4): z = [[0.5], [-1]], W1 = [[1, -2, 0.5, 3]], b1 = [0, 0.5, -1, 0], W2 = [[1], [2], [-1], [0.5]],
    # b2 = [0.3], dout = [[1], [-2]].
    p = {"W1": np.array([[1.0, -2.0, 0.5, 3.0]]), "b1": np.array([0.0, 0.5, -1.0, 0.0]),
         "W2": np.array([[1.0], [2.0], [-1.0], [0.5]]), "b2": np.array([0.3])}
    z, dout = np.array([[0.5], [-1.0]]), np.array([[1.0], [-2.0]])
    copies = z.copy(), dout.copy(), {k: v.copy() for k, v in p.items()}
    got = _mlp_backward_with_exact_gelu(dout, z, p)
    assert np.array_equal(z, copies[0]) and np.array_equal(dout, copies[1]) and all(
        np.array_equal(p[k], v) for k, v in copies[2].items()), "mlp_backward modified its inputs"
    assert isinstance(got, tuple) and len(got) == 5, "return the tuple (dz, dW1, db1, dW2, db2)"
    dz, dW1, db1, dW2, db2 = (np.asarray(g) for g in got)
    assert dz.shape == (2, 1) and dW1.shape == (1, 4) and db1.shape == (4,) and dW2.shape == (4, 1) and db2.shape == (1,), (
        f"shapes: dz (2, 1), dW1 (1, 4), db1 (4,), dW2 (4, 1), db2 (1,); got {dz.shape}, {dW1.shape}, {db1.shape}, "
        f"{dW2.shape}, {db2.shape}")
    assert np.allclose(db2, [-1.0]), f"db2 = the sum of dout over positions = [-1], got {db2}"
    assert np.allclose(dW2, DW2_EXPECTED, atol=2e-3), (
        f"dW2 = a^T dout with a = gelu(z W1 + b1): expected {DW2_EXPECTED.ravel()}, got {dW2.ravel()}")
    if np.abs(dz - DZ_WITHOUT_GELU).max() < 1e-6:
        raise AssertionError("dz is dout W2^T W1^T: multiply by GELU'(u) entry by entry before W1^T")
    assert np.allclose(db1, DB1_EXPECTED, atol=1e-6), f"db1: expected {DB1_EXPECTED}, got {db1}"
    assert np.allclose(dW1, DW1_EXPECTED, atol=1e-6), f"dW1: expected {DW1_EXPECTED.ravel()}, got {dW1.ravel()}"
    assert np.allclose(dz, DZ_EXPECTED, atol=1e-6), f"dz: expected {DZ_EXPECTED.ravel()}, got {dz.ravel()}"
    # Properties on random inputs with two leading axes: linear in dout; W2 = 0 leaves only dW2 and db2.
    rng_ = np.random.default_rng(6)
    p = init_block_params(4, rng_, random_affine=True)
    z, dout = rng_.standard_normal((2, 3, 4)), rng_.standard_normal((2, 3, 4))
    got, doubled = _mlp_backward_with_exact_gelu(dout, z, p), _mlp_backward_with_exact_gelu(2 * dout, z, p)
    assert [np.shape(g) for g in got] == [(2, 3, 4), (4, 16), (16,), (16, 4), (4,)], (
        "with leading axes (2, 3): dz (2, 3, 4); the weight and bias gradients sum over every position")
    assert all(np.allclose(2 * np.asarray(g), np.asarray(d)) for g, d in zip(got, doubled, strict=True)), (
        "every gradient is linear in dout")
    silent = _mlp_backward_with_exact_gelu(dout, z, dict(p, W2=np.zeros((16, 4))))
    assert all(np.allclose(np.asarray(g), 0) for g in silent[:3]), "with W2 = 0 nothing reaches dz, dW1 or db1"


check_mlp_backward()
print("Exercise 6 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## 8. Pre-norm against post-norm, at initialisation
#
# The original transformer put the LayerNorm **after** each addition (post-norm):
#
# $$\text{post-norm:}\quad x_1 = \text{LN}_1\big(x + \text{attn}(x)\big), \quad \text{out} = \text{LN}_2\big(x_1 + \text{mlp}(x_1)\big);
# \qquad \text{pre-norm:}\quad x_1 = x + \text{attn}\big(\text{LN}_1(x)\big), \quad \text{out} = x_1 + \text{mlp}\big(\text{LN}_2(x_1)\big).$$
#
# Stack $N$ blocks, each with its own freshly initialised weights (`init_block_params`, gains 1,
# biases 0), and measure two things: the RMS size of the stream after the last block, and the RMS
# size of the gradient that reaches the input of the first block, for the loss
# $L = \sum \text{out} \odot g$ with $g$ a fixed standard normal array (so the gradient arriving at
# the top has RMS about 1). The backward pass below chains the rules of Lesson 7, your
# `layer_norm_backward` and your `mlp_backward`.

# %%
def attention_input_backward(X, p, h, mask, dout):
    """d(sum(attn(X) * dout)) / dX for the biased layer of section 0: (B, T, C)."""
    B_, T_, C_ = X.shape
    hs_ = C_ // h

    def split(Y):  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)
        return Y.reshape(B_, T_, h, hs_).transpose(0, 2, 1, 3)

    def merge(Y):  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
        return Y.transpose(0, 2, 1, 3).reshape(B_, T_, C_)

    Q, K, V = split(X @ p["Wq"] + p["bq"]), split(X @ p["Wk"] + p["bk"]), split(X @ p["Wv"] + p["bv"])
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(hs_)  # (B, h, T, T)
    A = softmax(scores if mask is None else np.where(mask, scores, -np.inf))  # (B, h, T, T)
    d_heads = split(dout @ p["Wo"].T)  # (B, T, C) @ (C, C) -> (B, T, C) -> (B, h, T, hs)
    dV = A.transpose(0, 1, 3, 2) @ d_heads  # (B, h, T, T) @ (B, h, T, hs) -> (B, h, T, hs)
    dA = d_heads @ V.transpose(0, 1, 3, 2)  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
    dS = A * (dA - (dA * A).sum(axis=-1, keepdims=True)) / np.sqrt(hs_)  # the softmax backward, then the scale
    dQ, dK = dS @ K, dS.transpose(0, 1, 3, 2) @ Q  # (B, h, T, T) @ (B, h, T, hs) -> (B, h, T, hs)
    return merge(dQ) @ p["Wq"].T + merge(dK) @ p["Wk"].T + merge(dV) @ p["Wv"].T  # three paths into X


def attention(X, p, h, mask):
    return multi_head_attention_forward(X, p["Wq"], p["Wk"], p["Wv"], p["Wo"], h, mask,
                                        p["bq"], p["bk"], p["bv"], p["bo"])[0]


def mlp(z, p):
    return gelu(z @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]  # (B, T, C) -> (B, T, 4C) -> (B, T, C)


def block_forward_backward(x, p, h, mask, pre_norm):
    """One block, pre-norm or post-norm: (out, a function mapping d out to d x)."""
    ln1, ln2 = (p["ln1_gamma"], p["ln1_beta"]), (p["ln2_gamma"], p["ln2_beta"])
    if pre_norm:
        a = layer_norm(x, *ln1)
        x1 = x + attention(a, p, h, mask)
        z = layer_norm(x1, *ln2)
        out = x1 + mlp(z, p)

        def backward(d_out):
            d_x1 = d_out + layer_norm_backward(mlp_backward(d_out, z, p)[0], x1, ln2[0])[0]
            return d_x1 + layer_norm_backward(attention_input_backward(a, p, h, mask, d_x1), x, ln1[0])[0]
    else:
        s1 = x + attention(x, p, h, mask)
        x1 = layer_norm(s1, *ln1)
        s2 = x1 + mlp(x1, p)
        out = layer_norm(s2, *ln2)

        def backward(d_out):
            d_s2 = layer_norm_backward(d_out, s2, ln2[0])[0]
            d_s1 = layer_norm_backward(d_s2 + mlp_backward(d_s2, x1, p)[0], s1, ln1[0])[0]
            return d_s1 + attention_input_backward(x, p, h, mask, d_s1)
    return out, backward


def stack(x, blocks, h, mask, g, pre_norm):
    """Run the blocks in order; return (the final stream, the gradient of sum(out * g) at the first block's input)."""
    backwards = []
    for p in blocks:
        x, backward = block_forward_backward(x, p, h, mask, pre_norm)
        backwards.append(backward)
    grad = g
    for backward in reversed(backwards):
        grad = backward(grad)
    return x, grad


# %% [markdown]
# Before measuring anything with it, the backward pass is itself a claim: the cell checks it against
# central differences, for a stack of two blocks of each kind with random gains and biases.

# %%
check_rng = np.random.default_rng(8)
x_fd = check_rng.standard_normal((1, 4, 8))
blocks_fd = [init_block_params(8, check_rng, random_affine=True) for _ in range(2)]
g_fd = check_rng.standard_normal((1, 4, 8))
for pre_norm in (True, False):
    _, analytic = stack(x_fd, blocks_fd, 2, causal_mask(4), g_fd, pre_norm)
    numeric = numerical_gradient(lambda: np.sum(stack(x_fd, blocks_fd, 2, causal_mask(4), g_fd, pre_norm)[0] * g_fd), x_fd)
    print(f"{'pre-norm ' if pre_norm else 'post-norm'} stack of 2: gradient at the input, relative error below 1e-7:",
          relative_error(analytic, numeric) < 1e-7)

# %% [markdown]
# Now the measurement: depths 1 to 32, five seeds each (the seed draws the input, every block's
# weights and $g$), the lesson's sizes $B = 2$, $T = 8$, $C = 32$, $h = 4$ and the causal mask.
# The stream is measured as it leaves the last block (GPT-2 applies one more LayerNorm after the
# last block, before its output layer; it is not part of the stack here).

# %%
depths = [1, 2, 4, 8, 16, 32]
seeds = range(5)
results = {}  # (kind, depth) -> array (seeds, 2): RMS of the final stream, RMS of the gradient at block 1's input
for pre_norm, kind in [(True, "pre-norm"), (False, "post-norm"), (True, "pre-norm, scaled")]:
    for depth in depths:
        rows = []
        for seed in seeds:
            rng_d = np.random.default_rng(seed=seed)
            x_d = rng_d.standard_normal((B, T, C))
            blocks = [init_block_params(C, rng_d) for _ in range(depth)]
            if kind == "pre-norm, scaled":  # the same weights, W_o and W_2 divided by sqrt(2N)
                blocks = [dict(p, Wo=p["Wo"] / np.sqrt(2 * depth), W2=p["W2"] / np.sqrt(2 * depth)) for p in blocks]
            g = rng_d.standard_normal((B, T, C))
            final, grad = stack(x_d, blocks, h, mask, g, pre_norm)
            rows.append((rms(final), rms(grad), rms(g)))
        results[kind, depth] = np.array(rows)

print(f"{'depth':>5} | {'stream RMS, pre':>17} {'post':>17} | {'gradient RMS, pre':>19} {'post':>17}")
for depth in depths:
    cells = []
    for column in (0, 1):
        for kind in ("pre-norm", "post-norm"):
            values = results[kind, depth][:, column]
            cells.append(f"{np.median(values):6.2f} [{values.min():5.2f},{values.max():5.2f}]")
    print(f"{depth:>5} | {cells[0]:>17} {cells[1]:>17} | {cells[2]:>19} {cells[3]:>17}")
print("(median over 5 seeds [smallest, largest]); RMS of g, the gradient arriving at the top: from "
      f"{min(r[:, 2].min() for r in results.values()):.2f} to {max(r[:, 2].max() for r in results.values()):.2f}")
print("pre-norm with W_o and W_2 scaled by 1/sqrt(2N), median over the 5 seeds:")
for depth in depths:
    stream_s, grad_s = np.median(results["pre-norm, scaled", depth], axis=0)[:2]
    print(f"{depth:>5} | stream RMS {stream_s:5.2f} | gradient RMS {grad_s:5.2f}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
for ax, column, what in [(axes[0], 0, "RMS of the stream after the last block"),
                         (axes[1], 1, "RMS of the gradient at the first block's input")]:
    for kind, colour in [("pre-norm", "tab:blue"), ("post-norm", "tab:orange"),
                         ("pre-norm, scaled", "tab:green")]:
        values = np.array([results[kind, depth][:, column] for depth in depths])  # (depths, seeds)
        ax.fill_between(depths, values.min(axis=1), values.max(axis=1), color=colour, alpha=0.25)
        ax.plot(depths, np.median(values, axis=1), "o-", color=colour, label=f"{kind} (median, band: 5 seeds)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(depths, [str(d) for d in depths])
    ax.set_xlabel("number of blocks N")
    ax.set_ylabel(what)
    ax.set_title(what)
    ax.legend()
fig.suptitle(f"Pre-norm against post-norm at initialisation (C = {C}, T = {T}, h = {h})")
plt.show()

# %% [markdown]
# *Figure: the median over five seeds (points) and the range of the five (band), on log scales.
# Left, the stream; right, the gradient reaching the first block. Green: pre-norm with the
# residual projections $W_o$ and $W_2$ initialised $1/\sqrt{2N}$ times smaller.*
#
# What the table and the figure show, at initialisation and at these sizes:
#
# - **Pre-norm:** the stream grows with depth (median RMS 1.37 after one block, 6.13 after 32),
#   because every block adds two updates and nothing rescales the sum. The gradient reaching the
#   first block grows too (median 1.53 to 8.83), and in every run it is larger than the gradient $g$
#   arriving at the top (RMS 0.94 to 1.08): the sum $x + \dots$ hands the incoming gradient to the
#   block below unchanged, and the two halves add to it.
# - **Post-norm:** the last LayerNorm sets the stream to RMS 1.00 at every depth. The gradient
#   reaching the first block keeps a median near 1 (0.90 to 1.43), but its spread over the seeds
#   widens with depth: at 16 and 32 blocks, the smallest of the five is 0.26, a quarter of the size
#   of $g$, because it has passed through every block's LayerNorms on the way down.
#
# - **Pre-norm, scaled:** GPT-2 and nanoGPT initialise the two projections that write into the
#   stream, $W_o$ and $W_2$, with an extra factor $1/\sqrt{2N}$ ($2N$ additions to the stream in $N$
#   blocks), so that the sum of all the updates keeps about the size of one. The green curve is the
#   same weights with that factor: at every depth from 1 to 32 the median stream RMS stays between
#   1.17 and 1.20 and the median gradient RMS between 1.22 and 1.36 (the last printed lines),
#   instead of growing to 6.13 and 8.83.
#
# This is one measurement at initialisation, at one width; it says nothing about training. The
# pre-norm stream's growth is one reason GPT-2 applies a final LayerNorm after its last block, and
# the reason for its scaled initialisation.
#
# ## 9. The block's budget: $12C^2 + 13C$
#
# Counted from the table of section 0: attention $4C^2 + 4C$ (four `(C, C)` matrices and four
# biases), the MLP $8C^2 + 5C$ (`(C, 4C)` and `(4C, C)` with biases of $4C$ and $C$), and two
# LayerNorms $4C$:
#
# $$4C^2 + 4C + 8C^2 + 5C + 4C = 12C^2 + 13C .$$
#
# The cell counts the arrays that `init_block_params` makes, for several widths.

# %%
for width in (8, 32, 768):
    counted = sum(array.size for array in init_block_params(width, np.random.default_rng(0)).values())
    print(f"C = {width:4d}: {counted:>10,} parameters counted, 12C^2 + 13C = {12 * width**2 + 13 * width:>10,}:",
          counted == 12 * width**2 + 13 * width)

# %% [markdown]
# GPT-2 small has $C = 768$ and 12 blocks, with exactly these arrays (its fused `c_attn` holds
# $W_q, W_k, W_v$ side by side). Around the blocks it has a token embedding `(50257, 768)`, a position
# embedding `(1024, 768)` and a final LayerNorm; its output layer reuses the token embedding.

# %%
n_embd, n_layer, vocab_size, n_ctx = 768, 12, 50257, 1024
per_block = 12 * n_embd**2 + 13 * n_embd
blocks_total = n_layer * per_block
embeddings = vocab_size * n_embd + n_ctx * n_embd
final_norm = 2 * n_embd
total = blocks_total + embeddings + final_norm
print(f"one block: {per_block:,}; 12 blocks: {blocks_total:,} ({100 * blocks_total / total:.1f}% of the model)")
print(f"embeddings: {embeddings:,}; final LayerNorm: {final_norm:,}")
print(f"total: {total:,}, GPT-2 small's 124,439,808: {total == 124_439_808}")
print(f"of each block: attention {4 * n_embd**2 + 4 * n_embd:,} ({100 * (4 * n_embd**2 + 4 * n_embd) / per_block:.1f}%), "
      f"MLP {8 * n_embd**2 + 5 * n_embd:,} ({100 * (8 * n_embd**2 + 5 * n_embd) / per_block:.1f}%)")

# %% [markdown]
# The formula rebuilds GPT-2 small's 124,439,808 parameters exactly. The twelve blocks hold about
# two thirds of them, and in each block the MLP holds two thirds and attention one third.
#
# ## Summary
#
# **The residual stream.** A block reads a normalised copy of the stream and adds to it:
# $x_1 = x + \text{attn}(\text{LN}_1(x))$, then $x_1 + \text{mlp}(\text{LN}_2(x_1))$. Each head writes
# a rank-$hs$ update, through $W_v^{(i)} W_o^{(i)}$ (rank 8 of 32 here). Between two bare attention
# layers a dense $W_o$ folds into the next layer's projections (equal to $10^{-10}$); with the
# residual addition the fold fails by as much as the outputs' own size, and a LayerNorm alone
# breaks it too (by about a quarter of it): only maps that keep each row's mean and spread, such as
# a reflection that fixes the all-ones vector, pass through a LayerNorm.
#
# **LayerNorm** removes each position's mean and scale, then applies $\gamma$ and $\beta$. Its
# Jacobian $(I - \frac{1}{C} - \hat{x}\hat{x}^\top / C)/\sigma$ sends the all-ones direction and
# $\hat{x}$ to zero; your `layer_norm_backward` agrees with central differences (relative error below
# $10^{-7}$). RMSNorm keeps only the division: it equals LayerNorm on mean-zero positions and lets a
# common offset through.
#
# **The MLP** is $\text{GELU}(zW_1 + b_1)W_2 + b_2$, four times wider than the stream. The tanh form
# of GELU differs from the erf form by at most a few parts in $10^4$.
#
# **Heads add in the stream** ($\Delta_{ab}$ below $10^{-12}$) **and interact in the MLP** (every
# pair, in ten seeds out of ten).
#
# **Pre-norm and post-norm at initialisation**, depths 1 to 32, five seeds: the pre-norm stream
# (median RMS 1.37 to 6.13) and the gradient reaching its first block (1.53 to 8.83) grow with depth;
# the post-norm stream stays at RMS 1, and its first block's gradient keeps a median near 1 while
# some seeds' fall to 0.26 at 16 and 32 blocks. With $W_o$ and $W_2$ scaled by $1/\sqrt{2N}$, as GPT-2
# and nanoGPT initialise them, the pre-norm stream and gradient stay near 1.2 and 1.3 at every depth.
#
# **The budget.** $12C^2 + 13C$ per block; with GPT-2 small's embeddings and final LayerNorm it gives
# exactly 124,439,808.
#
# **Next:** Lesson 12 stacks two blocks into a small GPT, trains it in NumPy on sequences that repeat
# themselves, and watches two heads in different layers learn to work together as an induction head.
