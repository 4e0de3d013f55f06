# ---
# jupyter:
#   jupytext:
#     formats: 02-scaling//ipynb,py:percent
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
# # Lesson 2: Why divide by $\sqrt{d_k}$
#
# Scaled dot-product attention is
#
# $$\text{Attention}(Q, K, V) = \text{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V ,$$
#
# where $d_k$ is the length of each query and key vector. Lesson 1 built everything in this line
# except the $\sqrt{d_k}$. This lesson is about that one division: what goes wrong without it,
# why it is exactly $\sqrt{d_k}$ and not $d_k$, and what it silently assumes about the numbers
# it divides.
#
# The short version: a dot product of two random vectors of length $d_k$ grows with $d_k$. Large
# scores make the softmax **saturate**: each row of attention weights collapses onto a single
# key, and the gradient that training needs to change that choice vanishes. Dividing by
# $\sqrt{d_k}$ keeps the scores at a fixed size, whatever $d_k$ is, *provided the queries and keys
# themselves have unit variance*. A widely copied demonstration of the problem breaks that
# proviso without noticing, and section 5 takes it apart as a common mistake worth understanding.
#
# **What you'll do**
# - measure the variance of $q \cdot k$ for $d_k$ from 1 to 1024 and fit its growth;
# - compare attention with and without the scale at $d_k = 64$: scores, weights, row entropies;
# - follow the entropy of attention rows, and the softmax Jacobian, as $d_k$ grows;
# - run a common unscaled-initialisation example and find out why even its scaled scores saturate;
# - implement `scaled_dot_product_attention`, the gradient that reaches the scores (`softmax_backward`)
#   and a variance prediction, and take a short quiz.
#
# **What you'll learn**
# - why $\operatorname{Var}(q \cdot k) = d_k$ for unit-variance $q$ and $k$, so the right divisor is $\sqrt{d_k}$;
# - how to measure saturation: the entropy of a row, against its ceiling $\log T$;
# - why a saturated softmax stops learning: its Jacobian $\operatorname{diag}(p) - p p^\top$ goes to zero;
# - why weight initialisation (GPT-2's std 0.02, or $1/\sqrt{C}$) is part of the same story;
# - the difference between the two fixes: max subtraction prevents overflow, the $\sqrt{d_k}$ prevents saturation.
#
# **What you'll need**
# - single-head attention and the numerically stable softmax (Lesson 1);
# - mean and variance of a sum of independent random variables.
#
# Four graded exercises close the lesson. Their visible checks run as you work; hidden tests
# with fresh inputs run when your notebook is graded.

# %%
import matplotlib.pyplot as plt
import numpy as np

# %% [markdown]
# Two helpers used throughout. `softmax` is Lesson 1's stable softmax. `attention_entropy`
# measures how spread out each row of attention weights is, in nats (natural log):
#
# $$H(p) = -\sum_{j=1}^{T} p_j \log p_j , \qquad 0 \le H(p) \le \log T .$$
#
# $H = 0$ for a one-hot row (all the attention on one key) and $H = \log T$ for a uniform row.
# A term with $p_j = 0$ contributes $0$ (the limit of $p \log p$), so the helper never evaluates
# $\log 0$.

# %%
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    x = x - x.max(axis=axis, keepdims=True)  # subtract the row max: exp never overflows
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def attention_entropy(weights):
    """Entropy in nats of each row of `weights` (..., T_k) -> (...); 0 log 0 counts as 0."""
    log_w = np.log(weights, out=np.zeros_like(weights), where=weights > 0)  # log only where w > 0
    return 0.0 - (weights * log_w).sum(axis=-1)  # 0.0 - x rather than -x: a one-hot row gives 0.0, not -0.0


def draw_heatmap(ax, matrix, title, *, cbar_label, cmap="viridis", vmin=None, vmax=None, fmt="{:.2f}"):
    """One (T_q, T_k) matrix as a labelled heatmap with a colourbar; values printed when T <= 8."""
    n_queries, n_keys = matrix.shape
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_title(title)
    ax.set_xlabel("key position")
    ax.set_ylabel("query position")
    ax.set_xticks(range(n_keys))
    ax.set_yticks(range(n_queries))
    if max(n_queries, n_keys) <= 8:
        for q in range(n_queries):
            for k in range(n_keys):
                text = fmt.format(matrix[q, k])
                if float(text) == 0:
                    text = fmt.format(0.0)  # print "0.00", not "-0.00"
                r, g, b, _ = image.cmap(image.norm(matrix[q, k]))
                ax.text(k, q, text, ha="center", va="center", fontsize=7,
                        color="black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white")
    ax.figure.colorbar(image, ax=ax, shrink=0.8, label=cbar_label)


# %% [markdown]
# ## 1. The variance of a dot product grows with $d_k$
#
# Take a query $q$ and a key $k$ in $\mathbb{R}^{d_k}$ whose entries are independent, with mean 0
# and variance 1. Their score is a sum of $d_k$ products:
#
# $$q \cdot k = \sum_{j=1}^{d_k} q_j k_j .$$
#
# Each product has mean $\mathbb{E}[q_j]\,\mathbb{E}[k_j] = 0$ and variance
# $\mathbb{E}[q_j^2]\,\mathbb{E}[k_j^2] = 1 \cdot 1 = 1$. The $d_k$ products are independent, so
# their variances add:
#
# $$\operatorname{Var}(q \cdot k) = d_k , \qquad
#   \operatorname{Var}\!\left(\frac{q \cdot k}{\sqrt{d_k}}\right) = \frac{d_k}{d_k} = 1 .$$
#
# The standard deviation of a raw score is $\sqrt{d_k}$, so dividing by $\sqrt{d_k}$ (not by
# $d_k$) is what brings it back to 1. Check it: draw 4000 pairs of unit-variance vectors for each
# $d_k = 1, 2, 4, \dots, 1024$, compute every $q \cdot k$, and measure both variances.

# %%
rng = np.random.default_rng(0)
d_k_values = 2 ** np.arange(11)  # 1, 2, 4, ..., 1024
n_pairs = 4000

var_raw, var_scaled = [], []
for d_k in d_k_values:
    q = rng.standard_normal((n_pairs, d_k))  # (n_pairs, d_k): unit-variance query entries
    k = rng.standard_normal((n_pairs, d_k))  # (n_pairs, d_k): unit-variance key entries
    dots = (q * k).sum(axis=-1)  # (n_pairs,): one q . k per pair
    var_raw.append(dots.var())
    var_scaled.append((dots / np.sqrt(d_k)).var())
var_raw, var_scaled = np.array(var_raw), np.array(var_scaled)

# A straight line in log-log coordinates, log Var = slope * log d_k + c, means Var ~ d_k ** slope.
slope_raw = np.polyfit(np.log(d_k_values), np.log(var_raw), 1)[0]
slope_scaled = np.polyfit(np.log(d_k_values), np.log(var_scaled), 1)[0]

print("  d_k   Var(q.k)   Var(q.k / sqrt(d_k))")
for d_k, v_raw, v_scaled in zip(d_k_values, var_raw, var_scaled, strict=True):
    print(f"{d_k:5d} {v_raw:10.2f} {v_scaled:12.3f}")
print(f"fitted log-log slope, unscaled: {slope_raw:.3f}   (1 means Var grows like d_k)")
print(f"fitted log-log slope, scaled:   {slope_scaled:.3f}   (0 means Var does not depend on d_k)")

# %%
fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
_ = ax.loglog(d_k_values, d_k_values, ":", color="grey", label="theory: Var = $d_k$")
_ = ax.loglog(d_k_values, np.ones(len(d_k_values)), "--", color="grey", label="theory: Var = 1")
_ = ax.loglog(d_k_values, var_raw, "o-", label=f"measured Var($q \\cdot k$), slope {slope_raw:.2f}")
_ = ax.loglog(d_k_values, var_scaled, "s-", label=f"measured Var($q \\cdot k / \\sqrt{{d_k}}$), slope {slope_scaled:.2f}")
ax.set_xscale("log", base=2)
ax.set_xticks(d_k_values, [str(d) for d in d_k_values])
ax.set_xlabel("$d_k$ (length of query and key vectors)")
ax.set_ylabel("variance of the score (4000 pairs)")
ax.set_title("Unit-variance q and k: Var(q·k) grows like $d_k$, the scaled score stays at 1")
ax.legend()
plt.show()

# %% [markdown]
# *Figure: both axes are logarithmic. The raw scores' variance (circles) lies on the dotted line
# Var $= d_k$; the scaled scores' variance (squares) lies on the dashed line Var $= 1$ for every
# $d_k$.*
#
# The fitted slope of the raw variance is 1.002, and the scaled variance stays between 0.97 and
# 1.04 for every $d_k$ from 1 to 1024. At $d_k = 64$, the head size of GPT-2 small, the raw scores
# have variance 63.4: a standard deviation near 8.

# %% [markdown]
# ## 2. Saturation at $d_k = 64$
#
# What does a standard deviation of 8 do to a softmax? Take $T = 8$ positions and unit-variance
# queries and keys of length $d_k = 64$, and compute the attention weights twice:
#
# $$\text{unscaled: } \operatorname{softmax}\!\left(Q K^\top\right), \qquad
#   \text{scaled: } \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) .$$
#
# For each query row, the entropy $H$ says how spread out its attention is, against the ceiling
# $\log T = \log 8 = 2.079$ of a uniform row.

# %%
rng = np.random.default_rng(1)
T, d_k = 8, 64
Q = rng.standard_normal((T, d_k))  # (T, d_k) unit-variance queries
K = rng.standard_normal((T, d_k))  # (T, d_k) unit-variance keys

scores_raw = Q @ K.T  # (T, d_k) @ (d_k, T) -> (T, T)
scores_scaled = scores_raw / np.sqrt(d_k)  # (T, T)
weights_raw = softmax(scores_raw)  # (T, T), rows sum to 1
weights_scaled = softmax(scores_scaled)  # (T, T), rows sum to 1
entropy_raw = attention_entropy(weights_raw)  # (T,)
entropy_scaled = attention_entropy(weights_scaled)  # (T,)

print(f"unscaled scores: range {scores_raw.min():7.2f} to {scores_raw.max():6.2f}, std {scores_raw.std():.2f}")
print(f"scaled scores:   range {scores_scaled.min():7.2f} to {scores_scaled.max():6.2f}, std {scores_scaled.std():.2f}")
print("row entropy, unscaled:", np.round(entropy_raw, 3))
print("row entropy, scaled:  ", np.round(entropy_scaled, 3))
print(f"ceiling log T = {np.log(T):.3f};  mean entropy unscaled {entropy_raw.mean():.3f}, scaled {entropy_scaled.mean():.3f}")
print("largest weight in each row, unscaled:", np.round(weights_raw.max(axis=-1), 3))
print("largest weight in each row, scaled:  ", np.round(weights_scaled.max(axis=-1), 3))

# %% [markdown]
# The scaled scores run from $-2.55$ to $2.02$ with standard deviation 1.08, close to the 1 that
# section 1 predicts; the unscaled ones run from $-20.43$ to $16.16$, standard deviation 8.68.
# Every unscaled row has lower entropy than its scaled twin.
# Rows 1, 6 and 7 are essentially one-hot (entropy at most 0.007, largest weight at least 0.999),
# and the mean entropy falls from 1.688 to 0.301. The scaled rows stay between 1.168 and 1.953,
# below the ceiling 2.079 but far from one-hot. Here are all four $(T, T)$ matrices:

# %%
fig, axes = plt.subplots(2, 2, figsize=(11, 9.5), constrained_layout=True)
for col, (scores, weights, label) in enumerate([(scores_raw, weights_raw, "unscaled: $QK^T$"),
                                               (scores_scaled, weights_scaled, "scaled: $QK^T/\\sqrt{d_k}$")]):
    limit = np.abs(scores).max()  # symmetric colour range: white is a score of 0
    draw_heatmap(axes[0, col], scores, f"scores, {label}", cbar_label="score", cmap="RdBu_r",
                 vmin=-limit, vmax=limit, fmt="{:.1f}")
    draw_heatmap(axes[1, col], weights, f"weights, softmax of {label}", cbar_label="attention weight",
                 vmin=0.0, vmax=1.0)
fig.suptitle("Unit-variance q and k, T = 8, $d_k$ = 64: the same scores without (left) and with (right) the scale")
plt.show()

# %% [markdown]
# *Figure: top, the scores (note the two colour scales: about $\pm 20$ on the left, $\pm 2.5$ on
# the right); bottom, the attention weights on a common 0 to 1 scale. The two score matrices hold
# the same pattern, only the size differs, yet the unscaled weights (bottom left) are mostly a
# single bright cell per row while the scaled ones (bottom right) spread over several keys.*

# %%
fig, ax = plt.subplots(figsize=(8, 4), constrained_layout=True)
rows = np.arange(T)
_ = ax.bar(rows - 0.2, entropy_raw, width=0.4, label="unscaled")
_ = ax.bar(rows + 0.2, entropy_scaled, width=0.4, label="scaled by $1/\\sqrt{d_k}$")
_ = ax.axhline(np.log(T), color="black", linestyle="--", label=f"ceiling log T = {np.log(T):.3f} (uniform row)")
ax.set_xticks(rows)
ax.set_xlabel("query position (row of the weight matrix)")
ax.set_ylabel("row entropy H (nats)")
ax.set_ylim(0, np.log(T) * 1.2)
ax.set_title("Entropy of each attention row, T = 8, $d_k$ = 64")
ax.legend(loc="upper right", ncols=3, fontsize=8)
plt.show()

# %% [markdown]
# *Figure: one pair of bars per query row. An entropy of 0 is a one-hot row; the dashed line is
# the largest entropy any row of 8 weights can have. The unscaled bars are lower in every row and
# vanish in rows 1, 6 and 7.*

# %% [markdown]
# ## 3. Entropy against $d_k$
#
# One example is one example. Repeat it 200 times for each $d_k$ from 1 to 1024 (fresh
# unit-variance $Q$ and $K$ of shape $(8, d_k)$ each time) and average the entropy over all
# $200 \times 8 = 1600$ rows. The shaded bands hold the middle half of the rows (25th to 75th
# percentile).

# %%
rng = np.random.default_rng(2)
n_trials = 200
sweep = {}  # d_k -> (unscaled weights, scaled weights), each (n_trials, T, T)
for d_k in d_k_values:
    Q_batch = rng.standard_normal((n_trials, T, d_k))  # (n, T, d_k)
    K_batch = rng.standard_normal((n_trials, T, d_k))  # (n, T, d_k)
    scores_batch = Q_batch @ K_batch.transpose(0, 2, 1)  # (n, T, d_k) @ (n, d_k, T) -> (n, T, T)
    sweep[d_k] = (softmax(scores_batch), softmax(scores_batch / np.sqrt(d_k)))

entropy_sweep = {d_k: (attention_entropy(w_raw).ravel(), attention_entropy(w_scaled).ravel())
                 for d_k, (w_raw, w_scaled) in sweep.items()}  # d_k -> two (n * T,) arrays of row entropies
print("  d_k   mean H unscaled   25th percentile unscaled   mean H scaled   (log T = %.3f)" % np.log(T))
for d_k, (h_raw, h_scaled) in entropy_sweep.items():
    print(f"{d_k:5d} {h_raw.mean():14.3f} {np.percentile(h_raw, 25):24.3f} {h_scaled.mean():17.3f}")

# %%
fig, ax = plt.subplots(figsize=(10.5, 4.5), constrained_layout=True)
for index, name in [(0, "unscaled"), (1, "scaled by $1/\\sqrt{d_k}$")]:
    rows_h = np.array([entropy_sweep[d][index] for d in d_k_values])  # (len(d_k_values), n * T)
    _ = ax.plot(d_k_values, rows_h.mean(axis=1), "o-", label=f"{name}: mean over 1600 rows")
    _ = ax.fill_between(d_k_values, *np.percentile(rows_h, [25, 75], axis=1), alpha=0.2,
                        label=f"{name}: 25th to 75th percentile")
_ = ax.axhline(np.log(T), color="black", linestyle="--", label="ceiling log T (uniform row)")
ax.set_xscale("log", base=2)
ax.set_xticks(d_k_values, [str(d) for d in d_k_values])
ax.set_ylim(0, np.log(T) * 1.1)
ax.set_xlabel("$d_k$")
ax.set_ylabel("row entropy H (nats)")
ax.set_title("Entropy of attention rows against $d_k$ (T = 8, unit-variance q and k)")
ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
plt.show()

# %% [markdown]
# *Figure: the scaled curve is flat, between 1.72 and 1.81 nats for every $d_k$: the scores'
# distribution, and so the softmax's, no longer depends on $d_k$. The unscaled curve starts at
# the same point ($d_k = 1$ is the one size where the scale is 1) and falls towards 0: 0.324 at
# $d_k = 64$, 0.076 at $d_k = 1024$. The lower edge of its band says that from $d_k = 64$ on, a
# quarter of the rows have entropy below 0.02: they are one-hot.*
#
# The scaled rows do not reach the ceiling $\log T$, and they should not: attention is meant to
# prefer some keys. What the scale buys is that this preference does not change with the head
# size, so a model's behaviour at initialisation does not depend on how wide its heads are.

# %% [markdown]
# ## 4. Why saturation stops learning
#
# Training changes the scores through the gradient that reaches them from the weights. For one
# row $p = \operatorname{softmax}(s)$ of length $T$, differentiating
# $p_i = e^{s_i} / \sum_k e^{s_k}$ gives $\partial p_i / \partial s_j = p_i(\delta_{ij} - p_j)$,
# which is the $(T, T)$ Jacobian
#
# $$J = \frac{\partial p}{\partial s} = \operatorname{diag}(p) - p\,p^\top .$$
#
# A loss $L$ that depends on the weights sends back $\partial L / \partial p$, and the scores receive
# $\partial L / \partial s = J^\top \partial L / \partial p$ ($J$ is symmetric). Its size is at most
# $\lVert J \rVert_F \, \lVert \partial L / \partial p \rVert$, so if $J$ is close to zero, no loss
# can move the scores. For a one-hot row, $p = e_m$: then $\operatorname{diag}(p) = e_m e_m^\top = p p^\top$
# and $J = 0$ exactly. (Exercise 2 asks you for $J^\top \partial L / \partial p$ itself, without
# building $J$.)
#
# First, check the formula against finite differences on one row of the scaled example:

# %%
def softmax_jacobian(p):
    """Jacobian of softmax at output rows p (..., T) -> (..., T, T): diag(p) - p p^T."""
    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]  # (..., T, T)


s_row = scores_scaled[0]  # (T,) one row of scaled scores from section 2
eps = 1e-6
numeric = np.stack([(softmax(s_row + eps * e) - softmax(s_row - eps * e)) / (2 * eps)
                    for e in np.eye(T)], axis=1)  # column j: d p / d s_j by central differences, (T, T)
analytic = softmax_jacobian(softmax(s_row))  # (T, T)
print("largest |analytic - finite difference| below 1e-10:", np.abs(analytic - numeric).max() < 1e-10)

# %% [markdown]
# They agree to within $10^{-10}$. (What is left is rounding error, whose digits change from one
# machine to the next, so the cell prints the bound, not the digits.) Now compare the Jacobians
# of row 1 of section 2, the row that is one-hot without the scale:

# %%
row = 1
J_raw = softmax_jacobian(weights_raw[row])  # (T, T)
J_scaled = softmax_jacobian(weights_scaled[row])  # (T, T)
print(f"row {row}: entropy unscaled {entropy_raw[row]:.4f}, scaled {entropy_scaled[row]:.4f}")
print(f"row {row}: ||J||_F unscaled {np.linalg.norm(J_raw):.2e}, scaled {np.linalg.norm(J_scaled):.3f}")

fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), constrained_layout=True)
limit = np.abs(J_scaled).max()  # one colour scale for both panels
draw_heatmap(axes[0], J_raw, f"unscaled row {row}: J = diag(p) - p p$^T$", cbar_label="$\\partial p_i / \\partial s_j$",
             cmap="RdBu_r", vmin=-limit, vmax=limit)
draw_heatmap(axes[1], J_scaled, f"scaled row {row}: J = diag(p) - p p$^T$", cbar_label="$\\partial p_i / \\partial s_j$",
             cmap="RdBu_r", vmin=-limit, vmax=limit)
for ax in axes:
    ax.set_xlabel("key position j (score $s_j$ moved)")
    ax.set_ylabel("key position i (weight $p_i$ that responds)")
fig.suptitle(f"Softmax Jacobian of query row {row} (T = 8, $d_k$ = 64), same colour scale")
plt.show()

# %% [markdown]
# *Figure: both axes index key positions of the same query row: entry $(i, j)$ is how much weight
# $p_i$ moves when score $s_j$ moves. The saturated row's Jacobian (left) is zero to two decimals
# everywhere; the scaled row's (right) has a positive diagonal and negative off-diagonal entries,
# so raising one score takes weight from the others.*
#
# Its Frobenius norm is $1.4 \times 10^{-3}$ without the scale against 0.364 with it. Across the sweep of
# section 3, the Jacobian norm of every row:

# %%
jacobian_sweep = {d_k: (np.linalg.norm(softmax_jacobian(w_raw), axis=(-2, -1)).ravel(),
                        np.linalg.norm(softmax_jacobian(w_scaled), axis=(-2, -1)).ravel())
                  for d_k, (w_raw, w_scaled) in sweep.items()}  # d_k -> two (n * T,) arrays of ||J||_F
print("  d_k   median ||J||_F unscaled   scaled   rows with ||J||_F < 0.01: unscaled  scaled")
for d_k, (j_raw, j_scaled) in jacobian_sweep.items():
    print(f"{d_k:5d} {np.median(j_raw):21.2e} {np.median(j_scaled):9.3f}"
          f" {np.mean(j_raw < 0.01):31.1%} {np.mean(j_scaled < 0.01):7.1%}")

# %%
fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
for index, name, marker in [(0, "unscaled", "o-"), (1, "scaled by $1/\\sqrt{d_k}$", "s-")]:
    norms = np.array([jacobian_sweep[d][index] for d in d_k_values])  # (len(d_k_values), n * T)
    _ = ax.plot(d_k_values, np.median(norms, axis=1), marker, label=f"{name}: median row")
    _ = ax.plot(d_k_values, norms.mean(axis=1), marker[0] + ":", color=ax.lines[-1].get_color(),
                label=f"{name}: mean row")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xticks(d_k_values, [str(d) for d in d_k_values])
ax.set_xlabel("$d_k$")
ax.set_ylabel("$\\|J\\|_F$ of a softmax row (log scale)")
ax.set_title("Size of the softmax Jacobian against $d_k$ (T = 8, 1600 rows per point)")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# *Figure: logarithmic axes. With the scale, the median row's Jacobian norm stays between 0.35
# and 0.37 for every $d_k$ (the scaled mean, dotted, lies on top of it). Without the scale, the
# median falls from 0.35 at $d_k = 1$ to 0.064 at $d_k = 64$ and $1.1 \times 10^{-6}$ at
# $d_k = 1024$. The unscaled mean (dotted) falls more slowly because a few rows whose two largest
# scores happen to nearly tie keep a large Jacobian.*
#
# At $d_k = 64$, 31.6% of the unscaled rows have $\lVert J \rVert_F < 0.01$: for those queries the
# gradient reaching the scores is under 1% of the gradient arriving from above, and they keep
# attending to whichever key happened to win at initialisation. With the scale, 0.1% of the rows
# fall below 0.01 at $d_k = 2$ and none at any other $d_k$.

# %% [markdown]
# ## 5. A common mistake: scaled, and still saturated
#
# A widely copied demonstration of the problem draws the projections with `np.random.randn`,
# standard normal entries, at $T = 4$ and $D = 64$, then computes the scores and the entropy of
# row 0. It is worth running, because it goes wrong in an instructive way. The version below adds
# `np.random.seed(0)`, so that every run draws the same numbers, and runs the naive softmax inside
# `np.errstate`, because it is about to overflow; otherwise it is the usual code.

# %%
np.random.seed(0)
T, D = 4, 64
W_q = np.random.randn(D, D)
W_k = np.random.randn(D, D)

x = np.random.randn(T, D)
Q = x @ W_q
K = x @ W_k

scores = Q @ K.T
print(f"score range: {scores.min():.1f} to {scores.max():.1f}")

with np.errstate(over="ignore", invalid="ignore"):  # exp(757) overflows: keep the RuntimeWarning off stderr
    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    print(f"entropy of row 0: {-(weights[0] * np.log(weights[0] + 1e-10)).sum():.2g}")

# %% [markdown]
# With these draws the scores span $-254$ to $757$: hundreds, against about $\pm 20$ for the
# unit-variance queries and keys of section 2. Row 0's entropy prints as a tiny *negative* number:
# the row is one-hot, and the `+ 1e-10` inside the log (a common shortcut around $\log 0$) turns
# $1 \cdot \log 1 = 0$ into $-\log(1 + 10^{-10})$. The helper `attention_entropy` skips zero
# weights instead and never goes below 0. Row 0 hides a worse problem in row 1:

# %%
print("weights (naive exp):")
print(np.round(weights, 3))
print("rows containing nan:", np.flatnonzero(np.isnan(weights).any(axis=-1)))
print("largest score in each row:", np.round(scores.max(axis=-1), 1))
print(f"np.exp overflows above {np.log(np.finfo(np.float64).max):.1f}")

# %% [markdown]
# Row 1's largest score is 757.3, above 709.8, so `np.exp` returns `inf` there and `inf / inf` is
# `nan`. The usual next step is to divide by $\sqrt{D}$, expecting the entropy to come back near
# $\log T = \log 4 = 1.39$:

# %%
scores = Q @ K.T / np.sqrt(D)

weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
print(f"entropy of row 0: {-(weights[0] * np.log(weights[0] + 1e-10)).sum():.2g}")

print(f"scaled score range: {scores.min():.1f} to {scores.max():.1f}")
print("every row's entropy (exact):", np.round(attention_entropy(weights), 4), f"  log T = {np.log(T):.3f}")

# %% [markdown]
# The overflow is gone (the largest scaled score is 94.7), but the entropy of row 0 is still 0
# and no row gets above 0.03. **The scale did not fix the saturation here.**
#
# ### The assumption that broke
#
# The variance argument of section 1 assumed that the entries of $q$ and $k$ have variance 1.
# Here each query entry is a sum over the $D$ input features, $q_j = \sum_{i=1}^{D} x_i\, W_{q,ij}$,
# with $x_i$ and $W_{q,ij}$ independent, mean 0 and variance 1. So
#
# $$\operatorname{Var}(q_j) = \sum_{i=1}^{D} \operatorname{Var}(x_i)\operatorname{Var}(W_{q,ij}) = D ,$$
#
# and the same holds for $k_j$. On this draw:

# %%
print(f"variance of the entries: x {x.var():.2f}, W_q {W_q.var():.2f}, W_k {W_k.var():.2f}")
print(f"variance of the entries: Q {Q.var():.1f}, K {K.var():.1f}   (D = {D})")

# %% [markdown]
# The inputs and weights have variance near 1 (0.85 to 0.98), the queries and keys 56.4 and 57.6:
# near $D = 64$ (four rows of $x$ are a small sample), and nowhere near 1.
#
# For two different positions, $q$ and $k$ come from independent inputs and independent weight
# matrices, and the argument of section 1 applies with $\mathbb{E}[q_j^2] = \mathbb{E}[k_j^2] = D$
# instead of 1 (entries $j \ne l$ are uncorrelated because the columns of $W$ are independent):
#
# $$\operatorname{Var}(q \cdot k) = \sum_{j=1}^{D} \mathbb{E}[q_j^2]\,\mathbb{E}[k_j^2] = D \cdot D^2 = D^3 ,
#   \qquad \operatorname{Var}\!\left(\frac{q \cdot k}{\sqrt{D}}\right) = D^2 .$$
#
# At $D = 64$ the *scaled* scores have standard deviation $D = 64$: eight times the unscaled
# scores of section 2, which were already saturated. One draw cannot show a variance, so repeat
# the setup 300 times for each $D$ from 4 to 128 (fresh $W_q$, $W_k$ and $x$, $T = 8$) and take
# the variance of the scores between different positions:

# %%
rng = np.random.default_rng(3)
D_values = 2 ** np.arange(2, 8)  # 4, 8, ..., 128
n_setups, T_sim = 300, 8
different = ~np.eye(T_sim, dtype=bool)  # (T, T) mask: pairs of different positions

pair_scores = {}  # D -> scores q . k between different positions, (n * T * (T - 1),)
for D_sim in D_values:
    x_sim = rng.standard_normal((n_setups, T_sim, D_sim))  # (n, T, D) unit-variance inputs
    Wq_sim = rng.standard_normal((n_setups, D_sim, D_sim))  # (n, D, D): std 1, the common mistake
    Wk_sim = rng.standard_normal((n_setups, D_sim, D_sim))
    if D_sim == 64:
        draws_64 = (x_sim, Wq_sim, Wk_sim)  # kept for the repair below
    s_sim = (x_sim @ Wq_sim) @ (x_sim @ Wk_sim).transpose(0, 2, 1)  # (n, T, D) @ (n, D, T) -> (n, T, T)
    pair_scores[D_sim] = s_sim[:, different]

variances = {"W ~ N(0, 1), unscaled": [pair_scores[d].var() for d in D_values],
             "W ~ N(0, 1), scaled by 1/sqrt(D)": [(pair_scores[d] / np.sqrt(d)).var() for d in D_values]}
print("   D   Var(q.k)   theory D^3   Var(q.k / sqrt(D))   theory D^2")
for i, D_sim in enumerate(D_values):
    print(f"{D_sim:4d} {variances['W ~ N(0, 1), unscaled'][i]:10.4g} {D_sim ** 3:12d}"
          f" {variances['W ~ N(0, 1), scaled by 1/sqrt(D)'][i]:20.4g} {D_sim ** 2:12d}")

# %% [markdown]
# At $D = 64$ the measured variances are $2.58 \times 10^5$ against $D^3 = 262144$, and 4028
# after scaling against $D^2 = 4096$: the scale removes one factor of $D$ out of three.
#
# ### The repair: initialise with standard deviation $1/\sqrt{D}$
#
# Drawing $W$ with standard deviation $1/\sqrt{D}$ instead of 1 gives
# $\operatorname{Var}(q_j) = D \cdot \tfrac{1}{D} = 1$, the setting of section 1. It needs no new
# draws: it is $W / \sqrt{D}$, which multiplies $q$ and $k$ by $1/\sqrt{D}$ each, and so every
# score by exactly $1/D$. Check that on the same draws, then measure the variances:

# %%
x_sim, Wq_sim, Wk_sim = draws_64  # (n, T, 64), (n, 64, 64), (n, 64, 64)
repaired = (x_sim @ (Wq_sim / 8.0)) @ (x_sim @ (Wk_sim / 8.0)).transpose(0, 2, 1)  # (n, T, T), sqrt(64) = 8
print("scores with W / sqrt(D) equal the std-1 scores divided by D:",
      np.allclose(repaired[:, different], pair_scores[64] / 64))

variances["W ~ N(0, 1/D), unscaled"] = [(pair_scores[d] / d).var() for d in D_values]
variances["W ~ N(0, 1/D), scaled by 1/sqrt(D)"] = [(pair_scores[d] / d / np.sqrt(d)).var() for d in D_values]
print("   D   Var(q.k), W ~ N(0, 1/D)   scaled by 1/sqrt(D)")
for i, D_sim in enumerate(D_values):
    print(f"{D_sim:4d} {variances['W ~ N(0, 1/D), unscaled'][i]:24.4g}"
          f" {variances['W ~ N(0, 1/D), scaled by 1/sqrt(D)'][i]:21.4g}")
slopes = {name: np.polyfit(np.log(D_values), np.log(v), 1)[0] for name, v in variances.items()}
for name, slope in slopes.items():
    print(f"log-log slope, {name:34s}: {slope:5.2f}")

# %% [markdown]
# With the repaired initialisation the unscaled variance is close to $D$ (62.9 at $D = 64$), the
# situation of section 1, and the scaled one stays between 0.91 and 1.01 for every $D$. All four
# lines on one plot:

# %%
fig, ax = plt.subplots(figsize=(8, 5), constrained_layout=True)
for (name, v), marker in zip(variances.items(), ["o-", "s-", "^-", "D-"], strict=True):
    _ = ax.loglog(D_values, v, marker, label=f"{name}: slope {slopes[name]:.2f}")
_ = ax.loglog(D_values, D_values.astype(float) ** 3, ":", color="grey", label="theory: $D^3$")
ax.set_xscale("log", base=2)
ax.set_xticks(D_values, [str(d) for d in D_values])
ax.set_xlabel("D (input width = head size)")
ax.set_ylabel("variance of q·k between different positions")
ax.set_title("Std-1 weights: the score variance grows like $D^3$; the initialisation decides the exponent")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# *Figure: logarithmic axes, one line per combination of initialisation and scaling. With std-1
# weights the variance follows $D^3$ (slope 3.02), and dividing by $\sqrt{D}$ only lowers it to
# slope 2.02. With std $1/\sqrt{D}$ weights the unscaled variance grows like $D$ (slope 1.02), and
# the scaled one is flat at 1 (slope 0.02).*
#
# Back to the single draw at the start of this section: its matrices, with the softmax computed
# stably (max subtraction), next to the same $x$ and $W$ with the $1/\sqrt{D}$ initialisation.

# %%
scores_std1 = Q @ K.T  # (T, D) @ (D, T) -> (T, T), std-1 weights
Q_init, K_init = Q / np.sqrt(D), K / np.sqrt(D)  # the same draw with W / sqrt(D): std 1/sqrt(D) weights
panels = [
    ("std-1 W, unscaled", scores_std1),
    ("std-1 W, / sqrt(D)", scores_std1 / np.sqrt(D)),
    ("std 1/sqrt(D) W, / sqrt(D)", Q_init @ K_init.T / np.sqrt(D)),  # (T, D) @ (D, T) -> (T, T)
]
fig, axes = plt.subplots(2, 3, figsize=(14, 8.5), constrained_layout=True)
for col, (label, s) in enumerate(panels):
    limit = np.abs(s).max()
    draw_heatmap(axes[0, col], s, f"scores: {label}", cbar_label="score", cmap="RdBu_r",
                 vmin=-limit, vmax=limit, fmt="{:.0f}" if limit > 10 else "{:.2f}")
    w = softmax(s)
    entropies = ", ".join(f"{h:.2f}" for h in attention_entropy(w))
    draw_heatmap(axes[1, col], w, f"weights: {label}\nrow entropies {entropies}",
                 cbar_label="attention weight", vmin=0.0, vmax=1.0)
fig.suptitle("One draw (np.random.seed(0), T = 4, D = 64): only fixing the initialisation makes the rows soft")
plt.show()

# %% [markdown]
# *Figure: top, scores (each panel has its own colour scale: hundreds, tens, about $\pm 1$);
# bottom, weights on a common 0 to 1 scale, with each row's entropy in the title. With std-1
# weights the rows are one-hot with or without the division (left, middle). With the same random
# draw and $1/\sqrt{D}$ initialisation the scores are of order 1 and every row spreads its weight
# (right).*
#
# ### What this says about initialisation
#
# Two sums, two square roots. A projection $q_j = \sum_{i=1}^{C} x_i W_{ij}$ sums over the $C$
# input features; initialising $W$ with standard deviation $1/\sqrt{C}$ keeps $\operatorname{Var}(q_j)$
# equal to the input's variance. The score $q \cdot k$ then sums over the $d_k$ entries of a head;
# the $1/\sqrt{d_k}$ in attention keeps that at unit variance. The attention formula takes care of
# the second sum only. The first is the job of the initialisation, and std-1 `randn` weights skip it.
#
# GPT-2 draws the weights of its query, key and value projections from $\mathcal{N}(0, 0.02^2)$,
# a constant rather than a formula in $C$, and its attention sees LayerNorm outputs, which have
# unit variance per position at initialisation. At GPT-2 small's width $C = 768$ (12 heads of
# $d_k = 64$), $1/\sqrt{C} = 0.036$, so 0.02 is on the small side of the variance-preserving
# choice. Simulate 40 heads at initialisation for each of three standard deviations of the weights:

# %%
rng = np.random.default_rng(4)
C, d_head, T_gpt, n_heads_sim = 768, 64, 8, 40
different = ~np.eye(T_gpt, dtype=bool)  # (T, T) mask: pairs of different positions
init_weights = {}  # init name -> (n, T, T) attention weights, for the heatmaps below
print(f"GPT-2 small width C = {C}, head size d_k = {d_head}, T = {T_gpt}; 1/sqrt(C) = {1 / np.sqrt(C):.4f}")
for name, std in [("GPT-2, std 0.02", 0.02), ("std 1/sqrt(C)", 1 / np.sqrt(C)), ("std 1 (common mistake)", 1.0)]:
    x_gpt = rng.standard_normal((n_heads_sim, T_gpt, C))  # (n, T, C) unit-variance inputs
    Wq_gpt = rng.standard_normal((n_heads_sim, C, d_head)) * std  # (n, C, d_k): one head's query projection
    Wk_gpt = rng.standard_normal((n_heads_sim, C, d_head)) * std  # (n, C, d_k)
    q_gpt = x_gpt @ Wq_gpt  # (n, T, C) @ (n, C, d_k) -> (n, T, d_k)
    k_gpt = x_gpt @ Wk_gpt  # (n, T, d_k)
    s_gpt = q_gpt @ k_gpt.transpose(0, 2, 1) / np.sqrt(d_head)  # (n, T, d_k) @ (n, d_k, T) -> (n, T, T)
    init_weights[name] = softmax(s_gpt)
    print(f"{name:22s}: Var(q_j) = {q_gpt.var():8.3f}   std of scaled scores = {s_gpt[:, different].std():8.3f}"
          f"   mean row entropy = {attention_entropy(init_weights[name]).mean():.3f} (log T = {np.log(T_gpt):.3f})")

# %% [markdown]
# With std 0.02, $q_j$ has variance 0.31 instead of 1, the scaled scores have standard deviation
# 0.31, and the mean row entropy is 2.038, close to the ceiling 2.079: GPT-2's heads start nearly
# uniform and have to *learn* to focus, with a Jacobian far from zero. With std $1/\sqrt{C}$ the
# scaled scores have standard deviation 0.99, the unit variance of section 1. With std 1 they have
# standard deviation 754, and the mean entropy is 0.000 to three decimals: saturated before
# training starts, with gradients too small to ever change that. The first simulated head of each:

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.8), constrained_layout=True)
for ax, (name, w) in zip(axes, init_weights.items(), strict=True):
    draw_heatmap(ax, w[0], f"{name}\nthis head's mean row entropy {attention_entropy(w[0]).mean():.2f}",
                 cbar_label="attention weight", vmin=0.0, vmax=1.0)
fig.suptitle("One scaled attention head of width C = 768 at initialisation ($d_k$ = 64, T = 8)")
plt.show()

# %% [markdown]
# *Figure: the weights of the first simulated head for each initialisation, on a common 0 to 1
# scale. At std 0.02 (left) the rows are close to uniform (1/8 = 0.125 per key; no cell above
# 0.32); at $1/\sqrt{C}$ (middle) rows prefer some keys; at std 1 (right) every row is one-hot.*
#
# So the $\sqrt{d_k}$ is a correct and necessary fix, but it only corrects the growth with $d_k$.
# It relies on queries and keys of unit variance (or less), which is the initialisation's job.

# %% [markdown]
# ## 6. Two fixes for two problems
#
# Lesson 1 fixed the softmax's overflow by subtracting each row's maximum. That fix and the
# $\sqrt{d_k}$ are often confused, because both "make big scores behave". They solve different
# problems:
#
# - **Overflow** is a floating-point failure: `np.exp(s)` exceeds the largest float64 (at
#   $s > 709.8$) and the weights become `nan`. Max subtraction prevents it. It changes nothing
#   else, because the softmax is unchanged by a constant shift of a row:
#   $\operatorname{softmax}(s - m) = \operatorname{softmax}(s)$.
# - **Saturation** is a property of the exact mathematical softmax: when the scores of a row are far
#   apart, the row is one-hot and $J \approx 0$. Because max subtraction returns exactly the same
#   weights, it cannot change saturation. Only making the scores smaller can, which is what the
#   $\sqrt{d_k}$ does (and, for std-1 weights, the initialisation).
#
# All four combinations on section 5's single draw, plus the repaired initialisation:

# %%
def naive_softmax(s):
    """Softmax without max subtraction: overflows for scores above about 709.8."""
    with np.errstate(over="ignore", invalid="ignore"):  # the overflow is the point: keep stderr clean
        return np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True)


raw = Q @ K.T  # (T, T) section 5's unscaled scores, std-1 weights
variants = [
    ("std-1 W, unscaled, naive exp", naive_softmax(raw)),
    ("std-1 W, unscaled, max subtracted", softmax(raw)),
    ("std-1 W, / sqrt(D), naive exp", naive_softmax(raw / np.sqrt(D))),
    ("std-1 W, / sqrt(D), max subtracted", softmax(raw / np.sqrt(D))),
    ("std 1/sqrt(D) W, / sqrt(D), max subtracted", softmax(raw / D / np.sqrt(D))),
]
print(f"{'':44s} {'nan rows':>8s}   row entropies (log T = {np.log(T):.3f})")
for name, w in variants:
    nan_rows = np.isnan(w).any(axis=-1)  # (T,)
    h = attention_entropy(np.nan_to_num(w, nan=0.0))  # (T,)
    h[nan_rows] = np.nan  # an overflowed row has no entropy
    print(f"{name:44s} {int(nan_rows.sum()):8d}   {np.round(h, 4)}")

finite = ~np.isnan(variants[0][1]).any(axis=-1)  # the rows where the naive softmax did not overflow
print("naive and max-subtracted weights identical where the naive one is finite:",
      np.allclose(variants[0][1][finite], variants[1][1][finite]),
      "| after / sqrt(D):", np.allclose(variants[2][1], variants[3][1]))

# %% [markdown]
# Read the table top to bottom. The naive softmax of the raw scores has one `nan` row (row 1).
# Max subtraction removes the `nan`, but every row's entropy is still 0: where the naive weights
# were finite, the two are identical. Dividing by $\sqrt{D}$ lowers the scores below the overflow
# threshold, so here the naive softmax no longer overflows, yet all entropies stay below 0.03.
# Only the repaired initialisation together with the scale gives soft rows, with entropies from
# 1.02 to 1.38 against $\log 4 = 1.386$. Real code uses both fixes: max subtraction so that no
# input can produce `nan`, and the $\sqrt{d_k}$ (with a sensible initialisation) so that the
# softmax stays trainable.

# %% [markdown]
# ## Practice exercises
#
# Each exercise asks for one function (the quiz asks for four letters). Replace
# `raise NotImplementedError()` with your code, run the cell, then run the test cell below it. The
# visible checks tell you what a failure most likely means; when your notebook is graded, hidden
# tests call your function again on fresh inputs, so write the general function, not one that
# fits the visible examples.
#
# ### Exercise 1: scaled dot-product attention for any batch shape (3 points)
#
# Write `scaled_dot_product_attention(Q, K, V)` for `Q` of shape `(..., T_q, d_k)`, `K` of shape
# `(..., T_k, d_k)` and `V` of shape `(..., T_k, d_v)`, where `...` is any number of leading batch
# axes (none, `(B,)`, `(B, h)`, ...), the same for all three. Return the pair `(out, weights)`:
#
# $$\text{weights} = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) \text{ of shape } (\dots, T_q, T_k),
#   \qquad \text{out} = \text{weights}\; V \text{ of shape } (\dots, T_q, d_v).$$
#
# $K^\top$ swaps only the last two axes of `K`. The softmax must not overflow for large scores.

# %% nbgrader={"grade": false, "grade_id": "scaled_dot_product_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def scaled_dot_product_attention(Q, K, V):
    """Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v) -> (out (..., T_q, d_v), weights (..., T_q, T_k))."""
    ### BEGIN SOLUTION
    d_k = Q.shape[-1]
    logits = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    logits = logits - logits.max(axis=-1, keepdims=True)  # stable: every exponent <= 0
    attn = np.exp(logits)
    attn = attn / attn.sum(axis=-1, keepdims=True)  # each query row sums to 1 over the keys
    return attn @ V, attn  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_scaled_dot_product_attention", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_scaled_dot_product_attention(Q, K, V):
    """Compare with a direct computation and name the likely mistake."""
    d_k = Q.shape[-1]
    raw_scores = np.einsum("...qd,...kd->...qk", Q, K)  # (..., T_q, T_k) before any scaling

    def stable_softmax(s, axis=-1):
        e = np.exp(s - s.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    try:
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            result = scaled_dot_product_attention(Q, K, V)
    except FloatingPointError as err:
        raise AssertionError(f"the softmax overflowed on large scores ({err}): subtract each row's "
                             "maximum before np.exp") from None
    except ValueError as err:
        raise AssertionError(f"shapes did not line up for Q {Q.shape}, K {K.shape} ({err}): with batch axes, "
                             "transpose only the last two axes of K (np.swapaxes(K, -1, -2)); K.T reverses "
                             "every axis") from None
    assert isinstance(result, tuple) and len(result) == 2, "return the pair (out, weights)"
    out, weights = (np.asarray(a) for a in result)
    expected = stable_softmax(raw_scores / np.sqrt(d_k))
    assert weights.shape == expected.shape, (
        f"weights should have shape (..., T_q, T_k) = {expected.shape}, got {weights.shape}")
    if not np.allclose(weights, expected, atol=1e-10):
        if np.allclose(weights, stable_softmax(raw_scores), atol=1e-10):
            raise AssertionError("the weights are softmax(Q K^T) without the scale: divide the scores by sqrt(d_k)")
        if np.allclose(weights, stable_softmax(raw_scores / d_k), atol=1e-10):
            raise AssertionError("the scores were divided by d_k; divide by sqrt(d_k), the standard "
                                 "deviation of q . k for unit-variance q and k")
        if np.allclose(weights, stable_softmax(raw_scores / np.sqrt(d_k), axis=-2), atol=1e-10):
            raise AssertionError("each COLUMN of weights sums to 1: the softmax ran over the query axis; "
                                 "normalise over the last axis (keys), so each query's row sums to 1")
        raise AssertionError("weights differ from softmax(Q K^T / sqrt(d_k)) over the last axis")
    expected_out = expected @ V
    assert out.shape == expected_out.shape, f"out should have shape (..., T_q, d_v) = {expected_out.shape}, got {out.shape}"
    assert np.allclose(out, expected_out, atol=1e-10), "out should be weights @ V"


_rng = np.random.default_rng(2024)
check_scaled_dot_product_attention(_rng.standard_normal((5, 16)), _rng.standard_normal((5, 16)),
                                   _rng.standard_normal((5, 16)))  # (T, d): no batch axis
check_scaled_dot_product_attention(_rng.standard_normal((2, 3, 5, 16)), _rng.standard_normal((2, 3, 5, 16)),
                                   _rng.standard_normal((2, 3, 5, 7)))  # (B, h, T, d), d_v != d_k
check_scaled_dot_product_attention(_rng.standard_normal((4, 16)) * 40, _rng.standard_normal((4, 16)) * 40,
                                   _rng.standard_normal((4, 3)))  # scores in the thousands
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: the gradient that reaches the scores (2 points)
#
# Section 4 measured the softmax Jacobian $J$ to show that a saturated row stops learning. Training
# never builds that `(T, T)` matrix: all it needs is the gradient that arrives at the scores. Write
# `softmax_backward(p, grad_p)`: given attention weights `p` of shape `(..., T)`, each row a
# softmax output, and the gradient `grad_p` $= \partial L / \partial p$ of some loss, of the same
# shape, return the gradient with respect to the scores, row by row:
#
# $$\frac{\partial L}{\partial s} = J^\top \frac{\partial L}{\partial p}, \qquad
#   J = \operatorname{diag}(p) - p\,p^\top , \qquad \text{shape } (\dots, T).$$
#
# Work out entry $i$ of $J^\top g$ for one row with pen and paper first: the result needs only
# elementwise products and one sum per row, and no `(T, T)` matrix. Every leading axis is a batch
# axis (one row, `(B, T)`, `(B, h, T)`, ...). Do not modify the inputs.

# %% nbgrader={"grade": false, "grade_id": "softmax_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def softmax_backward(p, grad_p):
    """dL/ds for softmax rows: p (..., T) softmax outputs, grad_p (..., T) = dL/dp -> (..., T)."""
    ### BEGIN SOLUTION
    inner = (p * grad_p).sum(axis=-1, keepdims=True)  # (..., 1): p . g, one number per row
    return p * (grad_p - inner)  # (diag(p) - p p^T) g = p * g - p (p . g), row by row
    ### END SOLUTION


# %% [markdown]
# With your function, give each row of section 2's weights a random upstream gradient (the same
# for the unscaled and the scaled weights) and compare the size of what reaches the scores:

# %%
g_demo = np.random.default_rng(5).standard_normal(weights_raw.shape)  # (8, 8): a dL/dp for every row
grad_raw = softmax_backward(weights_raw, g_demo)  # (8, 8): dL/ds, unscaled rows
grad_scaled = softmax_backward(weights_scaled, g_demo)  # (8, 8): dL/ds, scaled rows
print("|dL/ds| per row, unscaled:", np.round(np.linalg.norm(grad_raw, axis=-1), 4))
print("|dL/ds| per row, scaled:  ", np.round(np.linalg.norm(grad_scaled, axis=-1), 4))
print("every row of dL/ds sums to 0:", np.allclose(grad_raw.sum(axis=-1), 0), np.allclose(grad_scaled.sum(axis=-1), 0))

# %% [markdown]
# Rows 1, 6 and 7, the one-hot rows of section 2, pass at most 0.0017 back to their scores
# without the scale; with it, every row passes between 0.12 and 0.42. (Rows 4 and 5, the least
# saturated unscaled rows, pass about as much as scaled ones.) Each row of the gradient sums to 0:
# adding the same number to every score of a row leaves its softmax unchanged, so no loss can
# ask for that.

# %% nbgrader={"grade": true, "grade_id": "test_softmax_backward", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def check_softmax_backward(p, grad_p):
    """Properties every dL/ds has, whatever the rows: shape, inputs kept, rows summing to 0, linearity in g."""
    p_before, g_before = p.copy(), grad_p.copy()
    got = softmax_backward(p, grad_p)
    assert np.array_equal(p, p_before) and np.array_equal(grad_p, g_before), (
        "softmax_backward modified its inputs: compute a new array (g = g - ..., not g -= ...)")
    got = np.asarray(got, dtype=float)
    assert got.shape == p.shape, (
        f"expected one gradient per score, shape {p.shape}, got {got.shape}: keep the row axis (keepdims=True)")
    if np.allclose(got, p * grad_p, atol=1e-10) and not np.allclose(got.sum(axis=-1), 0, atol=1e-10):
        raise AssertionError("that is diag(p) g alone: the - p p^T part of J also subtracts p * (p . g) in every row")
    assert np.allclose(got.sum(axis=-1), 0, atol=1e-10), (
        "every row of dL/ds should sum to 0 (adding a constant to a row's scores leaves its softmax unchanged); "
        "p . g is one number per ROW: sum over the last axis only, keepdims=True")
    shifted = np.asarray(softmax_backward(p, g_before + 3.0), dtype=float)  # the same g plus a constant per row
    assert np.allclose(shifted, got, atol=1e-10), (
        "adding the same number to every entry of g should change nothing: p . g then grows by exactly that number")
    doubled = np.asarray(softmax_backward(p, 2 * g_before), dtype=float)
    assert np.allclose(doubled, 2 * got, atol=1e-10), "dL/ds should be linear in g: doubling g doubles it"


# Worked by hand, two rows: p . g = 0.25 and 3, then p * (g - p . g) entry by entry.
_p = np.array([[0.25, 0.75], [0.5, 0.5]])
_g = np.array([[1.0, 0.0], [2.0, 4.0]])
_got = np.asarray(softmax_backward(_p, _g), dtype=float)
assert _got.shape == (2, 2), f"expected shape (2, 2), got {_got.shape}"
if not np.allclose(_got, [[0.1875, -0.1875], [-0.5, 0.5]]):
    if np.allclose(_got, [[-0.1875, 0.1875], [0.5, -0.5]]):
        raise AssertionError("the sign is flipped: J = diag(p) - p p^T gives p * g - p * (p . g)")
    if np.allclose(_got, [[0.75, -0.25], [-1.0, 1.0]]):
        raise AssertionError("close: J^T g = p * g - p * (p . g); multiply the whole difference by p")
assert np.allclose(_got, [[0.1875, -0.1875], [-0.5, 0.5]]), (
    f"for p = [0.25, 0.75], g = [1, 0] expected [0.1875, -0.1875] (and [-0.5, 0.5] for the second row), got {_got}")
_rng = np.random.default_rng(55)
_s = _rng.standard_normal((2, 3, 5)) * 2  # (2, 3, 5) scores
_p = np.exp(_s - _s.max(axis=-1, keepdims=True))
_p = _p / _p.sum(axis=-1, keepdims=True)  # a batch of soft rows
check_softmax_backward(_p, _rng.standard_normal((2, 3, 5)))
assert np.allclose(softmax_backward(np.eye(4), _rng.standard_normal((4, 4))), 0), (
    "one-hot rows have J = 0, so no gradient at all reaches their scores")
_g = _rng.standard_normal(6)
_expected = (_g - _g.mean()) / 6  # a uniform row, worked by hand
assert np.allclose(softmax_backward(np.full(6, 1 / 6), _g.copy()), _expected), (
    "a uniform row (p = 1/6 everywhere, no batch axis) should give (g - mean(g)) / 6")
check_softmax_backward(np.full(6, 1 / 6), _rng.standard_normal(6))
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: predict the size of the scores (2 points)
#
# Generalise section 5's derivation. Inputs $x, x' \in \mathbb{R}^{d_\text{model}}$ at two different
# positions have independent entries with mean 0 and variance 1. The query and key projections
# $W_q, W_k$ have shape $(d_\text{model}, d_k)$ and independent entries with mean 0 and standard
# deviation `weight_std`. With $q = x W_q$ and $k = x' W_k$, write
# `predicted_score_std(d_model, d_k, weight_std, scaled)` that returns the standard deviation of
# the score $q \cdot k$ (when `scaled` is false) or of $q \cdot k / \sqrt{d_k}$ (when `scaled` is
# true).
#
# Derive the formula with pen and paper and return its value (tests accept 1% relative error);
# simulate only to check yourself. Section 5's numbers are a special case: $d_\text{model} = d_k = 64$
# and `weight_std` 1 give variance $64^3$ before scaling.

# %% nbgrader={"grade": false, "grade_id": "predicted_score_std", "locked": false, "schema_version": 3, "solution": true, "task": false}
def predicted_score_std(d_model, d_k, weight_std, scaled):
    """Standard deviation of q . k (or q . k / sqrt(d_k) if scaled) for the setup described above."""
    ### BEGIN SOLUTION
    var_entry = d_model * weight_std ** 2  # Var(q_j) = sum over d_model inputs of 1 * weight_std^2
    var_score = d_k * var_entry ** 2  # d_k independent products q_j k_j, each of variance var_entry^2
    if scaled:
        var_score /= d_k
    return float(np.sqrt(var_score))
    ### END SOLUTION


# %% [markdown]
# Check your formula against a simulation of the setup (not graded):

# %%
def simulated_score_std(d_model, d_k, weight_std, scaled, n_weights=100, n_pairs=50, sim_seed=0):
    """The standard deviation of q . k measured over n_weights draws of (W_q, W_k), n_pairs of (x, x') each."""
    sim_rng = np.random.default_rng(sim_seed)
    W_q_sim = sim_rng.standard_normal((n_weights, d_model, d_k)) * weight_std  # (n_w, d_model, d_k)
    W_k_sim = sim_rng.standard_normal((n_weights, d_model, d_k)) * weight_std  # (n_w, d_model, d_k)
    x_a = sim_rng.standard_normal((n_weights, n_pairs, d_model))  # (n_w, n_pairs, d_model): first position
    x_b = sim_rng.standard_normal((n_weights, n_pairs, d_model))  # (n_w, n_pairs, d_model): second position
    q_sim = x_a @ W_q_sim  # (n_w, n_pairs, d_model) @ (n_w, d_model, d_k) -> (n_w, n_pairs, d_k)
    k_sim = x_b @ W_k_sim  # (n_w, n_pairs, d_k)
    dots = (q_sim * k_sim).sum(axis=-1)  # (n_w, n_pairs)
    return float((dots / np.sqrt(d_k) if scaled else dots).std())


for args in [(64, 64, 1.0, False), (64, 64, 1.0, True), (96, 32, 0.1, False), (768, 64, 0.02, True)]:
    print(f"d_model, d_k, weight_std, scaled = {args}: predicted {predicted_score_std(*args):9.4f}, "
          f"simulated {simulated_score_std(*args):9.4f}")

# %% nbgrader={"grade": true, "grade_id": "test_predicted_score_std", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def check_predicted_score_std(d_model, d_k, weight_std, scaled, expected):
    """Compare with the exact value and name the likely mistake."""
    got = predicted_score_std(d_model, d_k, weight_std, scaled)
    assert np.isscalar(got) or np.ndim(got) == 0, f"return one number, got {type(got).__name__}"
    got = float(got)
    case = f"d_model={d_model}, d_k={d_k}, weight_std={weight_std}, scaled={scaled}"
    if not np.isclose(got, expected, rtol=0.01):
        if np.isclose(got, expected ** 2, rtol=0.01):
            raise AssertionError(f"{case}: you returned the variance; return the standard deviation")
        if np.isclose(got, 1.0 if scaled else np.sqrt(d_k), rtol=0.01):
            raise AssertionError(f"{case}: that is the answer for unit-variance q and k; here each q_j is a "
                                 "sum of d_model terms with weights of std weight_std")
        if np.isclose(got, expected * np.sqrt(d_k) if scaled else expected / np.sqrt(d_k), rtol=0.01):
            raise AssertionError(f"{case}: check the scaled flag: scaled=True divides q . k by sqrt(d_k)")
        raise AssertionError(f"{case}: got {got:.4g}, which is not the predicted standard deviation; "
                             "redo Var(q_j) for this weight_std and d_model, then Var(q . k)")


check_predicted_score_std(64, 64, 1.0, False, 512.0)  # section 5: Var = D^3 = 64^3
check_predicted_score_std(64, 64, 1.0, True, 64.0)  # section 5: Var = D^2 after the scale
check_predicted_score_std(64, 64, 0.125, True, 1.0)  # std 1/sqrt(D) weights: back to unit variance
print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 4: quiz (2 points)
#
# Answer each question with one letter, `"a"`, `"b"`, `"c"` or `"d"`: in the cell below the
# questions, replace the two placeholder lines with four assignments, one per question, such as
# `q1 = "a"`. The visible check only confirms that your answers are letters; they are marked when
# your notebook is graded, and the test names the questions that are wrong.
#
# **q1.** Queries and keys have shape `(T, d_k)`. Scaled dot-product attention divides the scores by
# - a) $d_k$
# - b) $\sqrt{d_k}$
# - c) $T$
# - d) $\sqrt{T}$
#
# **q2.** The scores have shape `(B, T_q, T_k)`. The softmax that turns them into attention weights runs over
# - a) axis 0, so that the weights sum to 1 across the batch
# - b) axis -2, so that each key's column sums to 1
# - c) axis -1, so that each query's row sums to 1
# - d) the whole `(T_q, T_k)` table at once
#
# **q3.** Subtracting each row's maximum score before `np.exp`
# - a) prevents both overflow and saturation
# - b) prevents saturation but not overflow
# - c) makes the attention weights slightly softer
# - d) prevents overflow and leaves the weights, and any saturation, unchanged
#
# **q4.** Inputs with unit-variance entries, of width $D = 64$, are projected to queries and keys by
# $W_q, W_k$ whose entries have standard deviation 1 (not $1/\sqrt{D}$). Even after the scores are
# divided by $\sqrt{D}$, the attention rows are one-hot, because
# - a) the naive `np.exp` overflows, whatever the scale
# - b) dividing by $\sqrt{D}$ is only right when $T = D$
# - c) each entry of $q$ and $k$ has variance $D$, so the scaled scores have standard deviation $D$ rather than 1
# - d) a softmax over $T = 4$ keys is always close to one-hot

# %% nbgrader={"grade": false, "grade_id": "quiz", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
q1 = "b"
q2 = "c"
q3 = "d"
q4 = "c"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_quiz", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def quiz_answers():
    """Your four answers, as the grader reads them: {"q1": q1, ..., "q4": q4}."""
    return {"q1": q1, "q2": q2, "q3": q3, "q4": q4}


for _name, _answer in quiz_answers().items():
    assert isinstance(_answer, str) and _answer.strip().lower() in {"a", "b", "c", "d"}, (
        f'{_name} should be one of the letters "a", "b", "c", "d"; got {_answer!r}')
print("Quiz answers are all letters (they are marked at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# **The variance argument.** For $q, k$ with independent unit-variance entries,
# $\operatorname{Var}(q \cdot k) = d_k$: measured, the log-log slope is 1.00 from $d_k = 1$ to 1024,
# and $q \cdot k / \sqrt{d_k}$ keeps variance 1. The divisor is $\sqrt{d_k}$, the standard deviation,
# not $d_k$.
#
# **Saturation.** At $d_k = 64$ the unscaled scores spread over $\pm 20$ and rows of the softmax
# collapse onto one key; the mean row entropy fell from 1.688 to 0.301 nats ($\log 8 = 2.079$). Over
# $d_k$ from 1 to 1024, scaled rows keep a mean entropy between 1.72 and 1.81 while unscaled rows fall to 0.076.
#
# **Learning.** The softmax Jacobian $\operatorname{diag}(p) - p p^\top$ is zero for a one-hot row.
# Without the scale the median row's Jacobian norm fell from 0.35 to below $10^{-5}$ as $d_k$ went
# from 1 to 1024; with it, it stayed between 0.35 and 0.37. The gradient that reaches a row's
# scores is $J^\top g = p \odot (g - p \cdot g)$: section 2's one-hot rows passed back at most 0.0017
# of a random upstream gradient, the scaled rows between 0.12 and 0.42.
#
# **A common mistake.** With $W \sim \mathcal{N}(0, 1)$ the entries of $q$ and $k$ have variance $D$,
# the scores variance $D^3$ (measured slope 3.02), and the scaled scores variance $D^2$: with
# `np.random.seed(0)` the scores span $-254$ to $757$, row 1 overflows to `nan`, and the scaled rows
# are still one-hot. The $\sqrt{d_k}$ assumes unit-variance queries and keys; initialising
# weights with std $1/\sqrt{C}$ provides them, and GPT-2's std 0.02 at $C = 768$ gives even smaller
# scores, so its heads start nearly uniform.
#
# **Two fixes.** Max subtraction prevents overflow and leaves the weights unchanged, so it cannot
# prevent saturation. The $\sqrt{d_k}$ (with a sensible initialisation) prevents saturation.
#
# **Next:** Lesson 3 runs scaled dot-product attention for all heads of a layer at once, with
# 4-D matmuls over `(B, h, T, hs)`, and concatenates the heads back to `(B, T, C)`.
