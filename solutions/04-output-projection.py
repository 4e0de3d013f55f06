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
# # Lesson 4: Why the output projection exists
#
# Lesson 3 ended with a claim: the heads of a multi-head attention layer run in complete isolation,
# and the output projection $W_o$ is the only place where they interact. This lesson tests the
# claim instead of believing it. You will knock out one head, count how many output dimensions
# move, and compare a dense $W_o$ with a block-diagonal one that only lets each head write into
# its own columns. Then you will count what $W_o$ and its three siblings cost: $4C^2$ parameters
# per block, however many heads you slice the width into.
#
# **What you'll do**
# - reproduce the seed experiment exactly: dropping head 3 moves 64 of 64 output dimensions with a
#   dense $W_o$ and 16 of 64 with a block-diagonal one;
# - extend it from one position to every position of both sequences, and to every head;
# - show that a block-diagonal $W_o$ turns the layer into $h$ independent single-head layers;
# - count the parameters of an attention block for every head count, and check two claims about
#   GPT-2 small against its real parameter count.
#
# **What you'll learn**
# - why the output of multi-head attention is a sum of one term per head, $\text{head}_i W_o^{(i)}$;
# - that which output dimensions a head can reach is decided by the zeros of $W_o$;
# - why the parameter budget of an attention block is $4C^2$ whatever $h$ is.
#
# **What you'll need**
# - `multi_head_attention_forward` from Lesson 3 (it is repeated below, so this notebook runs on its own);
# - NumPy slicing, boolean masks and `np.einsum`.
#
# Three graded exercises close the lesson. Their visible checks run as you work; hidden tests
# with fresh inputs run when your notebook is graded.

# %%
import copy
import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

# %% [markdown]
# ## 1. Four opinions stapled together
#
# A multi-head layer with $h$ heads computes, for every position, $h$ outputs of size $hs = C/h$,
# one per head, and concatenates them into one vector of width $C$. Columns 0 to $hs-1$ of that
# vector come from head 0 alone, the next $hs$ columns from head 1 alone, and so on: $h$ separate
# opinions stapled together. None of the heads has seen the others' outputs. The layer's output is
#
# $$\text{MultiHead}(X) = \text{Concat}(\text{head}_1, \dots, \text{head}_h)\, W_o ,$$
#
# where $W_o$ is a learned `(C, C)` matrix. It is the last step of the layer and the only one
# that reads more than one head's columns at once.
#
# The code is Lesson 3's, repeated so that this notebook runs on its own: a numerically stable
# softmax over the last axis,
#
# $$\text{softmax}(x)_j = \frac{e^{x_j - m}}{\sum_k e^{x_k - m}}, \qquad m = \max_k x_k ,$$
#
# and the forward pass, with every head's scaled dot-product attention
# $\text{head}_i = \text{softmax}\!\left(Q_i K_i^\top / \sqrt{hs}\right) V_i$ computed by one batched
# matmul over a `(B, h, T, hs)` layout.

# %%
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    x = x - x.max(axis=axis, keepdims=True)  # subtract the row max for stability
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


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
# ## 2. The seed experiment: drop one head, count what moves
#
# The test: set head 3's columns of the concat to zero, as if that head had output nothing,
# multiply by $W_o$ again, and count the output dimensions that change. A dense $W_o$ should let
# head 3 reach every output dimension. A **block-diagonal** $W_o$, nonzero only inside each
# head's own `(hs, hs)` block on the diagonal, lets head $i$'s columns of the concat feed only
# output dimensions $i \cdot hs$ to $(i+1) \cdot hs - 1$:
#
# $$W_o^{\text{block}} = \begin{pmatrix} B_0 & 0 & 0 & 0 \\ 0 & B_1 & 0 & 0 \\ 0 & 0 & B_2 & 0 \\ 0 & 0 & 0 & B_3 \end{pmatrix},
# \qquad B_i \in \mathbb{R}^{hs \times hs}.$$
#
# ### Reproducing the seed's random numbers
#
# The set-up is Lesson 3's: $B = 2$ sequences of $T = 6$ positions, width $C = 64$, $h = 4$ heads
# of size $hs = 16$, projections drawn at scale 0.2. The seed ran everything in one session: it
# drew `X`, `Wq`, `Wk`, `Wv`, `Wo` from `np.random.default_rng(42)` in that order, then printed
# tables and ran checks that draw no random numbers, and then drew the four blocks $B_0, \dots,
# B_3$ of the block-diagonal $W_o$, each `(hs, hs)` and times 0.2, **from the same generator**.
# A NumPy `Generator` is a stream: every draw continues where the previous one stopped. This
# notebook is a fresh kernel, so it re-creates `default_rng(42)`, repeats the five draws with the
# same shapes in the same order, and then draws the blocks. The generator is then in the state
# the seed's was in, and the blocks are the seed's numbers.

# %%
rng = np.random.default_rng(42)
B, T, C, h = 2, 6, 64, 4
hs = C // h

X = rng.standard_normal((B, T, C))  # unit-scale inputs, (B, T, C)
Wq = rng.standard_normal((C, C)) * 0.2  # 0.2 init so attention differentiates
Wk = rng.standard_normal((C, C)) * 0.2
Wv = rng.standard_normal((C, C)) * 0.2
Wo = rng.standard_normal((C, C)) * 0.2  # the dense output projection

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
# row, the next 256 fill $B_1$, and so on: the same numbers in the same places as the seed's code,
# which draws the blocks one at a time in a loop over heads. The cell below runs the seed's loop
# on a copy of the snapshot of the generator taken before the blocks were drawn, to confirm the
# two matrices are identical. (The loop is the seed's code, kept verbatim only for this comparison; the mask
# builds the matrix in one assignment and works for any $h$.)

# %%
seed_rng = copy.deepcopy(rng_at_blocks)  # a copy, so that the snapshot stays unused for Exercise 1
seed_block_diag = np.zeros((C, C))
for i in range(h):  # the seed's construction, run once to compare
    s = slice(i * hs, (i + 1) * hs)
    seed_block_diag[s, s] = seed_rng.standard_normal((hs, hs)) * 0.2
print("mask construction equals the seed's loop, number for number:", np.array_equal(Wo_bd, seed_block_diag))

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
# Now the seed's experiment, verbatim in its logic: zero head 3's slice of the concat, project
# with each $W_o$, and count the output dimensions of position 0 in sequence 0 whose change is
# larger than $10^{-9}$ in absolute value.

# %%
out, cache = multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h)
out_bd, _ = multi_head_attention_forward(X, Wq, Wk, Wv, Wo_bd, h)
concat = cache["concat"]  # (B, T, C), the same for both projections: W_o comes after it

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
# The seed's numbers, reproduced: 64 of 64 with the dense projection, 16 of 64 with the
# block-diagonal one. With the dense $W_o$, every output dimension was reading head 3; with the
# block-diagonal one, only head 3's own 16 dimensions were.
#
# ## 3. Every position, both sequences, every head
#
# The seed looked at one position of one sequence. The claim is about the layer, so count at
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
# ### One term per head
#
# Why does the block structure decide the outcome so cleanly? Split the rows of $W_o$ into $h$
# row-blocks $W_o^{(i)}$ of shape `(hs, C)`, rows $i \cdot hs$ to $(i+1) \cdot hs - 1$: the rows
# that read head $i$'s part of the concat. Then the matrix product falls apart into one term per
# head,
#
# $$\text{MultiHead}(X) = \text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})\, W_o = \sum_{i=0}^{h-1} \text{head}_i\, W_o^{(i)} .$$
#
# Dropping head $i$ removes exactly the term $\text{head}_i W_o^{(i)}$, and that term can only
# touch output column $j$ if column $j$ of $W_o^{(i)}$ has a nonzero entry. The cell computes all
# $h$ terms at once with `np.einsum`, checks that they add up to the output, and checks that the
# head-3 term is the change measured above.

# %%
def head_contributions(concat, Wo, h):
    """Each head's term head_i @ Wo^(i): concat (B, T, C), Wo (C, C) -> (h, B, T, C)."""
    B, T, C = concat.shape
    hs = C // h
    heads = concat.reshape(B, T, h, hs)  # (B, T, C) -> (B, T, h, hs): head i's part of the concat
    Wo_rows = Wo.reshape(h, hs, C)  # (C, C) -> (h, hs, C): Wo^(i), the rows that read head i
    return np.einsum("btia,iaj->ibtj", heads, Wo_rows)  # sum over a: (B, T, h, hs) x (h, hs, C) -> (h, B, T, C)


terms_dense = head_contributions(concat, Wo, h)  # (h, B, T, C)
terms_bd = head_contributions(concat, Wo_bd, h)  # (h, B, T, C)
print("sum of the h terms equals the output (dense, block-diagonal):",
      np.allclose(terms_dense.sum(axis=0), out), np.allclose(terms_bd.sum(axis=0), out_bd))
print("head 3's term equals the change from dropping head 3 (dense, block-diagonal):",
      np.allclose(terms_dense[dropped], out - concat_drop @ Wo),  # (B, T, C) @ (C, C) -> (B, T, C)
      np.allclose(terms_bd[dropped], out_bd - concat_drop @ Wo_bd))  # (B, T, C)

# %% [markdown]
# So the map of which output dimensions move when each head is dropped needs no re-run of the
# layer: output dimension $j$ moves when head $i$ is dropped if head $i$'s term is nonzero in
# column $j$ at some position. One boolean array of shape `(h, C)` per projection:

# %%
moves_dense = (np.abs(terms_dense) > atol).any(axis=(1, 2))  # (h, B, T, C) -> (h, C)
moves_bd = (np.abs(terms_bd) > atol).any(axis=(1, 2))  # (h, C)
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
# ## 4. A block-diagonal $W_o$ is $h$ independent single-head layers
#
# With the block-diagonal projection, $W_o^{(i)}$ is zero except for the block $B_i$ in columns
# $i \cdot hs$ to $(i+1) \cdot hs - 1$, so the sum of terms becomes a concatenation again:
#
# $$\text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})\, W_o^{\text{block}} = \text{Concat}(\text{head}_0 B_0, \dots, \text{head}_{h-1} B_{h-1}) .$$
#
# Each block of columns is a complete **single-head attention layer**: its own query, key and
# value projections $W_q^{(i)}, W_k^{(i)}, W_v^{(i)}$ (head $i$'s `(C, hs)` columns of $W_q$,
# $W_k$, $W_v$), its own attention, and its own output projection $B_i$, producing $hs$ output
# dimensions that no other head touches. To check it, write one single-head layer and run it on
# all $h$ heads' weights at once: stacking the weights along a leading axis makes `@` treat the
# head as a batch axis, so there is no loop over heads here either.

# %%
def single_head_attention_layer(X, Wq, Wk, Wv, Wo):
    """One head with its own output projection.

    X (..., T, C); Wq, Wk, Wv (..., C, hs); Wo (..., hs, d_out) -> (..., T, d_out).
    Leading axes broadcast, so stacked weights (h, C, hs) run h independent layers at once.
    """
    hs = Wq.shape[-1]
    Q, K, V = X @ Wq, X @ Wk, X @ Wv  # (..., T, C) @ (..., C, hs) -> (..., T, hs)
    weights = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(hs), axis=-1)  # (..., T, hs) @ (..., hs, T) -> (..., T, T)
    return weights @ V @ Wo  # (..., T, T) @ (..., T, hs) @ (..., hs, d_out) -> (..., T, d_out)


def per_head_columns(W, h):
    """Head i's columns of a (C, C) projection, stacked: (C, C) -> (h, C, hs)."""
    C = W.shape[0]
    return W.reshape(C, h, C // h).transpose(1, 0, 2)  # (C, C) -> (C, h, hs) -> (h, C, hs)


diagonal_blocks = Wo_bd.reshape(h, hs, h, hs)[np.arange(h), :, np.arange(h), :]  # (C, C) -> (h, hs, h, hs) -> (h, hs, hs): B_i
layers = single_head_attention_layer(X[:, None], per_head_columns(Wq, h), per_head_columns(Wk, h),
                                     per_head_columns(Wv, h), diagonal_blocks)  # (B, 1, T, C) with (h, ...) -> (B, h, T, hs)
side_by_side = layers.transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
print("h independent single-head layers, side by side, equal the block-diagonal layer:",
      np.allclose(side_by_side, out_bd, rtol=0, atol=1e-12))

# One of them on its own, with plain 2-D weights: head 2's layer is columns 32..47 of the output.
s2 = slice(2 * hs, 3 * hs)
head_2_alone = single_head_attention_layer(X, Wq[:, s2], Wk[:, s2], Wv[:, s2], Wo_bd[s2, s2])  # (B, T, hs)
print("head 2's single-head layer alone equals columns 32..47 of the block-diagonal output:",
      np.allclose(head_2_alone, out_bd[:, :, s2], rtol=0, atol=1e-12))

# %% [markdown]
# Both comparisons hold to $10^{-12}$: the block-diagonal layer is four single-head layers of
# width 16 glued side by side, and "multi-head" would add nothing but bookkeeping.
#
# The same split applied to the **dense** $W_o$ shows where the interaction lives. Keep only its
# diagonal blocks and you get four independent layers again, which do not reproduce the dense
# output; what is missing is exactly the product with the off-diagonal blocks, the weights that
# carry head $i$'s output into the columns of head $j \ne i$.

# %%
dense_diagonal_blocks = Wo.reshape(h, hs, h, hs)[np.arange(h), :, np.arange(h), :]  # (h, hs, hs)
dense_layers = single_head_attention_layer(X[:, None], per_head_columns(Wq, h), per_head_columns(Wk, h),
                                           per_head_columns(Wv, h), dense_diagonal_blocks)  # (B, h, T, hs)
dense_side_by_side = dense_layers.transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, h, T, hs) -> (B, T, C)
off_diagonal = np.where(same_head, 0.0, Wo)  # (C, C): the dense W_o with its diagonal blocks removed
print("independent layers from the dense W_o's diagonal blocks equal the dense output:",
      np.allclose(dense_side_by_side, out))
print("largest |difference| to the dense output: %.4f" % np.abs(dense_side_by_side - out).max())
print("independent layers + concat @ off-diagonal blocks equal the dense output:",
      np.allclose(dense_side_by_side + concat @ off_diagonal, out))  # (B, T, C) @ (C, C) -> (B, T, C)
print(f"share of the dense W_o's weights in off-diagonal blocks: {np.count_nonzero(off_diagonal)} of {C * C}"
      f" = {np.count_nonzero(off_diagonal) / C**2:.0%}")

# %% [markdown]
# The off-diagonal blocks are 75% of the dense $W_o$'s weights ($h^2 - h = 12$ of its 16 blocks),
# and they are the cross-head mixing. Training can use them to build an output feature that needs
# two heads at once; a block-diagonal $W_o$ forbids it.

# %% [markdown]
# ## 5. What the block costs: $4C^2$ parameters, whatever $h$ is
#
# Count the weights head by head. Head $i$ owns a `(C, hs)` slice of each of $W_q$, $W_k$, $W_v$
# (its columns) and a `(hs, C)` slice of $W_o$ (its rows, the $W_o^{(i)}$ of section 3). Each
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
# ### Checking the seed's GPT-2 figures
#
# The seed makes three numeric claims about GPT-2 small: the block is $4 \cdot 768^2 = 2{,}359{,}296$
# parameters (the table confirms it), 12 blocks are "~28.3M total, roughly 23% of the model", and
# "a single attention layer with $D = 768$ has $3 \cdot 768^2 \approx 1.77$M parameters". To check
# the percentage, count GPT-2 small itself. Its parameters, by their names in the released
# checkpoint, are the token embedding `wte` `(50257, 768)`, the position embedding `wpe`
# `(1024, 768)`, 12 blocks, and a final layer norm `ln_f`. The output layer reuses `wte` (tied
# embeddings), so it adds nothing. Unlike the seed's bias-free attention, GPT-2's linear layers
# have biases, and `attn.c_attn` is the fused $W_q, W_k, W_v$ projection `(768, 2304)`.

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
attention_seed = n_layer * budget[12]  # the seed's bias-free blocks, from the table above
attention_gpt2 = sum(math.prod(shape) for name, shape in gpt2_shapes.items() if ".attn." in name)  # with biases

print(f"GPT-2 small, {len(gpt2_shapes)} tensors: {gpt2_total:,} parameters "
      f"(matches 124,439,808: {gpt2_total == 124_439_808})")
print(f"12 bias-free attention blocks (seed)   : {attention_seed:,} = {attention_seed / 1e6:.1f}M, "
      f"{100 * attention_seed / gpt2_total:.2f}% of the model")
print(f"12 attention blocks with GPT-2's biases: {attention_gpt2:,}, "
      f"{100 * attention_gpt2 / gpt2_total:.2f}% of the model")
print(f"token and position embeddings: {embeddings:,}, {100 * embeddings / gpt2_total:.1f}% of the model")
print(f"12 bias-free attention blocks as a share of the non-embedding parameters ({gpt2_total - embeddings:,}): "
      f"{100 * attention_seed / (gpt2_total - embeddings):.1f}%")

# %% [markdown]
# The per-model figure is right: 12 blocks hold 28,311,552 attention weights, 28.3M. So is
# "roughly 23%": 22.75% of GPT-2 small's 124,439,808 parameters, and 22.78% if GPT-2's attention
# biases are counted too. Note what the denominator includes: 31.6% of GPT-2 small is the token
# and position embeddings, and measured against the non-embedding parameters the attention blocks
# are a third (33.3%).
#
# The last claim is about a single head of width $D = C = 768$:

# %%
qkv_only = 3 * C_gpt2**2
print(f"3 * 768**2 = {qkv_only:,}  (W_q, W_k, W_v of width 768; the seed's '~1.77M')")
print(f"4 * 768**2 = {qkv_only + C_gpt2**2:,}  (the same single head with its output projection W_o)")
print("a single head of width 768 with W_o costs the same as the h = 1 row of the table:",
      qkv_only + C_gpt2**2 == budget[1])

# %% [markdown]
# The arithmetic is right, $3 \cdot 768^2 = 1{,}769{,}472 \approx 1.77$M, but it counts only the
# query, key and value projections. A complete single-head layer also has its `(768, 768)` output
# projection, which brings it to 2,359,296, exactly the multi-head block's budget. That is the
# seed's own point, stated carefully: splitting one 768-wide head into 12 heads of 64 does not
# save or cost a single parameter when $W_o$ is counted on both sides; it only reorganises them.

# %% [markdown]
# ## Practice exercises
#
# Each exercise asks for one function. Replace `raise NotImplementedError()` with your code, run
# the cell, then run the test cell below it. The visible checks use the lesson's seed-42 data and
# tell you what a failure most likely means; when your notebook is graded, hidden tests call your
# function again on fresh inputs (other widths, head counts and seeds), so write the general
# function, not one that fits this lesson's numbers.
#
# ### Exercise 1: build a block-diagonal $W_o$ (3 points)
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
# function should rebuild the lesson's (and the seed's) block-diagonal $W_o$ exactly:

# %%
print("block_diagonal_wo reproduces the lesson's Wo_bd:",
      np.array_equal(block_diagonal_wo(C, h, copy.deepcopy(rng_at_blocks)), Wo_bd))

# %% nbgrader={"grade": true, "grade_id": "test_block_diagonal_wo", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_block_diagonal_wo(C, h, seed, scale=0.2):
    """Visible check with a hint for the usual mistakes."""
    hs = C // h
    expected_blocks = np.random.default_rng(seed).standard_normal((h, hs, hs)) * scale  # (h, hs, hs)
    rng_ = np.random.default_rng(seed)
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
    follow_up = np.random.default_rng(seed)
    follow_up.standard_normal((h, hs, hs))
    assert rng_.standard_normal() == follow_up.standard_normal(), (
        "rng is not left where the h blocks end: draw exactly h*hs*hs values from rng itself "
        "(not from a copy, and nothing more)")


check_block_diagonal_wo(64, 4, seed=42)
check_block_diagonal_wo(64, 4, seed=7, scale=1.0)
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: count the output dimensions a head reaches (3 points)
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


# The lesson's data, rebuilt here: the seed's 64 (dense) and 16 (block-diagonal) when head 3 is dropped.
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
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: the parameter count of an attention block (2 points)
#
# Write `attention_param_count(C, bias=False)`: the number of parameters of one multi-head
# attention block of width `C`, with its four projections $W_q, W_k, W_v, W_o$, each `(C, C)`.
# With `bias=True` each of the four projections also has its own bias vector of length $C$.
# Return an `int`. (There is no `h` argument: section 5 showed why none is needed.)

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
print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# **The experiment.** With the seed's set-up (`default_rng(42)`; `X`, `Wq`, `Wk`, `Wv`, `Wo` drawn
# in that order, then the four `(16, 16)` blocks from the same generator), dropping head 3 changes
# 64 of 64 output dimensions at position `[0, 0]` with the dense $W_o$ and 16 of 64 with the
# block-diagonal one. The same counts hold at all 12 positions of both sequences, and the
# `(h, C)` map shows the same for every head: the dense $W_o$ lets each head reach every output
# dimension, the block-diagonal one only its own 16.
#
# **Why.** $\text{MultiHead}(X) = \text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})\, W_o = \sum_i \text{head}_i W_o^{(i)}$,
# one term per head; dropping head $i$ removes its term, which can only reach the columns where
# $W_o^{(i)}$ is nonzero. With a block-diagonal $W_o$ the layer equals $h$ independent single-head
# layers side by side (checked to $10^{-12}$); the dense $W_o$'s off-diagonal blocks are exactly
# what is missing from that picture, the place where heads interact.
#
# **The budget.** One attention block has $4C^2$ weights whatever $h$ is: 2,359,296 for $C = 768$
# at every $h$ in $\{1, 2, 3, 4, 6, 8, 12\}$, counted from the per-head slices; $4C^2 + 4C$ with
# biases. Twelve blocks hold 28.3M, 22.75% of GPT-2 small's 124,439,808 parameters, so the seed's
# "roughly 23%" holds. Its "$3 \cdot 768^2 \approx 1.77$M" for a single attention layer counts
# $W_q, W_k, W_v$ only; with $W_o$ a single 768-wide head costs the same $4C^2$ as 12 heads.
#
# **Next:** Lesson 5 (optional, needs PyTorch) writes the same layer as a PyTorch `nn.Module`,
# loads these NumPy weights into it, and checks that both give the same output and the same
# $4C^2$ parameter count.
