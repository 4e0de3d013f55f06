# ---
# jupyter:
#   jupytext:
#     formats: 16-decoding//ipynb,py:percent
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
# # Lesson 16: Decoding: from logits to text, by sampling, by beams, and speculatively
#
# Every model in this course so far has decoded **greedily**: at each step, the most likely next
# token. Real systems rarely do. A chat model samples, with a temperature and a top-$p$ cut; a
# translation model searches with beams for the most probable whole sentence; and a serving stack
# drafts several tokens with a small model and lets the large one accept or reject them in one
# pass, **speculative decoding**, whose output has exactly the large model's distribution.
#
# This lesson writes all three in NumPy. It trains a small encoder–decoder of Lesson 13's shape on
# a task whose answers are random, so that there is something to sample, and where the most
# probable output is not greedy's, so that there is something for beams to find. Speculative
# decoding runs on two small exact distributions, where its output can be checked against the
# target's to the last decimal that sampling noise allows.
#
# **What you'll do**
# - see what temperature, top-$k$ and top-$p$ do to one distribution, and write a sampler that
#   applies all three with a given generator, exactly as specified (Exercise 1);
# - write a test that says whether samples come from a given distribution: the chi-squared
#   statistic and its threshold (Exercise 2), and run it on your sampler;
# - train the encoder–decoder, sample from it at several settings, and measure what each setting
#   gives in quality and in diversity, over several seeds;
# - write beam search with a length penalty on the cached keys and values of the source
#   (Exercise 3), and measure it against greedy decoding for widths 2, 4 and 8;
# - write the accept/reject step of speculative decoding (Exercise 4), prove in markdown that its
#   output has the target's distribution, check it on many runs, and measure the tokens it gives
#   per pass of the target against the formula;
# - count the passes of the large model that each way of decoding spends per token.
#
# **What you'll learn**
# - why temperature, top-$k$ and top-$p$ trade diversity against quality, and what each one cuts;
# - how to tell a correct sampler from one that is close but wrong, and how large a sampling error
#   to expect from noise alone;
# - why greedy decoding can miss the most probable sequence, what beam search keeps, and what a
#   length penalty changes;
# - why speculative decoding is exact, and when it is fast.
#
# **What you'll need**
# - the softmax and its entropy (Lessons 1 and 2), the encoder–decoder, its end token and its
#   decoding step with cached keys and values (Lesson 13), Adam (Lesson 9). The code of the model
#   is given, so the lesson stands alone.
#
# The four graded exercises sit where their ideas are taught, because the later sections run on
# your code. Their visible checks run as you work; hidden tests call your functions on fresh inputs.

# %%
import os

# One BLAS thread, set before NumPy loads: the model's matrices are small, and on a busy machine
# extra BLAS threads spend much of their time waiting for each other.
for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import time

import matplotlib.pyplot as plt
import numpy as np

from lesson_helpers import tidy_figures  # the course's helper for figures

tidy_figures()  # labels and legends placed without overlap


def softmax(x, axis=-1):
    """Numerically stable softmax along `axis` (every row must have a finite entry)."""
    x = x - x.max(axis=axis, keepdims=True)  # every exponent <= 0
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def entropy(p, axis=-1):
    """Entropy in nats of distributions p along `axis`; 0 log 0 counts as 0."""
    return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=axis)


# %% [markdown]
# ## 1. Temperature, top-$k$ and top-$p$
#
# A model's last layer gives **logits** $z$, one per token of the vocabulary, and the softmax
# turns them into the distribution of the next token. Three knobs reshape that distribution
# before a token is drawn from it.
#
# **Temperature** $\tau > 0$ divides the logits:
#
# $$p_i(\tau) = \frac{e^{z_i/\tau}}{\sum_j e^{z_j/\tau}} .$$
#
# $\tau = 1$ is the model's own distribution. As $\tau \to 0$ the largest logit takes all the mass
# (greedy decoding, the limit, which this lesson writes $\tau = 0$); as $\tau \to \infty$ every token gets $1/V$. The
# order of the tokens never changes, only how sharply the mass sits on the first ones.
#
# **Top-$k$** keeps the $k$ most probable tokens and renormalises over them; everything else gets 0.
#
# **Top-$p$** (nucleus sampling: Holtzman, Buys, Du, Forbes and Choi, *The Curious Case of Neural
# Text Degeneration*, 2019, arXiv:1904.09751) keeps the smallest set of most probable tokens whose
# total probability reaches $p$, and renormalises. With the tokens sorted by probability,
# $p_{(1)} \ge p_{(2)} \ge \dots$, the nucleus is the first $m$ of them, with
#
# $$m = \min\Big\{ m : \sum_{r=1}^{m} p_{(r)} \ge p \Big\},$$
#
# so the token whose probability **crosses** $p$ is kept: a token is in the nucleus exactly when the
# mass ranked before it is below $p$. Top-$k$ keeps a fixed number of tokens whatever their
# probabilities; top-$p$ keeps few where the model is sure and many where it is not.
#
# All three act on the same ten logits below (a `(V,)` vector, $V = 10$):

# %%
demo_logits = np.array([2.0, 1.6, 1.1, 0.9, 0.3, 0.0, -0.4, -1.0, -1.5, -2.5])  # (V,), sorted for the figure
V_DEMO = len(demo_logits)


def nucleus_mask(p_sorted, top_p):
    """Which of the sorted probabilities (V,) are in the nucleus: the mass ranked before each is below top_p."""
    before = np.concatenate([[0.0], np.cumsum(p_sorted)[:-1]])  # (V,): the mass of the tokens ranked before
    return before < top_p


p_model = softmax(demo_logits)  # (V,): tau = 1
shapes = {"tau = 0.5": softmax(demo_logits / 0.5), "tau = 1 (the model)": p_model,
          "tau = 2": softmax(demo_logits / 2.0)}
top3 = np.where(np.arange(V_DEMO) < 3, p_model, 0.0)  # the logits are sorted: the top 3 are tokens 0, 1, 2
shapes["top-k, k = 3"] = top3 / top3.sum()
nucleus = np.where(nucleus_mask(p_model, 0.8), p_model, 0.0)
shapes["top-p, p = 0.8"] = nucleus / nucleus.sum()
print("model's probabilities:", np.round(p_model, 3))
print("cumulative           :", np.round(np.cumsum(p_model), 3))
for name, dist in shapes.items():
    print(f"{name:<20} kept {int((dist > 0).sum()):>2} tokens, entropy {entropy(dist):.3f} nats, "
          f"largest probability {dist.max():.3f}")

fig, axes = plt.subplots(1, len(shapes), figsize=(15, 3.2), sharey=True)
for ax, (name, dist) in zip(axes, shapes.items(), strict=True):
    _ = ax.bar(np.arange(V_DEMO), p_model, color="lightgrey", label="model (tau = 1)")
    _ = ax.bar(np.arange(V_DEMO), dist, width=0.5, color="tab:blue", label="after the knob")
    ax.set_title(name)
    ax.set_xlabel("token (most probable first)")
    ax.set_xticks(range(V_DEMO))
axes[0].set_ylabel("probability")
axes[0].legend(loc="upper right", fontsize=8)
fig.suptitle("One set of logits, five ways to turn it into a distribution")
plt.show()

# %% [markdown]
# *Figure: grey, the model's distribution; blue, the distribution each knob makes of the same
# logits. Temperature reshapes all ten bars; top-$k$ and top-$p$ cut the tail off and scale the
# kept bars up.*
#
# The model's cumulative probability passes 0.8 at the fifth token (0.694 after four, 0.801 after
# five), so the nucleus for $p = 0.8$ has five tokens: the fifth, the one that crosses, is in.
# Top-3 keeps three whatever the shape. Both cuts lower the entropy (from 1.956 nats to 1.058 and
# 1.530), and so does $\tau = 0.5$ (1.530); $\tau = 2$ raises it to 2.185, towards
# $\log 10 = 2.303$.
#
# ### Entropy against temperature
#
# The entropy $H(\tau) = -\sum_i p_i(\tau) \log p_i(\tau)$ measures how spread the draw is. It
# rises monotonically with $\tau$, from 0 (one token) to $\log V$ (all tokens alike):

# %%
taus = np.geomspace(0.05, 20, 200)  # (200,)
H_tau = np.array([entropy(softmax(demo_logits / tau)) for tau in taus])  # (200,)
print(f"H at tau = 0.05: {H_tau[0]:.3f} nats, at tau = 1: {entropy(p_model):.3f}, at tau = 20: {H_tau[-1]:.3f}; "
      f"log V = {np.log(V_DEMO):.3f}")
print("rises monotonically:", bool(np.all(np.diff(H_tau) > 0)))
fig, ax = plt.subplots(figsize=(6, 3.6))
_ = ax.semilogx(taus, H_tau, color="tab:blue", label="entropy of softmax(z / tau)")
_ = ax.axhline(np.log(V_DEMO), color="grey", linestyle="--", label="log V (uniform)")
_ = ax.axvline(1.0, color="grey", linestyle=":", label="tau = 1 (the model)")
ax.set_xlabel("temperature tau")
ax.set_ylabel("entropy (nats)")
ax.set_title("Entropy of the next-token distribution against temperature")
ax.legend()
plt.show()

# %% [markdown]
# *Figure: the entropy of the same ten logits' distribution, against the temperature on a log
# axis: 0 at the cold end, $\log V$ at the hot end, the model's own 1.956 nats at $\tau = 1$.*
#
# ### Exercise 1: a sampler with temperature, top-$k$ and top-$p$ (4 points)
#
# Write `sample_tokens(logits, rng, temperature=1.0, top_k=0, top_p=1.0)`. `logits` is `(B, V)`,
# one row per sequence being generated; return an int array `(B,)`, one token per row. Sampling
# must be reproducible, so every step is fixed:
#
# 1. **Order.** Rank each row's tokens by logit, highest first; equal logits keep the order of
#    their token ids (a stable sort of $-z$: `np.argsort(-logits, axis=-1, kind="stable")`).
# 2. **Temperature.** For `temperature > 0` the probabilities are $\text{softmax}(z/\tau)$. For
#    `temperature == 0` (greedy) the first token of the order gets probability 1, the rest 0.
# 3. **Top-$k$.** If `top_k > 0`, only the first `top_k` tokens of the order keep their
#    probability (all of them if `top_k >= V`); renormalise.
# 4. **Top-$p$.** If `top_p < 1`, a token keeps its probability (after step 3) only if the total
#    probability of the tokens ranked before it is **below** `top_p`, so the token that crosses
#    `top_p` is kept; renormalise.
# 5. **Draw.** Call `u = rng.random(B)` exactly once, even when `B = 1` or `temperature == 0`:
#    one uniform number per row, and no other use of `rng`. Row $b$'s token is the first kept
#    token, in the order of step 1, at which the cumulative probability of the kept tokens
#    **exceeds** $u_b$.
#
# Step 5 is the inverse of the cumulative distribution: it draws token $i$ with probability
# exactly its (final) $p_i$, and with the same $u$, two correct samplers give the same tokens.
# No loop over rows is needed; do not modify `logits`.

# %% nbgrader={"grade": false, "grade_id": "sample_tokens", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sample_tokens(logits, rng, temperature=1.0, top_k=0, top_p=1.0):
    """One token per row of logits (B, V), with temperature, top-k and top-p, from u = rng.random(B): (B,) ints."""
    ### BEGIN SOLUTION
    logits = np.asarray(logits, dtype=float)
    B, vocab = logits.shape
    order = np.argsort(-logits, axis=-1, kind="stable")  # (B, V): token ids, most probable first
    ranked = np.take_along_axis(logits, order, axis=-1)  # (B, V): logits in that order
    if temperature == 0:
        probs = np.zeros_like(ranked)
        probs[:, 0] = 1.0  # greedy: the first of the order
    else:
        probs = softmax(ranked / temperature)  # (B, V)
    if 0 < top_k < vocab:
        probs[:, top_k:] = 0.0
        probs /= probs.sum(axis=-1, keepdims=True)
    if top_p < 1.0:
        before = np.cumsum(probs, axis=-1) - probs  # (B, V): the mass ranked before each token
        probs = np.where(before < top_p, probs, 0.0)  # the crossing token's `before` is still below top_p
        probs /= probs.sum(axis=-1, keepdims=True)
    u = rng.random(B)  # (B,): one uniform number per row
    cumulative = np.cumsum(probs, axis=-1)  # (B, V)
    rank = (cumulative <= u[:, None]).sum(axis=-1)  # the first rank whose cumulative probability exceeds u
    last_kept = (probs > 0).sum(axis=-1) - 1  # the kept tokens are a prefix of the order
    rank = np.minimum(rank, last_kept)  # a cumulative sum that ends a rounding error below 1
    return order[np.arange(B), rank]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_sample_tokens", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
def check_sample_tokens(logits, settings, expected, what, n=20_000):
    """Visible check: n rows of the same logits (V,), frequencies against the expected distribution (V,)."""
    rows = np.tile(logits, (n, 1))  # (n, V)
    kept = rows.copy()
    rng_ = np.random.default_rng(3)
    got = np.asarray(sample_tokens(rows, rng_, **settings))
    assert np.array_equal(rows, kept), f"{what}: sample_tokens modified the logits"
    assert got.shape == (n,), f"{what}: expected one token per row, shape ({n},), got {got.shape}"
    assert np.issubdtype(got.dtype, np.integer), f"{what}: return token ids (ints), got dtype {got.dtype}"
    twin = np.random.default_rng(3)
    twin.random(n)
    assert rng_.bit_generator.state == twin.bit_generator.state, (
        f"{what}: the generator was not used as specified: call rng.random(B) exactly once")
    freq = np.bincount(got, minlength=len(logits)) / n  # (V,)
    assert np.all(freq[np.asarray(expected) == 0] == 0), (
        f"{what}: tokens that the settings cut off were drawn (frequencies {np.round(freq, 3)}); the nucleus keeps "
        "a token only while the mass ranked before it is below top_p, top-k only the first k")
    assert np.abs(freq - expected).max() < 0.015, (
        f"{what}: frequencies {np.round(freq, 3)}, expected {np.round(expected, 3)}: apply the temperature to the "
        "logits, then top-k, then top-p, renormalising after each cut")


quarter_logits = np.log(np.array([0.05, 0.5, 0.15, 0.3]))  # (4,): probabilities 0.05, 0.5, 0.15, 0.3
check_sample_tokens(quarter_logits, {}, [0.05, 0.5, 0.15, 0.3], "tau = 1, no cut")
check_sample_tokens(quarter_logits, {"top_p": 0.7}, [0, 0.625, 0, 0.375], "top-p 0.7 (0.5 + 0.3 crosses it)")
check_sample_tokens(quarter_logits, {"top_k": 3, "top_p": 0.83}, [0, 0.625, 0, 0.375],
                    "top-k 3, then top-p 0.83 of the renormalised top 3 (0.5 / 0.95 + 0.3 / 0.95 crosses it)")
squared = np.array([0.05, 0.5, 0.15, 0.3]) ** 2  # tau = 0.5 squares the probabilities before renormalising
check_sample_tokens(quarter_logits, {"temperature": 0.5}, squared / squared.sum(), "tau = 0.5")
check_sample_tokens(quarter_logits, {"temperature": 0}, [0, 1, 0, 0], "tau = 0 (greedy)")
tie_draws = np.asarray(sample_tokens(np.array([[1.0, 3.0, 3.0, 0.0]] * 4), np.random.default_rng(0), top_k=1))
assert np.array_equal(tie_draws, [1, 1, 1, 1]), "equal logits: the lower token id ranks first (a stable sort)"
exact = np.asarray(sample_tokens(np.array([[0.0, 1.0, 2.0], [2.0, 0.0, 1.0]]), np.random.default_rng(1)))
assert np.array_equal(exact, [2, 1]), (  # default_rng(1).random(2) = [0.512, 0.950]
    f"with u = [0.512, 0.950] the tokens are [2, 1] (cumulative sums in the sorted order), got {exact}")
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Is a sampler right? The chi-squared test
#
# A sampler that is close but wrong (a nucleus one token short, a forgotten renormalisation) still
# returns plausible tokens. The way to tell is to draw many and compare the counts with the
# distribution they should follow. For $N$ draws over $K$ tokens with target probabilities
# $p_i$, token $i$ is expected $E_i = N p_i$ times and observed $O_i$ times. Pearson's statistic
#
# $$X^2 = \sum_{i:\ p_i > 0} \frac{(O_i - E_i)^2}{E_i}$$
#
# follows, for a correct sampler and large $N$, a chi-squared distribution with $d = K_+ - 1$
# degrees of freedom, where $K_+$ counts the tokens with $p_i > 0$ (the counts sum to $N$: one
# degree of freedom fewer). Its mean is $d$ and its standard deviation $\sqrt{2d}$. A token with
# $p_i = 0$ that is drawn even once proves the sampler wrong: $X^2 = \infty$.
#
# The threshold: reject when $X^2$ exceeds the chi-squared distribution's quantile at $1 - \epsilon$.
# Without SciPy, the Wilson–Hilferty approximation (Wilson and Hilferty, *The distribution of
# chi-square*, PNAS 1931) gives it from the normal quantile $z$:
#
# $$\chi^2_{d}(z) \approx d\,\Big(1 - \frac{2}{9d} + z\,\sqrt{\frac{2}{9d}}\Big)^3 .$$
#
# With $z = 4$ a correct sampler is rejected about 3 times in 100,000 tests ($\epsilon \approx
# 3 \times 10^{-5}$), so a rejection means something.
#
# ### Exercise 2: a test of a sampler (3 points)
#
# Write `sampler_check(samples, target, z=4.0)`: `samples` an int array `(N,)` of token ids in
# `0 .. K-1`, `target` a distribution `(K,)` (non-negative, summing to 1). Return the triple
# `(statistic, threshold, passed)`:
#
# - `statistic`: $X^2$ over the tokens with $p_i > 0$, as a float; `np.inf` if any sample is a token
#   with $p_i = 0$;
# - `threshold`: the Wilson–Hilferty quantile above for $d = K_+ - 1$ degrees of freedom; `0.0`
#   when $d = 0$ (a target with one possible token);
# - `passed`: `statistic <= threshold`, a bool.
#
# Do not modify the inputs.

# %% nbgrader={"grade": false, "grade_id": "sampler_check", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sampler_check(samples, target, z=4.0):
    """Pearson's chi-squared test of samples (N,) against target (K,): (statistic, threshold, passed)."""
    ### BEGIN SOLUTION
    target = np.asarray(target, dtype=float)
    counts = np.bincount(np.asarray(samples), minlength=len(target))  # (K,)
    possible = target > 0
    if counts[~possible].sum() > 0:
        statistic = np.inf
    else:
        expected = len(samples) * target[possible]  # (K_+,)
        statistic = float(((counts[possible] - expected) ** 2 / expected).sum())
    d = int(possible.sum()) - 1
    threshold = 0.0 if d == 0 else d * (1 - 2 / (9 * d) + z * np.sqrt(2 / (9 * d))) ** 3
    return statistic, float(threshold), bool(statistic <= threshold)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_sampler_check", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_sampler_check(samples, target, expected, what, **kwargs):
    """Visible check of one call against its expected (statistic, threshold, passed)."""
    samples, target = np.asarray(samples), np.asarray(target, dtype=float)
    kept = samples.copy(), target.copy()
    result = sampler_check(samples, target, **kwargs)
    assert np.array_equal(samples, kept[0]) and np.array_equal(target, kept[1]), f"{what}: the inputs were modified"
    assert isinstance(result, tuple) and len(result) == 3, f"{what}: return a triple (statistic, threshold, passed)"
    statistic, threshold, passed = result
    assert np.isclose(statistic, expected[0], rtol=1e-9), (
        f"{what}: statistic {statistic}, expected {expected[0]}: sum (O - E)^2 / E over the tokens with p > 0, "
        "E = N p (and inf when a token with p = 0 was drawn)")
    assert np.isclose(threshold, expected[1], rtol=1e-9), (
        f"{what}: threshold {threshold}, expected {expected[1]}: d = (tokens with p > 0) - 1 degrees of freedom")
    assert isinstance(passed, (bool, np.bool_)) and bool(passed) == expected[2], (
        f"{what}: passed should be {expected[2]} (statistic <= threshold)")


# Ten draws over three tokens of probabilities 0.5, 0.3, 0.2: counts (6, 3, 1), E = (5, 3, 2):
# X^2 = 1/5 + 0 + 1/2 = 0.7, on d = 2 degrees of freedom: threshold 2 (1 - 1/9 + 4/3)^3 = 2 (20/9)^3.
check_sampler_check([0, 0, 1, 0, 2, 1, 0, 0, 1, 0], [0.5, 0.3, 0.2], (0.7, 2 * (20 / 9) ** 3, True), "three tokens")
check_sampler_check([0, 0, 1, 0, 3, 1, 0, 0, 1, 0], [0.5, 0.3, 0.0, 0.2], (0.7, 2 * (20 / 9) ** 3, True),
                    "a token of probability 0, never drawn: still d = 2")
check_sampler_check([0, 2, 1], [0.5, 0.3, 0.0, 0.2], (np.inf, 2 * (20 / 9) ** 3, False),
                    "a token of probability 0, drawn")
check_sampler_check([1] * 40, [0.5, 0.5], (40.0, (7 / 9 + 4 * np.sqrt(2 / 9)) ** 3, False), "a coin that always lands 1")
check_sampler_check([2, 2, 2], [0.0, 0.0, 1.0], (0.0, 0.0, True), "one possible token")
check_sampler_check([0, 1] * 50, [0.5, 0.5], (0.0, (7 / 9 + 2 * np.sqrt(2 / 9)) ** 3, True), "z = 2", z=2.0)
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Your sampler, tested
#
# The test is only as good as its power. Here it runs on your sampler, 20,000 draws at each of
# three settings of the section's ten logits, against the distribution each setting should give,
# computed directly from the equations above. Beside it, the **total variation distance**
# $\text{TV} = \tfrac12 \sum_i |f_i - p_i|$ between the frequencies $f$ and the target, and the
# size it has from sampling noise alone: each $f_i$ has standard deviation
# $\sigma_i = \sqrt{p_i(1 - p_i)/N}$, and $\mathbb{E}\,|f_i - p_i| \approx \sigma_i \sqrt{2/\pi}$ for a
# normal deviation, so
#
# $$\mathbb{E}[\text{TV}] \approx \sum_i \sqrt{\frac{p_i (1 - p_i)}{2 \pi N}} .$$
#
# And two controls that are close but wrong: a nucleus one token short, and top-$k$ without the
# renormalisation before top-$p$ (the nucleus measured on the mass before the cut).

# %%
def expected_tv(target, n):
    """The total variation distance that n exact draws from target (K,) show on average (normal approximation)."""
    return float(np.sqrt(target * (1 - target) / (2 * np.pi * n)).sum())


def tv_distance(samples, target):
    """Total variation distance between the frequencies of samples (N,) and target (K,)."""
    return 0.5 * float(np.abs(np.bincount(samples, minlength=len(target)) / len(samples) - target).sum())


N_TEST = 20_000
demo_rows = np.tile(demo_logits, (N_TEST, 1))  # (N, V): the section's logits, once per draw
cut_top3 = np.where(np.arange(V_DEMO) < 3, p_model, 0.0)
cut_top6 = np.where(np.arange(V_DEMO) < 6, p_model, 0.0) / p_model[:6].sum()  # top-k 6, renormalised
targets = {"tau = 0.7": softmax(demo_logits / 0.7),
           "top-k 3": cut_top3 / cut_top3.sum(),
           "top-k 6, then top-p 0.75": np.where(nucleus_mask(cut_top6, 0.75), cut_top6, 0.0)}
targets["top-k 6, then top-p 0.75"] /= targets["top-k 6, then top-p 0.75"].sum()
settings_of = {"tau = 0.7": {"temperature": 0.7}, "top-k 3": {"top_k": 3},
               "top-k 6, then top-p 0.75": {"top_k": 6, "top_p": 0.75}}
print(f"{'setting':<26} {'X^2':>8} {'threshold':>9} {'passed':>6} {'TV':>7} {'noise TV':>8}")
for seed, (name, target) in enumerate(targets.items()):
    draws = sample_tokens(demo_rows, np.random.default_rng(seed), **settings_of[name])
    statistic, threshold, passed = sampler_check(draws, target)
    print(f"{name:<26} {statistic:8.1f} {threshold:9.1f} {passed!s:>6} {tv_distance(draws, target):7.3f} "
          f"{expected_tv(target, N_TEST):8.3f}")

# The two controls: one token short of the nucleus, and the nucleus of the mass before top-k's cut.
short = targets["top-k 6, then top-p 0.75"].copy()
short[np.flatnonzero(short)[-1]] = 0.0  # the crossing token dropped
short /= short.sum()
unrenormalised = np.where(nucleus_mask(p_model, 0.75) & (np.arange(V_DEMO) < 6), p_model, 0.0)
unrenormalised /= unrenormalised.sum()
control_rng = np.random.default_rng(10)
for name, wrong in [("nucleus one token short", short), ("nucleus before renormalising", unrenormalised)]:
    draws = control_rng.choice(V_DEMO, size=N_TEST, p=wrong)  # a sampler of the wrong distribution
    statistic, threshold, passed = sampler_check(draws, targets["top-k 6, then top-p 0.75"])
    print(f"control, {name:<28}: X^2 {statistic:8.1f}, threshold {threshold:5.1f}, passed {passed}, "
          f"TV {tv_distance(draws, targets['top-k 6, then top-p 0.75']):.3f}")

# %% [markdown]
# ## 2. A model to decode: Lesson 13's encoder–decoder on a task with random answers
#
# Sampling and search need a model whose next-token distributions are not all certain. The
# **spelling task**: the source is a sequence of $S = 1 \dots 4$ words, each one of six word tokens
# 3 … 8, then `EOS`. The target writes every word as a **chunk of two tokens**, in order, and then
# `EOS`. Each chunk is drawn at random, independently:
#
# - with probability 0.4, the **plain** form: the word twice, `w w`;
# - with probability 0.6, the **marked** form: the marker `M` (token 9), then one of three
#   spellings of the word, each with probability 0.2 (tokens 10 … 27, three per word).
#
# So the first token of a chunk is `M` with probability 0.6 and `w` with 0.4, and after `M` the
# next is one of three spellings, each $0.6/3 = 0.2$ of the chunk's probability. The most probable
# chunk is the plain one (0.4), but **greedy decoding never writes it**: at the chunk's first
# token it picks `M` (0.6 > 0.4), and then a spelling (0.2). For a source of $S$ words the most
# probable output, all plain, has probability $0.4^S$; greedy's has $0.2^S$, $2^S$ times less.
#
# The vocabulary has $V = 28$ tokens: `PAD` = 0, `BOS` = 1, `EOS` = 2, the six words, `M`, and 18
# spellings. Sources have $S_{\max} + 1 = 5$ positions, targets $T_{\max} = 2 S_{\max} + 1 = 9$.

# %%
PAD, BOS, EOS = 0, 1, 2
N_WORDS, N_SPELLINGS, P_PLAIN = 6, 3, 0.4
WORDS = np.arange(3, 3 + N_WORDS)  # word tokens 3 .. 8
MARK = 3 + N_WORDS  # 9
V = MARK + 1 + N_WORDS * N_SPELLINGS  # 28
S_MAX = 4
T_MAX = 2 * S_MAX + 1  # two tokens per word, then EOS


def spelling_of(word, k):
    """Token id of spelling k (0, 1, 2) of a word token."""
    return MARK + 1 + (word - WORDS[0]) * N_SPELLINGS + k


def spelling_batch(rng, n):
    """n examples: (source (n, S_MAX + 1), decoder input (n, T_MAX), target (n, T_MAX), lengths (n,))."""
    lengths = rng.integers(1, S_MAX + 1, size=n)  # (n,)
    source, target = np.full((n, S_MAX + 1), PAD), np.full((n, T_MAX), PAD)
    for b, length in enumerate(lengths):
        words = rng.choice(WORDS, size=length)  # (S,), repeats allowed
        plain, k = rng.random(length) < P_PLAIN, rng.integers(0, N_SPELLINGS, size=length)
        source[b, :length], source[b, length] = words, EOS
        for i, w in enumerate(words):
            target[b, 2 * i:2 * i + 2] = (w, w) if plain[i] else (MARK, spelling_of(w, k[i]))
        target[b, 2 * length] = EOS
    decoder_in = np.concatenate([np.full((n, 1), BOS), target[:, :-1]], axis=1)  # the target shifted right
    decoder_in[decoder_in == EOS] = PAD
    return source, decoder_in, target, lengths


def task_log_prob(source, output):
    """log P(output | source) under the task itself (-inf for an output the task never writes)."""
    words = source[:np.flatnonzero(source == EOS)[0]]  # (S,)
    output = list(output)
    if len(output) != 2 * len(words) + 1 or output[-1] != EOS:
        return -np.inf
    total = 0.0
    for i, w in enumerate(words):
        first, second = output[2 * i:2 * i + 2]
        if (first, second) == (w, w):
            total += np.log(P_PLAIN)
        elif first == MARK and spelling_of(w, 0) <= second <= spelling_of(w, N_SPELLINGS - 1):
            total += np.log((1 - P_PLAIN) / N_SPELLINGS)
        else:
            return -np.inf
    return total


example = spelling_batch(np.random.default_rng(1), 3)
for name, array in zip(("source", "decoder input", "target"), example[:3], strict=False):
    print(f"{name}:", array.shape)
    for row in array:
        print("   ", " ".join(f"{t:2d}" for t in row))
print("log P(target | source) under the task:", [round(task_log_prob(s, t[t != PAD]), 3)
                                                 for s, t in zip(example[0], example[2], strict=True)])

# %% [markdown]
# ### Given: Lesson 13's model, its training and its decoding step
#
# The model is Lesson 13's, unchanged: one pre-norm, attention-only encoder block, one decoder
# block with causal self-attention and cross-attention, learned positions, LayerNorms, and the
# unembedding $U$ `(C, V)`, with $C = 32$ and $h = 2$ heads. Its forward pass, its backward pass,
# Adam, and Lesson 13's `decoder_step` (one position of decoding, with a self-attention cache
# `(K_self, V_self)` each `(B, h, t, hs)` and the source's cross-attention keys and values
# `cross_kv`, each `(B, h, S, hs)`, computed once by `cross_keys_values`) are given below. Read
# `decoder_step`'s docstring: Exercise 3 calls it.

# %%
# Given: Lesson 3's head split and merge, Lesson 13's cross_attention, Lesson 11's LayerNorm,
# Lesson 7's attention backward, the masked cross-entropy and Lesson 9's Adam, and Lesson 13's model.
def split_heads(x, h):
    """(B, T, C) -> (B, h, T, hs): head i takes columns i*hs .. (i+1)*hs - 1."""
    B, T, C = x.shape
    return x.reshape(B, T, h, C // h).transpose(0, 2, 1, 3)  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)


def merge_heads(x):
    """(B, h, T, hs) -> (B, T, C): the heads side by side."""
    B, h, T, hs = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, h * hs)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)


def cross_attention(x_q, x_kv, mask, Wq, Wk, Wv, Wo, h):
    """Masked multi-head attention of queries x_q (B, T_q, C) on keys and values from x_kv (B, T_k, C).

    mask: bool, broadcastable to (B, T_q, T_k), True where allowed. Returns (out (B, T_q, C), weights (B, h, T_q, T_k)).
    """
    Q = split_heads(x_q @ Wq, h)  # (B, T_q, C) -> (B, h, T_q, hs)
    K, V = split_heads(x_kv @ Wk, h), split_heads(x_kv @ Wv, h)  # (B, T_k, C) -> (B, h, T_k, hs) each
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (B, h, T_q, hs) @ (B, h, hs, T_k) -> (B, h, T_q, T_k)
    allowed = np.expand_dims(mask, -3)  # (B, T_q, T_k) -> (B, 1, T_q, T_k): the same mask for every head
    scores = np.where(allowed, scores, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)  # (B, h, T_q, 1); -inf on a fully masked row
    row_max = np.where(np.isneginf(row_max), 0.0, row_max)  # nothing to subtract there
    e = np.exp(scores - row_max)  # blocked entries: exp(-inf) = 0
    total = e.sum(axis=-1, keepdims=True)  # (B, h, T_q, 1): 0 on a fully masked row
    weights = e / np.where(total > 0, total, 1.0)
    return merge_heads(weights @ V) @ Wo, weights  # (B, h, T_q, T_k) @ (B, h, T_k, hs) -> (B, T_q, C) @ (C, C)


def layer_norm(x, gamma, beta, eps=1e-5):
    """LayerNorm over the last axis: x (..., C), gamma and beta (C,) -> (..., C)."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = x.var(axis=-1, keepdims=True)  # (..., 1)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def layer_norm_backward(dout, x, gamma, eps=1e-5):
    """Gradients of LayerNorm given dout = dL/d(out) (..., C): returns (dx (..., C), dgamma (C,), dbeta (C,))."""
    rstd = 1 / np.sqrt(x.var(axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = (x - x.mean(axis=-1, keepdims=True)) * rstd  # (..., C)
    g_hat = dout * gamma  # (..., C)
    dx = rstd * (g_hat - g_hat.mean(axis=-1, keepdims=True) - x_hat * (g_hat * x_hat).mean(axis=-1, keepdims=True))
    rows = tuple(range(x.ndim - 1))  # every axis but the features
    return dx, (dout * x_hat).sum(axis=rows), dout.sum(axis=rows)


def attention_backward(dout, x_q, x_kv, weights, Wq, Wk, Wv, Wo):
    """Gradients of out = Concat(weights V) Wo given dout (B, T_q, C).

    Returns (dx_q (B, T_q, C), dx_kv (B, T_k, C), {"Wq", "Wk", "Wv", "Wo": (C, C)}).
    """
    (B, T_q, C), T_k, h = x_q.shape, x_kv.shape[1], weights.shape[1]
    hs = C // h
    Q, K, V_ = split_heads(x_q @ Wq, h), split_heads(x_kv @ Wk, h), split_heads(x_kv @ Wv, h)  # (B, h, T, hs)
    concat = merge_heads(weights @ V_).reshape(B * T_q, C)  # (B, h, T_q, hs) -> (B*T_q, C)
    dper_head = split_heads(dout @ Wo.T, h)  # (B, T_q, C) -> (B, h, T_q, hs)
    dweights = dper_head @ np.swapaxes(V_, -1, -2)  # (B, h, T_q, hs) @ (B, h, hs, T_k) -> (B, h, T_q, T_k)
    dV = np.swapaxes(weights, -1, -2) @ dper_head  # (B, h, T_k, T_q) @ (B, h, T_q, hs) -> (B, h, T_k, hs)
    dscores = weights * (dweights - (dweights * weights).sum(axis=-1, keepdims=True))  # (B, h, T_q, T_k)
    dQ = merge_heads(dscores @ K / np.sqrt(hs)).reshape(B * T_q, C)  # (B, h, T_q, hs) -> (B*T_q, C)
    dK = merge_heads(np.swapaxes(dscores, -1, -2) @ Q / np.sqrt(hs)).reshape(B * T_k, C)  # -> (B*T_k, C)
    dV = merge_heads(dV).reshape(B * T_k, C)  # (B, h, T_k, hs) -> (B*T_k, C)
    q_rows, kv_rows = x_q.reshape(B * T_q, C), x_kv.reshape(B * T_k, C)
    grads = {"Wq": q_rows.T @ dQ, "Wk": kv_rows.T @ dK, "Wv": kv_rows.T @ dV,  # (C, rows) @ (rows, C) -> (C, C)
             "Wo": concat.T @ dout.reshape(B * T_q, C)}
    return (dQ @ Wq.T).reshape(B, T_q, C), (dK @ Wk.T + dV @ Wv.T).reshape(B, T_k, C), grads


def masked_cross_entropy(logits, targets, real):
    """Mean cross-entropy over the positions where real (B, T) is True: (loss, dlogits (B, T, V))."""
    z = logits - logits.max(axis=-1, keepdims=True)  # (B, T, V)
    log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))  # (B, T, V)
    one_hot = np.eye(logits.shape[-1])[targets]  # (B, T, V)
    n = real.sum()
    loss = float(-(log_p * one_hot).sum(axis=-1)[real].sum() / n)
    return loss, (np.exp(log_p) - one_hot) * real[..., None] / n


def adam_init(params):
    """Adam's state before the first step: t = 0, m = v = 0 for every parameter."""
    return {"t": 0, "m": {k: np.zeros_like(p) for k, p in params.items()},
            "v": {k: np.zeros_like(p) for k, p in params.items()}}


def adam_step(params, grads, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    """One Adam step on dicts of arrays: returns (new_params, new_state); the inputs are left unchanged."""
    beta1, beta2 = betas
    t = state["t"] + 1
    m = {k: beta1 * state["m"][k] + (1 - beta1) * grads[k] for k in params}
    v = {k: beta2 * state["v"][k] + (1 - beta2) * grads[k] ** 2 for k in params}
    new_params = {k: params[k] - lr * (m[k] / (1 - beta1 ** t)) / (np.sqrt(v[k] / (1 - beta2 ** t)) + eps)
                  for k in params}
    return new_params, {"t": t, "m": m, "v": v}


C, H = 32, 2  # width, heads (head size 16)
ATTENTIONS = {"enc.": "encoder self-attention", "dec.": "decoder self-attention", "dec.cross_": "cross-attention"}


def init_model(rng, vocab=V, s_max=T_MAX - 1, width=C):
    """Parameters of the encoder-decoder: a flat {name: array} dict."""
    std = 1 / np.sqrt(width)
    params = {"E": rng.standard_normal((vocab, width)), "P_enc": rng.standard_normal((s_max + 1, width)),
              "P_dec": rng.standard_normal((s_max + 1, width))}  # s_max tokens, then EOS
    for prefix in ATTENTIONS:
        for name in ("Wq", "Wk", "Wv", "Wo"):
            params[prefix + name] = rng.standard_normal((width, width)) * std
    for norm in ("enc.ln1", "enc.lnf", "dec.ln1", "dec.ln2", "lnf"):
        params[norm + "_gamma"], params[norm + "_beta"] = np.ones(width), np.zeros(width)
    params["U"] = rng.standard_normal((width, vocab)) * std
    return params


def weights_of(params, prefix):
    """The four weights of one attention: [Wq, Wk, Wv, Wo]."""
    return [params[prefix + name] for name in ("Wq", "Wk", "Wv", "Wo")]


def encode(params, source, h):
    """The encoder: source (B, S) -> (memory (B, S, C), cache)."""
    S = source.shape[1]
    mask = (source != PAD)[:, None, :]  # (B, 1, S): padding only
    x = params["E"][source] + params["P_enc"][:S]  # (B, S, C)
    a = layer_norm(x, params["enc.ln1_gamma"], params["enc.ln1_beta"])
    out, weights = cross_attention(a, a, mask, *weights_of(params, "enc."), h)  # self-attention: keys from a too
    x1 = x + out
    memory = layer_norm(x1, params["enc.lnf_gamma"], params["enc.lnf_beta"])  # (B, S, C)
    return memory, dict(source=source, mask=mask, x=x, a=a, enc_weights=weights, x1=x1, memory=memory)


def seq2seq_forward(params, source, decoder_in, h):
    """Teacher-forced forward pass: logits (B, T, V) for decoder_in (B, T), and the cache of every step."""
    memory, cache = encode(params, source, h)
    T = decoder_in.shape[1]
    y = params["E"][decoder_in] + params["P_dec"][:T]  # (B, T, C)
    b1 = layer_norm(y, params["dec.ln1_gamma"], params["dec.ln1_beta"])
    out, self_weights = cross_attention(b1, b1, np.tril(np.ones((T, T), dtype=bool)), *weights_of(params, "dec."), h)
    y1 = y + out
    b2 = layer_norm(y1, params["dec.ln2_gamma"], params["dec.ln2_beta"])
    out, cross_weights = cross_attention(b2, memory, cache["mask"], *weights_of(params, "dec.cross_"), h)
    y2 = y1 + out
    yf = layer_norm(y2, params["lnf_gamma"], params["lnf_beta"])
    cache.update(decoder_in=decoder_in, y=y, b1=b1, self_weights=self_weights, y1=y1, b2=b2,
                 cross_weights=cross_weights, y2=y2, yf=yf)
    return yf @ params["U"], cache  # (B, T, C) @ (C, V) -> (B, T, V)


def seq2seq_backward(params, cache, dlogits):
    """Gradients {name: array like params[name]} of the loss, given dlogits (B, T, V)."""
    B, T, vocab = dlogits.shape
    width = params["U"].shape[0]
    grads = {"U": cache["yf"].reshape(B * T, width).T @ dlogits.reshape(B * T, vocab)}  # (C, B*T) @ (B*T, V)
    dy2, grads["lnf_gamma"], grads["lnf_beta"] = layer_norm_backward(dlogits @ params["U"].T, cache["y2"],
                                                                     params["lnf_gamma"])
    db2, dmemory, dW = attention_backward(dy2, cache["b2"], cache["memory"], cache["cross_weights"],
                                          *weights_of(params, "dec.cross_"))
    grads.update({"dec.cross_" + k: g for k, g in dW.items()})
    dy1, grads["dec.ln2_gamma"], grads["dec.ln2_beta"] = layer_norm_backward(db2, cache["y1"], params["dec.ln2_gamma"])
    dy1 = dy2 + dy1  # the residual path and the path through cross-attention
    dq, dkv, dW = attention_backward(dy1, cache["b1"], cache["b1"], cache["self_weights"], *weights_of(params, "dec."))
    grads.update({"dec." + k: g for k, g in dW.items()})
    dy, grads["dec.ln1_gamma"], grads["dec.ln1_beta"] = layer_norm_backward(dq + dkv, cache["y"], params["dec.ln1_gamma"])
    dy = dy1 + dy
    dx1, grads["enc.lnf_gamma"], grads["enc.lnf_beta"] = layer_norm_backward(dmemory, cache["x1"],
                                                                             params["enc.lnf_gamma"])
    dq, dkv, dW = attention_backward(dx1, cache["a"], cache["a"], cache["enc_weights"], *weights_of(params, "enc."))
    grads.update({"enc." + k: g for k, g in dW.items()})
    dx, grads["enc.ln1_gamma"], grads["enc.ln1_beta"] = layer_norm_backward(dq + dkv, cache["x"], params["enc.ln1_gamma"])
    dx = dx1 + dx
    grads["E"] = np.zeros_like(params["E"])
    np.add.at(grads["E"], cache["source"], dx)  # (B, S, C) into the rows of the source tokens
    np.add.at(grads["E"], cache["decoder_in"], dy)  # (B, T, C) into the rows of the decoder inputs
    grads["P_enc"], grads["P_dec"] = np.zeros_like(params["P_enc"]), np.zeros_like(params["P_dec"])
    grads["P_enc"][:dx.shape[1]], grads["P_dec"][:T] = dx.sum(axis=0), dy.sum(axis=0)  # (B, T, C) -> (T, C)
    return grads


def decoder_params(params):
    """The parameters a decoding step may use: the decoder's, without the cross-attention's Wk and Wv."""
    return {name: value for name, value in params.items()
            if not name.startswith("enc.") and name not in ("P_enc", "dec.cross_Wk", "dec.cross_Wv")}


def cross_keys_values(params, memory, h):
    """The cross-attention's keys and values of a memory (B, S, C): a pair of (B, h, S, hs), computed once."""
    return split_heads(memory @ params["dec.cross_Wk"], h), split_heads(memory @ params["dec.cross_Wv"], h)


def decoder_step(params, tokens, cache, cross_kv, source_valid):
    """One decoding step at position t = cache length: returns (logits (B, V), (K_self, V_self) each (B, h, t+1, hs))."""
    K_self, V_self = cache
    K_cross, V_cross = cross_kv
    B, h, t, hs = np.shape(K_self)
    y = params["E"][tokens] + params["P_dec"][t]  # (B, C)
    a = layer_norm(y, params["dec.ln1_gamma"], params["dec.ln1_beta"])[:, None, :]  # (B, 1, C)
    q, k, v = (split_heads(a @ params[f"dec.{n}"], h) for n in ("Wq", "Wk", "Wv"))  # (B, 1, C) -> (B, h, 1, hs)
    K_self, V_self = np.concatenate([K_self, k], axis=2), np.concatenate([V_self, v], axis=2)  # (B, h, t+1, hs)
    weights = softmax(q @ np.swapaxes(K_self, -1, -2) / np.sqrt(hs))  # (B, h, 1, hs) @ (B, h, hs, t+1) -> (B, h, 1, t+1)
    y = y + (merge_heads(weights @ V_self) @ params["dec.Wo"])[:, 0]  # (B, h, 1, hs) -> (B, 1, C) -> (B, C)
    a = layer_norm(y, params["dec.ln2_gamma"], params["dec.ln2_beta"])[:, None, :]  # (B, 1, C)
    q = split_heads(a @ params["dec.cross_Wq"], h)  # (B, h, 1, hs)
    scores = q @ np.swapaxes(K_cross, -1, -2) / np.sqrt(hs)  # (B, h, 1, hs) @ (B, h, hs, S) -> (B, h, 1, S)
    weights = softmax(np.where(np.asarray(source_valid)[:, None, None, :], scores, -np.inf))  # >= 1 real key per row
    y = y + (merge_heads(weights @ V_cross) @ params["dec.cross_Wo"])[:, 0]  # (B, C)
    return layer_norm(y, params["lnf_gamma"], params["lnf_beta"]) @ params["U"], (K_self, V_self)  # (B, V)


def task_valid(source, outputs):
    """Whether the task could have written each output: sources (B, S_MAX + 1), outputs (B, T_MAX) -> (B,) bool."""
    B = len(source)
    lengths = (source != PAD).sum(axis=1) - 1  # (B,): words before the EOS
    ok = outputs[np.arange(B), 2 * lengths] == EOS  # (B,): EOS right after the last chunk
    for i in range(S_MAX):
        w, first, second = source[:, i], outputs[:, 2 * i], outputs[:, 2 * i + 1]  # (B,) each
        plain = (first == w) & (second == w)
        marked = (first == MARK) & (second >= spelling_of(w, 0)) & (second <= spelling_of(w, N_SPELLINGS - 1))
        ok &= (i >= lengths) | plain | marked
    return ok


# %% [markdown]
# ### Training
#
# Adam with a learning rate of $10^{-2}$ decaying linearly to 0, 400 steps of 32 fresh examples,
# from `default_rng(0)`. After every step the parameters are **rounded to 6 decimals**: the last
# bits of a float sum differ between CPUs (their vector instructions add in other orders), and a
# training run amplifies such differences until two machines end with different models. Rounding
# wipes them out at every step unless one falls right on a rounding boundary, which is rare, so
# the run, and every number below, is the same everywhere. (It costs nothing here: Adam's steps
# are far larger than $10^{-6}$.)
#
# The best possible loss is the task's own entropy per target token: a chunk's first token carries
# $H(0.4, 0.6) = 0.673$ nats, its second $0.6 \log 3 = 0.659$ (only after `M`), `EOS` none.

# %%
def train_model(steps=400, batch=32, lr=1e-2, init_seed=0, data_seed=100):
    """Adam on fresh batches, linear decay, parameters rounded to 6 decimals after every step."""
    data_rng = np.random.default_rng(data_seed)
    params = init_model(np.random.default_rng(init_seed))
    state = adam_init(params)
    for step in range(steps):
        source, decoder_in, target, _ = spelling_batch(data_rng, batch)
        logits, cache = seq2seq_forward(params, source, decoder_in, H)
        _, dlogits = masked_cross_entropy(logits, target, target != PAD)
        params, state = adam_step(params, seq2seq_backward(params, cache, dlogits), state, lr * (1 - step / steps))
        params = {name: np.round(value, 6) for name, value in params.items()}
    return params


cpu_start = time.process_time()
params = train_model()
train_cpu = time.process_time() - cpu_start
held_out = spelling_batch(np.random.default_rng(7), 500)
logits_held, _ = seq2seq_forward(params, *held_out[:2], H)  # (500, T_MAX, V)
real = held_out[2] != PAD
loss_held = masked_cross_entropy(logits_held, held_out[2], real)[0]
n_chunks = held_out[3].sum()
best_loss = n_chunks * (entropy(np.array([P_PLAIN, 1 - P_PLAIN])) + (1 - P_PLAIN) * np.log(N_SPELLINGS)) / real.sum()
chunk_start = np.zeros_like(real)  # (500, T_MAX): the first token of every chunk
for b, length in enumerate(held_out[3]):
    chunk_start[b, 0:2 * length:2] = True
p_mark = softmax(logits_held)[..., MARK][chunk_start]  # the model's P(M) at every chunk's first token
print(f"held-out loss {loss_held:.2f} nats per token, the task's entropy {best_loss:.2f}")
print(f"P(M) at a chunk's first token: mean {p_mark.mean():.2f} (the task's 0.6); "
      f"greedy picks M at {(p_mark > 0.5).mean():.0%} of the {chunk_start.sum()} chunk starts")

# %% [markdown]
# The loss ends within a few hundredths of a nat of the task's entropy, and the model has learnt
# the split: $P(\texttt{M})$ averages 0.6 at a chunk's first token. Not at every chunk (the
# estimate varies from context to context, as a model's does), but at most of them greedy
# decoding writes `M`.
#
# ### Sampling from the model: quality against diversity
#
# `sample_decode` runs Lesson 13's decoding loop with your `sample_tokens` in place of the argmax:
# the source's keys and values once, then one `decoder_step` per position for the whole batch,
# until every row has written `EOS`. Two measures on 100 held-out sources, 10 samples each:
#
# - **quality**: the share of samples the task could have written (every chunk plain or marked
#   with a spelling of its word, then `EOS`, nothing else);
# - **diversity**: the number of different outputs among a source's 10 samples, averaged over
#   sources.
#
# One sampling run is one draw, so every setting runs with five generators (`default_rng(0..4)`),
# and the table shows the mean and the range.

# %%
def sample_decode(params, source, rng, **settings):
    """Decode sources (B, S_MAX + 1) by sampling with sample_tokens: outputs (B, T_MAX), PAD after EOS."""
    memory, _ = encode(params, source, H)
    cross_kv = cross_keys_values(params, memory, H)  # (B, h, S, hs) each, once
    step_params = decoder_params(params)
    B, hs = len(source), C // H
    cache = (np.zeros((B, H, 0, hs)), np.zeros((B, H, 0, hs)))
    tokens, out = np.full(B, BOS), np.full((B, T_MAX), PAD)
    for t in range(T_MAX):
        logits, cache = decoder_step(step_params, tokens, cache, cross_kv, source != PAD)
        tokens = out[:, t] = sample_tokens(logits, rng, **settings)  # (B,)
        if np.all((out[:, :t + 1] == EOS).any(axis=1)):
            break
    after = np.cumsum(out == EOS, axis=1) - (out == EOS) > 0  # (B, T_MAX): positions after the first EOS
    return np.where(after, PAD, out)


N_SOURCES, N_SAMPLES = 100, 10
sources = np.repeat(held_out[0][:N_SOURCES], N_SAMPLES, axis=0)  # (2000, S_MAX + 1): each source 10 times
settings_grid = {"greedy (tau = 0)": {"temperature": 0}, "tau = 0.5": {"temperature": 0.5},
                 "tau = 1": {}, "tau = 1.5": {"temperature": 1.5}, "tau = 2.5": {"temperature": 2.5},
                 "tau = 2.5, top-k 4": {"temperature": 2.5, "top_k": 4},
                 "tau = 2.5, top-p 0.8": {"temperature": 2.5, "top_p": 0.8}}
sampling_table = {}
print(f"{'setting':<22} {'quality: mean [range]':>22} {'distinct of 10: mean [range]':>29}")
for name, settings in settings_grid.items():
    quality, diversity = [], []
    for seed in range(5):
        outputs = sample_decode(params, sources, np.random.default_rng(seed), **settings)  # (2000, T_MAX)
        quality.append(task_valid(sources, outputs).mean())
        per_source = outputs.reshape(N_SOURCES, N_SAMPLES, T_MAX)
        diversity.append(np.mean([len({tuple(row) for row in group}) for group in per_source]))
    sampling_table[name] = (np.array(quality), np.array(diversity))
    print(f"{name:<22} {np.mean(quality):8.3f} [{min(quality):.3f}, {max(quality):.3f}]"
          f" {np.mean(diversity):12.2f} [{min(diversity):.2f}, {max(diversity):.2f}]")
