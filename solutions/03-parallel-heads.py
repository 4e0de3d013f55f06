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
# # Lesson 3: Parallel attention and concatenation
#
# In Lesson 1 you computed attention for one head: one query matrix, one key matrix, one value
# matrix, one $(T, T)$ table of weights. A transformer layer runs $h$ of these heads side by side.
# It projects the input $X$ of shape `(B, T, C)` to queries, keys and values, carves the width
# $C$ into $h$ heads of size $hs = C / h$, and lifts the head axis up front so that every tensor
# is `(B, h, T, hs)`.
#
# This lesson runs the machine. You will send all $h$ heads through scaled dot-product attention
# at once, with NumPy matrix multiplications that broadcast over the head axis, concatenate the
# results back into one vector per position, and pass them through the output projection
# $W_o$. The result is `multi_head_attention_forward`, the function every block of a GPT calls.
#
# The idea to hold onto: **"multi-head" does not mean a loop over heads.** NumPy treats the head
# axis exactly like the batch axis, so one `@` computes every head's scores in every batch
# element at the same time.
#
# **What you'll do**
# - run scaled dot-product attention over all $h$ heads with 4-D matmuls;
# - implement `multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h)` and walk its shapes;
# - draw every head's $(T, T)$ attention pattern as a heatmap;
# - concatenate the heads with a transpose and a reshape, and watch what breaks without the transpose.
#
# **What you'll learn**
# - the shape of every intermediate: scores `(B, h, T, T)`, per-head output `(B, h, T, hs)`, concat `(B, T, C)`;
# - why concatenation is a memory reshuffle with no arithmetic;
# - why the output projection $W_o$ is the only place where heads interact.
#
# **What you'll need**
# - single-head attention (Lesson 1) and the $\sqrt{d_k}$ scaling (Lesson 2);
# - NumPy broadcasting over leading axes.
#
# Three graded exercises close the lesson. Their visible checks run as you work; hidden tests
# with fresh inputs run when your notebook is graded.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

# %% [markdown]
# ## 1. Attention over the head axis
#
# For one head with $Q, K, V$ of shape `(T, hs)`, scaled dot-product attention is
#
# $$\text{Attention}(Q, K, V) = \text{softmax}\!\left(\frac{Q K^\top}{\sqrt{hs}}\right) V .$$
#
# After the split, $Q$, $K$ and $V$ carry two leading axes: they are `(B, h, T, hs)`. The formula
# does not change. `np.matmul` (the `@` operator) treats every axis except the last two as a batch
# axis, so a matmul between `(B, h, T, hs)` and `(B, h, hs, T)` runs an independent `(T, hs) @ (hs, T)`
# product for each of the $B \times h$ (batch, head) pairs and returns `(B, h, T, T)`.
#
# The only change from single-head code is which axes of $K$ are swapped to form $K^\top$. Before,
# $K$ was `(B, T, hs)` and you wrote `K.transpose(0, 2, 1)`. Now $K$ is `(B, h, T, hs)` and you swap
# the last two axes, 2 and 3, with `K.transpose(0, 1, 3, 2)`, giving `(B, h, hs, T)`. The batch and
# head axes ride along untouched.
#
# A quick check of that rule on random arrays (the values do not matter here, only the shapes):

# %%
shape_rng = np.random.default_rng(0)
Q_demo = shape_rng.standard_normal((2, 4, 6, 16))  # (B, h, T, hs)
K_demo = shape_rng.standard_normal((2, 4, 6, 16))  # (B, h, T, hs)

K_demo_T = K_demo.transpose(0, 1, 3, 2)  # (B, h, T, hs) -> (B, h, hs, T)
print("K^T               :", K_demo_T.shape)
print("Q @ K^T           :", (Q_demo @ K_demo_T).shape, "(B, h, T, T)")

# One (batch, head) pair computed on its own agrees with its slice of the batched product.
one_pair = Q_demo[1, 2] @ K_demo[1, 2].T  # (T, hs) @ (hs, T) -> (T, T)
print("slice [1, 2] equals the single-head product:", np.allclose((Q_demo @ K_demo_T)[1, 2], one_pair))

# %% [markdown]
# Softmax runs over the **last** axis, so that each query row becomes a probability distribution
# over the $T$ key positions, separately for every batch element and head. Subtracting each row's
# maximum before exponentiating changes nothing mathematically,
#
# $$\text{softmax}(x)_j = \frac{e^{x_j}}{\sum_k e^{x_k}} = \frac{e^{x_j - m}}{\sum_k e^{x_k - m}}, \qquad m = \max_k x_k ,$$
#
# but it keeps every exponent at or below zero, so `np.exp` cannot overflow (Lesson 1 shows the overflow).

# %%
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    x = x - x.max(axis=axis, keepdims=True)  # subtract the row max for stability
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


# %% [markdown]
# ## 2. The full forward pass
#
# The layer is four steps. With $X$ of shape `(B, T, C)` and four `(C, C)` matrices:
#
# 1. **Project and split.** $Q = X W_q$, $K = X W_k$, $V = X W_v$, each `(B, T, C)`, reshaped to
#    `(B, T, h, hs)` and transposed to `(B, h, T, hs)`.
# 2. **Attend, all heads at once.** $\text{head}_i = \text{softmax}\!\left(Q_i K_i^\top / \sqrt{hs}\right) V_i$,
#    computed for every $i$ by one batched matmul: scores `(B, h, T, T)`, per-head output `(B, h, T, hs)`.
# 3. **Concatenate.** $\text{Concat}(\text{head}_1, \dots, \text{head}_h)$: `(B, h, T, hs)` to
#    `(B, T, h, hs)` to `(B, T, C)`.
# 4. **Mix.** $\text{MultiHead}(X) = \text{Concat}(\text{head}_1, \dots, \text{head}_h)\, W_o$, `(B, T, C)`.
#
# The function returns the output and a `cache` of every intermediate, so that you (and the
# exercises) can inspect each stage.

# %%
def multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h):
    """Multi-head self-attention: X (B, T, C) -> (out (B, T, C), cache of intermediates)."""
    B, T, C = X.shape
    if C % h:
        raise ValueError(f"model width C={C} is not divisible by h={h} heads")
    hs = C // h  # head size

    # 1. Project the full width, split C into h heads, lift the head axis up front.
    Q = (X @ Wq).reshape(B, T, h, hs).transpose(0, 2, 1, 3)  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)
    K = (X @ Wk).reshape(B, T, h, hs).transpose(0, 2, 1, 3)  # (B, h, T, hs)
    V = (X @ Wv).reshape(B, T, h, hs).transpose(0, 2, 1, 3)  # (B, h, T, hs)

    # 2. Scaled dot-product attention, batched over B and h at once.
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(hs)  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
    weights = softmax(scores, axis=-1)  # (B, h, T, T), each row sums to 1
    per_head = weights @ V  # (B, h, T, T) @ (B, h, T, hs) -> (B, h, T, hs)

    # 3. Concatenate the heads: the split run backwards.
    concat = per_head.transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)

    # 4. The output projection mixes the heads.
    out = concat @ Wo  # (B, T, C) @ (C, C) -> (B, T, C)

    cache = dict(Q=Q, K=K, V=V, scores=scores, weights=weights, per_head=per_head, concat=concat, out=out)
    return out, cache


# %% [markdown]
# Two of the four steps, the split and the concat, are pure reshuffles with no arithmetic, and the
# attention itself is the single-head code with different transpose axes.
#
# ### The shape walk
#
# Now feed it a real batch: two sequences ($B = 2$) of six positions ($T = 6$), width $C = 64$,
# $h = 4$ heads of size $hs = 16$. Everything is drawn from `np.random.default_rng(42)`, in the
# order below, so the run is reproducible to the last digit. The projections are initialised at
# scale 0.2 rather than the 0.02 used in real training, so that the attention weights come out
# visibly different from uniform.

# %%
rng = np.random.default_rng(42)
B, T, C, h = 2, 6, 64, 4
hs = C // h

X = rng.standard_normal((B, T, C))  # unit-scale inputs, (B, T, C)
Wq = rng.standard_normal((C, C)) * 0.2  # 0.2 init so attention differentiates
Wk = rng.standard_normal((C, C)) * 0.2
Wv = rng.standard_normal((C, C)) * 0.2
Wo = rng.standard_normal((C, C)) * 0.2

out, cache = multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h)

print("config: B=%d, T=%d, C=%d, h=%d, hs=%d" % (B, T, C, h, hs))
print("X                :", X.shape)
print("Q/K/V per head   :", cache["Q"].shape, "(B, h, T, hs)")
print("scores           :", cache["scores"].shape, "(B, h, T, T)")
print("weights          :", cache["weights"].shape, "(B, h, T, T)")
print("per-head output  :", cache["per_head"].shape, "(B, h, T, hs)")
print("concat           :", cache["concat"].shape, "(B, T, C)")
print("final out        :", out.shape, "(B, T, C)")

rowsums = cache["weights"].sum(axis=-1)  # (B, h, T)
print("attention rows all sum to 1?", np.allclose(rowsums, 1.0),
      " min=%.6f max=%.6f" % (rowsums.min(), rowsums.max()))

# %% [markdown]
# Trace the shapes against the pipeline. $X$ came in at `(2, 6, 64)`. After project-and-split,
# each of $Q, K, V$ is `(2, 4, 6, 16)`: one `(6, 16)` matrix per (batch, head) pair. The batched
# $QK^\top$ gave scores of `(2, 4, 6, 6)`, a full 6-by-6 table per head, and softmax kept that shape
# with every one of the $2 \times 4 \times 6 = 48$ rows summing to 1 (the smallest and largest row
# sums print as 1.000000). The per-head outputs are `(2, 4, 6, 16)`, the concat stacks them back
# to `(2, 6, 64)`, and $W_o$ returns `(2, 6, 64)`: the shape that went in. Because the layer
# preserves shape, layers can be stacked.

# %% [markdown]
# ## 3. Reading the heads
#
# The point of several heads is that they attend differently. Here are the weights of heads 0
# and 1 for the first sequence in the batch, rounded to three decimals. Row $i$ is query position
# $i$; column $j$ is how much of its attention goes to key position $j$.

# %%
print("batch 0, head 0 weights (each row sums to 1):")
print(np.round(cache["weights"][0, 0], 3))
print("batch 0, head 1 weights (a different pattern, same positions):")
print(np.round(cache["weights"][0, 1], 3))


# %% [markdown]
# In head 0, position 0 puts 0.972 of its attention on position 3. In head 1 the same position
# splits its attention between position 5 (0.519) and itself (0.282). Same six inputs, two
# different lenses: each head has its own $W_q$, $W_k$ slice, so each asks a different question.
#
# Tables of numbers are hard to compare, so the rest of the course draws every $(T, T)$ matrix
# as a heatmap. The helper below draws one panel per head.

# %%
def plot_attention_heads(weights, title):
    """Heatmaps of attention weights, one panel per head. weights: (h, T, T)."""
    n_heads, n_queries, n_keys = weights.shape
    fig, axes = plt.subplots(1, n_heads, figsize=(3.2 * n_heads + 1.2, 4.0), constrained_layout=True)
    axes = np.atleast_1d(axes)
    for i, ax in enumerate(axes):
        image = ax.imshow(weights[i], vmin=0.0, vmax=1.0, cmap="viridis")
        ax.set_title(f"head {i}")
        ax.set_xlabel("key position")
        ax.set_ylabel("query position" if i == 0 else "")
        ax.set_xticks(range(n_keys))
        ax.set_yticks(range(n_queries))
        if n_queries * n_keys <= 64:  # small tables: print the weight in each cell
            for q in range(n_queries):
                for k in range(n_keys):
                    value = weights[i, q, k]
                    ax.text(k, q, f"{value:.2f}", ha="center", va="center", fontsize=7,
                            color="black" if value > 0.5 else "white")
    fig.colorbar(image, ax=axes, shrink=0.85, label="attention weight")
    fig.suptitle(title)
    plt.show()


plot_attention_heads(cache["weights"][0], "Attention weights of all 4 heads, batch element 0 (B=2, T=6, C=64, h=4)")

# %% [markdown]
# *Figure: each panel is one head's `(T, T)` weight matrix for the first sequence. Rows are query
# positions, columns key positions, and every row sums to 1. Head 0's rows 0 and 2 are almost
# one-hot on key 3; heads 1 to 3 spread their attention in other ways over the same six positions.*

# %% [markdown]
# ## 4. Concatenating the heads back
#
# Each head's output is `(B, h, T, hs)`: for every position, a small $hs$-dimensional summary of
# what that head looked at. The rest of the network expects `(B, T, C)`. The concatenation is the
# split run backwards. The split went `(B, T, C)` to `(B, T, h, hs)` to `(B, h, T, hs)`; the concat
# undoes the two steps in reverse order:
#
# - `per_head.transpose(0, 2, 1, 3)` moves the head axis back next to the head-size axis:
#   `(B, h, T, hs)` to `(B, T, h, hs)`;
# - `.reshape(B, T, C)` merges the last two axes, $h$ and $hs$, into one axis of size $h \cdot hs = C$.
#
# No arithmetic happens: the first $hs$ entries of each position's concatenated vector are head 0's
# output, the next $hs$ are head 1's, and so on. Check it, byte for byte, for every head:

# %%
per_head, concat = cache["per_head"], cache["concat"]
block_is_head = [np.array_equal(concat[:, :, i * hs:(i + 1) * hs], per_head[:, i, :, :]) for i in range(h)]
print("concat block i is exactly head i's output, for i = 0..3:", block_is_head)
print("concat[0, 0, :4]   (start of head 0):", np.round(concat[0, 0, :4], 4))
print("per_head[0,0,0,:4] (head 0, pos 0)  :", np.round(per_head[0, 0, 0, :4], 4))

# %% [markdown]
# `np.array_equal` asks for exact equality, not closeness: the concat copies numbers, it does not
# compute them. (The comprehension above loops over heads only to *inspect* the blocks; the layer
# itself never loops.)
#
# ### The silent scramble: reshaping without transposing
#
# The transpose is easy to forget, and forgetting it raises no error. `per_head.reshape(B, T, C)`
# is a perfectly legal reshape: it has the right number of elements and returns the right shape.
# But `reshape` reads memory in order, and in `(B, h, T, hs)` memory the $hs$-vectors of **one
# head at consecutive positions** sit next to each other. So position 0's "concatenated" vector
# becomes head 0 at positions 0, 1, 2 and 3, glued together.

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
fig, axes = plt.subplots(2, 2, figsize=(12, 5.5), constrained_layout=True)
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
# ## 5. Why the output projection exists
#
# Look at what the concat produced: columns 0 to 15 came only from head 0, columns 16 to 31 only
# from head 1, and so on. The heads ran in complete isolation, and the concat staples $h$
# separate opinions together without letting any of them see the others.
#
# $W_o$, a learned `(C, C)` matrix, is what mixes them:
#
# $$\text{MultiHead}(X) = \text{Concat}(\text{head}_1, \dots, \text{head}_h)\, W_o .$$
#
# Because $W_o$ is dense, every output dimension is a weighted sum over all $C$ concatenated
# inputs, so every output dimension can draw on every head. That is the only place in the layer
# where heads interact. Lesson 4 proves it: knock out one head and count how many output
# dimensions move with a dense $W_o$ and with a block-diagonal one.

# %% [markdown]
# ## 6. Why the reference code never loops over heads
#
# You could compute the same layer with a Python loop: slice head $i$'s columns, run single-head
# attention, collect the outputs, concatenate. The result is identical. The course's reference
# code always uses the batched form instead, for two reasons:
#
# - **It is the formula.** One `@` over a `(B, h, T, hs)` array is the equation above with $h$ as
#   a batch axis. There is no slice arithmetic (`i * hs:(i + 1) * hs`) to get wrong, and the same
#   code runs for any $h$.
# - **It is the form the fast libraries run.** PyTorch and JAX execute exactly this batched layout
#   on accelerators, where one large kernel launch beats $h$ small ones (Lesson 5 writes the same
#   layer as a PyTorch module).
#
# Speed in NumPy on a CPU is *not* one of the reasons, and it is worth measuring rather than
# assuming. NumPy's batched matmul walks the $(B, h)$ stack of small products in compiled code, and
# the transposed views it receives are copied first; a loop over heads does fewer, larger
# products. Which one wins depends on the sizes, your CPU and your BLAS library. The cell below
# checks that the two versions agree and times both at a tiny and a medium size. Timings change
# from run to run, so the course's checks do not compare this cell's output.

# %%
def multi_head_attention_loop(X, Wq, Wk, Wv, Wo, h):
    """The same layer with a Python loop over heads: for comparison only."""
    B, T, C = X.shape
    hs = C // h
    heads = []
    for i in range(h):
        cols = slice(i * hs, (i + 1) * hs)  # head i's columns of the projections
        q, k, v = X @ Wq[:, cols], X @ Wk[:, cols], X @ Wv[:, cols]  # each (B, T, hs)
        w = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(hs), axis=-1)  # (B, T, T)
        heads.append(w @ v)  # (B, T, hs)
    return np.concatenate(heads, axis=-1) @ Wo  # (B, T, C) @ (C, C)


def best_time(fn, repeats=5):
    """Fastest of `repeats` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


print("loop and batched versions agree:",
      np.allclose(multi_head_attention_loop(X, Wq, Wk, Wv, Wo, h), out))

# %%
# NBVAL_IGNORE_OUTPUT
timing_rng = np.random.default_rng(7)
for label, (tB, tT, tC, th) in [("small: B=2, T=6, C=64, h=4", (2, 6, 64, 4)),
                                ("medium: B=4, T=128, C=256, h=8", (4, 128, 256, 8))]:
    tX = timing_rng.standard_normal((tB, tT, tC))
    tW = [timing_rng.standard_normal((tC, tC)) * 0.02 for _ in range(4)]
    t_loop = best_time(lambda: multi_head_attention_loop(tX, *tW, th))
    t_batch = best_time(lambda: multi_head_attention_forward(tX, *tW, th))
    print(f"{label:32s} loop {t_loop * 1e3:8.3f} ms   batched {t_batch * 1e3:8.3f} ms"
          f"   loop / batched = {t_loop / t_batch:4.2f}x")

# %% [markdown]
# Read the ratios you measured, not a number from a book. A ratio above 1 means the batched
# version was faster. Typically it wins only in the tiny case, where the loop's per-head Python
# overhead is most of the work, and is no faster (often slower) at the medium size. Either way
# the outputs are the same, and the batched form is the one that matches the equation.

# %% [markdown]
# ## Practice exercises
#
# Each exercise asks for one function. Replace `raise NotImplementedError()` with your code, run
# the cell, then run the test cell below it. The visible checks use the lesson's seed-42 batch
# and tell you what a failure most likely means; when your notebook is graded, hidden tests call
# your function again on fresh inputs (other shapes, head counts and seeds), so write the general
# function, not one that fits this batch.
#
# ### Exercise 1: rebuild the concat with `np.concatenate` (3 points)
#
# Prove that the transpose-then-reshape concat is the same as physically stacking the heads'
# outputs. Write `concat_heads(per_head)`: given per-head outputs of shape `(B, h, T, hs)`, return
# the `(B, T, C)` array whose columns `i*hs` to `(i+1)*hs` hold head $i$'s output, built with
# `np.concatenate` (a loop over heads is fine here: this is gluing, not computing). Do not modify
# the input.

# %% nbgrader={"grade": false, "grade_id": "concat_heads", "locked": false, "schema_version": 3, "solution": true, "task": false}
def concat_heads(per_head):
    """Concatenate per-head outputs (B, h, T, hs) into (B, T, C) with np.concatenate."""
    ### BEGIN SOLUTION
    # np.concatenate iterates over its argument's first axis, so putting the head axis first
    # hands it the h blocks of shape (B, T, hs) without a Python loop.
    return np.concatenate(per_head.transpose(1, 0, 2, 3), axis=-1)  # (h, B, T, hs) -> (B, T, h * hs)
    ### END SOLUTION


# %%
concat_manual = concat_heads(cache["per_head"])
print("concat_manual:", concat_manual.shape, " equals cache['concat']:", np.array_equal(concat_manual, cache["concat"]))

# %% nbgrader={"grade": true, "grade_id": "test_concat_heads", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_concat_heads(per_head, expected):
    """Visible check with a hint for the usual mistakes."""
    before = per_head.copy()
    got = concat_heads(per_head)
    assert isinstance(got, np.ndarray), f"concat_heads should return a NumPy array, got {type(got).__name__}"
    assert np.array_equal(per_head, before), "concat_heads modified its input: build a new array instead"
    assert got.shape == expected.shape, (
        f"expected shape (B, T, C) = {expected.shape}, got {got.shape}: "
        "concatenate the h blocks along the last axis")
    if not np.allclose(got, expected) and np.array_equal(got, per_head.reshape(expected.shape)):
        raise AssertionError("shape is right but head blocks are scrambled: transpose before reshape "
                             "(each position's vector must hold all heads at that position)")
    assert np.allclose(got, expected), (
        "values differ from the transpose-then-reshape concat: columns i*hs:(i+1)*hs "
        "must be head i's output at the same position")


check_concat_heads(cache["per_head"], cache["concat"])
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: confirm the heads are independent (2 + 2 points)
#
# Before $W_o$, each head's output depends only on its own slice of $V$. Show it: zero out the
# columns of $W_v$ that feed head 2 (columns `2*hs` to `3*hs`: a column of $W_v$ produces one
# feature of $V$), run the layer again, and measure how much each head's block of the concat changed.
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


check_zero_value_columns(Wv, h, 2)
print("Exercise 2a visible checks passed (hidden tests run at grading).")
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
# With both functions, run the experiment on the lesson's batch: only head 2's block moves.

# %%
_, cache_zeroed = multi_head_attention_forward(X, Wq, Wk, zero_value_columns(Wv, h, 2), Wo, h)
change = per_head_change(cache["concat"], cache_zeroed["concat"], h)
for i in range(h):
    print(f"head {i}: largest change in its concat block = {change[i]:.4f}")
print("heads 0, 1 and 3 exactly unchanged:", bool(np.all(change[[0, 1, 3]] == 0)))

# %% nbgrader={"grade": true, "grade_id": "test_per_head_change", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def check_per_head_change(concat_a, concat_b, h):
    """Visible check with a hint for the usual mistakes."""
    B, T, C = concat_a.shape
    expected = np.abs(concat_a - concat_b).reshape(B, T, h, C // h).max(axis=(0, 1, 3))
    got = np.asarray(per_head_change(concat_a, concat_b, h))
    assert got.shape == (h,), (
        f"expected one number per head, shape ({h},), got {got.shape}: reduce over batch, "
        "positions and the columns inside each block")
    if np.allclose(got, np.abs(concat_a - concat_b).reshape(B, T, C // h, h).max(axis=(0, 1, 2))):
        if not np.allclose(got, expected):
            raise AssertionError("blocks are interleaved: reshape C into (h, hs), head first, "
                                 "so block i is columns i*hs:(i+1)*hs")
    assert np.all(got >= 0), "changes should be absolute values (use np.abs)"
    assert np.allclose(got, expected), "entry i should be the largest |difference| inside head i's columns"


shifted = cache["concat"].copy()
shifted[:, :, hs:2 * hs] += 0.5  # move head 1's block only
assert np.allclose(per_head_change(cache["concat"], shifted, h), [0.0, 0.5, 0.0, 0.0]), (
    "shifting only head 1's columns by 0.5 should give [0, 0.5, 0, 0]")
check_per_head_change(cache["concat"], shifted, h)
check_per_head_change(cache["concat"], cache["concat"] + np.random.default_rng(5).standard_normal(cache["concat"].shape), h)
print("Exercise 2b visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: vary the head count at fixed width (3 points)
#
# Multi-head attention trades the number of heads against the head size while $C$ stays fixed.
# Write `sweep_head_counts(X, h_values, seed=0, scale=0.2)`: for each `h` in `h_values`, draw
# fresh `Wq, Wk, Wv, Wo` of shape `(C, C)` from `np.random.default_rng(seed)` times `scale`,
# run `multi_head_attention_forward`, and record a dict with keys `"h"`, `"hs"`,
# `"scores_shape"` (the shape of `cache["scores"]`) and `"out_shape"`. Return the list of dicts,
# one per `h`, in order. If `C` is not divisible by some `h`, raise a `ValueError` that says so.

# %% nbgrader={"grade": false, "grade_id": "sweep_head_counts", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sweep_head_counts(X, h_values, seed=0, scale=0.2):
    """Run the layer for each head count in h_values; report hs and the shapes."""
    ### BEGIN SOLUTION
    C = X.shape[-1]
    bad = [n for n in h_values if C % n]
    if bad:
        raise ValueError(f"C={C} is not divisible by h in {bad}")
    report = []
    for n_heads in h_values:  # a sweep over configurations, not a loop inside the layer
        weight_rng = np.random.default_rng(seed)
        Wq_, Wk_, Wv_, Wo_ = (weight_rng.standard_normal((C, C)) * scale for _ in range(4))
        out_, cache_ = multi_head_attention_forward(X, Wq_, Wk_, Wv_, Wo_, n_heads)
        report.append({"h": n_heads, "hs": C // n_heads,
                       "scores_shape": cache_["scores"].shape, "out_shape": out_.shape})
    return report
    ### END SOLUTION


# %%
for row in sweep_head_counts(X, [1, 2, 4, 8]):
    print(f"h={row['h']}  hs={row['hs']:2d}  scores {row['scores_shape']}  out {row['out_shape']}")

# %% nbgrader={"grade": true, "grade_id": "test_sweep_head_counts", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_sweep_head_counts(X, h_values):
    """Visible check with a hint for the usual mistakes."""
    B, T, C = X.shape
    report = sweep_head_counts(X, h_values)
    assert len(report) == len(h_values), f"expected one dict per h ({len(h_values)}), got {len(report)}"
    for n_heads, row in zip(h_values, report, strict=True):
        assert row["h"] == n_heads, f"rows should follow h_values in order; expected h={n_heads}, got {row['h']}"
        assert row["hs"] == C // n_heads, f"h={n_heads}: head size should be C // h = {C // n_heads}, got {row['hs']}"
        assert tuple(row["scores_shape"]) == (B, n_heads, T, T), (
            f"h={n_heads}: scores should be (B, h, T, T) = {(B, n_heads, T, T)}, got {tuple(row['scores_shape'])}")
        assert tuple(row["out_shape"]) == (B, T, C), (
            f"h={n_heads}: the output should keep the input shape {(B, T, C)}, got {tuple(row['out_shape'])}")


def check_sweep_rejects(X, h_bad):
    """The sweep must refuse a head count that does not divide C."""
    try:
        sweep_head_counts(X, [1, h_bad])
    except ValueError:
        return
    raise AssertionError(f"C={X.shape[-1]} is not divisible by h={h_bad}: sweep_head_counts should raise ValueError")


check_sweep_head_counts(X, [1, 2, 4, 8])
check_sweep_rejects(X, 3)
print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# **Parallel attention over the head axis.** With $Q, K, V$ shaped `(B, h, T, hs)`, one `@`
# computes every head's attention at once: `np.matmul` batches over all leading axes, so the head
# axis behaves exactly like the batch axis. $K^\top$ is `K.transpose(0, 1, 3, 2)`, `(B, h, hs, T)`;
# scores are `(B, h, T, T)`; softmax runs over the last axis; the per-head output is `(B, h, T, hs)`.
#
# **Concatenation.** The split in reverse: `(B, h, T, hs)`, transpose to `(B, T, h, hs)`, reshape
# to `(B, T, C)`. It copies numbers and computes none: block $i$ of the concat is head $i$'s
# output, byte for byte. Reshaping without the transpose gives the right shape and the wrong
# vectors, silently.
#
# **The output projection.** $\text{MultiHead}(X) = \text{Concat}(\text{head}_1, \dots, \text{head}_h)\, W_o$.
# Before $W_o$ the heads are independent (Exercise 2 showed it); the dense $W_o$ is the only place
# they interact. Lesson 4 proves that $W_o$'s density is what makes them interact.
#
# **The verified forward.** Seed 42, $B=2, T=6, C=64, h=4, hs=16$: `(2, 6, 64)` to $Q/K/V$
# `(2, 4, 6, 16)` to scores `(2, 4, 6, 6)` to per-head `(2, 4, 6, 16)` to concat `(2, 6, 64)` to
# output `(2, 6, 64)`, with every attention row summing to 1 and different heads attending differently.
#
# **Next:** Lesson 4 knocks out one head at a time to prove what $W_o$ does, and counts the
# parameters of the block: $4C^2$, whatever the number of heads.
