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
# - every output dimension of a dense $W_o$ is a linear combination of all the heads, but the
#   combination is a sum: $W_o$ adds the heads, it never gates or multiplies one by another.
#
# What the dense $W_o$'s reach is for only shows once the layer's output is *added* to the
# residual stream of a transformer block, which Lesson 11 builds: between two bare attention
# layers a dense $W_o$ folds away too. Last, you will count what $W_o$ and its three siblings
# cost: $4C^2$ parameters per attention layer, however many heads you slice the width into.
#
# **What you'll do**
# - write `head_contributions`, the per-head terms $\text{head}_i W_o^{(i)}$ that add up to the output (graded);
# - drop head 3 and count the output dimensions that move: with these draws, 64 of 64 with a dense
#   $W_o$ and 16 of 64 with a block-diagonal one, at every position and for every head;
# - write `fold_into_wv`, which folds a block-diagonal $W_o$ into $W_v$ so that the layer gives the
#   same output without any $W_o$ (graded);
# - fold a dense $W_o$ into the next layer's projections, and see what that fold needs;
# - measure the interaction of two heads: in this layer's output, in the next layer's scores, and
#   in a small MLP reading the output;
# - count the parameters of an attention layer for every head count, and check three widely
#   quoted figures about GPT-2 small against its real parameter count.
#
# **What you'll learn**
# - why the output of multi-head attention is a sum of one term per head, $\text{head}_i W_o^{(i)}$;
# - that which output dimensions a head can reach is decided by the zeros of $W_o$;
# - that a linear $W_o$ adds the heads and cannot build a feature that needs two heads at once;
# - why the parameter budget of an attention layer is $4C^2$ whatever $h$ is.
#
# **What you'll need**
# - the multi-head layer of Lesson 3, and NumPy slicing, reshapes, boolean masks and `np.einsum`.
#   The exercises use NumPy alone (no torch, no scipy).
#
# Two graded exercises sit in the lesson, where their ideas are taught, and one practice exercise
# closes it. Their visible checks run as you work; hidden tests with fresh inputs run when your
# notebook is graded.

# %%
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
# with the projections at scale 0.2.

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
# `concat[..., i*hs:(i+1)*hs] @ Wo[i*hs:(i+1)*hs, :]`. Do not modify the inputs. Advice, not a
# graded rule: write it without a loop over heads; reshape `concat` into its heads and `Wo` into
# its row-blocks, and let `@` (or `np.einsum`) pair head $i$ with $W_o^{(i)}$, so that NumPy does
# every head in one call. Summed over the head axis, your terms must give
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
    rows = [slice(i * hs, (i + 1) * hs) for i in range(h)]  # head i's columns of concat, and rows of Wo
    if got.shape == (h, B, T, C) and h != B:
        raise AssertionError(f"got shape (h, B, T, C) = {got.shape}: put the head axis second, (B, h, T, C)")
    assert got.shape == (B, h, T, C), f"expected shape (B, h, T, C) = {(B, h, T, C)}, got {got.shape}"
    if not np.allclose(got.sum(axis=1), concat @ Wo):
        from_columns = np.stack([concat[..., s] @ Wo[:, s].T for s in rows], axis=1)
        if np.allclose(got, from_columns):
            raise AssertionError("you took W_o^(i) from the COLUMNS of Wo: it is the ROWS i*hs:(i+1)*hs, the ones "
                                 "that multiply head i's columns of the concat")
        raise AssertionError("the h terms should add up to concat @ Wo")
    interleaved = np.stack([concat[..., i::h] @ Wo[i::h, :] for i in range(h)], axis=1)  # heads taken every h-th column
    hint = ("the heads are interleaved: head i's part of the concat is the consecutive columns i*hs:(i+1)*hs, "
            "so reshape C as (h, hs), not (hs, h)") if h > 1 and hs > 1 and np.allclose(got, interleaved) else None
    for j, s in enumerate(rows):  # term j may use only head j's columns of concat and rows of Wo
        silenced = concat.copy()
        silenced[..., s] = 0.0  # head j says nothing
        changed = Wo.copy()
        changed[s] += 1.0  # head j's rows of Wo move
        for what, terms in (("columns of concat", head_contributions(silenced, Wo, h)),
                            ("rows of Wo", head_contributions(concat, changed, h))):
            others = [i for i in range(h) if i != j]
            assert np.allclose(np.asarray(terms)[:, others], got[:, others]), hint or (
                f"changing head {j}'s {what} changed another head's term: term i may use only head i's "
                "columns of concat and rows i*hs:(i+1)*hs of Wo")
        assert np.allclose(np.asarray(head_contributions(silenced, Wo, h))[:, j], 0), hint or (
            f"with head {j}'s columns of concat set to 0, its term should be 0")


# Worked by hand: one position, C = 4, h = 2, concat = [1, 2, 3, 4], Wo = 2 I.
_got = np.asarray(head_contributions(np.array([[[1.0, 2, 3, 4]]]), 2 * np.eye(4), 2))
assert _got.shape == (1, 2, 1, 4), f"expected shape (B, h, T, C) = (1, 2, 1, 4), got {_got.shape}"
assert np.allclose(_got[0, :, 0], [[2, 4, 0, 0], [0, 0, 6, 8]]), (
    f"for concat = [1, 2, 3, 4] and Wo = 2 I, head 0's term is [2, 4, 0, 0] and head 1's [0, 0, 6, 8]; got "
    f"{_got[0, :, 0].tolist()}")


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
# The block-diagonal projection used here keeps $W_o$'s own diagonal blocks, $B_i$ = rows and
# columns $i \cdot hs$ to $(i+1) \cdot hs - 1$ of $W_o$, and sets every other entry to zero.

# %%
head_of_dim = np.arange(C) // hs  # (C,): which head each of the C dimensions belongs to
same_head = head_of_dim[:, None] == head_of_dim[None, :]  # (C, 1) == (1, C) -> (C, C): True inside a diagonal block
Wo_bd = np.where(same_head, Wo, 0.0)  # (C, C): W_o's diagonal blocks, zero elsewhere
print("Wo_bd nonzero entries:", np.count_nonzero(Wo_bd), "= h * hs * hs =", h * hs * hs, "of", C * C)

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
# the same output.
#
# ### Exercise 2: fold a block-diagonal $W_o$ into $W_v$ (3 points)
#
# Write `fold_into_wv(Wv, Wo_blockdiag, h)`. `Wv` is a value projection of shape `(C, C)` and
# `Wo_blockdiag` an output projection of shape `(C, C)` that is zero outside its $h$ diagonal
# blocks of shape `(hs, hs)`, $hs = C/h$. Return the `(C, C)` matrix `Wv_folded` such that the
# layer with value projection `Wv_folded` and $W_o = I$ gives exactly the output of the layer with
# `Wv` and `Wo_blockdiag`, for every input and every $W_q, W_k$. Head $i$'s columns of `Wv_folded`
# are $W_v^{(i)} B_i$.
#
# The fold exists only for a block-diagonal $W_o$: if `Wo_blockdiag` has a nonzero entry outside
# its diagonal blocks, raise `ValueError`. You can assume that $h$ divides $C$. Do not modify the
# inputs. Your function is graded by running the layer both ways on fresh inputs.

# %% nbgrader={"grade": false, "grade_id": "fold_into_wv", "locked": false, "schema_version": 3, "solution": true, "task": false}
def fold_into_wv(Wv, Wo_blockdiag, h):
    """W_v with each head's diagonal block of W_o folded in: Wv (C, C), Wo_blockdiag (C, C) -> (C, C)."""
    ### BEGIN SOLUTION
    C = Wv.shape[0]
    hs = C // h
    grid = Wo_blockdiag.reshape(h, hs, h, hs)  # (C, C) -> (row head, row, column head, column)
    off_diagonal = grid.copy()
    off_diagonal[np.arange(h), :, np.arange(h), :] = 0.0
    if np.any(off_diagonal != 0):
        raise ValueError("W_o has nonzero weights outside its diagonal blocks: it does not fold into W_v")
    blocks = grid[np.arange(h), :, np.arange(h), :]  # (h, hs, hs): B_i
    value_columns = Wv.reshape(C, h, hs)  # (C, C) -> (C, h, hs): [:, i] holds head i's columns
    return np.einsum("cia,iab->cib", value_columns, blocks).reshape(C, C)  # W_v^(i) B_i: (C, h, hs) -> (C, C)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_fold_into_wv", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_fold_into_wv(C, h, seed):
    """Visible check: the layer run both ways, and the likely mistakes named."""
    hs = C // h
    rng_ = np.random.default_rng(seed=seed)
    X_, Wq_, Wk_, Wv_ = rng_.standard_normal((2, 5, C)), *(rng_.standard_normal((C, C)) * 0.3 for _ in range(3))
    in_block = np.arange(C)[:, None] // hs == np.arange(C)[None, :] // hs  # (C, C): True inside a diagonal block
    Wo_ = np.where(in_block, rng_.standard_normal((C, C)), 0.0)  # block-diagonal, (C, C)
    copies = Wv_.copy(), Wo_.copy()
    got = fold_into_wv(Wv_, Wo_, h)
    assert np.array_equal(Wv_, copies[0]) and np.array_equal(Wo_, copies[1]), "fold_into_wv modified its inputs"
    assert isinstance(got, np.ndarray) and got.shape == (C, C), f"return a (C, C) = {(C, C)} array, got {np.shape(got)}"
    with_blocks, _ = multi_head_attention_forward(X_, Wq_, Wk_, Wv_, Wo_, h)
    folded, _ = multi_head_attention_forward(X_, Wq_, Wk_, got, np.eye(C), h)  # W_o = I
    if np.allclose(folded, with_blocks):
        return
    if np.allclose(got, Wo_ @ Wv_):
        raise AssertionError("the product is in the wrong order: head i's value columns are W_v^(i), then B_i")
    transposed = np.where(in_block, Wo_.T, 0.0)  # every block transposed
    if np.allclose(multi_head_attention_forward(X_, Wq_, Wk_, got, np.eye(C), h)[0],
                   multi_head_attention_forward(X_, Wq_, Wk_, Wv_, transposed, h)[0]):
        raise AssertionError("the blocks are transposed: head i's columns are W_v^(i) @ B_i, not W_v^(i) @ B_i.T")
    raise AssertionError("with your W_v and W_o = I the layer's output differs from the layer with W_v and the "
                         "block-diagonal W_o: head i's columns i*hs:(i+1)*hs should be W_v^(i) @ B_i")


def check_fold_rejects_dense(C, h):
    """A W_o with a weight outside the diagonal blocks must be refused."""
    Wo_ = np.eye(C)
    Wo_[0, C - 1] = 0.5  # head 0's row, the last head's column
    try:
        fold_into_wv(np.eye(C), Wo_, h)
    except ValueError:
        return
    raise AssertionError("a W_o with a nonzero weight outside its diagonal blocks should raise ValueError: "
                         "no W_v gives that layer's output with W_o = I")


check_fold_into_wv(64, 4, seed=0)
check_fold_into_wv(12, 3, seed=1)
check_fold_into_wv(5, 5, seed=2)  # head size 1: W_o is diagonal
check_fold_into_wv(6, 1, seed=3)  # one head: the whole W_o is one block
check_fold_rejects_dense(12, 3)
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# On the lesson's data, the block-diagonal layer and the folded layer without $W_o$:

# %%
Wv_folded = fold_into_wv(Wv, Wo_bd, h)  # (C, C)
out_no_wo, _ = multi_head_attention_forward(X, Wq, Wk, Wv_folded, np.eye(C), h)  # W_o = I
print("blocks folded into W_v, W_o = I, equals the block-diagonal layer to 1e-12:",
      np.allclose(out_no_wo, out_bd, rtol=0, atol=1e-12))
print("the fold is the plain product W_v @ Wo_bd:", np.allclose(Wv_folded, Wv @ Wo_bd, rtol=0, atol=1e-12))
dense_attempt, _ = multi_head_attention_forward(X, Wq, Wk, Wv @ Wo, np.eye(C), h)  # the same product, dense W_o
print(f"with the dense W_o, W_v @ W_o and W_o = I: largest |difference| from the layer's output "
      f"{np.abs(dense_attempt - out).max():.2f} (largest |output| {np.abs(out).max():.2f})")

# %% [markdown]
# Equal to $10^{-12}$. Without an output projection, the output is the concat itself: head $i$
# writes its $hs$ numbers into its own $hs$ columns and nowhere else, the staircase of section 3.
# The layer is then $h$ single-head layers of width $hs$ side by side, and a block-diagonal $W_o$
# adds nothing that the value projection could not do on its own.
#
# The fold is the plain product $W_v W_o$ because head $i$'s value columns meet only block $B_i$.
# The same product with the dense $W_o$ gives a different layer: it would mix all heads' value
# columns into head $i$'s columns *before* head $i$'s own attention weights are applied, while
# the real layer applies each head's weights first and mixes after.
#
# ## 5. The dense $W_o$: reach, and when it matters
#
# Do the same with the dense $W_o$. Head $i$'s term is
#
# $$\text{head}_i\, W_o^{(i)} = A_i\, X\, \big(W_v^{(i)} W_o^{(i)}\big), \qquad W_v^{(i)} W_o^{(i)} \in \mathbb{R}^{C \times C} .$$
#
# The product $W_v^{(i)} W_o^{(i)}$, `(C, hs) @ (hs, C)`, is a full-width `(C, C)` matrix, but of
# rank at most $hs$: it passes through head $i$'s $hs$ numbers. So the dense $W_o$ gives each head
# a value map into the whole $C$-dimensional output, through an $hs$-dimensional bottleneck: every
# head can write to every output dimension, which section 3 counted.
#
# ### The QK and OV circuits
#
# Each head is two `(C, C)` matrices of rank at most $hs$, and the layer depends on its weights only
# through them:
#
# $$\text{QK}_i = W_q^{(i)} W_k^{(i)\top} \ \text{(where head } i \text{ looks: its scores are } X\, \text{QK}_i\, X^\top / \sqrt{hs}), \qquad
# \text{OV}_i = W_v^{(i)} W_o^{(i)} \ \text{(what it writes: } A_i X\, \text{OV}_i).$$
#
# These are head $i$'s **QK circuit** and **OV circuit**. So the split of $\text{OV}_i$ into
# $W_v^{(i)}$ and $W_o^{(i)}$ is not unique: for any invertible `(hs, hs)` matrix $R$,
# $W_v^{(i)} R$ and $R^{-1} W_o^{(i)}$ give the same product, and the same layer. The fold of
# section 4 is one such choice when every block $B_i$ is invertible ($R = B_i$: $W_o^{(i)}$ becomes the
# identity on head $i$'s columns).
# The cell draws one random $R_i$ per head, applies it, and compares the layers.

# %%
R_heads = np.random.default_rng(9).standard_normal((h, hs, hs))  # (h, hs, hs): one invertible R_i per head
Wv_R = np.einsum("cia,iab->cib", Wv.reshape(C, h, hs), R_heads).reshape(C, C)  # W_v^(i) R_i: (C, h, hs) -> (C, C)
Wo_R = (np.linalg.inv(R_heads) @ Wo.reshape(h, hs, C)).reshape(C, C)  # R_i^-1 W_o^(i): (h, hs, C) -> (C, C)
out_R, _ = multi_head_attention_forward(X, Wq, Wk, Wv_R, Wo_R, h)
print("every R_i invertible (|det R_i| > 1):", bool(np.all(np.abs(np.linalg.det(R_heads)) > 1)),
      "| W_v^(i) R_i and R_i^-1 W_o^(i): same layer output to 1e-10:", np.allclose(out_R, out, rtol=0, atol=1e-10))
print("W_v and W_o themselves changed:", not np.allclose(Wv_R, Wv), not np.allclose(Wo_R, Wo))

# %% [markdown]
# The weights changed, the layer did not: only the circuits $\text{QK}_i$ and $\text{OV}_i$ are
# properties of the layer. (The same holds for $W_q^{(i)}$ and $W_k^{(i)}$, with $R^{-\top}$ on the
# keys' side.) Lesson 12 reads a trained head through its OV circuit.

# %%
Wv_heads = Wv.reshape(C, h, hs)  # (C, C) -> (C, h, hs): Wv_heads[:, i] is W_v^(i), head i's value columns
Wo_rows = Wo.reshape(h, hs, C)  # (C, C) -> (h, hs, C): W_o^(i), head i's rows
value_maps = np.einsum("cia,iad->icd", Wv_heads, Wo_rows)  # W_v^(i) W_o^(i): (C, hs) @ (hs, C) -> (h, C, C)
print("value maps:", value_maps.shape, "(h, C, C); rank of each:",
      [int(np.linalg.matrix_rank(m)) for m in value_maps])
out_from_maps = np.einsum("bitk,bkc,icd->btd", cache["weights"], X, value_maps, optimize=True)  # sum_i A_i X M_i
print("sum over heads of A_i X (W_v^(i) W_o^(i)) equals the layer's output:", np.allclose(out_from_maps, out))

# %% [markdown]
# Each head's value map is `(64, 64)` of rank 16, and the four of them rebuild the layer's output.
# What the dense $W_o$ adds inside the layer is reach: every head writes to every output
# dimension.
#
# ### Reach needs somewhere to write: the residual stream
#
# Reach alone does not make $W_o$ necessary. Put a second attention layer right after this one,
# nothing in between. It reads $\text{out} = \text{concat}\, W_o$ through its own dense projections
# $W' \in \{W_q', W_k', W_v'\}$, and matrix products are associative:
#
# $$(\text{concat}\, W_o)\, W' = \text{concat}\, (W_o W') .$$
#
# So this layer with $W_o = I$, followed by a second layer whose projections are $W_o W_q'$,
# $W_o W_k'$ and $W_o W_v'$, computes exactly the same two-layer output: a dense $W_o$ folds into
# the next layer just as a block-diagonal one folds into $W_v$. The cell checks it with a second
# layer drawn from `np.random.default_rng(7)`.

# %%
next_rng = np.random.default_rng(7)  # a second layer's projections
Wq_next, Wk_next, Wv_next, Wo_next = (next_rng.standard_normal((C, C)) * 0.2 for _ in range(4))


def two_layers(first_Wo, next_Wq, next_Wk, next_Wv):
    """This layer (output projection first_Wo), then the second layer reading its output directly: (B, T, C)."""
    first_out, _ = multi_head_attention_forward(X, Wq, Wk, Wv, first_Wo, h)
    return multi_head_attention_forward(first_out, next_Wq, next_Wk, next_Wv, Wo_next, h)[0]


plain = two_layers(Wo, Wq_next, Wk_next, Wv_next)
folded = two_layers(np.eye(C), Wo @ Wq_next, Wo @ Wk_next, Wo @ Wv_next)  # (C, C) @ (C, C) for each projection
print("W_o = I here, W_o folded into the next layer's W_q, W_k, W_v: same two-layer output to 1e-10:",
      np.allclose(plain, folded, rtol=0, atol=1e-10))

# %% [markdown]
# Equal to $10^{-10}$. In a real transformer the layer's output is not handed to the next layer
# on its own: it is **added** to a running vector per position, the residual stream
# $x + \text{attn}(x)$, which a LayerNorm and an MLP then read. The input $x$ never passes through
# $W_o$, so the fold above no longer works, and $W_o$ decides where in that shared stream each head
# writes. Lesson 11 builds the stream and measures this.
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
# Zero, up to rounding, for all six pairs and both projections. With the dense $W_o$ every output
# dimension is a linear combination of all four heads, but the combination is a sum: $W_o$ adds the
# heads, it never gates or multiplies one by another.
#
# ### Where the heads first interact
#
# The interaction becomes nonzero as soon as something reads this output in a way that is not a
# sum. Two such readers, on the second layer of section 5 (`default_rng(7)`):
#
# - **The next layer's scores.** Head $k$ of the next layer reads this output through its own
#   `(C, hs)` columns $W_q'^{(k)}$ and $W_k'^{(k)}$ of $W_q'$ and $W_k'$, and a score is a product of
#   the two reads. With $\text{out} = \sum_i t_i$ (the per-head terms), head $k$'s scores are
#   $\sum_{i,j} t_i\, W_q'^{(k)} W_k'^{(k)\top} t_j^\top / \sqrt{hs}$: bilinear in the terms, so heads
#   $a$ and $b$ interact through the products $t_a \cdots t_b^\top$ already **before** the softmax.
# - **An MLP.** A ReLU network $\max(\text{out}\, W_1, 0)\, W_2$, $W_1$ `(C, 4C)`, $W_2$ `(4C, C)`,
#   drawn from `default_rng(8)`, the kind of layer that follows attention in a transformer block.
#
# The cell also checks that the next layer's dense query projection reads every head, even after
# a block-diagonal $W_o$.

# %%
q_next_moved = np.abs(concat_drop @ Wo_bd @ Wq_next - out_bd @ Wq_next)  # (B, T, C) @ (C, C) -> (B, T, C)
print("block-diagonal W_o, head 3 dropped: this layer's output dims that move",
      int((moved_bd > atol).any(axis=(0, 1)).sum()), "| the next layer's query dims that move",
      int((q_next_moved > atol).any(axis=(0, 1)).sum()), "of", C)


def next_scores(heads):
    """The next layer's scores before the softmax (B, h, T, T), from this layer's output with `heads` dropped."""
    layer_out = drop_heads(concat, heads) @ Wo  # (B, T, C) @ (C, C) -> (B, T, C)
    Q_next = (layer_out @ Wq_next).reshape(B, T, h, hs).transpose(0, 2, 1, 3)  # (B, T, C) -> (B, h, T, hs)
    K_next = (layer_out @ Wk_next).reshape(B, T, h, hs).transpose(0, 2, 1, 3)  # (B, h, T, hs)
    return Q_next @ K_next.transpose(0, 1, 3, 2) / np.sqrt(hs)  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)


mlp_rng = np.random.default_rng(8)
W1_mlp = mlp_rng.standard_normal((C, 4 * C)) / np.sqrt(C)  # (C, 4C)
W2_mlp = mlp_rng.standard_normal((4 * C, C)) / np.sqrt(4 * C)  # (4C, C)


def relu_mlp(heads):
    """A ReLU MLP reading this layer's output with `heads` dropped: (B, T, C) -> (B, T, 4C) -> (B, T, C)."""
    return np.maximum(drop_heads(concat, heads) @ Wo @ W1_mlp, 0.0) @ W2_mlp


for name, f in [("next layer's scores", next_scores), ("ReLU MLP's output  ", relu_mlp)]:
    delta = f([]) - f([0]) - f([1]) + f([0, 1])  # heads 0 and 1 of this layer
    print(f"{name}: largest |interaction| of heads 0 and 1 = {np.abs(delta).max():.2f}, "
          f"largest |value| = {np.abs(f([])).max():.2f}")

# %% [markdown]
# With the block-diagonal $W_o$, dropping head 3 moved 16 of this layer's 64 output dimensions,
# and all 64 dimensions of the next layer's queries: the next layer's dense projection reads every
# head at once. And two heads do interact once the output is read by something that is not a sum:
# in the next layer's scores, before any softmax, and in an MLP. In a transformer block the MLP
# comes right after attention, and it is where the heads of a layer first combine non-linearly;
# Lesson 11 measures it there.

# %% [markdown]
# ## 7. What an attention layer costs: $4C^2$ parameters, whatever $h$ is
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
    """The per-head weight slices of one bias-free attention layer: name -> list of h arrays."""
    Wq_, Wk_, Wv_, Wo_ = (np.zeros((C, C)) for _ in range(4))  # the values do not matter, only the sizes
    return {"W_q": np.split(Wq_, h, axis=1),  # h arrays of (C, hs): head i's columns
            "W_k": np.split(Wk_, h, axis=1),
            "W_v": np.split(Wv_, h, axis=1),
            "W_o": np.split(Wo_, h, axis=0)}  # h arrays of (hs, C): head i's rows


C_gpt2 = 768
print(f"C = {C_gpt2}: parameters of one attention layer, counted from the per-head slices")
print(f"{'h':>3} {'hs':>4} {'W_q/W_k/W_v slice':>18} {'W_o slice':>10} {'per head':>9} {'whole layer':>12}")
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
# Three figures about GPT-2 small's attention are widely quoted: one attention layer has
# $4 \cdot 768^2 = 2{,}359{,}296$ parameters (the table confirms it); its 12 attention layers hold "~28.3M,
# roughly 23% of the model"; and, in a widely copied example, "a single attention layer with
# $D = 768$ has $3 \cdot 768^2 \approx 1.77$M parameters". To check the percentage, count GPT-2
# small itself. Its parameters, by their names in the released checkpoint, are the token
# embedding `wte` `(50257, 768)`, the position embedding `wpe` `(1024, 768)`, 12 transformer blocks
# (each an attention layer and an MLP, as Lesson 11 builds them), and a
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
attention_bias_free = n_layer * budget[12]  # 12 bias-free attention layers, from the table above
attention_gpt2 = sum(math.prod(shape) for name, shape in gpt2_shapes.items() if ".attn." in name)  # with biases

print(f"GPT-2 small, {len(gpt2_shapes)} tensors: {gpt2_total:,} parameters "
      f"(matches 124,439,808: {gpt2_total == 124_439_808})")
print(f"12 bias-free attention layers          : {attention_bias_free:,} = {attention_bias_free / 1e6:.1f}M, "
      f"{100 * attention_bias_free / gpt2_total:.2f}% of the model")
print(f"12 attention layers with GPT-2's biases: {attention_gpt2:,}, "
      f"{100 * attention_gpt2 / gpt2_total:.2f}% of the model")
print(f"token and position embeddings: {embeddings:,}, {100 * embeddings / gpt2_total:.1f}% of the model")
print(f"12 bias-free attention layers as a share of the non-embedding parameters ({gpt2_total - embeddings:,}): "
      f"{100 * attention_bias_free / (gpt2_total - embeddings):.1f}%")

# %% [markdown]
# The per-model figure is right: 12 attention layers hold 28,311,552 weights, 28.3M. So is
# "roughly 23%": 22.75% of GPT-2 small's 124,439,808 parameters, and 22.78% if GPT-2's attention
# biases are counted too. Note what the denominator includes: 31.6% of GPT-2 small is the token
# and position embeddings, and measured against the non-embedding parameters the attention layers
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
# projection, which brings it to 2,359,296, exactly the multi-head layer's budget. Counted
# completely on both sides, splitting one 768-wide head into 12 heads of 64 does not save or cost
# a single parameter; it only reorganises them.

# %% [markdown]
# ## Practice exercise
#
# The exercise asks for one function. Replace `raise NotImplementedError()` with your code, run
# the cell, then run the test cell below it. The visible checks use the lesson's data (`default_rng(42)`) and
# tell you what a failure most likely means; when your notebook is graded, hidden tests call your
# function again on fresh inputs (other widths, head counts and random draws), so write the general
# function, not one that fits this lesson's numbers.
#
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
def check_dims_changed_by_dropping():
    """Visible checks: small cases worked out by hand."""
    # C = 4. With h = 2 (hs = 2), head 0 is columns 0-1 of concat and rows 0-1 of Wo: row 0 of Wo reaches
    # output dims 0 and 3, row 1 reaches dim 1. Head 1's rows 2-3 reach dim 2 only.
    Wo = np.array([[1.0, 0.0, 0.0, 2.0], [0.0, -1.0, 0.0, 0.0], [0.0, 0.0, 3.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
    # One sequence of two positions: at [0, 0] head 0 outputs nothing, at [0, 1] it outputs [1, 0].
    concat = np.array([[[0.0, 0.0, 1.0, 1.0], [1.0, 0.0, 1.0, 1.0]]])  # (1, 2, 4)
    before = concat.copy()
    got = dims_changed_by_dropping(concat, Wo, 0, 2)
    assert np.array_equal(concat, before), "dims_changed_by_dropping modified concat: zero the head on a copy"
    assert np.ndim(got) == 0 and float(got) == int(got), f"return one whole number, got {got!r}"
    # Dropping head 0 removes [1, 0] @ Wo[0:2] = [1, 0, 0, 2] at position 1 (nothing at position 0): dims 0 and 3.
    if int(got) == 0:
        raise AssertionError("expected 2, got 0: dropping head 0 changes dims 0 and 3 at position [0, 1]. A dimension "
                             "counts if it changes at ANY batch element and position, and a change can be negative: "
                             "compare its absolute value with atol")
    assert int(got) == 2, f"dropping head 0 changes output dims 0 and 3 (at position 1): expected 2, got {got}"
    # Dropping head 1 removes [1, 1] @ Wo[2:4] = [0, 0, 4, 0] at both positions: dim 2, counted once.
    got = dims_changed_by_dropping(concat, Wo, 1, 2)
    if int(got) == 2:
        raise AssertionError("expected 1, got 2: dim 2 changes at two positions but counts once; count output "
                             "dimensions (at most C), not (position, dimension) entries")
    assert int(got) == 1, f"dropping head 1 changes output dim 2 only: expected 1, got {got}"
    # With h = 4 (hs = 1), head 3 is column 3 of concat and row 3 of Wo, which reaches dim 2.
    assert int(dims_changed_by_dropping(concat, Wo, 3, 4)) == 1, "with h = 4, head 3 (column 3) reaches dim 2 only"
    # Changes of 1e-12 are below the default atol: nothing counts.
    assert int(dims_changed_by_dropping(concat * 1e-12, Wo, 0, 2)) == 0, (
        "changes of about 1e-12 are not above atol = 1e-9: expected 0")
    assert int(dims_changed_by_dropping(concat * 1e-12, Wo, 0, 2, atol=1e-13)) == 2, "atol is an argument: use it"


check_dims_changed_by_dropping()

# The lesson's data, drawn again here: with these draws, 64 (dense) and 16 (block-diagonal) dims when head 3 is dropped.
_rng = np.random.default_rng(42)
_X = _rng.standard_normal((2, 6, 64))
_Wq, _Wk, _Wv, _Wo = (_rng.standard_normal((64, 64)) * 0.2 for _ in range(4))
_concat = multi_head_attention_forward(_X, _Wq, _Wk, _Wv, _Wo, 4)[1]["concat"]
_Wo_bd = np.where(np.arange(64)[:, None] // 16 == np.arange(64)[None, :] // 16, _Wo, 0.0)  # (C, C), diagonal blocks kept
assert dims_changed_by_dropping(_concat, _Wo, 3, 4) == 64, "dense Wo: dropping head 3 should move all 64 dims"
assert dims_changed_by_dropping(_concat, _Wo_bd, 3, 4) == 16, "block-diagonal Wo: dropping head 3 should move 16 dims"
print("Exercise 3 visible checks passed (hidden tests run at grading).")
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
# **The experiment.** With `default_rng(42)` drawing `X`, `Wq`, `Wk`, `Wv`, `Wo` in that order, and
# the block-diagonal $W_o$ keeping $W_o$'s own diagonal blocks, dropping head 3 changes 64 of 64
# output dimensions at position `[0, 0]` with the dense $W_o$ and 16 of 64 with the block-diagonal
# one. The same counts hold at all 12 positions of both sequences, and the `(h, C)` map shows the
# same for every head: dropping a head removes exactly its term, which reaches the columns where
# $W_o^{(i)}$ is nonzero.
#
# **A block-diagonal $W_o$ is no $W_o$.** Your `fold_into_wv` puts each block $B_i$ into head $i$'s
# value columns, $W_v^{(i)} B_i$; with $W_o = I$ the layer gives the block-diagonal layer's output to
# $10^{-12}$: $h$ single-head layers side by side.
#
# **Reach, and where it matters.** Head $i$'s term is $A_i X \big(W_v^{(i)} W_o^{(i)}\big)$, a `(C, C)`
# value map of rank $hs$ (16 here): with the dense $W_o$ every head can write to every output
# dimension. Between two bare attention layers a dense $W_o$ folds away as well, into the next
# layer's $W_q', W_k', W_v'$ (same two-layer output to $10^{-10}$). It stops folding once the output
# is added to a residual stream, which Lesson 11 builds.
#
# **$W_o$ adds the heads.** The interaction of any two heads,
# $\text{out} - \text{out}_{-a} - \text{out}_{-b} + \text{out}_{-a,-b}$, is zero (below $10^{-12}$)
# for every pair and both projections: each output dimension of a dense $W_o$ is a linear
# combination of all the heads, but $W_o$ adds them and never gates or multiplies one by another.
# Heads do interact in whatever reads the output non-additively: in the next layer's scores, which
# are bilinear in it, and in an MLP.
#
# **The budget.** One attention layer has $4C^2$ weights whatever $h$ is: 2,359,296 for $C = 768$
# at every $h$ in $\{1, 2, 3, 4, 6, 8, 12\}$, counted from the per-head slices; $4C^2 + 4C$ with
# biases. Twelve attention layers hold 28.3M, 22.75% of GPT-2 small's 124,439,808 parameters, so the quoted
# "roughly 23%" holds. The common "$3 \cdot 768^2 \approx 1.77$M" for a single attention layer
# counts $W_q, W_k, W_v$ only; with $W_o$ a single 768-wide head costs the same $4C^2$ as 12 heads.
#
# **Next:** Lesson 5 (optional, needs PyTorch) writes the same layer as a PyTorch `nn.Module`,
# loads these NumPy weights into it, and checks that both give the same output and the same
# $4C^2$ parameter count.
