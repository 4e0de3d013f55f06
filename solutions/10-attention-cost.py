# ---
# jupyter:
#   jupytext:
#     formats: 10-attention-cost//ipynb,py:percent
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
# # Lesson 10: What attention costs, and how fast kernels avoid paying it
#
# Every attention head you have written so far builds a table of scores with one row per query
# and one column per key: `(T, T)` numbers for a sequence of $T$ tokens. At $T = 8$ that table is
# a picture. At $T = 32{,}768$ one such table of float64 numbers is 8 GiB. This lesson measures
# what the table costs, in time and in memory, and then removes it: the **online softmax**
# computes exactly the same attention output one block of keys at a time, holding only a
# `(T, block)` strip of scores. That update is the idea behind FlashAttention.
#
# Then it turns to the other memory bill of a language model, the one that grows during
# generation: the KV cache, and the two designs (multi-query and grouped-query attention) that
# shrink it. Last, it takes the table out of the backward pass too, as FlashAttention does.
#
# **What you'll do**
# - time NumPy attention and measure its peak memory for growing $T$, and fit the slopes on a log-log plot;
# - derive the online softmax update and trace it, block by block, on one query, and write it as a
#   merge of two partial results, `online_softmax_merge` (graded);
# - write `online_softmax_attention(Q, K, V, block)`, which never holds a `(T, T)` array, prove it
#   equals the full attention, and measure that its memory grows only linearly in $T$ (graded);
# - count the KV-cache bytes of GPT-2 small and of the Llama-2-7B and Llama-3-8B shapes, with one, a
#   few, or all heads keeping their own keys and values (graded);
# - write `flash_attention_backward`, the gradients of attention from the saved output and
#   log-sum-exp, one block of keys at a time, check them against Lesson 7's full backward, and
#   measure that its memory too grows only linearly in $T$ (graded).
#
# **What you'll learn**
# - why both the time and the memory of attention grow as $T^2$, and how many `(T, T)` arrays
#   the straightforward code holds at once;
# - the running max $m$, the running sum $\ell$ and the rescaling factor $e^{m - m_{\text{new}}}$;
# - what a fast attention kernel changes (the memory) and what it does not (the arithmetic);
# - the KV-cache formula, and how sharing key/value heads between query heads divides it;
# - why the backward pass needs only $O$ and one number per query, the log-sum-exp $L$, to
#   recompute any block of the weights, and why $\operatorname{rowsum}(dO \odot O)$ replaces the
#   row sum of Lesson 7's softmax backward.
#
# **What you'll need**
# - softmax with the max subtracted (Lesson 1), the $1/\sqrt{d}$ scaling (Lesson 2) and heads
#   (Lesson 3); the KV cache of Lesson 6 helps for section 4, and Lesson 7's backward pass for section 5;
# - NumPy broadcasting with `keepdims=True`, and logarithms.
#
# Four graded exercises close the lesson. Their visible checks run as you work; hidden tests with
# fresh inputs run when your notebook is graded.

# %%
import os

# One BLAS thread, set before NumPy loads: section 2 times NumPy, and on a busy machine extra BLAS
# threads spend much of their time waiting for each other, which blurs what is being measured.
for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import time
import tracemalloc

import matplotlib.pyplot as plt
import numpy as np

from lesson_helpers import demo_size  # the course's helpers: the size a demonstration runs at

# %% [markdown]
# ## 1. Where the `(T, T)` comes from
#
# For one head, with queries $Q$ of shape `(Tq, d)`, keys $K$ of shape `(Tk, d)` and values $V$
# of shape `(Tk, dv)`, scaled dot-product attention is three steps:
#
# $$S = \frac{Q K^\top}{\sqrt{d}}\ \ (T_q \times T_k), \qquad
#   P = \operatorname{softmax}_{\text{row}}(S)\ \ (T_q \times T_k), \qquad
#   O = P\,V\ \ (T_q \times d_v).$$
#
# In self-attention $T_q = T_k = T$. The scores $S$ and the weights $P$ each hold $T^2$ numbers;
# computing them takes about $T^2 d$ multiply-adds for $QK^\top$, $T^2$ exponentials (and a few
# more operations per score) for the softmax, and $T^2 d_v$ multiply-adds for $PV$.
#
# To stand on its own, this lesson defines its softmax and attention here: the stable softmax of
# Lesson 1 and the scaled attention of Lesson 2, written for any number of leading axes
# (batch, heads) and returning only the output.

# %%
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`: subtract the max, exponentiate, normalise."""
    shifted = x - x.max(axis=axis, keepdims=True)  # every exponent <= 0: no overflow
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V):
    """softmax(Q K^T / sqrt(d)) V. Q: (..., Tq, d); K: (..., Tk, d); V: (..., Tk, dv) -> (..., Tq, dv)."""
    d = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)  # (..., Tq, d) @ (..., d, Tk) -> (..., Tq, Tk)
    weights = softmax(scores, axis=-1)  # (..., Tq, Tk), each row sums to 1
    return weights @ V  # (..., Tq, Tk) @ (..., Tk, dv) -> (..., Tq, dv)


# %% [markdown]
# A small example to keep in view: $T = 8$ positions, $d = d_v = 4$, drawn from
# `np.random.default_rng(12)` in the order below.

# %%
rng = np.random.default_rng(12)
T, d = 8, 4
Q, K, V = (rng.standard_normal((T, d)) for _ in range(3))  # each (T, d)

S = Q @ K.T / np.sqrt(d)  # (T, d) @ (d, T) -> (T, T)
P = softmax(S)  # (T, T)
out = attention(Q, K, V)  # (T, d)
print("scores S :", S.shape, f"{S.nbytes} bytes")
print("weights P:", P.shape, f"{P.nbytes} bytes")
print("output   :", out.shape, f"{out.nbytes} bytes")
print("output equals P @ V:", np.allclose(out, P @ V))

# %% [markdown]
# A float64 number is 8 bytes, so one `(T, T)` array costs $8T^2$ bytes. That is harmless at
# $T = 8$ and not at all harmless at the context lengths language models use:

# %%
for T_long in [1_024, 8_192, 32_768, 131_072]:
    n_bytes = 8 * T_long**2  # one (T, T) float64 array
    print(f"T = {T_long:>7,}: one (T, T) float64 array = {n_bytes / 2**20:>9,.0f} MiB = {n_bytes / 2**30:>6,.3f} GiB")

# %% [markdown]
# And that is one array, for one head of one sequence: a layer with $h$ heads and a batch of $B$
# sequences computes $B \cdot h$ of them.
#
# ## 2. Measured: time and memory against $T$
#
# If the $T^2$ terms dominate, the time and the peak memory of `attention` should both follow a
# power law $y \approx a\,T^{k}$ with $k = 2$. Taking logarithms turns a power law into a line,
#
# $$\log y = \log a + k \log T ,$$
#
# so the exponent $k$ is the slope of a straight-line fit of $\log y$ against $\log T$: on a
# log-log plot, doubling $T$ multiplies $y$ by $2^k = 4$.
#
# Two measuring tools. `time.process_time()` counts the processor time this program used,
# not the wall-clock time, so other programs sharing the machine barely disturb it; the best of
# a few repeats is the least disturbed of all. `tracemalloc` records the memory that Python
# allocates, NumPy's array data included, and `get_traced_memory()` returns the current and the
# **peak** number of traced bytes since tracing started. The inputs are made before tracing
# starts, so the peak counts only what the call itself allocates.

# %%
def best_time(fn, repeats=5):
    """Best processor time of fn() over `repeats` runs, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def peak_bytes(fn):
    """Peak bytes of array memory allocated while fn() runs (tracemalloc)."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def fit_slope(x, y):
    """Least-squares slope and intercept of log y against log x."""
    slope, intercept = np.polyfit(np.log(x), np.log(y), 1)
    return float(slope), float(intercept)


sweep_T = np.array([256, 512, 1024, 2048])
sweep_d = 64
sweep_rng = np.random.default_rng(0)
sweep_inputs = {int(n): [sweep_rng.standard_normal((n, sweep_d)) for _ in range(3)] for n in sweep_T}  # Q, K, V

# %% [markdown]
# Memory first. The peak is deterministic: the same code allocates the same arrays every run.
# The last column divides the peak by the size of one `(T, T)` float64 array, $8T^2$ bytes.

# %%
naive_peak = np.array([peak_bytes(lambda n=n: attention(*sweep_inputs[n])) for n in sweep_T])
for n, peak in zip(sweep_T, naive_peak, strict=True):
    print(f"T = {n:>5}: peak {peak / 2**20:7.2f} MiB = {peak / (8 * n**2):.2f} x one (T, T) array")

mem_slope, mem_intercept = fit_slope(sweep_T, naive_peak)
print(f"memory slope = {mem_slope:.2f}")
assert 1.9 <= mem_slope <= 2.1
print("memory slope within [1.9, 2.1]:", 1.9 <= mem_slope <= 2.1)

# %% [markdown]
# The peak is four `(T, T)` arrays, and you can name them in `attention`: the scores, then
# inside `softmax` the shifted scores, their exponentials, and the normalised weights, all alive
# at the moment the division runs. The fitted slope prints as 1.99: doubling $T$ quadruples the
# memory (the arrays that grow only like $T$, such as the output, pull the slope a hair below 2).
#
# Now the time. Timings vary from run to run and machine to machine, so this cell's numbers are
# yours alone; the next cell checks only that the fitted slope lands in a generous band around 2.

# %%
# NBVAL_IGNORE_OUTPUT
timing_repeats = demo_size(full=5, small=2)
naive_time = np.array([best_time(lambda n=n: attention(*sweep_inputs[n]), timing_repeats) for n in sweep_T])
for n, seconds in zip(sweep_T, naive_time, strict=True):
    print(f"T = {n:>5}: {seconds * 1e3:8.2f} ms")
time_slope, time_intercept = fit_slope(sweep_T, naive_time)
print(f"time slope = {time_slope:.2f}")

# %%
time_band = (1.4, 2.6)
assert time_band[0] <= time_slope <= time_band[1], f"time slope {time_slope:.2f} is outside {time_band}"
print(f"time slope within [{time_band[0]}, {time_band[1]}]:", time_band[0] <= time_slope <= time_band[1])

# %% [markdown]
# The fitted time slope lands near 2, though rarely on it: with four points, a fixed cost per
# call (which weighs most at small $T$) or a slowdown once the arrays outgrow the processor's
# caches (at large $T$) can move it by a few tenths.

# %%
T_line = np.geomspace(sweep_T[0], sweep_T[-1], 50)
fig, (ax_time, ax_mem) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
ax_time.loglog(sweep_T, naive_time * 1e3, "o", color="tab:blue", label="measured")
ax_time.loglog(T_line, np.exp(time_intercept) * T_line**time_slope * 1e3, "--", color="tab:blue",
               label=f"fit: time $\\propto T^{{{time_slope:.2f}}}$")
ax_time.set_title("Time of one attention call")
ax_time.set_xlabel("sequence length T")
ax_time.set_ylabel("time (ms)")
ax_mem.loglog(sweep_T, naive_peak / 2**20, "o", color="tab:red", label="measured (tracemalloc peak)")
ax_mem.loglog(T_line, np.exp(mem_intercept) * T_line**mem_slope / 2**20, "--", color="tab:red",
              label=f"fit: memory $\\propto T^{{{mem_slope:.2f}}}$")
ax_mem.set_title("Peak memory of one attention call")
ax_mem.set_xlabel("sequence length T")
ax_mem.set_ylabel("peak memory (MiB)")
for ax in (ax_time, ax_mem):
    ax.set_xticks(sweep_T, [str(n) for n in sweep_T])
    ax.minorticks_off()
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
fig.suptitle(f"Straightforward NumPy attention (d = {sweep_d}): time and memory against T, log-log")
plt.show()

# %% [markdown]
# *Figure: dots are measurements, dashed lines the fitted power laws. On log-log axes a power
# law is a straight line whose slope is the exponent: both panels climb two decades of $y$ for
# each decade of $T$, the signature of $T^2$.*

# %% [markdown]
# ## 3. Attention one block of keys at a time
#
# Look at where the $T^2$ memory goes: the whole `(Tq, Tk)` table of scores exists at once only
# because softmax needs each row's maximum and sum before it can normalise anything. What if
# the keys arrived in blocks, and each query kept a small running summary instead of a row?
#
# The figure draws the example's weights $P$ with the keys split into blocks of 3 columns (the
# last block is shorter: 8 is not a multiple of 3). A blockwise kernel only ever sees one strip
# of columns.

# %%
block_demo = 3
fig, ax = plt.subplots(figsize=(6.4, 5.2), constrained_layout=True)
image = ax.imshow(P, vmin=0.0, vmax=1.0, cmap="viridis")
for q_pos in range(T):
    for k_pos in range(T):
        ax.text(k_pos, q_pos, f"{P[q_pos, k_pos]:.2f}", ha="center", va="center", fontsize=8,
                color="black" if P[q_pos, k_pos] > 0.5 else "white")
for edge in range(block_demo, T, block_demo):
    ax.axvline(edge - 0.5, color="white", linewidth=3)
ax.set_xticks(range(T))
ax.set_yticks(range(T))
ax.set_xlabel("key position")
ax.set_ylabel("query position")
ax.set_title(f"Attention weights P (T = {T}), keys in blocks of {block_demo}")
fig.colorbar(image, ax=ax, label="attention weight")
plt.show()

# %% [markdown]
# *Figure: each row is one query's weights and sums to 1; the white lines cut the keys into the
# blocks 0-2, 3-5 and 6-7. The question of this section: can each query's output be built from
# these strips one after another, without ever holding a whole row of scores?*
#
# ### 3.1 The online softmax
#
# Take one query, with scores $s_1, \dots, s_T$ against the keys and values $v_1, \dots, v_T$
# (rows of $V$). Its output, with the max subtracted as in Lesson 1, is
#
# $$o = \frac{\sum_j e^{s_j - m}\, v_j}{\sum_j e^{s_j - m}}, \qquad m = \max_j s_j .$$
#
# Suppose some blocks of keys have been seen, and the query keeps three numbers about them: the
# largest score so far $m$, the sum $\ell = \sum_{\text{seen}} e^{s_j - m}$, and the unnormalised
# output $\tilde o = \sum_{\text{seen}} e^{s_j - m} v_j$ (a vector of $d_v$ numbers). A new
# block arrives with its scores $s_{\text{blk}}$. Its largest score is
# $m_{\text{blk}} = \max s_{\text{blk}}$, and the new running max is
#
# $$m_{\text{new}} = \max(m,\ m_{\text{blk}}) .$$
#
# The old sums were taken relative to $m$; relative to $m_{\text{new}}$ every old term gains the
# same factor, because $e^{s_j - m_{\text{new}}} = e^{s_j - m}\, e^{m - m_{\text{new}}}$. So the
# old sums are **rescaled** and the new block is added:
#
# $$\ell_{\text{new}} = \ell\, e^{m - m_{\text{new}}} + \sum_{j \in \text{blk}} e^{s_j - m_{\text{new}}},
# \qquad
# \tilde o_{\text{new}} = \tilde o\, e^{m - m_{\text{new}}} + \sum_{j \in \text{blk}} e^{s_j - m_{\text{new}}}\, v_j .$$
#
# Start with $m = -\infty$, $\ell = 0$, $\tilde o = 0$ (then $e^{m - m_{\text{new}}} = 0$, and the
# first update is just the first block). After the last block, $m$ is the maximum over all keys,
# so $\ell$ and $\tilde o$ are exactly the denominator and numerator above, and
#
# $$o = \tilde o / \ell .$$
#
# Every exponent is $\le 0$, so nothing can overflow: Lesson 1's fix, applied block by block.
# The memory a query needs is $m$, $\ell$ and $\tilde o$, plus the scores of one block.
#
# ### 3.2 One query, traced
#
# The function below is the derivation, line for line, for a single query vector `q` of shape
# `(d,)`, with the state after each block recorded.

# %%
def online_attention_one_query(q, K, V, block, rescale_output=True):
    """Online-softmax attention of one query q (d,) over K (Tk, d), V (Tk, dv), `block` keys at a time.

    Returns the output (dv,) and, per block, (first key, last key + 1, m_blk, m_new, e^(m - m_new), l_new).
    rescale_output=False drops the rescaling of the running output (a common mistake, section 3.3).
    """
    d = q.shape[0]
    m, ell, o = -np.inf, 0.0, np.zeros(V.shape[1])  # m, the sum ell (for ℓ) and õ: nothing seen yet
    trace = []
    for start in range(0, K.shape[0], block):
        s = K[start:start + block] @ q / np.sqrt(d)  # (Bk, d) @ (d,) -> (Bk,): this block's scores
        m_new = max(m, s.max())
        rescale = np.exp(m - m_new)  # e^(m - m_new) <= 1; exactly 0 at the first block
        p = np.exp(s - m_new)  # (Bk,), every entry <= 1
        ell = ell * rescale + p.sum()
        o = (o * rescale if rescale_output else o) + p @ V[start:start + block]  # (Bk,) @ (Bk, dv) -> (dv,)
        trace.append((start, start + len(s), float(s.max()), float(m_new), float(rescale), float(ell)))
        m = m_new
    return o / ell, trace


row = 0
o_row, trace = online_attention_one_query(Q[row], K, V, block_demo)
print(f"query {row}, keys in blocks of {block_demo}:")
print(" keys   m_blk   m_new  e^(m-m_new) ell_new")
for first, last, m_blk, m_new, rescale, l_new in trace:
    print(f" {first}-{last - 1}  {m_blk:7.4f} {m_new:7.4f} {rescale:10.4f} {l_new:9.4f}")

full_row = S[row]  # the whole row of scores, for comparison
print("final m equals the row max       :", np.isclose(trace[-1][3], full_row.max()))
print("final ell equals sum_j e^(s_j - m):", np.isclose(trace[-1][5], np.exp(full_row - full_row.max()).sum()))
print("output equals the full attention :", np.allclose(o_row, out[row]))

# %% [markdown]
# Read the table from the top. The first block sets $m$, and its rescale factor is 0 (nothing
# to rescale). The second block holds a larger score, so the running max rises, and the sum of
# the first block is multiplied by $e^{m - m_{\text{new}}} < 1$ before the second block's terms
# are added. The last block raises the max once more. At the end, $m$ is the row maximum,
# $\ell$ is the softmax denominator, and $\tilde o / \ell$ is the attention output, all three
# checked against the full row above.
#
# The block size cannot change the answer, only the number of updates. Every query, for a few
# block sizes, including a single block holding all keys and blocks of one key:

# %%
for block_try in [1, 2, 3, 5, 8, 100]:
    rows = np.stack([online_attention_one_query(Q[i], K, V, block_try)[0] for i in range(T)])  # (T, dv)
    print(f"block = {block_try:3d}: every query equals the full attention: {np.allclose(rows, out)}")

# %% [markdown]
# (The loop over queries here is for inspection: one query at a time is the derivation at its
# plainest. Exercise 1 asks for all queries at once, with the running state held in arrays.)
#
# ### 3.3 A common mistake: rescaling the sum but not the output
#
# It is easy to remember that $\ell$ must be rescaled when the max rises, and to forget that
# $\tilde o$ was summed relative to the old max too. The result is wrong, but not always: when
# the running max never rises after the first block, every rescale factor after the first block is
# $e^0 = 1$ and the forgotten factor changes nothing. Query 0's max rose twice; query 3's
# never did:

# %%
for i in [0, 3]:
    o_bad, trace_i = online_attention_one_query(Q[i], K, V, block_demo, rescale_output=False)
    rises = sum(rescale < 1.0 for _, _, _, _, rescale, _ in trace_i[1:])
    print(f"query {i}: running max rose {rises} time(s); output without rescaling o is right: "
          f"{np.allclose(o_bad, out[i])}  (largest error {np.abs(o_bad - out[i]).max():.3f})")

# %% [markdown]
# A test that happens to use only queries like 3 would pass this bug. The checks of Exercise 1
# include keys ordered so that the max rises in every block.
#
# ### 3.4 What a fast kernel changes, and what it does not
#
# The online softmax computes every one of the $T_q T_k$ scores and exponentials, exactly as the
# full version does: the arithmetic is still $\propto T^2$. What disappears is the `(Tq, Tk)`
# table. Per block the kernel holds a `(Tq, block)` strip of scores and the running state
# $m, \ell$ `(Tq, 1)` and $\tilde o$ `(Tq, dv)`, so for a fixed block size its memory grows
# linearly in $T$. You will measure that after Exercise 1.
#
# The update has a history. Milakov and Gimelshein (2018) published the online softmax, the
# running max and the rescaled running sum, to compute a softmax in one pass over its inputs.
# Rabe and Staats (2021) applied it to attention: processing the keys (and the queries) in
# chunks, they computed exact attention in memory that does not grow like $T^2$.
# FlashAttention (Dao et al., 2022) runs the same update inside one GPU kernel and tiles the
# queries as well as the keys, so that each tile of scores lives only in the GPU's small fast
# on-chip memory and the `(T, T)` matrix is never written to its main memory. The paper's
# argument is that on a GPU, moving data between those memories takes more time than the
# arithmetic on it, so avoiding the table also makes attention faster there. NumPy gives no
# control over where its arrays live: here the gain is memory alone.
#
# ## 4. The KV-cache memory bill
#
# Generating text one token at a time (Lesson 6), each new query attends to the keys and values
# of every earlier token. Recomputing them would repeat all the work for every new token, so
# they are kept: the **KV cache**. For every layer it holds, for every past token, one key and
# one value vector per key/value head. With $L$ layers, $h_{kv}$ key/value heads of size
# $d_h$, and $b$ bytes per stored number,
#
# $$\text{bytes per token} = 2 \cdot L \cdot h_{kv} \cdot d_h \cdot b,
# \qquad \text{cache of } T \text{ tokens} = T \cdot 2 \cdot L \cdot h_{kv} \cdot d_h \cdot b .$$
#
# The factor 2 is one key and one value. Unlike the score table, the cache grows only linearly
# in $T$, but it is kept for the whole generation, for every sequence being generated at once.
#
# ### 4.1 GPT-2 small
#
# GPT-2 small has 12 layers of 12 heads of size 64 ($12 \times 64 = 768$, its model width), and
# every head keeps its own keys and values: $h_{kv} = 12$. Stored in float16 (2 bytes, a common
# choice for inference) or float32 (4 bytes):

# %%
n_layers, n_heads, head_dim = 12, 12, 64  # GPT-2 small
numbers_per_token = 2 * n_layers * n_heads * head_dim  # one key and one value per head, per layer
print(f"numbers cached per token: 2 x {n_layers} layers x {n_heads} heads x {head_dim} = {numbers_per_token:,}")
for dtype_name, n_bytes in [("float16", 2), ("float32", 4)]:
    per_token = numbers_per_token * n_bytes
    print(f"{dtype_name}: {per_token:,} bytes = {per_token / 2**10:.0f} KiB per token;"
          f" 1,024 tokens = {1_024 * per_token / 2**20:.0f} MiB")

# %% [markdown]
# 36 KiB per token in float16: a full 1,024-token context of GPT-2 small costs 36 MiB per
# sequence. Larger models multiply every factor of the formula.
#
# ### 4.2 Sharing keys and values: multi-query and grouped-query attention
#
# In the multi-head attention of Lesson 3, each of the $h$ query heads has its own key head and
# value head, so $h_{kv} = h$. Two designs cut the cache by letting query heads **share** them:
#
# - **multi-query attention (MQA)**: one key head and one value head, shared by all $h$ query
#   heads: $h_{kv} = 1$;
# - **grouped-query attention (GQA)**: $h_{kv}$ key/value heads, each shared by a group of
#   $g = h / h_{kv}$ consecutive query heads; query head $i$ uses key/value head $\lfloor i / g \rfloor$.
#
# MHA and MQA are the two ends of GQA. The queries are not shared: there are still $h$ of them
# per token, but they are never cached. In NumPy the sharing is a reshape and a broadcast: split
# the $h$ query heads into `(h_kv, g)`, give the cached keys and values a group axis of size 1,
# and let `@` broadcast each key/value head over its group.

# %%
gqa_rng = np.random.default_rng(3)
B, h, h_kv, T_gqa, hs = 1, 8, 2, 5, 4
g = h // h_kv  # query heads per key/value head
Q_heads = gqa_rng.standard_normal((B, h, T_gqa, hs))  # (B, h, T, hs): every head has its own queries
K_cache = gqa_rng.standard_normal((B, h_kv, T_gqa, hs))  # (B, h_kv, T, hs): what the cache stores
V_cache = gqa_rng.standard_normal((B, h_kv, T_gqa, hs))  # (B, h_kv, T, hs)

Q_grouped = Q_heads.reshape(B, h_kv, g, T_gqa, hs)  # (B, h, T, hs) -> (B, h_kv, g, T, hs)
out_grouped = attention(Q_grouped, K_cache[:, :, None], V_cache[:, :, None])  # against (B, h_kv, 1, T, hs)
out_grouped = out_grouped.reshape(B, h, T_gqa, hs)  # (B, h_kv, g, T, hs) -> (B, h, T, hs)

# The same thing, spelled out: copy each key/value head to its g query heads, then ordinary MHA.
K_repeated = np.repeat(K_cache, g, axis=1)  # (B, h_kv, T, hs) -> (B, h, T, hs)
V_repeated = np.repeat(V_cache, g, axis=1)  # (B, h, T, hs)
print("query head 5 uses key head 5 // g = 2:", np.array_equal(K_repeated[:, 5], K_cache[:, 5 // g]))
print("grouped broadcast equals MHA with repeated K, V:", np.allclose(out_grouped, attention(Q_heads, K_repeated, V_repeated)))
print(f"numbers cached for K and V: GQA {K_cache.size + V_cache.size}, MHA {K_repeated.size + V_repeated.size}"
      f" ({g}x more)")

# %% [markdown]
# The broadcast never builds the repeated copies, and the cache keeps only `(B, h_kv, T, hs)`
# for each of K and V: $g = 4$ times fewer numbers than MHA with the same 8 query heads. Exercise 3
# turns the formula into a function, and the table after it prices MHA, GQA and MQA for a
# larger model shape.

# %% [markdown]
# ## 5. The backward pass without the `(T, T)` table
#
# Training needs gradients too, and Lesson 7's backward of one head is full of `(Tq, Tk)`
# arrays. In this lesson's letters ($P$ for the weights that Lesson 7 calls $A$, $dO$ for the
# gradient of the loss with respect to the output $O$), it is
#
# $$dV = P^\top dO, \qquad dP = dO\,V^\top, \qquad
#   dS = P \odot \big(dP - \operatorname{rowsum}(P \odot dP)\big), \qquad
#   dQ = \frac{dS\,K}{\sqrt d}, \qquad dK = \frac{dS^\top Q}{\sqrt d},$$
#
# with $P$, $dP$ and $dS$ all of shape `(Tq, Tk)`, and $\operatorname{rowsum}$ giving the
# `(Tq, 1)` column of row sums. Here it is, for any leading axes, recomputing $P$ from $Q$ and
# $K$ as Lesson 7 does:

# %%
def attention_backward(Q, K, V, dO):
    """Gradients of softmax(Q K^T / sqrt(d)) V, holding the whole (Tq, Tk) weights (Lesson 7).

    Q (..., Tq, d), K (..., Tk, d), V (..., Tk, dv), dO (..., Tq, dv) -> (dQ, dK, dV), each shaped like its input.
    """
    d = Q.shape[-1]
    P = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(d))  # (..., Tq, d) @ (..., d, Tk) -> (..., Tq, Tk)
    dV = np.swapaxes(P, -1, -2) @ dO  # (..., Tk, Tq) @ (..., Tq, dv) -> (..., Tk, dv)
    dP = dO @ np.swapaxes(V, -1, -2)  # (..., Tq, dv) @ (..., dv, Tk) -> (..., Tq, Tk)
    dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))  # (..., Tq, Tk) * ((..., Tq, Tk) - (..., Tq, 1))
    dQ = dS @ K / np.sqrt(d)  # (..., Tq, Tk) @ (..., Tk, d) -> (..., Tq, d)
    dK = np.swapaxes(dS, -1, -2) @ Q / np.sqrt(d)  # (..., Tk, Tq) @ (..., Tq, d) -> (..., Tk, d)
    return dQ, dK, dV


# %% [markdown]
# Two things in it need a whole row of $T_k$ keys at once: the weights $P$, which the
# forward normalised with the row's sum, and the row sum in $dS$. FlashAttention (Dao et al.,
# 2022) removes both, so that the backward, like the forward, visits the keys one block at a time.
#
# ### 5.1 What the forward saves: O and the log-sum-exp L
#
# Keeping $P$ from the forward for the backward would keep the `(T, T)` table after all. Instead
# the forward keeps, besides $O$, one number per query: the **log-sum-exp** of its row of scores,
#
# $$L_i = \log \sum_j e^{s_{ij}}, \qquad\text{so that}\qquad P_{ij} = \frac{e^{s_{ij}}}{\sum_k e^{s_{ik}}} = e^{s_{ij} - L_i} .$$
#
# (This $L$ is not the number of layers of section 4.) With $L$ (shape `(Tq, 1)`), any block
# of columns of $P$ is recomputed from $Q$, that block of keys and $L$ alone:
# $P_{\text{blk}} = e^{S_{\text{blk}} - L}$, every exponent $\le 0$. The online softmax has $L$
# for free: after the last block, $\ell = \sum_j e^{s_j - m}$ with $m$ the row max, so
#
# $$L = m + \log \ell .$$
#
# (One more line at the end of your Exercise 1 kernel would return it.) Checked on query 0 of
# section 3.2, from the state after its last block:

# %%
_, trace_0 = online_attention_one_query(Q[0], K, V, block_demo)
m_last, ell_last = trace_0[-1][3], trace_0[-1][5]  # running max and running sum after the last block
lse_row = np.log(np.exp(S[0] - S[0].max()).sum()) + S[0].max()  # log sum_j e^(s_j), from the whole row
print(f"query 0: m + log(ell) = {m_last + np.log(ell_last):.4f}, log-sum-exp of its row = {lse_row:.4f}")
print("P[0] equals exp(S[0] - L_0):", np.allclose(P[0], np.exp(S[0] - (m_last + np.log(ell_last)))))

# %% [markdown]
# For the demonstrations and checks that follow, `attention_with_lse` computes $O$ and $L$ the
# straightforward way. The rows of queries are independent, so it runs 512 queries at a time,
# which keeps its own tables small at the lengths measured below (the online softmax of
# Exercise 1, with the one more line, would produce the same $O$ and $L$ without any table).

# %%
def attention_with_lse(Q, K, V, rows=512):
    """O = softmax(Q K^T / sqrt(d)) V and L = log sum_j e^(s_ij), `rows` queries at a time.

    Q (..., Tq, d), K (..., Tk, d), V (..., Tk, dv) -> O (..., Tq, dv), L (..., Tq, 1).
    """
    O_parts, L_parts = [], []
    for start in range(0, Q.shape[-2], rows):
        S_rows = Q[..., start:start + rows, :] @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (..., r, Tk)
        top = S_rows.max(axis=-1, keepdims=True)  # (..., r, 1)
        e = np.exp(S_rows - top)  # (..., r, Tk)
        total = e.sum(axis=-1, keepdims=True)  # (..., r, 1)
        O_parts.append(e / total @ V)  # (..., r, Tk) @ (..., Tk, dv) -> (..., r, dv)
        L_parts.append(top + np.log(total))  # (..., r, 1)
    return np.concatenate(O_parts, axis=-2), np.concatenate(L_parts, axis=-2)


O_demo, L_demo = attention_with_lse(Q, K, V)  # (T, d), (T, 1)
print("O equals attention(Q, K, V):", np.allclose(O_demo, out), "  L:", L_demo.shape)

# %% [markdown]
# ### 5.2 The row sum without the row: D = rowsum(dO ⊙ O)
#
# The row sum in $dS$ looks as if it needs all of row $i$ of $P$ and $dP$. It does not. With
# $dP_{ij} = dO_i \cdot v_j$,
#
# $$\sum_j P_{ij}\, dP_{ij} = \sum_j P_{ij}\,(dO_i \cdot v_j) = dO_i \cdot \sum_j P_{ij} v_j = dO_i \cdot o_i ,
# \qquad\text{so}\qquad D = \operatorname{rowsum}(dO \odot O)\ \ (T_q \times 1).$$
#
# $D$ comes from two `(Tq, dv)` arrays that the backward already has, before it looks at any
# key. On the example, with an upstream gradient $dO$ drawn from `np.random.default_rng(13)`:

# %%
dO_demo = np.random.default_rng(13).standard_normal((T, d))  # (T, dv): the gradient arriving at O
dP_demo = dO_demo @ V.T  # (T, dv) @ (dv, T) -> (T, T)
D_demo = (dO_demo * O_demo).sum(axis=-1, keepdims=True)  # (T, 1), from O alone
print("rowsum(P * dP) equals rowsum(dO * O):", np.allclose((P * dP_demo).sum(axis=-1, keepdims=True), D_demo))

# %% [markdown]
# ### 5.3 Block by block
#
# Now every term of the backward splits along the keys. For one block of keys (rows
# $K_{\text{blk}}$, $V_{\text{blk}}$ of shapes `(Bk, d)` and `(Bk, dv)`):
#
# $$S_{\text{blk}} = \frac{Q K_{\text{blk}}^\top}{\sqrt d},\quad
#   P_{\text{blk}} = e^{S_{\text{blk}} - L},\quad
#   dV_{\text{blk}} = P_{\text{blk}}^\top dO,\quad
#   dP_{\text{blk}} = dO\, V_{\text{blk}}^\top,\quad
#   dS_{\text{blk}} = P_{\text{blk}} \odot (dP_{\text{blk}} - D),$$
#
# $$dK_{\text{blk}} = \frac{dS_{\text{blk}}^\top Q}{\sqrt d}, \qquad
#   dQ \mathrel{+}= \frac{dS_{\text{blk}}\, K_{\text{blk}}}{\sqrt d} .$$
#
# $S_{\text{blk}}$, $P_{\text{blk}}$, $dP_{\text{blk}}$ and $dS_{\text{blk}}$ are `(Tq, Bk)`
# strips. The gradients of a block's own keys and values, $dK_{\text{blk}}$ and $dV_{\text{blk}}$,
# are finished as soon as the block is; $dQ$ gathers a term from every block. There is no running
# max and nothing to rescale: $L$ is already the final normaliser. The cost is a second
# computation of every score and exponential (the forward's were not kept), and what it buys is
# memory that grows like $T$, not $T^2$. Exercise 4 asks for it; after it, the memory is measured.
#
# FlashAttention runs this backward inside one GPU kernel, tiling the queries as well as the
# keys. Recomputing in the backward pass what the forward did not keep is also how Rabe and
# Staats (2021) kept the memory of attention's gradient from growing like $T^2$.

# %% [markdown]
# ## Practice exercises
#
# Each exercise asks for one function. Replace `raise NotImplementedError()` with your code, run
# the cell, then run the test cell below it. The visible checks tell you what a failure most
# likely means; when your notebook is graded, hidden tests call your function again on fresh
# inputs (other shapes, block sizes and seeds), so write the general function, not one that
# fits this lesson's arrays.
#
# ### Exercise 1: attention without the `(T, T)` table (5 points)
#
# Write `online_softmax_attention(Q, K, V, block)`, the online softmax of section 3 for all
# queries at once:
#
# - `Q` has shape `(..., Tq, d)`, `K` has shape `(..., Tk, d)` and `V` has shape `(..., Tk, dv)`,
#   with the same leading axes (none, or batch and heads); $T_q$ and $T_k$ may differ, and so
#   may $d$ and $d_v$. Return the `(..., Tq, dv)` array $\operatorname{softmax}(QK^\top/\sqrt{d})\,V$,
#   in float64.
# - Visit the keys in blocks of `block` consecutive positions: `0:block`, `block:2*block`, and so
#   on. The last block may be shorter, and `block` may be larger than $T_k$.
# - Keep the running state as arrays: $m$ and $\ell$ of shape `(..., Tq, 1)`, $\tilde o$ of
#   shape `(..., Tq, dv)`. The largest array of scores you ever hold is `(..., Tq, block)`: never
#   one with both a $T_q$ and a $T_k$ axis.
# - No floating-point warnings, even when scores are in the thousands, and do not modify the inputs.
#
# The visible checks measure your function's peak memory with `tracemalloc`. When your
# notebook is graded, one hidden input has more than 23,000 queries and as many keys: its full
# score table alone would take more than 4 GiB, more memory than a graded notebook may use,
# while a blockwise pass holds a few tens of MB of scores at a time and takes several seconds.

# %% nbgrader={"grade": false, "grade_id": "online_softmax_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def online_softmax_attention(Q, K, V, block):
    """softmax(Q K^T / sqrt(d)) V, visiting the keys `block` at a time.

    Q: (..., Tq, d), K: (..., Tk, d), V: (..., Tk, dv) -> (..., Tq, dv). Never holds a (Tq, Tk) array.
    """
    ### BEGIN SOLUTION
    *lead, Tq, d = Q.shape
    Q_scaled = Q / np.sqrt(d)  # scale once: (..., Tq, d), a new array
    m = np.full((*lead, Tq, 1), -np.inf)  # running max of each query's scores
    ell = np.zeros((*lead, Tq, 1))  # running sum of e^(s - m)
    o = np.zeros((*lead, Tq, V.shape[-1]))  # running output, not yet divided by ell
    for start in range(0, K.shape[-2], block):
        K_blk = K[..., start:start + block, :]  # (..., Bk, d), a view
        V_blk = V[..., start:start + block, :]  # (..., Bk, dv)
        s = Q_scaled @ np.swapaxes(K_blk, -1, -2)  # (..., Tq, d) @ (..., d, Bk) -> (..., Tq, Bk)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))  # (..., Tq, 1)
        s -= m_new  # in place: no second (..., Tq, Bk) array
        p = np.exp(s, out=s)  # e^(s - m_new) <= 1, still in the same memory
        rescale = np.exp(m - m_new)  # (..., Tq, 1): e^(m - m_new), 0 at the first block
        ell = ell * rescale + p.sum(axis=-1, keepdims=True)
        o = o * rescale + p @ V_blk  # (..., Tq, Bk) @ (..., Bk, dv) -> (..., Tq, dv)
        m = m_new
    return o / ell  # (..., Tq, dv): divide by the softmax denominator only at the end
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_online_softmax_attention", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
def check_online_softmax_attention(Q, K, V, block, what):
    """Visible check against the full attention, with a hint for the usual mistakes."""
    before = [a.copy() for a in (Q, K, V)]
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        try:
            got = online_softmax_attention(Q, K, V, block)
        except FloatingPointError as error:
            raise AssertionError(f"{what}: floating-point {error}: exponentiate only scores minus the "
                                 "running max, and start the max at -inf, the sums at 0") from None
    expected = attention(Q, K, V)
    assert isinstance(got, np.ndarray), f"{what}: return a NumPy array, got {type(got).__name__}"
    assert all(np.array_equal(a, b) for a, b in zip((Q, K, V), before, strict=True)), (
        f"{what}: the inputs were modified: scale a copy (Q / np.sqrt(d)), not Q itself")
    assert got.shape == expected.shape, f"{what}: expected shape (..., Tq, dv) = {expected.shape}, got {got.shape}"
    kept = K.shape[-2] - K.shape[-2] % block
    if 0 < kept < K.shape[-2] and np.allclose(got, attention(Q, K[..., :kept, :], V[..., :kept, :])):
        raise AssertionError(f"{what}: the last, shorter block of keys was skipped (Tk = {K.shape[-2]}, "
                             f"block = {block}): loop with range(0, Tk, block)")
    assert np.allclose(got, expected, rtol=1e-9, atol=1e-10), (
        f"{what}: values differ from softmax(Q K^T / sqrt(d)) V. When a block raises the running max, "
        "both ell and the running output must be multiplied by e^(m - m_new); divide by ell only at the end; "
        "compute in float64")


def check_online_memory(T_mem, block):
    """Peak memory of one call: far below one (T, T) float64 array."""
    mem_rng = np.random.default_rng(4)
    Q_mem, K_mem, V_mem = (mem_rng.standard_normal((T_mem, 2)) for _ in range(3))
    full_table = 8 * T_mem * T_mem  # bytes of one (T, T) float64 array
    peak = peak_bytes(lambda: online_softmax_attention(Q_mem, K_mem, V_mem, block))
    assert peak < full_table / 4, (
        f"T = {T_mem}, block = {block}: the call allocated {peak / 2**20:.1f} MiB at its peak; one (T, T) "
        f"array is {full_table / 2**20:.1f} MiB. Hold only one block of scores, (..., Tq, block), at a time")


check_rng = np.random.default_rng(2024)
check_online_softmax_attention(Q, K, V, 3, "the lesson's example, blocks of 3")
for block_try in [1, 8, 50]:
    check_online_softmax_attention(Q, K, V, block_try, f"the lesson's example, block = {block_try}")
Q4, K4, V4 = (check_rng.standard_normal(shape) for shape in [(2, 3, 5, 4), (2, 3, 11, 4), (2, 3, 11, 6)])
check_online_softmax_attention(Q4, K4, V4, 4, "batch and heads (2, 3), Tq = 5, Tk = 11, dv = 6")
check_online_softmax_attention(Q4[..., :1, :], K4, V4, 5, "one new query (Tq = 1) against 11 keys")
K_rising = np.sort(check_rng.random(12))[:, None] * 4.0  # (12, 1): keys in increasing order
Q_positive = check_rng.random((3, 1)) + 0.5  # (3, 1): positive queries, so every block raises the max
check_online_softmax_attention(Q_positive, K_rising, check_rng.standard_normal((12, 2)), 3,
                               "scores rising along the keys (the max rises in every block)")
check_online_softmax_attention(Q4 * 300.0, K4, V4, 4, "scores in the thousands")
check_online_memory(4000, 64)
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Your kernel against the full one
#
# With your function in hand, the two claims of section 3 can be measured. First, equality on
# a larger problem, with batch and head axes and block sizes that do and do not divide $T$:

# %%
eq_rng = np.random.default_rng(5)
Q_eq, K_eq, V_eq = (eq_rng.standard_normal((2, 3, 300, 16)) for _ in range(3))  # (B, h, T, hs)
full_eq = attention(Q_eq, K_eq, V_eq)  # (2, 3, 300, 16)
for block_try in [1, 7, 64, 300, 1000]:
    diff = np.abs(online_softmax_attention(Q_eq, K_eq, V_eq, block_try) - full_eq).max()
    print(f"block = {block_try:4d}: max |online - full| below 1e-12: {diff < 1e-12}")

# %% [markdown]
# Second, memory. For a fixed block the kernel's peak should grow like $T^1$, not $T^2$. The
# same tracemalloc measurement as section 2, now on your kernel with blocks of 128 keys, for
# $T$ up to 4,096:

# %%
online_T = np.array([256, 512, 1024, 2048, 4096])
online_block = 128
online_rng = np.random.default_rng(6)
online_peak = []
for n in online_T:
    Q_n, K_n, V_n = (online_rng.standard_normal((n, sweep_d)) for _ in range(3))
    online_peak.append(peak_bytes(lambda: online_softmax_attention(Q_n, K_n, V_n, online_block)))
online_peak = np.array(online_peak)
for n, peak in zip(online_T, online_peak, strict=True):
    print(f"T = {n:>5}: peak {peak / 2**20:5.1f} MiB = {peak / (8 * n**2):.2g} x one (T, T) array")

online_slope, online_intercept = fit_slope(online_T, online_peak)
print(f"online memory slope = {online_slope:.2f}")
assert 0.9 <= online_slope <= 1.1
print("online memory slope within [0.9, 1.1]:", 0.9 <= online_slope <= 1.1)

# %%
fig, ax = plt.subplots(figsize=(7.5, 4.6), constrained_layout=True)
T_all = np.geomspace(online_T[0], online_T[-1], 50)
ax.loglog(sweep_T, naive_peak / 2**20, "o", color="tab:red", label="full attention, measured")
ax.loglog(T_all, np.exp(mem_intercept) * T_all**mem_slope / 2**20, "--", color="tab:red",
          label=f"full attention, fit $\\propto T^{{{mem_slope:.2f}}}$")
ax.loglog(online_T, online_peak / 2**20, "s", color="tab:green", label=f"online softmax (block {online_block}), measured")
ax.loglog(T_all, np.exp(online_intercept) * T_all**online_slope / 2**20, "--", color="tab:green",
          label=f"online softmax, fit $\\propto T^{{{online_slope:.2f}}}$")
ax.set_xticks(online_T, [str(n) for n in online_T])
ax.minorticks_off()
ax.grid(True, which="major", alpha=0.3)
ax.set_xlabel("sequence length T")
ax.set_ylabel("peak memory (MiB)")
ax.set_title(f"Peak memory of one attention call (d = {sweep_d}), log-log")
ax.legend()
plt.show()

# %% [markdown]
# *Figure: the full attention's peak (red; its fit extended past the measured $T$) climbs with
# slope 2, the online kernel's (green) with a slope near 1 (a small fixed allocation, the same
# at every $T$, pulls the fit just below 1). At small $T$ a strip of 128 keys is not much
# smaller than a whole row, so the lines start close; every doubling of $T$ after that doubles
# the gap, as the last column of the table shows: the kernel's peak, measured in `(T, T)`
# arrays, halves at every step.*
#
# The arithmetic did not go away. Time both on the same input (your numbers; read them, do not
# expect them to match anyone else's):

# %%
# NBVAL_IGNORE_OUTPUT
Q_t, K_t, V_t = sweep_inputs[2048]
t_full = best_time(lambda: attention(Q_t, K_t, V_t), repeats=demo_size(full=3, small=1))
t_online = best_time(lambda: online_softmax_attention(Q_t, K_t, V_t, online_block), repeats=demo_size(full=3, small=1))
print(f"T = 2048, d = {sweep_d}: full {t_full * 1e3:.1f} ms, online (block {online_block}) {t_online * 1e3:.1f} ms,"
      f" online / full = {t_online / t_full:.2f}")

# %% [markdown]
# Both versions compute the same $T^2$ scores and exponentials, so their times are of the same
# order; a ratio near 1, in either direction, is what the equal arithmetic predicts. The
# online kernel's win is memory: the last column of its table above, which halves with every
# doubling of $T$.

# %% [markdown]
# ### Exercise 2: merging two partial results (2 points)
#
# The update of section 3.1 is one case of a more general rule. Split a query's keys into two
# disjoint parts $A$ and $B$, and summarise each part by its **state**, computed relative to that
# part's own largest score: $m_A = \max_{j \in A} s_j$, $\ell_A = \sum_{j \in A} e^{s_j - m_A}$ and
# $\tilde o_A = \sum_{j \in A} e^{s_j - m_A}\, v_j$ (the same for $B$). The state of all the keys
# together is
#
# $$m = \max(m_A, m_B), \qquad
#   \ell = \ell_A\, e^{m_A - m} + \ell_B\, e^{m_B - m}, \qquad
#   \tilde o = \tilde o_A\, e^{m_A - m} + \tilde o_B\, e^{m_B - m},$$
#
# and the attention output is $\tilde o / \ell$, as before. Section 3.1's update is this merge of
# the state so far with the state of one new block. With the merge, parts of the keys can also be
# processed separately and combined at the end.
#
# Write `online_softmax_merge(m_a, l_a, o_a, m_b, l_b, o_b)`:
#
# - `m_a`, `l_a`, `m_b` and `l_b` have shape `(..., Tq, 1)`; `o_a` and `o_b` have shape
#   `(..., Tq, dv)`, with the same leading axes (none, or batch and heads): one state per query.
# - Return the tuple `(m, l, o)` of the merged states, float64 arrays of the same shapes.
# - A part with no keys has the empty state $m = -\infty$, $\ell = 0$, $\tilde o = 0$. For every
#   query, at most one of its two states is empty.
# - No floating-point warnings, even when the two maxima differ by thousands, and do not modify
#   the inputs.

# %% nbgrader={"grade": false, "grade_id": "online_softmax_merge", "locked": false, "schema_version": 3, "solution": true, "task": false}
def online_softmax_merge(m_a, l_a, o_a, m_b, l_b, o_b):
    """Merge the online-softmax states (m, l, o) of two disjoint parts of the keys.

    m_a, l_a, m_b, l_b: (..., Tq, 1); o_a, o_b: (..., Tq, dv) -> (m, l, o) with the same shapes.
    """
    ### BEGIN SOLUTION
    m = np.maximum(m_a, m_b)  # (..., Tq, 1): the larger max; finite, since at most one state is empty
    scale_a = np.exp(m_a - m)  # (..., Tq, 1), <= 1; exactly 0 for an empty state
    scale_b = np.exp(m_b - m)
    return m, l_a * scale_a + l_b * scale_b, o_a * scale_a + o_b * scale_b
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_online_softmax_merge", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def state_of(scores, values):
    """The state (m, l, o) of one part of the keys: scores (..., Tq, n), values (..., n, dv)."""
    m = scores.max(axis=-1, keepdims=True)  # (..., Tq, 1)
    e = np.exp(scores - m)  # (..., Tq, n)
    return m, e.sum(axis=-1, keepdims=True), e @ values  # (..., Tq, 1), (..., Tq, 1), (..., Tq, dv)


def call_merge(state_a, state_b, what):
    """Call the function as the hidden tests do, with floating-point warnings raised as errors."""
    before = [x.copy() for x in (*state_a, *state_b)]
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        try:
            got = online_softmax_merge(*state_a, *state_b)
        except FloatingPointError as error:
            raise AssertionError(f"{what}: floating-point {error}: exponentiate only m_a - m and m_b - m, with m "
                                 "the larger of the two maxima") from None
    assert all(np.array_equal(x, y) for x, y in zip((*state_a, *state_b), before, strict=True)), (
        f"{what}: the inputs were modified")
    assert isinstance(got, tuple) and len(got) == 3, f"{what}: return the tuple (m, l, o)"
    for name, x, like in zip(("m", "l", "o"), got, state_a, strict=True):
        assert isinstance(x, np.ndarray) and x.shape == like.shape, (
            f"{what}: {name} should be a NumPy array of shape {like.shape}, got {getattr(x, 'shape', type(x))}")
    return got


def check_online_softmax_merge(scores, values, split, what):
    """Merge the states of keys [:split] and [split:] and compare with the state of all the keys."""
    state_a = state_of(scores[..., :split], values[..., :split, :])
    state_b = state_of(scores[..., split:], values[..., split:, :])
    m, l, o = call_merge(state_a, state_b, what)
    m_all, l_all, o_all = state_of(scores, values)
    assert np.allclose(m, m_all), f"{what}: m should be the larger of the two maxima"
    assert np.allclose(l, l_all, rtol=1e-12), (
        f"{what}: l differs from the sum over all keys of e^(s - m): multiply each part's l by e^(its m - m)")
    assert np.allclose(o, o_all, rtol=1e-12, atol=1e-12), (
        f"{what}: o differs from the sum over all keys of e^(s - m) v: multiply each part's o by the same "
        "factor as its l")
    swapped = call_merge(state_b, state_a, what + ", parts swapped")
    assert all(np.allclose(x, y) for x, y in zip(swapped, (m, l, o), strict=True)), (
        f"{what}: merging B with A should give the same state as merging A with B")


# By hand: part A has one key with score 0 and value 1, part B one key with score log 3 and value 5.
# Merged: m = log 3, l = 1 * e^(0 - log 3) + 1 = 4/3, o = 1 * 1/3 + 5 = 16/3, and o / l = 4 = (1 * 1 + 3 * 5) / 4.
state_hand_a = (np.array([[0.0]]), np.array([[1.0]]), np.array([[1.0]]))
state_hand_b = (np.array([[np.log(3.0)]]), np.array([[1.0]]), np.array([[5.0]]))
m_hand, l_hand, o_hand = call_merge(state_hand_a, state_hand_b, "the hand-worked case")
assert np.allclose([m_hand[0, 0], l_hand[0, 0], o_hand[0, 0]], [np.log(3.0), 4 / 3, 16 / 3]), (
    f"hand-worked case: expected m = log 3, l = 4/3, o = 16/3, got {m_hand[0, 0]:.4f}, {l_hand[0, 0]:.4f}, {o_hand[0, 0]:.4f}")

empty = (np.full((T, 1), -np.inf), np.zeros((T, 1)), np.zeros((T, d)))  # no keys yet, for each of the T queries
whole = state_of(S, V)
for order, pair in [("empty first", (empty, whole)), ("empty second", (whole, empty))]:
    merged = call_merge(*pair, f"merging with the empty state ({order})")
    assert all(np.allclose(x, y) for x, y in zip(merged, whole, strict=True)), (
        f"merging with the empty state ({order}) should return the other state unchanged")

merge_rng = np.random.default_rng(2026)
for split in [1, 3, 7]:
    check_online_softmax_merge(S, V, split, f"the lesson's scores S, keys split at {split}")
scores_b = merge_rng.standard_normal((2, 3, 5, 9))  # (B, h, Tq, Tk)
check_online_softmax_merge(scores_b, merge_rng.standard_normal((2, 3, 9, 4)), 4, "batch and heads (2, 3)")
check_online_softmax_merge(scores_b * 1000.0, merge_rng.standard_normal((2, 3, 9, 4)), 5, "scores in the thousands")
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: the KV-cache bill (3 points)
#
# Write `kv_cache_bytes(n_layers, n_heads, n_kv_heads, head_dim, T, dtype)`: the bytes of the
# KV cache of one sequence of `T` tokens, $T \cdot 2 \cdot L \cdot h_{kv} \cdot d_h \cdot b$, as
# a Python `int`.
#
# - `dtype` is either the name of the stored number type, one of `"float64"` (8 bytes),
#   `"float32"` (4), `"float16"` (2), `"bfloat16"` (2) or `"int8"` (1), or a positive `int`:
#   the bytes per number.
# - `n_heads` is the number of query heads. It does not enter the product, but it must be a
#   multiple of `n_kv_heads` (every key/value head serves the same number of query heads).
# - Raise `ValueError` for an unknown dtype name, a dtype int below 1, a count below 1
#   (`n_layers`, `n_heads`, `n_kv_heads`, `head_dim`), a negative `T`, or an `n_heads` that
#   `n_kv_heads` does not divide. `T = 0` is an empty cache: 0 bytes.

# %% nbgrader={"grade": false, "grade_id": "kv_cache_bytes", "locked": false, "schema_version": 3, "solution": true, "task": false}
def kv_cache_bytes(n_layers, n_heads, n_kv_heads, head_dim, T, dtype):
    """Bytes of the KV cache of one sequence of T tokens: T * 2 * n_layers * n_kv_heads * head_dim * bytes."""
    ### BEGIN SOLUTION
    sizes = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int8": 1}
    if isinstance(dtype, str):
        if dtype not in sizes:
            raise ValueError(f"unknown dtype {dtype!r}; expected one of {sorted(sizes)} or a number of bytes")
        n_bytes = sizes[dtype]
    elif isinstance(dtype, int) and not isinstance(dtype, bool) and dtype >= 1:
        n_bytes = dtype
    else:
        raise ValueError(f"dtype must be a dtype name or a positive number of bytes, got {dtype!r}")
    if min(n_layers, n_heads, n_kv_heads, head_dim) < 1 or T < 0:
        raise ValueError("n_layers, n_heads, n_kv_heads and head_dim must be at least 1, and T at least 0")
    if n_heads % n_kv_heads:
        raise ValueError(f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads}")
    return int(T * 2 * n_layers * n_kv_heads * head_dim * n_bytes)  # 2: one key and one value
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_kv_cache_bytes", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_kv_cache_bytes(args, expected):
    """Visible check of one configuration, with a hint for the usual mistakes."""
    _, n_heads, n_kv_heads, *_ = args
    got = kv_cache_bytes(*args)
    assert isinstance(got, (int, np.integer)) and not isinstance(got, bool), (
        f"{args}: return an int (a count of bytes), got {type(got).__name__}")
    if expected and got * 2 == expected:
        raise AssertionError(f"{args}: got half the expected {expected:,} bytes: cache both K and V (the factor 2)")
    if expected and n_kv_heads != n_heads and got * n_kv_heads == expected * n_heads:
        raise AssertionError(f"{args}: got {got:,}; the cache holds n_kv_heads = {n_kv_heads} key/value heads, "
                             f"not n_heads = {n_heads}")
    assert got == expected, f"{args}: expected {expected:,} bytes = T * 2 * n_layers * n_kv_heads * head_dim * bytes, got {got:,}"


def check_kv_rejects(args, why):
    """The function must refuse an impossible configuration."""
    try:
        kv_cache_bytes(*args)
    except ValueError:
        return
    raise AssertionError(f"{args}: {why}, so kv_cache_bytes should raise ValueError")


check_kv_cache_bytes((12, 12, 12, 64, 1024, "float16"), 37_748_736)  # GPT-2 small, 1,024 tokens
check_kv_cache_bytes((12, 12, 12, 64, 1024, 4), 75_497_472)  # the same in 4-byte numbers
check_kv_cache_bytes((12, 12, 12, 64, 1, "float32"), 73_728)
check_kv_cache_bytes((32, 32, 8, 128, 8192, "bfloat16"), 1_073_741_824)  # grouped-query: 8 KV heads
check_kv_cache_bytes((32, 32, 1, 128, 100, "int8"), 819_200)  # multi-query: 1 KV head
check_kv_cache_bytes((2, 4, 2, 8, 0, "float64"), 0)  # an empty cache
check_kv_rejects((12, 12, 5, 64, 10, "float16"), "5 key/value heads cannot be shared evenly by 12 query heads")
check_kv_rejects((12, 12, 12, 64, 10, "float12"), "'float12' is not a dtype name")
check_kv_rejects((12, 12, 12, 64, 10, 0), "0 bytes per number is not a size")
check_kv_rejects((0, 12, 12, 64, 10, "float16"), "a model has at least one layer")
print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### The bill, priced
#
# GPT-2 small beside two published 7-8B-parameter shapes, each priced at its own context
# length (the most tokens it was trained to attend over), in bfloat16:
#
# - **Llama-2-7B**: 32 layers, 32 query heads of size 128 (model width 4,096), and every head
#   keeping its own keys and values (MHA); context 4,096 tokens.
# - **Llama-3-8B** (and **Mistral-7B**, which has the same attention shape): the same 32 layers and
#   32 query heads of 128, with 8 shared key/value heads (GQA); Llama-3-8B's context is 8,192 tokens.
# - The same shape with a single key/value head (MQA), priced at 8,192 tokens for comparison.

# %%
def size_text(n_bytes):
    """Bytes as MiB below 1 GiB, as GiB above."""
    return f"{n_bytes / 2**30:8.2f} GiB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:8.1f} MiB"


configs = [  # label, n_layers, n_heads, n_kv_heads, head_dim, dtype, context T
    ("GPT-2 small, float16", 12, 12, 12, 64, "float16", 1_024),
    ("GPT-2 small, float32", 12, 12, 12, 64, "float32", 1_024),
    ("Llama-2-7B, MHA (32 KV heads)", 32, 32, 32, 128, "bfloat16", 4_096),
    ("Llama-3-8B, GQA (8 KV heads)", 32, 32, 8, 128, "bfloat16", 8_192),
    ("same shape, MQA (1 KV head)", 32, 32, 1, 128, "bfloat16", 8_192),
]
mha_per_token = kv_cache_bytes(32, 32, 32, 128, 1, "bfloat16")  # Llama-2-7B's shape
print(f"{'configuration':30s} {'per token':>10s} {'context T':>10s} {'cache at T':>12s} {'per token, MHA / this':>22s}")
for label, *shape, context in configs:
    per_token = kv_cache_bytes(*shape[:4], 1, shape[4])
    ratio = f"{mha_per_token / per_token:6.0f}x" if shape[0] == 32 else ""
    print(f"{label:30s} {per_token / 2**10:6.0f} KiB {context:>10,} {size_text(kv_cache_bytes(*shape[:4], context, shape[4])):>12s}"
          f" {ratio:>22s}")

# %% [markdown]
# Llama-2-7B's shape, with full multi-head attention, needs 512 KiB per token: 2 GiB for one
# sequence of its full 4,096-token context, and that much again for every other sequence
# generated at the same time. Eight shared key/value heads divide the bill per token by
# $32 / 8 = 4$, so Llama-3-8B's context, twice as long, costs half as much: 1 GiB. A single
# key/value head divides it by 32. The query heads, and with them the model's width, are
# unchanged.

# %%
T_cache = np.geomspace(1_024, 131_072, 8)  # 2^10 ... 2^17 tokens
fig, ax = plt.subplots(figsize=(7.5, 4.6), constrained_layout=True)
for (label, *shape, _), style in zip(configs[2:], ["s-", "^-", "v-"], strict=True):
    sizes = [kv_cache_bytes(*shape[:4], int(n), shape[4]) / 2**30 for n in T_cache]
    _ = ax.loglog(T_cache, sizes, style, label=label)
ax.set_xticks([1_024, 8_192, 32_768, 131_072], ["1,024", "8,192", "32,768", "131,072"])
ax.minorticks_off()
ax.grid(True, which="major", alpha=0.3)
ax.set_xlabel("tokens in the cache, T")
ax.set_ylabel("KV cache of one sequence (GiB)")
ax.set_title("KV cache of one sequence: 32 layers, 32 query heads of 128, bfloat16, log-log")
ax.legend()
plt.show()

# %% [markdown]
# *Figure: every line has slope 1 (the cache is linear in $T$). The three lines differ only in
# $h_{kv}$, so the vertical gaps are constant: GQA sits a factor 4 below MHA, and MQA a further
# factor 8 below GQA. The lines run past the contexts of the table (4,096 for Llama-2-7B, 8,192
# for Llama-3-8B) to show the slope, towards the 131,072-token contexts of later models; GPT-2
# small is left out: its context stops at 1,024 tokens.*

# %% [markdown]
# ### Exercise 4: FlashAttention's backward, one block of keys at a time (5 points)
#
# Write `flash_attention_backward(Q, K, V, O, L, dO, block)`, the backward of section 5.3:
#
# - `Q` is `(..., Tq, d)`, `K` is `(..., Tk, d)`, `V` is `(..., Tk, dv)`, with the same leading axes
#   (none, or batch and heads). `O` and `dO` are `(..., Tq, dv)`: the forward's output and the
#   gradient arriving at it. `L` is `(..., Tq, 1)`: the log-sum-exp of each query's scaled scores,
#   $L_i = \log \sum_j e^{s_{ij}}$ with $s = QK^\top/\sqrt d$.
# - Return the tuple `(dQ, dK, dV)`, each a float64 array shaped like `Q`, `K` and `V`.
# - Use `O` and `L` as they were saved: recompute each block's probabilities as
#   $e^{S_{\text{blk}} - L}$ and take $D$ from $dO \odot O$. Do not recompute the forward pass.
#   They may have been saved in float32, as training often keeps them: use their values as they
#   are, and compute in float64.
# - Visit the keys in blocks of `block` consecutive positions, `0:block`, `block:2*block`, and so
#   on; the last block may be shorter, and `block` may be larger than $T_k$. The largest arrays
#   you hold are `(..., Tq, block)` strips: never one with both a $T_q$ and a $T_k$ axis.
# - No floating-point warnings, and do not modify the inputs.
#
# The visible checks measure your function's peak memory with `tracemalloc`. When your
# notebook is graded, one hidden input has more than 23,000 queries and as many keys, whose
# `(Tq, Tk)` table alone would take more than 4 GiB, more memory than a graded notebook may use.

# %% nbgrader={"grade": false, "grade_id": "flash_attention_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def flash_attention_backward(Q, K, V, O, L, dO, block):
    """Gradients of softmax(Q K^T / sqrt(d)) V from the saved O and L, visiting the keys `block` at a time.

    Q (..., Tq, d), K (..., Tk, d), V (..., Tk, dv), O and dO (..., Tq, dv), L (..., Tq, 1)
    -> (dQ (..., Tq, d), dK (..., Tk, d), dV (..., Tk, dv)). Never holds a (Tq, Tk) array.
    """
    ### BEGIN SOLUTION
    d = Q.shape[-1]
    Q_scaled = Q / np.sqrt(d)  # (..., Tq, d), a new array
    D = (dO * O).sum(axis=-1, keepdims=True)  # (..., Tq, 1): rowsum(dO * O) = rowsum(P * dP)
    dQ = np.zeros(Q.shape)  # gathers a term from every block
    dK = np.zeros(K.shape)  # each block writes its own rows
    dV = np.zeros(V.shape)
    for start in range(0, K.shape[-2], block):
        K_blk = K[..., start:start + block, :]  # (..., Bk, d), a view
        V_blk = V[..., start:start + block, :]  # (..., Bk, dv)
        P_blk = Q_scaled @ np.swapaxes(K_blk, -1, -2)  # (..., Tq, d) @ (..., d, Bk) -> (..., Tq, Bk): S_blk
        P_blk -= L  # in place: S_blk - L <= 0
        np.exp(P_blk, out=P_blk)  # (..., Tq, Bk): this block's probabilities
        dV[..., start:start + block, :] = np.swapaxes(P_blk, -1, -2) @ dO  # (..., Bk, Tq) @ (..., Tq, dv)
        dS_blk = dO @ np.swapaxes(V_blk, -1, -2)  # (..., Tq, dv) @ (..., dv, Bk) -> (..., Tq, Bk): dP_blk
        dS_blk -= D  # in place: dP_blk - D
        dS_blk *= P_blk  # dS_blk = P_blk * (dP_blk - D)
        dQ += dS_blk @ K_blk  # (..., Tq, Bk) @ (..., Bk, d) -> (..., Tq, d); divided by sqrt(d) below
        dK[..., start:start + block, :] = np.swapaxes(dS_blk, -1, -2) @ Q_scaled  # (..., Bk, Tq) @ (..., Tq, d)
    dQ /= np.sqrt(d)
    return dQ, dK, dV
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_flash_attention_backward", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
def call_flash_backward(Q, K, V, O, L, dO, block, what):
    """Call the function as the hidden tests do, with floating-point warnings raised as errors."""
    before = [a.copy() for a in (Q, K, V, O, L, dO)]
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        try:
            got = flash_attention_backward(Q, K, V, O, L, dO, block)
        except FloatingPointError as error:
            raise AssertionError(f"{what}: floating-point {error}: exponentiate S_blk - L, which is never "
                                 "positive") from None
    assert all(np.array_equal(a, b) for a, b in zip((Q, K, V, O, L, dO), before, strict=True)), (
        f"{what}: the inputs were modified: scale a copy (Q / np.sqrt(d)), not Q itself")
    assert isinstance(got, tuple) and len(got) == 3, f"{what}: return the tuple (dQ, dK, dV)"
    for name, grad, like in zip(("dQ", "dK", "dV"), got, (Q, K, V), strict=True):
        assert isinstance(grad, np.ndarray) and grad.shape == like.shape, (
            f"{what}: {name} should be a NumPy array of shape {like.shape}, got {getattr(grad, 'shape', type(grad))}")
    return got


def check_flash_attention_backward(Q, K, V, dO, block, what):
    """Visible check against the full backward, with hints for the usual mistakes."""
    O, L = attention_with_lse(Q, K, V)
    dQ, dK, dV = call_flash_backward(Q, K, V, O, L, dO, block, what)
    Tk = K.shape[-2]
    if Tk % block and Tk > block and not dV[..., Tk - Tk % block:, :].any():
        raise AssertionError(f"{what}: dV of the last {Tk % block} keys is zero: the last, shorter block "
                             f"(Tk = {Tk}, block = {block}) was skipped; loop with range(0, Tk, block)")
    assert np.allclose(dV.sum(axis=-2), dO.sum(axis=-2), rtol=1e-9, atol=1e-10), (
        f"{what}: dV summed over the keys should equal dO summed over the queries, because every row of P "
        "sums to 1 over all keys: compute each block's probabilities as exp(S_blk - L) with the saved L "
        "(not a softmax within the block), and S_blk = Q K_blk^T / sqrt(d)")
    assert np.allclose(dK.sum(axis=-2), 0.0, atol=1e-9 * (1 + np.abs(dK).max())), (
        f"{what}: dK summed over the keys should be zero, because every row of dS sums to zero: "
        "dS_blk = P_blk * (dP_blk - D) with D = rowsum(dO * O) over all keys, not over one block")
    halved = call_flash_backward(Q, K, V, O, L + np.log(2.0), dO, block, what + ", with L + log 2")
    assert all(np.allclose(h, g / 2, rtol=1e-9, atol=1e-12) for h, g in zip(halved, (dQ, dK, dV), strict=True)), (
        f"{what}: raising every saved L by log 2 halves every e^(S - L), so all three gradients should halve: "
        "recompute the probabilities from the L you are given, not from a forward pass of your own")
    expected = attention_backward(Q, K, V, dO)
    for name, got, want in zip(("dQ", "dK", "dV"), (dQ, dK, dV), expected, strict=True):
        assert np.allclose(got, want, rtol=1e-9, atol=1e-10), (
            f"{what}: {name} differs from the full backward. Check the 1 / sqrt(d) in dQ and dK, and that dQ "
            "adds a term from every block")


def check_flash_memory(T_mem, block):
    """Peak memory of one call: far below one (T, T) float64 array."""
    mem_rng = np.random.default_rng(7)
    Q_mem, K_mem, V_mem, dO_mem = (mem_rng.standard_normal((T_mem, 2)) for _ in range(4))
    O_mem, L_mem = attention_with_lse(Q_mem, K_mem, V_mem)
    full_table = 8 * T_mem * T_mem  # bytes of one (T, T) float64 array
    peak = peak_bytes(lambda: flash_attention_backward(Q_mem, K_mem, V_mem, O_mem, L_mem, dO_mem, block))
    assert peak < full_table / 4, (
        f"T = {T_mem}, block = {block}: the call allocated {peak / 2**20:.1f} MiB at its peak; one (T, T) "
        f"array is {full_table / 2**20:.1f} MiB. Hold only (..., Tq, block) strips, one block at a time")


# A case small enough to work by hand: one query, two keys with equal scores (K = 0), so P = [1/2, 1/2];
# V = [[1], [3]] gives O = 2; dO = [[1]] gives D = 2, dP = [1, 3], dS = [1/2 (1 - 2), 1/2 (3 - 2)] = [-1/2, 1/2].
q_hand, k_hand, v_hand, do_hand = np.array([[1.0, 0.0]]), np.zeros((2, 2)), np.array([[1.0], [3.0]]), np.array([[1.0]])
dQ_hand, dK_hand, dV_hand = call_flash_backward(q_hand, k_hand, v_hand, np.array([[2.0]]), np.array([[np.log(2.0)]]),
                                                do_hand, 1, "the hand-worked case, blocks of one key")
assert np.allclose(dV_hand, [[0.5], [0.5]]), f"hand-worked case: dV = P^T dO = [[0.5], [0.5]], got {dV_hand.tolist()}"
assert np.allclose(dK_hand, np.array([[-0.5, 0.0], [0.5, 0.0]]) / np.sqrt(2)), (
    f"hand-worked case: dK = dS^T q / sqrt(2) = [[-0.354, 0], [0.354, 0]], got {np.round(dK_hand, 3).tolist()}: "
    "with blocks of one key, D must still come from dO * O (here 2), not from the block")
assert np.allclose(dQ_hand, 0.0), f"hand-worked case: dQ = dS K / sqrt(2) = 0 because K = 0, got {dQ_hand.tolist()}"

check_rng = np.random.default_rng(2025)
dO_check = check_rng.standard_normal((T, d))  # (T, dv)
for block_try in [3, 1, 8, 50]:
    check_flash_attention_backward(Q, K, V, dO_check, block_try, f"the lesson's example, block = {block_try}")
Q5, K5, V5 = (check_rng.standard_normal(shape) for shape in [(2, 3, 5, 4), (2, 3, 11, 4), (2, 3, 11, 6)])
check_flash_attention_backward(Q5, K5, V5, check_rng.standard_normal((2, 3, 5, 6)), 4,
                               "batch and heads (2, 3), Tq = 5, Tk = 11, dv = 6")
check_flash_attention_backward(Q5 * 300.0, K5, V5, check_rng.standard_normal((2, 3, 5, 6)), 4,
                               "scores in the thousands")
O32, L32 = (x.astype(np.float32) for x in attention_with_lse(Q, K, V))  # O and L saved in float32
grads32 = call_flash_backward(Q, K, V, O32, L32, dO_check, 3, "O and L saved in float32")
assert all(g.dtype == np.float64 for g in grads32), "O and L saved in float32: still compute and return float64"
assert all(np.allclose(g, f, rtol=1e-5, atol=1e-6) for g, f in zip(grads32, attention_backward(Q, K, V, dO_check), strict=True)), (
    "O and L saved in float32: the gradients should still be close to the full backward's (to float32 precision)")
check_flash_memory(4000, 64)
print("Exercise 4 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Your backward against the full one
#
# First, the gradients. On a larger problem with batch and head axes, for block sizes that do
# and do not divide $T$, the largest difference from the full backward of section 5, relative to
# the largest gradient:

# %%
bwd_rng = np.random.default_rng(8)
Q_bw, K_bw, V_bw, dO_bw = (bwd_rng.standard_normal((2, 3, 300, 16)) for _ in range(4))  # (B, h, T, hs)
O_bw, L_bw = attention_with_lse(Q_bw, K_bw, V_bw)  # (2, 3, 300, 16), (2, 3, 300, 1)
full_bw = attention_backward(Q_bw, K_bw, V_bw, dO_bw)  # (dQ, dK, dV), each (2, 3, 300, 16)
for block_try in [1, 7, 64, 300, 1000]:
    flash_bw = flash_attention_backward(Q_bw, K_bw, V_bw, O_bw, L_bw, dO_bw, block_try)
    rel = max(np.abs(f - g).max() / np.abs(g).max() for f, g in zip(flash_bw, full_bw, strict=True))
    print(f"block = {block_try:4d}: dQ, dK, dV relative difference from the full backward below 1e-12: {rel < 1e-12}")

# %% [markdown]
# Agreement to twelve digits and beyond, the precision of float64 arithmetic: the blockwise
# backward computes the same numbers in another order. Second, the memory: the same tracemalloc
# measurement as sections 2 and 3, for the full backward over the lengths of section 2 and for
# your backward with blocks of 128 keys up to $T = 4{,}096$. The saved $O$ and $L$ and the
# gradient $dO$ are made before each measurement starts, as the inputs were in section 2.

# %%
naive_bw_peak = []
for n in sweep_T:
    Q_n, K_n, V_n = sweep_inputs[int(n)]
    dO_n = np.random.default_rng(9).standard_normal((n, sweep_d))  # (T, dv)
    naive_bw_peak.append(peak_bytes(lambda: attention_backward(Q_n, K_n, V_n, dO_n)))
naive_bw_peak = np.array(naive_bw_peak)
flash_bw_peak = []
flash_rng = np.random.default_rng(10)
for n in online_T:
    Q_n, K_n, V_n, dO_n = (flash_rng.standard_normal((n, sweep_d)) for _ in range(4))
    O_n, L_n = attention_with_lse(Q_n, K_n, V_n)
    flash_bw_peak.append(peak_bytes(lambda: flash_attention_backward(Q_n, K_n, V_n, O_n, L_n, dO_n, online_block)))
flash_bw_peak = np.array(flash_bw_peak)
print("full backward (Lesson 7):")
for n, peak in zip(sweep_T, naive_bw_peak, strict=True):
    print(f"  T = {n:>5}: peak {peak / 2**20:7.2f} MiB = {peak / (8 * n**2):.2f} x one (T, T) array")
print(f"flash backward (block {online_block}):")
for n, peak in zip(online_T, flash_bw_peak, strict=True):
    print(f"  T = {n:>5}: peak {peak / 2**20:7.1f} MiB = {peak / (8 * n**2):.2g} x one (T, T) array")
naive_bw_slope, naive_bw_intercept = fit_slope(sweep_T, naive_bw_peak)
flash_bw_slope, flash_bw_intercept = fit_slope(online_T, flash_bw_peak)
print(f"memory slope: full backward {naive_bw_slope:.2f}, flash backward {flash_bw_slope:.2f}")
assert 1.9 <= naive_bw_slope <= 2.1 and 0.9 <= flash_bw_slope <= 1.1
print("full backward slope within [1.9, 2.1]:", 1.9 <= naive_bw_slope <= 2.1,
      "  flash backward slope within [0.9, 1.1]:", 0.9 <= flash_bw_slope <= 1.1)

# %%
fig, ax = plt.subplots(figsize=(7.5, 4.6), constrained_layout=True)
ax.loglog(sweep_T, naive_bw_peak / 2**20, "o", color="tab:red", label="full backward, measured")
ax.loglog(T_all, np.exp(naive_bw_intercept) * T_all**naive_bw_slope / 2**20, "--", color="tab:red",
          label=f"full backward, fit $\\propto T^{{{naive_bw_slope:.2f}}}$")
ax.loglog(online_T, flash_bw_peak / 2**20, "s", color="tab:green", label=f"flash backward (block {online_block}), measured")
ax.loglog(T_all, np.exp(flash_bw_intercept) * T_all**flash_bw_slope / 2**20, "--", color="tab:green",
          label=f"flash backward, fit $\\propto T^{{{flash_bw_slope:.2f}}}$")
ax.set_xticks(online_T, [str(n) for n in online_T])
ax.minorticks_off()
ax.grid(True, which="major", alpha=0.3)
ax.set_xlabel("sequence length T")
ax.set_ylabel("peak memory (MiB)")
ax.set_title(f"Peak memory of one attention backward (d = {sweep_d}), log-log")
ax.legend()
plt.show()

# %% [markdown]
# *Figure: the full backward's peak (red; its fit extended past the measured $T$) climbs with
# slope 2, the blockwise backward's (green) with a slope near 1. The full backward holds four
# `(T, T)` arrays at its peak (the table above counts them); the blockwise one holds a few
# `(T, 128)` strips and the `(T, d)` gradients.*

# %% [markdown]
# ## Summary
#
# **Attention's $T^2$, measured.** The straightforward NumPy attention's peak memory is four
# `(T, T)` arrays (scores, shifted scores, exponentials, weights): its fitted log-log slope is
# 1.99, and the time's slope fell in a band around 2. One `(T, T)` float64 array is
# $8T^2$ bytes: 8 GiB at $T = 32{,}768$.
#
# **The online softmax.** Keep per query a running max $m$, a running sum $\ell$ and an
# unnormalised output $\tilde o$; for each block of keys,
# $m_{\text{new}} = \max(m, m_{\text{blk}})$,
# $\ell_{\text{new}} = \ell\,e^{m - m_{\text{new}}} + \sum e^{s - m_{\text{new}}}$,
# $\tilde o_{\text{new}} = \tilde o\,e^{m - m_{\text{new}}} + \sum e^{s - m_{\text{new}}}\,v$;
# at the end $o = \tilde o / \ell$. It equals the full attention (every block size tested agreed
# to better than $10^{-12}$), never overflows, and for a fixed block its peak memory grew with
# a fitted slope near 1 instead of 2. Forgetting to rescale $\tilde o$ is wrong exactly when a later block
# raises the max. The same rescaling merges the states $(m, \ell, \tilde o)$ of any two disjoint
# parts of the keys. The arithmetic is unchanged; FlashAttention's gain on a GPU comes from never
# writing the `(T, T)` table to main memory.
#
# **The KV cache.** $T \cdot 2 \cdot L \cdot h_{kv} \cdot d_h \cdot b$ bytes per sequence:
# 36 KiB per token for GPT-2 small in float16, 512 KiB for Llama-2-7B's shape (MHA) in bfloat16,
# 128 KiB for Llama-3-8B's (8 key/value heads). Grouped-query attention ($h_{kv}$ shared
# key/value heads) divides it by $h / h_{kv}$, multi-query attention by $h$, without changing the
# number of query heads: a reshape and a broadcast compute the same result as MHA with repeated
# keys and values.
#
# **The backward pass, block by block.** The forward saves $O$ and one number per query, the
# log-sum-exp $L = m + \log \ell$. The backward recomputes each block of weights as
# $P_{\text{blk}} = e^{S_{\text{blk}} - L}$, and replaces the row sum of Lesson 7's softmax
# backward by $D = \operatorname{rowsum}(dO \odot O)$, so no `(T, T)` array is ever held. Its
# gradients matched Lesson 7's full backward to better than $10^{-12}$, relative, for every block
# size tried, and its peak memory grew with a fitted slope near 1, against 2 for the full
# backward. The price is computing every score and exponential a second time.
#
# **Next:** Lesson 11, *The transformer block*, puts attention into a GPT block: the residual
# stream that attention adds to, the LayerNorm before it and the MLP after it.
