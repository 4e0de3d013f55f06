# ---
# jupyter:
#   jupytext:
#     formats: 07-backward-pass//ipynb,py:percent
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
# # Lesson 7: Gradients by hand: the backward pass of attention
#
# Every lesson so far ran attention forwards: inputs in, outputs out. Training runs it backwards
# too. A loss $L$ is computed far downstream, and each layer receives the gradient of $L$ with
# respect to its output and must return the gradient with respect to each of its inputs and
# weights. Frameworks do this for you with automatic differentiation; this lesson does it by
# hand, one matrix at a time, so that nothing about it is magic.
#
# Attention's backward pass is three rules applied in reverse order: the gradient of a matrix
# product (twice), the gradient of a row-wise softmax, and the constant $1/\sqrt{d_k}$. The
# multi-head layer adds two reshuffles and a sum. Every gradient has exactly the shape of the
# thing it is the gradient of, and the shapes are printed at every step.
#
# The idea to hold onto: **a gradient you derived is a claim; a finite-difference check is its
# proof.** Every formula below is checked numerically before it is used.
#
# **What you'll do**
# - derive $dV$, $dA$, $dS$, $dQ$ and $dK$ for one head, with the shape of every factor;
# - build the softmax Jacobian $\operatorname{diag}(p) - p p^\top$ for one row and see it collapse into
#   a formula that never builds a Jacobian;
# - check gradients with central differences, and see why the check needs float64;
# - measure how the gradient reaching $W_q$ vanishes without the $1/\sqrt{d_k}$ scale;
# - write `softmax_backward`, `attention_backward` and `mha_backward`, the whole backward pass of a
#   multi-head attention layer.
#
# **What you'll learn**
# - the matmul rule $Y = AB \Rightarrow dA = dY B^\top,\ dB = A^\top dY$, and why shapes alone
#   cannot tell $A$ from $A^\top$ when $A$ is square;
# - the softmax backward $dS = A \odot (dA - \operatorname{rowsum}(dA \odot A))$, and why each row of
#   $dS$ sums to zero;
# - how to read a relative error, and the step-size trade-off between truncation and rounding;
# - why the gradient of a weight matrix sums over the batch and every position, and why the
#   gradients of three paths into $X$ add up.
#
# **What you'll need**
# - scaled dot-product attention and multi-head attention (Lessons 1 to 4), and the softmax Jacobian
#   argument of Lesson 2;
# - the chain rule, and NumPy broadcasting over leading axes.
#
# Three graded exercises close the lesson. Their visible checks run as you work; hidden tests
# with fresh inputs run when your notebook is graded.

# %%
import importlib.util

import matplotlib.pyplot as plt
import numpy as np

from lesson_helpers import full_demos  # the course's helpers: whether demonstrations run in full

# %% [markdown]
# ## 1. The forward pass, and what "the gradient" means
#
# This lesson defines its own forward pass in the cell below (the same softmax, attention and
# multi-head layer as Lessons 1 to 4), so it needs no other notebook. For one head, with queries
# $Q$ of shape `(T, d_k)`, keys $K$ of shape `(T, d_k)` and values $V$ of shape `(T, d_v)`:
#
# $$S = \frac{Q K^\top}{\sqrt{d_k}} \quad (T, T), \qquad A = \operatorname{softmax}_{\text{rows}}(S) \quad (T, T), \qquad \text{Out} = A V \quad (T, d_v).$$

# %%
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))  # the row max subtracted: exp cannot overflow
    return e / e.sum(axis=axis, keepdims=True)


def attention_forward(Q, K, V):
    """Scaled dot-product attention over any leading axes.

    Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v) -> (Out (..., T_q, d_v), A (..., T_q, T_k)).
    """
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    A = softmax(S, axis=-1)  # (..., T_q, T_k), each row sums to 1
    return A @ V, A  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)


def mha_forward(X, Wq, Wk, Wv, Wo, h):
    """Multi-head self-attention: X (B, T, C), four (C, C) weights -> (Out (B, T, C), cache of intermediates)."""
    B, T, C = X.shape
    hs = C // h  # head size

    def split(Y):  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)
        return Y.reshape(B, T, h, hs).transpose(0, 2, 1, 3)

    Q, K, V = split(X @ Wq), split(X @ Wk), split(X @ Wv)  # (B, T, C) @ (C, C) -> (B, T, C) -> (B, h, T, hs)
    per_head, A = attention_forward(Q, K, V)  # (B, h, T, hs), (B, h, T, T)
    concat = per_head.transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
    out = concat @ Wo  # (B, T, C) @ (C, C) -> (B, T, C)
    return out, dict(Q=Q, K=K, V=V, A=A, per_head=per_head, concat=concat)


# %% [markdown]
# **The upstream gradient.** Somewhere downstream a scalar loss $L$ is computed from $\text{Out}$.
# Backpropagation hands the layer $d\text{Out} = \partial L / \partial \text{Out}$, an array of the
# same shape as $\text{Out}$, `(T, d_v)`: entry $(i, c)$ says how fast $L$ grows when
# $\text{Out}_{ic}$ grows. The layer's job is to return $dQ = \partial L / \partial Q$, $dK$ and $dV$,
# each with the shape of its input. Writing $dZ$ for $\partial L / \partial Z$ is the convention of
# the whole lesson.
#
# To test a backward pass, any upstream gradient will do. With a fixed array $G$ of the output's
# shape, the loss
#
# $$L = \sum_{i, c} \text{Out}_{ic}\, G_{ic}$$
#
# has $\partial L / \partial \text{Out} = G$ exactly. So a random `dOut` is a legitimate upstream
# gradient, and `np.sum(out * dOut)` is the loss it belongs to.
#
# The lesson's single head: $T = 6$ positions, $d_k = 4$, and $d_v = 3$. Real heads use
# $d_v = d_k$; here they differ so that no two shapes in the walk can be confused.

# %%
rng = np.random.default_rng(0)
T, d_k, d_v = 6, 4, 3
Q = rng.standard_normal((T, d_k))  # (T, d_k)
K = rng.standard_normal((T, d_k))  # (T, d_k)
V = rng.standard_normal((T, d_v))  # (T, d_v)
dOut = rng.standard_normal((T, d_v))  # (T, d_v): the upstream gradient dL/dOut


def loss(Q, K, V, dOut):
    """The scalar whose gradient with respect to Out is exactly dOut."""
    out, _ = attention_forward(Q, K, V)
    return np.sum(out * dOut)


out, A = attention_forward(Q, K, V)
S = Q @ K.T / np.sqrt(d_k)  # (T, d_k) @ (d_k, T) -> (T, T), kept for the checks below
print("Q", Q.shape, " K", K.shape, " V", V.shape, " dOut", dOut.shape)
print("S and A:", S.shape, A.shape, "   Out:", out.shape)
print(f"L = sum(Out * dOut) = {loss(Q, K, V, dOut):.6f}")

# %% [markdown]
# ## 2. Through the last matmul: $dV$ and $dA$
#
# **The matmul rule.** For $Y = A B$ with $A$ of shape `(n, m)` and $B$ of shape `(m, p)`, entry
# $Y_{ik} = \sum_j A_{ij} B_{jk}$, so $\partial Y_{ik} / \partial A_{ij} = B_{jk}$ and, summing over
# every output entry that $A_{ij}$ touches,
#
# $$\frac{\partial L}{\partial A_{ij}} = \sum_k dY_{ik}\, B_{jk} = (dY\, B^\top)_{ij}, \qquad\text{so}\qquad dA = dY\, B^\top, \quad dB = A^\top dY .$$
#
# Check the shapes: $dY B^\top$ is `(n, p) @ (p, m)`, which is `(n, m)`, the shape of $A$; $A^\top dY$
# is `(m, n) @ (n, p)`, the shape of $B$. A gradient always has the shape of its variable, and
# that usually leaves only one way to write the product.
#
# For $\text{Out} = A V$:
#
# $$dV = A^\top\, d\text{Out} \quad (T, T) @ (T, d_v) \to (T, d_v), \qquad dA = d\text{Out}\, V^\top \quad (T, d_v) @ (d_v, T) \to (T, T).$$

# %%
dV = A.T @ dOut  # (T, T) @ (T, d_v) -> (T, d_v)
dA = dOut @ V.T  # (T, d_v) @ (d_v, T) -> (T, T)
print("dV:", dV.shape, "(T, d_v)   dA:", dA.shape, "(T, T)")

# %% [markdown]
# **Check it exactly.** $L$ is linear in $V$: $L(V + E) - L(V) = \sum (A E) \odot d\text{Out}$ holds
# for *any* change $E$, however large, so it must equal $\sum dV \odot E$ up to rounding. No step
# size is involved. The same test exposes a common mistake: $A$ is square, so $A\, d\text{Out}$ has
# exactly the shape of $A^\top d\text{Out}$ and raises no error. Only the values tell them apart.

# %%
E = np.random.default_rng(1).standard_normal((T, d_v))  # any change of V, (T, d_v)
change = loss(Q, K, V + E, dOut) - loss(Q, K, V, dOut)
print(f"L(V + E) - L(V)         = {change:.10f}")
print(f"sum(dV * E), dV = A^T dOut = {np.sum(dV * E):.10f}")
print(f"sum(dV * E), dV = A dOut   = {np.sum((A @ dOut) * E):.10f}   (A not transposed: same shape, wrong)")
print("A is symmetric:", np.allclose(A, A.T))

# %% [markdown]
# The transposed product reproduces the change of $L$ to every printed digit; the untransposed one
# is off. Attention weights are not symmetric (query $i$ attending to key $j$ says nothing about
# query $j$ attending to key $i$), so $A\, d\text{Out}$ is simply a different matrix. The shape rule
# gets you to "some product of $A$ and $d\text{Out}$"; which factor is transposed has to come from
# the derivation.
#
# ## 3. Through the softmax: $dS$
#
# ### One row and its Jacobian
#
# The softmax acts on each row separately: row $i$ of $A$ is $p = \operatorname{softmax}(s)$ with
# $s$ row $i$ of $S$, both of length $T$. Lesson 2 derived its $(T, T)$ Jacobian,
# $J_{ij} = \partial p_i / \partial s_j = p_i(\delta_{ij} - p_j)$:
#
# $$J = \operatorname{diag}(p) - p\, p^\top .$$
#
# The chain rule sends the row's upstream gradient $dp$ (row $i$ of $dA$) back through it:
# $ds_j = \sum_i dp_i\, \partial p_i / \partial s_j$, that is $ds = J^\top dp = J\, dp$ ($J$ is
# symmetric). Multiply it out: $\operatorname{diag}(p)\, dp = p \odot dp$, and
# $p\, p^\top dp = p\, (p \cdot dp)$ with $p \cdot dp$ a single number. So
#
# $$ds = J\, dp = p \odot \big(dp - (p \cdot dp)\big) .$$
#
# The right-hand side never forms $J$. Check both on row 0 of the lesson's head:

# %%
row = 0
p, dp = A[row], dA[row]  # (T,), (T,)
J = np.diag(p) - np.outer(p, p)  # (T, T): diag(p) - p p^T
ds_jacobian = J @ dp  # (T, T) @ (T,) -> (T,)
ds_formula = p * (dp - p @ dp)  # (T,) * ((T,) - scalar) -> (T,)
print("J symmetric:", np.allclose(J, J.T))
print("ds = J dp          :", np.round(ds_jacobian, 6))
print("ds = p * (dp - p.dp):", np.round(ds_formula, 6))
print("equal:", np.allclose(ds_jacobian, ds_formula))


# %%
def draw_heatmap(ax, matrix, title, *, cbar_label, cmap="viridis", vmin=None, vmax=None,
                 xlabel="key position", ylabel="query position"):
    """One small matrix as a labelled heatmap with a colourbar and its values printed in the cells."""
    n_rows, n_cols = matrix.shape
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_xticks(range(n_cols))
    ax.set_yticks(range(n_rows))
    for r in range(n_rows):
        for c in range(n_cols):
            text = f"{matrix[r, c]:.2f}"
            if float(text) == 0:
                text = "0.00"  # not "-0.00"
            red, green, blue, _ = image.cmap(image.norm(matrix[r, c]))
            ax.text(c, r, text, ha="center", va="center", fontsize=7,
                    color="black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white")
    ax.figure.colorbar(image, ax=ax, shrink=0.8, label=cbar_label)


fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), constrained_layout=True)
draw_heatmap(axes[0], A, "attention weights A (row 0 is p)", cbar_label="weight", vmin=0, vmax=1)
limit = np.abs(J).max()
draw_heatmap(axes[1], J, f"Jacobian of row {row}: diag(p) - p p$^T$", cbar_label="$\\partial p_i / \\partial s_j$",
             cmap="RdBu_r", vmin=-limit, vmax=limit,
             xlabel="key position j (score $s_j$ moved)", ylabel="key position i (weight $p_i$ that responds)")
fig.suptitle(f"One softmax row and its (T, T) Jacobian (T = {T}, $d_k$ = {d_k})")
plt.show()

# %% [markdown]
# *Figure: left, the $(T, T)$ attention weights; row 0 is the $p$ whose Jacobian is on the right.
# Right, entry $(i, j)$ is how much $p_i$ moves when $s_j$ moves: positive on the diagonal (raising
# a score raises its own weight), negative elsewhere (and takes weight from the others). It is
# symmetric, and its largest entries sit where $p$ is largest.*
#
# ### Every row at once
#
# Apply the row formula to all $T$ rows together. Write $\operatorname{rowsum}(M)$ for the column
# of row sums of $M$, shape `(T, 1)`. For row $i$, $p \cdot dp = \sum_j A_{ij}\, dA_{ij}$ is entry
# $i$ of $\operatorname{rowsum}(dA \odot A)$, and broadcasting subtracts it from every entry of row $i$:
#
# $$dS = A \odot \big(dA - \operatorname{rowsum}(dA \odot A)\big) \qquad (T, T) \odot \big((T, T) - (T, 1)\big) \to (T, T).$$
#
# A Jacobian per row would be $(T, T)$, so all rows' Jacobians form a $(T, T, T)$ tensor. The
# formula never builds it: it needs $A$, $dA$ and one column of $T$ numbers. The cell below checks
# the formula against the row-by-row Jacobian product (a loop that exists only for this check).

# %%
row_dots = (dA * A).sum(axis=1)[:, None]  # (T, T) -> (T,) -> (T, 1): p . dp for every row
dS = A * (dA - row_dots)  # (T, T) * ((T, T) - (T, 1)) -> (T, T)
dS_rows = np.stack([(np.diag(A[i]) - np.outer(A[i], A[i])) @ dA[i] for i in range(T)])  # (T, T), one J per row
print("dS:", dS.shape, "(T, T)   equals the row-by-row Jacobian products:", np.allclose(dS, dS_rows))
for n in (6, 1024):
    print(f"T = {n:4d}: all rows' Jacobians (T, T, T) in float64 = {8 * n**3 / 2**20:10.3f} MiB, "
          f"A, dA and dS (T, T) = {8 * n**2 / 2**20:7.3f} MiB each")

# %% [markdown]
# At a context of 1024 positions the Jacobians of one head would need 8 GiB; the formula works in
# the 8 MiB that $A$ itself takes.
#
# ### Why the rowsum term is there
#
# Adding the same number $c$ to every score of a row leaves its softmax unchanged (Lesson 1's max
# subtraction relies on it). So $L$ cannot change in the direction "all scores of row $i$ up by the
# same amount", and the derivative in that direction, $\sum_j dS_{ij}$, must be zero: **every row
# of $dS$ sums to zero.** The rowsum term is what enforces it. Forgetting it, $dS = A \odot dA$, is
# the common mistake, and it fails exactly this test:

# %%
dS_forgot = A * dA  # (T, T): the rowsum term left out


def loss_of_scores(S):
    """L as a function of the scores alone (Q, K fixed into S)."""
    return np.sum((softmax(S, axis=-1) @ V) * dOut)


c = np.random.default_rng(2).standard_normal((T, 1))  # a different constant for every row, (T, 1)
print("|L(S + c) - L(S)| < 1e-12:", abs(loss_of_scores(S + c) - loss_of_scores(S)) < 1e-12,
      "  (softmax ignores a constant added to a row)")
print("row sums of dS          :", np.round(dS.sum(axis=1), 12) + 0.0)
print("row sums of A * dA      :", np.round(dS_forgot.sum(axis=1), 6))

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.4), constrained_layout=True)
draw_heatmap(axes[0], dA, "dA = dOut V$^T$", cbar_label="$\\partial L / \\partial A_{ij}$", cmap="RdBu_r",
             vmin=-np.abs(dA).max(), vmax=np.abs(dA).max())
limit = np.abs(dS_forgot).max()
draw_heatmap(axes[1], dS, "dS = A * (dA - rowsum(dA * A))", cbar_label="$\\partial L / \\partial S_{ij}$",
             cmap="RdBu_r", vmin=-limit, vmax=limit)
draw_heatmap(axes[2], dS_forgot, "A * dA (rowsum term forgotten)", cbar_label="$\\partial L / \\partial S_{ij}$",
             cmap="RdBu_r", vmin=-limit, vmax=limit)
fig.suptitle(f"Gradients with respect to the weights and the scores (T = {T}, one head)")
plt.show()

# %% [markdown]
# *Figure: left, $dA$ has no structure of its own: it is $d\text{Out}\, V^\top$, whatever the
# weights. Middle, the true $dS$: each row holds positive and negative entries that cancel, and a
# position with little weight gets little gradient (the factor $A$). Right, without the rowsum
# term the rows no longer cancel. The term shifts entry $(i, j)$ by $A_{ij}$ times one number per
# row, $p \cdot dp$, so it moves the heavily weighted entries most: row 3's entry at key 1, where
# $A$ puts 0.47, drops from 1.05 to 0.40.*
#
# ## 4. Through the scale: $dQ$ and $dK$
#
# The scores are a matmul times a constant, $S = \frac{1}{\sqrt{d_k}}\, Q K^\top$. A constant factor
# passes straight through the chain rule, and the matmul rule with $B = K^\top$ gives
# $dQ = \frac{1}{\sqrt{d_k}}\, dS\, K$ and $d(K^\top) = \frac{1}{\sqrt{d_k}}\, Q^\top dS$. Transposing the
# second gives $dK$:
#
# $$dQ = \frac{1}{\sqrt{d_k}}\, dS\, K \quad (T, T) @ (T, d_k) \to (T, d_k), \qquad dK = \frac{1}{\sqrt{d_k}}\, dS^\top Q \quad (T, T) @ (T, d_k) \to (T, d_k).$$
#
# $dK$ uses $dS^\top$: column $j$ of $dS$ collects how every query's score with key $j$ should move.

# %%
dQ = dS @ K / np.sqrt(d_k)  # (T, T) @ (T, d_k) -> (T, d_k)
dK = dS.T @ Q / np.sqrt(d_k)  # (T, T) @ (T, d_k) -> (T, d_k)
dQ_unscaled = dS @ K  # (T, d_k): the 1/sqrt(d_k) forgotten
print("dQ:", dQ.shape, " dK:", dK.shape, "(T, d_k)")
print(f"forgetting the scale multiplies dQ by {np.linalg.norm(dQ_unscaled) / np.linalg.norm(dQ):.6f}"
      f" = sqrt(d_k) = {np.sqrt(d_k):.6f}, direction unchanged: {np.allclose(dQ_unscaled, np.sqrt(d_k) * dQ)}")

# %% [markdown]
# That mistake is easy to make: $S$ is usually computed in one line and the scale is easy to
# overlook on the way back. Its gradient points the right way and is $\sqrt{d_k}$ times too long,
# so training would still run, with the step for $W_q$ and $W_k$ silently $\sqrt{d_k}$ times larger
# than intended. A check that compares directions only would miss it; the next section's check
# compares values.
#
# ## 5. Checking gradients with finite differences
#
# **Central differences.** For one entry $\theta$ of an input, Taylor's theorem gives
# $L(\theta + \varepsilon) = L + \varepsilon L' + \frac{\varepsilon^2}{2} L'' + \frac{\varepsilon^3}{6} L''' + \dots$; subtracting
# the same expansion at $-\varepsilon$ cancels the even terms:
#
# $$\frac{L(\theta + \varepsilon) - L(\theta - \varepsilon)}{2 \varepsilon} = \frac{\partial L}{\partial \theta} + O(\varepsilon^2).$$
#
# Doing this for every entry of $Q$ costs $2\,T\,d_k$ forward passes: far too slow for training,
# fine for a check on small inputs. The comparison is a **relative error**,
#
# $$\text{rel}(a, b) = \frac{\lVert a - b \rVert}{\max(\lVert a \rVert, \lVert b \rVert)},$$
#
# which does not care how large the gradient happens to be. In float64, a correct gradient gives
# a relative error far below $10^{-7}$, the bound used in this lesson; a wrong one gives something
# of order $10^{-2}$ to $1$.

# %%
def numerical_gradient(f, x, eps):
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


tolerance = 1e-7
Qc, Kc, Vc = Q.copy(), K.copy(), V.copy()  # perturbed in place by the check
for name, analytic, x in [("dQ", dQ, Qc), ("dK", dK, Kc), ("dV", dV, Vc)]:
    numeric = numerical_gradient(lambda: loss(Qc, Kc, Vc, dOut), x, eps=1e-5)
    error = relative_error(analytic, numeric)
    print(f"{name}: relative error below {tolerance:.0e}: {error < tolerance}, even below 1e-09: {error < 1e-9}")

numeric_dV = numerical_gradient(lambda: loss(Qc, Kc, Vc, dOut), Vc, eps=1e-5)
numeric_dQ = numerical_gradient(lambda: loss(Qc, Kc, Vc, dOut), Qc, eps=1e-5)
print(f"the common mistakes: dV = A dOut      relative error {relative_error(A @ dOut, numeric_dV):.2f}")
print(f"                     dQ without scale relative error {relative_error(dQ_unscaled, numeric_dQ):.2f}")
print(f"                     dS = A * dA      relative error {relative_error(dS_forgot @ K / np.sqrt(d_k), numeric_dQ):.2f}"
      " (in dQ)")

# %% [markdown]
# All three gradients of sections 2 to 4 pass with room to spare, and all three common mistakes
# fail by many orders of magnitude. A missing $1/\sqrt{d_k}$ shows up as a relative error of
# exactly $1 - 1/\sqrt{d_k} = 0.5$, because the wrong gradient is the right one times 2.
#
# ### Why the check needs float64
#
# The step $\varepsilon$ cannot be made arbitrarily small. The truncation error shrinks like
# $\varepsilon^2$, but $L(\theta \pm \varepsilon)$ are each computed with a rounding error of about
# $u\,|L|$, where $u$ is the unit roundoff ($1.1 \times 10^{-16}$ in float64, $6 \times 10^{-8}$ in
# float32), and dividing their difference by $2\varepsilon$ turns it into an error of order
# $u\,|L| / \varepsilon$. The total is smallest near $\varepsilon \approx u^{1/3}$, about $10^{-5}$ in float64
# and $10^{-2.5}$ in float32. The same check, run on the same $Q$ in both precisions, against the
# float64 analytic $dQ$, with each error rounded to the nearest power of ten (where rounding
# dominates, the digits beyond that change from one machine to the next):

# %%
step_sizes = np.logspace(-1, -9, 17)  # 1e-1 down to 1e-9, half a decade apart
errors = {}
for dtype in (np.float64, np.float32):
    q, k, v, g = (a.astype(dtype) for a in (Q, K, V, dOut))
    errors[dtype.__name__] = [relative_error(dQ, numerical_gradient(lambda: loss(q, k, v, g), q, dtype(eps)))
                              for eps in step_sizes]


def about(x):
    """x to the nearest power of ten, as text: 6.1e-06 -> '1e-05' (the digits below it are rounding noise)."""
    return f"1e{int(np.round(np.log10(x))):+03d}"


print("relative error of dQ, to the nearest power of ten")
print("   eps    float64   float32")
for i in range(0, len(step_sizes), 2):
    print(f"{step_sizes[i]:7.0e}  {about(errors['float64'][i]):>8}  {about(errors['float32'][i]):>8}")
for name, errs in errors.items():
    print(f"{name}: smallest relative error about {about(min(errs))}; below {tolerance:.0e} at some eps: {min(errs) < tolerance}")

# %%
fig, ax = plt.subplots(figsize=(8, 4.6), constrained_layout=True)
for name, marker in [("float64", "o-"), ("float32", "s-")]:
    _ = ax.loglog(step_sizes, errors[name], marker, label=f"finite differences in {name}")
_ = ax.axhline(tolerance, color="grey", linestyle="--", label=f"bound {tolerance:.0e}")
ax.invert_xaxis()
ax.set_xlabel("step size $\\varepsilon$ (log scale, smaller to the right)")
ax.set_ylabel("relative error of $dQ$ (log scale)")
ax.set_title(f"Central differences against the analytic dQ (T = {T}, $d_k$ = {d_k})")
ax.legend()
plt.show()

# %% [markdown]
# *Figure: read each curve from left to right as the step shrinks. At first both fall along the
# same line of slope 2 (truncation, $\propto \varepsilon^2$). Then rounding takes over and the error
# climbs again, $\propto 1/\varepsilon$. The float32 curve turns around much earlier and never gets
# below the dashed bound; the float64 curve dips more than three orders of magnitude below it,
# and climbs back above it only for steps below $10^{-8}$.*
#
# So a float32 check cannot pass: its best relative error, printed above, is about $10^{-5}$, near
# $\varepsilon = 10^{-2}$, and a gradient that is wrong by a few parts in a million would look just as
# good. That is why gradient checks run in float64, and why the step is about $10^{-5}$, not "as
# small as possible".
#
# ## 6. Saturation, computed
#
# Lesson 2 argued that without the $1/\sqrt{d_k}$ scale, scores grow like $\sqrt{d_k}$, rows of the
# softmax saturate, their Jacobian goes to zero, and so does the gradient that trains $W_q$. With
# the backward pass in hand, measure it.
#
# **The layer.** One head of one sequence: $X$ of shape `(T, C)`, $Q = X W_q$, $K = X W_k$,
# $V = X W_v$ with $(C, d_k)$ weights, the model width fixed at $C = 64$. Tokens have length about 1
# ($X_{ij} \sim \mathcal N(0, 1/C)$) and the weights have unit-variance entries, so every entry of a
# query and a key has variance about 1, as in Lesson 2, whatever $d_k$ is. (A head larger than the
# model width does not occur in a real layer; here it only extends the trend, because the scores
# depend on $d_k$, not on $C$.) The upstream gradient has rows of length about 1 too.
#
# **The gradient of $W_q$.** The matmul rule for $Q = X W_q$ gives
#
# $$dW_q = X^\top dQ \quad (C, T) @ (T, d_k) \to (C, d_k), \qquad dQ = s\, dS\, K, \quad s = 1/\sqrt{d_k} \text{ or } 1 .$$
#
# $dW_q$ is a sum over query positions, $dW_q = \sum_i x_i^\top\, dq_i$, where $x_i$ and $dq_i$ are
# row $i$ of $X$ and $dQ$. Term $i$ is the gradient that query $i$'s part of the loss,
# $L_i = \text{Out}_i \cdot d\text{Out}_i$, sends to $W_q$, and its norm is
# $\lVert x_i \rVert\, \lVert dq_i \rVert$. The function below computes the whole layer's $dW_q$ and
# these per-query norms; it is checked once against finite differences before the sweep.

# %%
def single_head_wq_gradient(X, Q, K, V, dOut, scaled=True):
    """One head, one sequence: X (T, C) and its projections Q, K, V = X Wq, X Wk, X Wv (T, d_k); dOut (T, d_k).

    Returns dWq (C, d_k), the per-query norms ||x_i|| ||dq_i|| (T,), and each row's largest weight (T,).
    """
    s = 1 / np.sqrt(Q.shape[-1]) if scaled else 1.0
    A = softmax(s * Q @ K.T, axis=-1)  # (T, d_k) @ (d_k, T) -> (T, T)
    dA = dOut @ V.T  # (T, d_k) @ (d_k, T) -> (T, T)
    dS = A * (dA - (dA * A).sum(axis=1)[:, None])  # (T, T)
    dQ = s * dS @ K  # (T, T) @ (T, d_k) -> (T, d_k)
    dWq = X.T @ dQ  # (C, T) @ (T, d_k) -> (C, d_k)
    return dWq, np.linalg.norm(X, axis=1) * np.linalg.norm(dQ, axis=1), A.max(axis=1)  # (T,), (T,)


def draw_layer(n_tokens, width, head_size, layer_seed):
    """X (T, C) with rows of length about 1; Wq, Wk, Wv (C, d_k) with unit-variance entries; dOut (T, d_k)."""
    layer_rng = np.random.default_rng(layer_seed)
    X = layer_rng.standard_normal((n_tokens, width)) / np.sqrt(width)  # (T, C)
    weights = [layer_rng.standard_normal((width, head_size)) for _ in range(3)]  # Wq, Wk, Wv, each (C, d_k)
    upstream = layer_rng.standard_normal((n_tokens, head_size)) / np.sqrt(head_size)  # (T, d_k)
    return X, *weights, upstream


def project(X, Wq, Wk, Wv, dOut):
    """The arguments of single_head_wq_gradient: X, Q, K, V, dOut."""
    return X, X @ Wq, X @ Wk, X @ Wv, dOut  # (T, C) @ (C, d_k) -> (T, d_k), three times


X1, Wq1, Wk1, Wv1, dOut1 = draw_layer(8, 6, 8, layer_seed=0)  # T = 8, C = 6, d_k = 8
for scaled in (True, False):
    dWq1 = single_head_wq_gradient(*project(X1, Wq1, Wk1, Wv1, dOut1), scaled)[0]
    W = Wq1.copy()
    numeric = numerical_gradient(lambda: np.sum(attention_forward(X1 @ W * (1.0 if scaled else np.sqrt(8)),
                                                                  X1 @ Wk1, X1 @ Wv1)[0] * dOut1), W, eps=1e-5)
    print(f"scaled={scaled!s:5}: dWq relative error against finite differences below 1e-09:"
          f" {relative_error(dWq1, numeric) < 1e-9}")

# %% [markdown]
# (The unscaled layer is checked by feeding `attention_forward`, which always divides by
# $\sqrt{d_k}$, queries multiplied by $\sqrt{d_k}$: the scores come out unscaled.)
#
# **The sweep.** For $d_k = 1, 2, 4, \dots, 512$, draw 20 layers with $T = 8$ (`default_rng(0)` to `default_rng(19)`, so
# 160 queries per $d_k$) and record, with and without the scale, the median per-query norm and the
# median of the whole layer's $\lVert dW_q \rVert_F$.

# %%
d_k_values = [2**n for n in range(10)]  # 1 .. 512
n_layers, n_tokens, width = 20, 8, 64
sweep = {}  # (d_k, scaled) -> per-query norms (n_layers * T,), layer norms (n_layers,), largest weights (n_layers * T,)
for head_size in d_k_values:
    layers = [project(*draw_layer(n_tokens, width, head_size, layer_seed)) for layer_seed in range(n_layers)]
    for scaled in (True, False):
        results = [single_head_wq_gradient(*layer, scaled=scaled) for layer in layers]
        sweep[head_size, scaled] = (np.concatenate([per_query for _, per_query, _ in results]),
                                np.array([np.linalg.norm(dWq) for dWq, _, _ in results]),
                                np.concatenate([largest for _, _, largest in results]))

print("  d_k | median per-query ||dL_i/dW_q|| | below 1% of the scaled median | median ||dW_q||_F")
print("      |      scaled     unscaled       |      scaled     unscaled       |   scaled  unscaled")
for head_size in d_k_values:
    (q_scaled, w_scaled, _), (q_raw, w_raw, _) = sweep[head_size, True], sweep[head_size, False]
    floor = 0.01 * np.median(q_scaled)
    print(f"{head_size:5d} | {np.median(q_scaled):11.3g} {np.median(q_raw):12.3g}       |"
          f" {np.mean(q_scaled < floor):11.1%} {np.mean(q_raw < floor):12.1%}       |"
          f" {np.median(w_scaled):8.3g} {np.median(w_raw):9.3g}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 4.6), constrained_layout=True)
for scaled, label, marker in [(True, "scaled by $1/\\sqrt{d_k}$", "s-"), (False, "unscaled", "o-")]:
    _ = axes[0].plot(d_k_values, [np.median(sweep[w, scaled][0]) for w in d_k_values], marker, label=label)
    _ = axes[1].plot(d_k_values, [np.median(sweep[w, scaled][1]) for w in d_k_values], marker, label=label)
for ax, ylabel, title in [
        (axes[0], "median over queries of $\\|\\partial L_i / \\partial W_q\\|_F$", "What one query sends to $W_q$"),
        (axes[1], "median over layers of $\\|dW_q\\|_F$", "The whole layer's $dW_q$")]:
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(d_k_values, [str(w) for w in d_k_values])
    ax.set_xlabel("$d_k$ (log scale)")
    ax.set_ylabel(ylabel + " (log scale)")
    ax.set_title(title)
    ax.legend()
fig.suptitle(f"Gradient reaching $W_q$ with and without the scale (T = {n_tokens}, C = {width},"
             f" {n_layers} seeded layers per $d_k$)")
plt.show()

# %% [markdown]
# *Figure: logarithmic axes. Left, the gradient that a typical query sends to $W_q$. With the
# scale it stays between 0.20 and 0.32 from $d_k = 4$ to 512. Without it, it peaks at $d_k = 32$ and
# then falls by more than two orders of magnitude, to 0.00283 at $d_k = 512$. Right, the whole
# layer's $\lVert dW_q \rVert_F$: without the scale it grows 12-fold from $d_k = 1$ to 512 and stays
# above the scaled curve at every $d_k > 1$.*
#
# This is Lesson 2's argument, measured. Without the scale, at $d_k = 512$, 50.6% of the queries
# send less than 1% of the typical scaled gradient to $W_q$, against none with the scale. The
# right-hand panel seems to say the opposite, so look at where the unscaled layer's gradient
# comes from at $d_k = 512$: sort its 160 queries by the gradient each sends to $W_q$ and take the
# top 10% (16 queries).

# %%
for scaled, name in [(False, "unscaled"), (True, "scaled  ")]:
    per_query, _, largest = sweep[512, scaled]
    top = np.argsort(per_query)[-len(per_query) // 10:]  # the 16 queries with the largest gradients
    print(f"{name}: top 10% of queries carry {per_query[top].sum() / per_query.sum():6.1%} of the summed per-query"
          f" norms; median largest weight of a row: all queries {np.median(largest):.4f},"
          f" top 10% {np.median(largest[top]):.4f}; largest of any row {largest.max():.4f}")

# %% [markdown]
# Without the scale, 16 queries carry 67.5% of the summed gradient norms, and they are the rare
# rows that are not saturated: their median largest weight is 0.6809, while the median row of all
# 160 puts 0.9998 of its weight on a single key. The saturated rows send almost nothing back (the
# "below 1%" column): a gradient step would barely move where those queries attend, however
# large the layer's total gradient. With the scale, the top 10% carry 21.8%, and no row puts more
# than 0.7054 of its weight on one key.
#
# ## 7. Optional: the same gradients from PyTorch
#
# If PyTorch is installed (`make torch` installs it), its automatic differentiation can confirm
# the hand-derived gradients of sections 2 to 4 and the $dW_q$ of section 6, in float64. What the
# cell prints depends on whether PyTorch is installed; where it is not, the cell says so and the
# rest of the lesson does not need it.

# %%
# NBVAL_IGNORE_OUTPUT
if not full_demos():
    print("The PyTorch comparison is skipped in this shortened run.")
elif importlib.util.find_spec("torch") is None:
    print("PyTorch is not installed: `make torch` installs it (optional; nothing else in this lesson needs it).")
else:
    import torch

    Qt, Kt, Vt = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (Q, K, V))
    At = torch.softmax(Qt @ Kt.T / d_k**0.5, dim=-1)  # (T, T)
    (At @ Vt * torch.tensor(dOut)).sum().backward()
    Wt = torch.tensor(Wq1, requires_grad=True)
    Xt = torch.tensor(X1)
    Qw, Kw, Vw = Xt @ Wt, Xt @ torch.tensor(Wk1), Xt @ torch.tensor(Wv1)  # (T, C) @ (C, d_k)
    (torch.softmax(Qw @ Kw.T / 8**0.5, dim=-1) @ Vw * torch.tensor(dOut1)).sum().backward()
    dWq1 = single_head_wq_gradient(*project(X1, Wq1, Wk1, Wv1, dOut1))[0]
    difference = max(np.abs(ours - theirs.grad.numpy()).max()
                     for ours, theirs in [(dQ, Qt), (dK, Kt), (dV, Vt), (dWq1, Wt)])
    bound = 1e-12
    print(f"PyTorch {torch.__version__}: largest |hand-derived - autograd| over dQ, dK, dV, dWq = {difference:.1e}"
          f" (bound {bound:.0e})")
    assert difference < bound

# %% [markdown]
# ## 8. The multi-head layer, backwards
#
# The layer of Lessons 3 and 4 takes $X$ of shape `(B, T, C)` and four `(C, C)` weights. Its
# forward pass is a chain, and the backward pass walks the same chain in reverse:
#
# | forward | shape after | backward |
# |---|---|---|
# | $Q = X W_q$, $K = X W_k$, $V = X W_v$ | `(B, T, C)` | $dW_q = \sum_{b,t} x_{bt}^\top dq_{bt}$; $dX$ from all three |
# | split: reshape, transpose | `(B, h, T, hs)` | merge the head gradients back |
# | attention per head | `(B, h, T, hs)` | the single-head backward, batched over $(B, h)$ |
# | merge (concat): transpose, reshape | `(B, T, C)` | split the gradient into heads |
# | $\text{Out} = \text{concat}\; W_o$ | `(B, T, C)` | $dW_o$, $d\,\text{concat}$ |
#
# Two facts carry the extra steps. The cells below prove each one on small arrays.
#
# **A reshuffle's backward is its inverse.** The merge only moves numbers: each output entry is
# one input entry. The gradient of a moved number moves back to where it came from, so the
# backward of the merge is the split, and the backward of the split is the merge. Formally, for
# a reshuffle $P$ and any arrays $a, b$: $\langle P(a), b \rangle = \langle a, P^{-1}(b) \rangle$.

# %%
shuffle_rng = np.random.default_rng(3)
B_, T_, h_, hs_ = 2, 5, 3, 4
C_ = h_ * hs_
a = shuffle_rng.standard_normal((B_, h_, T_, hs_))  # (B, h, T, hs): per-head outputs
b = shuffle_rng.standard_normal((B_, T_, C_))  # (B, T, C): a gradient arriving at the concat
merged = a.transpose(0, 2, 1, 3).reshape(B_, T_, C_)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
split_b = b.reshape(B_, T_, h_, hs_).transpose(0, 2, 1, 3)  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)
scrambled_b = b.reshape(B_, h_, T_, hs_)  # (B, T, C) -> (B, h, T, hs) WITHOUT the transpose: legal, wrong
print(f"<merge(a), b>          = {np.sum(merged * b):.10f}")
print(f"<a, split(b)>          = {np.sum(a * split_b):.10f}")
print(f"<a, reshape-only(b)>   = {np.sum(a * scrambled_b):.10f}   (the split without its transpose)")

# %% [markdown]
# The split, done properly, is exactly the adjoint of the merge; a plain reshape of the same
# shape is not, and would hand each head the gradient of another head's positions.
#
# **A weight's gradient sums over the batch and every position.** $W_q$ is used at every
# position $t$ of every sequence $b$: $q_{bt} = x_{bt} W_q$. Each use contributes
# $x_{bt}^\top dq_{bt}$ (a `(C, 1) @ (1, C)` outer product) and the contributions add. Stacking the
# $B \cdot T$ rows turns the sum into one matmul:
#
# $$dW_q = \sum_{b, t} x_{bt}^\top\, dq_{bt} = X_{\text{rows}}^\top\, dQ_{\text{rows}} \qquad (C, BT) @ (BT, C) \to (C, C),$$
#
# where $X_{\text{rows}}$ is $X$ reshaped from `(B, T, C)` to `(B·T, C)`. The same holds for $W_k$,
# $W_v$ and $W_o$ (whose input is the concat). For a linear map the check is exact again:

# %%
Xb = shuffle_rng.standard_normal((B_, T_, C_))  # (B, T, C)
W = shuffle_rng.standard_normal((C_, C_))  # (C, C)
dY = shuffle_rng.standard_normal((B_, T_, C_))  # (B, T, C): upstream gradient of Y = X W
dW = Xb.reshape(B_ * T_, C_).T @ dY.reshape(B_ * T_, C_)  # (C, B*T) @ (B*T, C) -> (C, C)
dW_loop = sum(Xb[i].T @ dY[i] for i in range(B_))  # (C, T) @ (T, C), summed over the batch
E = shuffle_rng.standard_normal((C_, C_))  # any change of W
print("one matmul equals the sum over the batch:", np.allclose(dW, dW_loop))
print(f"L(W + E) - L(W) = {np.sum((Xb @ (W + E)) * dY) - np.sum((Xb @ W) * dY):.10f}")
print(f"sum(dW * E)     = {np.sum(dW * E):.10f}")
print(f"first sequence only: sum(dW_0 * E) = {np.sum((Xb[0].T @ dY[0]) * E):.10f}   (the batch sum forgotten)")

# %% [markdown]
# **Three paths into $X$ add up.** $X$ feeds $Q$, $K$ and $V$. When one variable reaches the loss
# along several paths, the multivariable chain rule adds the contributions of the paths, each
# given by the matmul rule for its projection:
#
# $$dX = dQ_{\text{rows}}\, W_q^\top + dK_{\text{rows}}\, W_k^\top + dV_{\text{rows}}\, W_v^\top \qquad (B, T, C) @ (C, C) \to (B, T, C), \text{ three times}.$$
#
# Exercise 3 puts the whole chain together.

# %% [markdown]
# ## Practice exercises
#
# Each exercise asks for one function. Replace `raise NotImplementedError()` with your code, run
# the cell, then run the test cell below it. The visible checks use the lesson's arrays and
# central differences, and tell you what a failure most likely means; when your notebook is
# graded, hidden tests call your function again on fresh inputs (other shapes and random draws) and
# compare it with the reference and with finite differences, so write the general function, not
# one that fits these arrays. Every function must leave its inputs unchanged.
#
# ### Exercise 1: the softmax backward for any number of rows (2 points)
#
# Write `softmax_backward(A, dA)`. `A` holds softmax rows over the **last** axis, shape
# `(..., T_q, T_k)` with any number of leading axes (none, a batch axis, batch and heads), and `dA`
# is the upstream gradient of the same shape. Return
#
# $$dS = A \odot \big(dA - \operatorname{rowsum}(dA \odot A)\big),$$
#
# same shape, where the rowsum runs over the last axis and broadcasts back over it. Do not build a
# Jacobian.

# %% nbgrader={"grade": false, "grade_id": "softmax_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def softmax_backward(A, dA):
    """Gradient with respect to the scores S, where A = softmax(S) over the last axis.

    A, dA: (..., T_q, T_k) -> dS: (..., T_q, T_k).
    """
    ### BEGIN SOLUTION
    row_dots = np.sum(dA * A, axis=-1, keepdims=True)  # (..., T_q, T_k) -> (..., T_q, 1): p . dp per row
    return A * (dA - row_dots)  # (..., T_q, T_k) * ((..., T_q, T_k) - (..., T_q, 1))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_softmax_backward", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def check_softmax_backward(A, dA):
    """Visible check with a hint for the usual mistakes: the two properties that pin dS down.

    dS = A * (dA - c) with one number c per row, so where A > 0, dS / A - dA is constant along
    each row; and every row of dS sums to 0. Only one dS has both.
    """
    inputs = (A.copy(), dA.copy())
    got = softmax_backward(A, dA)
    assert np.array_equal(A, inputs[0]) and np.array_equal(dA, inputs[1]), "softmax_backward modified its inputs"
    assert isinstance(got, np.ndarray), f"softmax_backward should return a NumPy array, got {type(got).__name__}"
    assert got.shape == A.shape, f"dS should have the shape of the scores, {A.shape}, got {got.shape}"
    if np.allclose(got, A * dA) and not np.allclose((A * dA).sum(axis=-1), 0.0):
        raise AssertionError("you returned A * dA: the rowsum term is missing "
                             "(dS = A * (dA - rowsum(dA * A)), and every row of dS sums to 0)")
    if not np.allclose(got.sum(axis=-1), 0.0):
        raise AssertionError("the rows of dS should sum to 0 (softmax ignores a constant added to a row): "
                             "sum dA * A over the LAST axis, with keepdims=True so that it broadcasts over the row")
    shift = np.where(A > 0, got / np.where(A > 0, A, 1.0) - dA, np.nan)  # (..., T_q, T_k): -c on every row
    spread = np.nanmax(shift, axis=-1) - np.nanmin(shift, axis=-1)  # (..., T_q)
    assert np.allclose(spread, 0.0), (
        "wrong values: each row of dS should be A times (dA minus ONE number per row), that number being "
        "the row's sum of dA * A")


# Worked by hand: A = [0.25, 0.75], dA = [2, 0]: rowsum(dA * A) = 0.5, dS = [0.25 * 1.5, 0.75 * -0.5].
_got = softmax_backward(np.array([[0.25, 0.75]]), np.array([[2.0, 0.0]]))
assert np.allclose(_got, [[0.375, -0.375]]), f"softmax_backward([[0.25, 0.75]], [[2, 0]]) should be [[0.375, -0.375]], got {_got}"
check_softmax_backward(A, dA)  # the lesson's head: (T, T)
batch_rng = np.random.default_rng(4)
scores_batch = batch_rng.standard_normal((2, 3, 5, 7))  # (B, h, T_q, T_k)
check_softmax_backward(softmax(scores_batch), batch_rng.standard_normal((2, 3, 5, 7)))
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: the whole attention backward (3 points)
#
# Write `attention_backward(Q, K, V, dOut)` for scaled dot-product attention over any leading
# axes: `Q` is `(..., T_q, d_k)`, `K` is `(..., T_k, d_k)`, `V` is `(..., T_k, d_v)` and `dOut`, the
# upstream gradient of $\text{Out} = \operatorname{softmax}(Q K^\top / \sqrt{d_k})\, V$, is
# `(..., T_q, d_v)`. The queries and the keys may have different lengths ($T_q \ne T_k$, as in
# cross-attention), and $d_v$ may differ from $d_k$. Return the tuple `(dQ, dK, dV)`, each with the
# shape of its input.
#
# The function takes no weights from the forward pass: recompute $A$ inside it (with
# `attention_forward`, or from the formula), then run sections 2 to 4 backwards:
#
# $$dV = A^\top d\text{Out}, \quad dA = d\text{Out}\, V^\top, \quad dS = \texttt{softmax\_backward}(A, dA), \quad dQ = \frac{dS\, K}{\sqrt{d_k}}, \quad dK = \frac{dS^\top Q}{\sqrt{d_k}} .$$
#
# With leading axes, "transpose" means swapping the **last two** axes (`np.swapaxes(M, -1, -2)`);
# `M.T` reverses all of them.

# %% nbgrader={"grade": false, "grade_id": "attention_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def attention_backward(Q, K, V, dOut):
    """Gradients of scaled dot-product attention with respect to its inputs.

    Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v), dOut (..., T_q, d_v)
    -> (dQ (..., T_q, d_k), dK (..., T_k, d_k), dV (..., T_k, d_v)).
    """
    ### BEGIN SOLUTION
    _, A = attention_forward(Q, K, V)  # (..., T_q, T_k), recomputed
    scale = 1 / np.sqrt(Q.shape[-1])
    dV = np.swapaxes(A, -1, -2) @ dOut  # (..., T_k, T_q) @ (..., T_q, d_v) -> (..., T_k, d_v)
    dA = dOut @ np.swapaxes(V, -1, -2)  # (..., T_q, d_v) @ (..., d_v, T_k) -> (..., T_q, T_k)
    dS = softmax_backward(A, dA)  # (..., T_q, T_k)
    dQ = scale * (dS @ K)  # (..., T_q, T_k) @ (..., T_k, d_k) -> (..., T_q, d_k)
    dK = scale * (np.swapaxes(dS, -1, -2) @ Q)  # (..., T_k, T_q) @ (..., T_q, d_k) -> (..., T_k, d_k)
    return dQ, dK, dV
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_attention_backward", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def _central_differences(f, x, eps=1e-5):
    """Gradient of the scalar f() with respect to x (perturbed in place, then restored), by central differences."""
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


class _Exercise1NotPassed(Exception):
    pass


def _held_to_exercise_1(students_softmax_backward):
    """Your softmax_backward, each of whose results must pass Exercise 1's two checks (rows of dS sum to 0,
    and dS / A - dA is constant along each row), so that a mistake there does not count here."""
    def softmax_backward_checked(A, dA):
        try:
            dS = np.asarray(students_softmax_backward(A, dA), dtype=float)
            ok = dS.shape == A.shape and np.allclose(dS.sum(axis=-1), 0.0)
            if ok:
                shift = np.where(A > 0, dS / np.where(A > 0, A, 1.0) - dA, np.nan)  # -c on every row
                ok = np.allclose(np.nanmax(shift, axis=-1) - np.nanmin(shift, axis=-1), 0.0)
        except Exception:  # noqa: BLE001 (any failure of Exercise 1 means: skip, do not fail this cell)
            ok = False
        if not ok:
            raise _Exercise1NotPassed
        return dS
    return softmax_backward_checked


def check_attention_backward(Q, K, V, dOut):
    """Visible check with a hint for the usual mistakes: compares with central differences of the forward pass."""
    inputs = [Q.copy(), K.copy(), V.copy(), dOut.copy()]
    students_softmax_backward = globals().get("softmax_backward")
    globals()["softmax_backward"] = _held_to_exercise_1(students_softmax_backward)
    try:
        got = attention_backward(Q, K, V, dOut)
    except _Exercise1NotPassed:  # when graded, this exercise is checked with a correct softmax_backward in place of yours
        print(f"inputs of shape {Q.shape}: skipped, because your softmax_backward fails Exercise 1's checks on "
              "the weights attention_backward gives it: fix Exercise 1 first, then run this cell again")
        return
    except ValueError as error:
        raise AssertionError(f"attention_backward failed on inputs of shape {Q.shape} ({error}). Transpose "
                             "only the last two axes, np.swapaxes(M, -1, -2), whatever the leading axes: M.T "
                             "reverses ALL axes, and M.transpose(0, 1, 3, 2) assumes exactly four") from None
    finally:
        globals()["softmax_backward"] = students_softmax_backward
    assert all(np.array_equal(x, y) for x, y in zip((Q, K, V, dOut), inputs, strict=True)), (
        "attention_backward modified its inputs")
    assert isinstance(got, tuple) and len(got) == 3, "attention_backward should return a tuple (dQ, dK, dV)"
    dQ_got, dK_got, dV_got = (np.asarray(g) for g in got)
    for name, g, x in [("dQ", dQ_got, Q), ("dK", dK_got, K), ("dV", dV_got, V)]:
        assert g.shape == x.shape, f"{name} should have the shape of its input, {x.shape}, got {g.shape}"
    Qc, Kc, Vc = (x.copy() for x in (Q, K, V))

    def loss_now():
        return np.sum(attention_forward(Qc, Kc, Vc)[0] * dOut)

    dQ_fd, dK_fd, dV_fd = (_central_differences(loss_now, x) for x in (Qc, Kc, Vc))
    _, A_ = attention_forward(Q, K, V)
    if not np.allclose(dV_got, dV_fd, atol=1e-6):
        if np.allclose(dV_got, A_ @ dOut):
            raise AssertionError("dV = A dOut is the untransposed product: dV = A^T dOut (swap the last two axes of A)")
        raise AssertionError("dV is wrong: dV = A^T dOut, with A recomputed from Q and K")
    root = np.sqrt(Q.shape[-1])
    for name, g, fd in [("dQ", dQ_got, dQ_fd), ("dK", dK_got, dK_fd)]:
        if not np.allclose(g, fd, atol=1e-6):
            if np.allclose(g, root * fd, atol=1e-6):
                raise AssertionError(f"{name} is sqrt(d_k) times too large: the scores were divided by sqrt(d_k), "
                                     "so the gradient of Q and K carries the same 1/sqrt(d_k)")
            if name == "dK" and np.allclose(dQ_got, dQ_fd, atol=1e-6):
                raise AssertionError("dQ is right but dK is wrong: dK = dS^T Q / sqrt(d_k) (S = Q K^T, so the "
                                     "gradient of K uses the TRANSPOSE of dS)")
            raise AssertionError(f"{name} is wrong (dV is right): check dA = dOut V^T, dS = softmax_backward(A, dA), "
                                 "dQ = dS K / sqrt(d_k), dK = dS^T Q / sqrt(d_k)")


check_attention_backward(Q, K, V, dOut)  # the lesson's head: 2-D arrays
head_rng = np.random.default_rng(5)
check_attention_backward(*(head_rng.standard_normal((2, 3, 6, 4)) for _ in range(4)))  # (B, h, T, hs)
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: the multi-head layer backward (4 points)
#
# Write `mha_backward(X, Wq, Wk, Wv, Wo, h, dOut)` for the layer `mha_forward(X, Wq, Wk, Wv, Wo, h)`
# of section 1: `X` is `(B, T, C)`, the four weights are `(C, C)`, `h` divides `C`, and `dOut` is the
# upstream gradient `(B, T, C)`. Return a **dict** with the keys `"dX"` `(B, T, C)` and `"dWq"`,
# `"dWk"`, `"dWv"`, `"dWo"`, each `(C, C)`. You may call `mha_forward` (for the cache) and your
# `attention_backward`. Walk the chain of section 8 in reverse; with $R = B \cdot T$ rows and
# $hs = C / h$:
#
# 1. Output projection: $dW_o = \text{concat}_{\text{rows}}^\top\, d\text{Out}_{\text{rows}}$, `(C, R) @ (R, C)`;
#    $d\,\text{concat} = d\text{Out}\, W_o^\top$, `(B, T, C)`.
# 2. Backward of the merge, which is the split: $d\,\text{concat}$ `(B, T, C)` to `(B, T, h, hs)` to
#    `(B, h, T, hs)`.
# 3. Attention, every head at once: $dQ, dK, dV$ `(B, h, T, hs)` from `attention_backward`.
# 4. Backward of the split, which is the merge: each of $dQ, dK, dV$ from `(B, h, T, hs)` to
#    `(B, T, h, hs)` to `(B, T, C)`.
# 5. Projections: $dW_q = X_{\text{rows}}^\top dQ_{\text{rows}}$, `(C, R) @ (R, C)`, and the same for $W_k, W_v$;
#    $dX = dQ\, W_q^\top + dK\, W_k^\top + dV\, W_v^\top$, `(B, T, C)`.

# %% nbgrader={"grade": false, "grade_id": "mha_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def mha_backward(X, Wq, Wk, Wv, Wo, h, dOut):
    """Gradients of the multi-head attention layer mha_forward(X, Wq, Wk, Wv, Wo, h).

    X (B, T, C), Wq, Wk, Wv, Wo (C, C), dOut (B, T, C)
    -> {"dX": (B, T, C), "dWq": (C, C), "dWk": (C, C), "dWv": (C, C), "dWo": (C, C)}.
    """
    ### BEGIN SOLUTION
    B, T, C = X.shape
    hs = C // h
    _, cache = mha_forward(X, Wq, Wk, Wv, Wo, h)

    # 1. Out = concat @ Wo.
    dOut_rows = dOut.reshape(B * T, C)  # (B, T, C) -> (B*T, C)
    dWo = cache["concat"].reshape(B * T, C).T @ dOut_rows  # (C, B*T) @ (B*T, C) -> (C, C)
    d_concat = dOut @ Wo.T  # (B, T, C) @ (C, C) -> (B, T, C)

    # 2. The merge's backward is the split.
    d_per_head = d_concat.reshape(B, T, h, hs).transpose(0, 2, 1, 3)  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)

    # 3. All heads' attention backward at once.
    dQ, dK, dV = attention_backward(cache["Q"], cache["K"], cache["V"], d_per_head)  # each (B, h, T, hs)

    # 4. The split's backward is the merge.
    def merge(G):  # (B, h, T, hs) -> (B, T, h, hs) -> (B*T, C)
        return G.transpose(0, 2, 1, 3).reshape(B * T, C)

    dQ, dK, dV = merge(dQ), merge(dK), merge(dV)  # each (B*T, C)

    # 5. The three projections: weights sum over all B*T rows, and X collects all three paths.
    X_rows = X.reshape(B * T, C)  # (B, T, C) -> (B*T, C)
    dX = dQ @ Wq.T + dK @ Wk.T + dV @ Wv.T  # (B*T, C) @ (C, C) -> (B*T, C)
    return {"dX": dX.reshape(B, T, C),  # (B*T, C) -> (B, T, C)
            "dWq": X_rows.T @ dQ, "dWk": X_rows.T @ dK, "dWv": X_rows.T @ dV,  # (C, B*T) @ (B*T, C) -> (C, C)
            "dWo": dWo}
    ### END SOLUTION


# %% [markdown]
# On the lesson's layer ($B = 2$, $T = 5$, $C = 8$, $h = 2$), every gradient has the shape of its
# variable:

# %%
layer_rng = np.random.default_rng(6)
B, T_mha, C, h = 2, 5, 8, 2
X = layer_rng.standard_normal((B, T_mha, C))  # (B, T, C)
Wq, Wk, Wv, Wo = (layer_rng.standard_normal((C, C)) * 0.5 for _ in range(4))  # each (C, C)
dOut_mha = layer_rng.standard_normal((B, T_mha, C))  # (B, T, C)
grads = mha_backward(X, Wq, Wk, Wv, Wo, h, dOut_mha)
for name, value in grads.items():
    print(f"{name}: {value.shape}")


# %% nbgrader={"grade": true, "grade_id": "test_mha_backward", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
def _exercise_2_passes(rng):
    """Whether your attention_backward (Exercise 2) gives the gradients of central differences on one small case."""
    Q, K, V, dOut = (rng.standard_normal((2, 2, 3, 2)) for _ in range(4))  # (B, h, T, hs) each

    def loss_now():
        return np.sum(attention_forward(Q, K, V)[0] * dOut)

    expected = [_central_differences(loss_now, x) for x in (Q, K, V)]  # dQ, dK, dV, each (B, h, T, hs)
    try:
        got = attention_backward(Q.copy(), K.copy(), V.copy(), dOut.copy())
        return len(got) == 3 and all(np.shape(g) == e.shape and np.allclose(g, e, atol=1e-6)
                                     for g, e in zip(got, expected, strict=True))
    except Exception:  # noqa: BLE001 (any failure of Exercise 2 means: skip the check below, do not fail this cell)
        return False


class _Exercise2NotPassed(Exception):
    pass


def _waiting_for_exercise_2(Q, K, V, dOut):
    """Stands in for an attention_backward that does not pass Exercise 2 yet: the check stops where it is called."""
    raise _Exercise2NotPassed


def check_mha_backward(X, Wq, Wk, Wv, Wo, h, dOut):
    """Visible check with a hint for the usual mistakes: compares with central differences of mha_forward.

    Your mha_backward calls your attention_backward, so the check runs to the end once that one passes
    Exercise 2 (Exercise 3 is graded on its own, with a correct attention backward in place of yours).
    Returns whether it ran to the end.
    """
    inputs = [x.copy() for x in (X, Wq, Wk, Wv, Wo, dOut)]
    students_attention_backward = globals().get("attention_backward")
    if not _exercise_2_passes(np.random.default_rng(3)):
        globals()["attention_backward"] = _waiting_for_exercise_2
    try:
        got = mha_backward(X, Wq, Wk, Wv, Wo, h, dOut)
    except _Exercise2NotPassed:
        print("Exercise 3's visible check stopped where your mha_backward calls your attention_backward, which does "
              "not pass Exercise 2 yet: fix Exercise 2 first, then run this cell again.")
        return False
    finally:
        globals()["attention_backward"] = students_attention_backward
    assert all(np.array_equal(x, y) for x, y in zip((X, Wq, Wk, Wv, Wo, dOut), inputs, strict=True)), (
        "mha_backward modified its inputs")
    names = ["dX", "dWq", "dWk", "dWv", "dWo"]
    assert isinstance(got, dict) and set(got) == set(names), f"mha_backward should return a dict with keys {names}"
    variables = dict(zip(names, [x.copy() for x in (X, Wq, Wk, Wv, Wo)], strict=True))

    def loss_now():
        return np.sum(mha_forward(variables["dX"], variables["dWq"], variables["dWk"], variables["dWv"],
                                  variables["dWo"], h)[0] * dOut)

    wrong = []
    for name in names:
        g = np.asarray(got[name])
        assert g.shape == variables[name].shape, f"{name} should be {variables[name].shape}, got {g.shape}"
        fd = _central_differences(loss_now, variables[name])
        if not np.allclose(g, fd, atol=1e-6):
            if name == "dWo" and np.allclose(g, fd.T, atol=1e-6):
                raise AssertionError("dWo is transposed: dW_o = concat_rows^T dOut_rows, (C, B*T) @ (B*T, C)")
            wrong.append(name)
    if not wrong:
        return True
    if "dWo" in wrong:
        raise AssertionError("dWo is wrong: dW_o = concat_rows^T dOut_rows, summed over every sequence and position")
    if wrong == ["dX"]:
        raise AssertionError("every weight gradient is right but dX is not: X feeds Q, K and V, so dX is the SUM "
                             "dQ W_q^T + dK W_k^T + dV W_v^T (with dQ, dK, dV merged back to (B, T, C))")
    raise AssertionError(f"{', '.join(wrong)} wrong (dWo is right): check the split of d_concat into heads, "
                         "(B, T, C) -> (B, T, h, hs) -> (B, h, T, hs), and the merge back, transpose before reshape")


if check_mha_backward(X, Wq, Wk, Wv, Wo, h, dOut_mha):
    print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# **The matmul rule.** For $Y = AB$: $dA = dY B^\top$ and $dB = A^\top dY$, each with the shape of its
# variable. For attention's $\text{Out} = AV$: $dV = A^\top d\text{Out}$ `(T, d_v)` and
# $dA = d\text{Out}\, V^\top$ `(T, T)`. $A$ is square and not symmetric, so $A\, d\text{Out}$ has the
# right shape and the wrong values; the exact linearity check of section 2 told them apart.
#
# **The softmax backward.** One row's Jacobian $\operatorname{diag}(p) - pp^\top$ times $dp$ equals
# $p \odot (dp - p \cdot dp)$; for all rows at once, $dS = A \odot (dA - \operatorname{rowsum}(dA \odot A))$,
# with no $(T, T, T)$ tensor. Every row of $dS$ sums to zero because softmax ignores a constant added
# to a row; $A \odot dA$ alone does not.
#
# **The scale.** $dQ = dS K / \sqrt{d_k}$ and $dK = dS^\top Q / \sqrt{d_k}$. Leaving out the scale makes
# the gradient exactly $\sqrt{d_k}$ times too long.
#
# **Gradient checks.** Central differences in float64 at $\varepsilon = 10^{-5}$ confirmed every
# gradient with a relative error far below $10^{-7}$ and rejected every common mistake. In float32
# the same check never got below the bound at any step size: rounding error grows like
# $1/\varepsilon$ while truncation error shrinks like $\varepsilon^2$.
#
# **Saturation.** Without the $1/\sqrt{d_k}$ scale, the gradient a typical query sends to $W_q$
# fell by more than two orders of magnitude from its peak at $d_k = 32$ to $d_k = 512$; with it, it
# stayed between 0.20 and 0.32 from $d_k = 4$ on. The unscaled layer's total gradient did not fall,
# but at $d_k = 512$ the 10% of queries whose rows were not saturated carried 67.5% of the sum of the
# per-query gradient norms (not of $\lVert dW_q \rVert$ itself), and half of all queries sent less than
# 1% of a typical scaled query's gradient.
#
# **The multi-head layer.** The backward of the head merge is the split and vice versa; weight
# gradients sum over every sequence and position, $dW = X_{\text{rows}}^\top dY_{\text{rows}}$; and
# $dX$ adds the three paths through $W_q$, $W_k$ and $W_v$. Exercise 3 assembled them into the
# backward pass of the whole layer.
#
# **Next:** Lesson 8 gives attention a sense of order: sinusoidal, learned and rotary position
# encodings, and what each does to the scores.
