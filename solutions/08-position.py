# ---
# jupyter:
#   jupytext:
#     formats: 08-position//ipynb,py:percent
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
# # Lesson 8: Order from nowhere: sinusoidal, learned and rotary positions, seen in the scores
#
# "The dog bit the man" and "the man bit the dog" hold the same five tokens. Attention on its
# own, without a mask, cannot tell them apart: every query is compared with every key by a
# dot product, and nothing in $\text{softmax}(QK^\top/\sqrt{d})\,V$ knows which row of $X$ came
# first. Shuffle the tokens and the layer returns the same outputs, shuffled the same way.
# Attention sees its input as a **set**.
#
# A transformer gets its sense of order from somewhere else: a **positional encoding**. This
# lesson takes the three that matter most and looks at each one where it acts, in the `(T, T)`
# score matrix:
#
# - **sinusoidal** encodings (the original Transformer): a fixed pattern of sines and cosines
#   *added* to the token vectors;
# - **learned** absolute embeddings (GPT-2): a trained table with one vector per position, also added;
# - **rotary** embeddings, RoPE (many recent language models): no addition at all, but a
#   position-dependent *rotation* of the queries and keys.
#
# **What you'll do**
# - prove that permuting the input permutes the output, and why "which token came first?" has no answer;
# - build the sinusoidal table, draw it, and show that $PE(t) \cdot PE(t+k)$ depends only on $k$;
# - train a learned position table and find the rows that training never touched;
# - rotate queries and keys with RoPE and prove that their scores depend only on $m - n$;
# - draw the score matrix of the same tokens under no encoding, sinusoidal and RoPE, side by side;
# - implement `sinusoidal_encoding`, `apply_rope` and `rope_scores` (graded).
#
# **What you'll learn**
# - why attention without positions is permutation-equivariant, in one line of algebra;
# - what adding a position vector does to the scores, term by term, and why the result still
#   depends on absolute positions;
# - why a learned table sets a hard length limit, and which of its rows are still random;
# - why RoPE rotates $q$ and $k$ but never $v$, and what the two pairing conventions are.
#
# **What you'll need**
# - scaled dot-product attention (Lessons 1 and 2) and, for one aside, the causal mask (Lesson 6);
# - sines, cosines and the $2 \times 2$ rotation matrix; NumPy broadcasting and fancy indexing.
#
# Three graded exercises close the lesson. Their visible checks run as you work; hidden tests
# with fresh inputs run when your notebook is graded.

# %%
import matplotlib.pyplot as plt
import numpy as np

# %% [markdown]
# So that this notebook runs on its own, the cell below defines its own stable softmax (Lesson 1)
# and scaled dot-product attention (Lesson 2), plus a heatmap helper used for every `(T, T)` matrix.
# `self_attention` takes the queries, keys and values directly, because the positional schemes
# act at different places: sinusoidal and learned encodings change $X$ before the projections,
# RoPE changes $Q$ and $K$ after them.

# %%
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))  # each slice's max becomes 0: no overflow
    return e / e.sum(axis=axis, keepdims=True)


def self_attention(Q, K, V, mask=None):
    """Scaled dot-product attention. Q, K: (T, d_k); V: (T, d_v); mask: (T, T) booleans, True = may attend.

    Returns (out (T, d_v), weights (T, T), scores (T, T)).
    """
    scores = Q @ K.T / np.sqrt(Q.shape[-1])  # (T, d_k) @ (d_k, T) -> (T, T)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # masked keys get weight exp(-inf) = 0
    weights = softmax(scores, axis=-1)  # (T, T), each row sums to 1
    return weights @ V, weights, scores  # (T, T) @ (T, d_v) -> (T, d_v)


def draw_matrix(ax, matrix, title, *, cbar_label="score", cmap="viridis", vmin=None, vmax=None,
                xlabel="key position", ylabel="query position", xticklabels=None, yticklabels=None,
                colorbar=True):
    """One (T_q, T_k) matrix as a labelled heatmap; values printed when both sides are <= 8."""
    n_rows, n_cols = matrix.shape
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_xticks(range(n_cols), labels=xticklabels)
    ax.set_yticks(range(n_rows), labels=yticklabels)
    if max(n_rows, n_cols) <= 8:
        for i in range(n_rows):
            for j in range(n_cols):
                text = f"{matrix[i, j]:.2f}"
                if float(text) == 0:
                    text = "0.00"  # print "0.00", not "-0.00"
                r, g, b, _ = image.cmap(image.norm(matrix[i, j]))
                ax.text(j, i, text, ha="center", va="center", fontsize=7,
                        color="black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.8, label=cbar_label)
    return image


# %% [markdown]
# ## 1. Attention sees a set
#
# Take $T$ token vectors as the rows of $X$, shape `(T, d)`, and reorder them with a permutation
# matrix $P$ (`(T, T)`, one 1 in each row and column): the rows of $PX$ are the rows of $X$ in a
# new order. Follow $PX$ through the layer:
#
# $$Q' = PXW_q = PQ, \qquad K' = PK, \qquad V' = PV,$$
#
# $$S' = \frac{Q' K'^\top}{\sqrt{d}} = \frac{P Q K^\top P^\top}{\sqrt{d}} = P S P^\top .$$
#
# $PSP^\top$ is $S$ with its rows *and* its columns reordered. A row-wise softmax does not care in
# which order a row's entries come, so $A' = \text{softmax}(S') = P A P^\top$, and since
# $P^\top P = I$,
#
# $$\text{out}' = A' V' = P A P^\top P V = P\,(AV) = P\,\text{out} .$$
#
# The outputs are the same vectors, in the shuffled order: attention is
# **permutation-equivariant**. Check it on six random tokens of width $d = 16$, drawn from
# `np.random.default_rng(0)`, with projections scaled by $1/\sqrt{d}$ so that $q$ and $k$ have
# entries of variance about 1.

# %%
rng = np.random.default_rng(0)
T, d = 6, 16
X = rng.standard_normal((T, d))  # (T, d): six token vectors
Wq, Wk, Wv = (rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3))  # (d, d) each

perm = rng.permutation(T)  # a shuffle of the positions
out, weights, scores = self_attention(X @ Wq, X @ Wk, X @ Wv)  # (T, d) @ (d, d) -> (T, d)
X_shuffled = X[perm]  # (T, d): row t of X_shuffled is row perm[t] of X
out_s, weights_s, scores_s = self_attention(X_shuffled @ Wq, X_shuffled @ Wk, X_shuffled @ Wv)

print("permutation           :", perm)
print("scores'  == P S P^T   :", np.allclose(scores_s, scores[perm][:, perm]))
print("weights' == P A P^T   :", np.allclose(weights_s, weights[perm][:, perm]))
print("out'     == P out     :", np.allclose(out_s, out[perm]))
print("largest |out' - P out| below 1e-12:", bool(np.abs(out_s - out[perm]).max() < 1e-12))

# %% [markdown]
# The two outputs agree to rounding error: every entry within $10^{-12}$. The picture below labels
# every row and column with the token it belongs to: the shuffled score matrix holds the very
# same numbers, moved.

# %%
token_names = [f"x{t}" for t in range(T)]
shuffled_names = [token_names[p] for p in perm]
vmin, vmax = scores.min(), scores.max()
fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), constrained_layout=True)
draw_matrix(axes[0], scores, "Scores of X", vmin=vmin, vmax=vmax, xlabel="key (token)",
            ylabel="query (token)", xticklabels=token_names, yticklabels=token_names)
draw_matrix(axes[1], scores_s, "Scores of the shuffled X", vmin=vmin, vmax=vmax, xlabel="key (token)",
            ylabel="query (token)", xticklabels=shuffled_names, yticklabels=shuffled_names)
fig.suptitle(f"Shuffling the tokens only moves the scores (T={T}, d={d}, permutation {perm.tolist()})")
plt.show()

# %% [markdown]
# *Figure: left, the `(T, T)` scores of six tokens; right, the scores after shuffling them, with
# each row and column labelled by its token. Find any pair, say query x0 and key x3: the number
# is the same in both panels. No score depends on where a token sits, only on which token it is.*
#
# ### Which token came first?
#
# Now ask the layer a question about order. Take four token vectors A, B, C, D and two sequences
# that differ only in their first two positions: `A B C D` and `B A C D`. In the first, A came
# before B; in the second, after. Compare the output the layer computes **for token A** in each.

# %%
vocab = dict(zip("ABCD", rng.standard_normal((4, d)), strict=True))  # four token vectors, (d,) each
seq_1, seq_2 = "ABCD", "BACD"
X_1 = np.stack([vocab[c] for c in seq_1])  # (4, d)
X_2 = np.stack([vocab[c] for c in seq_2])  # (4, d)
out_1 = self_attention(X_1 @ Wq, X_1 @ Wk, X_1 @ Wv)[0]  # (4, d)
out_2 = self_attention(X_2 @ Wq, X_2 @ Wk, X_2 @ Wv)[0]  # (4, d)

for token in "AB":
    i_1, i_2 = seq_1.index(token), seq_2.index(token)
    print(f"output for {token}: position {i_1} in {seq_1}, position {i_2} in {seq_2}, "
          f"same vector: {np.allclose(out_1[i_1], out_2[i_2])}")
reorder = [seq_1.index(c) for c in seq_2]  # where each token of seq_2 sits in seq_1
print("the outputs of", seq_2, "are the outputs of", seq_1, "reordered:", np.allclose(out_2, out_1[reorder]))

# %% [markdown]
# Token A's output vector is the same whether A came first or second. Whatever a later layer
# computes from that vector, it computes the same thing for both sequences, yet the true answer
# to "did A come before B?" is *yes* for one and *no* for the other. So A's vector cannot carry
# the answer, and neither can B's, C's or D's: both sequences produce the same four vectors,
# only listed in a different order. Without positions, the layer's outputs are a function of
# the *set* of tokens.
#
# **An aside on masks.** The causal mask of Lesson 6 does break this symmetry: whether query $i$
# may see key $j$ depends on where the two sit, so shuffling the tokens changes which keys each
# token sees.

# %%
causal = np.tril(np.ones((T, T), dtype=bool))  # (T, T): query i sees keys 0..i
out_masked = self_attention(X @ Wq, X @ Wk, X @ Wv, mask=causal)[0]
out_masked_s = self_attention(X_shuffled @ Wq, X_shuffled @ Wk, X_shuffled @ Wv, mask=causal)[0]
print("with a causal mask, out' == P out:", np.allclose(out_masked_s, out_masked[perm]))

# %% [markdown]
# This lesson works without a mask, where attention on its own has no notion of order at all.
# The three schemes below give every position its own signal, mask or no mask.

# %% [markdown]
# ## 2. Sinusoidal encodings: a fixed pattern, added
#
# The original Transformer adds to token $t$ a vector $PE(t)$ of the model's width $d$, built
# from sines and cosines. Features come in pairs $(2i, 2i+1)$, $i = 0, \dots, d/2 - 1$; pair $i$
# turns at the frequency $\omega_i = 10000^{-2i/d}$:
#
# $$PE(t, 2i) = \sin\!\left(\frac{t}{10000^{2i/d}}\right), \qquad
#   PE(t, 2i+1) = \cos\!\left(\frac{t}{10000^{2i/d}}\right).$$
#
# Pair 0 has $\omega_0 = 1$ and repeats every $2\pi \approx 6.28$ positions; the last pair turns
# so slowly that it repeats only every $2\pi \cdot 10000^{(d-2)/d}$ positions. The table is
# computed, not learned, and the formula gives a vector for every $t$. The loop below follows
# the formula one entry at a time (Exercise 1 asks for it without loops); position 0 is
# $[\sin 0, \cos 0, \dots] = [0, 1, 0, 1, \dots]$.

# %%
def sinusoidal_loop(T, d):
    """PE of shape (T, d), one entry at a time, straight from the formula."""
    pe = np.zeros((T, d))
    for t in range(T):
        for i in range(d // 2):
            angle = t / 10000 ** (2 * i / d)
            pe[t, 2 * i] = np.sin(angle)
            pe[t, 2 * i + 1] = np.cos(angle)
    return pe


pe_table = sinusoidal_loop(64, 32)  # (T, d) = (64, 32)
print("pe_table:", pe_table.shape, "(T, d)")
print("PE(0)[:8]:", pe_table[0, :8])
wavelengths = 2 * np.pi * 10000 ** (np.arange(0, 32, 2) / 32)  # 2 pi / omega_i, one per pair
print(f"wavelength of pair 0: {wavelengths[0]:.2f} positions; of pair 15: {wavelengths[-1]:.0f} positions")

# %%
fig, ax = plt.subplots(figsize=(8, 6), constrained_layout=True)
image = ax.imshow(pe_table, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
ax.set_title("Sinusoidal position encodings PE(t, j), T = 64, d = 32")
ax.set_xlabel("feature j (even: sin, odd: cos)")
ax.set_ylabel("position t")
ax.set_xticks(range(0, 32, 2))
ax.set_yticks(range(0, 64, 4))
fig.colorbar(image, ax=ax, label="encoding value")
plt.show()

# %% [markdown]
# *Figure: one row per position, one column per feature. The leftmost pairs flicker from row to
# row (high frequency); moving right, each pair turns more slowly, and the rightmost columns are
# almost constant over these 64 positions (sin near 0, cos near 1). Every row is a different
# pattern, so every position gets its own vector.*
#
# ### The dot product of two encodings depends only on their distance
#
# Pair $i$ of $PE(t)$ is the point $(\sin t\omega_i, \cos t\omega_i)$ on the unit circle.
# Moving from position $t$ to $t + k$ turns it by the angle $k\omega_i$, and the dot product
# of two points on the unit circle is the cosine of the angle between them:
#
# $$PE(t) \cdot PE(t+k) = \sum_{i=0}^{d/2-1} \Big[\sin(t\omega_i)\sin((t+k)\omega_i) + \cos(t\omega_i)\cos((t+k)\omega_i)\Big] = \sum_{i=0}^{d/2-1} \cos(k\,\omega_i) .$$
#
# $t$ has dropped out. Check it on 220 starting positions $t$ and every offset $k$ from $-40$ to 40:

# %%
pe_long = sinusoidal_loop(300, 32)  # (300, 32)
offsets = np.arange(-40, 41)  # (81,)
starts = np.arange(40, 300 - 40)  # (220,) every t with t + k inside the table
dots = np.stack([(pe_long[starts] * pe_long[starts + k]).sum(axis=-1) for k in offsets])  # (81, 220)
omega = 10000.0 ** (-np.arange(0, 32, 2) / 32)  # (16,)
predicted = np.cos(offsets[:, None] * omega[None, :]).sum(axis=-1)  # (81, 16) -> (81,)

print(f"{len(offsets)} offsets x {len(starts)} starting positions")
print("for each k, all t give the same dot product (spread < 1e-9):",
      bool((dots.max(axis=1) - dots.min(axis=1)).max() < 1e-9))
print("and it equals sum_i cos(k omega_i):", np.allclose(dots, predicted[:, None]))
print("the same for k and -k:", np.allclose(predicted, predicted[::-1]))

# %%
fig, ax = plt.subplots(figsize=(8, 4.2), constrained_layout=True)
_ = ax.plot(np.repeat(offsets, len(starts)), dots.ravel(), ".", color="tab:blue", markersize=6, alpha=0.3,
            label=f"PE(t)·PE(t+k) for all {len(starts)} values of t")
_ = ax.plot(offsets, predicted, "-", color="black", linewidth=1, label=r"$\sum_i \cos(k\,\omega_i)$")
ax.set_title("Sinusoidal encodings: the dot product depends only on the offset k (d = 32)")
ax.set_xlabel("offset k")
ax.set_ylabel("dot product")
ax.legend()
plt.show()

# %% [markdown]
# *Figure: for each offset $k$, the 220 dot products $PE(t)\cdot PE(t+k)$ (one per starting
# position $t$) land on a single point, on the black curve $\sum_i \cos(k\omega_i)$. The curve
# peaks at $k = 0$, where the dot product is $d/2 = 16$, and is symmetric: on their own, the
# encodings cannot say whether the other token is $k$ positions before or after.*
#
# The same circle picture says more: the shift by $k$ is a **rotation** of every pair, by a
# $2 \times 2$ matrix that depends on $k$ but not on $t$. Stacked into a block-diagonal
# `(d, d)` matrix $M_k$, it gives $PE(t + k) = M_k\, PE(t)$ for every $t$: a fixed linear map,
# which is how the Transformer paper motivated this choice. Keep the rotation in mind; it comes
# back in section 4.

# %%
def shift_matrix(k, omega):
    """M_k of shape (d, d), d = 2 len(omega): every pair (sin a, cos a) -> (sin(a + k w_i), cos(a + k w_i))."""
    d = 2 * len(omega)
    M = np.zeros((d, d))
    for i, w in enumerate(omega):
        c, s = np.cos(k * w), np.sin(k * w)
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[c, s], [-s, c]]  # sin(a+b) = sin a cos b + cos a sin b, ...
    return M


for k in [1, 5, 17]:
    shifted = pe_long[:-k] @ shift_matrix(k, omega).T  # (300 - k, d) @ (d, d): M_k PE(t) for every t
    print(f"k = {k:2d}: M_k PE(t) == PE(t + k) for all t:", np.allclose(shifted, pe_long[k:]))

# %% [markdown]
# ### What adding them does to the scores
#
# The encoding is added to the token vectors before the projections: row $t$ becomes
# $x_t + p_t$ with $p_t = PE(t)$. The score of query $m$ and key $n$ then splits into four terms:
#
# $$S_{mn} \sqrt{d} = (x_m + p_m) W_q W_k^\top (x_n + p_n)^\top
#   = \underbrace{x_m W x_n^\top}_{\text{content}}
#   + \underbrace{x_m W p_n^\top + p_m W x_n^\top}_{\text{content} \times \text{position}}
#   + \underbrace{p_m W p_n^\top}_{\text{position}} , \qquad W = W_q W_k^\top .$$
#
# The first term is the score without positions. The others are new, and none of them is
# guaranteed to depend only on $m - n$: even the last, $p_m W p_n^\top$, does only for special
# $W$, because $W$ sits between the two encodings (the offset property above was for the bare
# dot product $p_m \cdot p_n$). Here are eight tokens of width $d = 16$, before and after
# adding $PE$, with fresh projections from `np.random.default_rng(1)`.

# %%
rng = np.random.default_rng(1)
T8, d8 = 8, 16
X8 = rng.standard_normal((T8, d8))  # (T, d): eight token vectors
Wq8, Wk8 = (rng.standard_normal((d8, d8)) / np.sqrt(d8) for _ in range(2))  # (d, d) each
pe_8 = sinusoidal_loop(T8, d8)  # (T, d)


def scores_of(Xin, Wq, Wk):
    """Scaled scores (T, T) of the rows of Xin (T, d)."""
    return (Xin @ Wq) @ (Xin @ Wk).T / np.sqrt(Wq.shape[1])  # (T, d) @ (d, T) -> (T, T)


def is_toeplitz(S):
    """True if every diagonal of the square matrix S is constant: S[m, n] depends only on m - n."""
    return all(np.allclose(np.diagonal(S, offset), np.diagonal(S, offset)[0]) for offset in range(1 - len(S), len(S)))


S_content = scores_of(X8, Wq8, Wk8)  # (T, T)
S_sinusoidal = scores_of(X8 + pe_8, Wq8, Wk8)  # (T, T)
position_term = pe_8 @ Wq8 @ Wk8.T @ pe_8.T / np.sqrt(d8)  # (T, d) @ (d, d) @ (d, d) @ (d, T) -> (T, T)

print("bare p_m . p_n depends only on m - n    :", is_toeplitz(pe_8 @ pe_8.T))
print("position term p_m W p_n^T, the same?    :", is_toeplitz(position_term))
print("scores changed by adding PE             :", not np.allclose(S_sinusoidal, S_content))

vmin, vmax = min(S_content.min(), S_sinusoidal.min()), max(S_content.max(), S_sinusoidal.max())
fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), constrained_layout=True)
draw_matrix(axes[0], S_content, "Tokens only: X", vmin=vmin, vmax=vmax)
draw_matrix(axes[1], S_sinusoidal, "Tokens + sinusoidal encodings: X + PE", vmin=vmin, vmax=vmax)
fig.suptitle("Scaled scores of eight tokens before and after adding PE (d = 16, shared colour scale)")
plt.show()

# %% [markdown]
# *Figure: the same eight tokens and the same projections, without (left) and with (right) the
# sinusoidal encodings added. Every entry moves: the content scores are still in there, mixed
# with the three new terms, which depend on where each token sits (section 5 moves the whole
# sequence along and watches these scores change).*

# %% [markdown]
# ## 3. Learned absolute embeddings: a table, and its limit
#
# GPT-2 replaces the formula with a **table**: a parameter matrix $P_{\text{table}}$ of shape
# `(T_max, d)`, one row per position, initialised at random and trained with the rest of the
# model. Token $t$ gets $x_t + P_{\text{table}}[t]$. The model may learn any pattern it likes,
# but a row only learns when a training sequence reaches its position: the gradient of the loss
# with respect to the table is zero in every row that was not indexed.
#
# Watch it happen. A table with $T_{\max} = 32$ rows of width $d = 16$, initialised at scale
# 0.02, is trained together with a linear readout `(d, T_max)` on a small task: from the row
# $P_{\text{table}}[t]$ alone, predict $t$ (softmax cross-entropy over the 32 positions). The
# training sequences are only $T_{\text{train}} = 16$ long, so only positions 0 to 15 are ever
# looked up. Plain gradient descent, 200 steps, `np.random.default_rng(8)`:

# %%
rng = np.random.default_rng(8)
T_max, T_train, d_table = 32, 16, 16
table_init = rng.standard_normal((T_max, d_table)) * 0.02  # (T_max, d): the position table
readout_init = rng.standard_normal((d_table, T_max)) * 0.02  # (d, T_max): logits over positions
table, readout = table_init.copy(), readout_init.copy()
seen = np.arange(T_train)  # the positions a training sequence reaches
learning_rate = 2.0

for step in range(200):
    logits = table[seen] @ readout  # (T_train, d) @ (d, T_max) -> (T_train, T_max)
    probs = softmax(logits, axis=-1)
    loss = -np.log(probs[seen, seen]).mean()  # row t's target is position t
    if step == 0:
        first_loss = loss
    grad_logits = probs.copy()
    grad_logits[seen, seen] -= 1.0
    grad_logits /= T_train  # (T_train, T_max): d loss / d logits
    grad_readout = table[seen].T @ grad_logits  # (d, T_train) @ (T_train, T_max) -> (d, T_max)
    grad_table = np.zeros_like(table)  # (T_max, d)
    np.add.at(grad_table, seen, grad_logits @ readout.T)  # scatter: only the looked-up rows get a gradient
    table -= learning_rate * grad_table
    readout -= learning_rate * grad_readout

predicted = (table @ readout).argmax(axis=-1)  # (T_max,): the readout's guess for every row
print(f"loss: {first_loss:.3f} at step 0 -> {loss:.4f} after 200 steps")
print("rows 0-15 moved during training        :", bool((table[:T_train] != table_init[:T_train]).any(axis=1).all()))
print("rows 16-31 exactly as initialised      :", np.array_equal(table[T_train:], table_init[T_train:]))
print("position read back right, rows 0-15    :", f"{(predicted[:T_train] == seen).mean():.0%}")
print("position read back right, rows 16-31   :", f"{(predicted[T_train:] == np.arange(T_train, T_max)).mean():.0%}")
print("guesses for rows 16-31                 :", predicted[T_train:])
print("every guess for rows 16-31 is below 16 :", bool((predicted[T_train:] < T_train).all()))

# %%
change = np.linalg.norm(table - table_init, axis=1)  # (T_max,): how far each row moved
fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), constrained_layout=True, width_ratios=[1, 1.3])
image = axes[0].imshow(table, cmap="RdBu_r", vmin=-np.abs(table).max(), vmax=np.abs(table).max(),
                       aspect="auto", interpolation="nearest")
axes[0].axhline(T_train - 0.5, color="black", linewidth=1, linestyle="--")
axes[0].set_title("The trained table (dashed: training length)")
axes[0].set_xlabel("feature")
axes[0].set_ylabel("position")
axes[0].set_yticks(range(0, T_max, 2))
fig.colorbar(image, ax=axes[0], label="embedding value")
_ = axes[1].bar(seen, change[:T_train], color="tab:blue", label=f"rows 0-{T_train - 1}: looked up in training")
_ = axes[1].plot(np.arange(T_train, T_max), change[T_train:], "o", color="tab:red",
                 label=f"rows {T_train}-{T_max - 1}: never looked up")
axes[1].axvline(T_train - 0.5, color="black", linewidth=1, linestyle="--")
axes[1].legend(loc="center right")
axes[1].set_title("How far each row moved during training")
axes[1].set_xlabel("position")
axes[1].set_ylabel("|trained row - initial row|")
axes[1].set_xticks(range(0, T_max, 2))
fig.suptitle(f"A learned position table (T_max = {T_max}) trained on sequences of length {T_train}")
plt.show()

# %% [markdown]
# *Figure: left, the table after training: rows 0 to 15 carry large learned values, rows 16 to 31
# are still the faint noise of the initialisation (it is there, at scale 0.02). Right, how far
# each row moved: every row beyond the dashed line (red dots) moved by exactly zero.*
#
# So a model trained on sequences of 16 tokens that meets a 20th token looks up row 19, which
# holds a random vector no part of the model was trained with. Here the readout turned every one
# of those rows into a guess among the positions it was trained on, and got none of them right.
#
# Beyond the table there is not even a random row: position $T_{\max}$ has no row at all.

# %%
positions_too_long = np.arange(T_max + 4)  # a sequence of 36 tokens
try:
    table[positions_too_long]
except IndexError as error:
    print("IndexError:", error)
print("position -1 silently reads the last row:", np.array_equal(table[-1], table[T_max - 1]))

# %% [markdown]
# That is the length limit of learned absolute embeddings: a model with a table of $T_{\max}$
# rows cannot take sequences longer than $T_{\max}$ (GPT-2's table has 1024 rows), and only the
# rows that training sequences reached hold trained vectors. Going longer means a bigger table
# and more training. Negative indices deserve a warning of their own: NumPy reads them from the
# end of the table, without an error.

# %% [markdown]
# ## 4. Rotary embeddings (RoPE): rotate the queries and keys
#
# Sinusoidal and learned encodings are *added* to $x$, and section 2 showed that the scores then
# depend on absolute positions through three mixed terms. RoPE asks for something sharper: a
# score that depends on the content of $q$ and $k$ and on the **offset** $m - n$ between them,
# and on nothing else. It gets it by rotating.
#
# Split the $d$ features of a query or key into $d/2$ pairs. This lesson uses **interleaved**
# pairs $(2i, 2i+1)$, as in the RoFormer paper that introduced RoPE. At position $m$, pair $i$ is
# turned by the angle $m\theta_i$, with the same frequencies as the sinusoidal table:
#
# $$\theta_i = \text{base}^{-2i/d}, \quad i = 0, \dots, d/2 - 1, \qquad \text{base} = 10000 ,$$
#
# $$\begin{pmatrix} x'_{2i} \\ x'_{2i+1} \end{pmatrix} =
#   \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i \\ \sin m\theta_i & \cos m\theta_i \end{pmatrix}
#   \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix} .$$
#
# All $d/2$ rotations together form a block-diagonal `(d, d)` matrix $R_m$. Rotations compose by
# adding angles, and the transpose of a rotation turns backwards, so $R_m^\top R_n = R_{n-m}$.
# That is the whole trick:
#
# $$(R_m q) \cdot (R_n k) = q^\top R_m^\top R_n\, k = q^\top R_{n-m}\, k .$$
#
# The functions below build $R_m$ explicitly, one `(d, d)` matrix per position, and rotate a
# `(T, d)` array row by row. (Exercise 2 asks for the same rotation without any `(d, d)` matrix.)
# The `pairing` argument is for section 4.4.

# %%
def rope_frequencies(d, base=10000.0):
    """theta_i = base^(-2i/d) for the d/2 pairs: shape (d/2,)."""
    return base ** (-np.arange(0, d, 2) / d)


def rope_matrices(positions, d, base=10000.0, pairing="interleaved"):
    """The rotation R_m of every position m: shape (T, d, d), one 2 x 2 rotation per feature pair."""
    angles = np.asarray(positions)[:, None] * rope_frequencies(d, base)[None, :]  # (T, 1) * (1, d/2) -> (T, d/2)
    cos, sin = np.cos(angles), np.sin(angles)
    if pairing == "interleaved":
        first = np.arange(0, d, 2)  # pair i is features (2i, 2i + 1)
        second = first + 1
    else:  # "half-split"
        first = np.arange(d // 2)  # pair i is features (i, i + d/2)
        second = first + d // 2
    R = np.zeros((len(angles), d, d))
    R[:, first, first], R[:, first, second] = cos, -sin
    R[:, second, first], R[:, second, second] = sin, cos
    return R


def rope_rotate(x, positions, base=10000.0, pairing="interleaved"):
    """Rotate row t of x (T, d) by R_{positions[t]}; returns (T, d)."""
    R = rope_matrices(positions, x.shape[-1], base, pairing)  # (T, d, d)
    return np.einsum("tij,tj->ti", R, x)  # row t: (d, d) @ (d,) -> (d,), for every t


R = rope_matrices(np.arange(-50, 51), 16)  # (101, 16, 16): R_m for m = -50 .. 50
print("R_m is a rotation (R_m^T R_m = I) for every m:", np.allclose(R.transpose(0, 2, 1) @ R, np.eye(16)))
pairs = [(m, n) for m in range(-20, 21, 4) for n in range(-20, 21, 5)]
print(f"R_m^T R_n == R_(n-m) for all {len(pairs)} pairs (m, n):",
      all(np.allclose(R[m + 50].T @ R[n + 50], R[n - m + 50]) for m, n in pairs))

# %% [markdown]
# ### 4.1 The score depends only on $m - n$
#
# Now the property itself, on vectors the matrices have never seen: a fresh random query $q$ and
# key $k$ of width $d = 16$ (`np.random.default_rng(2)`), rotated to many positions $m$ and $n$.
# For each offset $m - n$, every pair $(m, n)$ should give the same score, and different
# offsets should give different scores.

# %%
rng = np.random.default_rng(2)
q, k = rng.standard_normal(16), rng.standard_normal(16)  # (d,) each: one query, one key
m_values = np.arange(0, 400, 7)  # (58,) query positions, up to 399
print(" m - n   score q_m . k_n        pairs   spread < 1e-10")
score_by_offset = []
for offset in [-9, -1, 0, 1, 3, 50]:
    n_values = m_values - offset  # same offset m - n for every pair
    q_rot = rope_rotate(np.tile(q, (len(m_values), 1)), m_values)  # (58, d): q at every m
    k_rot = rope_rotate(np.tile(k, (len(n_values), 1)), n_values)  # (58, d): k at every n
    pair_scores = (q_rot * k_rot).sum(axis=-1)  # (58,): (R_m q) . (R_n k) for each pair
    score_by_offset.append(pair_scores[0])
    print(f"{offset:6d}   {pair_scores[0]:+.6f}   {len(pair_scores):12d}   "
          f"{bool(pair_scores.max() - pair_scores.min() < 1e-10)}")
print("the six offsets give six different scores:", len(np.unique(np.round(score_by_offset, 6))) == 6)

# %% [markdown]
# For each offset, 58 pairs of positions (for the offset $-9$: from $(0, 9)$ up to $(399, 408)$)
# give one and the same score; change the offset and the score changes. Unlike the sinusoidal dot
# product, the offsets $+1$ and $-1$ give different scores: RoPE can tell "one before" from "one
# after", because $q$ and $k$ are different vectors.
#
# ### 4.2 The score matrix of a constant query: bands
#
# Put the *same* query $q$ at every position and the *same* key $k$ at every position: the
# content is constant, so whatever pattern appears in the `(T, T)` scores is pure position. By
# the identity above, $S_{mn} = q^\top R_{n-m} k / \sqrt{d}$ is constant along every diagonal
# $n - m = \text{const}$: a band structure. Two choices of $q$, with $d = 32$ and $T = 16$:
#
# - $q = k$: a token "looking for itself". The score at offset 0 is $|k|^2/\sqrt{d}$, the largest
#   possible, since every rotated pair can only lose alignment;
# - $q = R_{-3}\, k$: the score becomes $k^\top R_{n-m+3}\, k$, largest where $n - m = -3$:
#   a query that prefers the key three positions back.

# %%
rng = np.random.default_rng(3)
T16, d32 = 16, 32
positions16 = np.arange(T16)
k_content = rng.standard_normal(d32)  # (d,): the one key vector
queries = {"q = k": k_content, "q = R_(-3) k": rope_rotate(k_content[None, :], [-3])[0]}
band_scores = {}
for name, q_content in queries.items():
    Q_rot = rope_rotate(np.tile(q_content, (T16, 1)), positions16)  # (T, d): the same q at every position
    K_rot = rope_rotate(np.tile(k_content, (T16, 1)), positions16)  # (T, d): the same k at every position
    band_scores[name] = Q_rot @ K_rot.T / np.sqrt(d32)  # (T, d) @ (d, T) -> (T, T)
    print(f"{name:13s} constant along every diagonal: {is_toeplitz(band_scores[name])}")
print("q = k        : every row's largest score is on the diagonal (n = m):",
      np.array_equal(band_scores["q = k"].argmax(axis=1), positions16))
print("q = R_(-3) k : rows m >= 3 peak at key n = m - 3:",
      np.array_equal(band_scores["q = R_(-3) k"][3:].argmax(axis=1), positions16[3:] - 3))

# %%
vmax = max(np.abs(s).max() for s in band_scores.values())
fig, axes = plt.subplots(1, 3, figsize=(17, 5), constrained_layout=True, width_ratios=[1, 1, 1.1])
for ax, (name, S) in zip(axes[:2], band_scores.items(), strict=True):
    draw_matrix(ax, S, f"RoPE scores, constant content, {name}", cmap="RdBu_r", vmin=-vmax, vmax=vmax)
lags = np.arange(-(T16 - 1), T16)  # (31,) every offset n - m in the matrix
for name, S in band_scores.items():
    _ = axes[2].plot(lags, [np.diagonal(S, lag)[0] for lag in lags], "o-", markersize=3, label=name)
axes[2].set_title("The same scores against the offset")
axes[2].set_xlabel("offset n - m (key position - query position)")
axes[2].set_ylabel("score")
axes[2].legend()
fig.suptitle(f"RoPE: the score of a constant query against constant keys depends only on n - m (T = {T16}, d = {d32})")
plt.show()

# %% [markdown]
# *Figure: left and middle, the `(T, T)` scores of one query vector and one key vector repeated at
# all 16 positions. Every diagonal is a single colour: the matrix is a set of bands, one per
# offset. With $q = k$ the brightest band is the main diagonal; with $q = R_{-3}k$ it has moved
# three keys to the left. Right, each band's value against the offset: one curve per query.*
#
# ### 4.3 Why $q$ and $k$, and never $v$
#
# The score is where RoPE earns its property: both vectors are rotated, and the two absolute
# positions cancel into $R_{n-m}$. The values are different. The output of query $m$ is a
# weighted sum of value vectors, $\text{out}_m = \sum_n a_{mn} v_n$, with nothing to cancel
# against. Rotate the values too and shift every position by $c$:
#
# $$\sum_n a_{mn} R_{n+c}\, v_n = R_c \sum_n a_{mn} R_n v_n :$$
#
# the weights $a_{mn}$ do not change (they depend only on offsets), but the whole output is
# turned by $R_c$, an amount set by the absolute position. Check both versions on six tokens,
# at positions $0, \dots, 5$ and again at $10, \dots, 15$:

# %%
rng = np.random.default_rng(4)
T6, d6, c = 6, 16, 10
Q6, K6, V6 = (rng.standard_normal((T6, d6)) for _ in range(3))  # (T, d) each
at_start, shifted_by_c = np.arange(T6), np.arange(T6) + c


def rope_attention(Q, K, V, positions, rotate_values=False):
    """Attention with RoPE on Q and K (and, wrongly, on V if asked): (out (T, d_v), weights (T, T))."""
    V_used = rope_rotate(V, positions) if rotate_values else V
    out, weights, _ = self_attention(rope_rotate(Q, positions), rope_rotate(K, positions), V_used)
    return out, weights


out_a, weights_a = rope_attention(Q6, K6, V6, at_start)
out_b, weights_b = rope_attention(Q6, K6, V6, shifted_by_c)
print("q, k rotated   : weights unchanged by the shift:", np.allclose(weights_a, weights_b))
print("q, k rotated   : output unchanged by the shift :", np.allclose(out_a, out_b))
out_va, _ = rope_attention(Q6, K6, V6, at_start, rotate_values=True)
out_vb, _ = rope_attention(Q6, K6, V6, shifted_by_c, rotate_values=True)
print("v rotated too  : output unchanged by the shift :", np.allclose(out_va, out_vb))
print("v rotated too  : shifted output == R_c (output):", np.allclose(out_vb, out_va @ rope_matrices([c], d6)[0].T))

# %% [markdown]
# With RoPE on $q$ and $k$ only, the whole layer, weights and outputs, is the same at positions
# 0 to 5 and 10 to 15. Rotating $v$ as well makes every output vector depend on where the
# sequence starts, which is exactly what RoPE set out to avoid. So RoPE touches only the two
# vectors whose dot product makes the score; the values, and everything downstream of them,
# carry no positional rotation.
#
# ### 4.4 Two pairing conventions
#
# Which features form a pair is a convention, not part of the idea. This lesson pairs neighbours,
# $(2i, 2i+1)$ (**interleaved**), as the RoFormer paper does. Many libraries, among them GPT-NeoX
# and the `rotate_half` function of Hugging Face's Transformers, pair feature $i$ with feature
# $i + d/2$ (**half-split**), with the same $\theta_i$ for pair $i$. Both are valid RoPE: each is
# the other with the features listed in a different order.

# %%
rng = np.random.default_rng(5)
x_pairs = rng.standard_normal((8, 16))  # (T, d)
pos8 = np.arange(8)
half = rope_rotate(x_pairs, pos8, pairing="half-split")  # (T, d)
inter = rope_rotate(x_pairs, pos8, pairing="interleaved")  # (T, d)
order = np.stack([np.arange(8), np.arange(8) + 8], axis=1).ravel()  # [0, 8, 1, 9, ...]: half-split pairs, side by side
print("half-split order listed as interleaved pairs:", order)
print("the two conventions give the same numbers         :", np.allclose(half, inter))
print("half-split == interleaved on reordered features   :", np.allclose(half[:, order], rope_rotate(x_pairs[:, order], pos8)))

q_row, k_row = np.tile(x_pairs[0], (8, 1)), np.tile(x_pairs[1], (8, 1))  # (T, d): constant q and k
for pairing in ["interleaved", "half-split"]:
    S = rope_rotate(q_row, pos8, pairing=pairing) @ rope_rotate(k_row, pos8, pairing=pairing).T  # (T, T)
    print(f"{pairing:11s}: constant-content scores depend only on m - n: {is_toeplitz(S)}")

Q_half, K_half = X8 @ Wq8, X8 @ Wk8  # (T, d): section 2's tokens, projected
S_half = rope_rotate(Q_half, pos8, pairing="half-split") @ rope_rotate(K_half, pos8, pairing="half-split").T
S_moved = rope_rotate(X8 @ Wq8[:, order], pos8) @ rope_rotate(X8 @ Wk8[:, order], pos8).T  # interleaved, reordered W
print("half-split scores == interleaved scores with W_q, W_k columns reordered:", np.allclose(S_half, S_moved))

# %% [markdown]
# Both conventions have the relative-position property, but they are not interchangeable on the
# same numbers: the rotated vectors differ. A model must be run with the convention it was
# trained with. Moving its weights from one convention to the other means reordering the output
# columns of $W_q$ and $W_k$ by `order`, as the last line shows: a dot product does not change
# when both vectors' features are reordered the same way.

# %% [markdown]
# ## 5. The three schemes side by side
#
# Same tokens, same projections, three ways of telling the layer where each token is: none,
# sinusoidal encodings added to $X$, and RoPE applied to $Q = XW_q$ and $K = XW_k$. Two token
# sequences of length 8, width 16 (section 2's $X$ and projections):
#
# - **one token repeated eight times**: the content is constant, so any pattern is position;
# - **eight different tokens** (section 2's $X$).

# %%
repeated = np.tile(X8[0], (T8, 1))  # (T, d): token 0 at every position
positions8 = np.arange(T8)


def scores_three_ways(Xin, positions):
    """Scaled (T, T) scores of Xin (T, d): no encoding, sinusoidal added to Xin, RoPE on q and k."""
    pe = sinusoidal_loop(positions.max() + 1, Xin.shape[1])[positions]  # (T, d): the rows of these positions
    rope = rope_rotate(Xin @ Wq8, positions) @ rope_rotate(Xin @ Wk8, positions).T / np.sqrt(d8)  # (T, T)
    return {"no encoding": scores_of(Xin, Wq8, Wk8), "sinusoidal (added to X)": scores_of(Xin + pe, Wq8, Wk8),
            "RoPE (q and k rotated)": rope}


rows = {"one token, repeated": scores_three_ways(repeated, positions8),
        "eight different tokens": scores_three_ways(X8, positions8)}
print("one token, repeated, no encoding: all 64 scores equal:",
      np.allclose(rows["one token, repeated"]["no encoding"], rows["one token, repeated"]["no encoding"][0, 0]))
for row_name, row in rows.items():
    print(f"{row_name}: constant along every diagonal? "
          + ", ".join(f"{name.split(' (')[0]}: {is_toeplitz(S)}" for name, S in row.items()))

fig, axes = plt.subplots(2, 3, figsize=(16, 9.5), constrained_layout=True)
for r, (row_name, row) in enumerate(rows.items()):
    vmin = min(S.min() for S in row.values())
    vmax = max(S.max() for S in row.values())
    for ax, (name, S) in zip(axes[r], row.items(), strict=True):
        image = draw_matrix(ax, S, f"{row_name}: {name}", vmin=vmin, vmax=vmax, colorbar=False)
    fig.colorbar(image, ax=axes[r], shrink=0.85, label="score (shared by the row)")
fig.suptitle("The same content under three positional schemes (T = 8, d = 16); colour scale shared along each row")
plt.show()

# %% [markdown]
# *Figure: top row, one token repeated. With no encoding every score is the same number: the
# layer cannot tell the eight copies apart, and each query would spread its attention evenly.
# Sinusoidal encodings make the scores vary, but in no simple pattern (the diagonals are not
# constant). RoPE draws clean bands: the score depends only on the offset. Bottom row, eight
# different tokens: both encodings change every score of the content-only matrix, and the
# picture alone does not tell which of them depends on absolute positions. The next cell does.*
#
# ### Shift the whole sequence
#
# The test that separates absolute from relative: move every token by the same amount, from
# positions $0, \dots, 7$ to $100, \dots, 107$, and recompute the scores. A relative scheme must
# give the same matrix.

# %%
moved = scores_three_ways(X8, positions8 + 100)
start = rows["eight different tokens"]
for name in start:
    same = np.allclose(moved[name], start[name])
    change = np.abs(moved[name] - start[name]).max()
    print(f"{name:24s}: same scores after the shift: {same!s:5s}  (largest change {change:.3f})")

# %% [markdown]
# With no encoding nothing changes, trivially. RoPE gives the same scores to rounding error.
# Sinusoidal encodings change them: the same eight tokens, moved 100 positions along, are scored
# differently, because the vectors added at positions 100 to 107 are different vectors.
#
# And with positions, order blindness is gone. Shuffle the eight tokens, keep the positions
# $0, \dots, 7$ in place, and the outputs are no longer the old outputs reordered:

# %%
perm8 = np.random.default_rng(6).permutation(T8)
V8 = X8 @ (np.random.default_rng(7).standard_normal((d8, d8)) / np.sqrt(d8))  # (T, d): values of the tokens


def out_with(scheme, Xin, Vin):
    """Attention output (T, d) of the tokens Xin with values Vin under one scheme, at positions 0..T-1."""
    S = scores_three_ways(Xin, positions8)[scheme]  # (T, T)
    return softmax(S, axis=-1) @ Vin  # (T, T) @ (T, d) -> (T, d)


for scheme in start:
    equivariant = np.allclose(out_with(scheme, X8[perm8], V8[perm8]), out_with(scheme, X8, V8)[perm8])
    print(f"{scheme:24s}: shuffled tokens give the old outputs, reordered: {equivariant}")

# %% [markdown]
# ## Practice exercises
#
# Each exercise asks for one function. Replace `raise NotImplementedError()` with your code, run
# the cell, then run the test cell below it. The visible checks use the lesson's arrays and tell
# you what a failure most likely means; when your notebook is graded, hidden tests call your
# function again on fresh inputs (other lengths, widths, positions, batch shapes and seeds), so
# write the general function, not one that fits the lesson's arrays.
#
# ### Exercise 1: the sinusoidal table without loops (2 points)
#
# Write `sinusoidal_encoding(T, d)`: return the `(T, d)` array with
#
# $$PE(t, 2i) = \sin\!\left(\frac{t}{10000^{2i/d}}\right), \qquad
#   PE(t, 2i+1) = \cos\!\left(\frac{t}{10000^{2i/d}}\right), \qquad t = 0, \dots, T-1 ,$$
#
# for an even width $d$, the same numbers as `sinusoidal_loop`, but with no Python loop: build the
# `(T, d/2)` table of angles $t\,\omega_i$ by broadcasting a column of positions against a row of
# frequencies, and write the sines into the even columns and the cosines into the odd ones
# (`pe[:, 0::2]`, `pe[:, 1::2]`). Do not call `sinusoidal_loop` or copy its loops: the tests run
# your function with `sinusoidal_loop` and `range` switched off, and fail a call that uses either.

# %% nbgrader={"grade": false, "grade_id": "sinusoidal_encoding", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sinusoidal_encoding(T, d):
    """Sinusoidal position encodings, shape (T, d) for an even d: sin in features 2i, cos in 2i + 1."""
    ### BEGIN SOLUTION
    positions = np.arange(T)[:, None]  # (T, 1)
    omega = 10000.0 ** (-np.arange(0, d, 2) / d)  # (d/2,): omega_i = 10000^(-2i/d)
    angles = positions * omega[None, :]  # (T, 1) * (1, d/2) -> (T, d/2)
    pe = np.empty((T, d))
    pe[:, 0::2] = np.sin(angles)  # features 2i
    pe[:, 1::2] = np.cos(angles)  # features 2i + 1
    return pe
    ### END SOLUTION


# %%
print("sinusoidal_encoding(64, 32) == section 2's table:", np.allclose(sinusoidal_encoding(64, 32), pe_table))

# %% nbgrader={"grade": true, "grade_id": "test_sinusoidal_encoding", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# T = 2, d = 4, worked by hand: omega_0 = 10000^0 = 1 and omega_1 = 10000^(-2/4) = 0.01, so row 1 is
# [sin 1, cos 1, sin 0.01, cos 0.01]; row 0 is [sin 0, cos 0, sin 0, cos 0]. The usual mistakes give:
_PE_2_4 = {
    None: [[0, 1, 0, 1], [np.sin(1), np.cos(1), np.sin(0.01), np.cos(0.01)]],
    "sin and cos are swapped: even features 2i hold the sine, odd features 2i+1 the cosine":
        [[1, 0, 1, 0], [np.cos(1), np.sin(1), np.cos(0.01), np.sin(0.01)]],
    "all the sines come first and all the cosines after ([sin | cos]): this lesson interleaves them, sin in "
    "feature 2i and cos in feature 2i+1 (pe[:, 0::2], pe[:, 1::2])":
        [[0, 0, 1, 1], [np.sin(1), np.sin(0.01), np.cos(1), np.cos(0.01)]],
    "positions start at 0: row 0 must be [0, 1, 0, 1, ...] (sin 0, cos 0, ...)":
        [[np.sin(1), np.cos(1), np.sin(0.01), np.cos(0.01)], [np.sin(2), np.cos(2), np.sin(0.02), np.cos(0.02)]],
    "the exponent is 2i/d, where i = 0 .. d/2 - 1 counts the pairs: 10000 ** (np.arange(0, d, 2) / d), "
    "not 10000 ** (np.arange(d // 2) / d)":
        [[0, 1, 0, 1], [np.sin(1), np.cos(1), np.sin(0.1), np.cos(0.1)]],
    "features 2i and 2i+1 share one frequency, 10000^(-2i/d): the exponent uses the pair index i, "
    "not the feature index":
        [[0, 1, 0, 1], [np.sin(1), np.cos(0.1), np.sin(0.01), np.cos(0.001)]],
}


def _refuse_the_loop(*args):
    raise AssertionError("sinusoidal_encoding called sinusoidal_loop or range, which the exercise forbids: build "
                         "the table by broadcasting, with no Python loop")


def check_sinusoidal_encoding(T, d):
    """Visible check of the properties every sinusoidal table has, with a hint for the usual mistakes."""
    lesson_loop = globals()["sinusoidal_loop"]
    # The exercise asks for the table without the lesson's loop and without loops of its own.
    globals().update(sinusoidal_loop=_refuse_the_loop, range=_refuse_the_loop)
    try:
        got = sinusoidal_encoding(T, d)
    finally:
        globals()["sinusoidal_loop"] = lesson_loop
        del globals()["range"]  # the builtin again
    assert isinstance(got, np.ndarray), f"sinusoidal_encoding should return a NumPy array, got {type(got).__name__}"
    if got.shape == (d, T) and T != d:
        raise AssertionError(f"got shape {got.shape}: rows are positions and columns features, (T, d) = {(T, d)}")
    assert got.shape == (T, d), f"expected shape (T, d) = {(T, d)}, got {got.shape}"
    assert np.allclose(got[0], np.tile([0.0, 1.0], d // 2)), (
        "positions start at 0: row 0 must be [0, 1, 0, 1, ...] (sin 0, cos 0, ...)")
    assert np.allclose(got[:, 0::2] ** 2 + got[:, 1::2] ** 2, 1.0), (
        "features 2i and 2i+1 should be the sine and cosine of ONE angle (sin^2 + cos^2 = 1): they share the "
        "frequency 10000^(-2i/d)")
    assert np.allclose(got[:, 0], np.sin(np.arange(T))), "pair 0 turns at frequency 10000^0 = 1: PE(t, 0) = sin(t)"
    if T > 1:  # the angle of pair i at position 1 is its frequency; each pair turns 10000^(2/d) times slower
        frequencies = np.arctan2(got[1, 0::2], got[1, 1::2])  # (d/2,): sin and cos of the angle of pair i
        assert np.allclose(frequencies[1:] / frequencies[:-1], 10000.0 ** (-2 / d)), (
            "each pair should turn 10000^(2/d) times slower than the one before: the exponent is 2i/d, with i "
            "the pair index")
    # Section 2's property: the dot product of two rows depends only on how far apart they are.
    if T > 3:
        assert np.allclose(np.einsum("tj,tj->t", got[:-2], got[2:]), got[0] @ got[2]), (
            "PE(t) . PE(t + 2) should be the same for every t: it is the sum over pairs of cos(2 omega_i)")


# Worked by hand (the table above); the usual mistakes are named.
_got = sinusoidal_encoding(2, 4)
if not np.allclose(_got, _PE_2_4[None]):
    for _mistake, _table in _PE_2_4.items():
        if _mistake is not None and np.shape(_got) == (2, 4) and np.allclose(_got, _table):
            raise AssertionError(_mistake)
assert np.allclose(_got, _PE_2_4[None]), (
    f"sinusoidal_encoding(2, 4) should be {np.round(_PE_2_4[None], 4).tolist()}: PE(t, 2i) = sin(t / 10000^(2i/d)), "
    "PE(t, 2i+1) = cos(t / 10000^(2i/d))")
check_sinusoidal_encoding(2, 4)
check_sinusoidal_encoding(64, 32)  # section 2's size
check_sinusoidal_encoding(8, 16)  # section 2's eight tokens
check_sinusoidal_encoding(5, 2)  # a single pair
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: RoPE for any batch shape (4 points)
#
# Write `apply_rope(x, positions, base=10000)`. `x` has shape `(..., T, d)` with $d$ even and any
# number of leading batch and head axes: `(T, d)`, `(B, T, d)`, `(B, h, T, d)`, ...; `positions`
# is a 1-D integer array of length $T$ (not necessarily $0, \dots, T-1$), shared by every leading
# index. Return the array of `x`'s shape in which pair $i$ of row $t$, features $(2i, 2i+1)$, is
# rotated by the angle $\alpha = \text{positions}[t] \cdot \theta_i$:
#
# $$x'_{2i} = x_{2i}\cos\alpha - x_{2i+1}\sin\alpha, \qquad
#   x'_{2i+1} = x_{2i}\sin\alpha + x_{2i+1}\cos\alpha, \qquad \theta_i = \text{base}^{-2i/d} .$$
#
# Requirements:
#
# - no `(d, d)` matrices: work on the even and odd features (`x[..., 0::2]`, `x[..., 1::2]`) with
#   a `(T, d/2)` table of angles, which broadcasts over the leading axes (the tests fail a call of
#   section 4's `rope_matrices` or `rope_rotate`, and one of their inputs is too wide for
#   `(T, d, d)` rotation matrices to fit in the memory a notebook may use);
# - the interleaved pairing $(2i, 2i+1)$ of this lesson (not the half-split one);
# - `x` itself is not modified.

# %% nbgrader={"grade": false, "grade_id": "apply_rope", "locked": false, "schema_version": 3, "solution": true, "task": false}
def apply_rope(x, positions, base=10000):
    """Rotary position embedding of x (..., T, d), pairs (2i, 2i+1), angles positions[t] * base^(-2i/d)."""
    ### BEGIN SOLUTION
    d = x.shape[-1]
    theta = float(base) ** (-np.arange(0, d, 2) / d)  # (d/2,)
    angles = np.asarray(positions)[:, None] * theta[None, :]  # (T, 1) * (1, d/2) -> (T, d/2)
    cos, sin = np.cos(angles), np.sin(angles)  # (T, d/2), broadcast over the leading axes of x
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each: the two features of every pair
    out = np.empty(x.shape)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out
    ### END SOLUTION


# %%
print("apply_rope == section 4's rotation on the pairing example:", np.allclose(apply_rope(x_pairs, pos8), inter))

# %% nbgrader={"grade": true, "grade_id": "test_apply_rope", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# d = 4, base 100, worked by hand: theta = [100^0, 100^(-2/4)] = [1, 0.1]. Row 0, x = [1, 0, 1, 0] at
# position 2, turns pair 0 by 2 and pair 1 by 0.2: [cos 2, sin 2, cos 0.2, sin 0.2]. Row 1,
# x = [0, 1, 0, 1] at position 3: (0, 1) turned by alpha is (-sin alpha, cos alpha).
_X_BY_HAND, _P_BY_HAND = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]]), np.array([2, 3])
_ROPE_BY_HAND = {
    None: [[np.cos(2), np.sin(2), np.cos(0.2), np.sin(0.2)], [-np.sin(3), np.cos(3), -np.sin(0.3), np.cos(0.3)]],
    "you rotated by -alpha: x'_2i = x_2i cos - x_2i+1 sin and x'_2i+1 = x_2i sin + x_2i+1 cos":
        [[np.cos(2), -np.sin(2), np.cos(0.2), -np.sin(0.2)], [np.sin(3), np.cos(3), np.sin(0.3), np.cos(0.3)]],
    "you used base 10000 where another base was given: theta_i = base ** (-2i/d)":
        [[np.cos(2), np.sin(2), np.cos(0.02), np.sin(0.02)], [-np.sin(3), np.cos(3), -np.sin(0.03), np.cos(0.03)]],
    "you rotated row t by t * theta: use the given positions[t], not the row index":
        [[1, 0, 1, 0], [-np.sin(1), np.cos(1), -np.sin(0.1), np.cos(0.1)]],
    "you paired feature j with feature j + d/2 (the half-split convention); this exercise pairs neighbours "
    "(2i, 2i+1)":
        [[np.cos(2) - np.sin(2), 0, np.sin(2) + np.cos(2), 0], [0, np.cos(0.3) - np.sin(0.3), 0,
                                                              np.sin(0.3) + np.cos(0.3)]],
}


def _refuse_the_matrices(*args, **kwargs):
    raise AssertionError("apply_rope called section 4's rope_matrices or rope_rotate, which the exercise forbids: "
                         "turn the pairs x[..., 0::2], x[..., 1::2] with a (T, d/2) table of angles instead")


def _apply_rope_alone(*args, **kwargs):
    """apply_rope(*args, **kwargs), with section 4's (d, d) matrices out of its reach."""
    lesson = {name: globals()[name] for name in ("rope_matrices", "rope_rotate")}
    globals().update(dict.fromkeys(lesson, _refuse_the_matrices))
    try:
        return apply_rope(*args, **kwargs)
    finally:
        globals().update(lesson)


def check_apply_rope(x, positions, *base, **named_base):
    """Visible check with a hint for the usual mistakes; the base is passed on exactly as given."""
    given, positions = x, np.array(positions, copy=True)
    x = given.copy()  # the checks below compare with the input as it was given
    got = _apply_rope_alone(given, positions, *base, **named_base)
    assert np.array_equal(given, x), "apply_rope modified its input x: write the rotated pairs into a new array"
    assert isinstance(got, np.ndarray), f"apply_rope should return a NumPy array, got {type(got).__name__}"
    assert got.shape == x.shape, f"the output should have x's shape {x.shape}, got {got.shape}"
    by_hand = x.shape == _X_BY_HAND.shape and np.array_equal(x, _X_BY_HAND) and np.array_equal(positions, _P_BY_HAND)
    if by_hand and not np.allclose(got, _ROPE_BY_HAND[None]):
        for mistake, table in _ROPE_BY_HAND.items():
            if mistake is not None and np.allclose(got, table):
                raise AssertionError(mistake)
        assert np.allclose(got, _ROPE_BY_HAND[None]), (
            "wrong values on the worked example: pair i of row t should be turned by positions[t] * base^(-2i/d), "
            "with theta_i = base ** (-np.arange(0, d, 2) / d)")
    assert np.allclose(np.hypot(got[..., 0::2], got[..., 1::2]), np.hypot(x[..., 0::2], x[..., 1::2])), (
        "the pairs (x_2i, x_2i+1) changed length: a rotation only turns each pair")
    # Pair 0 turns at theta_0 = base^0 = 1 for every base: by exactly positions[t] radians, counterclockwise.
    before, after = x[..., 0] + 1j * x[..., 1], got[..., 0] + 1j * got[..., 1]  # (..., T): pair 0 as a complex number
    kept = np.abs(before) > 1e-9  # a zero pair has no direction
    turn = np.broadcast_to(np.exp(1j * np.asarray(positions, dtype=float)), before.shape)  # e^(i p_t): p_t radians
    if not np.allclose(after[kept] / before[kept], turn[kept]):
        raise AssertionError("pair 0, features (0, 1), should be turned by positions[t] radians (theta_0 = 1): "
                             "check the sign of the rotation, the pairing (2i, 2i+1), and that row t uses "
                             "positions[t], not t")
    twice = _apply_rope_alone(_apply_rope_alone(x, positions, *base, **named_base), positions, *base, **named_base)
    assert np.allclose(twice, _apply_rope_alone(x, 2 * positions, *base, **named_base)), (
        "turning by positions twice should equal turning by 2 * positions: the angle is positions[t] * theta_i")
    assert np.allclose(_apply_rope_alone(x, 0 * positions, *base, **named_base), x), (
        "position 0 should leave x unchanged")


def check_relative_positions(d=16, T=12):
    """Constant q and k at every position: rotated, their scores must depend only on m - n."""
    rng = np.random.default_rng(31)
    q, k = rng.standard_normal(d), rng.standard_normal(d)
    positions = np.arange(T) + 40
    S = apply_rope(np.tile(q, (T, 1)), positions) @ apply_rope(np.tile(k, (T, 1)), positions).T  # (T, T)
    for offset in range(1 - T, T):
        band = np.diagonal(S, offset)
        assert np.allclose(band, band[0]), (
            f"q_m . k_n is not the same along the diagonal n - m = {offset}: with the same angles "
            "for q and k, the score should depend only on m - n")


_rope_rng = np.random.default_rng(21)
check_apply_rope(_X_BY_HAND.copy(), _P_BY_HAND, 100.0)  # worked by hand above; the base by position
check_apply_rope(_X_BY_HAND.copy(), _P_BY_HAND, base=100)  # and by name
check_apply_rope(x_pairs, pos8)  # section 4.4's (T, d) example, positions 0..7, the default base
check_apply_rope(_rope_rng.standard_normal((2, 3, 8, 16)), np.arange(8) + 5)  # (B, h, T, d), positions 5..12
check_apply_rope(_rope_rng.standard_normal((4, 16)), np.array([0, 3, 1, 7]), base=100.0)  # another base, unsorted
check_relative_positions()
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: RoPE scores (3 points)
#
# Write `rope_scores(q, k, positions)`: given queries and keys of shape `(..., T, d)` and the
# positions (length $T$) of the $T$ tokens, return the `(..., T, T)` scaled scores of the rotated
# vectors,
#
# $$S_{mn} = \frac{(R_{p_m} q_m) \cdot (R_{p_n} k_n)}{\sqrt{d}}, \qquad p = \text{positions},$$
#
# with the default base 10000. Use your `apply_rope`. By section 4, the result must not change
# when every position is shifted by the same amount. The test cell checks your `rope_scores` on a
# single feature pair ($d = 2$, where $\theta_0 = 1$ and the scores can be worked out by hand), with
# its own rotation of that one pair in place of your `apply_rope`, so a mistake in Exercise 2 costs
# points only there.

# %% nbgrader={"grade": false, "grade_id": "rope_scores", "locked": false, "schema_version": 3, "solution": true, "task": false}
def rope_scores(q, k, positions):
    """Scaled scores (..., T, T) of RoPE-rotated queries and keys q, k (..., T, d)."""
    ### BEGIN SOLUTION
    q_rot = apply_rope(q, positions)  # (..., T, d)
    k_rot = apply_rope(k, positions)  # (..., T, d)
    return q_rot @ np.swapaxes(k_rot, -2, -1) / np.sqrt(q.shape[-1])  # (..., T, d) @ (..., d, T) -> (..., T, T)
    ### END SOLUTION


# %%
print("rope_scores == section 5's RoPE scores:",
      np.allclose(rope_scores(X8 @ Wq8, X8 @ Wk8, positions8), rows["eight different tokens"]["RoPE (q and k rotated)"]))

# %% nbgrader={"grade": true, "grade_id": "test_rope_scores", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def _turn_one_pair(x, positions, base=10000):
    """RoPE of a single pair, d = 2 only (theta_0 = 1 for every base): row t turned by positions[t] radians.

    Used in place of your apply_rope while rope_scores is checked, so that Exercise 2 is graded on its own.
    """
    assert x.shape[-1] == 2, "the test cell's stand-in for apply_rope handles d = 2 only"
    turned = (x[..., 0] + 1j * x[..., 1]) * np.exp(1j * np.asarray(positions, dtype=float))  # (..., T)
    return np.stack([turned.real, turned.imag], axis=-1)  # (..., T, 2)


# Worked by hand, d = 2: q_m = (1, 0) and k_n = (0, 1) at every position. Turned, they are
# (cos p_m, sin p_m) and (-sin p_n, cos p_n), whose dot product is sin(p_m - p_n); so
# S_mn = sin(p_m - p_n) / sqrt(2). Positions [0, 5, 1, 9]; _OFFSETS[m][n] = p_m - p_n.
_OFFSETS = np.array([[0, -5, -1, -9], [5, 0, 4, -4], [1, -4, 0, -8], [9, 4, 8, 0]])
_ROPE_SCORES_BY_HAND = {
    None: np.sin(_OFFSETS) / np.sqrt(2),
    "the scores are not scaled: divide by sqrt(d)": np.sin(_OFFSETS),
    "the scale is 1/sqrt(d), not 1/d": np.sin(_OFFSETS) / 2,
    "you rotated only q: rotate k too, so that the positions cancel into m - n":
        np.sin(np.array([[0] * 4, [5] * 4, [1] * 4, [9] * 4])) / np.sqrt(2),
    "you rotated only k: rotate q too, so that the positions cancel into m - n":
        -np.sin(np.array([[0, 5, 1, 9]] * 4)) / np.sqrt(2),
    "these are the scores without RoPE: rotate q and k with apply_rope first": np.zeros((4, 4)),
    "the scores are transposed: entry (m, n) is (rotated q_m) . (rotated k_n)": -np.sin(_OFFSETS) / np.sqrt(2),
    "these are the scores for positions 0, 1, ..., T-1: pass the given positions to apply_rope "
    "(they need not be consecutive)": np.sin(np.subtract.outer(np.arange(4), np.arange(4))) / np.sqrt(2),
}


def _rope_scores_with_the_stand_in(q, k, positions):
    students_apply_rope = globals().get("apply_rope")
    globals()["apply_rope"] = _turn_one_pair  # Exercise 2 is graded on its own
    try:
        return rope_scores(q, k, positions)
    finally:
        globals()["apply_rope"] = students_apply_rope


def check_rope_scores(q, k, positions, factor=1.0):
    """Visible check on the worked example; q is (1, 0) times `factor` (an array over the leading axes)."""
    given = (q, k, positions)
    q, k, positions = (np.array(a, copy=True) for a in given)  # the checks below use the inputs as they were
    got = _rope_scores_with_the_stand_in(*given)
    assert all(np.array_equal(a, b) for a, b in zip(given, (q, k, positions), strict=True)), (
        "rope_scores modified its inputs")
    assert isinstance(got, np.ndarray), f"rope_scores should return a NumPy array, got {type(got).__name__}"
    *batch, T, d = q.shape
    assert got.shape == (*batch, T, T), f"scores should be (..., T, T) = {(*batch, T, T)}, got {got.shape}"
    scale = np.asarray(factor)[..., None, None]  # broadcasts over (T, T)
    if not np.allclose(got, scale * _ROPE_SCORES_BY_HAND[None]):
        for mistake, table in _ROPE_SCORES_BY_HAND.items():
            if mistake is not None and np.allclose(got, scale * table):
                raise AssertionError(mistake)
    assert np.allclose(got, scale * _ROPE_SCORES_BY_HAND[None]), (
        "wrong values: S = apply_rope(q) @ apply_rope(k)^T / sqrt(d), over the last two axes")


def check_shift_invariance(q, k, positions, shift):
    """Shifting every position by the same amount must leave RoPE scores unchanged."""
    before = _rope_scores_with_the_stand_in(q, k, positions)
    after = _rope_scores_with_the_stand_in(q, k, positions + shift)
    assert np.allclose(before, after), (
        f"shifting every position by {shift} changed the scores: with q and k both rotated, only m - n should matter")


_P_SCORES = np.array([0, 5, 1, 9])
check_rope_scores(np.tile([1.0, 0.0], (4, 1)), np.tile([0.0, 1.0], (4, 1)), _P_SCORES)  # (T, d) = (4, 2)
_factor = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]])  # (B, h): q scaled per batch and head
check_rope_scores(_factor[..., None, None] * np.array([1.0, 0.0]) * np.ones((2, 3, 4, 1)),
                  np.broadcast_to([0.0, 1.0], (2, 3, 4, 2)).copy(), _P_SCORES, factor=_factor)  # (B, h, T, d)
_scores_rng = np.random.default_rng(22)
_q, _k = _scores_rng.standard_normal((2, 4, 8, 2)), _scores_rng.standard_normal((2, 4, 8, 2))  # (B, h, T, d)
check_shift_invariance(_q, _k, np.arange(8), 1000)
print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# **Attention sees a set.** Without positions, $X \to PX$ gives scores $PSP^\top$, weights
# $PAP^\top$ and output $P\,\text{out}$: the same vectors, reordered. Token A's output was the same
# vector in `A B C D` and `B A C D`, so no readout of it can say which came first. (A causal mask
# breaks the symmetry, but without a mask there is no order at all.)
#
# **Sinusoidal encodings** add $PE(t, 2i) = \sin(t/10000^{2i/d})$, $PE(t, 2i+1) = \cos(t/10000^{2i/d})$
# to the tokens: a `(T, d)` table with a different row for every position, defined for every $t$.
# $PE(t)\cdot PE(t+k) = \sum_i \cos(k\omega_i)$ depends only on $k$ (and not on its sign), and a
# shift by $k$ is a fixed rotation $M_k$. But once added to $X$ and projected, the scores gain
# three terms that depend on absolute positions: shifting the whole sequence changed them.
#
# **Learned absolute embeddings** are a `(T_max, d)` table trained with the model. Trained on
# sequences of 16 tokens, rows 16 to 31 stayed exactly at their random initialisation, and no
# position beyond the table can be looked up at all (an `IndexError`). The length limit:
# at most $T_{\max}$ tokens, and only the positions seen in training carry trained vectors.
#
# **RoPE** rotates each feature pair $(2i, 2i+1)$ of $q$ and $k$ by $m\theta_i$,
# $\theta_i = 10000^{-2i/d}$, so that $(R_m q)\cdot(R_n k) = q^\top R_{n-m} k$: on fresh random
# vectors every pair of positions with the same offset gave the same score; constant content gave
# a band matrix; shifting every position left the scores unchanged. It rotates $q$ and $k$ only:
# rotating $v$ made the output turn with the absolute position. Interleaved and half-split pairing
# are two orderings of the same idea; a model must keep the one it was trained with.
#
# **Side by side**, on one token repeated: no encoding gives a constant score matrix, sinusoidal
# encodings an irregular one, RoPE bands.
#
# **Next:** Lesson 9 trains a tiny attention model and watches its attention patterns form.
