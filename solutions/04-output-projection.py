# ---
# jupyter:
#   jupytext:
#     formats: 04-output-projection//ipynb,py:percent
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
# # Lesson 4: What the output projection does, and what it does not
#
# Lesson 3 ended with the last step of the layer, the output projection: the concatenated heads
# times a learned `(C, C)` matrix $W_o$. It also showed that this product is a sum of one term per
# head. This lesson takes that sum seriously. You will write the per-head terms, knock out one
# head and count how many output dimensions move, and compare a dense $W_o$ with a
# block-diagonal one that only lets each head write into its own columns. Three facts come out,
# each checked in a cell:
#
# - the dense $W_o$ lets every head write to every output dimension;
# - a block-diagonal $W_o$ is the same as no $W_o$ at all, its blocks folded into the value projection;
# - $W_o$ adds the heads' contributions and never combines two heads into one feature: heads meet
#   in the next layer, whose dense matrices read all of them.
#
# Then you will count what $W_o$ and its three siblings cost: $4C^2$ parameters per block,
# however many heads you slice the width into.
#
# **What you'll do**
# - write `head_contributions`, the per-head terms $\text{head}_i W_o^{(i)}$ that add up to the output (graded);
# - drop head 3 and count the output dimensions that move: with these draws, 64 of 64 with a dense
#   $W_o$ and 16 of 64 with a block-diagonal one, at every position and for every head;
# - fold a block-diagonal $W_o$ into $W_v$ and get the same output without any $W_o$;
# - measure the interaction of two heads, in this layer and in the next one;
# - count the parameters of an attention block for every head count, and check three widely
#   quoted figures about GPT-2 small against its real parameter count.
#
# **What you'll learn**
# - why the output of multi-head attention is a sum of one term per head, $\text{head}_i W_o^{(i)}$;
# - that which output dimensions a head can reach is decided by the zeros of $W_o$;
# - that a linear $W_o$ cannot build a feature that needs two heads at once;
# - why the parameter budget of an attention block is $4C^2$ whatever $h$ is.
#
# **What you'll need**
# - the multi-head layer of Lesson 3, and NumPy slicing, reshapes, boolean masks and `np.einsum`.
#
# One graded exercise sits in the lesson, where its idea is taught, and three practice exercises
# close it. Their visible checks run as you work; hidden tests with fresh inputs run when your
# notebook is graded.

# %%
import copy
import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

# %% [markdown]
# ## 1. The layer and the lesson's data
#
# The layer is the `multi_head_attention_forward` you wrote in Lesson 3; a copy is provided here
# so that this notebook runs on its own. It projects $X$ to $Q, K, V$, splits them into heads of
# size $hs = C/h$, computes every head's attention
# $\text{head}_i = \text{softmax}\!\left(Q_i K_i^\top / \sqrt{hs}\right) V_i$ at once, concatenates the
# heads and multiplies by $W_o$:
#
# $$\text{MultiHead}(X) = \text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})\, W_o, \qquad
# \text{softmax}(x)_j = \frac{e^{x_j - m}}{\sum_k e^{x_k - m}}, \quad m = \max_k x_k .$$

# %%
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    x = x - x.max(axis=axis, keepdims=True)  # subtract the row max for stability
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h):
    """Lesson 3's layer: X (B, T, C) -> (out (B, T, C), cache of intermediates)."""
    B, T, C = X.shape
    hs = C // h  # head size

    def heads(W):  # project, then split: (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)
        return (X @ W).reshape(B, T, h, hs).transpose(0, 2, 1, 3)

    Q, K, V = heads(Wq), heads(Wk), heads(Wv)
    weights = softmax(Q @ np.swapaxes(K, -2, -1) / np.sqrt(hs), axis=-1)  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
    per_head = weights @ V  # (B, h, T, T) @ (B, h, T, hs) -> (B, h, T, hs)
    concat = per_head.transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
    out = concat @ Wo  # (B, T, C) @ (C, C) -> (B, T, C)
    return out, {"Q": Q, "K": K, "V": V, "weights": weights, "per_head": per_head, "concat": concat}


# %% [markdown]
# The data is Lesson 3's: $B = 2$ sequences of $T = 6$ positions, width $C = 64$, $h = 4$ heads of
# size $hs = 16$, drawn from `np.random.default_rng(42)` in the order `X`, `Wq`, `Wk`, `Wv`, `Wo`,
# with the projections at scale 0.2. A NumPy `Generator` is a stream: every draw continues where
# the previous one stopped. Section 3 draws more numbers from the same stream, so the generator is
# kept.

# %%
rng = np.random.default_rng(42)
B, T, C, h = 2, 6, 64, 4
hs = C // h

X = rng.standard_normal((B, T, C))  # unit-scale inputs, (B, T, C)
Wq = rng.standard_normal((C, C)) * 0.2  # 0.2 init so attention differentiates
Wk = rng.standard_normal((C, C)) * 0.2
Wv = rng.standard_normal((C, C)) * 0.2
Wo = rng.standard_normal((C, C)) * 0.2  # the dense output projection

out, cache = multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h)
concat = cache["concat"]  # (B, T, C): head i's output in columns i*hs:(i+1)*hs
print("X:", X.shape, " concat:", concat.shape, " out:", out.shape)

# %% [markdown]
# ## 2. One term per head
#
# Columns 0 to $hs-1$ of the concat come from head 0 alone, the next $hs$ columns from head 1
# alone, and so on. Split the rows of $W_o$ the same way, into $h$ row-blocks $W_o^{(i)}$ of shape
# `(hs, C)`: rows $i \cdot hs$ to $(i+1) \cdot hs - 1$, the rows that multiply head $i$'s columns of
# the concat. A matrix product taken block by block is a sum, so the output falls apart into one
# term per head:
#
# $$\text{MultiHead}(X) = \text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})\, W_o = \sum_{i=0}^{h-1} \text{head}_i\, W_o^{(i)},
# \qquad \text{head}_i \in \mathbb{R}^{B \times T \times hs}, \quad W_o^{(i)} \in \mathbb{R}^{hs \times C}.$$
#
# Term $i$ is `(B, T, C)`: a full-width contribution to the output, computed from head $i$'s
# output and nothing else.
#
# ### Exercise 1: the per-head terms (3 points)
#
# Write `head_contributions(concat, Wo, h)`. Given a concatenated head output `concat` of shape
# `(B, T, C)` and an output projection `Wo` of shape `(C, C)`, return the array of shape
# `(B, h, T, C)` whose `[:, i]` is head $i$'s term,
# `concat[..., i*hs:(i+1)*hs] @ Wo[i*hs:(i+1)*hs, :]`. No loop over heads: reshape `concat` into
# its heads and `Wo` into its row-blocks, and let `@` (or `np.einsum`) pair head $i$ with
# $W_o^{(i)}$. Do not modify the inputs. Summed over the head axis, your terms must give
# `concat @ Wo`.

# %% nbgrader={"grade": false, "grade_id": "head_contributions", "locked": false, "schema_version": 3, "solution": true, "task": false}
def head_contributions(concat, Wo, h):
    """Each head's term head_i @ Wo^(i): concat (B, T, C), Wo (C, C) -> (B, h, T, C)."""
    ### BEGIN SOLUTION
    B, T, C = concat.shape
    hs = C // h
    head_outputs = concat.reshape(B, T, h, hs).transpose(0, 2, 1, 3)  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)
    row_blocks = Wo.reshape(h, hs, C)  # (C, C) -> (h, hs, C): W_o^(i) = rows i*hs:(i+1)*hs
    return head_outputs @ row_blocks  # (B, h, T, hs) @ (h, hs, C), batched over h -> (B, h, T, C)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_head_contributions", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_head_contributions(concat, Wo, h):
    """Visible check with a hint for the usual mistakes."""
    B, T, C = concat.shape
    hs = C // h
    inputs = concat.copy(), Wo.copy()
    got = head_contributions(concat, Wo, h)
    assert np.array_equal(concat, inputs[0]) and np.array_equal(Wo, inputs[1]), "head_contributions modified its inputs"
    assert isinstance(got, np.ndarray), f"head_contributions should return a NumPy array, got {type(got).__name__}"
    rows = [slice(i * hs, (i + 1) * hs) for i in range(h)]
    expected = np.stack([concat[..., s] @ Wo[s, :] for s in rows], axis=1)  # (B, h, T, C), head by head
    if got.shape == (h, B, T, C) and h != B:
        raise AssertionError(f"got shape (h, B, T, C) = {got.shape}: put the head axis second, (B, h, T, C)")
    assert got.shape == expected.shape, f"expected shape (B, h, T, C) = {expected.shape}, got {got.shape}"
    if np.allclose(got, expected):
        return
    interleaved = np.stack([concat[..., i::h] @ Wo[i::h, :] for i in range(h)], axis=1)  # heads taken every h-th column
    if np.allclose(got, interleaved):
        raise AssertionError("the heads are interleaved: head i's part of the concat is the consecutive columns "
                             "i*hs:(i+1)*hs, so reshape C as (h, hs), not (hs, h)")
    from_columns = np.stack([concat[..., s] @ Wo[:, s].T for s in rows], axis=1)
    if np.allclose(got, from_columns):
        raise AssertionError("you took W_o^(i) from the COLUMNS of Wo: it is the ROWS i*hs:(i+1)*hs, the ones that "
                             "multiply head i's columns of the concat")
    if np.allclose(got.sum(axis=1), concat @ Wo):
        raise AssertionError("the terms add up to concat @ Wo but are not the per-head terms: term i may use only "
                             "head i's columns of concat and rows of Wo")
    raise AssertionError("term i should be concat[..., i*hs:(i+1)*hs] @ Wo[i*hs:(i+1)*hs, :]")


_rng = np.random.default_rng(42)  # the lesson's data, drawn again here
_X = _rng.standard_normal((2, 6, 64))
_Wq, _Wk, _Wv, _Wo = (_rng.standard_normal((64, 64)) * 0.2 for _ in range(4))
check_head_contributions(multi_head_attention_forward(_X, _Wq, _Wk, _Wv, _Wo, 4)[1]["concat"], _Wo, 4)
_rng = np.random.default_rng(3)
check_head_contributions(_rng.standard_normal((3, 2, 12)), _rng.standard_normal((12, 12)), 3)  # B, T, h all differ
check_head_contributions(_rng.standard_normal((2, 4, 5)), _rng.standard_normal((5, 5)), 1)  # one head: concat @ Wo
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# On the lesson's data, the four terms should add up to the layer's output:

# %%
terms_dense = head_contributions(concat, Wo, h)  # (B, h, T, C)
print("terms:", terms_dense.shape, "(B, h, T, C)")
print("sum over the head axis equals the output:", np.allclose(terms_dense.sum(axis=1), out))

# %% [markdown]
# ## 3. Drop one head, count what moves
#
# The sum says what dropping a head does: setting head $i$'s columns of the concat to zero, as if
# that head had output nothing, removes exactly the term $\text{head}_i W_o^{(i)}$ from the output.
# That term can only touch output column $j$ if column $j$ of $W_o^{(i)}$ has a nonzero entry. So
# the zeros of $W_o$ decide which output dimensions a head can reach. To see it, compare the dense
# $W_o$ with a **block-diagonal** one, nonzero only inside each head's own `(hs, hs)` block on the
# diagonal, which lets head $i$'s columns of the concat feed only output dimensions
# $i \cdot hs$ to $(i+1) \cdot hs - 1$:
#
# $$W_o^{\text{block}} = \begin{pmatrix} B_0 & 0 & 0 & 0 \\ 0 & B_1 & 0 & 0 \\ 0 & 0 & B_2 & 0 \\ 0 & 0 & 0 & B_3 \end{pmatrix},
# \qquad B_i \in \mathbb{R}^{hs \times hs}.$$
#
# The four blocks are drawn from the same generator, right after $W_o$: each `(hs, hs)`, times
# 0.2, block 0 first. A copy of the generator taken before the blocks keeps that point of the
# stream, so the same draws can be replayed later.

# %%
rng_at_blocks = copy.deepcopy(rng)  # a snapshot of the stream before the blocks, to replay the draws later

# Block-diagonal W_o: entry (r, c) may be nonzero only if row r and column c belong to the same head.
head_of_dim = np.arange(C) // hs  # (C,): which head each of the C dimensions belongs to
same_head = head_of_dim[:, None] == head_of_dim[None, :]  # (C, 1) == (1, C) -> (C, C) boolean mask
Wo_bd = np.zeros((C, C))
Wo_bd[same_head] = rng.standard_normal(h * hs * hs) * 0.2  # fills the True entries in row-major order

print("Wo_bd nonzero entries:", np.count_nonzero(Wo_bd), "= h * hs * hs =", h * hs * hs, "of", C * C)

# %% [markdown]
# The mask assignment fills the `True` entries of `same_head` in row-major order. Rows 0 to 15
# have their `True` entries in columns 0 to 15, so the first 256 numbers fill block $B_0$ row by
# row, the next 256 fill $B_1$, and so on: the same numbers in the same places as the usual
# construction, a loop that draws one `(hs, hs)` block per head. The cell below runs that loop on
# a copy of the snapshot, to confirm the two matrices are identical. (The loop is run only for
# this comparison; the mask builds the matrix in one assignment and works for any $h$.)

# %%
replay_rng = copy.deepcopy(rng_at_blocks)  # a copy, so that the snapshot stays unused for Exercise 2
loop_block_diag = np.zeros((C, C))
for i in range(h):  # one block per head, drawn in order: run once to compare
    s = slice(i * hs, (i + 1) * hs)
    loop_block_diag[s, s] = replay_rng.standard_normal((hs, hs)) * 0.2
print("mask construction equals the loop over blocks, number for number:", np.array_equal(Wo_bd, loop_block_diag))

# %% [markdown]
# Here are the two output projections side by side. Each row of $W_o$ is read by one dimension
# of the concat; each column produces one output dimension. The dashed lines mark the head blocks.

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), constrained_layout=True)
limit = np.abs(Wo).max()  # one symmetric colour scale for both panels
for ax, (name, W) in zip(axes, [("dense $W_o$", Wo), ("block-diagonal $W_o$", Wo_bd)], strict=True):
    image = ax.imshow(W, cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
    for edge in range(hs, C, hs):  # head boundaries
        ax.axhline(edge - 0.5, color="black", lw=0.8, ls="--")
        ax.axvline(edge - 0.5, color="black", lw=0.8, ls="--")
    ax.set_xticks(list(range(0, C, hs)) + [C - 1])
    ax.set_yticks(list(range(0, C, hs)) + [C - 1])
    ax.set_xlabel("output dimension (column of $W_o$)")
    ax.set_ylabel("concat dimension (row of $W_o$)")
    ax.set_title(f"{name}: {np.count_nonzero(W)} nonzero weights")
fig.colorbar(image, ax=axes, shrink=0.8, label="weight value")
fig.suptitle(f"The two output projections (C={C}, h={h}, hs={hs}); dashed lines separate the heads")
plt.show()

# %% [markdown]
# *Figure: left, every weight of the dense $W_o$ is nonzero, so every row (every head's concat
# dimension) reaches every column (output dimension). Right, the block-diagonal $W_o$ is white
# (zero) outside the four diagonal blocks: rows 48 to 63, head 3's part of the concat, reach only
# columns 48 to 63.*
#
# Now the experiment: zero head 3's slice of the concat, project with each $W_o$, and count the
# output dimensions of position 0 in sequence 0 whose change is larger than $10^{-9}$ in absolute
# value.

# %%
out_bd, _ = multi_head_attention_forward(X, Wq, Wk, Wv, Wo_bd, h)  # the same concat, the other W_o

dropped = 3
concat_drop = concat.copy()
concat_drop[:, :, dropped * hs:(dropped + 1) * hs] = 0.0  # head 3 outputs nothing
moved_dense = np.abs(concat_drop @ Wo - out)  # (B, T, C) @ (C, C) -> (B, T, C), |change|
moved_bd = np.abs(concat_drop @ Wo_bd - out_bd)  # (B, T, C)

atol = 1e-9
print("drop head 3 -> output dims changed at [0, 0] (dense Wo):         ",
      int((moved_dense[0, 0] > atol).sum()), "of", C)
print("drop head 3 -> output dims changed at [0, 0] (block-diagonal Wo):",
      int((moved_bd[0, 0] > atol).sum()), "of", C)

# %% [markdown]
# With these draws: 64 of 64 with the dense projection, 16 of 64 with the block-diagonal one. With
# the dense $W_o$, every output dimension was reading head 3; with the block-diagonal one, only
# head 3's own 16 dimensions were.
#
# ### Every position, both sequences, every head
#
# That count looked at one position of one sequence. The claim is about the layer, so count at
# every position of both sequences, and also the union: the dimensions that change at **any**
# position.

# %%
print("dims changed per position (dense Wo), rows = batch element, columns = position:")
print((moved_dense > atol).sum(axis=-1))  # (B, T)
print("dims changed per position (block-diagonal Wo):")
print((moved_bd > atol).sum(axis=-1))  # (B, T)
print("dims changed at any position: dense", int((moved_dense > atol).any(axis=(0, 1)).sum()),
      "| block-diagonal", int((moved_bd > atol).any(axis=(0, 1)).sum()), "of", C)
print("block-diagonal: largest change outside head 3's columns =", moved_bd[:, :, :dropped * hs].max())

# %% [markdown]
# At all $2 \times 6 = 12$ positions the count is 64 with the dense projection and 16 with the
# block-diagonal one, and outside head 3's own columns the block-diagonal output does not move by
# a single bit (the largest change there is exactly 0.0). The heatmap shows the size of every
# change, not just whether it is above $10^{-9}$.

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), constrained_layout=True)
vmax = max(moved_dense.max(), moved_bd.max())  # one colour scale for both panels
row_labels = [f"b{b} t{t}" for b in range(B) for t in range(T)]
magma_grey_zero = plt.colormaps["magma"].with_extremes(bad="#cccccc")  # exact zeros, masked below, in grey
for ax, (name, moved) in zip(axes, [("dense $W_o$", moved_dense), ("block-diagonal $W_o$", moved_bd)], strict=True):
    shown = np.ma.masked_equal(moved.reshape(B * T, C), 0.0)  # (B, T, C) -> (B*T, C), exact zeros masked
    image = ax.imshow(shown, aspect="auto", cmap=magma_grey_zero, vmin=0.0, vmax=vmax, interpolation="nearest")
    for edge in range(hs, C, hs):  # head boundaries
        ax.axvline(edge - 0.5, color="white", lw=0.8, ls="--")
    ax.set_xticks(list(range(0, C, hs)) + [C - 1])
    ax.set_yticks(range(B * T), row_labels)
    ax.set_xlabel("output dimension")
    ax.set_ylabel("batch element b, position t")
    ax.set_title(f"{name}: {int((moved > atol).any(axis=(0, 1)).sum())} of {C} dims move")
fig.colorbar(image, ax=axes, shrink=0.85, label="|change in output| after dropping head 3")
fig.suptitle("Dropping head 3: size of the change at every position and output dimension (grey: exactly zero)")
plt.show()

# %% [markdown]
# *Figure: each row is one position of one sequence, each column one output dimension, and the
# colour is the absolute change when head 3 is dropped, and grey marks a change of exactly zero.
# Left, the change is spread over all 64 columns at every position (no grey cell). Right, it is
# confined to columns 48 to 63 (right of the last dashed line), and everything to their left is
# grey: not a small change, no change at all.*
#
# The change is exactly head 3's term of section 2, so your `head_contributions` gives the map for
# every head without re-running anything: output dimension $j$ moves when head $i$ is dropped if
# head $i$'s term is nonzero in column $j$ at some position. One boolean array of shape `(h, C)`
# per projection:

# %%
terms_bd = head_contributions(concat, Wo_bd, h)  # (B, h, T, C)
print("head 3's term equals the change from dropping head 3 (dense, block-diagonal):",
      np.allclose(terms_dense[:, dropped], out - concat_drop @ Wo),  # (B, T, C) @ (C, C) -> (B, T, C)
      np.allclose(terms_bd[:, dropped], out_bd - concat_drop @ Wo_bd))  # (B, T, C)

moves_dense = (np.abs(terms_dense) > atol).any(axis=(0, 2))  # (B, h, T, C) -> (h, C)
moves_bd = (np.abs(terms_bd) > atol).any(axis=(0, 2))  # (h, C)
print("dims moved when head i is dropped, i = 0..3: dense", moves_dense.sum(axis=1),
      "| block-diagonal", moves_bd.sum(axis=1))

two_colours = ListedColormap(["#e8e8e8", "#b2182b"])  # 0 = unchanged, 1 = changed
fig, axes = plt.subplots(2, 1, figsize=(11, 4.8), constrained_layout=True)
for ax, (name, moves) in zip(axes, [("dense $W_o$", moves_dense), ("block-diagonal $W_o$", moves_bd)], strict=True):
    image = ax.imshow(moves, aspect="auto", cmap=two_colours, vmin=-0.5, vmax=1.5, interpolation="nearest")
    for edge in range(hs, C, hs):  # head boundaries
        ax.axvline(edge - 0.5, color="black", lw=0.8, ls="--")
    ax.set_xticks(list(range(0, C, hs)) + [C - 1])
    ax.set_yticks(range(h), [f"head {i}" for i in range(h)])
    ax.set_xlabel("output dimension")
    ax.set_ylabel("head dropped")
    ax.set_title(f"{name}: output dimensions that move ({', '.join(str(n) for n in moves.sum(axis=1))} of {C})")
colourbar = fig.colorbar(image, ax=axes, ticks=[0, 1], shrink=0.8)
colourbar.ax.set_yticklabels(["unchanged", "changed"])
fig.suptitle("Which output dimensions move when each head is dropped (any position, either sequence)")
plt.show()

# %% [markdown]
# *Figure: each row is one head knocked out; red marks the output dimensions that change at one
# or more of the 12 positions. Top, dropping any head moves all 64 dimensions: with a dense
# $W_o$ every head feeds every output. Bottom, a staircase: head $i$ reaches only its own 16
# columns, and no output dimension is fed by two heads.*

# %% [markdown]
# ## 4. A block-diagonal $W_o$ is no $W_o$ at all
#
# Write head $i$ in full. With $A_i = \text{softmax}\!\left(Q_i K_i^\top / \sqrt{hs}\right)$, head $i$'s
# `(T, T)` weights, and $W_v^{(i)}$, head $i$'s `(C, hs)` columns of $W_v$, the head's output is
# $\text{head}_i = A_i X W_v^{(i)}$. With the block-diagonal projection, $W_o^{(i)}$ is zero except
# for the block $B_i$ in head $i$'s own columns, so the output in those columns is
#
# $$\text{head}_i\, B_i = A_i\, X\, \big(W_v^{(i)} B_i\big) .$$
#
# $W_v^{(i)} B_i$ is just another `(C, hs)` matrix. Fold each block into its head's value
# columns, and the same layer with $W_o = I$, the identity (no output projection at all), gives
# the same output:

# %%
diagonal_blocks = Wo_bd.reshape(h, hs, h, hs)[np.arange(h), :, np.arange(h), :]  # (C, C) -> (h, hs, h, hs) -> (h, hs, hs): B_i
Wv_heads = Wv.reshape(C, h, hs)  # (C, C) -> (C, h, hs): Wv_heads[:, i] is W_v^(i), head i's value columns
Wv_folded = np.einsum("cia,iab->cib", Wv_heads, diagonal_blocks).reshape(C, C)  # W_v^(i) B_i: (C, h, hs) -> (C, C)
out_no_wo, _ = multi_head_attention_forward(X, Wq, Wk, Wv_folded, np.eye(C), h)  # W_o = I
print("blocks folded into W_v, W_o = I, equals the block-diagonal layer:",
      np.allclose(out_no_wo, out_bd, rtol=0, atol=1e-12))

# %% [markdown]
# Equal to $10^{-12}$. Without an output projection, the output is the concat itself: head $i$
# writes its $hs$ numbers into its own $hs$ columns and nowhere else, the staircase of section 3.
# The layer is then $h$ single-head layers of width $hs$ side by side, and a block-diagonal $W_o$
# adds nothing that the value projection could not do on its own.
#
# ## 5. What the dense $W_o$ buys
#
# Do the same with the dense $W_o$. Head $i$'s term is
#
# $$\text{head}_i\, W_o^{(i)} = A_i\, X\, \big(W_v^{(i)} W_o^{(i)}\big), \qquad W_v^{(i)} W_o^{(i)} \in \mathbb{R}^{C \times C} .$$
#
# The product $W_v^{(i)} W_o^{(i)}$, `(C, hs) @ (hs, C)`, is a full-width `(C, C)` matrix, but of
# rank at most $hs$: it passes through head $i$'s $hs$ numbers. So the dense $W_o$ gives each head
# a value map into the whole $C$-dimensional output, through an $hs$-dimensional bottleneck: every
# head can write to every output dimension, which section 3 counted.

# %%
Wo_rows = Wo.reshape(h, hs, C)  # (C, C) -> (h, hs, C): W_o^(i), head i's rows
value_maps = np.einsum("cia,iad->icd", Wv_heads, Wo_rows)  # W_v^(i) W_o^(i): (C, hs) @ (hs, C) -> (h, C, C)
print("value maps:", value_maps.shape, "(h, C, C); rank of each:",
      [int(np.linalg.matrix_rank(m)) for m in value_maps])
out_from_maps = np.einsum("bitk,bkc,icd->btd", cache["weights"], X, value_maps, optimize=True)  # sum_i A_i X M_i
print("sum over heads of A_i X (W_v^(i) W_o^(i)) equals the layer's output:", np.allclose(out_from_maps, out))

# %% [markdown]
# Each head's value map is `(64, 64)` of rank 16, and the four of them rebuild the layer's output.
# That is all the dense $W_o$ adds: reach. It does not let heads combine, as the next section
# shows.
#
# ## 6. $W_o$ adds the heads; it does not combine them
#
# Because the output is a sum of per-head terms, dropping a set of heads removes exactly their
# terms. Take two heads $a \ne b$ and write $\text{out}_{-a}$ for the output with head $a$
# dropped. Their **interaction**
#
# $$\Delta_{ab} = \text{out} - \text{out}_{-a} - \text{out}_{-b} + \text{out}_{-a,-b}$$
#
# is what the two heads do together beyond what each does alone. With the sum, $\text{out} -
# \text{out}_{-a}$ and $\text{out}_{-b} - \text{out}_{-a,-b}$ are both head $a$'s term, so
# $\Delta_{ab} = 0$: whatever head $a$ adds to an output dimension, it adds the same whether head
# $b$ is there or not. No output feature of the layer, whatever $W_o$ is, can respond to two heads
# jointly (be large only when both are active): that would need a step that is not linear.

# %%
def drop_heads(concat, heads):
    """A copy of concat with the columns of the given heads set to zero."""
    dropped_dims = np.isin(np.arange(concat.shape[-1]) // hs, heads)  # (C,): True in the dropped heads' columns
    return np.where(dropped_dims, 0.0, concat)  # (B, T, C)


def interaction(W, a, b):
    """out - out_{-a} - out_{-b} + out_{-a,-b} for output projection W (C, C): (B, T, C)."""
    def out_without(heads):
        return drop_heads(concat, heads) @ W  # (B, T, C) @ (C, C) -> (B, T, C)

    return out_without([]) - out_without([a]) - out_without([b]) + out_without([a, b])


pairs = [(a, b) for a in range(h) for b in range(a + 1, h)]
for name, W in [("dense", Wo), ("block-diagonal", Wo_bd)]:
    largest = max(np.abs(interaction(W, a, b)).max() for a, b in pairs)
    print(f"{name:15s} W_o: largest |interaction| over all {len(pairs)} pairs of heads, every position "
          f"and output dim, below 1e-12: {largest < 1e-12}")
print(f"for scale, the largest |output| of the layer (dense W_o): {np.abs(out).max():.2f}")

# %% [markdown]
# Zero, up to rounding, for all six pairs and both projections: $W_o$ is a sum, never a
# combination.
#
# ### Where the heads meet: the next layer
#
# The next attention layer reads this layer's output through its own projections, dense `(C, C)`
# matrices $W_q', W_k', W_v'$. Every dimension of its queries is a weighted sum over **all** $C$
# dimensions of this layer's output, so it reads every head, whatever this layer's $W_o$ was. And
# its softmax is not linear, so there the interaction of two heads is no longer zero. Both claims,
# on a second layer drawn from `np.random.default_rng(7)`:

# %%
next_rng = np.random.default_rng(7)  # a second layer's query and key projections
Wq_next, Wk_next = (next_rng.standard_normal((C, C)) * 0.2 for _ in range(2))

q_next_moved = np.abs(concat_drop @ Wo_bd @ Wq_next - out_bd @ Wq_next)  # (B, T, C) @ (C, C) -> (B, T, C)
print("block-diagonal W_o, head 3 dropped: this layer's output dims that move",
      int((moved_bd > atol).any(axis=(0, 1)).sum()), "| the next layer's query dims that move",
      int((q_next_moved > atol).any(axis=(0, 1)).sum()), "of", C)


def next_layer_weights(layer_out):
    """The next layer's attention weights (B, h, T, T), computed from this layer's output (B, T, C)."""
    return multi_head_attention_forward(layer_out, Wq_next, Wk_next, np.eye(C), np.eye(C), h)[1]["weights"]


def next_weights(heads):
    return next_layer_weights(drop_heads(concat, heads) @ Wo)  # this layer's output with `heads` dropped


interaction_next = next_weights([]) - next_weights([0]) - next_weights([1]) + next_weights([0, 1])  # (B, h, T, T)
print(f"next layer's attention weights, heads 0 and 1 of this layer: largest |interaction| = "
      f"{np.abs(interaction_next).max():.3f}")

# %% [markdown]
# With the block-diagonal $W_o$, dropping head 3 moved 16 of this layer's 64 output dimensions,
# and all 64 dimensions of the next layer's queries: the next layer's dense projection undoes the
# isolation at once. And the next layer's attention weights respond to heads 0 and 1 jointly: the
# interaction is far from zero. So the heads of one layer meet in the layers after it, through
# their dense projections and their softmax, not in $W_o$.

# %% [markdown]
# ## 7. What the block costs: $4C^2$ parameters, whatever $h$ is
#
# Count the weights head by head. Head $i$ owns a `(C, hs)` slice of each of $W_q$, $W_k$, $W_v$
# (its columns) and a `(hs, C)` slice of $W_o$ (its rows, the $W_o^{(i)}$ of section 2). Each
# slice has $C \cdot hs$ entries, so
#
# $$\text{params} = h \cdot 4 \cdot C \cdot hs = 4 \cdot C \cdot (h \cdot hs) = 4C^2 .$$
#
# The head count cancels: more heads means smaller slices, never more weights. The cell below
# does not trust the formula. For GPT-2 small's width $C = 768$ it builds the four matrices, cuts
# them into per-head slices with `np.split` for each head count, and adds up the slices' actual
# array sizes.

# %%
def per_head_slices(C, h):
    """The per-head weight slices of one bias-free attention block: name -> list of h arrays."""
    Wq_, Wk_, Wv_, Wo_ = (np.zeros((C, C)) for _ in range(4))  # the values do not matter, only the sizes
    return {"W_q": np.split(Wq_, h, axis=1),  # h arrays of (C, hs): head i's columns
            "W_k": np.split(Wk_, h, axis=1),
            "W_v": np.split(Wv_, h, axis=1),
            "W_o": np.split(Wo_, h, axis=0)}  # h arrays of (hs, C): head i's rows


C_gpt2 = 768
print(f"C = {C_gpt2}: parameters of one attention block, counted from the per-head slices")
print(f"{'h':>3} {'hs':>4} {'W_q/W_k/W_v slice':>18} {'W_o slice':>10} {'per head':>9} {'whole block':>12}")
budget = {}
for n_heads in [1, 2, 3, 4, 6, 8, 12]:  # a sweep over configurations, not a loop inside the layer
    slices = per_head_slices(C_gpt2, n_heads)
    budget[n_heads] = sum(piece.size for pieces in slices.values() for piece in pieces)
    one_head = sum(pieces[0].size for pieces in slices.values())  # head 0's four slices
    print(f"{n_heads:>3} {C_gpt2 // n_heads:>4} {str(slices['W_q'][0].shape):>18} {str(slices['W_o'][0].shape):>10}"
          f" {one_head:>9,} {budget[n_heads]:>12,}")
print("every head count gives the same total:", len(set(budget.values())) == 1,
      "| equals 4 * C**2 =", f"{4 * C_gpt2**2:,}:", budget[12] == 4 * C_gpt2**2)

# %% [markdown]
# Every row totals 2,359,296 $= 4 \cdot 768^2$. With 12 heads each head owns $4 \cdot 768 \cdot 64 =$
# 196,608 weights; with one head, that head owns them all.
#
# ### Checking three figures about GPT-2 small
#
# Three figures about GPT-2 small's attention are widely quoted: one block has
# $4 \cdot 768^2 = 2{,}359{,}296$ parameters (the table confirms it); its 12 blocks hold "~28.3M,
# roughly 23% of the model"; and, in a widely copied example, "a single attention layer with
# $D = 768$ has $3 \cdot 768^2 \approx 1.77$M parameters". To check the percentage, count GPT-2
# small itself. Its parameters, by their names in the released checkpoint, are the token
# embedding `wte` `(50257, 768)`, the position embedding `wpe` `(1024, 768)`, 12 blocks, and a
# final layer norm `ln_f`. The output layer reuses `wte` (tied embeddings), so it adds nothing.
# Unlike the bias-free attention of this course, GPT-2's linear layers have biases, and
# `attn.c_attn` is the fused $W_q, W_k, W_v$ projection `(768, 2304)`.

# %%
n_embd, n_layer, vocab_size, n_ctx = 768, 12, 50257, 1024
gpt2_block_shapes = {
    "ln_1.weight": (n_embd,), "ln_1.bias": (n_embd,),
    "attn.c_attn.weight": (n_embd, 3 * n_embd), "attn.c_attn.bias": (3 * n_embd,),  # fused W_q, W_k, W_v
    "attn.c_proj.weight": (n_embd, n_embd), "attn.c_proj.bias": (n_embd,),  # W_o
    "ln_2.weight": (n_embd,), "ln_2.bias": (n_embd,),
    "mlp.c_fc.weight": (n_embd, 4 * n_embd), "mlp.c_fc.bias": (4 * n_embd,),
    "mlp.c_proj.weight": (4 * n_embd, n_embd), "mlp.c_proj.bias": (n_embd,),
}
gpt2_shapes = {"wte.weight": (vocab_size, n_embd), "wpe.weight": (n_ctx, n_embd),
               **{f"h.{layer}.{name}": shape for layer in range(n_layer) for name, shape in gpt2_block_shapes.items()},
               "ln_f.weight": (n_embd,), "ln_f.bias": (n_embd,)}
gpt2_total = sum(math.prod(shape) for shape in gpt2_shapes.values())
embeddings = math.prod(gpt2_shapes["wte.weight"]) + math.prod(gpt2_shapes["wpe.weight"])
attention_bias_free = n_layer * budget[12]  # 12 bias-free blocks, from the table above
attention_gpt2 = sum(math.prod(shape) for name, shape in gpt2_shapes.items() if ".attn." in name)  # with biases

print(f"GPT-2 small, {len(gpt2_shapes)} tensors: {gpt2_total:,} parameters "
      f"(matches 124,439,808: {gpt2_total == 124_439_808})")
print(f"12 bias-free attention blocks          : {attention_bias_free:,} = {attention_bias_free / 1e6:.1f}M, "
      f"{100 * attention_bias_free / gpt2_total:.2f}% of the model")
print(f"12 attention blocks with GPT-2's biases: {attention_gpt2:,}, "
      f"{100 * attention_gpt2 / gpt2_total:.2f}% of the model")
print(f"token and position embeddings: {embeddings:,}, {100 * embeddings / gpt2_total:.1f}% of the model")
print(f"12 bias-free attention blocks as a share of the non-embedding parameters ({gpt2_total - embeddings:,}): "
      f"{100 * attention_bias_free / (gpt2_total - embeddings):.1f}%")

# %% [markdown]
# The per-model figure is right: 12 blocks hold 28,311,552 attention weights, 28.3M. So is
# "roughly 23%": 22.75% of GPT-2 small's 124,439,808 parameters, and 22.78% if GPT-2's attention
# biases are counted too. Note what the denominator includes: 31.6% of GPT-2 small is the token
# and position embeddings, and measured against the non-embedding parameters the attention blocks
# are a third (33.3%).
#
# The third figure is a common mistake worth understanding. It is about a single head of width
# $D = C = 768$:

# %%
qkv_only = 3 * C_gpt2**2
print(f"3 * 768**2 = {qkv_only:,}  (W_q, W_k, W_v of width 768: the quoted '~1.77M')")
print(f"4 * 768**2 = {qkv_only + C_gpt2**2:,}  (the same single head with its output projection W_o)")
print("a single head of width 768 with W_o costs the same as the h = 1 row of the table:",
      qkv_only + C_gpt2**2 == budget[1])

# %% [markdown]
# The arithmetic is right, $3 \cdot 768^2 = 1{,}769{,}472 \approx 1.77$M, but it counts only the
# query, key and value projections. A complete attention layer also has its `(768, 768)` output
# projection, which brings it to 2,359,296, exactly the multi-head block's budget. Counted
# completely on both sides, splitting one 768-wide head into 12 heads of 64 does not save or cost
# a single parameter; it only reorganises them.

# %% [markdown]
# ## Practice exercises
#
# Each exercise asks for one function. Replace `raise NotImplementedError()` with your code, run
# the cell, then run the test cell below it. The visible checks use the lesson's data (`default_rng(42)`) and
# tell you what a failure most likely means; when your notebook is graded, hidden tests call your
# function again on fresh inputs (other widths, head counts and random draws), so write the general
# function, not one that fits this lesson's numbers.
#
# ### Exercise 2: build a block-diagonal $W_o$ (3 points)
#
# Write `block_diagonal_wo(C, h, rng, scale=0.2)`. It returns a `(C, C)` array that is zero except
# for $h$ blocks of shape `(hs, hs)`, $hs = C/h$, on the diagonal: block $i$ occupies rows and
# columns $i \cdot hs$ to $(i+1) \cdot hs - 1$. The draw order is fixed so that results are
# reproducible: block 0 first, then block 1, up to block $h-1$, each an `(hs, hs)` array from
# `rng.standard_normal`, times `scale`. Draw nothing else from `rng`. (One call
# `rng.standard_normal((h, hs, hs))` gives the same numbers as $h$ calls of shape `(hs, hs)`:
# the generator is one stream, read in order.) You can assume that $h$ divides $C$.

# %% nbgrader={"grade": false, "grade_id": "block_diagonal_wo", "locked": false, "schema_version": 3, "solution": true, "task": false}
def block_diagonal_wo(C, h, rng, scale=0.2):
    """Block-diagonal (C, C) output projection: h blocks (hs, hs) from rng, in order, times scale."""
    ### BEGIN SOLUTION
    hs = C // h
    blocks = rng.standard_normal((h, hs, hs)) * scale  # block 0, 1, ..., h-1, each (hs, hs)
    placed = np.zeros((h, hs, h, hs))  # (C, C) seen as (row head, row, column head, column)
    placed[np.arange(h), :, np.arange(h), :] = blocks  # block i at row head i, column head i
    return placed.reshape(C, C)  # (h, hs, h, hs) -> (C, C)
    ### END SOLUTION


# %% [markdown]
# Started from the snapshot of the generator taken before the lesson drew its blocks, your
# function should rebuild the lesson's block-diagonal $W_o$ exactly:

# %%
print("block_diagonal_wo reproduces the lesson's Wo_bd:",
      np.array_equal(block_diagonal_wo(C, h, copy.deepcopy(rng_at_blocks)), Wo_bd))

# %% nbgrader={"grade": true, "grade_id": "test_block_diagonal_wo", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_block_diagonal_wo(C, h, rng_seed, scale=0.2):
    """Visible check with a hint for the usual mistakes."""
    hs = C // h
    expected_blocks = np.random.default_rng(rng_seed).standard_normal((h, hs, hs)) * scale  # (h, hs, hs)
    rng_ = np.random.default_rng(rng_seed)
    got = block_diagonal_wo(C, h, rng_) if scale == 0.2 else block_diagonal_wo(C, h, rng_, scale=scale)
    assert isinstance(got, np.ndarray), f"block_diagonal_wo should return a NumPy array, got {type(got).__name__}"
    assert got.shape == (C, C), f"expected shape (C, C) = {(C, C)}, got {got.shape}"
    grid = got.reshape(h, hs, h, hs)  # (row head, row, column head, column)
    on_diagonal = grid[np.arange(h), :, np.arange(h), :]  # (h, hs, hs)
    off_diagonal = grid.copy()
    off_diagonal[np.arange(h), :, np.arange(h), :] = 0.0
    assert np.all(off_diagonal == 0), (
        "nonzero weights outside the diagonal blocks: block i belongs at rows AND columns "
        "i*hs:(i+1)*hs (a block placed off the diagonal lets a head write into another head's columns)")
    if not np.allclose(on_diagonal, expected_blocks):
        raw = expected_blocks / scale  # the standard normals themselves
        if scale != 0.2 and np.allclose(on_diagonal, raw * 0.2):
            raise AssertionError("the blocks ignore the scale argument: multiply by scale, not by a fixed 0.2")
        if np.allclose(on_diagonal, raw):
            raise AssertionError("the blocks are not multiplied by scale")
        if np.allclose(np.sort(on_diagonal, axis=None), np.sort(expected_blocks, axis=None)):
            raise AssertionError("the right numbers in the wrong places: draw block 0 first, then block 1, ..., "
                                 "each (hs, hs) in row-major order, e.g. rng.standard_normal((h, hs, hs)), "
                                 "and put block i at rows and columns i*hs:(i+1)*hs without transposing it")
        raise AssertionError("the diagonal blocks do not hold rng's first h*hs*hs standard normals times scale: "
                             "draw exactly h blocks of shape (hs, hs) from rng (not a full (C, C) matrix), "
                             "and draw nothing else before them")
    follow_up = np.random.default_rng(rng_seed)
    follow_up.standard_normal((h, hs, hs))
    assert rng_.standard_normal() == follow_up.standard_normal(), (
        "rng is not left where the h blocks end: draw exactly h*hs*hs values from rng itself "
        "(not from a copy, and nothing more)")


check_block_diagonal_wo(64, 4, rng_seed=42)
check_block_diagonal_wo(64, 4, rng_seed=7, scale=1.0)
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: count the output dimensions a head reaches (3 points)
#
# Write `dims_changed_by_dropping(concat, Wo, head, h, atol=1e-9)`. Given a concatenated head
# output `concat` of shape `(B, T, C)` and an output projection `Wo` of shape `(C, C)`:
#
# - `out = concat @ Wo`;
# - `out_drop` is the same product after setting head `head`'s columns of `concat`,
#   `head*hs` to `(head+1)*hs - 1`, to zero (on a copy: do not modify `concat`);
# - output dimension `j` **counts as changed** if `abs(out_drop[b, t, j] - out[b, t, j]) > atol`
#   for at least one batch element `b` and position `t`.
#
# Return the number of changed output dimensions, an integer from 0 to $C$. Each dimension is
# counted once, however many positions it changes at.

# %% nbgrader={"grade": false, "grade_id": "dims_changed_by_dropping", "locked": false, "schema_version": 3, "solution": true, "task": false}
def dims_changed_by_dropping(concat, Wo, head, h, atol=1e-9):
    """Number of output dims (0..C) that change at any (batch, position) when `head` is dropped."""
    ### BEGIN SOLUTION
    C = concat.shape[-1]
    hs = C // h
    concat_drop = concat.copy()
    concat_drop[..., head * hs:(head + 1) * hs] = 0.0  # the head outputs nothing
    change = np.abs(concat_drop @ Wo - concat @ Wo)  # (B, T, C) @ (C, C) -> (B, T, C)
    return int((change > atol).any(axis=(0, 1)).sum())  # a dim counts once if it moves anywhere
    ### END SOLUTION


# %% [markdown]
# On the lesson's data, counted over all 12 positions instead of one:

# %%
print("drop head 3, dims changed at any position: dense", dims_changed_by_dropping(concat, Wo, 3, h),
      "| block-diagonal", dims_changed_by_dropping(concat, Wo_bd, 3, h), "of", C)

# %% nbgrader={"grade": true, "grade_id": "test_dims_changed_by_dropping", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_dims_changed_by_dropping(concat, Wo, head, h, atol=1e-9):
    """Visible check with a hint for the usual mistakes."""
    C = concat.shape[-1]
    hs = C // h
    block = slice(head * hs, (head + 1) * hs)
    change = concat[..., block] @ Wo[block, :]  # (B, T, hs) @ (hs, C): exactly what dropping the head removes
    expected = int((np.abs(change) > atol).any(axis=(0, 1)).sum())
    first_position_only = int((np.abs(change[0, 0]) > atol).sum())
    signed_either_way = {int((change > atol).any(axis=(0, 1)).sum()), int((-change > atol).any(axis=(0, 1)).sum())}
    entries = int((np.abs(change) > atol).sum())
    before = concat.copy()
    got = dims_changed_by_dropping(concat, Wo, head, h, atol=atol)
    assert np.array_equal(concat, before), "dims_changed_by_dropping modified concat: zero the head on a copy"
    assert np.ndim(got) == 0 and float(got) == int(got), f"return one whole number, got {got!r}"
    if int(got) == expected:
        return
    if int(got) == first_position_only:
        raise AssertionError(f"expected {expected}, got {got}: you counted the changes at one position only "
                             "([0, 0]); a dimension counts if it changes at ANY batch element and position")
    if int(got) in signed_either_way:
        raise AssertionError(f"expected {expected}, got {got}: compare the ABSOLUTE change with atol "
                             "(a change can be negative)")
    if int(got) == entries:
        raise AssertionError(f"expected {expected}, got {got}: count output dimensions (at most C={C}), "
                             "not (position, dimension) entries")
    raise AssertionError(f"expected {expected} changed output dimensions, got {got}: zero columns "
                         "head*hs:(head+1)*hs of concat, and compare concat_drop @ Wo with concat @ Wo")


# The lesson's data, drawn again here: with these draws, 64 (dense) and 16 (block-diagonal) dims when head 3 is dropped.
_rng = np.random.default_rng(42)
_X = _rng.standard_normal((2, 6, 64))
_Wq, _Wk, _Wv, _Wo = (_rng.standard_normal((64, 64)) * 0.2 for _ in range(4))
_concat = multi_head_attention_forward(_X, _Wq, _Wk, _Wv, _Wo, 4)[1]["concat"]
_Wo_bd = np.where(np.arange(64)[:, None] // 16 == np.arange(64)[None, :] // 16, _Wo, 0.0)  # (C, C), diagonal blocks kept
assert dims_changed_by_dropping(_concat, _Wo, 3, 4) == 64, "dense Wo: dropping head 3 should move all 64 dims"
assert dims_changed_by_dropping(_concat, _Wo_bd, 3, 4) == 16, "block-diagonal Wo: dropping head 3 should move 16 dims"
check_dims_changed_by_dropping(_concat, _Wo_bd, 0, 4)

# A head whose output is zero at [0, 0] but not later: the change shows up only at other positions.
_late = _concat.copy()
_late[0, 0] = 0.0
check_dims_changed_by_dropping(_late, _Wo, 1, 4)

# Positive concat and weights: every change is negative (out_drop < out), or positive with -Wo.
_positive = np.abs(_concat)
check_dims_changed_by_dropping(_positive, np.abs(_Wo), 2, 4)
check_dims_changed_by_dropping(_positive, -np.abs(_Wo), 2, 4)
print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 4: the parameter count of an attention block (2 points)
#
# Write `attention_param_count(C, bias=False)`: the number of parameters of one multi-head
# attention block of width `C`, with its four projections $W_q, W_k, W_v, W_o$, each `(C, C)`.
# With `bias=True` each of the four projections also has its own bias vector of length $C$.
# Return an `int`. (There is no `h` argument: section 7 showed why none is needed.)

# %% nbgrader={"grade": false, "grade_id": "attention_param_count", "locked": false, "schema_version": 3, "solution": true, "task": false}
def attention_param_count(C, bias=False):
    """Number of parameters (an int) of one attention block of width C, with or without biases."""
    ### BEGIN SOLUTION
    shapes = [(C, C)] * 4  # W_q, W_k, W_v, W_o
    if bias:
        shapes += [(C,)] * 4  # one bias vector per projection
    return sum(math.prod(shape) for shape in shapes)
    ### END SOLUTION


# %%
print(f"one block, C = 768: {attention_param_count(768):,} without biases, "
      f"{attention_param_count(768, bias=True):,} with biases")
print(f"12 blocks without biases: {12 * attention_param_count(768):,}")

# %% nbgrader={"grade": true, "grade_id": "test_attention_param_count", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def check_attention_param_count(C):
    """Visible check with a hint for the usual mistakes."""
    weights, with_bias = attention_param_count(C), attention_param_count(C, bias=True)
    for got in (weights, with_bias):
        assert isinstance(got, (int, np.integer)) and not isinstance(got, bool), (
            f"return an int, got {type(got).__name__}")
    if weights == 3 * C * C:
        raise AssertionError(f"C={C}: got 3*C**2 = {weights}: W_o is (C, C) too, four matrices in all")
    assert weights == 4 * C * C, f"C={C}, bias=False: expected {4 * C * C:,} parameters, got {weights:,}"
    if with_bias == 4 * C * C + C:
        raise AssertionError(f"C={C}, bias=True: got 4*C**2 + C = {with_bias}: each of the four projections "
                             "has its own bias vector of length C, so the biases add 4*C")
    assert with_bias == 4 * C * C + 4 * C, f"C={C}, bias=True: expected {4 * C * C + 4 * C:,} parameters, got {with_bias:,}"


check_attention_param_count(768)
print("Exercise 4 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# **One term per head.** $\text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})\, W_o = \sum_i \text{head}_i W_o^{(i)}$,
# with $W_o^{(i)}$ the rows $i \cdot hs$ to $(i+1) \cdot hs - 1$ of $W_o$: your `head_contributions`
# returns the `(B, h, T, C)` terms, and they add up to the layer's output.
#
# **The experiment.** With `default_rng(42)` drawing `X`, `Wq`, `Wk`, `Wv`, `Wo` in that order and
# then the four `(16, 16)` blocks from the same generator, dropping head 3 changes 64 of 64 output
# dimensions at position `[0, 0]` with the dense $W_o$ and 16 of 64 with the block-diagonal one.
# The same counts hold at all 12 positions of both sequences, and the `(h, C)` map shows the same
# for every head: dropping a head removes exactly its term, which reaches the columns where
# $W_o^{(i)}$ is nonzero.
#
# **A block-diagonal $W_o$ is no $W_o$.** Folding each block $B_i$ into head $i$'s value columns,
# $W_v^{(i)} B_i$, and setting $W_o = I$ gives the block-diagonal layer's output to $10^{-12}$: $h$
# single-head layers side by side.
#
# **What the dense $W_o$ buys: reach.** Head $i$'s term is $A_i X \big(W_v^{(i)} W_o^{(i)}\big)$, a
# `(C, C)` value map of rank $hs$ (16 here): every head can write to every output dimension.
#
# **What it does not do: combine heads.** The interaction of any two heads,
# $\text{out} - \text{out}_{-a} - \text{out}_{-b} + \text{out}_{-a,-b}$, is zero (below $10^{-12}$)
# for every pair and both projections: a linear $W_o$ adds the heads and cannot build a feature
# that needs two of them at once. The heads meet in the next layer: its dense query projection
# reads all 64 dimensions even after a block-diagonal $W_o$, and its attention weights, through
# its softmax, respond to two heads jointly.
#
# **The budget.** One attention block has $4C^2$ weights whatever $h$ is: 2,359,296 for $C = 768$
# at every $h$ in $\{1, 2, 3, 4, 6, 8, 12\}$, counted from the per-head slices; $4C^2 + 4C$ with
# biases. Twelve blocks hold 28.3M, 22.75% of GPT-2 small's 124,439,808 parameters, so the quoted
# "roughly 23%" holds. The common "$3 \cdot 768^2 \approx 1.77$M" for a single attention layer
# counts $W_q, W_k, W_v$ only; with $W_o$ a single 768-wide head costs the same $4C^2$ as 12 heads.
#
# **Next:** Lesson 5 (optional, needs PyTorch) writes the same layer as a PyTorch `nn.Module`,
# loads these NumPy weights into it, and checks that both give the same output and the same
# $4C^2$ parameter count.
