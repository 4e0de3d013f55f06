# ---
# jupyter:
#   jupytext:
#     formats: 01-single-head//ipynb,py:percent
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
# # Lesson 1: Attention from scratch, one head
#
# Attention is the step that made transformers transformers. Every position in a sequence looks
# at every other position, decides which ones matter to it, and mixes their information into its
# own representation. This lesson builds that mechanism for a single head in plain NumPy: no
# heads to split, no batches, and (on purpose) no scaling factor yet. Four tokens, eight numbers
# each, every intermediate printed and drawn.
#
# Each position $i$ produces three vectors:
#
# - a **query** $q_i$: *what am I looking for?*
# - a **key** $k_i$: *what do I have to offer?*
# - a **value** $v_i$: *what information do I carry?*
#
# The score from position $i$ to position $j$ is the dot product $q_i \cdot k_j$: high when the
# query and the key point the same way. A softmax over $j$ turns position $i$'s scores into a
# probability distribution, and position $i$'s output is the average of all the values, weighted
# by that distribution. Three matrices, one matmul for the scores, a softmax, one matmul for the
# weighted sum: that is the whole mechanism.
#
# **What you'll do**
# - project a tiny sequence to queries, keys and values, and name the shape of every array;
# - compute the `(T, T)` score and weight matrices and draw them as heatmaps;
# - take one output row apart into its weighted sum of value rows;
# - pick a query row interactively and see where it sends its attention;
# - reverse the sequence and watch the output reverse with it;
# - make the textbook softmax overflow, and fix it;
# - implement a stable `softmax(x, axis)` and `attention(Q, K, V)` for any batch shape (graded).
#
# **What you'll learn**
# - what $Q K^\top$ computes, entry by entry, and why softmax runs along the key axis;
# - that every output row is a convex combination (a weighted average) of the rows of $V$;
# - that attention by itself ignores the order of the tokens;
# - why `np.exp` overflows inside softmax, and why subtracting the row maximum changes nothing
#   but the overflow.
#
# **What you'll need**
# - NumPy arrays, `@` (matrix multiplication) and broadcasting with `keepdims=True`;
# - the dot product, and $e^x$.
#
# Two graded exercises close the lesson. Their visible checks run as you work; hidden tests with
# fresh inputs run when your notebook is graded.

# %%
import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display

from lesson_helpers import full_demos  # the course's helpers: whether demonstrations run in full

# %% [markdown]
# ## 1. Queries, keys and values
#
# Start with a sequence of $T = 4$ tokens, each already a vector of $D = 8$ numbers (in a real
# model these come from the embedding layer). Stack them as the rows of $x$, shape `(T, D)`.
# Three learned matrices, each `(D, D)`, project every token to its query, key and value:
#
# $$Q = x\,W_q, \qquad K = x\,W_k, \qquad V = x\,W_v, \qquad Q, K, V \in \mathbb{R}^{T \times D}.$$
#
# Row $i$ of $Q$ is $q_i$, row $i$ of $K$ is $k_i$, row $i$ of $V$ is $v_i$. One matmul projects
# all $T$ tokens at once. In this single head, queries, keys and values all have $D$ numbers:
# $d_k = d_v = D$.
#
# Every array is drawn from one seeded generator, `np.random.default_rng(0)`, in the order below,
# so with this seed your run prints the numbers that the text below quotes (query 0 sends 0.460
# of its attention to key 0, for example). A trained model would have learned the three matrices;
# random ones are enough to watch the mechanism work. Their entries have variance $1/D$ (standard
# normal divided by $\sqrt{D}$), which keeps the queries and keys on the same scale as $x$
# (Lesson 2 explains why that matters).

# %%
rng = np.random.default_rng(0)
T, D = 4, 8  # T tokens, each a D-dimensional vector

x = rng.standard_normal((T, D))  # (T, D): one row per token
W_q = rng.standard_normal((D, D)) / np.sqrt(D)  # (D, D), entries with variance 1/D
W_k = rng.standard_normal((D, D)) / np.sqrt(D)  # (D, D)
W_v = rng.standard_normal((D, D)) / np.sqrt(D)  # (D, D)

Q = x @ W_q  # (T, D) @ (D, D) -> (T, D): one query per token
K = x @ W_k  # (T, D) @ (D, D) -> (T, D): one key per token
V = x @ W_v  # (T, D) @ (D, D) -> (T, D): one value per token

print("x        :", x.shape, "(T, D)")
print("W_q, W_k, W_v:", W_q.shape, "(D, D) each")
print("Q, K, V  :", Q.shape, "(T, D) each")
print("std of the entries of x, Q, K: %.2f, %.2f, %.2f" % (x.std(), Q.std(), K.std()))

# %% [markdown]
# Four tokens in, four queries, four keys and four values out, each of length 8. The entries of
# $Q$ and $K$ have a spread similar to those of $x$ (standard deviations printed above).
#
# A common mistake in quick experiments is to draw with an unseeded generator (such as
# `np.random.randn`): then every run prints different numbers, and no one can reproduce yours.
# A generator with the same seed gives the same numbers every time; two unseeded ones do not:

# %%
print("seed 0 again gives the same x:", np.array_equal(np.random.default_rng(0).standard_normal((T, D)), x))
print("two unseeded generators agree:",
      np.array_equal(np.random.default_rng().standard_normal(T), np.random.default_rng().standard_normal(T)))

# %% [markdown]
# ## 2. Scores: every query against every key
#
# Entry $(i, j)$ of the score matrix is the dot product of query $i$ with key $j$. All $T^2$ of
# them come from one matmul:
#
# $$S = Q K^\top, \qquad S_{ij} = q_i \cdot k_j = \sum_{c=1}^{D} Q_{ic} K_{jc}, \qquad S \in \mathbb{R}^{T \times T}.$$
#
# `K.T` is `(D, T)`, so `Q @ K.T` is `(T, D) @ (D, T)`, which is `(T, T)`: row $i$ holds query
# $i$'s scores against every key.
#
# Most implementations divide these scores by $\sqrt{D}$ at this point. This lesson leaves that
# out on purpose: **the attention in Lesson 1 is unscaled**, $\text{softmax}(Q K^\top)\,V$. The
# factor $1/\sqrt{d_k}$ is the subject of Lesson 2, which shows what goes wrong without it.

# %%
scores = Q @ K.T  # (T, D) @ (D, T) -> (T, T)

print("scores:", scores.shape, "(T, T)")
print(np.round(scores, 2))
print("scores[1, 0] = q_1 . k_0 =", np.round(np.dot(Q[1], K[0]), 2))

# %% [markdown]
# Row 1 is the most lopsided: its score for key 0 (5.42) is 4.32 above its next best (1.10, for
# key 3), and its score for key 1 is the lowest in the matrix ($-9.68$). The scores are not symmetric: $q_i \cdot k_j$ and $q_j \cdot k_i$ use different
# vectors, so "how much does 0 want 1" and "how much does 1 want 0" are separate questions.
#
# Every `(T, T)` matrix in this course gets a heatmap. The helper below draws one: rows are query
# positions, columns key positions, and small matrices get their values printed in each cell.

# %%
def plot_matrix(ax, matrix, title, label, fmt="{:.2f}", cmap="viridis", vmin=None, vmax=None):
    """Heatmap of a (T_q, T_k) matrix on `ax`, with every value printed; nan cells are grey."""
    colormap = plt.colormaps[cmap].with_extremes(bad="lightgrey")
    image = ax.imshow(matrix, cmap=colormap, vmin=vmin, vmax=vmax)
    n_queries, n_keys = matrix.shape
    ax.set_xticks(range(n_keys))
    ax.set_yticks(range(n_queries))
    ax.set_xlabel("key position")
    ax.set_ylabel("query position")
    ax.set_title(title)
    for q in range(n_queries):
        for k in range(n_keys):
            value = matrix[q, k]
            if np.isnan(value):
                text, colour = "nan", "black"
            else:
                red, green, blue, _ = colormap(image.norm(value))
                text = fmt.format(value)
                colour = "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"
            ax.text(k, q, text, ha="center", va="center", fontsize=9, color=colour)
    ax.figure.colorbar(image, ax=ax, label=label, shrink=0.85)
    return image


limit = np.abs(scores).max()
fig, ax = plt.subplots(figsize=(5.5, 4.5), constrained_layout=True)
plot_matrix(ax, scores, "Scores $S = QK^\\top$ (T = 4, D = 8)", "score $q_i \\cdot k_j$",
            cmap="RdBu_r", vmin=-limit, vmax=limit)
plt.show()

# %% [markdown]
# *Figure: the score matrix. Red cells are keys that a query is aligned with, blue cells keys it
# points away from; the colour scale is centred on zero. Read it row by row: each row is one
# query comparing itself with all four keys.*

# %% [markdown]
# ## 3. Softmax: from scores to attention weights
#
# Scores can be any real numbers. To average the values we need, for each query, non-negative
# weights that sum to 1. Softmax makes them, one row at a time:
#
# $$A_{ij} = \text{softmax}(S_{i,:})_j = \frac{e^{S_{ij}}}{\sum_{k=1}^{T} e^{S_{ik}}}, \qquad A \in \mathbb{R}^{T \times T}.$$
#
# The sum runs over $k$, the **key** axis, which is the last axis of `scores`: each query row is
# normalised on its own. This is the textbook formula (section 7 shows what is wrong with it):

# %%
def naive_softmax(s):
    """Row-wise softmax, straight from the formula (section 7 shows its flaw)."""
    return np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True)  # (T, T) / (T, 1): each row by its own sum


weights = naive_softmax(scores)  # (T, T)

print("weights:", weights.shape, "(T, T)")
print(np.round(weights, 3))
print("row sums:", np.round(weights.sum(axis=-1), 6))

# %% [markdown]
# `keepdims=True` keeps the row sums as a `(T, 1)` column, so the division broadcasts across each
# row. Every row now sums to 1. Softmax keeps the order of the scores within a row but exaggerates
# their gaps: query 1's score for key 0 was 4.32 ahead of its next best, and key 0 now takes
# 0.986 of the row's weight.

# %%
fig, ax = plt.subplots(figsize=(5.5, 4.5), constrained_layout=True)
plot_matrix(ax, weights, "Attention weights $A = $ softmax$(QK^\\top)$, row-wise", "attention weight",
            vmin=0.0, vmax=1.0)
plt.show()

# %% [markdown]
# *Figure: the weight matrix. Each row is a probability distribution over the four keys. Query 1
# (second row) is almost one-hot on key 0; query 0 splits its attention between keys 0 and 2;
# queries 2 and 3 spread theirs over all four keys.*

# %% [markdown]
# ## 4. The output: a weighted sum of value rows
#
# The last step multiplies the weights by the values:
#
# $$\text{out} = A V, \qquad \text{out}_i = \sum_{j=1}^{T} A_{ij}\, v_j, \qquad \text{out} \in \mathbb{R}^{T \times D}.$$
#
# `weights @ V` is `(T, T) @ (T, D)`, which is `(T, D)`: one output vector per position, the same
# shape as the input. Row $i$ of the output is the average of the value rows, weighted by row $i$
# of $A$. Check it by hand for query 0:

# %%
out = weights @ V  # (T, T) @ (T, D) -> (T, D)
print("out:", out.shape, "(T, D)")

i = 0
by_hand = sum(weights[i, j] * V[j] for j in range(T))  # sum of T vectors of shape (D,)
print("weights[0]            :", np.round(weights[i], 3))
print("out[0]                :", np.round(out[i], 3))
print("sum_j weights[0,j] V[j]:", np.round(by_hand, 3))
print("equal:", np.allclose(out[i], by_hand))
print("every row i equals its weighted sum:",
      np.allclose(out, np.stack([sum(weights[r, j] * V[j] for j in range(T)) for r in range(T)])))

# %% [markdown]
# The figure lays the sum out. Left: the four value rows. Right: each value row multiplied by
# query 0's weight for it, and, below the line, their sum, which is `out[0]`.

# %%
contributions = weights[i][:, None] * V  # (T, 1) * (T, D) -> (T, D): row j is weights[0, j] * V[j]
stacked = np.vstack([contributions, out[i]])  # (T + 1, D): the contributions, then their sum
limit = np.abs(np.vstack([V, stacked])).max()

fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), constrained_layout=True)
panels = [(V, "The value rows $V$", "value row", [f"$v_{j}$" for j in range(T)]),
          (stacked, "Query 0: weighted value rows, and their sum", "weight $\\times$ value row",
           [f"{weights[i, j]:.3f} $\\times\\ v_{j}$" for j in range(T)] + ["out[0] = sum"])]
for ax, (matrix, title, y_label, row_labels) in zip(axes, panels, strict=True):
    image = ax.imshow(matrix, cmap="RdBu_r", vmin=-limit, vmax=limit)
    for r in range(matrix.shape[0]):
        for c in range(D):
            colour = "white" if abs(matrix[r, c]) > 0.6 * limit else "black"  # light text on dark cells
            ax.text(c, r, f"{matrix[r, c]:.2f}", ha="center", va="center", fontsize=8, color=colour)
    ax.set_xticks(range(D))
    ax.set_yticks(range(matrix.shape[0]), row_labels)
    ax.set_xlabel("value dimension (0 to D-1)")
    ax.set_ylabel(y_label)
    ax.set_title(title)
axes[1].axhline(T - 0.5, color="black", linewidth=2)  # the line between the terms and their sum
fig.colorbar(image, ax=axes, label="value", shrink=0.8)
fig.suptitle("out[0] is a weighted average of the value rows (weights = row 0 of A)")
plt.show()

# %% [markdown]
# *Figure: the rows for $v_1$ and $v_3$ almost vanish on the right, because query 0 gives them
# weights of 0.028 and 0.096; the rows for $v_0$ and $v_2$ survive at a bit less than half
# strength. Each column of the bottom row is the sum of the four cells above it. Since the
# weights are non-negative and sum to 1, every output row is a weighted average of the value
# rows: it can only mix what the values carry.*

# %% [markdown]
# ## 5. Where does one query look?
#
# Each row of $A$ answers one question: where does this query send its attention? The function
# below draws the answer for query $i$: the whole weight matrix with row $i$ outlined, and row $i$
# as a bar chart over the keys.

# %%
def draw_query_view(weights, i):
    """Figure: the (T, T) weights with query row i outlined, and row i as bars over the keys."""
    n_queries, n_keys = weights.shape
    row = weights[i]
    fig, (ax_map, ax_bar) = plt.subplots(1, 2, figsize=(12, 4.3), constrained_layout=True,
                                         gridspec_kw={"wspace": 0.1})
    plot_matrix(ax_map, weights, "Attention weights $A$", "attention weight", vmin=0.0, vmax=1.0)
    ax_map.add_patch(plt.Rectangle((-0.5, i - 0.5), n_keys, 1, fill=False, edgecolor="red", linewidth=3))

    bars = ax_bar.bar(range(n_keys), row, color=plt.colormaps["viridis"](row))
    bars[int(row.argmax())].set_edgecolor("red")
    bars[int(row.argmax())].set_linewidth(2)
    for k, value in enumerate(row):
        ax_bar.text(k, value + 0.02, f"{value:.3f}", ha="center", va="bottom")
    ax_bar.set_ylim(0, 1.1)
    ax_bar.set_xticks(range(n_keys))
    ax_bar.set_xlabel("key position")
    ax_bar.set_ylabel("attention weight")
    ax_bar.set_title(f"Query {i}: its attention over the keys (sums to 1)")
    fig.suptitle(f"Where query {i} sends its attention: row {i} of $A$ (outlined in red)")
    return fig


draw_query_view(weights, 0)
plt.show()

# %% [markdown]
# *Figure: query 0. Its row of the heatmap (outlined) is the bar chart on the right: 0.460 of its
# attention goes to key 0 and 0.417 to key 2, and the rest to keys 1 and 3.*
#
# The figure above is ordinary code and is always there. Below it, if your notebook runs live with
# ipywidgets (JupyterLab and VS Code do), a row of buttons lets you pick any query and redraws
# the same view for it. Where widgets cannot render (a static preview, an HTML export) you see a
# one-line text description instead, and the figure above still shows query 0.

# %%
def query_explorer(weights, start=0):
    """A query-row picker wired to draw_query_view. Returns (box to display, picker, caption)."""
    picker = widgets.ToggleButtons(options=list(range(weights.shape[0])), value=start,
                                   description="query row")
    caption = widgets.Label()
    view = widgets.Output()

    def redraw(change=None):
        row = weights[picker.value]
        caption.value = (f"query {picker.value} sends {row.max():.3f} of its attention "
                         f"to key {int(row.argmax())}")
        if not full_demos():  # a shortened run draws no figure into the widget
            return
        fig = draw_query_view(weights, picker.value)
        view.outputs = ()  # replace the previous figure
        view.append_display_data(fig)  # the figure goes into the widget, not into the cell
        plt.close(fig)  # so it is not also shown under the cell

    picker.observe(redraw, names="value")
    redraw()
    return widgets.VBox([picker, caption, view]), picker, caption


explorer, picker, caption = query_explorer(weights)
display(explorer)

# %% [markdown]
# A widget is an ordinary Python object: clicking a button sets `picker.value`, which calls
# `redraw`. Setting the value from code does exactly the same, so the cell below can drive the
# widget without a browser. It works on a second copy, so the one above keeps your choice:

# %%
_, picker_copy, caption_copy = query_explorer(weights)
print("before:", caption_copy.value)
picker_copy.value = 2  # what clicking "2" does
print("after :", caption_copy.value)

# %% [markdown]
# Query 2's largest weight is 0.345, on key 2: the same number as row 2, column 2 of the heatmap.

# %% [markdown]
# ## 6. Attention does not know the order
#
# Nothing in sections 1 to 4 looks at where a token sits. The projections treat every row of $x$
# alike, a score compares two vectors, the softmax normalises each row, and the weighted sum adds
# the value rows in whatever order they come. So shuffle the tokens, and the outputs are shuffled
# the same way. Write the shuffle as a permutation matrix $P$ (here, reversing the sequence):
# $x' = P x$ gives $Q' = PQ$, $K' = PK$, $V' = PV$, then $S' = P S P^\top$ (rows and columns
# permuted alike), $A' = P A P^\top$ (each row is normalised on its own), and, because
# $P^\top P = I$,
#
# $$\text{out}' = A' V' = P A P^\top P V = P\,(A V) = P\,\text{out}.$$
#
# Check it: run sections 1 to 4 again on the tokens in reverse order.

# %%
reverse = np.arange(T)[::-1]  # [3, 2, 1, 0]: new position p holds token reverse[p]
x_rev = x[reverse]  # (T, D): the same four tokens, last one first
Q_rev, K_rev, V_rev = x_rev @ W_q, x_rev @ W_k, x_rev @ W_v  # (T, D) @ (D, D) -> (T, D) each
weights_rev = naive_softmax(Q_rev @ K_rev.T)  # (T, D) @ (D, T) -> (T, T)
out_rev = weights_rev @ V_rev  # (T, T) @ (T, D) -> (T, D)

print("token at each position of the reversed sequence:", reverse)
print("out_rev equals out reversed (to 1e-15):", np.allclose(out_rev, out[reverse], rtol=0, atol=1e-15))
print("weights_rev equals weights, rows and columns reversed (to 1e-15):",
      np.allclose(weights_rev, weights[reverse][:, reverse], rtol=0, atol=1e-15))
print("out_rev equals out in the original order:", np.allclose(out_rev, out))

# %% [markdown]
# The comparison allows a difference of $10^{-15}$ and no more: mathematically the two are
# identical, and in floating point they can differ only in the last digit, because the same
# products are added up in another order. Token 3's output is the same vector whether token 3
# comes last or first; only its row moves. The figure shows both runs side by side.

# %%
fig, axes = plt.subplots(2, 2, figsize=(12, 9), constrained_layout=True)
order_labels = [[f"{p} (token {t})" for p, t in enumerate(order)] for order in (np.arange(T), reverse)]
for col, (w, o, labels, name) in enumerate([(weights, out, order_labels[0], "tokens in order 0, 1, 2, 3"),
                                            (weights_rev, out_rev, order_labels[1], "reversed: 3, 2, 1, 0")]):
    plot_matrix(axes[0, col], w, f"Attention weights, {name}", "attention weight", vmin=0.0, vmax=1.0)
    axes[0, col].set_xticks(range(T), labels, fontsize=8)
    axes[0, col].set_yticks(range(T), labels, fontsize=8)
    limit = np.abs(out).max()
    image = axes[1, col].imshow(o, cmap="RdBu_r", vmin=-limit, vmax=limit)
    for r in range(T):
        for c in range(D):
            colour = "white" if abs(o[r, c]) > 0.6 * limit else "black"  # light text on dark cells
            axes[1, col].text(c, r, f"{o[r, c]:.2f}", ha="center", va="center", fontsize=8, color=colour)
    axes[1, col].set_xticks(range(D))
    axes[1, col].set_yticks(range(T), labels, fontsize=8)
    axes[1, col].set_xlabel("output dimension (0 to D-1)")
    axes[1, col].set_ylabel("position (token)")
    axes[1, col].set_title(f"Output rows, {name}")
    fig.colorbar(image, ax=axes[1, col], label="output value", shrink=0.85)
fig.suptitle("Reverse the tokens and the attention output is reversed with them: each token keeps its output row")
plt.show()

# %% [markdown]
# *Figure: left, the original order; right, the same tokens reversed (tick labels give each
# position's token). The right weight matrix is the left one turned by 180 degrees, and every
# output row on the right is the row of the same token on the left: token 0's output, for
# example, is the bottom row on the right and the top row on the left.*
#
# So attention alone treats a sequence as a set: "dog bites man" and "man bites dog" would give
# each word the same output vector, only listed in another order. A model that must know the
# order has to put it into the vectors themselves, by adding information about each position to
# the token's vector before the first attention layer. Those position encodings are the subject
# of a later lesson.

# %% [markdown]
# ## 7. The bug hiding in `np.exp`
#
# The textbook softmax of section 3 is correct mathematics and fragile arithmetic. `np.exp`
# grows so fast that a float64 holds $e^x$ only up to $x \approx 709.78$ (float32, the type GPUs
# usually compute in, only up to $88.72$); beyond that it returns `inf`. A softmax row that
# contains one `inf` computes `inf / inf`, which is `nan`.
#
# Try it at the head size GPT-2 small uses, $D = 64$, and make a common mistake on the way: draw
# $W_q$ and $W_k$ from $\mathcal{N}(0, 1)$, without the $1/\sqrt{D}$ of section 1. Many widely
# copied examples initialise this way (`np.random.randn(D, D)`); Lesson 2 measures what it does to
# the size of the scores. The draws come from a separate generator, seed 1. NumPy would print a
# `RuntimeWarning` for each overflow; `np.errstate` silences the warnings (not the overflow) so the
# cell shows only results.

# %%
print("largest x with finite exp(x): float64 %.2f, float32 %.2f"
      % (np.log(np.finfo(np.float64).max), np.log(np.finfo(np.float32).max)))
with np.errstate(over="ignore"):
    print("np.exp([709, 710])   =", np.exp(np.array([709.0, 710.0])))
    print("np.exp(float32 89.0) =", np.exp(np.float32(89.0)))

big_rng = np.random.default_rng(1)
D_big = 64
x_big = big_rng.standard_normal((T, D_big))  # (T, 64)
W_q_big = big_rng.standard_normal((D_big, D_big))  # (64, 64), N(0, 1): the common mistake, no 1/sqrt(D)
W_k_big = big_rng.standard_normal((D_big, D_big))  # (64, 64)
scores_big = (x_big @ W_q_big) @ (x_big @ W_k_big).T  # (T, 64) @ (64, T) -> (T, T)

with np.errstate(over="ignore", invalid="ignore"):  # exp overflows to inf, then inf / inf = nan
    weights_big_naive = naive_softmax(scores_big)  # (T, T)

print("scores range from %.0f to %.0f" % (scores_big.min(), scores_big.max()))
print("largest score in each row:", np.round(scores_big.max(axis=-1)))
print("rows containing nan:", np.flatnonzero(np.isnan(weights_big_naive).any(axis=-1)))
print("naive weights, rows 0 and 2:")
print(np.round(weights_big_naive[[0, 2]], 3))
print("naive row sums:", np.round(weights_big_naive.sum(axis=-1), 6))

# %% [markdown]
# Rows 0 and 2 have a score above 709.78 (943 and 760), so `np.exp` returns `inf` there. The
# row's sum is then `inf` too: the overflowing entry becomes `inf / inf = nan`, every other entry
# becomes `finite / inf = 0`, and the row sums to `nan` instead of 1. Rows 1 and 3 stay finite only because their largest scores (607 and
# $-136$) happen to be small enough. In a network, one `nan` spreads to everything computed from it.
#
# ### The fix: subtract each row's maximum
#
# Adding the same constant $c$ to every score in a row does not change its softmax, because
# $e^{c}$ cancels between the numerator and the denominator:
#
# $$\frac{e^{S_{ij} + c}}{\sum_k e^{S_{ik} + c}} = \frac{e^{c}\, e^{S_{ij}}}{e^{c} \sum_k e^{S_{ik}}} = \frac{e^{S_{ij}}}{\sum_k e^{S_{ik}}}.$$
#
# Check it on the lesson's scores, for a few constants and for a different constant in every row
# (allowed, since each row is normalised on its own):

# %%
for c in [-50.0, 3.0, 500.0]:
    print(f"softmax(scores + {c:6.1f}) == softmax(scores):", np.allclose(naive_softmax(scores + c), weights))
row_max = scores.max(axis=-1, keepdims=True)  # (T, 1): one constant per row
print("softmax(scores - row max) == softmax(scores):", np.allclose(naive_softmax(scores - row_max), weights))

# %% [markdown]
# The right constant to choose is minus the row's maximum, $m_i = \max_k S_{ik}$:
#
# $$\text{softmax}(S_{i,:})_j = \frac{e^{S_{ij} - m_i}}{\sum_k e^{S_{ik} - m_i}}.$$
#
# After the shift every exponent is at most 0, so no $e^x$ can exceed 1 and nothing overflows.
# The largest term is $e^0 = 1$, so the denominator is at least 1 and cannot become 0 either.
# Same softmax, safe arithmetic:

# %%
shifted_big = scores_big - scores_big.max(axis=-1, keepdims=True)  # (T, T) - (T, 1): every row's max becomes 0
weights_big = naive_softmax(shifted_big)  # no overflow is possible now, so no errstate
print("any nan after the shift:", bool(np.isnan(weights_big).any()))
print("row sums:", np.round(weights_big.sum(axis=-1), 6))
print(np.round(weights_big, 3))

# %%
fig, axes = plt.subplots(1, 3, figsize=(16, 4.6), constrained_layout=True)
limit = np.abs(scores_big).max()
plot_matrix(axes[0], scores_big, "Scores, D = 64, W ~ N(0, 1)", "score", fmt="{:.0f}",
            cmap="RdBu_r", vmin=-limit, vmax=limit)
plot_matrix(axes[1], weights_big_naive, "Naive softmax: nan where exp overflowed", "attention weight",
            vmin=0.0, vmax=1.0)
plot_matrix(axes[2], weights_big, "Softmax after subtracting the row max", "attention weight",
            vmin=0.0, vmax=1.0)
fig.suptitle("Same scores, two softmaxes: the naive one overflows, the shifted one does not (T = 4, D = 64)")
plt.show()

# %% [markdown]
# *Figure: left, scores in the hundreds. Middle, the naive softmax: the grey cells are `nan`, at
# the largest score of the two rows whose maximum exceeds 709.78; the rest of those rows is 0. Right, the same softmax after subtracting each
# row's maximum: finite, every row summing to 1.*
#
# Notice what the fix did **not** do. Every row on the right is one-hot: each query puts
# essentially all of its attention on a single key. Max subtraction prevents overflow, but not
# this saturation, which comes from the size of the scores themselves. A softmax that is one-hot
# passes almost no gradient back to its inputs, so such a layer barely learns. Preventing it is
# the job of the $1/\sqrt{d_k}$ scale and of sensible initialisation: Lesson 2.

# %% [markdown]
# ## Practice exercises
#
# Each exercise asks for one function. Replace `raise NotImplementedError()` with your code, run
# the cell, then run the test cell below it. The visible checks tell you what a failure most
# likely means; when your notebook is graded, hidden tests call your function again on fresh
# inputs (other shapes, axes and seeds), so write the general function, not one that fits the
# lesson's arrays.
#
# ### Exercise 1: a stable softmax along any axis (3 points)
#
# Write `softmax(x, axis=-1)`. The entries of `x` along `axis` are normalised with
#
# $$\text{softmax}(x)_j = \frac{e^{x_j - m}}{\sum_k e^{x_k - m}}, \qquad m = \max_k x_k ,$$
#
# and every other axis is a batch axis: for a `(T, T)` score matrix and `axis=-1` each row is
# normalised on its own; for `axis=0` each column is. Requirements:
#
# - the result has the shape of `x`, non-negative entries, and sums to 1 along `axis`;
# - it is finite for large inputs: subtract the maximum **along `axis`** (each slice its own);
# - `x` itself is not modified.

# %% nbgrader={"grade": false, "grade_id": "softmax", "locked": false, "schema_version": 3, "solution": true, "task": false}
def softmax(x, axis=-1):
    """Numerically stable softmax of x (any shape) along `axis`; returns an array of x's shape."""
    ### BEGIN SOLUTION
    shifted = x - x.max(axis=axis, keepdims=True)  # a new array; each slice's max becomes 0
    e = np.exp(shifted)  # every exponent <= 0: no overflow
    return e / e.sum(axis=axis, keepdims=True)  # keepdims so the sums broadcast along `axis`
    ### END SOLUTION


# %% [markdown]
# Your softmax on the lesson's scores should reproduce the weights of section 3, and give valid
# rows on the $D = 64$ scores that broke the naive version:

# %%
print("softmax(scores) == weights:", np.allclose(softmax(scores), weights))
print("finite on the D = 64 scores:", bool(np.isfinite(softmax(scores_big)).all()))
print("columns of softmax(scores, axis=0) sum to:", np.round(softmax(scores, axis=0).sum(axis=0), 6))

# %% nbgrader={"grade": true, "grade_id": "test_softmax", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_softmax(x, axis=None):
    """Visible check with a hint for the usual mistakes (axis=None: call softmax(x) with its default)."""
    before = x.copy()
    with np.errstate(all="ignore"):  # a failing softmax is reported by the messages below, not by warnings
        got = softmax(x) if axis is None else softmax(x, axis=axis)
    axis = -1 if axis is None else axis
    assert isinstance(got, np.ndarray), f"softmax should return a NumPy array, got {type(got).__name__}"
    assert np.array_equal(x, before), "softmax modified its input: write x = x - ..., not x -= ..."
    assert got.shape == x.shape, (
        f"the output should keep the input's shape {x.shape}, got {got.shape}: use keepdims=True")
    assert np.all(np.isfinite(got)), (
        "nan or inf in the output: np.exp overflowed. Subtract the max along `axis` before exponentiating")
    assert np.all(got >= 0), "softmax outputs are exponentials divided by a positive sum: never negative"
    if not np.allclose(got.sum(axis=axis), 1.0):
        for other in range(x.ndim):
            if other != axis % x.ndim and np.allclose(got.sum(axis=other), 1.0):
                raise AssertionError(f"the output sums to 1 along axis {other}, not along axis={axis}: "
                                     "pass `axis` to both the max and the sum")
        raise AssertionError(f"entries along axis={axis} should sum to 1: divide by "
                             "e.sum(axis=axis, keepdims=True) (without keepdims the sums broadcast the wrong way)")
    # softmax(x) is exp(x) divided by one positive number per slice, so log(softmax(x)) - x is
    # constant along `axis`.
    with np.errstate(divide="ignore"):  # log(0) = -inf fails the check below, without a warning
        gap = np.log(got) - x
    assert np.allclose(gap.max(axis=axis), gap.min(axis=axis), atol=1e-6), (
        f"along axis={axis} the output is not proportional to exp(x): check the formula")


def check_softmax_offsets():
    """Rows that differ by a constant have the same softmax, even a thousand apart."""
    x = np.array([[0.0, 1.0, 2.0], [-1000.0, -999.0, -998.0], [1000.0, 1001.0, 1002.0]])
    with np.errstate(all="ignore"):
        got = softmax(x, axis=-1)
    assert np.all(np.isfinite(got)) and np.allclose(got, got[0]), (
        "rows that differ only by a constant must have the same softmax: subtract each row's own "
        "max (x.max(axis=axis, keepdims=True)), not one max for the whole array")


check_softmax(scores)  # the lesson's (T, T) scores, default axis: rows
check_softmax(scores, axis=0)  # columns
check_softmax(scores + 1000.0)  # scores this large overflow np.exp
check_softmax(np.random.default_rng(11).standard_normal((2, 3, 5)) * 4, axis=1)  # the middle axis of a 3-D array
check_softmax_offsets()
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: attention for any batch shape (4 points)
#
# Write `attention(Q, K, V)` returning the pair `(out, weights)`:
#
# $$\text{weights} = \text{softmax}(Q K^\top) \text{ over the key axis}, \qquad \text{out} = \text{weights}\; V .$$
#
# For `(T, d_k)` queries and keys and `(T, d_v)` values this is sections 2 to 4: `weights` is
# `(T, T)` and `out` is `(T, d_v)`. It must also work with **any number of leading batch axes**:
# `(B, T, d_k)`, `(B, h, T, d_k)`, and so on, with `weights` of shape `(..., T, T)` and `out` of
# shape `(..., T, d_v)`. `@` already batches over leading axes; the trap is the transpose. `K.T`
# reverses **all** axes, which is right only in 2-D: transpose just the last two, with
# `np.swapaxes(K, -2, -1)` (or `K.swapaxes(-2, -1)`).
#
# No scaling: Lesson 1's attention is $\text{softmax}(QK^\top)V$, and Lesson 2 adds the
# $1/\sqrt{d_k}$. Use your `softmax` from Exercise 1. The test cell runs your `attention` with a
# known-good softmax in place of yours, so a mistake in Exercise 1 costs points only there.

# %% nbgrader={"grade": false, "grade_id": "attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def attention(Q, K, V):
    """Unscaled dot-product attention. Q, K: (..., T, d_k); V: (..., T, d_v).

    Returns (out, weights): out (..., T, d_v), weights (..., T, T), each weights row summing to 1.
    """
    ### BEGIN SOLUTION
    scores = Q @ np.swapaxes(K, -2, -1)  # (..., T, d_k) @ (..., d_k, T) -> (..., T, T)
    weights = softmax(scores, axis=-1)  # (..., T, T), normalised over the keys
    out = weights @ V  # (..., T, T) @ (..., T, d_v) -> (..., T, d_v)
    return out, weights
    ### END SOLUTION


# %% [markdown]
# On the lesson's arrays your function should reproduce sections 2 to 4, and a batch of two
# sequences should give one `(T, T)` weight matrix per sequence:

# %%
out_check, weights_check = attention(Q, K, V)
print("out, weights:", out_check.shape, weights_check.shape)
print("same as sections 3 and 4:", np.allclose(weights_check, weights), np.allclose(out_check, out))
batch = np.stack([x, x[::-1]])  # (2, T, D): the sequence, and the same tokens in reverse order
out_batch, weights_batch = attention(batch @ W_q, batch @ W_k, batch @ W_v)  # (2, T, D) @ (D, D) -> (2, T, D)
print("batched out, weights:", out_batch.shape, weights_batch.shape)
print("the reversed sequence's output is the output reversed (section 6):",
      np.allclose(out_batch[1], out_batch[0][::-1], rtol=0, atol=1e-15))

# %% nbgrader={"grade": true, "grade_id": "test_attention", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
def _textbook_softmax(x, axis=-1):
    """Section 3's softmax, with nothing subtracted: right for the small scores below, and it overflows on
    large ones. Used in place of yours while your attention is checked, so Exercise 1 is graded on its own."""
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def check_attention(Q, K, V, scores):
    """Visible check with a hint for the usual mistakes. scores: Q K^T for these inputs, worked out beforehand."""
    inputs = [Q.copy(), K.copy(), V.copy()]
    students_softmax = globals().get("softmax")
    globals()["softmax"] = _textbook_softmax  # Exercise 1 is graded on its own
    try:
        result = attention(Q, K, V)
    except ValueError as error:
        if Q.ndim > 2:
            raise AssertionError(
                f"attention failed on batched inputs of shape {Q.shape} ({error}). Transpose only the "
                "last two axes of K, however many leading axes there are: np.swapaxes(K, -2, -1). "
                "(K.T reverses ALL axes; K.transpose(0, 2, 1) assumes exactly three.)") from None
        raise
    finally:
        globals()["softmax"] = students_softmax
    assert all(np.array_equal(a, b) for a, b in zip((Q, K, V), inputs, strict=True)), (
        "attention modified its inputs")
    assert isinstance(result, tuple) and len(result) == 2, "attention should return a pair: (out, weights)"
    out, weights = (np.asarray(r) for r in result)
    *batch, T, d_v = V.shape
    if out.shape == (*batch, T, T) and weights.shape == (*batch, T, d_v) and T != d_v:
        raise AssertionError("the pair is in the wrong order: return (out, weights)")
    assert weights.shape == (*batch, T, T), f"weights should be (..., T, T) = {(*batch, T, T)}, got {weights.shape}"
    assert out.shape == (*batch, T, d_v), f"out should be (..., T, d_v) = {(*batch, T, d_v)}, got {out.shape}"
    expected = _textbook_softmax(scores, axis=-1)  # (..., T, T)
    if not np.allclose(weights.sum(axis=-1), 1.0) and np.allclose(weights.sum(axis=-2), 1.0):
        raise AssertionError("weights are normalised over the queries (columns sum to 1): "
                             "softmax runs over the LAST axis, the keys")
    if not np.allclose(weights, expected):
        if np.allclose(weights, _textbook_softmax(scores / np.sqrt(Q.shape[-1]), axis=-1)):
            raise AssertionError("you divided the scores by sqrt(d_k): Lesson 1's attention is unscaled "
                                 "(the scale is Lesson 2's subject)")
        if np.allclose(weights, _textbook_softmax(np.swapaxes(scores, -2, -1), axis=-1)):
            raise AssertionError("scores are transposed: entry (i, j) must be q_i . k_j, i.e. Q @ K^T, not K @ Q^T")
        raise AssertionError("weights should be softmax(Q @ K^T) over the last axis")
    assert np.allclose(out, weights @ V), "out should be weights @ V: each output row averages the value rows"


_check_rng = np.random.default_rng(7)
# Scores known without a product: when key j is the unit vector e_j, q_i . k_j is entry j of q_i, so the
# scores are Q itself. First one sequence, (T, d_k) = (4, 4), with V (T, d_v) = (4, 5).
_Q = _check_rng.standard_normal((4, 4))
check_attention(_Q, np.eye(4), _check_rng.standard_normal((4, 5)), _Q)
# A batch of the same kind: (B, T, d_k) = (2, 4, 4); V is (B, T, d_v) = (2, 4, 5).
_Q = _check_rng.standard_normal((2, 4, 4))
check_attention(_Q, np.broadcast_to(np.eye(4), (2, 4, 4)).copy(), _check_rng.standard_normal((2, 4, 5)), _Q)
# d_k = 3 != T = 4: keys e_0, e_1, e_2, e_0, so score (i, j) is entry 0, 1, 2, 0 of q_i.
_Q = _check_rng.standard_normal((2, 4, 3))
_K = np.broadcast_to(np.eye(3)[[0, 1, 2, 0]], (2, 4, 3)).copy()  # (B, T, d_k)
check_attention(_Q, _K, _check_rng.standard_normal((2, 4, 5)), _Q[..., [0, 1, 2, 0]])
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# **Queries, keys, values.** Three `(D, D)` projections turn the `(T, D)` tokens into $Q$, $K$,
# $V$, each `(T, D)`: what each position looks for, what it offers, what it carries. Here they
# were random and seeded (`default_rng(0)`, $T = 4$, $D = 8$), with entries of variance $1/D$.
#
# **Scores.** $S = QK^\top$ is `(T, T)`, with $S_{ij} = q_i \cdot k_j$; it is not symmetric.
#
# **Weights.** A softmax along the key axis (the last) turns each row of scores into non-negative
# weights that sum to 1. It exaggerates gaps: query 1's lead of 4.32 in score became a weight
# of 0.986.
#
# **Output.** $\text{out} = AV$ is `(T, D)`. Row $i$ is $\sum_j A_{ij} v_j$, a weighted average of
# the value rows, checked by hand for every row.
#
# **Order.** Reversing the tokens reversed the output rows and turned the weight matrix by 180
# degrees, and nothing else: attention alone does not know where a token sits.
#
# **Overflow.** `np.exp` overflows past 709.78 in float64 (88.72 in float32). With the common
# unscaled $\mathcal{N}(0, 1)$ weights at $D = 64$, scores reached the hundreds and the textbook
# softmax returned `nan` for the two rows whose maximum exceeded that limit. Softmax is unchanged
# by adding a constant to a row, so subtracting each row's maximum gives the same result with no
# overflow; it does not undo the one-hot saturation of such large scores.
#
# **The code.** `softmax(x, axis)` with the max subtracted along `axis`, and
# `attention(Q, K, V)` with `np.swapaxes(K, -2, -1)`, which works for any leading batch axes.
#
# **Next:** Lesson 2 takes on the saturation you just saw: why the scores grow with the head size,
# and why dividing them by $\sqrt{d_k}$ keeps softmax soft and trainable. Lesson 3 then runs many
# heads at once, with the same `@` batched over a head axis.
