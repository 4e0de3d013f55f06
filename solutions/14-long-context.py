# ---
# jupyter:
#   jupytext:
#     formats: 14-long-context//ipynb,py:percent
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
# # Lesson 14: Attention at long context: sliding windows, ring buffers, sinks and ALiBi
#
# Lesson 10 measured what full attention costs: a `(T, T)` score table per head, and a KV cache
# that grows by one key and one value per layer and head with every token. The open models of
# today do not pay that bill in every layer. Mistral, Gemma and gpt-oss let many of their layers
# see only a **sliding window** of the last $w$ tokens, so that those layers' caches become ring
# buffers of $w$ slots; gpt-oss and StreamingLLM add **attention sinks**, a place for a head to put
# the weight it does not want to spend; and BLOOM and MPT replace position embeddings by **ALiBi**,
# a penalty that grows with distance, chosen so that a model can read sequences longer than those
# it was trained on. This lesson builds each of them and measures what it does.
#
# **What you'll do**
# - draw the band mask of a sliding window beside the causal mask, measure how far a stack of
#   window layers reaches back, and price the KV cache of gpt-oss-120b's published shape, which
#   alternates window and full layers;
# - write sliding-window attention that never builds the `(T, T)` table (Exercise 1) and a decoding
#   step over a ring buffer of $w$ slots (Exercise 2), both equal to the masked full computation;
# - write attention with sink tokens beside the window (Exercise 3), train a tiny model in NumPy,
#   and measure over seeds where its heads put their weight, and what happens to its loss when a
#   window drops the first token;
# - write ALiBi's slopes and biased attention (Exercise 4), then train small models, four for each
#   of five position schemes, and evaluate them at one, two and four times their training length.
#
# **What you'll learn**
# - why $L$ layers of window $w$ reach $L\,(w-1)$ tokens back, and what interleaving window and
#   full layers saves;
# - why a ring buffer of $w$ slots gives exactly the outputs of the masked computation, in memory
#   that does not grow;
# - that softmax weights must sum to 1, so a head with nothing to read parks its weight somewhere,
#   and what breaks when that place leaves the window;
# - what a linear distance penalty does to length extrapolation, measured against sinusoidal,
#   learned and rotary positions.
#
# **What you'll need**
# - the causal mask and the KV cache (Lesson 6), position encodings and RoPE (Lesson 8), Adam
#   (Lesson 9), the KV-cache formula and `tracemalloc` (Lesson 10), and the hand-written backward
#   pass of Lessons 7 and 12.
#
# The four graded exercises sit where their ideas are taught, because the later sections run on
# your code. Their visible checks run as you work; hidden tests call your functions on fresh inputs.

# %%
import os

# One BLAS thread, set before NumPy loads: on a busy machine extra BLAS threads spend much of their
# time waiting for each other on this lesson's small matrices.
for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import tracemalloc

import matplotlib.pyplot as plt
import numpy as np

from lesson_helpers import demo_size, tidy_figures  # the course's helpers for demonstrations

tidy_figures()  # labels and colourbars placed without overlap


def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`: subtract the max, exponentiate, normalise."""
    x = x - x.max(axis=axis, keepdims=True)  # every exponent <= 0
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def causal_mask(T):
    """(T, T) booleans, True where key position s <= query position t (Lesson 6)."""
    positions = np.arange(T)
    return positions[None, :] <= positions[:, None]  # (1, T) vs (T, 1) -> (T, T)


def masked_attention(q, k, v, *, mask):
    """softmax(q k^T / sqrt(hs)) v with a (T, T) mask, True = may attend. q, k, v (..., T, hs) -> (..., T, hs)."""
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., T, hs) @ (..., hs, T) -> (..., T, T)
    return softmax(np.where(mask, scores, -np.inf)) @ v  # (..., T, T) @ (..., T, hs) -> (..., T, hs)


def peak_bytes(fn):
    """Peak bytes of memory allocated while fn() runs (tracemalloc, Lesson 10)."""
    tracemalloc.start()
    try:
        fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak


def draw_mask(ax, mask, title, label="1 = may attend"):
    """A (T, T) mask as a heatmap with a colourbar; 0 and 1 printed in each cell when T <= 8."""
    image = ax.imshow(mask.astype(float), cmap="Blues", vmin=0, vmax=1)
    T = mask.shape[0]
    if T <= 8:
        for i in range(T):
            for j in range(T):
                ax.text(j, i, str(int(mask[i, j])), ha="center", va="center", fontsize=8,
                        color="white" if mask[i, j] else "black")
    ax.set_xticks(range(T))
    ax.set_yticks(range(T))
    ax.set_xlabel("key position")
    ax.set_ylabel("query position")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, shrink=0.8, label=label)


# %% [markdown]
# ## 1. Sliding-window attention
#
# The causal mask of Lesson 6 lets query $t$ read every key $s \le t$. A **sliding window** of
# width $w$ lets it read only the $w$ most recent ones, itself included:
#
# $$\text{key } s \text{ is visible to query } t \iff 0 \le t - s \le w - 1 .$$
#
# The allowed entries form a band of width $w$ along the diagonal of the `(T, T)` table. With
# $w \ge T$ the band is the whole lower triangle, and the window is the causal mask again.

# %%
def band_mask(T, w):
    """(T, T) booleans: True where 0 <= t - s <= w - 1, the w most recent keys up to query t."""
    positions = np.arange(T)
    distance = positions[:, None] - positions[None, :]  # (T, 1) - (1, T) -> (T, T): t - s
    return (distance >= 0) & (distance < w)


fig, axes = plt.subplots(1, 2, figsize=(9, 4))
draw_mask(axes[0], causal_mask(8), "causal mask, T = 8 (Lesson 6)")
draw_mask(axes[1], band_mask(8, 3), "sliding window, T = 8, w = 3")
fig.suptitle("Which keys each query may read")
plt.show()
print("keys per query, causal:", causal_mask(8).sum(axis=1), "| window w = 3:", band_mask(8, 3).sum(axis=1))

# %% [markdown]
# *Figure: the causal mask (left) and the band of a window of $w = 3$ (right), 1 where the query
# of that row may read the key of that column. In the band every row past the second holds
# exactly three 1s, whatever $T$ is.*
#
# ### 1.1 How far a stack of windows reaches
#
# One window layer lets position $t$ read positions $t - w + 1$ to $t$. The next layer reads those
# positions' outputs, each of which already mixed $w$ positions, so two layers reach
# $2\,(w - 1)$ back, and $L$ layers reach
#
# $$\text{receptive field} = L\,(w - 1) .$$
#
# That is the claim; here is a measurement. Stack $L$ layers of one random attention head with a
# residual connection, $X \leftarrow X + \operatorname{softmax}(\text{band-masked scores})\,X W_v$,
# on $T = 40$ random tokens of width $C = 8$. Change token 0 only, run the stack again, and find
# the last position whose output moved (by more than $10^{-12}$).

# %%
def window_stack(X, layers, w):
    """L layers of one-head window attention, each added to the residual stream. X (T, C) -> (T, C)."""
    T, C = X.shape
    for W_q, W_k, W_v in layers:
        X = X + masked_attention(X @ W_q, X @ W_k, X @ W_v, mask=band_mask(T, w))  # (T, C) each
    return X


stack_rng = np.random.default_rng(14)
T_rf, C_rf = 40, 8
X_rf = stack_rng.standard_normal((T_rf, C_rf))  # (T, C)
bumped = X_rf.copy()
bumped[0] += 1.0  # token 0 changed, every other token the same
print(f"{'w':>2} {'layers L':>8} {'last position moved':>20} {'L (w - 1)':>10}")
for w_rf in [3, 5]:
    for n_layers_rf in [1, 2, 3, 4, 5]:
        layers_rf = [tuple(stack_rng.standard_normal((C_rf, C_rf)) / np.sqrt(C_rf) for _ in range(3))
                     for _ in range(n_layers_rf)]
        moved = np.abs(window_stack(bumped, layers_rf, w_rf) - window_stack(X_rf, layers_rf, w_rf)).max(axis=1)  # (T,)
        print(f"{w_rf:>2} {n_layers_rf:>8} {np.flatnonzero(moved > 1e-12).max():>20} {n_layers_rf * (w_rf - 1):>10}")

# %% [markdown]
# The perturbation reaches exactly $L\,(w - 1)$ positions, no more: with $w = 5$, five layers carry
# token 0 to position 20, and position 21 never hears of it. Mistral 7B (Jiang et al., *Mistral 7B*,
# 2023, arXiv:2310.06825), with a window of $w = 4{,}096$ in each of its 32 layers, reaches
# $32 \cdot 4{,}095 = 131{,}040$ tokens this way in principle. The reach is an upper bound: it says
# where information can come from, not how much of it arrives after 32 rounds of averaging.
#
# ### 1.2 Window layers beside full layers, priced
#
# gpt-oss-120b (OpenAI, *gpt-oss-120b & gpt-oss-20b Model Card*, 2025, arXiv:2508.10925) has
# 36 layers that alternate: a layer whose attention is a window of 128 tokens, then a layer of
# full causal attention, and so on, 18 of each. Every layer has 64 query heads and 8 key/value
# heads (grouped-query attention, Lesson 10) of head size 64, a learned sink logit per head
# (section 3), and a context of 131,072 tokens. These numbers are those of the model's released
# configuration on Hugging Face (`num_hidden_layers`, `layer_types`, `num_attention_heads`,
# `num_key_value_heads`, `head_dim`, `max_position_embeddings`; its attention layers carry the
# `sinks` weights), and the window of 128 tokens is given by NVIDIA's Megatron Bridge
# documentation of the model and by the Keras Hub configuration of gpt-oss-20b, which has the same
# attention; the model card describes the same alternation of banded-window and dense layers.
#
# Lesson 10's formula gives the cache of one layer: $2\,h_{kv}\,d_h\,b$ bytes per token kept, here
# $2 \cdot 8 \cdot 64 \cdot 2 = 2{,}048$ bytes in bfloat16. A full layer keeps all $T$ tokens; a window
# layer keeps at most $w = 128$:
#
# $$\text{bytes}(T) = 2\,h_{kv}\,d_h\,b\,\big(L_{\text{full}}\cdot T + L_{\text{window}}\cdot \min(T, w)\big).$$

# %%
n_layers_oss, n_kv_oss, head_dim_oss, window_oss, bf16 = 36, 8, 64, 128, 2  # gpt-oss-120b
per_token_layer = 2 * n_kv_oss * head_dim_oss * bf16  # bytes per token kept, per layer (Lesson 10)


def cache_bytes(T, n_full, n_window, w=window_oss):
    """KV-cache bytes of one sequence of T tokens: n_full layers keep T tokens, n_window layers min(T, w)."""
    return per_token_layer * (n_full * T + n_window * min(T, w))


print(f"bytes per token and layer: {per_token_layer:,}")
print(f"{'T':>8} | {'36 full layers':>15} | {'18 window + 18 full':>20} | {'36 window layers':>17} | {'saved':>6}")
for T_oss in [8_192, 131_072]:
    all_full = cache_bytes(T_oss, 36, 0)
    mixed = cache_bytes(T_oss, 18, 18)
    all_window = cache_bytes(T_oss, 0, 36)
    print(f"{T_oss:>8,} | {all_full / 2**30:>11.3f} GiB | {mixed / 2**30:>16.3f} GiB | "
          f"{all_window / 2**20:>13.1f} MiB | {1 - mixed / all_full:>6.1%}")

# %% [markdown]
# At 8,192 tokens, 36 full layers would cache 0.562 GiB of one sequence; gpt-oss's alternation
# caches 0.286 GiB, 49.2% less, because the 18 window layers hold 128 tokens each instead of
# 8,192. At the full context of 131,072 tokens the saving is one half to three digits (4.504 GiB
# against 9.000 GiB): the window layers' share has become negligible, and the cache is that of
# the 18 full layers. Thirty-six window layers alone would need
# 9 MiB at any length, but then, by section 1.1, nothing could reach further than
# $36 \cdot 127 = 4{,}572$ tokens back; the full layers keep every token in reach.
#
# ### Exercise 1: sliding-window attention without the table (4 points)
#
# Write `sliding_window_attention(q, k, v, w)`: `q`, `k`, `v` of shape `(B, h, T, hs)`, and a window
# `w >= 1`. Return the `(B, h, T, hs)` outputs of scaled dot-product attention in which query $t$
# reads keys $s$ with $0 \le t - s \le w - 1$: exactly `masked_attention(q, k, v, mask=band_mask(T, w))`.
#
# **Never build a `(T, T)` array** (scores, weights or mask): each query has at most $w$ keys, so
# the work and the memory should grow as $T \cdot w$. The visible checks measure your function's
# peak memory with `tracemalloc`, and when your notebook is graded one hidden input is long enough
# that its `(T, T)` table alone would need more memory than a graded notebook may use.
# One way: pad `k` and `v` with $w - 1$ rows in front, take each query's $w$ keys with
# `np.lib.stride_tricks.sliding_window_view` (a view, no copy), and mask the padded slots. A loop
# over the $w$ offsets is fine too. No loop over heads or over $t$, and do not modify the inputs;
# `w` may be larger than `T`.

# %% nbgrader={"grade": false, "grade_id": "sliding_window_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sliding_window_attention(q, k, v, w):
    """Causal attention over the last w keys. q, k, v (B, h, T, hs) -> (B, h, T, hs), no (T, T) array."""
    ### BEGIN SOLUTION
    B, h, T, hs = q.shape
    padding = np.zeros((B, h, w - 1, hs))
    k_padded = np.concatenate([padding, k], axis=2)  # (B, h, w - 1 + T, hs)
    v_padded = np.concatenate([padding, v], axis=2)
    k_windows = np.lib.stride_tricks.sliding_window_view(k_padded, w, axis=2)  # (B, h, T, hs, w): a view
    v_windows = np.lib.stride_tricks.sliding_window_view(v_padded, w, axis=2)  # slot j is position t - w + 1 + j
    scores = np.einsum("bhtd,bhtdj->bhtj", q, k_windows) / np.sqrt(hs)  # (B, h, T, w)
    real = np.arange(T)[:, None] - (w - 1) + np.arange(w)[None, :] >= 0  # (T, w): False on padded slots
    weights = softmax(np.where(real, scores, -np.inf))  # (B, h, T, w)
    return np.einsum("bhtj,bhtdj->bhtd", weights, v_windows)  # (B, h, T, hs)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_sliding_window_attention", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
def check_sliding_window_attention(shape, w, draw, scale=1.0):
    """Visible check against the band-masked full computation."""
    check_rng = np.random.default_rng(draw)
    q_, k_, v_ = (check_rng.standard_normal(shape) * s for s in (scale, scale, 1.0))  # (B, h, T, hs) each
    copies = [a.copy() for a in (q_, k_, v_)]
    got = np.asarray(sliding_window_attention(q_, k_, v_, w))
    assert all(np.array_equal(a, b) for a, b in zip((q_, k_, v_), copies, strict=True)), "the inputs were modified"
    assert got.shape == shape, f"w = {w}: expected shape (B, h, T, hs) = {shape}, got {got.shape}"
    expected = masked_attention(q_, k_, v_, mask=band_mask(shape[2], w))
    assert np.allclose(got, expected, rtol=1e-9, atol=1e-12), (
        f"shape {shape}, w = {w}: values differ from band-masked attention. Query t reads keys t - w + 1 .. t, "
        "itself included (w keys, not w + 1 or w - 1); padded slots before position 0 must get weight 0")


def check_window_memory(T_mem, w):
    """Peak memory of one call: far below one (T, T) float64 array."""
    mem_rng = np.random.default_rng(5)
    q_, k_, v_ = (mem_rng.standard_normal((1, 1, T_mem, 2)) for _ in range(3))
    peak = peak_bytes(lambda: sliding_window_attention(q_, k_, v_, w))
    full_table = 8 * T_mem * T_mem  # bytes of one (T, T) float64 array
    assert peak < full_table / 8, (
        f"T = {T_mem}, w = {w}: the call allocated {peak / 2**20:.1f} MiB at its peak; one (T, T) array is "
        f"{full_table / 2**20:.1f} MiB. Gather each query's w keys instead of scoring all T")


check_sliding_window_attention((2, 3, 10, 4), 3, draw=0)
check_sliding_window_attention((1, 2, 7, 3), 1, draw=1)  # w = 1: each query reads only itself
check_sliding_window_attention((1, 1, 6, 2), 9, draw=2)  # w > T: the causal mask
check_sliding_window_attention((2, 1, 12, 5), 4, draw=3, scale=12.0)  # large scores
check_window_memory(3_000, 16)
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# Your function's peak memory against the masked full computation's, as $T$ grows at $w = 32$
# ($B = h = 1$, $hs = 8$), with the size of one `(T, T)` float64 table beside them:

# %%
memory_T = [512, 1_024, 2_048]
print(f"{'T':>6} {'masked full (MiB)':>18} {'window (MiB)':>13} {'one (T, T) table (MiB)':>23}")
for T_m in memory_T:
    mem_rng = np.random.default_rng(T_m)
    q_m, k_m, v_m = (mem_rng.standard_normal((1, 1, T_m, 8)) for _ in range(3))
    full_peak = peak_bytes(lambda: masked_attention(q_m, k_m, v_m, mask=band_mask(T_m, 32)))
    window_peak = peak_bytes(lambda: sliding_window_attention(q_m, k_m, v_m, 32))
    print(f"{T_m:>6,} {full_peak / 2**20:>18.0f} {window_peak / 2**20:>13.1f} {8 * T_m**2 / 2**20:>23.0f}")

# %% [markdown]
# The masked computation's peak grows fourfold each time $T$ doubles: it holds several `(T, T)`
# tables at once (the distances, the mask, the scores, the weights). The window's grows twofold,
# as $T \cdot w$, and stays far below a single table.
#
# ## 2. Decoding with a ring buffer
#
# Lesson 6 decoded with a KV cache that grows by one row per token. With a window, token $t$ reads
# only positions $t - w + 1$ to $t$: every older key and value can be thrown away. A cache of
# exactly $w$ **slots** per head suffices if token $t$ writes its key and value into slot
# $t \bmod w$, overwriting the token $t - w$, which has just left the window:
#
# $$\text{slot}(t) = t \bmod w, \qquad \text{visible at step } t: \text{the } \min(t + 1, w) \text{ slots written so far}.$$
#
# The slots are not in position order once the buffer has wrapped, but that does not matter:
# attention is a weighted average whose weights depend on each key's score, not on where the key
# sits in the array (Lesson 8: attention sees a set). Before the buffer is full, the slots
# $t + 1, \dots, w - 1$ hold nothing yet, and must not be read.
#
# ### Exercise 2: one decoding step over the ring buffer (4 points)
#
# Write `ring_decode_step(K_ring, V_ring, t, q_t, k_t, v_t)`. `K_ring` and `V_ring` have shape
# `(h, w, hs)`: $w$ slots per head. `t` is the new token's position ($t \ge 0$), and `q_t`, `k_t`,
# `v_t` of shape `(h, hs)` are its query, key and value.
#
# - Write `k_t` and `v_t` into slot $t \bmod w$ of `K_ring` and `V_ring`, **in place** (the caller
#   keeps the same arrays from step to step: no copy, no new array).
# - Attend from `q_t` over the slots written so far (all $w$ once $t \ge w - 1$; slots $0$ to $t$
#   before that), with scores $q \cdot k / \sqrt{hs}$, and return the output, shape `(h, hs)`.
#
# Slots that were never written may hold anything, even NaN: do not read them. Run from $t = 0$,
# the outputs must equal row $t$ of `masked_attention` with `band_mask(T, w)`, step by step.
# No loop over heads or slots.

# %% nbgrader={"grade": false, "grade_id": "ring_decode_step", "locked": false, "schema_version": 3, "solution": true, "task": false}
def ring_decode_step(K_ring, V_ring, t, q_t, k_t, v_t):
    """Write token t into slot t % w of the (h, w, hs) rings, in place; attend over the filled slots -> (h, hs)."""
    ### BEGIN SOLUTION
    w = K_ring.shape[1]
    K_ring[:, t % w] = k_t  # (h, hs) into (h, w, hs): overwrite the token that left the window
    V_ring[:, t % w] = v_t
    filled = min(t + 1, w)  # slots 0 .. filled - 1 hold real tokens
    scores = np.einsum("hd,hjd->hj", q_t, K_ring[:, :filled]) / np.sqrt(q_t.shape[-1])  # (h, filled)
    return np.einsum("hj,hjd->hd", softmax(scores), V_ring[:, :filled])  # (h, hs)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_ring_decode_step", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
def check_ring_decode(h, T, hs, w, draw):
    """Decode T tokens into NaN-filled rings; every step must equal the band-masked full computation."""
    check_rng = np.random.default_rng(draw)
    Q_, K_, V_ = (check_rng.standard_normal((h, T, hs)) for _ in range(3))  # (h, T, hs) each
    expected = masked_attention(Q_, K_, V_, mask=band_mask(T, w))  # (h, T, hs)
    K_ring_, V_ring_ = np.full((h, w, hs), np.nan), np.full((h, w, hs), np.nan)  # never-written slots: NaN
    for t in range(T):
        out = ring_decode_step(K_ring_, V_ring_, t, Q_[:, t], K_[:, t], V_[:, t])
        assert out is not None, f"step {t}: return the output (h, hs)"
        out = np.asarray(out)
        assert out.shape == (h, hs), f"step {t}: expected shape (h, hs) = {(h, hs)}, got {out.shape}"
        assert np.array_equal(K_ring_[:, t % w], K_[:, t]) and np.array_equal(V_ring_[:, t % w], V_[:, t]), (
            f"h = {h}, w = {w}, step {t}: slot t % w = {t % w} of the caller's rings should now hold this token's key "
            "and value: write into K_ring and V_ring in place (no copy), at t % w")
        assert not np.isnan(out).any(), (
            f"h = {h}, w = {w}, step {t}: the output is NaN: a slot that was never written was read "
            "(before the buffer is full only slots 0 .. t are real)")
        assert np.allclose(out, expected[:, t], rtol=1e-9, atol=1e-12), (
            f"h = {h}, w = {w}, step {t}: the output differs from band-masked attention: attend over the "
            "min(t + 1, w) written slots, with scores q . k / sqrt(hs)")


check_ring_decode(2, 12, 4, 4, draw=0)  # wraps twice
check_ring_decode(1, 5, 3, 8, draw=1)  # never fills: only written slots
check_ring_decode(3, 7, 2, 1, draw=2)  # w = 1: one slot, overwritten every step
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### 2.1 The ring against the growing cache
#
# Decode 256 tokens ($h = 4$, $hs = 16$, $w = 32$) with your step, and beside it with Lesson 6's
# growing cache (every key and value appended), counting the bytes each holds after every step.
# Both give the band-masked outputs; only one keeps growing.

# %%
ring_rng = np.random.default_rng(6)
h_d, T_d, hs_d, w_d = 4, 256, 16, 32
Q_d, K_d, V_d = (ring_rng.standard_normal((h_d, T_d, hs_d)) for _ in range(3))  # (h, T, hs)
expected_d = masked_attention(Q_d, K_d, V_d, mask=band_mask(T_d, w_d))  # (h, T, hs)
K_ring_d, V_ring_d = np.full((h_d, w_d, hs_d), np.nan), np.full((h_d, w_d, hs_d), np.nan)
K_grow, V_grow = np.zeros((h_d, 0, hs_d)), np.zeros((h_d, 0, hs_d))
ring_held, grow_held, worst = [], [], 0.0
for t in range(T_d):
    out_t = ring_decode_step(K_ring_d, V_ring_d, t, Q_d[:, t], K_d[:, t], V_d[:, t])  # (h, hs)
    K_grow = np.concatenate([K_grow, K_d[:, t:t + 1]], axis=1)  # (h, t + 1, hs): Lesson 6's cache
    V_grow = np.concatenate([V_grow, V_d[:, t:t + 1]], axis=1)
    worst = max(worst, np.abs(out_t - expected_d[:, t]).max())
    ring_held.append(K_ring_d.nbytes + V_ring_d.nbytes)
    grow_held.append(K_grow.nbytes + V_grow.nbytes)
print("every step equals the band-masked computation, max |difference| below 1e-12:", worst < 1e-12)
print(f"bytes held after 32 tokens: ring {ring_held[31]:,}, growing cache {grow_held[31]:,}")
print(f"bytes held after 256 tokens: ring {ring_held[-1]:,}, growing cache {grow_held[-1]:,}")

fig, ax = plt.subplots(figsize=(6, 4))
_ = ax.plot(np.arange(1, T_d + 1), np.array(grow_held) / 2**10, label="growing cache (Lesson 6)")
_ = ax.plot(np.arange(1, T_d + 1), np.array(ring_held) / 2**10, label=f"ring buffer, w = {w_d}")
_ = ax.axvline(w_d, color="grey", linestyle=":", label="t = w")
ax.set_xlabel("tokens decoded")
ax.set_ylabel("KiB held (keys and values, float64)")
ax.set_title("KV memory while decoding: ring buffer against a growing cache")
ax.legend()
plt.show()

# %% [markdown]
# *Figure: bytes of keys and values held after each decoded token. The growing cache rises in a
# straight line; the ring buffer holds $2\,h\,w\,hs \cdot 8 = 32{,}768$ bytes from the first token
# on, and the two meet at $t = w$.*
#
# The ring holds 32,768 bytes at every step, the growing cache 262,144 after 256 tokens, eight
# times more, and the gap grows with every token, while the outputs agree to below $10^{-12}$.
#
# ## 3. Attention sinks
#
# Softmax weights are positive and sum to 1: a head must put all of its weight somewhere, even
# when nothing in its context is worth reading. Trained language models resolve this by parking
# the spare weight on the first tokens, whose values the model learns to make harmless: Xiao et
# al. (*Efficient Streaming Language Models with Attention Sinks*, 2023, arXiv:2309.17453) found
# that Llama-2, MPT, Falcon and Pythia all put a large share of their attention on the first few
# positions, whatever those tokens are, and called them **attention sinks**.
#
# That is harmless until a sliding window evicts them. Decode past the window with a model
# trained with full attention, and the first token leaves the cache: the weight it absorbed must
# go to the tokens in the window instead. Xiao et al. report that perplexity then explodes, and
# that keeping the first **$k$ sink tokens** in the cache beside the window (they use $k = 4$)
# mends it:
#
# $$\text{key } s \text{ is visible to query } t \iff s \le t \ \text{ and } \ \big(t - s \le w - 1 \ \text{ or } \ s < k\big).$$
#
# A key that is both a sink and in the window is one key: it is counted once. gpt-oss does
# without sink tokens: each head has a **learned sink logit** $b_h$, one extra entry in the softmax
# with no value attached, so that the weights over the real keys may sum to less than 1:
#
# $$a_{ts} = \frac{e^{\,q_t \cdot k_s/\sqrt{hs}}}{e^{\,b_h} + \sum_{s'} e^{\,q_t \cdot k_{s'}/\sqrt{hs}}},
#   \qquad \text{out}_t = \sum_s a_{ts}\, v_s .$$

# %% [markdown]
# ### Exercise 3: a window with sink tokens (3 points)
#
# Write `sink_window_attention(q, k, v, w, n_sink)`: `q`, `k`, `v` of shape `(B, h, T, hs)`, a window
# `w >= 1` and a number of sink tokens `n_sink >= 0`. Query $t$ reads key $s$ when $s \le t$ and
# either $t - s \le w - 1$ or $s <$ `n_sink` (the rule above), each visible key once, with the
# usual scores $q \cdot k / \sqrt{hs}$. Return the `(B, h, T, hs)` outputs. With `n_sink = 0` this
# is the plain window of Exercise 1. A `(T, T)` mask is allowed here. No loop over heads, and do not
# modify the inputs.

# %% nbgrader={"grade": false, "grade_id": "sink_window_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sink_window_attention(q, k, v, w, n_sink):
    """Window of w plus the first n_sink keys, each visible key once. q, k, v (B, h, T, hs) -> (B, h, T, hs)."""
    ### BEGIN SOLUTION
    T = q.shape[2]
    positions = np.arange(T)
    behind = positions[:, None] - positions[None, :]  # (T, T): t - s
    visible = (behind >= 0) & ((behind < w) | (positions[None, :] < n_sink))  # one boolean per (t, s)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
    return softmax(np.where(visible, scores, -np.inf)) @ v  # (B, h, T, T) @ (B, h, T, hs)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_sink_window_attention", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
_SINK_ROWS = {  # T = 7, w = 2, n_sink = 2, written out by hand: row t = query t, column s = key s
    (7, 2, 2): ["1000000",
                "1100000",
                "1110000",
                "1111000",
                "1101100",
                "1100110",
                "1100011"],
}


def check_sink_window_attention(shape, w, n_sink, draw):
    """Visible check: against attention with the visible keys written out, or built from the rule."""
    check_rng = np.random.default_rng(draw)
    q_, k_, v_ = (check_rng.standard_normal(shape) for _ in range(3))  # (B, h, T, hs)
    copies = [a.copy() for a in (q_, k_, v_)]
    got = np.asarray(sink_window_attention(q_, k_, v_, w, n_sink))
    assert all(np.array_equal(a, b) for a, b in zip((q_, k_, v_), copies, strict=True)), "the inputs were modified"
    assert got.shape == shape, f"expected shape (B, h, T, hs) = {shape}, got {got.shape}"
    T = shape[2]
    if (T, w, n_sink) in _SINK_ROWS:
        allowed = np.array([[c == "1" for c in row] for row in _SINK_ROWS[(T, w, n_sink)]])  # (T, T)
    else:
        allowed = band_mask(T, w) | (causal_mask(T) & (np.arange(T)[None, :] < n_sink))
    assert np.allclose(got, masked_attention(q_, k_, v_, mask=allowed), rtol=1e-9, atol=1e-12), (
        f"T = {T}, w = {w}, n_sink = {n_sink}: values differ. Query t reads the w keys t - w + 1 .. t and the "
        "keys s < n_sink with s <= t; a key that is both a sink and in the window counts ONCE")


check_sink_window_attention((1, 2, 7, 3), 2, 2, draw=0)  # the rows above: sinks overlap the window early on
check_sink_window_attention((2, 3, 10, 4), 3, 0, draw=1)  # no sinks: the plain window
check_sink_window_attention((1, 1, 9, 2), 1, 4, draw=2)  # four sinks, a window of one
check_sink_window_attention((1, 2, 5, 3), 2, 8, draw=3)  # more sinks than tokens: causal
print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### 3.1 A task with nothing to read, most of the time
#
# To see sinks form, train a model whose heads often have nothing to read. Each sequence of
# $T = 16$ tokens starts with a beginning-of-sequence token `BOS`, then holds noise tokens (12
# kinds); in half the sequences one position carries a **value token** (6 kinds). At every
# position the model must answer which value it has seen so far, or "none" (7 classes):
#
# | position | 0 | 1 | 2 | 3 | 4 | 5 | ... |
# | --- | --- | --- | --- | --- | --- | --- | --- |
# | token | `BOS` | noise 7 | noise 2 | **value 4** | noise 0 | noise 9 | ... |
# | target | none | none | none | 4 | 4 | 4 | ... |
#
# The model is one attention layer and nothing else: token embeddings $E$ (no position
# embedding: the task does not need positions), $h = 2$ heads of $hs = 8$ on a residual stream of
# width $C = 16$, the causal mask, and a linear readout,
#
# $$x = E[\text{tokens}], \qquad y = x + \operatorname{concat}_i\big(\operatorname{softmax}(q^{(i)} k^{(i)\top}/\sqrt{hs})\,v^{(i)}\big)\,W_o, \qquad \text{logits} = y\,W_u ,$$
#
# trained with cross-entropy at every position and Adam (Lesson 9). A head can solve the task by
# reading the value token when there is one. When there is none, it must still spend its weight.
#
# The code below trains **eight models at once**, each from its own random initial weights and on
# its own batches: every weight has a leading axis of length 8, and every matrix product is
# batched over it (the models never interact). The
# backward pass is Lesson 7's and Lesson 12's, written out; section 5 uses the same model with
# position schemes, so the function already accepts them (`scheme`). A learned sink logit per
# head is an option too (`"sink"` among the weights).

# %%
N_NOISE, N_VALUE = 12, 6
BOS, VOCAB, NONE = N_NOISE + N_VALUE, N_NOISE + N_VALUE + 1, N_VALUE  # token ids; NONE is class 6
SEEDS = 8  # models trained side by side


def sink_task_batch(rng, n_models, B, T, bos=True):
    """Tokens and targets (n_models, B, T): noise, at most one value token, BOS at position 0 if bos."""
    tokens = rng.integers(0, N_NOISE, size=(n_models, B, T))
    has_value = rng.random((n_models, B)) < 0.5
    where = rng.integers(1 if bos else 0, T, size=(n_models, B))  # the value token's position
    value = rng.integers(0, N_VALUE, size=(n_models, B))
    at_value = has_value[..., None] & (np.arange(T) == where[..., None])  # (n, B, T)
    tokens = np.where(at_value, N_NOISE + value[..., None], tokens)
    if bos:
        tokens[..., 0] = BOS
    seen = has_value[..., None] & (np.arange(T) >= where[..., None])  # (n, B, T): the value is behind t
    return tokens, np.where(seen, value[..., None], NONE)


def sinusoidal_encoding(T, d):
    """Sinusoidal position encodings (Lesson 8), shape (T, d) for an even d: sin in features 2i, cos in 2i + 1."""
    angles = np.arange(T)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)  # (T, 1) * (1, d/2) -> (T, d/2)
    pe = np.empty((T, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
    return pe


def rope(x, positions, base=10_000.0):
    """Rotary embedding of rows x (..., T, d), d even, at the given positions (T,): pairs (2i, 2i + 1) rotated."""
    d = x.shape[-1]
    angles = np.asarray(positions, dtype=float)[:, None] * base ** (-np.arange(0, d, 2) / d)  # (T, d/2)
    cos, sin = np.cos(angles), np.sin(angles)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    return out


def init_models(rng, n_models, vocab, n_classes, C=16, h=2, scheme="none", sink=False, T_max=64):
    """Weights of n_models one-layer attention models, each with a leading axis of n_models."""
    def weight(rows, cols):
        return rng.standard_normal((n_models, rows, cols)) / np.sqrt(rows)

    params = {"E": 0.5 * rng.standard_normal((n_models, vocab, C)), "W_q": weight(C, C), "W_k": weight(C, C),
              "W_v": weight(C, C), "W_o": weight(C, C), "W_u": weight(C, n_classes)}
    if sink:
        params["sink"] = np.zeros((n_models, h))  # one learned sink logit per head (gpt-oss)
    if scheme == "learned":
        params["P"] = 0.5 * rng.standard_normal((n_models, T_max, C))  # one learned row per position
    return params


def model_forward(params, tokens, targets, h, scheme="none", attend=None, backward=True):
    """Loss per position (n, B, T), weights (n, B, h, T, T) and gradients of the one-layer models.

    Causal attention with the optional learned sink; `attend(q, k, v)` replaces it, forward only.
    """
    n, B, T = tokens.shape
    C = params["E"].shape[-1]
    hs = C // h
    one_hot = np.zeros((n, B * T, params["E"].shape[1]))  # (n, B*T, vocab)
    np.put_along_axis(one_hot, tokens.reshape(n, B * T, 1), 1.0, axis=-1)
    x = one_hot @ params["E"]  # (n, B*T, vocab) @ (n, vocab, C) -> (n, B*T, C)
    if scheme == "sinusoidal":
        x = x + np.tile(sinusoidal_encoding(T, C), (B, 1))  # + (B*T, C)
    if scheme == "learned":
        x = x + np.tile(params["P"][:, :T], (1, B, 1))  # (n, B*T, C)

    def split(a):
        return a.reshape(n, B, T, h, hs).transpose(0, 1, 3, 2, 4)  # (n, B*T, C) -> (n, B, h, T, hs)

    def merge(a):
        return a.transpose(0, 1, 3, 2, 4).reshape(n, B * T, C)  # (n, B, h, T, hs) -> (n, B*T, C)

    q, k, v = split(x @ params["W_q"]), split(x @ params["W_k"]), split(x @ params["W_v"])
    positions = np.arange(T)
    if scheme == "rope":
        q, k = rope(q, positions), rope(k, positions)
    if attend is not None:
        o = attend(q.reshape(n * B, h, T, hs), k.reshape(n * B, h, T, hs), v.reshape(n * B, h, T, hs))
        o, weights = o.reshape(n, B, h, T, hs), None
    else:
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(hs)  # (n, B, h, T, T)
        if scheme == "alibi":
            scores = scores + alibi_bias(h, T)  # (h, T, T), section 4
        scores = np.where(causal_mask(T), scores, -np.inf)
        if "sink" in params:
            sink_column = np.broadcast_to(params["sink"][:, None, :, None, None], (n, B, h, T, 1))
            with_sink = softmax(np.concatenate([scores, sink_column], axis=-1))  # (n, B, h, T, T + 1)
            weights = with_sink[..., :T]
        else:
            weights = softmax(scores)  # (n, B, h, T, T)
        o = weights @ v  # (n, B, h, T, hs)
    y = x + merge(o) @ params["W_o"]  # (n, B*T, C)
    probs = softmax(y @ params["W_u"])  # (n, B*T, classes)
    flat_targets = targets.reshape(n, B * T, 1)
    loss = -np.log(np.take_along_axis(probs, flat_targets, axis=-1)).reshape(n, B, T)
    if not backward:
        return loss, weights, None

    def weight_grad(a, b):
        return np.swapaxes(a, 1, 2) @ b  # (n, B*T, rows)^T @ (n, B*T, cols) -> (n, rows, cols)

    grads = {}
    d_logits = probs.copy()
    np.put_along_axis(d_logits, flat_targets, np.take_along_axis(d_logits, flat_targets, axis=-1) - 1.0, axis=-1)
    d_logits /= B * T  # the mean over positions of each model
    grads["W_u"] = weight_grad(y, d_logits)
    d_y = d_logits @ np.swapaxes(params["W_u"], 1, 2)  # (n, B*T, C)
    grads["W_o"] = weight_grad(merge(o), d_y)
    d_o = split(d_y @ np.swapaxes(params["W_o"], 1, 2))  # (n, B, h, T, hs)
    d_weights = d_o @ np.swapaxes(v, -1, -2)  # (n, B, h, T, T)
    d_v = np.swapaxes(weights, -1, -2) @ d_o
    inner = (weights * d_weights).sum(axis=-1, keepdims=True)  # (n, B, h, T, 1)
    d_scores = weights * (d_weights - inner) / np.sqrt(hs)  # the softmax backward (Lesson 7), and the 1/sqrt(hs)
    if "sink" in params:  # the sink's weight is with_sink[..., T]; its value is zero
        grads["sink"] = -(with_sink[..., T] * inner[..., 0]).sum(axis=(1, 3))  # (n, h)
    d_q, d_k = d_scores @ k, np.swapaxes(d_scores, -1, -2) @ q
    if scheme == "rope":
        d_q, d_k = rope(d_q, -positions), rope(d_k, -positions)  # a rotation's inverse is the opposite angle
    d_q, d_k, d_v = merge(d_q), merge(d_k), merge(d_v)
    for name, d in (("W_q", d_q), ("W_k", d_k), ("W_v", d_v)):
        grads[name] = weight_grad(x, d)
    d_x = d_y + sum(d @ np.swapaxes(params[name], 1, 2) for name, d in (("W_q", d_q), ("W_k", d_k), ("W_v", d_v)))
    grads["E"] = weight_grad(one_hot, d_x)
    if scheme == "learned":
        grads["P"] = np.zeros_like(params["P"])
        grads["P"][:, :T] = d_x.reshape(n, B, T, C).sum(axis=1)
    return loss, weights, grads


def train_models(params, next_batch, h, steps, lr=0.02, scheme="none"):
    """Adam (Lesson 9) on every model at once; next_batch() gives (tokens, targets) of shape (n, B, T)."""
    m = {name: np.zeros_like(p) for name, p in params.items()}
    s2 = {name: np.zeros_like(p) for name, p in params.items()}
    for step in range(1, steps + 1):
        _, _, grads = model_forward(params, *next_batch(), h, scheme)
        for name, p in params.items():
            m[name] = 0.9 * m[name] + 0.1 * grads[name]
            s2[name] = 0.999 * s2[name] + 0.001 * grads[name] ** 2
            p -= lr * (m[name] / (1 - 0.9**step)) / (np.sqrt(s2[name] / (1 - 0.999**step)) + 1e-8)
    return params


# The gradients against finite differences, for every scheme the lesson uses, before training anything.
fd_rng = np.random.default_rng(1)
fd_tokens, fd_targets = fd_rng.integers(0, 7, (2, 3, 6)), fd_rng.integers(0, 5, (2, 3, 6))
for fd_scheme, fd_sink in [("none", False), ("none", True), ("sinusoidal", False), ("learned", False),
                           ("rope", False)]:
    fd_params = init_models(fd_rng, 2, 7, 5, C=8, h=2, scheme=fd_scheme, sink=fd_sink, T_max=9)
    if fd_sink:
        fd_params["sink"] = fd_rng.standard_normal((2, 2))
    _, _, fd_grads = model_forward(fd_params, fd_tokens, fd_targets, 2, fd_scheme)
    worst = 0.0
    for name in fd_params:
        index = (1, *(int(fd_rng.integers(0, 6 if (name == "P" and axis == 0) else size))
                      for axis, size in enumerate(fd_params[name].shape[1:])))
        total = []
        for sign in (1, -1):
            bumped_params = {key: p.copy() for key, p in fd_params.items()}
            bumped_params[name][index] += sign * 1e-6
            total.append(model_forward(bumped_params, fd_tokens, fd_targets, 2, fd_scheme, backward=False)[0].mean(
                axis=(1, 2)).sum())
        worst = max(worst, abs((total[0] - total[1]) / 2e-6 - fd_grads[name][index]))
    print(f"{fd_scheme}{' + sink logit' if fd_sink else ''}: gradients match finite differences to below 1e-6:",
          worst < 1e-6)

# %% [markdown]
# ### 3.2 Where the weight goes
#
# Train the eight models for 150 steps of 16 sequences, and measure, on 64 fresh sequences per
# model, the weight each head puts on position 0 (`BOS`), averaged over the query positions
# $t \ge 1$, before and after training. Two kinds of positions are counted apart: those where a
# value token is behind the query (something to read) and those where there is none. A head that
# spread its weight evenly would put $1/(t + 1)$ on position 0, 0.16 on average over $t = 1..15$.

# %%
T_SINK = 16
models = init_models(np.random.default_rng(0), SEEDS, VOCAB, N_VALUE + 1, h=2)
probe_tokens, probe_targets = sink_task_batch(np.random.default_rng(5), SEEDS, 64, T_SINK)
nothing = (probe_targets == NONE)[:, :, None, 1:]  # (n, B, 1, T - 1): no value behind the query


def mass_on_first(weights):
    """Mean weight on position 0 per model and head, at positions with nothing to read and with a value."""
    on_first = weights[..., 1:, 0]  # (n, B, h, T - 1): queries t >= 1
    empty = (on_first * nothing).sum(axis=(1, 3)) / nothing.sum(axis=(1, 3))  # (n, h)
    full = (on_first * ~nothing).sum(axis=(1, 3)) / (~nothing).sum(axis=(1, 3))
    return empty, full


before = mass_on_first(model_forward(models, probe_tokens, probe_targets, 2, backward=False)[1])
data_rng = np.random.default_rng(1)
models = train_models(models, lambda: sink_task_batch(data_rng, SEEDS, 16, T_SINK), h=2, steps=150)
probe_loss, probe_weights, _ = model_forward(models, probe_tokens, probe_targets, 2, backward=False)
after = mass_on_first(probe_weights)
print(f"uniform weight on position 0, mean over t = 1..15: {np.mean(1 / np.arange(2, T_SINK + 1)):.2f}")
print("test loss per model after training:", " ".join(f"{x:.3f}" for x in probe_loss.mean(axis=(1, 2))))
print(f"{'model':>5} | {'before: nothing / value':>23} | {'after: nothing to read':>22} | {'after: a value to read':>22}")
for model in range(SEEDS):
    print(f"{model:>5} | {' '.join(f'{x:.2f}' for x in before[0][model]):>11} / "
          f"{' '.join(f'{x:.2f}' for x in before[1][model]):<9} | {' '.join(f'{x:.2f}' for x in after[0][model]):>22} | "
          f"{' '.join(f'{x:.2f}' for x in after[1][model]):>22}")
sink_heads = after[0] > 0.5
print(f"heads with more than half their weight on BOS when there is nothing to read: {sink_heads.sum()} of "
      f"{sink_heads.size}; mean over all heads {after[0].mean():.2f} (before training {before[0].mean():.2f})")

# %% [markdown]
# Before training every head spreads its weight about evenly: 0.17 to 0.21 on position 0 where
# there is nothing to read (those positions lie early in the sequence, where $1/(t+1)$ is larger)
# and 0.10 to 0.13 where there is a value, near the uniform 0.16. After 150 steps, where there is
# nothing to read, 14 of the 16 heads put more than half of their weight on `BOS`, 0.80 on
# average over all heads, while where a value token is behind the query their weight on `BOS`
# falls to between 0.00 and 0.37: they read the value instead. `BOS` is the one token every sequence has, and its value vector is what the readout
# learns to take for "none". A few heads did not become sinks; in those models the other head
# (models 3 and 6) does the job.

# %%
fig, ax = plt.subplots(figsize=(6.5, 4))
x_heads = np.arange(SEEDS * 2)
_ = ax.bar(x_heads - 0.2, before[0].reshape(-1), width=0.4, label="before training")
_ = ax.bar(x_heads + 0.2, after[0].reshape(-1), width=0.4, label="after training")
_ = ax.axhline(np.mean(1 / np.arange(2, T_SINK + 1)), color="grey", linestyle=":", label="uniform weights")
ax.set_xticks(x_heads, labels=[f"{s}.{i}" for s in range(SEEDS) for i in range(2)], fontsize=7)
ax.set_xlabel("model.head")
ax.set_ylabel("weight on position 0 (BOS)")
ax.set_title("Weight on BOS where there is nothing to read, per head of 8 models")
ax.legend()
plt.show()

# %% [markdown]
# *Figure: each bar is one head of one of the eight models, the weight it puts on position 0 at
# query positions with no value behind them. Before training, every head sits near the uniform
# level; after training, most bars rise towards 1.*
#
# ### 3.3 Evicting the sink, and keeping it
#
# Now stream. Take sequences four times the training length, 64 tokens, starting with `BOS`, in
# which a value token recurs every 17 to 32 positions, and decode them with a window of
# $w = 16$, the training length: every query sees at most the 16 tokens it could see in training,
# and the target is the value in its window, or "none". Four ways to decode, on the same
# sequences, scored on the positions $t \ge 16$, where `BOS` has left a plain window:
#
# - full attention over all 64 tokens, for reference (it sees values that left the window, so its
#   answers are wrong by the task's definition; it is there to show that the window is needed);
# - a plain window (your `sliding_window_attention`);
# - the window plus one sink token, `BOS` (your `sink_window_attention` with `n_sink = 1`), and plus
#   four sink tokens;
# - a second set of eight models, trained **without** `BOS` but with a learned sink logit per head,
#   decoded with the plain window.

# %%
def value_stream(rng, n_models, B, T, w, bos=True):
    """Streams (n, B, T) with a value token every w + 1 to 2w positions; target: the value in the last w tokens."""
    tokens = rng.integers(0, N_NOISE, size=(n_models, B, T))
    targets = np.full((n_models, B, T), NONE)
    for model in range(n_models):
        for row in range(B):
            where = int(rng.integers(4, w))
            while where < T:
                value = int(rng.integers(0, N_VALUE))
                tokens[model, row, where] = N_NOISE + value
                targets[model, row, where:where + w] = value
                where += int(rng.integers(w + 1, 2 * w + 1))
    if bos:
        tokens[..., 0] = BOS
    return tokens, targets


def window_with_sink_logit(sink_logits, w):
    """attend(q, k, v) for a window of w with one learned sink logit per head (sink_logits (n, h))."""
    def attend(q, k, v):  # q, k, v (n*B, h, T, hs)
        T, hs = q.shape[-2:]
        scores = np.where(band_mask(T, w), q @ np.swapaxes(k, -1, -2) / np.sqrt(hs), -np.inf)  # (n*B, h, T, T)
        logit = np.repeat(sink_logits, len(q) // len(sink_logits), axis=0)[:, :, None, None]  # (n*B, h, 1, 1)
        top = np.maximum(scores.max(axis=-1, keepdims=True), logit)
        e = np.exp(scores - top)
        return (e @ v) / (e.sum(axis=-1, keepdims=True) + np.exp(logit - top))  # the sink's share goes nowhere
    return attend


sink_models = init_models(np.random.default_rng(0), SEEDS, VOCAB, N_VALUE + 1, h=2, sink=True)
data_rng = np.random.default_rng(2)
sink_models = train_models(sink_models, lambda: sink_task_batch(data_rng, SEEDS, 16, T_SINK, bos=False), h=2,
                           steps=150)

T_STREAM = 4 * T_SINK
stream_tokens, stream_targets = value_stream(np.random.default_rng(3), SEEDS, 32, T_STREAM, T_SINK)
no_bos_tokens = stream_tokens.copy()
no_bos_tokens[..., 0] = 0  # the learned-sink models never saw BOS: a noise token instead
late = stream_targets[..., T_SINK:] == NONE  # positions t >= 16 with nothing in the window


def stream_loss(params, tokens, attend=None):
    """Mean loss per model over positions t >= 16: all of them, and those with nothing to read."""
    loss = model_forward(params, tokens, stream_targets, 2, attend=attend, backward=False)[0][..., T_SINK:]
    return loss.mean(axis=(1, 2)), (loss * late).sum(axis=(1, 2)) / late.sum(axis=(1, 2))


streaming = {
    "full attention, 64 tokens": stream_loss(models, stream_tokens),
    "plain window": stream_loss(models, stream_tokens, lambda q, k, v: sliding_window_attention(q, k, v, T_SINK)),
    "window + 1 sink (BOS)": stream_loss(models, stream_tokens,
                                         lambda q, k, v: sink_window_attention(q, k, v, T_SINK, 1)),
    "window + 4 sinks": stream_loss(models, stream_tokens,
                                    lambda q, k, v: sink_window_attention(q, k, v, T_SINK, 4)),
    "learned sink logit, plain window": stream_loss(sink_models, no_bos_tokens,
                                                    window_with_sink_logit(sink_models["sink"], T_SINK)),
}
print(f"loss at t >= 16 on streams of 64 tokens, window w = 16; mean (median) over {SEEDS} models")
print(f"{'decoding':<34} {'all positions':>16} {'nothing to read':>18}")
for name, (all_positions, empty_positions) in streaming.items():
    print(f"{name:<34} {all_positions.mean():>8.3f} ({np.median(all_positions):.3f}) "
          f"{empty_positions.mean():>10.3f} ({np.median(empty_positions):.3f})")
worse = streaming["plain window"][1] > 3 * streaming["window + 1 sink (BOS)"][1]
print(f"models whose loss with nothing to read is more than 3x higher in a plain window than with BOS kept: "
      f"{worse.sum()} of {SEEDS}")
print("learned sink logits after training (per model, 2 heads):",
      " ".join(f"[{a:.1f} {b:.1f}]" for a, b in sink_models["sink"]))
# The sink's share of each head's weight, 1 minus the weights on real keys, on training-length sequences.
share_tokens, share_targets = sink_task_batch(np.random.default_rng(5), SEEDS, 64, T_SINK, bos=False)
sink_share = 1 - model_forward(sink_models, share_tokens, share_targets, 2, backward=False)[1].sum(axis=-1)  # (n, B, h, T)
empty = (share_targets == NONE)[:, :, None, :]  # (n, B, 1, T)
share_empty = (sink_share * empty).sum(axis=(1, 3)) / empty.sum(axis=(1, 3))  # (n, h)
share_value = (sink_share * ~empty).sum(axis=(1, 3)) / (~empty).sum(axis=(1, 3))
print(f"the learned sink's share of the weight, over the 16 heads: nothing to read {share_empty.min():.2f} to "
      f"{share_empty.max():.2f} (mean {share_empty.mean():.2f}); a value to read {share_value.min():.2f} to "
      f"{share_value.max():.2f} (mean {share_value.mean():.2f})")

# %% [markdown]
# Full attention over the whole stream fails, as expected (a loss of 10.9 nats): the model sees
# values that have left the window. The plain window is the interesting line: 0.112 nats on
# average where there is nothing to read (median 0.027), against 0.000 with `BOS` kept. Where a value is in the window, it
# still reads it; where there is nothing to read, `BOS` is gone, the weight it absorbed spreads
# over the noise tokens of the window, and their value vectors, which training never needed to
# make harmless, push the answer away from "none". Keeping `BOS` as a single sink token beside
# the window brings the loss back down to its training level; four sink tokens do the same (the
# three extra ones are noise tokens). The models trained with a
# learned sink logit instead of `BOS` have nothing to evict, and the plain window is all they
# need.
#
# How large the damage is depends on the model. In this small model it is a rise from below a
# thousandth of a nat to about a tenth on average, in every one of the eight models (the count
# above) but by very different amounts (the median is a quarter of the mean): not the explosion
# of perplexity that Xiao et al. measured in models of billions of parameters over thousands of
# tokens. What the small model does show is the mechanism: the rise is at the positions with
# nothing to read, where the sink's weight had been going.
#
# The learned sink logits ended between $-0.9$ and $-0.6$, and the last line shows how the heads
# use them: the sink takes a share of the weight where there is nothing to read (from a few
# percent up to about two thirds, depending on the head) and almost none where there is a value.
# The rest of the spare weight these models spread over the noise tokens, whose values training
# without `BOS` taught them to make harmless; so a window that drops old tokens takes nothing away
# from them.
#
# ## 4. ALiBi: a penalty for distance
#
# Press, Smith and Lewis (*Train Short, Test Long: Attention with Linear Biases Enables Input
# Length Extrapolation*, 2021, arXiv:2108.12409) add no position embedding at all. Instead, each
# head adds a bias to its scores that falls linearly with the distance between query and key:
#
# $$\text{score}_{ts} = \frac{q_t \cdot k_s}{\sqrt{hs}} - m_i\,(t - s), \qquad s \le t,$$
#
# with a fixed slope $m_i$ per head $i$. The slopes are a geometric sequence: for $h$ heads, $h$ a
# power of two,
#
# $$m_i = 2^{-8 i / h}, \qquad i = 1, \dots, h,$$
#
# so with $h = 8$: $\tfrac12, \tfrac14, \dots, \tfrac1{256}$; head 1 looks mostly at its neighbours,
# head $h$ barely minds distance. For other $h$, the paper's reference code (`get_slopes` in
# `ofirpress/attention_with_linear_biases`) takes the $h' = 2^{\lfloor \log_2 h \rfloor}$ slopes of the
# largest power of two below $h$, then appends every other slope of $2h'$ heads, starting with the
# first, until there are $h$: for $h = 12$, the 8 slopes $2^{-1}, \dots, 2^{-8}$, then
# $2^{-0.5}, 2^{-1.5}, 2^{-2.5}, 2^{-3.5}$.
#
# ### Exercise 4: ALiBi (5 points)
#
# **(a)** (2 points) Write `alibi_slopes(n_heads)`: the `(n_heads,)` array of slopes $m_1, \dots, m_h$,
# in head order, by the rule above, for any `n_heads >= 1` (for $h = 1$: $[2^{-8}]$).

# %% nbgrader={"grade": false, "grade_id": "alibi_slopes", "locked": false, "schema_version": 3, "solution": true, "task": false}
def alibi_slopes(n_heads):
    """ALiBi's slope per head, (n_heads,): 2^(-8i/n) for a power of two n, the paper's interleave otherwise."""
    ### BEGIN SOLUTION
    below = 2 ** int(np.floor(np.log2(n_heads)))  # the largest power of two <= n_heads
    slopes = 2.0 ** (-8.0 * np.arange(1, below + 1) / below)  # (below,)
    if below == n_heads:
        return slopes
    extra = 2.0 ** (-8.0 * np.arange(1, 2 * below + 1, 2) / (2 * below))  # every other slope of 2 * below heads
    return np.concatenate([slopes, extra[:n_heads - below]])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_alibi_slopes", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
_SLOPES_BY_HAND = {  # exponents e of 2^e, worked from the rule
    1: [-8],
    2: [-4, -8],
    4: [-2, -4, -6, -8],
    8: [-1, -2, -3, -4, -5, -6, -7, -8],
    3: [-4, -8, -2],  # 2 heads' slopes, then the first of 4 heads' (2^-2)
    6: [-2, -4, -6, -8, -1, -3],  # 4 heads' slopes, then 8 heads' first and third
}


def check_alibi_slopes(n_heads):
    got = np.asarray(alibi_slopes(n_heads), dtype=float)
    assert got.shape == (n_heads,), f"alibi_slopes({n_heads}) should have shape ({n_heads},), got {got.shape}"
    expected = 2.0 ** np.array(_SLOPES_BY_HAND[n_heads], dtype=float)
    if np.allclose(np.sort(got), np.sort(expected)) and not np.allclose(got, expected):
        raise AssertionError(f"alibi_slopes({n_heads}): the right slopes in the wrong order: head 1 gets the LARGEST "
                             "slope 2^(-8/h), then smaller ones; for other h the interleaved ones come last")
    assert np.allclose(got, expected, rtol=1e-12), (
        f"alibi_slopes({n_heads}) = {np.round(got, 5)}, expected {np.round(expected, 5)}: 2^(-8i/h) for i = 1..h "
        "when h is a power of two; otherwise those of the power of two below h, then every other slope of twice it")


for n_heads_check in _SLOPES_BY_HAND:
    check_alibi_slopes(n_heads_check)
print("Exercise 4a visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# **(b)** (3 points) Write `alibi_attention(q, k, v)`: `q`, `k`, `v` of shape `(B, h, T, hs)`; causal
# attention whose scores are $q \cdot k / \sqrt{hs} - m_i\,(t - s)$, with your `alibi_slopes(h)` for
# head $i$, and no position embedding. Return the `(B, h, T, hs)` outputs. No loop over heads, and
# do not modify the inputs.

# %% nbgrader={"grade": false, "grade_id": "alibi_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def alibi_attention(q, k, v):
    """Causal attention with ALiBi's bias -m_i (t - s) per head. q, k, v (B, h, T, hs) -> (B, h, T, hs)."""
    ### BEGIN SOLUTION
    h, T, hs = q.shape[1:]
    positions = np.arange(T)
    behind = positions[:, None] - positions[None, :]  # (T, T): t - s
    bias = -alibi_slopes(h)[:, None, None] * behind  # (h, 1, 1) * (T, T) -> (h, T, T)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(hs) + bias  # (B, h, T, T)
    return softmax(np.where(behind >= 0, scores, -np.inf)) @ v  # (B, h, T, T) @ (B, h, T, hs)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_alibi_attention", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def _slopes_known(n_heads):
    """A stand-in for alibi_slopes with distinct, easily checked slopes, so this check depends only on (b)."""
    return 0.3 * 0.5 ** np.arange(n_heads)


def check_alibi_attention(shape, draw):
    """Visible check against scores with the bias written out entry by entry."""
    global alibi_slopes
    check_rng = np.random.default_rng(draw)
    q_, k_, v_ = (check_rng.standard_normal(shape) for _ in range(3))  # (B, h, T, hs)
    copies = [a.copy() for a in (q_, k_, v_)]
    B, h, T, hs = shape
    own_slopes, alibi_slopes = alibi_slopes, _slopes_known  # the stand-in, for this call only
    try:
        got = np.asarray(alibi_attention(q_, k_, v_))
    finally:
        alibi_slopes = own_slopes
    assert all(np.array_equal(a, b) for a, b in zip((q_, k_, v_), copies, strict=True)), "the inputs were modified"
    assert got.shape == shape, f"expected shape (B, h, T, hs) = {shape}, got {got.shape}"
    bias = np.array([[[-_slopes_known(h)[i] * (t - s) for s in range(T)] for t in range(T)] for i in range(h)])
    scores = q_ @ np.swapaxes(k_, -1, -2) / np.sqrt(hs) + bias  # (B, h, T, T)
    expected = softmax(np.where(causal_mask(T), scores, -np.inf)) @ v_
    assert np.allclose(got, expected, rtol=1e-9, atol=1e-12), (
        f"shape {shape}: values differ. Add -m_i * (t - s) to head i's scaled scores (the query's position t minus "
        "the key's s, so the bias is <= 0 behind the query), use alibi_slopes(h), then the causal mask")


check_alibi_attention((2, 3, 6, 4), draw=0)
check_alibi_attention((1, 1, 5, 2), draw=1)
check_alibi_attention((1, 4, 9, 3), draw=2)
print("Exercise 4b visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# The bias each of $h = 8$ heads adds, on $T = 8$ positions, with your slopes (entries above the
# diagonal are masked):

# %%
def alibi_bias(h, T):
    """(h, T, T): -m_i (t - s) with your alibi_slopes, 0 on the diagonal, used with the causal mask."""
    positions = np.arange(T)
    return -alibi_slopes(h)[:, None, None] * (positions[:, None] - positions[None, :])  # (h, T, T)


bias_8 = np.where(causal_mask(8), alibi_bias(8, 8), np.nan)  # (8, 8, 8), NaN above the diagonal
fig, axes = plt.subplots(2, 4, figsize=(12, 6))
for head, ax in enumerate(axes.flat):
    image = ax.imshow(bias_8[head], cmap="magma", vmin=-3.5, vmax=0)
    ax.set_title(f"head {head + 1}: m = 2^-{head + 1}")
    ax.set_xticks(range(8))
    ax.set_yticks(range(8))
    ax.set_xlabel("key position")
    ax.set_ylabel("query position")
fig.colorbar(image, ax=axes, shrink=0.8, label="bias added to the score")
fig.suptitle("ALiBi's bias -m (t - s) per head, h = 8, T = 8 (blank: masked)")
plt.show()
print("slopes for h = 8: ", np.round(alibi_slopes(8), 4))
print("slopes for h = 12:", np.round(alibi_slopes(12), 4))

# %% [markdown]
# *Figure: head 1's bias falls by $\tfrac12$ per position, reaching $-3.5$ seven positions back;
# head 8's falls by $\tfrac1{256}$ and is nearly flat. The bias depends only on $t - s$: every
# diagonal is constant, so moving the whole sequence changes nothing, and a position the model
# never saw in training is just a larger distance.*
#
# ## 5. Length extrapolation, measured
#
# The paper's claim is about sequences longer than those seen in training. To measure it, train
# one model per position scheme on a task where position matters, at length $T = 16$, and
# evaluate it at $16$, $32$ and $64$ tokens. The task: a stream of noise tokens (8 kinds) and
# value tokens (8 kinds, each position a value with probability 0.2, position 0 always one), and
# at every position the model must name the **most recent** value. The attention layer must find
# the nearest value token behind it: without any position information a one-layer model cannot
# tell the most recent value from older ones, and chance among 8 values is $\ln 8 = 2.08$ nats.
#
# The same one-layer model as in section 3 ($C = 16$, now $h = 4$ heads of $hs = 4$, so that ALiBi
# has four slopes, $2^{-2}, \dots, 2^{-8}$), with five position schemes:
#
# - **none**: token embeddings only;
# - **sinusoidal** (Lesson 8): the fixed encodings added to the token embeddings;
# - **learned** (Lesson 8): one trained row per position, added; only rows 0 to 15 are ever
#   trained, so at positions 16 and beyond the model reads rows that still hold their random
#   initial values;
# - **RoPE** (Lesson 8): queries and keys rotated, base 10,000;
# - **ALiBi**: your `alibi_bias` added to the scores.
#
# Four models per scheme (four random initialisations, each on its own batches), 200 steps of 16 sequences each, Adam with learning rate
# 0.02. Each is tested on 64 fresh sequences per model at each length; the loss is averaged over
# the positions of the last 16-token stretch (positions 0–15 at $T = 16$, 16–31 at $2T$, 48–63 at
# $4T$), which is what a model must do when it reads past its training length.

# %%
N_NOISE_X, N_VALUE_X = 8, 8
T_TRAIN, EXTRAPOLATION_SEEDS, H_X = 16, 4, 4
EXTRAPOLATION_STEPS = demo_size(full=200, small=20)


def recency_batch(rng, n_models, B, T):
    """Tokens and targets (n, B, T): the target at t is the most recent value token at or before t."""
    is_value = rng.random((n_models, B, T)) < 0.2
    is_value[..., 0] = True
    values = rng.integers(0, N_VALUE_X, size=(n_models, B, T))
    tokens = np.where(is_value, N_NOISE_X + values, rng.integers(0, N_NOISE_X, size=(n_models, B, T)))
    latest = np.maximum.accumulate(np.where(is_value, np.arange(T), 0), axis=-1)  # (n, B, T): its position
    return tokens, np.take_along_axis(values, latest, axis=-1)


schemes = ["none", "sinusoidal", "learned", "rope", "alibi"]
lengths = [T_TRAIN, 2 * T_TRAIN, 4 * T_TRAIN]
tests = {T_eval: recency_batch(np.random.default_rng(7), EXTRAPOLATION_SEEDS, 64, T_eval) for T_eval in lengths}
extrapolation, by_position, trained = {}, {}, {}
for scheme in schemes:
    params = init_models(np.random.default_rng(0), EXTRAPOLATION_SEEDS, N_NOISE_X + N_VALUE_X, N_VALUE_X, h=H_X,
                         scheme=scheme, T_max=4 * T_TRAIN)
    data_rng = np.random.default_rng(1)
    trained[scheme] = train_models(params, lambda: recency_batch(data_rng, EXTRAPOLATION_SEEDS, 16, T_TRAIN), h=H_X,
                                   steps=EXTRAPOLATION_STEPS, scheme=scheme)
    losses = []
    for T_eval in lengths:
        loss = model_forward(trained[scheme], *tests[T_eval], H_X, scheme, backward=False)[0]  # (n, B, T)
        losses.append(loss[..., -T_TRAIN:].mean(axis=(1, 2)))  # (n,): the last 16 positions
        by_position[scheme] = loss.mean(axis=(0, 1))  # (T,): the last length, 4T, kept for the plot
    extrapolation[scheme] = np.array(losses)  # (3 lengths, n models)
print(f"loss over the last 16 positions, mean of {EXTRAPOLATION_SEEDS} models (min-max) trained for "
      f"{EXTRAPOLATION_STEPS} steps; chance {np.log(N_VALUE_X):.2f}")
print(f"{'scheme':<11}" + "".join(f"{'T = ' + str(T_eval):>20}" for T_eval in lengths))
for scheme in schemes:
    print(f"{scheme:<11}" + "".join(f"{row.mean():>9.2f} ({row.min():.2f}-{row.max():.2f})"
                                    for row in extrapolation[scheme]))

fig, ax = plt.subplots(figsize=(7, 4))
for scheme in schemes:
    _ = ax.plot(np.arange(4 * T_TRAIN), by_position[scheme], label=scheme)
_ = ax.axvline(T_TRAIN - 0.5, color="grey", linestyle=":", label="training length")
_ = ax.axhline(np.log(N_VALUE_X), color="grey", linestyle="--", label="chance, ln 8")
ax.set_xlabel("position t")
ax.set_ylabel("loss (nats), mean of 4 models and 64 sequences")
ax.set_title("Most-recent-value task, trained at T = 16, tested at 64")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# *Figure: loss at each position of 64-token test sequences, for models trained on 16 tokens. Left
# of the dotted line the models are where they were trained; right of it, the learned and
# sinusoidal models climb far above chance, and ALiBi stays flat. The models without positions and
# with RoPE, weak already, drift up as more values pile up behind each query.*
#
# What the numbers show. At the training length the sinusoidal (0.11), learned (0.13) and ALiBi
# (0.20) models all learn the task, and the model without positions cannot (0.68: it can only
# guess among the values it has seen). Past the training length, the two absolute schemes break:
# the learned model meets position rows it never trained, the sinusoidal model meets encodings
# it never saw, and both do worse than chance already at $2T$ (2.64 and 3.87) and more so at $4T$
# (4.56 and 5.62). ALiBi's loss rises only from 0.20 to 0.27: its bias depends only on the
# distance, the nearest value is as near as in training, and farther ones are penalised more,
# which is the right answer for this task. That is the paper's finding in small; at the training
# length ALiBi is the worse of the three here, which the paper did not find for language models.
#
# RoPE differs from the paper here. Its scores depend only on distances too, and the paper found
# that rotary models extrapolate better than sinusoidal ones but far worse than ALiBi; in this
# experiment the RoPE models are weak even at the training length. With $hs = 4$ a head has only
# two rotating pairs, one turning by 1 radian per position and one by 0.01, and in 200 steps these
# models did not learn to pick the most recent value with them. (The course's small models, one
# task, 200 steps: this measures these models, not RoPE in general.)
#
# **The mechanism.** Where do the trained heads look? For each model, take the head that puts the
# most weight on the most recent value token at the training length, and measure that weight,
# averaged over the last 16 positions of each test sequence, at $T$ and at $4T$:

# %%
def weight_on_latest(scheme, T_eval):
    """Weight each head puts on the most recent value token, mean over the last 16 positions: (n, h)."""
    tokens, _ = tests[T_eval]
    weights = model_forward(trained[scheme], *tests[T_eval], H_X, scheme, backward=False)[1]  # (n, B, h, T, T)
    latest = np.maximum.accumulate(np.where(tokens >= N_NOISE_X, np.arange(T_eval), 0), axis=-1)  # (n, B, T)
    on_latest = np.take_along_axis(weights, latest[:, :, None, :, None], axis=-1)[..., 0]  # (n, B, h, T)
    return on_latest[..., -T_TRAIN:].mean(axis=(1, 3))  # (n, h)


for scheme in ["alibi", "sinusoidal", "learned"]:
    at_T, at_4T = weight_on_latest(scheme, T_TRAIN), weight_on_latest(scheme, 4 * T_TRAIN)  # (n, h) each
    best = at_T.argmax(axis=1)  # (n,): each model's best head at the training length
    rows = np.arange(EXTRAPOLATION_SEEDS)
    print(f"{scheme:<11} best head (per model): {' '.join(str(b + 1) for b in best)} | weight on the most recent value "
          f"at T = 16: {' '.join(f'{x:.2f}' for x in at_T[rows, best])} | at T = 64: "
          f"{' '.join(f'{x:.2f}' for x in at_4T[rows, best])}")

# %% [markdown]
# In every ALiBi model the best head is head 1, the one with the steepest slope, $m = \tfrac14$: it
# puts 0.48 to 0.62 of its weight on the most recent value at $T$, and still 0.36 to 0.49 at $4T$.
# The best heads of the sinusoidal and learned models put more there at the training length
# (0.74 to 0.89) and almost nothing at $4T$ (0.02 to 0.09). The loss follows the attention: the
# absolute schemes fail past their training length where, and because, their heads stop finding
# the token the task asks for.
#
# ## Summary
#
# **Sliding windows.** A window of $w$ lets query $t$ read keys $t - w + 1$ to $t$: a band in the
# `(T, T)` table. $L$ window layers reach exactly $L\,(w-1)$ tokens back (measured by a perturbation
# of token 0). gpt-oss-120b alternates 18 window layers of 128 tokens with 18 full layers: its KV
# cache is 0.286 GiB at 8,192 tokens instead of 0.562 GiB for 36 full layers (49.2% less), and
# 4.504 GiB instead of 9.000 GiB at 131,072 tokens. Windowed attention needs memory $T \cdot w$, not
# $T^2$ (Exercise 1).
#
# **Ring buffers.** Decoding with a window keeps $w$ slots per head and writes token $t$ into slot
# $t \bmod w$ (Exercise 2): every output equals the band-masked computation to below $10^{-12}$, and
# the memory held stays at $2\,h\,w\,hs$ numbers however many tokens are decoded.
#
# **Attention sinks.** Trained on a task where heads often have nothing to read, 14 of the 16
# heads of eight small models put more than half their weight on `BOS` at those positions (0.80 on
# average, against 0.19 before training). Evicting `BOS` with a plain window raised the loss at
# those positions in all eight models, from below 0.001 to 0.112 nats on average; keeping it as a
# sink token beside the window (Exercise 3), or training with a learned sink logit as gpt-oss
# does, mended it.
#
# **ALiBi.** A bias $-m_i\,(t - s)$ with slopes $2^{-8i/h}$ (Exercise 4) depends only on distance.
# Trained at 16 tokens and tested at 64, the ALiBi models kept their loss (0.20 to 0.27) and most
# of their steepest head's attention on the right token, while learned and sinusoidal positions
# broke past the training length (4.56 and 5.62, worse than chance); RoPE, in these small models,
# was weak even at the training length.
#
# **Next:** Lesson 15, *Paying the KV bill down*, keeps every token and makes each one cheaper:
# multi-head latent attention caches one small latent per token instead of keys and values, and
# linear attention replaces the cache by a state of fixed size.
