# ---
# jupyter:
#   jupytext:
#     formats: 03-parallel-heads//ipynb,py:percent
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
# # Lesson 3: Splitting into heads, attending in parallel, concatenating
#
# In Lesson 1 you computed attention for one head: one query matrix, one key matrix, one value
# matrix, one $(T, T)$ table of weights. A transformer layer runs $h$ of these heads side by side.
# It projects the input $X$ of shape `(B, T, C)` to queries, keys and values of the full width
# $C$, carves that width into $h$ heads of size $hs = C / h$, runs attention in every head at
# once, glues the heads' outputs back together and passes them through an output projection
# $W_o$.
#
# This lesson builds that layer from its pieces, and you write it: first the split of the width
# into heads, then the whole forward pass, `multi_head_attention_forward`, the function every
# block of a GPT calls.
#
# The idea to hold onto: **"multi-head" does not mean a loop over heads.** After the split, the
# head axis is one more leading axis, and NumPy's `@` treats it exactly like the batch axis, so
# one matrix multiplication computes every head's scores in every batch element.
#
# **What you'll do**
# - split `(B, T, C)` into `(B, h, T, hs)` with a reshape and a transpose, and draw which
#   features go to which head;
# - write `split_heads(x, h)` (graded);
# - run Lesson 1's `attention` over all $h$ heads at once, unchanged, on 4-D arrays;
# - draw every head's $(T, T)$ attention pattern as a heatmap;
# - concatenate the heads with a transpose and a reshape, and watch what breaks without the transpose;
# - write `multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h)` (graded) and walk its shapes;
# - measure the batched layer against a loop over heads, and check that the transposes copy nothing;
# - sweep the head count at fixed width, with the same weights, and measure the spread of the scores (graded).
#
# **What you'll learn**
# - which of the $C$ features each head owns, and the shape after every step of the split;
# - the shape of every intermediate: scores `(B, h, T, T)`, per-head output `(B, h, T, hs)`, concat `(B, T, C)`;
# - why the split and the concatenation move no numbers and compute nothing;
# - that the output is a sum of one term per head, one for each block of rows of $W_o$;
# - why the scale is $\sqrt{hs}$: it keeps every head's scores equally spread, whatever the head count.
#
# **What you'll need**
# - single-head attention (Lesson 1) and the $\sqrt{d_k}$ scaling (Lesson 2);
# - NumPy `reshape`, `transpose` and broadcasting over leading axes.
#
# Two graded exercises sit in the lesson, where their ideas are taught, and two practice
# exercises (three functions) close it. Their visible checks run as you work; hidden tests with
# fresh inputs run when your notebook is graded.

# %%
import time
import tracemalloc

import matplotlib.pyplot as plt
import numpy as np

from lesson_helpers import demo_size, full_demos, tidy_figures  # the course's helpers for demonstrations

tidy_figures()  # labels and colourbars placed without overlap

# %% [markdown]
# ## 1. Splitting the width into heads
#
# The three projections work on the full width, exactly as in Lesson 1:
#
# $$Q = X W_q, \qquad K = X W_k, \qquad V = X W_v, \qquad X, Q, K, V \in \mathbb{R}^{B \times T \times C}.$$
#
# Each of the $C$ features of $Q$ (and of $K$ and $V$) belongs to exactly one head. Head $i$ owns
# the $hs$ consecutive features $i \cdot hs$ to $(i+1) \cdot hs - 1$:
#
# $$Q_i = Q[\,:, :, \; i \cdot hs : (i+1) \cdot hs\,] \in \mathbb{R}^{B \times T \times hs}, \qquad i = 0, \dots, h-1 .$$
#
# Instead of slicing $h$ times, two array operations rearrange all heads at once:
#
# 1. **Reshape** `(B, T, C)` to `(B, T, h, hs)`. `reshape` reads the numbers in memory order and
#    only changes how they are indexed: the last axis of length $C$ becomes two axes $(h, hs)$,
#    so entry `[b, t, i, a]` is feature $i \cdot hs + a$ of position $t$. No number moves.
# 2. **Transpose** `(B, T, h, hs)` to `(B, h, T, hs)` with `.transpose(0, 2, 1, 3)`, which swaps
#    the position and head axes. Now `[b, i]` is head $i$'s whole `(T, hs)` matrix: all $T$
#    positions, its own $hs$ features. A transpose changes only the strides (the steps through
#    memory), so it returns a view and copies nothing either.
#
# To see where every number goes, take a tiny example whose entries say where they came from:
# one sequence ($B = 1$) of $T = 3$ positions, width $C = 8$, $h = 4$ heads of $hs = 2$. Entry
# $(t, c)$ holds the number $10t + c$, so `21` is feature 1 of position 2.

# %%
T_toy, C_toy, h_toy = 3, 8, 4
hs_toy = C_toy // h_toy  # head size 2
toy = (10 * np.arange(T_toy)[:, None] + np.arange(C_toy)[None, :])[None]  # (1, T, C): entry 10*t + c

toy_4d = toy.reshape(1, T_toy, h_toy, hs_toy)  # (B, T, C) -> (B, T, h, hs)
toy_heads = toy_4d.transpose(0, 2, 1, 3)  # (B, T, h, hs) -> (B, h, T, hs)
print("x             :", toy.shape, "(B, T, C)")
print("after reshape :", toy_4d.shape, "(B, T, h, hs)")
print("after transpose:", toy_heads.shape, "(B, h, T, hs)")
print("position 2 of x:", toy[0, 2])
print("position 2 after the reshape, one row per head:")
print(toy_4d[0, 2])
print("head 1 after the transpose, features 2 and 3 at every position:")
print(toy_heads[0, 1])
print("reshape and transpose are views of x's memory (no copy):",
      np.shares_memory(toy_4d, toy), np.shares_memory(toy_heads, toy))

# %% [markdown]
# After the reshape, position 2's eight features sit in four rows of two, one row per head. After
# the transpose, head 1 is a `(3, 2)` matrix holding features 2 and 3 of positions 0, 1 and 2.
#
# The same picture for every head, with each number coloured by the head that owns its feature.
# The bottom row is a common mistake: reshaping straight to `(B, h, T, hs)`, without the
# transpose. It has the right shape, and `reshape` accepts it, because the element count is the
# same.

# %%
toy_wrong = toy.reshape(1, h_toy, T_toy, hs_toy)  # (B, T, C) -> (B, h, T, hs) directly: legal, but wrong
owner_cmap = plt.colormaps["tab10"].resampled(h_toy)  # one colour per head


def draw_values(ax, values, title, xlabel, ylabel):
    """Show an integer table, each cell coloured by the head that owns its feature (value % 10 // hs)."""
    image = ax.imshow(values % 10 // hs_toy, cmap=owner_cmap, vmin=-0.5, vmax=h_toy - 0.5)
    if full_demos():  # each cell's number
        for (r, c), value in np.ndenumerate(values):
            ax.text(c, r, f"{value:02d}", ha="center", va="center", fontsize=10, color="white")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_xticks(range(values.shape[1]))
    ax.set_yticks(range(values.shape[0]))
    return image


fig = plt.figure(figsize=(12, 8.2))
grid = fig.add_gridspec(3, h_toy, height_ratios=[1.0, 1.0, 1.0])
image = draw_values(fig.add_subplot(grid[0, :]), toy[0], "x, shape (T, C) = (3, 8): entry 10*t + c",
                    "feature c", "position t")
for i in range(h_toy):
    draw_values(fig.add_subplot(grid[1, i]), toy_heads[0, i], f"reshape + transpose: head {i}",
                "feature within the head", "position t" if i == 0 else "")
    draw_values(fig.add_subplot(grid[2, i]), toy_wrong[0, i], f"reshape only (wrong): head {i}",
                "feature within the head", "row of the head's matrix" if i == 0 else "")
fig.colorbar(image, ax=fig.axes, ticks=range(h_toy), shrink=0.6, label="head that owns the feature (c // hs)")
fig.suptitle("Splitting C = 8 features into h = 4 heads of hs = 2 (B = 1, T = 3)")
plt.show()

# %% [markdown]
# *Figure: top, the `(T, C)` input, each column coloured by the head that owns that feature: four
# bands of two columns. Middle, the correct split: each head's `(T, hs)` matrix is a single colour
# (only its own features) and row $t$ is position $t$ (the tens digit). Bottom, reshape without
# transpose: head 0's rows are features 0 to 5 of position 0, so its "positions" are pieces of one
# token; every other head mixes the features of several heads, and heads 1 and 2 also mix
# positions.*
#
# The wrong split gives no error. Check it against the correct one:

# %%
print("same shape as the correct split: ", toy_wrong.shape == toy_heads.shape)
print("same values as the correct split:", np.array_equal(toy_wrong, toy_heads))
print("wrong head 0, row 1:", toy_wrong[0, 0, 1], "= features 2 and 3 of position 0, not position 1")

# %% [markdown]
# ### The lesson's batch
#
# From here on the lesson works on a real batch: two sequences ($B = 2$) of six positions
# ($T = 6$), width $C = 64$, $h = 4$ heads of size $hs = 16$. Everything is drawn from
# `np.random.default_rng(42)`, in the order below, so the run is reproducible to the last digit.
# The projections are initialised at scale 0.2 rather than the 0.02 used in real training, so
# that the attention weights come out visibly different from uniform.

# %%
rng = np.random.default_rng(42)
B, T, C, h = 2, 6, 64, 4
hs = C // h  # head size, 16

X = rng.standard_normal((B, T, C))  # unit-scale inputs, (B, T, C)
Wq = rng.standard_normal((C, C)) * 0.2  # 0.2 init so attention differentiates
Wk = rng.standard_normal((C, C)) * 0.2
Wv = rng.standard_normal((C, C)) * 0.2
Wo = rng.standard_normal((C, C)) * 0.2
print("X:", X.shape, " Wq, Wk, Wv, Wo:", Wq.shape, "each")

# %% [markdown]
# ### Exercise 1: split the width into heads (3 points)
#
# Write `split_heads(x, h)`: given an array `x` of shape `(B, T, C)` and a head count `h` that
# divides `C`, return the array of shape `(B, h, T, hs)`, $hs = C / h$, whose `[b, i]` entry is
# head $i$'s `(T, hs)` matrix: columns `i*hs` to `(i+1)*hs` of `x[b]`. Use a reshape and a
# transpose, no loop. Do not modify `x` (returning a view of it is fine).

# %% nbgrader={"grade": false, "grade_id": "split_heads", "locked": false, "schema_version": 3, "solution": true, "task": false}
def split_heads(x, h):
    """Split the last axis into h heads: x (B, T, C) -> (B, h, T, hs), hs = C // h."""
    ### BEGIN SOLUTION
    B, T, C = x.shape
    return x.reshape(B, T, h, C // h).swapaxes(1, 2)  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs), a view
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_split_heads", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_split_heads(x, h):
    """Visible check with a hint for the usual mistakes."""
    B, T, C = x.shape
    hs = C // h
    before = x.copy()
    got = split_heads(x, h)
    assert isinstance(got, np.ndarray), f"split_heads should return a NumPy array, got {type(got).__name__}"
    assert np.array_equal(x, before), "split_heads modified its input: reshape and transpose never need to"
    if got.shape == (B, T, h, hs) and (B, T, h, hs) != (B, h, T, hs):
        raise AssertionError(f"got shape (B, T, h, hs) = {got.shape}: you reshaped but did not transpose; "
                             "move the head axis in front of T with .transpose(0, 2, 1, 3)")
    assert got.shape == (B, h, T, hs), f"expected shape (B, h, T, hs) = {(B, h, T, hs)}, got {got.shape}"
    picks = np.random.default_rng(0).integers(0, [B, h, T, hs], size=(12, 4))  # a dozen entries (b, i, t, j)
    if all(got[b, i, t, j] == x[b, t, i * hs + j] for b, i, t, j in picks):  # head i, feature j is column i*hs + j
        return
    if np.array_equal(got, x.reshape(B, h, T, hs)):
        raise AssertionError("the shape is right but the heads hold the wrong numbers: you reshaped straight "
                             "to (B, h, T, hs), which mixes positions; reshape to (B, T, h, hs), then transpose")
    if np.array_equal(got, x.reshape(B, T, hs, h).transpose(0, 3, 1, 2)):
        raise AssertionError("the heads' features are interleaved: head i owns the consecutive columns "
                             "i*hs:(i+1)*hs, so split the last axis as (h, hs), not (hs, h)")
    raise AssertionError("head i should hold columns i*hs:(i+1)*hs of x, at every position, in order")


check_split_heads(toy, h_toy)  # the (1, 3, 8) example of the figure
# Worked by hand from the figure: entry 10*t + c, so head 1 holds columns 2, 3 and head 3 columns 6, 7.
assert np.array_equal(split_heads(toy, h_toy)[0, 1], [[2, 3], [12, 13], [22, 23]]), (
    "head 1 of the (1, 3, 8) example should hold columns 2 and 3 at every position: [[2, 3], [12, 13], [22, 23]]")
assert np.array_equal(split_heads(toy, h_toy)[0, 3], [[6, 7], [16, 17], [26, 27]]), (
    "head 3 of the (1, 3, 8) example should hold columns 6 and 7 at every position: [[6, 7], [16, 17], [26, 27]]")
check_split_heads(X @ Wq, h)  # the lesson's queries, (2, 6, 64) into 4 heads
check_split_heads(np.random.default_rng(1).standard_normal((3, 5, 12)), 1)  # one head: hs = C
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# With your function, split the lesson's projections. Head $i$ of the split should be exactly the
# slice $Q_i$ of the equation above, for every head:

# %%
Q = split_heads(X @ Wq, h)  # (B, T, C) @ (C, C) -> (B, T, C) -> (B, h, T, hs)
K = split_heads(X @ Wk, h)  # (B, h, T, hs)
V = split_heads(X @ Wv, h)  # (B, h, T, hs)
print("Q, K, V:", Q.shape, K.shape, V.shape, "(B, h, T, hs)")
print("Q[:, i] equals (X @ Wq)[:, :, i*hs:(i+1)*hs] for i = 0..3:",
      [np.array_equal(Q[:, i], (X @ Wq)[:, :, i * hs:(i + 1) * hs]) for i in range(h)])  # inspection only

# %% [markdown]
# ## 2. Attention over the head axis
#
# For one head with $Q_i, K_i, V_i$ of shape `(T, hs)`, scaled dot-product attention is
#
# $$\text{head}_i = \text{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{hs}}\right) V_i .$$
#
# The scale is Lesson 2's $\sqrt{d_k}$, and here $d_k = hs$: each score is a dot product of two
# $hs$-vectors, not of two $C$-vectors.
#
# After the split, $Q$, $K$ and $V$ carry two leading axes: they are `(B, h, T, hs)`. The formula
# does not change. `np.matmul` (the `@` operator) treats every axis except the last two as a batch
# axis, so a matmul between `(B, h, T, hs)` and `(B, h, hs, T)` runs an independent
# `(T, hs) @ (hs, T)` product for each of the $B \times h$ (batch, head) pairs and returns
# `(B, h, T, T)`.
#
# The transpose $K^\top$ must swap only the last two axes. That is what Lesson 1's `attention`
# already does: it forms $K^\top$ with `np.swapaxes(K, -2, -1)`, whatever the number of leading
# axes, and its softmax runs over the last axis. So Lesson 1's function works on the 4-D head
# layout unchanged. Here it is again, with the stable softmax it calls (subtracting each row's
# maximum $m$ changes nothing mathematically and keeps `np.exp` from overflowing):
#
# $$\text{softmax}(x)_j = \frac{e^{x_j - m}}{\sum_k e^{x_k - m}}, \qquad m = \max_k x_k .$$

# %%
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    x = x - x.max(axis=axis, keepdims=True)  # subtract the row max for stability
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V):
    """Lesson 1's unscaled attention. Q, K: (..., T, d_k); V: (..., T, d_v) -> (out, weights)."""
    scores = Q @ np.swapaxes(K, -2, -1)  # (..., T, d_k) @ (..., d_k, T) -> (..., T, T)
    weights = softmax(scores, axis=-1)  # (..., T, T), normalised over the keys
    return weights @ V, weights  # (..., T, T) @ (..., T, d_v) -> (..., T, d_v)


# %% [markdown]
# Lesson 1's `attention` has no scale. Since $(Q_i / \sqrt{hs})\, K_i^\top = Q_i K_i^\top / \sqrt{hs}$,
# passing `Q / np.sqrt(hs)` gives scaled attention. One call now attends in all $2 \times 4 = 8$
# (batch, head) pairs:

# %%
per_head, weights = attention(Q / np.sqrt(hs), K, V)  # (B, h, T, hs) each -> (B, h, T, hs), (B, h, T, T)
print("K^T      :", np.swapaxes(K, -2, -1).shape, "(B, h, hs, T)")
print("weights  :", weights.shape, "(B, h, T, T)")
print("per_head :", per_head.shape, "(B, h, T, hs)")
rowsums = weights.sum(axis=-1)  # (B, h, T)
print("all 2 * 4 * 6 = 48 attention rows sum to 1:", np.allclose(rowsums, 1.0))

# One (batch, head) pair on its own, with plain 2-D arrays: batch 1, head 2.
q, k, v = Q[1, 2], K[1, 2], V[1, 2]  # (T, hs) each
w_alone = softmax(q @ k.T / np.sqrt(hs), axis=-1)  # (T, hs) @ (hs, T) -> (T, T)
print("slice [1, 2] equals the single-head computation:",
      np.allclose(weights[1, 2], w_alone), np.allclose(per_head[1, 2], w_alone @ v))  # (T, T) @ (T, hs)

# %% [markdown]
# The batched call and the single-head computation agree: the head axis is just another batch
# axis, and nothing in the attention code knows that heads exist.
#
# ## 3. Reading the heads
#
# The point of several heads is that they attend differently. Here are the weights of heads 0
# and 1 for the first sequence in the batch, rounded to three decimals. Row $i$ is query position
# $i$; column $j$ is how much of its attention goes to key position $j$.

# %%
print("batch 0, head 0 weights (each row sums to 1):")
print(np.round(weights[0, 0], 3))
print("batch 0, head 1 weights (a different pattern, same positions):")
print(np.round(weights[0, 1], 3))


# %% [markdown]
# In head 0, position 0 puts 0.972 of its attention on position 3. In head 1 the same position
# splits its attention between position 5 (0.519) and itself (0.282). Same six inputs, two
# different lenses: each head has its own columns of $W_q$ and $W_k$, so each asks a different
# question.
#
# Tables of numbers are hard to compare, so the rest of the course draws every $(T, T)$ matrix
# as a heatmap. The helper below draws one panel per head.

# %%
def plot_attention_heads(weights, title):
    """Heatmaps of attention weights, one panel per head. weights: (h, T, T)."""
    n_heads, n_queries, n_keys = weights.shape
    fig, axes = plt.subplots(1, n_heads, figsize=(3.2 * n_heads + 1.2, 4.0))
    axes = np.atleast_1d(axes)
    for i, ax in enumerate(axes):
        image = ax.imshow(weights[i], vmin=0.0, vmax=1.0, cmap="viridis")
        ax.set_title(f"head {i}")
        ax.set_xlabel("key position")
        ax.set_ylabel("query position" if i == 0 else "")
        ax.set_xticks(range(n_keys))
        ax.set_yticks(range(n_queries))
        if n_queries * n_keys <= 64 and full_demos():  # small tables: print the weight in each cell
            for q in range(n_queries):
                for k in range(n_keys):
                    value = weights[i, q, k]
                    ax.text(k, q, f"{value:.2f}", ha="center", va="center", fontsize=7,
                            color="black" if value > 0.5 else "white")
    fig.colorbar(image, ax=axes, shrink=0.85, label="attention weight")
    fig.suptitle(title)
    plt.show()


plot_attention_heads(weights[0], "Attention weights of all 4 heads, batch element 0 (B=2, T=6, C=64, h=4)")

# %% [markdown]
# *Figure: each panel is one head's `(T, T)` weight matrix for the first sequence. Rows are query
# positions, columns key positions, and every row sums to 1. Head 0's rows 0 and 2 are almost
# one-hot on key 3; heads 1 to 3 spread their attention in other ways over the same six positions.*

# %% [markdown]
# ## 4. Concatenating the heads back
#
# Each head's output is `(B, h, T, hs)`: for every position, a small $hs$-dimensional summary of
# what that head looked at. The rest of the network expects `(B, T, C)`. The concatenation
#
# $$\text{Concat}(\text{head}_0, \dots, \text{head}_{h-1}) \in \mathbb{R}^{B \times T \times C}$$
#
# is the split run backwards. The split went `(B, T, C)` to `(B, T, h, hs)` to `(B, h, T, hs)`;
# the concat undoes the two steps in reverse order:
#
# - `per_head.transpose(0, 2, 1, 3)` moves the head axis back next to the head-size axis:
#   `(B, h, T, hs)` to `(B, T, h, hs)`;
# - `.reshape(B, T, C)` merges the last two axes, $h$ and $hs$, into one axis of size $h \cdot hs = C$.
#
# No arithmetic happens: the first $hs$ entries of each position's concatenated vector are head 0's
# output, the next $hs$ are head 1's, and so on. Check it, byte for byte, for every head, and
# compare with gluing the $h$ blocks side by side with `np.concatenate`:

# %%
concat = per_head.transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
block_is_head = [np.array_equal(concat[:, :, i * hs:(i + 1) * hs], per_head[:, i, :, :]) for i in range(h)]
print("concat:", concat.shape, "(B, T, C)")
print("concat block i is exactly head i's output, for i = 0..3:", block_is_head)
print("concat[0, 0, :4]   (start of head 0):", np.round(concat[0, 0, :4], 4))
print("per_head[0,0,0,:4] (head 0, pos 0)  :", np.round(per_head[0, 0, 0, :4], 4))
glued = np.concatenate(per_head.transpose(1, 0, 2, 3), axis=-1)  # h blocks (B, T, hs) side by side -> (B, T, C)
print("equals np.concatenate of the h blocks:", np.array_equal(glued, concat))

# %% [markdown]
# `np.array_equal` asks for exact equality, not closeness: the concat copies numbers, it does not
# compute them. (The comprehension above loops over heads only to *inspect* the blocks; the layer
# itself never loops.)
#
# ### The silent scramble: reshaping without transposing
#
# The transpose is easy to forget here too, and forgetting it raises no error.
# `per_head.reshape(B, T, C)` is a perfectly legal reshape: it has the right number of elements and
# returns the right shape. But `reshape` reads memory in order, and in `(B, h, T, hs)` memory the
# $hs$-vectors of **one head at consecutive positions** sit next to each other. So position 0's
# "concatenated" vector becomes head 0 at positions 0, 1, 2 and 3, glued together.

# %%
scrambled = per_head.reshape(B, T, C)  # (B, h, T, hs) -> (B, T, C) with NO transpose: legal, but wrong
print("same shape as the concat?  ", scrambled.shape == concat.shape)
print("same values as the concat? ", np.array_equal(scrambled, concat))
print("scrambled[0, 0, 16:20] is head 0 at position 1:",
      np.array_equal(scrambled[0, 0, 16:20], per_head[0, 0, 1, :4]))

# %% [markdown]
# To see where every number lands, label each entry of a `(h, T, hs)` array with the head and the
# position it came from, and push the labels through both reshapes. In the correct concat, row
# $t$ holds only position $t$, and the heads appear as four bands of 16 columns. In the scrambled
# one, row 0 holds positions 0 to 3 of head 0, and head 3's outputs end up in rows 4 and 5.

# %%
source_head = np.broadcast_to(np.arange(h)[:, None, None], (h, T, hs))  # (h, T, hs): which head
source_pos = np.broadcast_to(np.arange(T)[None, :, None], (h, T, hs))  # (h, T, hs): which position

layouts = {
    "transpose, then reshape (correct)": lambda a: a.transpose(1, 0, 2).reshape(T, C),  # (h, T, hs) -> (T, h, hs) -> (T, C)
    "reshape only (scrambled)": lambda a: a.reshape(T, C),  # (h, T, hs) -> (T, C), memory order
}
fig, axes = plt.subplots(2, 2, figsize=(12, 5.5))
for col, (name, layout) in enumerate(layouts.items()):
    for row, (labels, what, cmap, n) in enumerate([(source_head, "source head", "tab10", h),
                                                   (source_pos, "source position", "viridis", T)]):
        ax = axes[row, col]
        image = ax.imshow(layout(labels), aspect="auto", interpolation="nearest",
                          cmap=plt.colormaps[cmap].resampled(n), vmin=-0.5, vmax=n - 0.5)  # one colour per label
        ax.set_title(f"{name}: {what}")
        ax.set_xlabel("concat column (0 to C-1)")
        ax.set_ylabel("output position")
        ax.set_yticks(range(T))
        fig.colorbar(image, ax=ax, label=what, ticks=range(n))
fig.suptitle("Where each number of the (T, C) concat comes from (T=6, C=64, h=4, hs=16)")
plt.show()

# %% [markdown]
# *Figure: left, the correct concat. Every row is a single position (bottom left panel: constant
# colour per row) and the heads form four column bands (top left). Right, reshape without
# transpose: each row mixes several positions (bottom right), so the vector for position 0 now
# carries information from positions 1, 2 and 3. Every later layer would silently learn from the
# wrong tokens.*

# %% [markdown]
# ## 5. The output projection
#
# The last step multiplies the concat by $W_o$, a learned `(C, C)` matrix:
#
# $$\text{MultiHead}(X) = \text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})\, W_o .$$
#
# Cut the rows of $W_o$ into $h$ blocks $W_o^{(i)}$ of shape `(hs, C)`: rows $i \cdot hs$ to
# $(i+1) \cdot hs - 1$, the rows that multiply head $i$'s columns of the concat. A matrix product
# taken block by block is a sum, one term per head:
#
# $$\text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})\, W_o = \sum_{i=0}^{h-1} \text{head}_i\, W_o^{(i)} .$$

# %%
out = concat @ Wo  # (B, T, C) @ (C, C) -> (B, T, C)
terms = [per_head[:, i] @ Wo[i * hs:(i + 1) * hs] for i in range(h)]  # (B, T, hs) @ (hs, C) -> (B, T, C); a loop to inspect
print("out:", out.shape, "(B, T, C), the shape that went in")
print("out equals the sum of the 4 per-head terms:", np.allclose(out, sum(terms)))
print("Wo has no zero weights:", np.count_nonzero(Wo) == C * C)
print("output dimensions (of 64) that each head's term reaches:",
      [int((terms[i] != 0).any(axis=(0, 1)).sum()) for i in range(h)])

# %% [markdown]
# Two things follow from the sum. Term $i$ is computed from head $i$'s output alone, so what
# head $i$ adds to the output is the same whatever the other heads produced: $W_o$ adds the
# heads' contributions, and never gates or multiplies one head's output by another's. And because
# this $W_o$ has no zero weights, every head's term reaches all 64 output dimensions: each output
# dimension is a weighted sum over all four heads, and each head can write anywhere in the
# output, not only in "its own" 16 columns. Lesson 4 takes $W_o$ apart: what a $W_o$ with zeros
# in it does, and where the heads do meet.

# %% [markdown]
# ## 6. The whole layer
#
# The layer is four steps. With $X$ of shape `(B, T, C)` and four `(C, C)` matrices:
#
# 1. **Project and split.** $Q = X W_q$, $K = X W_k$, $V = X W_v$, each `(B, T, C)`, split into
#    heads: `(B, h, T, hs)`.
# 2. **Attend, all heads at once.** $\text{head}_i = \text{softmax}\!\left(Q_i K_i^\top / \sqrt{hs}\right) V_i$,
#    for every $i$ in one batched computation: weights `(B, h, T, T)`, per-head output `(B, h, T, hs)`.
# 3. **Concatenate.** $\text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})$: `(B, h, T, hs)` to
#    `(B, T, h, hs)` to `(B, T, C)`.
# 4. **Project.** $\text{MultiHead}(X) = \text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})\, W_o$, `(B, T, C)`.
#
# ### Exercise 2: the multi-head attention layer (5 points)
#
# Write `multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h)` for `X` of shape `(B, T, C)`, four
# `(C, C)` matrices and a head count `h` that divides `C`. Return the pair `(out, cache)`: `out`
# is the layer's output, `(B, T, C)`, and `cache` is a dict of the intermediates with exactly
# these keys:
#
# - `"Q"`, `"K"`, `"V"`: the projections split into heads, each `(B, h, T, hs)`, before any scaling;
# - `"weights"`: the attention weights, `(B, h, T, T)`, each row summing to 1;
# - `"per_head"`: every head's output, `(B, h, T, hs)`;
# - `"concat"`: the concatenated heads, `(B, T, C)`.
#
# Use your `split_heads` and the `attention` function of section 2 (or write its three lines
# yourself), and no loop over heads. The test cell runs your layer with a known-good
# `split_heads` in place of yours, so a mistake in Exercise 1 costs points only there.

# %% nbgrader={"grade": false, "grade_id": "multi_head_attention_forward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h):
    """Multi-head self-attention: X (B, T, C) -> (out (B, T, C), cache of intermediates)."""
    ### BEGIN SOLUTION
    B, T, C = X.shape
    hs = C // h  # each head's size; the scale uses it, not C
    Q, K, V = (split_heads(X @ W, h) for W in (Wq, Wk, Wv))  # (B, T, C) @ (C, C) -> (B, T, C) -> (B, h, T, hs)
    per_head, weights = attention(Q / np.sqrt(hs), K, V)  # (B, h, T, hs), (B, h, T, T): every head at once
    concat = per_head.transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
    return concat @ Wo, {"Q": Q, "K": K, "V": V, "weights": weights, "per_head": per_head, "concat": concat}
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_multi_head_attention_forward", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
# Worked by hand: (B, T, C) = (1, 2, 4) holding 0 .. 7, split into h = 2 heads of hs = 2 columns.
_SPLIT_IN = np.arange(8.0).reshape(1, 2, 4)  # rows [0, 1, 2, 3] and [4, 5, 6, 7]
_SPLIT_OUT = np.array([[[[0.0, 1.0], [4.0, 5.0]], [[2.0, 3.0], [6.0, 7.0]]]])  # (1, 2, 2, 2): head 0, head 1


class _SplitReached(Exception):
    pass


def _stop_at_the_split(x, h):
    raise _SplitReached


def _split_heads_works():
    try:
        return np.array_equal(np.asarray(split_heads(_SPLIT_IN.copy(), 2)), _SPLIT_OUT)
    except Exception:  # noqa: BLE001 (any failure of Exercise 1 means: skip, do not fail this cell)
        return False


def check_multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h):
    """Visible check of the properties every layer output has, with a hint for the usual mistakes."""
    B, T, C = X.shape
    hs = C // h
    inputs = [a.copy() for a in (X, Wq, Wk, Wv, Wo)]
    if not _split_heads_works():  # when graded, this exercise is checked with a correct split_heads in place of yours
        students_split = globals().get("split_heads")
        globals()["split_heads"] = _stop_at_the_split
        try:
            multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h)  # a layer not written yet fails the cell here
        except _SplitReached:
            print(f"B={B}, T={T}, C={C}, h={h}: skipped, because your split_heads fails Exercise 1's worked example "
                  "(a (1, 2, 4) array of 0 .. 7 into 2 heads): fix Exercise 1 first, then run this cell again")
            return
        finally:
            globals()["split_heads"] = students_split
    result = multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h)
    assert all(np.array_equal(a, b) for a, b in zip((X, Wq, Wk, Wv, Wo), inputs, strict=True)), (
        "multi_head_attention_forward modified its inputs")
    assert isinstance(result, tuple) and len(result) == 2, "return the pair (out, cache)"
    out, cache = result
    keys = {"Q", "K", "V", "weights", "per_head", "concat"}
    assert isinstance(cache, dict) and set(cache) == keys, (
        f"cache should be a dict with exactly the keys {sorted(keys)}, got "
        f"{sorted(cache) if isinstance(cache, dict) else type(cache).__name__}")

    blocks = [slice(i * hs, (i + 1) * hs) for i in range(h)]  # head i's columns
    for key, W in (("Q", Wq), ("K", Wk), ("V", Wv)):
        got = np.asarray(cache[key])
        assert got.shape == (B, h, T, hs), f'cache["{key}"] should be (B, h, T, hs) = {(B, h, T, hs)}, got {got.shape}'
        for i, s in enumerate(blocks):  # head i of the projection is X times columns i*hs:(i+1)*hs of W
            if not np.allclose(got[:, i], X @ W[:, s]):
                if np.allclose(got[:, i] * np.sqrt(hs), X @ W[:, s]):
                    raise AssertionError(f'cache["{key}"] is scaled: store the projections before dividing by sqrt(hs)')
                raise AssertionError(f'cache["{key}"] should be X @ W{key.lower()} split into heads '
                                     "(head i = columns i*hs:(i+1)*hs)")
    weights = np.asarray(cache["weights"])
    assert weights.shape == (B, h, T, T), f'cache["weights"] should be (B, h, T, T) = {(B, h, T, T)}, got {weights.shape}'
    assert np.all(weights >= 0) and np.allclose(weights.sum(axis=-1), 1), (
        "every row of the weights should sum to 1: the softmax runs over the last axis, the keys")
    per_head = np.asarray(cache["per_head"])
    assert per_head.shape == (B, h, T, hs) and np.allclose(per_head, weights @ np.asarray(cache["V"])), (
        'cache["per_head"] should be weights @ V, shape (B, h, T, hs)')
    concat = np.asarray(cache["concat"])
    assert concat.shape == (B, T, C), f'cache["concat"] should be (B, T, C) = {(B, T, C)}, got {concat.shape}'
    if not all(np.allclose(concat[..., s], per_head[:, i]) for i, s in enumerate(blocks)):
        if h > 1 and T > 1 and np.allclose(concat, per_head.reshape(B, T, C)):
            raise AssertionError("the concat is scrambled: transpose (B, h, T, hs) to (B, T, h, hs) before the reshape")
        raise AssertionError('cache["concat"]: columns i*hs:(i+1)*hs must be head i\'s output')
    out = np.asarray(out)
    assert out.shape == (B, T, C), f"out should be (B, T, C) = {(B, T, C)}, got {out.shape}"
    if np.allclose(out, concat) and not np.allclose(concat, concat @ Wo):
        raise AssertionError("out is the concat itself: multiply it by Wo")
    assert np.allclose(out, concat @ Wo), "out should be concat @ Wo"


# Worked by hand: B = 1, T = 2, C = 8, h = 2 heads of hs = 4. Wq and Wk read column 0 only, so the one
# nonzero score is query 0 . key 0 in head 0: 2 ln 3, scaled by sqrt(hs) = 2 to ln 3, and
# softmax([ln 3, 0]) = [3/4, 1/4]. Every other row of scores is 0, so its weights are [1/2, 1/2].
_X = np.array([[[1.0, 0, 0, 0, 2, 0, 0, 0], [0, 4, 0, 0, 0, 0, 6, 0]]])  # (1, 2, 8)
_Wq = np.zeros((8, 8))
_Wq[0, 0] = 2 * np.log(3)
_Wk = np.zeros((8, 8))
_Wk[0, 0] = 1.0
_HAND_WEIGHTS = np.array([[[[0.75, 0.25], [0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]]]])  # (1, h, T, T)
_HAND_CONCAT = np.array([[[0.75, 1, 0, 0, 1, 0, 3, 0], [0.5, 2, 0, 0, 1, 0, 3, 0]]])  # (1, T, C), with Wv = I
_X_HEADS = np.array([[[[1.0, 0, 0, 0], [0, 4, 0, 0]], [[2.0, 0, 0, 0], [0, 0, 6, 0]]]])  # _X split into 2 heads
try:  # the worked example needs your split_heads to split it right too; if not, fix Exercise 1 first
    _split_ok = _split_heads_works() and np.array_equal(np.asarray(split_heads(_X.copy(), 2)), _X_HEADS)
except Exception:  # noqa: BLE001 (any failure of Exercise 1 means: skip, do not fail this cell)
    _split_ok = False
if _split_ok:
    check_multi_head_attention_forward(_X, _Wq, _Wk, np.eye(8), 2 * np.eye(8), 2)
    _out, _cache = multi_head_attention_forward(_X, _Wq, _Wk, np.eye(8), 2 * np.eye(8), 2)
    _w = np.asarray(_cache["weights"])
    _wrong = _w.shape == (1, 2, 2, 2) and not np.allclose(_w, _HAND_WEIGHTS)
    if _wrong and np.allclose(_w[0, 0, 0], [0.9, 0.1]):
        raise AssertionError("the weights are unscaled (row 0 of head 0 is [0.9, 0.1], softmax([2 ln 3, 0])): "
                             "divide the scores by sqrt(hs), the head size")
    if _wrong and np.allclose(_w[0, 0, 0, 0], 3 ** 0.5 / (3 ** 0.5 + 1)):
        raise AssertionError("you divided the scores by hs; divide by sqrt(hs)")
    if _wrong and np.allclose(_w[0, 0, 0, 0], 3 ** (1 / 2 ** 0.5) / (3 ** (1 / 2 ** 0.5) + 1)):
        raise AssertionError("you scaled the scores by sqrt(C); each head's dot products have hs = C // h "
                             "terms, so divide by sqrt(hs)")
    assert np.allclose(_w, _HAND_WEIGHTS), (
        f"the worked example's weights should be {_HAND_WEIGHTS.tolist()}: softmax(Q_i K_i^T / sqrt(hs)) over the "
        "keys, for every head")
    assert np.allclose(_cache["concat"], _HAND_CONCAT), f"the worked example's concat should be {_HAND_CONCAT.tolist()}"
    assert np.allclose(_out, 2 * _HAND_CONCAT), "with Wo = 2 I, out should be twice the concat"


_rng = np.random.default_rng(42)  # the lesson's batch, drawn again here
_X = _rng.standard_normal((2, 6, 64))
_Wq, _Wk, _Wv, _Wo = (_rng.standard_normal((64, 64)) * 0.2 for _ in range(4))
check_multi_head_attention_forward(_X, _Wq, _Wk, _Wv, _Wo, 4)
_rng = np.random.default_rng(3)
check_multi_head_attention_forward(_rng.standard_normal((3, 5, 12)), *(_rng.standard_normal((12, 12)) for _ in range(4)), 3)
check_multi_head_attention_forward(_rng.standard_normal((1, 4, 8)), *(_rng.standard_normal((8, 8)) for _ in range(4)), 1)
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### The shape walk
#
# Run your layer on the lesson's batch and trace every intermediate against the pipeline. It
# should reproduce, number for number, what sections 1 to 5 computed one step at a time.

# %%
out_layer, cache = multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h)

print("config: B=%d, T=%d, C=%d, h=%d, hs=%d" % (B, T, C, h, hs))
print("X                :", X.shape)
print("Q/K/V per head   :", cache["Q"].shape, "(B, h, T, hs)")
print("weights          :", cache["weights"].shape, "(B, h, T, T)")
print("per-head output  :", cache["per_head"].shape, "(B, h, T, hs)")
print("concat           :", cache["concat"].shape, "(B, T, C)")
print("final out        :", out_layer.shape, "(B, T, C)")
print("same weights, concat and output as sections 2 to 5:", np.allclose(cache["weights"], weights),
      np.allclose(cache["concat"], concat), np.allclose(out_layer, out))

# %% [markdown]
# $X$ came in at `(2, 6, 64)`. After project-and-split, each of $Q, K, V$ is `(2, 4, 6, 16)`: one
# `(6, 16)` matrix per (batch, head) pair. The weights are `(2, 4, 6, 6)`, a full 6-by-6 table per
# head; the per-head outputs are `(2, 4, 6, 16)`, the concat stacks them back to `(2, 6, 64)`, and
# $W_o$ returns `(2, 6, 64)`: the shape that went in. Because the layer preserves shape, layers can
# be stacked.

# %% [markdown]
# ## 7. Why the layer never loops over heads
#
# You could compute the same layer with a Python loop: slice head $i$'s columns of the
# projections, run single-head attention, collect the outputs, concatenate. The result is
# identical. This course always uses the batched form instead, for two reasons:
#
# - **It is the formula.** One computation over a `(B, h, T, hs)` array is the equation above with
#   $h$ as a batch axis. There is no slice arithmetic (`i * hs:(i + 1) * hs`) to get wrong, and the
#   same code runs for any $h$.
# - **It is the layout of real implementations.** Lesson 5 writes the same layer as a PyTorch
#   module, with the same `(B, h, T, hs)` layout.
#
# Speed in NumPy on a CPU is *not* one of the reasons, and it is worth measuring rather than
# assuming. Two facts first, each checked below.
#
# **The transposes copy nothing.** `split_heads` and `np.swapaxes` return views: new strides over
# the same memory. `@` accepts such strided views as they are. `tracemalloc`, from Python's
# standard library, records every block of memory that NumPy allocates, so it can tell whether
# `Q @ K^T` copies its transposed operands: a copy of $K^\top$ would show up as one more array of
# $K$'s size. The arrays below are of a medium size, so that small unrelated allocations are
# negligible next to them.

# %%
mem_rng = np.random.default_rng(0)
mB, mT, mC, mh = 4, 128, 256, 8
Q_mem = mem_rng.standard_normal((mB, mT, mC)).reshape(mB, mT, mh, mC // mh).transpose(0, 2, 1, 3)  # (B, h, T, hs), a view
K_mem = mem_rng.standard_normal((mB, mT, mC)).reshape(mB, mT, mh, mC // mh).transpose(0, 2, 1, 3)  # (B, h, T, hs), a view
K_mem_T = np.swapaxes(K_mem, -2, -1)  # (B, h, hs, T), a view
print("Q and K^T are non-contiguous views:", not Q_mem.flags.c_contiguous, not K_mem_T.flags.c_contiguous)

tracemalloc.start()
scores_mem = Q_mem @ K_mem_T  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
_, peak_product = tracemalloc.get_traced_memory()
tracemalloc.stop()

tracemalloc.start()
K_mem_T_copy = np.ascontiguousarray(K_mem_T)  # what copying K^T costs, for comparison
_, peak_copy = tracemalloc.get_traced_memory()
tracemalloc.stop()

print(f"result {scores_mem.shape}: {scores_mem.nbytes // 1024} KiB;  one copy of K^T {K_mem_T.shape}: "
      f"{K_mem_T.nbytes // 1024} KiB")
print(f"copying K^T: peak allocation = {peak_copy / K_mem_T.nbytes:.1f} x the size of K^T (tracemalloc sees copies)")
print(f"Q @ K^T:     peak allocation = {peak_product / scores_mem.nbytes:.1f} x the size of the result")
print("Q @ K^T allocated its result and less than a tenth of one copy of K^T besides:",
      peak_product - scores_mem.nbytes < 0.1 * K_mem_T.nbytes)

# %% [markdown]
# The product allocated its result and, besides it, only a few small blocks, far less than one
# copy of $K^\top$: the strided views were read in place.
#
# **The loop does the same products.** Below is the loop version, built on Lesson 1's
# `attention` with 3-D arrays, for a layer that stores its weights per head, as some
# implementations do: head $i$ has its own $W_q^{(i)}, W_k^{(i)}, W_v^{(i)}$ of shape `(C, hs)`
# and its own share $W_o^{(i)}$ of the output projection, `(hs, C)`. Stacked, the per-head
# weights are `(h, C, hs)` and `(h, hs, C)`. Head $i$'s output, multiplied by its share, is its
# contribution to the layer's output, and the layer's output is the sum of the $h$ contributions
# (Lesson 4 looks at these contributions closely):
#
# $$\text{out} = \sum_{i=1}^{h} \text{head}_i \, W_o^{(i)}, \qquad
# \text{head}_i = \text{Attention}(X W_q^{(i)}, X W_k^{(i)}, X W_v^{(i)}) .$$
#
# Put side by side, the per-head query weights are one `(C, C)` matrix (head $i$'s in columns
# $i \cdot hs$ to $(i+1) \cdot hs - 1$), and the shares of $W_o$ stacked on top of each other are
# one `(C, C)` matrix: the batched layer with those four matrices is the same layer. The batched
# layer makes one call of `@` for the scores, with leading axes $(B, h)$: $B \cdot h$ products of
# `(T, hs) @ (hs, T)`. The loop makes $h$ calls, each with leading axis $B$: $h \cdot B$ products
# of the same `(T, hs) @ (hs, T)` shape.

# %%
def multi_head_attention_loop(X, Wq_heads, Wk_heads, Wv_heads, Wo_heads):
    """The layer with weights stored per head, with a Python loop over heads: for comparison only.

    X (B, T, C); Wq_heads, Wk_heads, Wv_heads (h, C, hs); Wo_heads (h, hs, C) -> (B, T, C).
    """
    h, C, hs = Wq_heads.shape
    out = np.zeros(X.shape)  # (B, T, C): the sum of the heads' contributions
    for i in range(h):
        q, k, v = X @ Wq_heads[i], X @ Wk_heads[i], X @ Wv_heads[i]  # (B, T, C) @ (C, hs) -> (B, T, hs)
        head, _ = attention(q / np.sqrt(hs), k, v)  # (B, T, hs), from B products (T, hs) @ (hs, T)
        out += head @ Wo_heads[i]  # (B, T, hs) @ (hs, C) -> (B, T, C): head i's contribution
    return out


def side_by_side(Wq_heads, Wk_heads, Wv_heads, Wo_heads):
    """The four (C, C) weights of the batched layer: the per-head input weights side by side, the shares of Wo stacked."""
    return (np.concatenate(list(Wq_heads), axis=1), np.concatenate(list(Wk_heads), axis=1),  # h x (C, hs) -> (C, C)
            np.concatenate(list(Wv_heads), axis=1), np.concatenate(list(Wo_heads), axis=0))  # h x (hs, C) -> (C, C)


def best_time(fn, repeats=5):
    """Fastest of `repeats` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


loop_rng = np.random.default_rng(5)
W_heads = [loop_rng.standard_normal((h, C, hs)) / np.sqrt(C) for _ in range(3)]  # Wq, Wk, Wv per head: (h, C, hs)
Wo_heads = loop_rng.standard_normal((h, hs, C)) / np.sqrt(C)  # the shares of Wo: (h, hs, C)
out_loop = multi_head_attention_loop(X, *W_heads, Wo_heads)  # (B, T, C)
out_batched, _ = multi_head_attention_forward(X, *side_by_side(*W_heads, Wo_heads), h)  # (B, T, C)
q0 = X @ W_heads[0][0]  # head 0's queries in the loop, (B, T, hs)
print("batched: 1 call ", Q.shape, "@", np.swapaxes(K, -2, -1).shape, "->", B * h, "products (T, hs) @ (hs, T)")
print(f"loop:    {h} calls", q0.shape, "@", np.swapaxes(q0, -2, -1).shape, "->", h, "x", B, "=", h * B,
      "products (T, hs) @ (hs, T)")
print("loop and batched layers agree:", np.allclose(out_loop, out_batched))

# %% [markdown]
# So the two versions do the same arithmetic on the same numbers (the loop also cuts each
# projection into $h$ narrower products of the same total size). What differs is the work around
# the arithmetic: the loop body runs once per head, so the loop makes about $h$ times as
# many NumPy calls, and every NumPy call has a fixed cost, whatever the size of its arrays. The
# cell below times both versions at a tiny and a medium size, and one NumPy call on a tiny array
# for scale. Timings change from run to run and machine to machine.

# %%
# NBVAL_IGNORE_OUTPUT
timing_rng = np.random.default_rng(7)
repeats = demo_size(full=7, small=3)
for name, (tB, tT, tC, th) in [("tiny", (2, 6, 64, 4)), ("medium", (2, 128, 128, 4))]:
    tX = timing_rng.standard_normal((tB, tT, tC))
    tW_heads = [timing_rng.standard_normal((th, tC, tC // th)) * 0.02 for _ in range(3)]  # (h, C, hs) each
    tWo_heads = timing_rng.standard_normal((th, tC // th, tC)) * 0.02  # (h, hs, C)
    tW = side_by_side(*tW_heads, tWo_heads)  # the same layer's four (C, C) weights
    t_loop = best_time(lambda: multi_head_attention_loop(tX, *tW_heads, tWo_heads), repeats)
    t_batch = best_time(lambda: multi_head_attention_forward(tX, *tW, th), repeats)
    print(f"{name:6s} B={tB}, T={tT:3d}, C={tC:3d}, h={th}:  loop {t_loop * 1e3:8.3f} ms   "
          f"batched {t_batch * 1e3:8.3f} ms   loop / batched = {t_loop / t_batch:4.2f}x")
tiny = np.ones((2, 6, 6))
print(f"one NumPy call on a tiny (2, 6, 6) array (np.exp): {best_time(lambda: np.exp(tiny), 50) * 1e6:.1f} microseconds")

# %% [markdown]
# Read the ratios you measured, not a number from a book; a ratio above 1 means the batched
# version was faster. Since both versions do the same arithmetic, any difference comes from the
# work around it. In the tiny case the arithmetic is small, and the loop's extra calls, about $h$
# times as many as the batched version's, show up in the ratio. At the medium size every call does
# far more arithmetic than its fixed cost (compare the milliseconds with the microsecond or so of
# one tiny call), so the extra calls matter little. If one version is clearly ahead at the medium
# size on your machine, the cause lies in how each version walks through memory (the CPU's
# caches) or in other programs competing for the CPU, neither of which this notebook measures:
# run the cell again and see whether the ratio holds. Either way the outputs are the same, and the
# batched form is the one that matches the equation.

# %% [markdown]
# ## Practice exercises
#
# Each exercise asks for one function. Replace `raise NotImplementedError()` with your code, run
# the cell, then run the test cell below it. The visible checks tell you what a failure most
# likely means; when your notebook is graded, hidden tests call your function again on fresh
# inputs (other shapes, head counts and random draws), so write the general function, not one that fits
# this batch.
#
# ### Exercise 3: confirm the heads are independent (2 + 2 points)
#
# Before $W_o$, each head's output depends only on its own slices of $Q$, $K$ and $V$. Show it:
# zero out the columns of $W_v$ that feed head 2 (columns `2*hs` to `3*hs`: a column of $W_v$
# produces one feature of $V$), run the layer again, and measure how much each head's block of
# the concat changed.
#
# **(a)** Write `zero_value_columns(Wv, h, head)`: return a **copy** of the `(C, C)` matrix `Wv`
# with the columns that feed head `head` set to zero. The input must not change.

# %% nbgrader={"grade": false, "grade_id": "zero_value_columns", "locked": false, "schema_version": 3, "solution": true, "task": false}
def zero_value_columns(Wv, h, head):
    """Copy of Wv (C, C) with the value columns of head `head` set to zero."""
    ### BEGIN SOLUTION
    hs = Wv.shape[1] // h
    Wv_zeroed = Wv.copy()
    Wv_zeroed[:, head * hs:(head + 1) * hs] = 0.0  # columns = features of V; head's features are one hs-block
    return Wv_zeroed
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_zero_value_columns", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def check_zero_value_columns(Wv, h, head):
    """Visible check with a hint for the usual mistakes."""
    before = Wv.copy()
    got = zero_value_columns(Wv, h, head)
    hs = Wv.shape[1] // h
    block = slice(head * hs, (head + 1) * hs)
    assert np.array_equal(Wv, before), "zero_value_columns changed Wv in place: zero a copy (Wv.copy())"
    assert isinstance(got, np.ndarray) and got.shape == Wv.shape, f"expected a {Wv.shape} array"
    if np.all(got[block, :] == 0) and not np.all(got[:, block] == 0):
        raise AssertionError("you zeroed rows of Wv; head i's values come from the COLUMNS "
                             "i*hs:(i+1)*hs (X @ Wv puts Wv's columns on V's feature axis)")
    assert np.all(got[:, block] == 0), f"columns {block.start}:{block.stop} (head {head}'s block) should be zero"
    keep = np.ones(Wv.shape[1], dtype=bool)
    keep[block] = False
    assert np.array_equal(got[:, keep], Wv[:, keep]), "only head's own columns may change; the others must be kept"


_Wv = np.random.default_rng(42).standard_normal((64, 64)) * 0.2  # a (C, C) matrix of the lesson's size
check_zero_value_columns(_Wv, 4, 2)
check_zero_value_columns(_Wv, 8, 7)
print("Exercise 3a visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# **(b)** Write `per_head_change(concat_a, concat_b, h)`: given two concatenated outputs of shape
# `(B, T, C)`, return an array of shape `(h,)` whose entry $i$ is the largest absolute difference
# inside head $i$'s block of columns, over all batch elements and positions.

# %% nbgrader={"grade": false, "grade_id": "per_head_change", "locked": false, "schema_version": 3, "solution": true, "task": false}
def per_head_change(concat_a, concat_b, h):
    """Largest |concat_a - concat_b| inside each head's block of columns: shape (h,)."""
    ### BEGIN SOLUTION
    B, T, C = concat_a.shape
    diff = np.abs(concat_a - concat_b).reshape(B, T, h, C // h)  # (B, T, C) -> (B, T, h, hs)
    return diff.max(axis=(0, 1, 3))  # (h,)
    ### END SOLUTION


# %% [markdown]
# With both functions, run the experiment on the lesson's batch with your layer: only head 2's
# block moves.

# %%
_, cache_zeroed = multi_head_attention_forward(X, Wq, Wk, zero_value_columns(Wv, h, 2), Wo, h)
change = per_head_change(cache["concat"], cache_zeroed["concat"], h)
for i in range(h):
    print(f"head {i}: largest change in its concat block = {change[i]:.4f}")
print("heads 0, 1 and 3 exactly unchanged:", bool(np.all(change[[0, 1, 3]] == 0)))

# %% nbgrader={"grade": true, "grade_id": "test_per_head_change", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def check_per_head_change(concat_a, concat_b, h):
    """Visible check with a hint for the usual mistakes: concat_b moves head i's block by exactly i + 1."""
    expected = np.arange(1.0, h + 1)  # (h,): the shift of each head's block, known by construction
    got = np.asarray(per_head_change(concat_a, concat_b, h))
    assert got.shape == (h,), (
        f"expected one number per head, shape ({h},), got {got.shape}: reduce over batch, "
        "positions and the columns inside each block")
    assert np.all(got >= 0), "changes should be absolute values (use np.abs)"
    if h > 1 and not np.allclose(got, expected) and np.allclose(got, h):
        raise AssertionError("every head reports the largest shift: blocks are interleaved; reshape C into (h, hs), "
                             "head first, so block i is columns i*hs:(i+1)*hs")
    assert np.allclose(got, expected), (
        f"head i's block was moved by exactly i + 1, so expected {expected.tolist()}, got {got.tolist()}: "
        "entry i should be the largest |difference| inside head i's columns i*hs:(i+1)*hs")


_rng = np.random.default_rng(5)
_concat = _rng.standard_normal((2, 6, 64))  # a (B, T, C) concat of the lesson's size
_shifted = _concat.copy()
_shifted[:, :, 16:32] += 0.5  # move head 1's block only
assert np.allclose(per_head_change(_concat, _shifted, 4), [0.0, 0.5, 0.0, 0.0]), (
    "shifting only head 1's columns by 0.5 should give [0, 0.5, 0, 0]")
for _ in range(2):  # the lesson's (B, T, C) = (2, 6, 64) with h = 4 heads of 16 columns
    _concat = _rng.standard_normal((2, 6, 64))
    _moved = _concat + np.repeat(np.arange(1.0, 5.0), 16)  # block i moved by i + 1 everywhere
    _moved[-1, -1, -1] -= 8.0  # and the last entry of the last block, the other way: |change| = 4
    check_per_head_change(_concat, _moved, 4)
print("Exercise 3b visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 4: vary the head count at fixed width (3 points)
#
# Multi-head attention trades the number of heads against the head size while $C$ stays fixed.
# Does the trade change how spread out each head's scores are? Each score of head $i$ sums $hs$
# products $q_j k_j$, so the fewer features a head has, the smaller its raw scores. Section 3
# divides them by $\sqrt{hs}$, the head size: measure what that does across head counts, with
# the same weights every time, so that only the split into heads differs.
#
# With $q_j$ and $k_j$ of variance $\sigma^2$ each (here $\sigma^2 = C \cdot \text{scale}^2$, for
# unit-variance inputs), a scaled score has variance
#
# $$\operatorname{Var}\!\left(\frac{q \cdot k}{\sqrt{hs}}\right) = \frac{hs\,\sigma^4}{hs} = \sigma^4,$$
#
# the same for every head count; divided by $\sqrt{C}$ instead, it would be $\sigma^4\, hs / C$,
# shrinking as $h$ grows.
#
# Write `sweep_head_counts(X, h_values, seed=0, scale=0.2)`. For each `h` in `h_values`, in order:
#
# 1. make a **new** generator `np.random.default_rng(seed=seed)`, one per head count (not one
#    for the whole sweep), and draw `Wq`, `Wk`, `Wv`, `Wo` from it in that order, each
#    `standard_normal((C, C)) * scale`. Every head count then gets the same four matrices;
# 2. run `multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h)`;
# 3. record a dict with keys `"h"`, `"hs"`, `"weights_shape"` (the shape of `cache["weights"]`),
#    `"out_shape"` and `"score_std"`: the standard deviation (`np.std`) of the scaled scores
#    $Q_i K_i^\top / \sqrt{hs}$ of every batch element, head, query and key, computed from
#    `cache["Q"]` and `cache["K"]`.
#
# Return the list of dicts, one per `h`, in order. If `C` is not divisible by some `h`, raise a
# `ValueError` that says so. The test cell runs your sweep with a stand-in layer whose scores it
# knows, so a mistake in Exercise 2 costs points only there.

# %% nbgrader={"grade": false, "grade_id": "sweep_head_counts", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sweep_head_counts(X, h_values, seed=0, scale=0.2):
    """Run the layer for each head count in h_values, with the same weights each time; report hs, shapes, score_std."""
    ### BEGIN SOLUTION
    C = X.shape[-1]
    bad = [n for n in h_values if C % n]
    if bad:
        raise ValueError(f"C={C} is not divisible by h in {bad}")
    report = []
    for n_heads in h_values:  # a sweep over configurations, not a loop inside the layer
        weight_rng = np.random.default_rng(seed=seed)  # a new generator per head count: the same four matrices
        Wq_, Wk_, Wv_, Wo_ = (weight_rng.standard_normal((C, C)) * scale for _ in range(4))
        out_, cache_ = multi_head_attention_forward(X, Wq_, Wk_, Wv_, Wo_, n_heads)
        hs_ = C // n_heads
        scores_ = cache_["Q"] @ np.swapaxes(cache_["K"], -2, -1) / np.sqrt(hs_)  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
        report.append({"h": n_heads, "hs": hs_, "weights_shape": cache_["weights"].shape, "out_shape": out_.shape,
                       "score_std": float(np.std(scores_))})
    return report
    ### END SOLUTION


# %%
print(f"predicted spread of the scaled scores, C * scale^2 = {C * 0.2**2:.2f}")
for row in sweep_head_counts(X, [1, 2, 4, 8, 16]):
    print(f"h={row['h']:2d}  hs={row['hs']:2d}  weights {row['weights_shape']}  out {row['out_shape']}  "
          f"score std {row['score_std']:.2f}  (divided by sqrt(C): {row['score_std'] * np.sqrt(row['hs'] / C):.2f})")

# %% [markdown]
# The weights shape gains one `(T, T)` table per head and the output keeps its shape. The
# spread of the scaled scores stays near the predicted $C \cdot \text{scale}^2$ for every head
# count: it moves only by sampling noise, since these are one batch's scores. Divided by
# $\sqrt{C}$ instead of $\sqrt{hs}$, it would shrink by $\sqrt{h}$, and the more heads the
# layer had, the flatter every head's attention would be. The averages over ten seeds show the
# same:

# %%
seed_average = {n: np.mean([row["score_std"] for seed in range(10) for row in sweep_head_counts(X, [n], seed=seed)])
                for n in (1, 2, 4, 8, 16)}
print("score std, average over seeds 0-9:", {n: round(float(v), 2) for n, v in seed_average.items()})

# %% nbgrader={"grade": true, "grade_id": "test_sweep_head_counts", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def _stand_in_layer(X, Wq, Wk, Wv, Wo, h):
    """A stand-in for your layer, whose scaled scores are known: +sqrt(hs) for even queries, -sqrt(hs) for odd ones.

    It keeps the matrices it was given in _calls, to check how the sweep drew them.
    """
    B, T, C = X.shape
    if C % h:
        raise ValueError(f"C={C} is not divisible by h={h}")
    _calls.append((h, Wq.copy(), Wk.copy(), Wv.copy(), Wo.copy()))
    sign = np.where(np.arange(T) % 2 == 0, 1.0, -1.0)  # (T,)
    Q = np.broadcast_to(sign[:, None], (B, h, T, C // h)).copy()  # (B, h, T, hs): q_t = +-(1, ..., 1)
    K = np.ones((B, h, T, C // h))  # (B, h, T, hs): k_s = (1, ..., 1), so q_t . k_s = +-hs
    cache = {"Q": Q, "K": K, "V": K, "weights": np.full((B, h, T, T), 1.0 / T), "per_head": K,
             "concat": np.zeros((B, T, C))}
    return np.zeros((B, T, C)), cache


def _with_stand_in_layer(fn, *args, **kwargs):
    """Call fn with _stand_in_layer as multi_head_attention_forward, then put yours back."""
    missing = object()
    students_layer = globals().get("multi_head_attention_forward", missing)
    globals()["multi_head_attention_forward"] = _stand_in_layer  # Exercise 2 is graded on its own
    _calls.clear()
    try:
        return fn(*args, **kwargs)
    finally:
        if students_layer is missing:
            globals().pop("multi_head_attention_forward", None)
        else:
            globals()["multi_head_attention_forward"] = students_layer


def check_sweep_head_counts(X, h_values, **seed_and_scale):
    """Visible check with a hint for the usual mistakes; returns the matrices the layer was given."""
    B, T, C = X.shape
    report = _with_stand_in_layer(sweep_head_counts, X, h_values, **seed_and_scale)
    calls = list(_calls)
    assert len(report) == len(h_values), f"expected one dict per h ({len(h_values)}), got {len(report)}"
    assert [call[0] for call in calls] == list(h_values), (
        f"call the layer once per head count, in order: it was called with h = {[call[0] for call in calls]}")
    for n_heads, row in zip(h_values, report, strict=True):
        hs_ = C // n_heads
        assert row["h"] == n_heads, f"rows should follow h_values in order; expected h={n_heads}, got {row['h']}"
        assert row["hs"] == hs_, f"h={n_heads}: head size should be C // h = {hs_}, got {row['hs']}"
        assert tuple(row["weights_shape"]) == (B, n_heads, T, T), (
            f"h={n_heads}: weights should be (B, h, T, T) = {(B, n_heads, T, T)}, got {tuple(row['weights_shape'])}")
        assert tuple(row["out_shape"]) == (B, T, C), (
            f"h={n_heads}: the output should keep the input shape {(B, T, C)}, got {tuple(row['out_shape'])}")
        got = float(row["score_std"])
        if not np.isclose(got, np.sqrt(hs_)):
            if np.isclose(got, hs_):
                raise AssertionError(f"h={n_heads}: score_std is that of the raw scores Q K^T: divide them by sqrt(hs)")
            if np.isclose(got, hs_ / np.sqrt(C)):
                raise AssertionError(f"h={n_heads}: the scores were divided by sqrt(C); divide by sqrt(hs), the head size")
            raise AssertionError(
                f"h={n_heads}: this stand-in layer's scaled scores are +-sqrt(hs) in equal numbers, so score_std "
                f"(np.std over every batch element, head, query and key) should be {np.sqrt(hs_):.4f}, got {got:.4f}")
    first = calls[0][1:]
    scale = seed_and_scale.get("scale", 0.2)
    for W, name in zip(first, ("Wq", "Wk", "Wv", "Wo"), strict=True):
        assert W.shape == (C, C), f"{name} should be (C, C) = {(C, C)}, got {W.shape}"
        assert abs(W.std() / scale - 1) < 0.1, (
            f"{name}'s entries have standard deviation {W.std():.3f}: draw standard_normal((C, C)) * scale, "
            f"scale = {scale}")
    assert all((first[i] != first[j]).any() for i in range(4) for j in range(i)), (
        "Wq, Wk, Wv and Wo should be four different draws, one after another from the generator")
    for call in calls[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(call[1:], first, strict=True)), (
            f"h={call[0]} got other matrices than h={calls[0][0]}: every head count must get the same four "
            "matrices, so make a new np.random.default_rng(seed=seed) for each h, not one for the whole sweep")
    return first


def check_sweep_rejects(X, h_bad):
    """The sweep must refuse a head count that does not divide C."""
    try:
        _with_stand_in_layer(sweep_head_counts, X, [1, h_bad])
    except ValueError:
        return
    raise AssertionError(f"C={X.shape[-1]} is not divisible by h={h_bad}: sweep_head_counts should raise ValueError")


_calls = []
_X = np.random.default_rng(42).standard_normal((2, 6, 64))  # a batch of the lesson's shape
_default = check_sweep_head_counts(_X, [1, 2, 4, 8])
_seeded = check_sweep_head_counts(_X, [8, 2], seed=3, scale=0.05)
assert (_default[0] / 0.2 != _seeded[0] / 0.05).any(), (
    "seed=3 drew the same matrices as seed=0: draw from np.random.default_rng(seed=seed)")
assert all(np.array_equal(a, b) for a, b in zip(_default, check_sweep_head_counts(_X, [4]), strict=True)), (
    "the same seed should give the same matrices in every call of the sweep")
check_sweep_rejects(_X, 3)
print("Exercise 4 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# **The split.** Head $i$ owns features $i \cdot hs$ to $(i+1) \cdot hs - 1$. Reshape `(B, T, C)`
# to `(B, T, h, hs)`, then transpose to `(B, h, T, hs)`: two views, no copy. Reshaping straight to
# `(B, h, T, hs)` has the right shape and the wrong numbers: a head's "positions" become pieces of
# other positions.
#
# **Parallel attention over the head axis.** With $Q, K, V$ shaped `(B, h, T, hs)`, `@` computes
# every head's attention at once: `np.matmul` batches over all leading axes, so the head axis
# behaves exactly like the batch axis. Lesson 1's `attention`, which transposes with
# `np.swapaxes(K, -2, -1)`, runs on the 4-D layout unchanged; passing `Q / np.sqrt(hs)` adds the
# scale, with the head size $hs$, not $C$. The weights are `(B, h, T, T)`, every row summing to 1,
# and the per-head output is `(B, h, T, hs)`.
#
# **Heads against head size.** At fixed $C$ and with the same weights, the scaled scores' standard
# deviation stayed near $C \cdot \text{scale}^2 = 2.56$ for 1 to 16 heads (2.45 to 2.53 averaged
# over ten seeds); divided by $\sqrt{C}$ instead, it would shrink by $\sqrt{h}$.
#
# **Concatenation.** The split in reverse: `(B, h, T, hs)`, transpose to `(B, T, h, hs)`, reshape
# to `(B, T, C)`. It copies numbers and computes none: block $i$ of the concat is head $i$'s
# output, byte for byte, the same as `np.concatenate` of the blocks. Reshaping without the
# transpose gives the right shape and the wrong vectors, silently.
#
# **The output projection.** $\text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})\, W_o = \sum_i \text{head}_i W_o^{(i)}$,
# one term per head, with $W_o^{(i)}$ the rows $i \cdot hs$ to $(i+1) \cdot hs - 1$ of $W_o$. With a
# dense $W_o$ every head's term reaches every output dimension. Before $W_o$ the heads are
# independent: zeroing head 2's value columns moved head 2's block of the concat and no other.
#
# **The layer.** Your `multi_head_attention_forward`, with $B=2, T=6, C=64, h=4, hs=16$:
# `(2, 6, 64)` to $Q/K/V$ `(2, 4, 6, 16)` to weights `(2, 4, 6, 6)` to per-head `(2, 4, 6, 16)` to
# concat `(2, 6, 64)` to output `(2, 6, 64)`, the same numbers as the step-by-step sections.
#
# **Batched versus a loop.** Both compute the same $B \cdot h$ products `(T, hs) @ (hs, T)`, and the
# transposed views are not copied (`tracemalloc` saw only the result). The batched form saves the
# loop's repeated per-call costs; it is preferred because it is the formula, not for NumPy speed.
#
# **Next:** Lesson 4 takes $W_o$ apart: it knocks out one head at a time, shows what a
# block-diagonal $W_o$ amounts to and where the heads really meet, and counts the parameters of
# the block: $4C^2$, whatever the number of heads.
