# ---
# jupyter:
#   jupytext:
#     formats: 06-causal-masks//ipynb,py:percent
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
# # Lesson 6: Who may look at whom: causal and padding masks
#
# The layer you built in Lessons 1 to 4 lets every position attend to every other position,
# later ones included: change one input position and every output position moves (Section 5
# measures it). A language model that predicts token $t+1$ from tokens $0, \dots, t$ must not
# read token $t+1$ while it does so, or it learns to copy the answer. A **mask** says, for every
# query position $t$ and key position $s$, whether $t$ may look at $s$.
#
# Two masks cover almost every use. The **causal mask** lets position $t$ see positions
# $s \le t$ only. The **padding mask** hides the filler positions that pad a batch of sequences
# of unequal length to one common length $T$. This lesson builds both, applies them the way that
# is exact in floating point, and shows what goes wrong with each of the usual shortcuts.
#
# **What you'll do**
# - build the causal mask and apply it to the scores before the softmax, then draw the triangular
#   attention pattern of every head, `(B, h, T, T)`;
# - compare $-\infty$ with a large negative number as the fill value, in float16, float32 and float64;
# - mask after the softmax instead, and find out exactly what is and is not equal to masking before;
# - make leakage visible: an influence heatmap of how much output $t$ moves when token $s$ changes;
# - build padding masks for a batch of unequal lengths, combine them with the causal mask by
#   broadcasting, and meet the fully masked row and its NaN;
# - decode one token at a time with a key-value cache, check it against the full causal pass, and
#   count the multiply-adds it saves.
#
# **What you'll learn**
# - why masked scores are set to $-\infty$ **before** the softmax, and why masks are combined as booleans;
# - how real implementations handle a row with nothing to attend to, and the convention this course uses;
# - why a causal layer can cache its keys and values, and what that saves.
#
# **What you'll need**
# - scaled dot-product attention (Lessons 1 and 2) and the multi-head layer with shapes `(B, h, T, hs)` and $W_o$
#   (Lessons 3 and 4);
# - NumPy broadcasting and boolean indexing.
#
# Three graded exercises close the lesson. Their visible checks run as you work; hidden tests
# with fresh inputs run when your notebook is graded.

# %%
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

# %% [markdown]
# ## 0. The layer, with a mask argument
#
# This notebook defines its own small copies of the softmax and the multi-head forward pass of
# Lessons 1 to 4 in the cell below, so it imports nothing from other notebooks. Two things are
# new. The forward pass takes a boolean `mask` whose entry $(t, s)$ is `True` where query $t$ may
# attend to key $s$; it broadcasts against the scores `(B, h, T, T)`, and every blocked score is
# replaced by $-\infty$ before the softmax. And every matrix product goes through `matmul`, which
# counts its multiply-adds, so that Section 8 can count the work of decoding.
#
# The forward pass also has a `mask_after_softmax` switch. It exists only to demonstrate a common
# mistake in Sections 3 and 5; never use it.

# %%
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis` (Lesson 1)."""
    x = x - x.max(axis=axis, keepdims=True)  # subtract the row max: every exponent <= 0
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


multiply_adds = {"count": 0}  # running total of the multiply-adds done by matmul


def matmul(a, b):
    """a @ b, adding its multiply-adds (output size times the summed axis) to multiply_adds."""
    product = a @ b
    multiply_adds["count"] += product.size * a.shape[-1]
    return product


def split_heads(x, h):
    """(B, T, C) -> (B, h, T, hs)."""
    B, T, C = x.shape
    return x.reshape(B, T, h, C // h).transpose(0, 2, 1, 3)  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)


def merge_heads(x):
    """(B, h, T, hs) -> (B, T, C)."""
    B, h, T, hs = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, h * hs)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)


def multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h, mask=None, mask_after_softmax=False):
    """Multi-head self-attention: X (B, T, C) -> (out (B, T, C), cache of intermediates).

    mask: boolean, broadcastable to (B, h, T, T), True where query t may attend to key s.
    mask_after_softmax: demonstrates a mistake (Sections 3 and 5): zero the weights after the softmax.
    """
    hs = X.shape[-1] // h
    Q = split_heads(matmul(X, Wq), h)  # (B, T, C) @ (C, C) -> (B, T, C) -> (B, h, T, hs)
    K = split_heads(matmul(X, Wk), h)  # (B, h, T, hs)
    V = split_heads(matmul(X, Wv), h)  # (B, h, T, hs)
    scores = matmul(Q, K.transpose(0, 1, 3, 2)) / np.sqrt(hs)  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
    if mask is None:
        weights = softmax(scores)
    elif mask_after_softmax:  # the mistake: the softmax has already seen the blocked scores
        weights = softmax(scores) * mask  # (B, h, T, T) * (..., T, T)
    else:
        weights = softmax(np.where(mask, scores, -np.inf))  # blocked scores -> -inf -> weight exactly 0
    per_head = matmul(weights, V)  # (B, h, T, T) @ (B, h, T, hs) -> (B, h, T, hs)
    out = matmul(merge_heads(per_head), Wo)  # (B, T, C) @ (C, C) -> (B, T, C)
    return out, dict(Q=Q, K=K, V=V, scores=scores, weights=weights, per_head=per_head)


# %% [markdown]
# Two plotting helpers keep the figure cells short: `plot_tables` draws a row of `(T, T)` heatmaps
# with one colourbar and, for small tables, the value in every cell (`nan` cells are grey), and
# `plot_masks` draws boolean masks in two colours.

# %%
MASK_CMAP = ListedColormap(["#2b2b2b", "#f2c14e"])  # False (blocked) dark, True (allowed) yellow


def plot_tables(tables, titles, suptitle, label, vmin=0.0, vmax=1.0, cmap="viridis", fmt="{:.2f}", axes=None,
                xlabel="key position", ylabel="query position"):
    """Heatmaps of (T_q, T_k) tables side by side, one colourbar. nan cells are grey and read 'nan'."""
    own_figure = axes is None
    if own_figure:
        fig, axes = plt.subplots(1, len(tables), figsize=(3.3 * len(tables) + 1.3, 3.9))
        fig.subplots_adjust(left=0.25 / len(tables), right=0.84, top=0.82, bottom=0.14, wspace=0.3)
    axes = np.atleast_1d(axes)
    colours = plt.colormaps[cmap] if isinstance(cmap, str) else cmap
    colours = colours.with_extremes(bad="#bdbdbd")
    for ax, table, title in zip(axes, tables, titles, strict=True):
        table = np.asarray(table, dtype=float)
        image = ax.imshow(np.ma.masked_invalid(table), vmin=vmin, vmax=vmax, cmap=colours)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_xticks(range(table.shape[1]))
        ax.set_yticks(range(table.shape[0]))
        if table.size <= 64:  # small tables: print every value
            for q in range(table.shape[0]):
                for k in range(table.shape[1]):
                    value = table[q, k]
                    text = "nan" if np.isnan(value) else fmt.format(value)
                    light = np.isnan(value) or (value - vmin) > 0.6 * (vmax - vmin)
                    ax.text(k, q, text, ha="center", va="center", fontsize=7, color="black" if light else "white")
    colourbar = axes[0].figure.colorbar(image, ax=axes, shrink=0.85, label=label)
    if own_figure:
        left, right = axes[0].get_position().x0, axes[-1].get_position().x1
        fig.suptitle(suptitle, x=(left + right) / 2)  # centred over the panels, not the colourbar
    return colourbar


def plot_masks(masks, titles, suptitle, axes=None):
    """Boolean (T_q, T_k) masks: allowed yellow, blocked dark."""
    colourbar = plot_tables([np.asarray(m, dtype=float) for m in masks], titles, suptitle, "mask value",
                            cmap=MASK_CMAP, fmt="{:.0f}", axes=axes)
    colourbar.set_ticks([0.25, 0.75], labels=["False: blocked", "True: allowed"])


# %% [markdown]
# The lesson's batch: two sequences ($B = 2$) of $T = 6$ positions, width $C = 32$, $h = 4$
# heads of size $hs = 8$, everything drawn from `np.random.default_rng(6)` in the order below.
# The projections are scaled by 0.25 so that the scores have a standard deviation near 2 and the
# attention patterns are far from uniform.

# %%
rng = np.random.default_rng(6)
B, T, C, h = 2, 6, 32, 4
hs = C // h

X = rng.standard_normal((B, T, C))  # (B, T, C)
Wq, Wk, Wv, Wo = (rng.standard_normal((C, C)) * 0.25 for _ in range(4))  # each (C, C)

out_full, cache_full = multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h)  # no mask: everyone sees everyone
print("X", X.shape, "-> scores", cache_full["scores"].shape, "-> out", out_full.shape)
print(f"std of the scores: {cache_full['scores'].std():.2f}")

# %% [markdown]
# ## 1. The causal mask
#
# Query position $t$ may look at key position $s$ only if $s$ is not in its future:
#
# $$M_{ts} = \begin{cases} \text{True} & s \le t \\ \text{False} & s > t \end{cases}
# \qquad \text{a } (T, T) \text{ boolean matrix, True on and below the diagonal.}$$
#
# Compare a column of query positions `(T, 1)` with a row of key positions `(1, T)`: broadcasting
# gives the whole `(T, T)` table at once.

# %%
query_pos = np.arange(T)[:, None]  # (T, 1)
key_pos = np.arange(T)[None, :]  # (1, T)
causal = key_pos <= query_pos  # (T, 1) vs (1, T) -> (T, T), True where s <= t
print(causal.dtype, causal.shape)
print(causal.astype(int))

# %% [markdown]
# The mask acts on the scores, **before** the softmax. Every blocked score becomes $-\infty$:
#
# $$\tilde S_{ts} = \begin{cases} S_{ts} & M_{ts} \\ -\infty & \text{otherwise} \end{cases},
# \qquad A_{t s} = \frac{e^{\tilde S_{ts} - m_t}}{\sum_{s'} e^{\tilde S_{ts'} - m_t}}
# = \frac{e^{S_{ts}} \,[s \le t]}{\sum_{s' \le t} e^{S_{ts'}}}, \qquad m_t = \max_{s'} \tilde S_{ts'} .$$
#
# Since $e^{-\infty} = 0$ exactly, a blocked key adds nothing to the denominator and gets weight
# exactly 0, and each row still sums to 1 over the keys it may see. `np.where(mask, scores, -np.inf)`
# does the replacement; the row maximum $m_t$ is a real score, because the diagonal is never
# blocked. Here is head 0 of the first sequence:

# %%
scores_00 = cache_full["scores"][0, 0]  # (T, T): batch 0, head 0, already divided by sqrt(hs)
masked_scores_00 = np.where(causal, scores_00, -np.inf)  # (T, T), -inf above the diagonal
weights_00 = softmax(masked_scores_00)  # (T, T)

print("weights, batch 0, head 0:")
print(np.round(weights_00, 3))
print("every blocked weight is exactly 0:", bool(np.all(weights_00[~causal] == 0.0)))
print("every row sums to 1:", np.allclose(weights_00.sum(axis=-1), 1.0))
print("row 0 is exactly [1, 0, 0, 0, 0, 0]:", np.array_equal(weights_00[0], np.eye(T)[0]))

# %%
fig, axes = plt.subplots(1, 3, figsize=(14.5, 4.4))
fig.subplots_adjust(left=0.04, right=0.97, top=0.82, bottom=0.13, wspace=0.45)
plot_masks([causal], ["causal mask M (True: s <= t)"], None, axes=axes[:1])
plot_tables([masked_scores_00], ["masked scores (grey: -inf)"], None, "score", vmin=-5, vmax=5,
            cmap="coolwarm", axes=axes[1:2])
plot_tables([weights_00], ["attention weights"], None, "attention weight", axes=axes[2:])
for q, k in zip(*np.nonzero(~causal), strict=True):
    axes[1].text(k, q, "-inf", ha="center", va="center", fontsize=7)
fig.suptitle("Causal masking of batch 0, head 0 (T=6): the mask, the scores it leaves, the weights")
plt.show()

# %% [markdown]
# *Figure: left, the mask, allowed on and below the diagonal. Middle, the scores after masking:
# everything above the diagonal is $-\infty$. Right, the weights: an exact lower triangle whose
# rows sum to 1. Row 0 can only see itself, so its weight on position 0 is exactly 1.*

# %% [markdown]
# ## 2. $-\infty$ or a large negative number?
#
# Much code fills blocked scores with a large negative number instead, such as `-1e9` or
# `np.finfo(dtype).min`, the most negative finite number of the dtype. The blocked weight is then
# $e^{F - m_t} / Z_t$ for a fill $F$, and it is exactly 0 only if $e^{F - m_t}$ underflows. `np.exp`
# returns 0 once its result would be below half the smallest positive (subnormal) number of the
# dtype, that is for arguments below about $\ln(\text{smallest subnormal}/2)$:

# %%
for dtype in (np.float16, np.float32, np.float64):
    info = np.finfo(dtype)
    threshold = np.log(float(info.smallest_subnormal)) - np.log(2.0)  # ln(smallest subnormal / 2)
    print(f"{dtype.__name__:8s} smallest subnormal {float(info.smallest_subnormal):9.3g}   "
          f"exp(x) == 0 for x below about {threshold:8.2f}   most negative finite {float(info.min):10.4g}")

# %% [markdown]
# So a fill only gives weight 0 when it sits more than about 17, 104 or 745 below the row's
# largest allowed score, depending on the dtype. Take the row of scores `[0, 1, F]` where the
# third key is blocked, and try fills from $-10$ to $-\infty$ in each precision. A fill is cast to
# the dtype first, and `-1e9` does not fit in float16, whose largest magnitude is 65504: it
# becomes $-\infty$ (NumPy warns about the overflowing cast; the cell silences that warning).

# %%
fills = [("-10", -10.0), ("-100", -100.0), ("-1e4", -1e4), ("-1e9", -1e9), ("finfo.min", None), ("-inf", -np.inf)]
dtypes = (np.float16, np.float32, np.float64)
print(f"{'fill':>10s}" + "".join(f"{d.__name__:>31s}" for d in dtypes))
allowed_weights = {d: [] for d in dtypes}
for label, fill in fills:
    cells = []
    for dtype in dtypes:
        with np.errstate(over="ignore"):  # np.float16(-1e9) overflows to -inf: that is the point
            value = np.finfo(dtype).min if fill is None else dtype(fill)
        weights_row = softmax(np.array([0.0, 1.0, value], dtype=dtype))  # key 2 is blocked
        blocked = weights_row[2]
        if blocked == 0:
            text = "0 exactly"
        elif blocked < np.finfo(dtype).smallest_normal:
            text = "nonzero (subnormal)"
        else:
            text = f"{float(blocked):.3g}"
        if np.isneginf(value) and label != "-inf":
            text += " (fill cast to -inf)"
        cells.append(text)
        if label in ("-1e4", "-1e9", "finfo.min", "-inf"):
            allowed_weights[dtype].append(weights_row)
    print(f"{label:>10s}" + "".join(f"{c:>31s}" for c in cells))
for dtype in dtypes:
    same = all(np.array_equal(w, allowed_weights[dtype][0]) for w in allowed_weights[dtype])
    print(f"{dtype.__name__}: -1e4, -1e9, finfo.min and -inf give identical weights on this row: {same}")

# %% [markdown]
# Read the table by rows. A fill of $-10$ leaves a weight of about $1.2 \times 10^{-5}$ on the
# blocked key in float32 and float64 (in float16 a subnormal, but still not 0): attention to a
# position that was supposed to be invisible. $-100$ is above the underflow thresholds of float32
# and float64, so the blocked weight is still nonzero there (a subnormal in float32, $10^{-44}$ in
# float64); in float16 it is 0. From $-10^4$ on, every fill gives exactly 0 on this row, and `-1e9`
# in float16 only does so because the cast made it $-\infty$. With the largest allowed score at 1,
# $-10^4$, `-1e9`, `finfo.min` and $-\infty$ give **identical** weights in every precision on a
# row that has an allowed key.
#
# The fills differ in two other places. The first is a row with **no** allowed key at all (Section 7
# shows how padding creates one). With $-\infty$, the row maximum is $-\infty$ and the softmax
# computes $-\infty - (-\infty)$, which is NaN. With a finite fill, every entry of the row is the
# same number, so the softmax returns uniform weights:

# %%
for dtype in (np.float32, np.float64):
    for name, fill in [("-1e9", -1e9), ("finfo.min", np.finfo(dtype).min), ("-inf", -np.inf)]:
        row = np.full(4, fill, dtype=dtype)  # four keys, all blocked
        with np.errstate(invalid="ignore"):  # -inf - (-inf) = nan: the warning is the point here
            weights_row = softmax(row)
        print(f"{dtype.__name__}, every key filled with {name:9s}: weights {weights_row}")

# %% [markdown]
# The second is **arithmetic on the fill**. Many implementations turn a boolean mask into an
# additive one, 0 where allowed and a large negative number where blocked, and add it to the
# scores; with two masks (causal and padding) they add both. A finite fill that is added can
# overflow to $-\infty$ after all: twice `finfo(float32).min` is below the most negative float32,
# and in float16 even a score of $-16$ plus `finfo(float16).min` overflows, because float16 rounds
# $-65520$ and anything below it to $-\infty$.

# %%
with np.errstate(over="ignore"):  # the overflows are the point of this cell
    twice_min = np.float32(np.finfo(np.float32).min) + np.float32(np.finfo(np.float32).min)
    half_sums = {score: np.float16(score) + np.finfo(np.float16).min for score in (-1, -15, -16, -17)}
print("float32: finfo.min + finfo.min =", twice_min)
for score, total in half_sums.items():
    print(f"float16: score {score:3d} + finfo.min = {total}")
with np.errstate(invalid="ignore"):  # a row of -inf: -inf - (-inf) = nan
    print("softmax of a row of three such float32 sums:", softmax(np.full(3, twice_min)))

# %% [markdown]
# A row whose entries all overflowed this way is back to NaN, although no $-\infty$ was ever
# written: the last line above. So the course applies masks in one way only:
#
# - masks are **booleans**, `True` where attention is allowed, combined with `&` (never added);
# - they are applied once, with `np.where(mask, scores, -np.inf)`, which replaces a score rather
#   than adding to it: a blocked weight is exactly 0 in every precision, and nothing can overflow;
# - a row with no allowed key is handled on purpose (Section 7), not by the choice of fill.

# %% [markdown]
# ## 3. Why masking after the softmax is wrong
#
# A tempting shortcut runs the ordinary softmax and then zeroes the weights of the future,
# $\hat A = M \odot \operatorname{softmax}(S)$:
#
# $$\hat A_{ts} = [s \le t]\, \frac{e^{S_{ts}}}{\sum_{s'=0}^{T-1} e^{S_{ts'}}} .$$
#
# The denominator still sums over **every** key, the future included. Two things follow: the
# rows no longer sum to 1, and the weights on the past depend on the scores of the future.

# %%
post_00 = softmax(scores_00) * causal  # (T, T): softmax first, then zero the future
row_sums = post_00.sum(axis=-1, keepdims=True)  # (T, 1)
print("row sums after masking the weights:", np.round(row_sums[:, 0], 3))
print("equal to masking the scores first:", np.allclose(post_00, weights_00))
print("each row is the pre-masked row times its sum:", np.allclose(post_00, weights_00 * row_sums))

# Change the key of the last position only: it is in the future of queries 0 to 4.
Q_00, K_00 = cache_full["Q"][0, 0], cache_full["K"][0, 0]  # (T, hs) each
K_changed = K_00.copy()
K_changed[T - 1] += 3.0
scores_before = Q_00 @ K_00.T / np.sqrt(hs)  # (T, hs) @ (hs, T) -> (T, T)
scores_after = Q_00 @ K_changed.T / np.sqrt(hs)  # the same product with position 5's key changed
pre_before, pre_after = (softmax(np.where(causal, s, -np.inf)) for s in (scores_before, scores_after))
post_before, post_after = (softmax(s) * causal for s in (scores_before, scores_after))
print("rows 0-4 unchanged by the future key, mask before softmax:", np.array_equal(pre_before[:5], pre_after[:5]))
print("rows 0-4 unchanged by the future key, mask after softmax: ", np.array_equal(post_before[:5], post_after[:5]))

# %% [markdown]
# Query rows 0 to 4 never look at position 5, yet with the mask after the softmax their weights
# moved when position 5's key changed: the future leaks through the denominator. With the mask
# before the softmax they are bit-for-bit the same.

# %%
fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.4))
fig.subplots_adjust(left=0.12, right=0.86, top=0.84, bottom=0.13, wspace=0.5)
plot_tables([weights_00, post_00], ["masked before the softmax", "masked after the softmax"], None,
            "attention weight", axes=axes)
for ax, table in zip(axes, (weights_00, post_00), strict=True):
    ax.set_yticks(range(T), [f"{t}  (sum {table[t].sum():.2f})" for t in range(T)], fontsize=8)
fig.suptitle("Batch 0, head 0: the same mask applied before and after the softmax (row sums on the left)",
             x=(axes[0].get_position().x0 + axes[-1].get_position().x1) / 2)
plt.show()

# %% [markdown]
# *Figure: both tables are zero above the diagonal, but only the left one is a set of
# probability distributions. On the right, each row's weights are the left row's weights
# shrunk by the share of the softmax that the future took, so the sums (in the tick labels) fall
# below 1: only the last row, which has no future, sums to 1.*
#
# ### Renormalising: what is and is not equal
#
# The obvious repair divides each row by its new sum,
# $\bar A_{ts} = \hat A_{ts} / \sum_{s'} \hat A_{ts'}$. Algebraically the full-row denominators
# cancel and
#
# $$\bar A_{ts} = \frac{[s \le t]\, e^{S_{ts}}}{\sum_{s' \le t} e^{S_{ts'}}} = A_{ts},$$
#
# exactly the pre-softmax mask. On the lesson's scores the two agree to rounding:

# %%
renorm_00 = post_00 / post_00.sum(axis=-1, keepdims=True)  # divide each row by what is left of it
print("renormalised equals pre-masked to 1e-12:", np.allclose(renorm_00, weights_00, rtol=0, atol=1e-12))

# %% [markdown]
# The equality holds only as long as the exponentials of the allowed scores survive the first
# softmax. That softmax subtracts the maximum over **all** keys, the blocked ones included. When a
# blocked (future) score is far above the allowed ones, the allowed exponentials are subnormal,
# with few significant bits, or underflow to 0, and the renormalisation divides 0 by 0. Masking
# before the softmax subtracts the maximum of the allowed scores only, so it never meets this
# problem. Here is one query that may see keys 0 and 1, whose blocked key 2 scores `gap` above them:

# %%
gaps = [50, 100, 200, 740, 800]
print(f"{'gap':>30s}" + "".join(f"{g:>8d}" for g in gaps))
for dtype in (np.float32, np.float64):
    verdicts = []
    for gap in gaps:
        row = np.array([0.0, 1.0, 1.0 + gap], dtype=dtype)  # keys 0 and 1 allowed, key 2 blocked
        allowed = np.array([True, True, False])
        pre = softmax(np.where(allowed, row, -np.inf))
        with np.errstate(invalid="ignore"):  # 0 / 0 when every allowed exponential underflowed
            post = softmax(row) * allowed
            renorm = post / post.sum()
        verdicts.append("nan" if np.isnan(renorm).any() else str(np.allclose(renorm, pre, rtol=1e-6, atol=0)))
    print(f"{dtype.__name__ + ': renormalised == pre-masked':>30s}" + "".join(f"{v:>8s}" for v in verdicts))

# %% [markdown]
# In float32 the renormalised weights are already wrong at a gap of 100 (subnormal
# exponentials) and NaN at 200; in float64 they are wrong at 740 and NaN at 800, the thresholds
# of Section 2. The pre-masked weights are right at every gap. So renormalising after the
# softmax equals masking before it only while no exponential of an allowed score underflows, and
# even then it costs a second normalisation of every row. Mask the scores, then take one softmax.

# %% [markdown]
# ## 4. The triangular pattern of every head
#
# The mask is `(T, T)`, the scores are `(B, h, T, T)`. `np.where` broadcasts the mask over the
# batch and head axes, so one mask serves every sequence and every head: the forward pass takes
# `mask=causal` as it is.

# %%
out_causal, cache_causal = multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h, mask=causal)
weights_causal = cache_causal["weights"]  # (B, h, T, T)
print("mask", causal.shape, "broadcast against scores", cache_causal["scores"].shape,
      "-> weights", weights_causal.shape)
print("above the diagonal, every weight of every head and batch is exactly 0:",
      bool(np.all(weights_causal[..., ~causal] == 0.0)))
print("every row of every head sums to 1:", np.allclose(weights_causal.sum(axis=-1), 1.0))
print("row 0 puts weight exactly 1 on position 0 in every head:", bool(np.all(weights_causal[..., 0, 0] == 1.0)))

# %%
plot_tables(weights_causal[0], [f"head {i}" for i in range(h)],
            "Causal attention weights of all 4 heads, batch element 0 (B=2, T=6, C=32, h=4)", "attention weight")
plt.show()

# %% [markdown]
# *Figure: one `(T, T)` table per head. Every head is lower-triangular, yet the heads still
# differ: each spreads its row over the past in its own way. Row 0 is always `[1, 0, ..., 0]`,
# since position 0 has no past, and row $t$ has $t + 1$ candidates.*

# %% [markdown]
# ## 5. Leakage made visible
#
# The mask's promise is about **outputs**: output position $t$ must not depend on any token
# $s > t$. Test it directly: add 1 to every feature of input position $s$, run the layer
# again, and record how far output position $t$ moved,
#
# $$I_{ts} = \max_{b,\, c} \left| \text{out}(X + \mathbf{1}_s)_{btc} - \text{out}(X)_{btc} \right| ,$$
#
# for every pair $(t, s)$: a `(T, T)` influence table. Do it for the layer with no mask, with the
# mask after the softmax, and with the mask before the softmax. (The loop over $s$ is an
# experiment on the layer, not part of it.)

# %%
def influence_table(**mask_options):
    """(T, T) table: entry (t, s) is the largest |change| of output t when input s gets +1."""
    base, _ = multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h, **mask_options)
    table = np.zeros((T, T))
    for s in range(T):
        X_s = X.copy()
        X_s[:, s, :] += 1.0  # perturb token s in both sequences
        moved, _ = multi_head_attention_forward(X_s, Wq, Wk, Wv, Wo, h, **mask_options)
        table[:, s] = np.abs(moved - base).max(axis=(0, 2))  # (B, T, C) -> (T,)
    return table


influence = {
    "no mask": influence_table(),
    "mask after the softmax": influence_table(mask=causal, mask_after_softmax=True),
    "mask before the softmax": influence_table(mask=causal),
}
future = ~causal  # (T, T): the pairs with s > t
for name, table in influence.items():
    print(f"{name:24s} future entries that moved: {int(np.count_nonzero(table[future]))} of {int(future.sum())};"
          f"  past and present entries that moved: {int(np.count_nonzero(table[causal]))} of {int(causal.sum())}")
print("mask before the softmax: every future entry is exactly 0:",
      bool(np.all(influence["mask before the softmax"][future] == 0.0)))

# %%
plot_tables(list(influence.values()), list(influence.keys()),
            "How far output t moves when input token s changes by +1 (B=2, T=6, C=32, h=4)",
            "max |change of output t|", vmax=max(float(t.max()) for t in influence.values()),
            xlabel="key position s", ylabel="query position t")
plt.show()

# %% [markdown]
# *Figure: entry $(t, s)$ is the influence of input $s$ on output $t$; the upper triangle is the
# future. Left, with no mask, all 36 entries are nonzero. Middle, masking the weights after the
# softmax still leaves the whole upper triangle nonzero: the blocked tokens' keys reach the past
# through the denominator. Right, masking the scores gives an upper triangle of exact zeros: the
# past no longer sees the future, and every output still depends on itself and its past.*

# %% [markdown]
# ## 6. Padding masks for a batch of unequal lengths
#
# Real batches hold sequences of different lengths. To stack them into one `(B, T, C)` array,
# shorter sequences are padded to length $T$ with filler positions whose content means nothing.
# No real query may attend to a filler key. With the sequence lengths $L_b$, the **key padding
# mask** is
#
# $$P_{bs} = [s < L_b] \quad (B, T), \qquad \text{reshaped to } (B, 1, 1, T) ,$$
#
# so that it broadcasts over heads (axis 1) and queries (axis 2). Combined with the causal mask,
# reshaped to `(1, 1, T, T)`, by a logical and:
#
# $$M_{b\,\cdot\,ts} = [s \le t] \wedge [s < L_b] \quad (1, 1, T, T) \wedge (B, 1, 1, T) \to (B, 1, T, T),$$
#
# which broadcasts against the scores `(B, h, T, T)`: every head of sequence $b$ shares one mask.
# Take three sequences of lengths 6, 4 and 2, padded on the right:

# %%
lengths = np.array([6, 4, 2])
B3 = len(lengths)
X_pad = rng.standard_normal((B3, T, C))  # (B, T, C); positions s >= L_b are filler

key_is_real = np.arange(T)[None, :] < lengths[:, None]  # (1, T) vs (B, 1) -> (B, T)
padding_mask = key_is_real[:, None, None, :]  # (B, T) -> (B, 1, 1, T)
combined = causal[None, None, :, :] & padding_mask  # (1, 1, T, T) & (B, 1, 1, T) -> (B, 1, T, T)
print("causal", causal[None, None].shape, "& padding", padding_mask.shape, "->", combined.shape)

out_pad, cache_pad = multi_head_attention_forward(X_pad, Wq, Wk, Wv, Wo, h, mask=combined)
print("weights", cache_pad["weights"].shape, "(B, h, T, T)")
filler_key = ~key_is_real[:, None, None, :]  # (B, 1, 1, T): True on the filler keys
print("every weight on a filler key is exactly 0:", bool(np.all(cache_pad["weights"][np.broadcast_to(
    filler_key, cache_pad["weights"].shape)] == 0.0)))

# The filler content must not matter to any real position: draw different filler and compare.
X_other = X_pad.copy()
X_other[~key_is_real] = rng.standard_normal((int((~key_is_real).sum()), C)) * 10  # new filler, 10x larger
out_other, _ = multi_head_attention_forward(X_other, Wq, Wk, Wv, Wo, h, mask=combined)
print("outputs at real positions unchanged by new filler:", np.array_equal(out_other[key_is_real], out_pad[key_is_real]))

# %% [markdown]
# The outputs at real positions are identical, bit for bit, whatever the filler holds, and
# every weight on a filler key is 0. The filler *query* rows (for example positions 4 and 5 of
# the second sequence) still attend to the real keys before them and produce numbers; those
# numbers are simply never used, since a model computes no prediction or loss at filler positions.

# %% [markdown]
# ### Left padding, and the row with nothing to see
#
# When a batch is used to *generate* text, the sequences are usually padded on the **left**, so
# that every sequence's last real token sits in the same final column. Then the filler keys come
# first, and a filler query at the start of a sequence may, by the causal mask, only see keys
# that are all filler: its row of the combined mask has no `True` at all.

# %%
key_is_real_left = np.arange(T)[None, :] >= (T - lengths)[:, None]  # (B, T): filler first, then the real tokens
combined_left = causal[None, None, :, :] & key_is_real_left[:, None, None, :]  # (B, 1, T, T)
fully_masked = ~combined_left.any(axis=-1)  # (B, 1, T): rows with no allowed key
for b in range(B3):
    print(f"sequence {b} (length {lengths[b]}): fully masked query rows {np.flatnonzero(fully_masked[b, 0]).tolist()}")

# %%
fig, axes = plt.subplots(2, 3, figsize=(12.5, 7.0))
fig.subplots_adjust(left=0.06, right=0.8, top=0.9, bottom=0.07, wspace=0.35, hspace=0.25)
plot_masks([combined[b, 0] for b in range(B3)], [f"sequence {b}: length {L}, right-padded" for b, L in enumerate(lengths)],
           None, axes=axes[0])
plot_masks([combined_left[b, 0] for b in range(B3)], [f"sequence {b}: length {L}, left-padded" for b, L in enumerate(lengths)],
           None, axes=axes[1])
fig.suptitle("Causal & padding mask of each sequence, (B, 1, T, T): one mask shared by all heads",
             x=(axes[0, 0].get_position().x0 + axes[0, -1].get_position().x1) / 2)
plt.show()

# %% [markdown]
# *Figure: one combined mask per sequence. Sequence 0 has no filler, so both of its masks are the
# causal triangle. Top row, right padding: sequences 1 and 2 lose the key columns from their
# length on (dark columns), and every row still allows key 0. Bottom row, left padding: the filler
# columns come first, so the first $T - L_b$ rows are entirely dark: queries 0 and 1 of sequence 1
# and queries 0 to 3 of sequence 2 have no key they may attend to.*

# %% [markdown]
# ## 7. A fully masked row gives NaN
#
# For such a row, every score is $-\infty$, the row maximum is $-\infty$, and the softmax computes
# $e^{-\infty - (-\infty)} = e^{\text{NaN}}$: the whole row of weights is NaN, and so is that
# position's output.

# %%
with np.errstate(invalid="ignore"):  # -inf - (-inf): the NaN is the point of this cell
    out_left, cache_left = multi_head_attention_forward(X_pad, Wq, Wk, Wv, Wo, h, mask=combined_left)
nan_rows = np.isnan(out_left).any(axis=-1)  # (B, T)
print("output positions with NaN:", [np.flatnonzero(nan_rows[b]).tolist() for b in range(B3)])
print("exactly the fully masked rows:", np.array_equal(nan_rows, fully_masked[:, 0]))

# %% [markdown]
# It would be tempting to say "those are filler positions, ignore them". But NaN does not stay
# put. Feed this output to a second layer with the same mask: each filler position's NaN becomes
# a NaN key and value, and although every real query gives that key weight 0, the product
# $0 \times \text{NaN}$ is NaN, so the NaN reaches every position of the sequence.

# %%
with np.errstate(invalid="ignore"):
    out_layer2, _ = multi_head_attention_forward(out_left, Wq, Wk, Wv, Wo, h, mask=combined_left)
print("layer 2 output positions with NaN:",
      [np.flatnonzero(np.isnan(out_layer2[b]).any(axis=-1)).tolist() for b in range(B3)])
print("0.0 * nan =", 0.0 * np.nan)

# %% [markdown]
# Sequences 1 and 2 are now NaN everywhere, their real tokens included. So a fully masked row
# must be given a value on purpose. Two conventions are in use:
#
# 1. **A finite fill.** Replace blocked scores with `np.finfo(dtype).min` instead of $-\infty$.
#    A fully masked row is then constant, and the softmax makes it uniform: the row attends
#    equally to every key, blocked ones included.
# 2. **Zero weights.** Detect the rows with no allowed key and set their weights, and so their
#    output, to 0. PyTorch's `torch.nn.functional.scaled_dot_product_attention` has returned
#    zeros for such rows since release 2.5 (October 2024); earlier releases return NaN there.
#
# Both agree with $-\infty$ on every row that has an allowed key. Compare them on the left-padded
# batch, starting from the scores of the layer above:

# %%
scores_left = cache_left["scores"]  # (B, h, T, T), before masking
V_left = cache_left["V"]  # (B, h, T, hs)
has_key = combined_left.any(axis=-1, keepdims=True)  # (B, 1, T, 1): does the row allow anything?

with np.errstate(invalid="ignore"):
    weights_inf = softmax(np.where(combined_left, scores_left, -np.inf))  # (B, h, T, T), NaN rows
weights_fill = softmax(np.where(combined_left, scores_left, np.finfo(scores_left.dtype).min))  # convention 1
weights_zero = np.where(has_key, weights_fill, 0.0)  # convention 2: rows with no allowed key -> 0

ok = np.broadcast_to(has_key, weights_inf.shape)  # (B, h, T, T): entries of rows with an allowed key
print("rows with an allowed key: finite fill == -inf exactly:", np.array_equal(weights_fill[ok], weights_inf[ok]))
print("fully masked rows, finite fill: uniform 1/T =", bool(np.all(weights_fill[~ok] == 1 / T)))
print("fully masked rows, zero convention: all 0 =", bool(np.all(weights_zero[~ok] == 0.0)))
print("NaN anywhere in either convention:", bool(np.isnan(weights_fill).any() or np.isnan(weights_zero).any()))

# %% [markdown]
# A uniform row is finite, but look at what it computes: the average of every value in the
# sequence, the very values the mask said not to read. Change the filler content and that
# output moves; under the zero convention it is exactly 0, whatever the filler holds:

# %%
V_left_other = V_left.copy()
filler_left = ~key_is_real_left  # (B, T): the filler positions
V_left_other[np.broadcast_to(filler_left[:, None, :], V_left.shape[:3])] += 5.0  # change every filler value
for name, w in [("finite fill", weights_fill), ("zero rows  ", weights_zero)]:
    row_0 = w[2, :, 0:1, :]  # (h, 1, T): sequence 2, query 0, a fully masked row, every head
    same = np.array_equal(row_0 @ V_left[2], row_0 @ V_left_other[2])  # (h, 1, T) @ (h, T, hs) -> (h, 1, hs)
    print(f"{name}: output of the fully masked row unchanged by the filler: {same}")

# %% [markdown]
# **The course's convention is the second: a query row with no allowed key gets weights 0 and
# output 0.** Of the two, it is the one under which no output depends on anything its mask
# blocks, and it never produces NaN. Exercise 2 asks you to build it into a general masked attention.

# %%
plot_tables([weights_inf[2, 0], weights_fill[2, 0], weights_zero[2, 0]],
            ["fill -inf: NaN rows", "fill finfo.min: uniform rows", "course convention: zero rows"],
            "Sequence 2 (length 2, left-padded), head 0: three ways to treat the fully masked rows 0-3",
            "attention weight")
plt.show()

# %% [markdown]
# *Figure: the same scores and mask, three treatments. Rows 4 and 5 are identical in all three
# panels. Rows 0 to 3 have no allowed key: with $-\infty$ they are NaN (grey), with the finite
# fill they spread $1/6$ over every key, filler included, and under the course's convention they
# are 0.*

# %% [markdown]
# ## 8. Decoding with a key-value cache
#
# A language model generates text one token at a time: it runs the layer on tokens $0..t$, uses
# output $t$ to choose token $t + 1$, appends it, and runs again. Run naively, step $t$ recomputes
# all $t + 1$ output rows. But Section 5 measured that, with the causal mask, no output moves
# when a later token changes: appending a token cannot change any earlier row. Only row $t$ is new, and it
# needs
#
# $$q_t = x_t W_q, \qquad K_{\le t} = \begin{bmatrix} K_{\le t-1} \\ x_t W_k \end{bmatrix}, \qquad
# V_{\le t} = \begin{bmatrix} V_{\le t-1} \\ x_t W_v \end{bmatrix}, \qquad
# o_t = \operatorname{softmax}\!\left(\frac{q_t K_{\le t}^\top}{\sqrt{hs}}\right) V_{\le t} .$$
#
# The keys and values of the past are the same as at the previous step, so the decoder keeps
# them in a **KV cache** and computes only the new token's projections and the new query's row.
# Per head, the shapes are: cache `(B, h, t, hs)` grows to `(B, h, t+1, hs)`, the query is
# `(B, h, 1, hs)`, its scores are `(B, h, 1, t+1)` and its output `(B, h, 1, hs)`. No mask is
# needed: the newest query may see every key in the cache.
#
# The code below keeps the cache in arrays allocated once for the final length and writes
# position $t$ into them at step $t$ (Exercise 3 grows the cache by concatenation instead). It generates from a fresh
# sequence of 32 tokens (the tokens are given, not sampled: only the attention is under test).

# %%
T_gen = 32
X_gen = rng.standard_normal((B, T_gen, C))  # (B, T_gen, C): the tokens that will arrive one by one


def decode_with_cache(X_seq, step_totals):
    """Feed X_seq (B, T, C) one position at a time through a KV cache: returns (B, T, C).

    After each step, appends the running multiply-add count to the list step_totals.
    """
    B_, T_, _ = X_seq.shape
    K_cache = np.zeros((B_, h, T_, hs))  # (B, h, T, hs), filled one position per step
    V_cache = np.zeros((B_, h, T_, hs))
    rows = []
    for t in range(T_):
        x_t = X_seq[:, t:t + 1, :]  # (B, 1, C): only the newest token
        q_t = split_heads(matmul(x_t, Wq), h)  # (B, 1, C) @ (C, C) -> (B, 1, C) -> (B, h, 1, hs)
        K_cache[:, :, t:t + 1] = split_heads(matmul(x_t, Wk), h)  # append k_t: (B, h, 1, hs)
        V_cache[:, :, t:t + 1] = split_heads(matmul(x_t, Wv), h)  # append v_t
        K_seen, V_seen = K_cache[:, :, :t + 1], V_cache[:, :, :t + 1]  # (B, h, t+1, hs): the past and now
        scores_t = matmul(q_t, K_seen.transpose(0, 1, 3, 2)) / np.sqrt(hs)  # (B, h, 1, hs) @ (B, h, hs, t+1) -> (B, h, 1, t+1)
        o_t = matmul(softmax(scores_t), V_seen)  # (B, h, 1, t+1) @ (B, h, t+1, hs) -> (B, h, 1, hs)
        rows.append(matmul(merge_heads(o_t), Wo))  # (B, 1, C) @ (C, C) -> (B, 1, C)
        step_totals.append(multiply_adds["count"])
    return np.concatenate(rows, axis=1)  # T_ rows of (B, 1, C) -> (B, T, C)


def decode_by_recomputing(X_seq, step_totals):
    """The naive decoder: at step t, the full causal pass over tokens 0..t; keep its last row."""
    T_ = X_seq.shape[1]
    rows = []
    for t in range(T_):
        mask_t = np.tril(np.ones((t + 1, t + 1), dtype=bool))  # (t+1, t+1) causal mask
        out_t, _ = multi_head_attention_forward(X_seq[:, :t + 1], Wq, Wk, Wv, Wo, h, mask=mask_t)
        rows.append(out_t[:, -1:, :])  # (B, 1, C): only the newest row is new
        step_totals.append(multiply_adds["count"])
    return np.concatenate(rows, axis=1)  # (B, T, C)


full_pass, _ = multi_head_attention_forward(X_gen, Wq, Wk, Wv, Wo, h, mask=np.tril(np.ones((T_gen, T_gen), dtype=bool)))

totals_cached, totals_recomputed = [], []  # running multiply-add counts, one per step
multiply_adds["count"] = 0
cached = decode_with_cache(X_gen, totals_cached)
macs_cached = multiply_adds["count"]

multiply_adds["count"] = 0
recomputed = decode_by_recomputing(X_gen, totals_recomputed)
macs_recomputed = multiply_adds["count"]

print("cached decoding == one full causal pass, to 1e-12:", np.allclose(cached, full_pass, rtol=0, atol=1e-12))
print("recomputing decoding == one full causal pass, to 1e-12:", np.allclose(recomputed, full_pass, rtol=0, atol=1e-12))
print(f"multiply-adds, recomputing the causal pass at every step: {macs_recomputed:>10,d}")
print(f"multiply-adds, with the KV cache:                         {macs_cached:>10,d}")
print(f"the cache does {macs_recomputed / macs_cached:.1f}x less multiply-add work for {T_gen} tokens")

# %% [markdown]
# Both decoders reproduce the one-shot causal pass to $10^{-12}$; the cache does a fraction of
# the work. The counts follow from the shapes. At step $t$, with $L = t + 1$ tokens seen, the
# recomputing decoder does the four projections for all $L$ tokens and the full $(L, L)$ score
# and weighted-sum products; the cached decoder does them for one token and one row:
#
# $$\text{recompute}_L = B\,(4 L C^2 + 2 L^2 C), \qquad \text{cached}_L = B\,(4 C^2 + 2 L C) .$$
#
# (The scores cost $h \cdot L \cdot L \cdot hs = L^2 C$ multiply-adds, since $h \cdot hs = C$;
# the softmax's exponentials are not counted.) Step by step, the formulas give exactly the
# counts recorded during the run, so they can be trusted at sizes too large to run here:

# %%
def decoding_multiply_adds(B_, T_, C_):
    """Per-step (recomputing, cached) multiply-adds to decode T_ tokens, from the formulas above: two (T_,) arrays."""
    L = np.arange(1, T_ + 1, dtype=np.int64)  # tokens seen at each step
    return B_ * (4 * L * C_**2 + 2 * L**2 * C_), B_ * (4 * C_**2 + 2 * L * C_)


per_step_slow = np.diff(totals_recomputed, prepend=0)  # (T_gen,): counted at each step
per_step_fast = np.diff(totals_cached, prepend=0)
formula_slow, formula_fast = decoding_multiply_adds(B, T_gen, C)
print("formulas == counts, at every one of the", T_gen, "steps:",
      np.array_equal(formula_slow, per_step_slow) and np.array_equal(formula_fast, per_step_fast))
for B_, T_, C_ in [(1, 128, 768), (1, 1024, 768)]:
    slow, fast = (int(n.sum()) for n in decoding_multiply_adds(B_, T_, C_))
    print(f"B={B_}, T={T_:4d}, C={C_}: recompute {slow:.3e}, cached {fast:.3e}, ratio {slow / fast:6.1f}x")

# %%
steps = np.arange(1, T_gen + 1)
fig, ax = plt.subplots(figsize=(7.5, 4.2))
_ = ax.plot(steps, per_step_slow, marker="o", markersize=3, label="recompute the causal pass")
_ = ax.plot(steps, per_step_fast, marker="o", markersize=3, label="KV cache: one new row")
ax.set_yscale("log")
ax.set_xlabel("tokens seen, L = t + 1")
ax.set_ylabel("multiply-adds at this step (log scale)")
ax.set_title(f"Work per decoding step (B={B}, C={C}, h={h}; total ratio {macs_recomputed / macs_cached:.1f}x)")
ax.legend()
plt.show()

# %% [markdown]
# *Figure: multiply-adds counted at each step of the run. Recomputing grows with $L$ (projections) and $L^2$ (the score
# table); the cached step grows only through the one new row of scores, linearly in $L$ and with
# a small slope. The gap widens with every token.*

# %% [markdown]
# ## Practice exercises
#
# Each exercise asks for one function. Replace `raise NotImplementedError()` with your code, run
# the cell, then run the test cell below it. The visible checks use the lesson's arrays and tell
# you what a failure most likely means; when your notebook is graded, hidden tests call your
# function again on fresh inputs (other lengths, shapes, masks and values), so write the general
# function, not one that fits this lesson's data.
#
# ### Exercise 1: the causal mask (2 points)
#
# Write `causal_mask(T)`: return the `(T, T)` NumPy array of **booleans** whose entry $(t, s)$ is
# `True` where query $t$ may attend to key $s$, that is where $s \le t$.

# %% nbgrader={"grade": false, "grade_id": "causal_mask", "locked": false, "schema_version": 3, "solution": true, "task": false}
def causal_mask(T):
    """(T, T) boolean array, True where key position s <= query position t (attention allowed)."""
    ### BEGIN SOLUTION
    positions = np.arange(T)
    return positions[None, :] <= positions[:, None]  # (1, T) vs (T, 1) -> (T, T)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_causal_mask", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
_BY_HAND = {  # the masks for T = 1, 2 and 6, written out row by row: row t = query t, column s = key s
    1: ["1"],
    2: ["10",
        "11"],
    6: ["100000",
        "110000",
        "111000",
        "111100",
        "111110",
        "111111"],
}


def check_causal_mask(T):
    """Visible check with a hint for the usual mistakes, against the mask written out by hand."""
    got = causal_mask(T)
    assert isinstance(got, np.ndarray), f"causal_mask should return a NumPy array, got {type(got).__name__}"
    assert got.shape == (T, T), f"causal_mask({T}) should have shape {(T, T)}, got {got.shape}"
    assert got.dtype == bool, (
        f"the mask should hold booleans, got dtype {got.dtype}: compare positions (<=), or pass dtype=bool "
        "(np.where and & treat numbers differently from booleans)")
    expected = np.array([[c == "1" for c in row] for row in _BY_HAND[T]])  # (T, T) booleans
    if np.array_equal(got, expected):
        return
    if np.array_equal(got, expected.T) and T > 1:
        raise AssertionError("True above the diagonal: that lets every query see the future. The allowed "
                             "entries are on and BELOW the diagonal (row t = query, column s = key, s <= t)")
    if np.array_equal(got, expected & ~np.eye(T, dtype=bool)):
        raise AssertionError("the diagonal is blocked: query t may attend to itself (s <= t, not s < t); "
                             "row 0 would have nothing to attend to")
    if np.array_equal(got, ~expected):
        raise AssertionError("the mask is inverted: True must mean 'may attend' (s <= t), not 'blocked'")
    raise AssertionError("entry (t, s) should be True exactly when s <= t")


for _T in (2, 1, 6):
    check_causal_mask(_T)
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: masked attention with the course's convention (4 points)
#
# Write `masked_attention(Q, K, V, mask)` returning the pair `(out, weights)`, for `Q` of shape
# `(..., T_q, d_k)`, `K` of shape `(..., T_k, d_k)`, `V` of shape `(..., T_k, d_v)` with any
# leading axes (none, `(B,)`, `(B, h)`, ...), and a boolean `mask`, `True` where attention is
# allowed, that broadcasts to the scores' shape `(..., T_q, T_k)` (for example `(T_q, T_k)`,
# `(B, 1, T_q, T_k)` or `(B, 1, 1, T_k)`):
#
# $$S = \frac{Q K^\top}{\sqrt{d_k}}, \qquad
# \text{weights}_{ts} = \begin{cases}
#   \dfrac{[M_{ts}]\, e^{S_{ts}}}{\sum_{s'} [M_{ts'}]\, e^{S_{ts'}}} & \text{if row } t \text{ allows some key} \\[1ex]
#   0 & \text{if row } t \text{ allows none}
# \end{cases}, \qquad \text{out} = \text{weights}\; V .$$
#
# Requirements:
# - mask the **scores**, before the softmax, and keep the softmax stable for large scores;
# - a fully masked row gets weights 0 and output 0 (Section 7's convention), with no NaN and **no
#   floating-point warning** (the tests turn NumPy's warnings into errors, so an `-inf - (-inf)`
#   fails even if you fix its NaN afterwards);
# - avoid the warnings rather than silence them: the function may **not change NumPy's
#   floating-point settings** (no `np.errstate`, `np.seterr` or `np.seterrcall` inside it), and
#   the tests fail a call that tries;
# - the inputs are not modified.

# %% nbgrader={"grade": false, "grade_id": "masked_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def masked_attention(Q, K, V, mask):
    """Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v), mask broadcastable to (..., T_q, T_k).

    Returns (out (..., T_q, d_v), weights (..., T_q, T_k)); rows with no allowed key are all zero.
    """
    ### BEGIN SOLUTION
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    scores = np.where(mask, scores, -np.inf)  # blocked scores -> -inf: weight exactly 0
    row_max = scores.max(axis=-1, keepdims=True)  # (..., T_q, 1); -inf on a fully masked row
    row_max = np.where(np.isneginf(row_max), 0.0, row_max)  # nothing to subtract there: avoid -inf - (-inf)
    e = np.exp(scores - row_max)  # every exponent <= 0; blocked entries exp(-inf) = 0
    total = e.sum(axis=-1, keepdims=True)  # (..., T_q, 1): >= 1 if the row allows a key, 0 if not
    weights = e / np.where(total > 0, total, 1.0)  # a fully masked row: 0 / 1 = 0
    return weights @ V, weights  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    ### END SOLUTION


# %% [markdown]
# With your `masked_attention` in place of the helper's softmax, the two-layer stack of Section 7
# no longer spreads NaN through the left-padded batch:

# %%
def forward_with_masked_attention(X_in, mask):
    """The lesson's layer with masked_attention as its attention: (B, T, C) -> (B, T, C)."""
    Q_, K_, V_ = (split_heads(X_in @ W, h) for W in (Wq, Wk, Wv))  # each (B, h, T, hs)
    per_head_, _ = masked_attention(Q_, K_, V_, mask)  # (B, h, T, hs)
    return merge_heads(per_head_) @ Wo  # (B, T, C) @ (C, C) -> (B, T, C)


layer1 = forward_with_masked_attention(X_pad, combined_left)
layer2 = forward_with_masked_attention(layer1, combined_left)
print("NaN after two layers:", bool(np.isnan(layer2).any()))
print("fully masked rows of layer 1 are exactly 0:", bool(np.all(layer1[fully_masked[:, 0]] == 0.0)))
print("real positions of layer 1 equal the -inf layer's:", np.allclose(layer1[key_is_real_left], out_left[key_is_real_left]))

# %% nbgrader={"grade": true, "grade_id": "test_masked_attention", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
def check_masked_attention(Q, K, V, mask):
    """Visible check with a hint for the usual mistakes: the properties that define the weights."""
    inputs = [np.array(a, copy=True) for a in (Q, K, V, mask)]
    settings = {name: getattr(np, name) for name in ("errstate", "seterr", "seterrcall")}

    def refuse(*args, **kwargs):
        raise AssertionError("masked_attention changed NumPy's floating-point settings (np.errstate, np.seterr or "
                             "np.seterrcall), which this exercise forbids: avoid the warning instead of silencing "
                             "it (replace a fully masked row's -inf maximum by 0, divide a zero row sum by 1)")

    try:
        with np.errstate(divide="raise", over="raise", invalid="raise"):
            for name in settings:
                setattr(np, name, refuse)
            try:
                result = masked_attention(Q, K, V, mask)
            finally:
                for name, function in settings.items():
                    setattr(np, name, function)
    except FloatingPointError as error:
        raise AssertionError(
            f"a floating-point warning was raised ({error}). On a fully masked row the maximum is -inf and "
            "-inf - (-inf) is invalid: replace that row's maximum by 0 before subtracting, and divide a row "
            "whose sum is 0 by 1 instead (np.where)") from None
    assert all(np.array_equal(a, b) for a, b in zip((Q, K, V, mask), inputs, strict=True)), (
        "masked_attention modified its inputs: build new arrays (np.where) instead of assigning into them")
    assert isinstance(result, tuple) and len(result) == 2, "masked_attention should return a pair: (out, weights)"
    out, weights = (np.asarray(r) for r in result)
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (..., T_q, T_k)
    allowed = np.broadcast_to(mask, scores.shape)
    has_key = allowed.any(axis=-1)  # (..., T_q): rows that allow some key
    assert weights.shape == scores.shape, f"weights should be (..., T_q, T_k) = {scores.shape}, got {weights.shape}"
    out_shape = (*scores.shape[:-1], V.shape[-1])
    assert out.shape == out_shape, f"out should be (..., T_q, d_v) = {out_shape}, got {out.shape}"
    assert not np.isnan(weights).any(), (
        "nan in the weights: a fully masked row gives -inf - (-inf). The course's convention is a row of "
        "zeros: detect rows with no allowed key (mask.any(axis=-1)) and give them weight 0")
    if (~has_key).any() and np.allclose(weights[~has_key], 1.0 / scores.shape[-1]):
        raise AssertionError("fully masked rows came out uniform (the effect of a finite fill such as -1e9): "
                             "the course's convention gives them weight 0 and output 0")
    assert np.all(weights[~has_key] == 0.0), "a row with no allowed key should have all weights exactly 0"
    assert np.all(weights[~allowed] == 0.0), (
        "a blocked key got a nonzero weight: set blocked SCORES to -inf (np.where(mask, scores, -np.inf)) "
        "before the softmax; a small fill such as -10, or 0, leaves weight on blocked keys")
    if not np.allclose(weights.sum(axis=-1)[has_key], 1.0):
        raise AssertionError("rows that allow some key do not sum to 1: was the mask applied after the softmax? "
                             "Mask the scores first, then take the softmax over the allowed keys "
                             "(with very large scores, a softmax taken before masking can underflow to 0)")
    # On a row's allowed keys, the weights must be proportional to exp(score): log(weight) - score is the
    # same for every allowed key whose score is within 20 of the row's best (those weights are far from 0).
    row_best = np.where(allowed, scores, -np.inf).max(axis=-1, keepdims=True)  # (..., T_q, 1), -inf if none
    near = allowed & (scores >= row_best - 20.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0) where a weight is wrongly 0: caught below
        def spread(reference_scores):
            gap = np.log(weights) - reference_scores
            return (np.where(near, gap, -np.inf).max(axis=-1) - np.where(near, gap, np.inf).min(axis=-1))[has_key]
        proportional = np.all(spread(scores) < 1e-8)
        unscaled = np.all(spread(scores * np.sqrt(d_k)) < 1e-8)
    if not proportional:
        if unscaled:
            raise AssertionError("the weights are softmax(Q K^T) without the scale: divide the scores by sqrt(d_k)")
        raise AssertionError("on each row's allowed keys the weights should be proportional to "
                             "exp(Q K^T / sqrt(d_k)): a softmax over the last axis (the keys) of the masked scores")
    assert np.all(weights[allowed & ~near] <= 2.1e-9), (
        "a key whose score is more than 20 below the row's best should get almost no weight")
    assert np.allclose(out, weights @ V, atol=1e-10), "out should be weights @ V"


_rng = np.random.default_rng(66)
_q, _k, _v = (cache_causal[n] for n in ("Q", "K", "V"))  # the lesson's (B, h, T, hs) arrays
check_masked_attention(_q, _k, _v, causal)  # (T, T) causal mask, broadcast over (B, h)
check_masked_attention(cache_left["Q"], cache_left["K"], cache_left["V"], combined_left)  # (B, 1, T, T), fully masked rows
check_masked_attention(_rng.standard_normal((4, 8)), _rng.standard_normal((5, 8)), _rng.standard_normal((5, 3)),
                       _rng.random((4, 5)) < 0.5)  # no batch axes, T_q != T_k, a random mask
check_masked_attention(_rng.standard_normal((2, 5, 8)) * 30, _rng.standard_normal((2, 5, 8)) * 30,
                       _rng.standard_normal((2, 5, 8)), np.tril(np.ones((5, 5), dtype=bool)))  # scores in the thousands
_K_far = np.array([[0.0, 1.0], [1.0, 0.0], [2000.0, 0.0]])  # (3, 2): key 2 scores about 1400 above keys 0 and 1
check_masked_attention(np.ones((3, 2)), _K_far, _rng.standard_normal((3, 4)), np.tril(np.ones((3, 3), dtype=bool)))
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: one decoding step with a KV cache (4 points)
#
# Write `decode_step(K_cache, V_cache, q_t, k_t, v_t)`: the caches hold the keys and values of
# the $t$ positions seen so far, shapes `(..., t, d_k)` and `(..., t, d_v)` with any leading axes
# (and $t = 0$ allowed: an empty cache); `q_t`, `k_t` and `v_t` are the newest position's query,
# key and value, shapes `(..., 1, d_k)`, `(..., 1, d_k)` and `(..., 1, d_v)`. Return the triple
# `(K_cache_new, V_cache_new, out_t)`:
#
# $$K_{\text{new}} = \begin{bmatrix} K_{\text{cache}} \\ k_t \end{bmatrix}, \quad
#   V_{\text{new}} = \begin{bmatrix} V_{\text{cache}} \\ v_t \end{bmatrix}, \quad
#   \text{out}_t = \operatorname{softmax}\!\left(\frac{q_t K_{\text{new}}^\top}{\sqrt{d_k}}\right) V_{\text{new}}
#   \quad (\dots, 1, d_v) .$$
#
# Stacking is along the position axis, `-2`. The result must equal row $t$ of the full causal
# pass, and the caches you are given must not be modified (return new ones).

# %% nbgrader={"grade": false, "grade_id": "decode_step", "locked": false, "schema_version": 3, "solution": true, "task": false}
def decode_step(K_cache, V_cache, q_t, k_t, v_t):
    """Caches (..., t, d_k), (..., t, d_v); q_t, k_t (..., 1, d_k); v_t (..., 1, d_v).

    Returns (K_cache_new (..., t+1, d_k), V_cache_new (..., t+1, d_v), out_t (..., 1, d_v)).
    """
    ### BEGIN SOLUTION
    K_new = np.concatenate([K_cache, k_t], axis=-2)  # (..., t, d_k) + (..., 1, d_k) -> (..., t+1, d_k)
    V_new = np.concatenate([V_cache, v_t], axis=-2)  # (..., t+1, d_v)
    scores = q_t @ np.swapaxes(K_new, -1, -2) / np.sqrt(q_t.shape[-1])  # (..., 1, d_k) @ (..., d_k, t+1) -> (..., 1, t+1)
    weights = softmax(scores)  # the newest query may see every cached key: no mask
    return K_new, V_new, weights @ V_new  # (..., 1, t+1) @ (..., t+1, d_v) -> (..., 1, d_v)
    ### END SOLUTION


# %% [markdown]
# Run your `decode_step` over the lesson's per-head queries, keys and values, starting from an
# empty cache, and compare with the causal pass of Section 4:

# %%
Q4, K4, V4 = (cache_causal[n] for n in ("Q", "K", "V"))  # (B, h, T, hs), from the causal layer
K_c, V_c = np.zeros((B, h, 0, hs)), np.zeros((B, h, 0, hs))  # empty caches: t = 0
steps_out = []
for t in range(T):
    K_c, V_c, o = decode_step(K_c, V_c, Q4[:, :, t:t + 1], K4[:, :, t:t + 1], V4[:, :, t:t + 1])
    steps_out.append(o)  # (B, h, 1, hs)
decoded = np.concatenate(steps_out, axis=2)  # (B, h, T, hs)
print("cache after", T, "steps:", K_c.shape, " decoded:", decoded.shape)
print("equals the causal pass's per-head output, to 1e-12:",
      np.allclose(decoded, cache_causal["per_head"], rtol=0, atol=1e-12))

# %% nbgrader={"grade": true, "grade_id": "test_decode_step", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
def check_decode_step(Q, K, V, expected=None):
    """Decode Q, K, V (..., T, d) one position at a time from an empty cache and check every step.

    expected: the outputs (..., T, d_v) worked out by hand for these inputs, or None to check only
    the caches and shapes.
    """
    *lead, T_, d_k = Q.shape
    d_v = V.shape[-1]
    K_cache, V_cache = np.zeros((*lead, 0, d_k)), np.zeros((*lead, 0, d_v))
    for t in range(T_):
        q_t, k_t, v_t = Q[..., t:t + 1, :], K[..., t:t + 1, :], V[..., t:t + 1, :]
        before = [K_cache.copy(), V_cache.copy()]
        try:
            with np.errstate(divide="raise", over="raise", invalid="raise"):
                result = decode_step(K_cache, V_cache, q_t, k_t, v_t)
        except (ValueError, FloatingPointError) as error:
            if t == 0:
                raise AssertionError(f"decode_step failed on an empty cache ({type(error).__name__}: {error}): "
                                     "append k_t and v_t to the caches BEFORE attending, so the newest query "
                                     "has at least itself to look at") from None
            raise AssertionError(f"step {t}: {type(error).__name__} ({error}). With large scores np.exp "
                                 "overflows: subtract the row's maximum score before exponentiating") from None
        assert isinstance(result, tuple) and len(result) == 3, "return the triple (K_cache_new, V_cache_new, out_t)"
        K_new, V_new, out_t = (np.asarray(r) for r in result)
        assert np.array_equal(K_cache, before[0]) and np.array_equal(V_cache, before[1]), (
            "decode_step modified the caches it was given: return new arrays (np.concatenate)")
        assert K_new.shape == (*lead, t + 1, d_k) and V_new.shape == (*lead, t + 1, d_v), (
            f"after step {t} the caches should be {(*lead, t + 1, d_k)} and {(*lead, t + 1, d_v)}, got "
            f"{K_new.shape} and {V_new.shape}: concatenate along the position axis, -2")
        assert np.array_equal(K_new, K[..., :t + 1, :]) and np.array_equal(V_new, V[..., :t + 1, :]), (
            "the new caches should be the old ones with k_t and v_t appended at the end (axis -2)")
        assert out_t.shape == (*lead, 1, d_v), f"out_t should be (..., 1, d_v) = {(*lead, 1, d_v)}, got {out_t.shape}"
        if expected is not None and not np.allclose(out_t, expected[..., t:t + 1, :], atol=1e-10):
            raise AssertionError(
                f"step {t}: out_t should be {np.round(expected[..., t, :], 4).tolist()}, got "
                f"{np.round(out_t[..., 0, :], 4).tolist()}. out_t = softmax(q_t K_new^T / sqrt(d_k)) V_new, with "
                "k_t and v_t appended first (the newest query sees itself) and no mask")
        K_cache, V_cache = K_new, V_new


# A zero query scores every key 0, so step t averages the t + 1 values seen so far, equally.
_rng = np.random.default_rng(606)
_V = _rng.standard_normal((2, 5, 3))  # (B, T, d_v)
check_decode_step(np.zeros((2, 5, 8)), _rng.standard_normal((2, 5, 8)), _V,
                  expected=np.cumsum(_V, axis=-2) / np.arange(1, 6)[:, None])  # running means, (B, T, d_v)
# Two positions, d_k = 8. Step 0 sees only itself: v_0. At step 1, q_1 . k_1 - q_1 . k_0 = sqrt(8) ln 3,
# so the scaled scores differ by ln 3 and the weights are 1/4 and 3/4 (unscaled, 1 : 3^sqrt(8)).
_k1 = np.zeros(8)
_k1[0] = np.sqrt(8) * np.log(3)
check_decode_step(np.array([[0.0] * 8, [1.0] + [0.0] * 7]), np.array([[0.0] * 8, _k1]),
                  np.array([[1.0, 0.0], [0.0, 1.0]]), expected=np.array([[1.0, 0.0], [0.25, 0.75]]))
# Scaled scores of 800 and 1600: np.exp(1600) overflows unless the row's maximum is subtracted; the
# weight on key 1 is 1 - e^-800, which is 1 in float64.
check_decode_step(np.array([[0.0] * 8, [800 * np.sqrt(8)] + [0.0] * 7]),
                  np.array([[1.0] + [0.0] * 7, [2.0] + [0.0] * 7]),
                  np.array([[1.0, 0.0], [0.0, 1.0]]), expected=np.array([[1.0, 0.0], [0.0, 1.0]]))
check_decode_step(cache_causal["Q"], cache_causal["K"], cache_causal["V"])  # the lesson's (B, h, T, hs): caches
print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# **The causal mask.** $M_{ts} = [s \le t]$, a `(T, T)` boolean table, True on and below the
# diagonal. Applied to the scores before the softmax with `np.where(mask, scores, -np.inf)`, it
# gives weights that are exactly 0 above the diagonal while every row still sums to 1; the mask
# broadcasts over batch and heads, so every head of `(B, h, T, T)` is lower-triangular.
#
# **The fill value.** `np.exp` underflows to 0 below about $-17$, $-104$ and $-745$ in float16,
# float32 and float64. A fill of $-10$ leaves a visible weight on a blocked key; on a row whose
# best allowed score is 1, fills from $-10^4$ down gave the same weights as $-\infty$. `-1e9` is not
# finite in float16, and additive masks overflow: `finfo(float32).min` twice, or a float16 score
# of $-16$ plus `finfo(float16).min`, is $-\infty$. The course combines boolean masks with `&` and
# applies them once, by replacement.
#
# **After the softmax.** Zeroing the weights after the softmax leaves rows that sum to less than
# 1 and lets the future leak into the past through the denominator: the influence table's upper
# triangle stays nonzero. Renormalising equals masking before the softmax, to $10^{-12}$ on the
# lesson's scores, only while no allowed exponential underflows: with a blocked score about 100
# (float32) or 740 (float64) above the allowed ones it is wrong, and a little further it is NaN.
#
# **Leakage.** With the mask on the scores, the influence of every future token on every output
# is exactly 0.
#
# **Padding.** A key padding mask `(B, 1, 1, T)` and the causal mask `(1, 1, T, T)` combine to
# `(B, 1, T, T)` and broadcast against `(B, h, T, T)`; outputs at real positions do not depend on
# the filler, bit for bit. With left padding, filler queries have no allowed key.
#
# **The fully masked row.** With $-\infty$ it is NaN, and through $0 \times \text{NaN}$ a second
# layer spreads the NaN to every position. A finite fill makes the row uniform (it then reads the
# blocked values); the course's convention, zero weights and zero output, depends on nothing the
# mask blocks and never produces NaN.
#
# **The KV cache.** Because a causal layer's earlier rows never change, a decoder can keep the
# keys and values and compute one new row per token. It reproduced the full causal pass to
# $10^{-12}$, and the multiply-adds counted during the run matched the formulas
# $B(4LC^2 + 2L^2C)$ per step for recomputing and $B(4C^2 + 2LC)$ with the cache.
#
# **Next:** Lesson 7 computes the gradients of attention by hand, the backward pass that training
# needs. The masked multi-head layer is the attention half of a GPT block; Lesson 11, "The
# transformer block", builds the rest of the block around it.
