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

from lesson_helpers import demo_size, tidy_figures  # the course's helpers for demonstrations

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
# The model's cumulative probability passes 0.8 at the fourth token (0.714 after three, 0.828
# after four), so the nucleus for $p = 0.8$ has four tokens: the fourth, the one that crosses, is
# in. Top-3 keeps three whatever the shape. Both cuts lower the entropy (from 1.791 nats to 1.036
# and 1.295), and so does $\tau = 0.5$ (1.224); $\tau = 2$ raises it to 2.124, towards
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
# axis: 0 at the cold end, $\log V$ at the hot end, the model's own 1.791 nats at $\tau = 1$.*
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
    draws = sample_tokens(demo_rows, np.random.default_rng(seed=seed), **settings_of[name])
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
# Your sampler passes at all three settings, with $X^2$ far below its threshold (7.4 against 37.1
# for $\tau = 0.7$, where nine degrees of freedom make the threshold higher) and a total variation
# of the size noise predicts (0.008 against 0.006, 0.003 against 0.004, 0.004 against 0.004). Both
# controls fail: the nucleus one token short with $X^2 = 4869$, and the nucleus measured before
# renormalising with $X^2 = \infty$, because it keeps a fourth token that the target excludes.
# A total variation of 0.133 or 0.196 is 30 to 50 times the noise's.

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
print("log P(target | source) under the task:", [round(float(task_log_prob(s, t[t != PAD])), 3)
                                                 for s, t in zip(example[0], example[2], strict=True)])

# %% [markdown]
# ### Given: Lesson 13's model, its training and its decoding step
#
# The model is Lesson 13's, unchanged: one pre-norm, attention-only encoder block, one decoder
# block with causal self-attention and cross-attention, learned positions, LayerNorms, and the
# unembedding $U$ `(C, V)`, with $C = 32$ and $h = 2$ heads. Its forward pass, its backward pass,
# Adam, and Lesson 13's `decoder_step` (one position of decoding, with a self-attention cache
# `(K_self, V_self)` each `(B, h, t, hs)` and the cross-attention keys and values of the source
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


def decoder_block(params, y, memory, source_mask, h):
    """One pre-norm decoder block: y (B, T, C) reads itself causally, then the memory (B, S, C) -> (y2, parts)."""
    T = y.shape[1]
    b1 = layer_norm(y, params["dec.ln1_gamma"], params["dec.ln1_beta"])
    out, self_weights = cross_attention(b1, b1, np.tril(np.ones((T, T), dtype=bool)), *weights_of(params, "dec."), h)
    y1 = y + out
    b2 = layer_norm(y1, params["dec.ln2_gamma"], params["dec.ln2_beta"])
    out, cross_weights = cross_attention(b2, memory, source_mask, *weights_of(params, "dec.cross_"), h)
    return y1 + out, dict(b1=b1, self_weights=self_weights, y1=y1, b2=b2, cross_weights=cross_weights)


def seq2seq_forward(params, source, decoder_in, h):
    """Teacher-forced forward pass: logits (B, T, V) for decoder_in (B, T), and the cache of every step."""
    memory, cache = encode(params, source, h)
    T = decoder_in.shape[1]
    y = params["E"][decoder_in] + params["P_dec"][:T]  # (B, T, C)
    y2, parts = decoder_block(params, y, memory, cache["mask"], h)
    yf = layer_norm(y2, params["lnf_gamma"], params["lnf_beta"])
    cache.update(decoder_in=decoder_in, y=y, **parts, y2=y2, yf=yf)
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


TRAIN_STEPS = demo_size(full=400, small=100)
cpu_start = time.process_time()
params = train_model(TRAIN_STEPS)
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
# The loss ends within a few hundredths of a nat of the task's entropy (0.57 against 0.56), and the
# model has learnt the split: $P(\texttt{M})$ averages 0.60 at a chunk's first token. Not at every
# chunk (the estimate varies from context to context, as a model's does), but at 93% of them
# greedy decoding writes `M`.
#
# ### Sampling from the model: quality against diversity
#
# `sample_decode` runs Lesson 13's decoding loop with your `sample_tokens` in place of the argmax:
# the keys and values of the sources once, then one `decoder_step` per position for the whole batch,
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
SAMPLING_SEEDS = demo_size(full=5, small=1)  # generators per setting
sources = np.repeat(held_out[0][:N_SOURCES], N_SAMPLES, axis=0)  # (2000, S_MAX + 1): each source 10 times
settings_grid = {"greedy (tau = 0)": {"temperature": 0}, "tau = 0.5": {"temperature": 0.5},
                 "tau = 1": {}, "tau = 1.5": {"temperature": 1.5}, "tau = 2.5": {"temperature": 2.5},
                 "tau = 2.5, top-k 4": {"temperature": 2.5, "top_k": 4},
                 "tau = 2.5, top-p 0.8": {"temperature": 2.5, "top_p": 0.8}}
sampling_table = {}
print(f"{N_SOURCES} sources, {N_SAMPLES} samples each, {SAMPLING_SEEDS} generators per setting")
print(f"{'setting':<22} {'quality: mean [range]':>22} {'distinct of 10: mean [range]':>29}")
for name, settings in settings_grid.items():
    quality, diversity = [], []
    for seed in range(SAMPLING_SEEDS):
        outputs = sample_decode(params, sources, np.random.default_rng(seed=seed), **settings)  # (2000, T_MAX)
        quality.append(task_valid(sources, outputs).mean())
        per_source = outputs.reshape(N_SOURCES, N_SAMPLES, T_MAX)
        diversity.append(np.mean([len({tuple(row) for row in group}) for group in per_source]))
    sampling_table[name] = (np.array(quality), np.array(diversity))
    print(f"{name:<22} {np.mean(quality):8.3f} [{min(quality):.3f}, {max(quality):.3f}]"
          f" {np.mean(diversity):12.2f} [{min(diversity):.2f}, {max(diversity):.2f}]")

# %% [markdown]
# *Table: for each setting, the share of valid samples and the number of different outputs among
# a source's 10 samples, mean and range over five generators.*
#
# Greedy decoding is always valid and never varies: one output per source. Raising the
# temperature buys diversity and pays in quality: at $\tau = 1$, the model's own distribution,
# 0.954 of the samples are valid with 7.74 different outputs in 10; at $\tau = 2.5$ only 0.182
# are valid, though 9.57 of 10 differ. The cuts take back part of the price at the same
# temperature: top-$k$ 4 and top-$p$ 0.8 remove the tail of tokens that are never right
# (quality 0.507 and 0.508) and keep most of the diversity (8.75 and 8.64). At $\tau = 0.5$ the
# sharpened distribution is valid in 0.999 or more of the samples and still varies (7.67 in
# 10): after `M` the task makes the three spellings equally likely, and dividing by a temperature
# keeps equal logits equal. The ranges over the five generators are narrow (at most 0.03 in
# quality and 0.23 in distinct outputs) beside the differences between settings.
#
# ## 3. Beam search
#
# Greedy decoding picks the best next token; what a translation wants is the best **sequence**,
# $\arg\max_Y \log P(Y \mid X) = \arg\max_Y \sum_t \log p(y_t \mid y_{<t}, X)$, and on the
# spelling task the two differ. Trying every sequence is out of reach ($V^T$ of them), so **beam
# search** keeps the $k$ best prefixes (the **beam**, of width $k$) and extends only those:
#
# 1. Start with one hypothesis, the empty output (the decoder fed `BOS`), with log-probability 0.
# 2. At each step, run the decoder once on all live hypotheses as a batch, and score every one of
#    them extended by every token: $s(y_{\le t}) = s(y_{<t}) + \log p(y_t \mid y_{<t}, X)$.
# 3. Keep the best of those candidates. A kept candidate that ends with `EOS` is **finished**: it
#    leaves the beam and waits, with its score; the others are the next step's live hypotheses.
# 4. Stop when every hypothesis has finished, or after $T_{\max}$ steps.
#
# Width 1 is greedy decoding. Finished hypotheses must be kept aside, not extended: an output
# that has ended is a candidate answer, and a hypothesis extended after `EOS` is not an output
# at all.
#
# **Length penalty.** Every token multiplies the probability by a number below 1, so summed
# log-probabilities favour short outputs, and a beam that finds an early `EOS` can prefer
# stopping to translating. Google's neural machine translation system (Wu et al., *Google's
# Neural Machine Translation System: Bridging the Gap between Human and Machine Translation*,
# 2016, arXiv:1609.08144, section 7) divides the log-probability of each finished output $Y$ by
#
# $$\text{lp}(Y) = \Big(\frac{5 + |Y|}{6}\Big)^{\alpha}, \qquad \text{score}(Y) = \frac{\log P(Y \mid X)}{\text{lp}(Y)},$$
#
# with $|Y|$ its length in tokens and $\alpha$ between 0 (no penalty) and about 1 (the paper
# tuned $\alpha = 0.2$ with its coverage penalty; other systems use $\alpha = 0.6$ to 1). Since
# $\log P < 0$, a larger divisor for a longer output raises its score. This lesson uses
# $\text{lp}$ only to choose among the finished hypotheses; the beam itself is pruned by the
# summed log-probability.
#
# ### Exercise 3: beam search with a length penalty (5 points)
#
# Write `beam_search(params, cross_kv, source_valid, beam_width, alpha=0.0, max_len=T_MAX)` for
# one source:
#
# - `params`: the decoder's parameters (as `decoder_params` returns); `cross_kv`: the
#   cross-attention keys and values of the source, a pair of arrays `(1, h, S, hs)`, computed once by
#   the caller;
#   `source_valid`: bool `(1, S)`. The vocabulary size is `params["U"].shape[1]`, at least
#   `beam_width`; `BOS`, `EOS` are the lesson's 1 and 2.
# - Run the live hypotheses through the given `decoder_step` as one batch: row $r$ of the batch
#   is hypothesis $r$, fed its last token (`BOS` at the first step), with its own self-attention
#   cache, and the one source's `cross_kv` and `source_valid` repeated once per row. Never
#   recompute the keys and values of the source.
# - Log-probabilities: the log of the softmax of each row's logits.
# - There are `beam_width` hypotheses in all. At each step, keep the best
#   `beam_width - (finished so far)` candidates among (live hypothesis, token), by summed
#   log-probability. A kept candidate whose token is `EOS` is finished, with its length $|Y|$
#   (tokens written, the `EOS` included); the others are live, and each carries its parent's
#   cache with the new row.
# - Stop when no hypothesis is live, or after `max_len` steps: hypotheses still live then count
#   as finished as they are (without `EOS`).
# - Return `(tokens, log_prob, score)` of the finished hypothesis with the highest
#   $\text{score} = \log P / ((5 + |Y|)/6)^{\alpha}$: `tokens` an int array `(|Y|,)` (without
#   `BOS`), `log_prob` its summed log-probability, `score` as a float.
#
# Ties between equal scores do not occur with real-valued logits; you need not break them.

# %%
def sequence_log_prob(params, cross_kv, source_valid, tokens):
    """log P(tokens | source) under the model, teacher-forced through decoder_step: tokens (T,) -> float."""
    h, hs = cross_kv[0].shape[1], cross_kv[0].shape[3]
    cache = (np.zeros((1, h, 0, hs)), np.zeros((1, h, 0, hs)))
    fed, total = BOS, 0.0
    for token in tokens:
        logits, cache = decoder_step(params, np.array([fed]), cache, cross_kv, source_valid)  # (1, V)
        total += float(np.log(softmax(logits[0]))[token])
        fed = token
    return total


def random_decoder(seed, vocab=7, width=8, h=2, t_max=6, S=3):
    """An untrained decoder (its parameters as decoder_params gives them) and a random source's cross_kv, valid."""
    rng_ = np.random.default_rng(seed=seed)
    dec = {"E": rng_.standard_normal((vocab, width)), "P_dec": rng_.standard_normal((t_max, width))}
    for norm in ("dec.ln1", "dec.ln2", "lnf"):
        dec[norm + "_gamma"], dec[norm + "_beta"] = 1 + 0.3 * rng_.standard_normal(width), 0.3 * rng_.standard_normal(width)
    for name in ("dec.Wq", "dec.Wk", "dec.Wv", "dec.Wo", "dec.cross_Wq", "dec.cross_Wo"):
        dec[name] = rng_.standard_normal((width, width)) / np.sqrt(width)
    dec["U"] = 2 * rng_.standard_normal((width, vocab)) / np.sqrt(width)
    kv = tuple(rng_.standard_normal((1, h, S, width // h)) for _ in range(2))  # (1, h, S, hs) each
    return dec, kv, np.array([[True] * (S - 1) + [False]])  # the last source position is padding


# %% nbgrader={"grade": false, "grade_id": "beam_search", "locked": false, "schema_version": 3, "solution": true, "task": false}
def beam_search(params, cross_kv, source_valid, beam_width, alpha=0.0, max_len=T_MAX):
    """Beam search for one source (cross_kv each (1, h, S, hs)): (tokens (|Y|,), log_prob, score)."""
    ### BEGIN SOLUTION
    K_cross, V_cross = cross_kv
    h, hs = K_cross.shape[1], K_cross.shape[3]
    vocab = params["U"].shape[1]
    live = [([], 0.0)]  # (tokens written, summed log-probability), best first
    cache = (np.zeros((1, h, 0, hs)), np.zeros((1, h, 0, hs)))  # (n_live, h, t, hs) each
    finished = []  # (tokens, log_prob), in the order they finished
    for _ in range(max_len):
        n = len(live)
        fed = np.array([tokens[-1] if tokens else BOS for tokens, _ in live])  # (n,)
        repeat = (np.repeat(K_cross, n, axis=0), np.repeat(V_cross, n, axis=0))  # (n, h, S, hs) each
        logits, cache = decoder_step(params, fed, cache, repeat, np.repeat(source_valid, n, axis=0))  # (n, V)
        shifted = logits - logits.max(axis=1, keepdims=True)  # (n, V): log-softmax, stably
        log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))  # (n, V)
        scores = np.array([s for _, s in live])[:, None] + log_p  # (n, V): every extension
        best = np.argsort(-scores, axis=None, kind="stable")[:beam_width - len(finished)]  # flat indices
        parents, next_tokens = best // vocab, best % vocab
        survivors = []
        for parent, token in zip(parents, next_tokens, strict=True):
            hypothesis = (live[parent][0] + [int(token)], float(scores[parent, token]))
            if token == EOS:
                finished.append(hypothesis)
            else:
                survivors.append((hypothesis, parent))
        if not survivors:
            live = []
            break
        live = [hyp for hyp, _ in survivors]
        rows = np.array([parent for _, parent in survivors])
        cache = (cache[0][rows], cache[1][rows])  # each survivor takes its parent's cache
    finished += live  # still live after max_len steps: finished as they are

    def penalised(hypothesis):
        return hypothesis[1] / ((5 + len(hypothesis[0])) / 6) ** alpha

    tokens, log_prob = max(finished, key=penalised)
    return np.array(tokens, dtype=int), log_prob, float(penalised((tokens, log_prob)))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_beam_search", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
def check_beam_search(seed, beam_width, alpha, max_len, expected_tokens, expected_log_prob):
    """Visible check on an untrained decoder: the stored answer, its log-probability and score, and the batching."""
    dec, kv, valid = random_decoder(seed=seed)
    calls = []
    given_step = decoder_step

    def counting_step(params_, tokens, cache, cross_kv_, source_valid_):
        calls.append(len(tokens))
        return given_step(params_, tokens, cache, cross_kv_, source_valid_)

    globals()["decoder_step"] = counting_step
    try:
        result = beam_search(dec, kv, valid, beam_width, alpha=alpha, max_len=max_len)
    finally:
        globals()["decoder_step"] = given_step
    what = f"seed {seed}, width {beam_width}, alpha {alpha}, max_len {max_len}"
    assert isinstance(result, tuple) and len(result) == 3, f"{what}: return a triple (tokens, log_prob, score)"
    tokens, log_prob, score = result
    tokens = np.asarray(tokens)
    assert len(calls) <= max_len and max(calls) <= beam_width, (
        f"{what}: call decoder_step once per step on all live hypotheses together (calls with batch sizes {calls})")
    assert np.isclose(log_prob, sequence_log_prob(dec, kv, valid, tokens)), (
        f"{what}: log_prob should be the summed log-probability of the tokens returned")
    assert np.isclose(score, log_prob / ((5 + len(tokens)) / 6) ** alpha), (
        f"{what}: score should be log_prob / ((5 + |Y|) / 6) ** alpha, with |Y| the tokens written (EOS included)")
    assert tokens.tolist() == expected_tokens, (
        f"{what}: returned {tokens.tolist()} (log-probability {log_prob:.4f}), expected {expected_tokens} "
        f"({expected_log_prob:.4f}). Keep beam_width hypotheses in all: finished ones leave the beam and are not "
        "extended; prune by summed log-probability; choose among the finished by the penalised score")


check_beam_search(0, 1, 0.0, 6, [6, 0, 0, 4, 1, 4], -5.5920)  # width 1 is greedy; no EOS within 6 steps
check_beam_search(0, 2, 0.0, 6, [5, 2], -1.4590)
check_beam_search(1, 4, 0.0, 6, [2], -3.0685)  # EOS at once: the shortest output has the best summed log-probability
check_beam_search(1, 4, 1.0, 6, [3, 4, 4, 6, 5, 0], -3.5895)  # the length penalty prefers a longer one
check_beam_search(5, 3, 0.0, 6, [0, 2], -2.0539)
check_beam_search(5, 5, 0.0, 3, [0, 1, 0], -0.6169)  # max_len 3: the live hypotheses count as finished
print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Greedy against beams of width 2, 4 and 8
#
# On 200 held-out sources, each way of decoding gives one output per source. Four measures: the
# model's log-probability of the output (what beam search maximises), the task's own
# log-probability of it (what the data say), the share of outputs that are the task's most
# probable one (every chunk plain), and the share of valid outputs. Each source's keys and values
# are computed once per source, whatever the width.

# %%
def most_probable_output(source):
    """The task's most probable output for a source (S_MAX + 1,): every word plain, then EOS."""
    words = source[:np.flatnonzero(source == EOS)[0]]
    return np.concatenate([np.repeat(words, 2), [EOS]])


N_BEAM_SOURCES = demo_size(full=200, small=20)
beam_sources = held_out[0][:N_BEAM_SOURCES]  # (N_BEAM_SOURCES, S_MAX + 1)
step_params = decoder_params(params)
memories, _ = encode(params, beam_sources, H)  # (N_BEAM_SOURCES, S, C): the encoder runs once per source
all_cross_kv = cross_keys_values(params, memories, H)  # (N_BEAM_SOURCES, h, S, hs) each: once per source
beam_results = {}
for width in [1, 2, 4, 8]:
    outputs = [beam_search(step_params, (all_cross_kv[0][i:i + 1], all_cross_kv[1][i:i + 1]),
                           beam_sources[i:i + 1] != PAD, width) for i in range(N_BEAM_SOURCES)]
    beam_results[width] = outputs
    model_lp = np.mean([log_prob for _, log_prob, _ in outputs])
    task_lp = np.array([task_log_prob(s, tokens) for s, (tokens, _, _) in zip(beam_sources, outputs, strict=True)])
    mode = np.mean([np.array_equal(tokens, most_probable_output(s))
                    for s, (tokens, _, _) in zip(beam_sources, outputs, strict=True)])
    name = "greedy (width 1)" if width == 1 else f"beam, width {width}"
    print(f"{name:<17} model log P {model_lp:6.2f}   task log P {task_lp[np.isfinite(task_lp)].mean():6.2f}   "
          f"the most probable output {mode:.3f}   valid {np.isfinite(task_lp).mean():.3f}")
print(f"the task's most probable outputs ({N_BEAM_SOURCES} sources): task log P {np.mean([task_log_prob(s, most_probable_output(s)) for s in beam_sources]):6.2f}")

# %% [markdown]
# Greedy decoding writes the task's most probable output for none of the 200 sources: it takes
# `M` wherever the model gives it more than one half. Beams find it for 0.665 of them at width 2,
# 0.825 at width 4 and 0.850 at width 8, and the mean log-probability of the output rises with the
# width, in the model's terms (from $-3.76$ to $-2.63$, $-2.45$ and $-2.41$) and in the task's (from
# $-4.01$ to $-2.44$, against $-2.33$ for the most probable outputs). Every output is valid.
#
# Why not 1.000 at width 8? Beam search maximises the **model's** probability, and the model is
# not the task. Where the widest beam's output is not the task's most probable one, compare the
# model's log-probability of the two:

# %%
misses = [i for i in range(N_BEAM_SOURCES) if not np.array_equal(beam_results[8][i][0], most_probable_output(beam_sources[i]))]
model_prefers = sum(
    beam_results[8][i][1] > sequence_log_prob(step_params, (all_cross_kv[0][i:i + 1], all_cross_kv[1][i:i + 1]),
                                              beam_sources[i:i + 1] != PAD, most_probable_output(beam_sources[i]))
    for i in misses)
print(f"width 8 misses the task's most probable output for {len(misses)} sources; for {model_prefers} of them the "
      "model gives its own output the higher log-probability")

# %% [markdown]
# For 26 of the 30 sources where width 8 misses the task's most probable output, the model gives
# its own output the higher log-probability: those are the model's errors, not the search's (in
# those contexts it gives `M` more than the task's 0.6). The other 4 are search errors: the model
# prefers the task's output, and it fell out of a beam of 8. A better model would close most of
# the gap; a wider beam only the rest.
#
# One source where greedy decoding and the beam differ, with the model's log-probability of each
# step:

# %%
def show_steps(source, tokens):
    """The tokens of an output and the model's log-probability of each, teacher-forced."""
    i = int(np.flatnonzero((beam_sources == source).all(axis=1))[0])
    kv = (all_cross_kv[0][i:i + 1], all_cross_kv[1][i:i + 1])
    steps = [sequence_log_prob(step_params, kv, source[None] != PAD, tokens[:t + 1]) for t in range(len(tokens))]
    return "  ".join(f"{tok}({lp - prev:+.2f})" for tok, lp, prev in zip(tokens, steps, [0.0] + steps[:-1], strict=True))


differ = [i for i in range(N_BEAM_SOURCES) if not np.array_equal(beam_results[1][i][0], beam_results[4][i][0])]
case = differ[0]
case_source = beam_sources[case]
print("source:", case_source[:np.flatnonzero(case_source == EOS)[0] + 1])
for width in [1, 4]:
    tokens, log_prob, _ = beam_results[width][case]
    print(f"{'greedy ' if width == 1 else 'beam 4 '}: {show_steps(case_source, tokens)}   total {log_prob:.2f}")
print(f"sources where width 4's output differs from greedy's: {len(differ)} of {N_BEAM_SOURCES}")

# %% [markdown]
# Read the first chunk: greedy takes `M` (9, log-probability $-0.45$) over the plain word (4,
# $-1.04$), and then pays for the choice among three spellings ($-1.00$): $-1.45$ for the chunk.
# The beam kept the plain word too, whose second token is nearly certain ($-0.01$): $-1.05$. The
# second chunk goes the same way. At the third the beam's output is marked too ($-0.30$, then
# $-1.11$), and at the fourth plain again: in total $-4.10$ against greedy's $-5.84$.
#
# ### The length penalty at work
#
# On the spelling task every valid output for a source has the same length, $2S + 1$, so the
# length penalty cannot change the choice among them. It does where outputs end at any length:
# on 200 untrained decoders (`random_decoder(0 .. 199)` of the visible checks, 7 tokens, where
# `EOS` is as likely as any other token), beams of width 4 with $T_{\max} = 6$ steps:

# %%
N_RANDOM_DECODERS = demo_size(full=200, small=20)
for alpha in [0.0, 0.6, 1.0, 2.0]:
    found = [beam_search(*random_decoder(seed=seed), 4, alpha=alpha, max_len=6) for seed in range(N_RANDOM_DECODERS)]
    lengths = np.array([len(tokens) for tokens, _, _ in found])
    print(f"alpha = {alpha}, {N_RANDOM_DECODERS} decoders: mean output length {lengths.mean():.2f}, outputs of one token (EOS at once) "
          f"{np.mean(lengths == 1):.3f}, mean log P {np.mean([lp for _, lp, _ in found]):.2f}")

# %% [markdown]
# *The length penalty at work: as $\alpha$ grows, fewer outputs stop at once and the mean length
# grows, while the mean summed log-probability falls, because longer outputs multiply more
# probabilities. That is the trade a length penalty makes: it gives up some probability for
# length, which helps a model that puts too much probability on ending early.*
#
# ## 4. Speculative decoding
#
# Each step of decoding runs the whole large model for one token. The premise of **speculative
# decoding** is that on the accelerators that serve large models, such a step is limited by
# reading the weights from memory, not by arithmetic, so that scoring $\gamma + 1$ positions in one
# pass costs about as much as scoring one (this lesson does not measure that; section 5 counts
# passes). Speculative decoding (Leviathan, Kalman and
# Matias, *Fast Inference from Transformers via Speculative Decoding*, 2023, arXiv:2211.17192;
# Chen, Borgeaud, Irving, Lespiau, Sifre and Jumper, *Accelerating Large Language Model Decoding
# with Speculative Sampling*, 2023, arXiv:2302.01318) uses that:
#
# 1. a small **draft** model $q$ proposes $\gamma$ tokens $x_1 \dots x_\gamma$, one after the other,
#    each drawn from $q_i = q(\cdot \mid \text{prefix}, x_{<i})$;
# 2. the large **target** model $p$ scores the prefix and all $\gamma$ drafts in **one pass**, giving
#    $p_i = p(\cdot \mid \text{prefix}, x_{<i})$ for $i = 1 \dots \gamma + 1$;
# 3. draft $x_i$ is accepted with probability $\min\big(1, p_i(x_i)/q_i(x_i)\big)$, in order; at the
#    first rejection, a token is drawn from the **residual** distribution
#
#    $$r_i(x) = \frac{\max\big(0,\ p_i(x) - q_i(x)\big)}{\sum_y \max\big(0,\ p_i(y) - q_i(y)\big)}$$
#
#    and the step ends; if all $\gamma$ are accepted, a **bonus** token is drawn from $p_{\gamma+1}$,
#    which the pass computed anyway.
#
# Every pass of the target therefore yields between 1 and $\gamma + 1$ tokens.
#
# ### Why the output has exactly the target's distribution
#
# Take one position, with target $p$ and draft $q$ (drop the index $i$). The token that comes out
# is $x$ in two ways: the draft proposed $x$ and it was accepted, or some proposal was rejected
# and the residual drew $x$:
#
# $$P(\text{out} = x) = q(x)\,\min\Big(1, \frac{p(x)}{q(x)}\Big) + P(\text{reject})\; r(x)
#   = \min\big(p(x), q(x)\big) + P(\text{reject})\; r(x).$$
#
# The probability of a rejection is one minus the probability of an acceptance,
#
# $$P(\text{reject}) = 1 - \sum_y \min\big(p(y), q(y)\big) = \sum_y \Big(p(y) - \min\big(p(y), q(y)\big)\Big)
#   = \sum_y \max\big(0,\ p(y) - q(y)\big),$$
#
# using $\sum_y p(y) = 1$ and $p - \min(p, q) = \max(0, p - q)$. That is exactly the residual's
# normaliser, so the two cancel:
#
# $$P(\text{out} = x) = \min\big(p(x), q(x)\big) + \max\big(0,\ p(x) - q(x)\big) = p(x).$$
#
# For the whole sequence, argue position by position. The first token is distributed as $p_1$,
# just shown. Given that it was an accepted draft, the second draft was drawn from $q_2$ in the
# same context as $p_2$, and the same argument makes the second token $p_2$-distributed; and so on
# until a rejection, whose residual token is the last of the step and is $p_i$-distributed too.
# If all $\gamma$ drafts are accepted, the bonus token is drawn from $p_{\gamma+1}$ directly. The
# next step starts from the tokens that came out, so every token of the output is drawn from the
# target's conditional distribution given all the tokens before it: the output is a sample from
# the target, **whatever the draft**. A bad draft costs speed, never correctness. (The draft
# must only give a positive probability to the tokens it proposes, which it does by drawing
# them.)
#
# **How fast.** A draft at one position is accepted with probability
# $\beta = \sum_x \min(p(x), q(x)) = 1 - \text{TV}(p, q)$. If every position had the same
# acceptance rate $\alpha$, independently, a pass would give $1 + \alpha + \dots + \alpha^\gamma$
# tokens on average (the first is always there; the $i$-th extra needs $i$ acceptances):
#
# $$\mathbb{E}[\text{tokens per target pass}] = \frac{1 - \alpha^{\gamma + 1}}{1 - \alpha}$$
#
# (Leviathan et al., equation 1). It grows with $\gamma$ but saturates at $1/(1 - \alpha)$; each
# draft token costs a pass of the draft model, so the best $\gamma$ depends on the draft's cost too.
#
# ### Exercise 4: the accept/reject step (4 points)
#
# Write `speculative_step(p, q, draft, rng)`:
#
# - `draft`: int array `(γ,)` of the drafted tokens, $\gamma \ge 1$; `q`: `(γ, V)`, row $i$ the
#   draft's distribution that `draft[i]` was drawn from; `p`: `(γ + 1, V)`, row $i$ the target's
#   distribution at the same position, and row $\gamma$ the target's distribution after all
#   $\gamma$ drafts;
# - for $i = 0, 1, \dots$: draw `r = rng.random()` and accept `draft[i]` if
#   `r < p[i, x] / q[i, x]` (that is, with probability $\min(1, p/q)$); at the first rejection draw
#   `u = rng.random()` and return the accepted tokens followed by the residual's token;
# - if all $\gamma$ are accepted, draw `u = rng.random()` and return the drafts followed by the
#   bonus token from `p[γ]`;
# - a token is drawn from a distribution with `u` by the given `inverse_cdf(probs, u)`: the first
#   token id, in the order 0, 1, …, at which the cumulative probability exceeds `u`. The residual
#   must be normalised first.
#
# Return an int array of the new tokens, of length 1 to $\gamma + 1$. Use `rng` for nothing else:
# one `rng.random()` per draft examined and one for the last token. Do not modify the inputs.

# %%
def inverse_cdf(probs, u):
    """The first token id whose cumulative probability (ids 0, 1, ... in order) exceeds u: probs (V,) summing to 1."""
    return int(min(np.searchsorted(np.cumsum(probs), u, side="right"), len(probs) - 1))


# %% nbgrader={"grade": false, "grade_id": "speculative_step", "locked": false, "schema_version": 3, "solution": true, "task": false}
def speculative_step(p, q, draft, rng):
    """Accept or reject gamma drafts: p (gamma + 1, V), q (gamma, V), draft (gamma,) -> new tokens (1 .. gamma + 1,)."""
    ### BEGIN SOLUTION
    out = []
    for i, x in enumerate(draft):
        if rng.random() < p[i, x] / q[i, x]:  # accepted with probability min(1, p / q)
            out.append(int(x))
            continue
        residual = np.maximum(p[i] - q[i], 0.0)  # (V,)
        out.append(inverse_cdf(residual / residual.sum(), rng.random()))
        return np.array(out, dtype=int)
    out.append(inverse_cdf(p[len(draft)], rng.random()))  # all accepted: the bonus token
    return np.array(out, dtype=int)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_speculative_step", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
def check_speculative_step(p, q, draft, seed, expected, draws, what):
    """Visible check of one step: the tokens, and how many numbers it drew from the generator."""
    p, q, draft = np.asarray(p, dtype=float), np.asarray(q, dtype=float), np.asarray(draft)
    kept = p.copy(), q.copy(), draft.copy()
    rng_ = np.random.default_rng(seed=seed)
    got = np.asarray(speculative_step(p, q, draft, rng_))
    assert all(np.array_equal(a, b) for a, b in zip((p, q, draft), kept, strict=True)), f"{what}: inputs modified"
    twin = np.random.default_rng(seed=seed)
    twin.random(draws)
    assert got.tolist() == expected, (
        f"{what}: returned {got.tolist()}, expected {expected}. Accept draft i if r < p[i, x] / q[i, x]; at the "
        "first rejection draw from max(0, p[i] - q[i]), normalised; after all gamma, a bonus token from p[gamma]")
    assert rng_.bit_generator.state == twin.bit_generator.state, (
        f"{what}: expected {draws} calls of rng.random(): one per draft examined, one for the last token")


p_check = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [0.1, 0.1, 0.8]])  # (gamma + 1, V), gamma = 2
q_check = np.array([[0.2, 0.6, 0.2], [0.5, 0.25, 0.25]])  # (gamma, V)
# default_rng(0).random(3) = [0.637, 0.270, 0.041]: 0.637 > 0.3 / 0.6 rejects token 1; the residual
# max(0, p - q) = [0.4, 0, 0] gives token 0.
check_speculative_step(p_check, q_check, [1, 0], 0, [0], 2, "the first draft rejected")
# Token 0 accepted (0.6 / 0.2 > 1), token 2 accepted (0.270 < 0.6 / 0.25), bonus from p[2] with 0.041: token 0.
check_speculative_step(p_check, q_check, [0, 2], 0, [0, 2, 0], 3, "both accepted, then the bonus token")
# default_rng(5).random(3) = [0.805, 0.808, 0.515]: token 0 accepted, then 0.808 > 0.2 / 0.5 rejects token 0;
# the residual is [0, 0, 0.35] before normalising: token 2.
check_speculative_step(p_check, q_check, [0, 0], 5, [0, 2], 3, "the second draft rejected")
# default_rng(1).random(3) = [0.512, 0.950, 0.144]: the residual [0, 0.1, 0.2] normalised is [0, 1/3, 2/3]:
# 0.144 falls on token 1 (it would fall on token 2 of the unnormalised [0, 0.1, 0.2]).
check_speculative_step(p_check, [[0.2, 0.6, 0.2], [0.5, 0.1, 0.4]], [0, 0], 1, [0, 1], 3,
                       "a residual that needs normalising")
check_speculative_step(p_check[1:], q_check[1:], [2], 0, [2, 2], 2, "gamma = 1, accepted, then the bonus")
print("Exercise 4 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### A target and three drafts
#
# Speculative decoding is exact for any pair of models, so it can be checked where the target's
# distribution is known exactly: a **bigram** target over $V = 8$ tokens, whose next-token
# distribution depends on the last token only, $p(\cdot \mid c) = P[c]$, with $P$ a fixed
# `(V, V)` table of random rows. The drafts are cheaper guesses of it, $Q_\lambda = (1 - \lambda) P +
# \lambda\, \bar p$, where $\bar p$ is the target's long-run frequency of each token, the same row for
# every context: $\lambda = 1$ is a draft that ignores the context altogether (a unigram model),
# $\lambda = 0.2$ one that is nearly the target. One target pass takes the rows $P[c]$ of the
# last token and of the $\gamma$ drafts at once, a `(γ + 1, V)` array, as a transformer's pass
# over $\gamma + 1$ positions does.
#
# Each draft's acceptance rate, averaged over the contexts in the proportions the target visits
# them (its stationary distribution $\pi$), is
# $\alpha = \sum_c \pi_c \sum_x \min(P[c, x], Q_\lambda[c, x])$.

# %%
V_BI = 8
bigram_rng = np.random.default_rng(16)
P_target = softmax(1.5 * bigram_rng.standard_normal((V_BI, V_BI)))  # (V, V): row c is p(. | c)
stationary = np.linalg.matrix_power(P_target, 256)[0]  # (V,): every row of P^n tends to pi, with pi P = pi
drafts = {lam: (1 - lam) * P_target + lam * stationary[None, :] for lam in [0.2, 0.5, 1.0]}  # (V, V) each
acceptance = {lam: float(stationary @ np.minimum(P_target, Q).sum(axis=1)) for lam, Q in drafts.items()}
for lam, alpha in acceptance.items():
    print(f"draft lambda = {lam}: acceptance rate alpha = {alpha:.3f}")


def speculative_generate(P, Q, start, n_tokens, gamma, rng):
    """Speculative decoding of a bigram target P with a bigram draft Q from a start token: (tokens (n,), passes)."""
    tokens, passes = [start], 0
    while len(tokens) <= n_tokens:
        context, draft, q_rows = tokens[-1], [], []
        for _ in range(gamma):  # the draft model: gamma cheap steps
            q_rows.append(Q[context])
            context = inverse_cdf(Q[context], rng.random())
            draft.append(context)
        p_rows = P[[tokens[-1], *draft]]  # (gamma + 1, V): ONE pass of the target over gamma + 1 positions
        passes += 1
        tokens.extend(int(t) for t in speculative_step(p_rows, np.array(q_rows), np.array(draft), rng))
    return np.array(tokens[1:n_tokens + 1]), passes


def target_generate(P, start, n_tokens, rng):
    """Plain sampling from the target, one pass per token: tokens (n,)."""
    tokens = [start]
    for _ in range(n_tokens):
        tokens.append(inverse_cdf(P[tokens[-1]], rng.random()))
    return np.array(tokens[1:])


# %% [markdown]
# ### The output distribution, checked
#
# From the start token 0, the target's first token is distributed as $P[0]$ and the first pair
# $(a, b)$ as $P[0, a]\,P[a, b]$, 64 pairs. Speculative decoding with the context-blind draft
# ($\lambda = 1$, the most rejections, so the residual does the most work) and $\gamma = 4$ runs
# 10,000 times, and your `sampler_check` compares its first tokens and pairs with those exact
# distributions; the total variation distance is shown beside its expected size from noise.
# Two controls: the draft's own tokens, all accepted (what a broken accept step converges to),
# and plain sampling from the target, which must pass.

# %%
N_RUNS = demo_size(full=10_000, small=1_000)
spec_rng = np.random.default_rng(2023)
runs = np.array([speculative_generate(P_target, drafts[1.0], 0, 2, 4, spec_rng)[0] for _ in range(N_RUNS)])  # (N, 2)
plain_rng = np.random.default_rng(2024)
plain = np.array([target_generate(P_target, 0, 2, plain_rng) for _ in range(N_RUNS)])  # (N, 2)
draft_rng = np.random.default_rng(2025)
draft_only = np.array([target_generate(drafts[1.0], 0, 2, draft_rng) for _ in range(N_RUNS)])  # (N, 2)
first_target = P_target[0]  # (V,)
pair_target = (P_target[0][:, None] * P_target).reshape(-1)  # (V * V,): P[0, a] P[a, b] at index a * V + b
print(f"{N_RUNS:,} runs of each")
print(f"{'':<34} {'X^2':>8} {'threshold':>9} {'passed':>6} {'TV':>6} {'noise TV':>8}")
for name, sample in [("speculative, first token", runs[:, 0]), ("speculative, first pair", runs[:, 0] * V_BI + runs[:, 1]),
                     ("control: target sampling, pair", plain[:, 0] * V_BI + plain[:, 1]),
                     ("control: draft accepted, pair", draft_only[:, 0] * V_BI + draft_only[:, 1])]:
    target = first_target if "token" in name else pair_target
    statistic, threshold, passed = sampler_check(sample, target)
    print(f"{name:<34} {statistic:8.1f} {threshold:9.1f} {passed!s:>6} {tv_distance(sample, target):6.3f} "
          f"{expected_tv(target, N_RUNS):8.3f}")

fig, ax = plt.subplots(figsize=(8, 3.4))
width_bar = 0.27
freq = {name: np.bincount(s, minlength=V_BI) / N_RUNS for name, s in
        [("speculative decoding", runs[:, 0]), ("the draft alone", draft_only[:, 0])]}
_ = ax.bar(np.arange(V_BI) - width_bar, first_target, width_bar, color="tab:grey", label="target P[0] (exact)")
_ = ax.bar(np.arange(V_BI), freq["speculative decoding"], width_bar, color="tab:blue",
           label=f"speculative decoding, {N_RUNS:,} runs")
_ = ax.bar(np.arange(V_BI) + width_bar, freq["the draft alone"], width_bar, color="tab:orange",
           label=f"the draft alone, {N_RUNS:,} runs")
ax.set_xlabel("first token")
ax.set_ylabel("probability / frequency")
ax.set_xticks(range(V_BI))
ax.set_title("First token after token 0: speculative decoding follows the target, not the draft")
ax.legend()
plt.show()

# %% [markdown]
# *Figure: the exact target distribution of the first token (grey), the frequencies of 10,000
# speculative runs with the context-blind draft (blue), and of the draft alone (orange). Blue
# follows grey, though every accepted token in blue was first proposed by the orange draft.*
#
# Speculative decoding passes for the first token ($X^2 = 3.5$ against a threshold of 33.2) and for
# the first pair (60.8 against 118.4, on 63 degrees of freedom), with total variations of 0.006
# and 0.023, at the size that noise alone predicts (0.009 and 0.023); plain sampling from the
# target, the positive control, gives the same picture (40.8, 0.019). The draft alone, what an
# accept step that accepted everything would give, fails at more than a thousand times the threshold
# ($X^2 = 174{,}886$, a total variation of 0.541).
#
# ### Tokens per target pass, against $\gamma$ and $\alpha$
#
# For each draft and $\gamma = 1 \dots 8$, one run of 2,000 tokens from token 0 counts its target
# passes; the measured tokens per pass are shown beside the formula
# $(1 - \alpha^{\gamma+1})/(1 - \alpha)$ with each draft's $\alpha$ from above.

# %%
gammas = [1, 2, 3, 4, 6, 8]
N_LONG = demo_size(full=2_000, small=200)
per_pass = {}
print(f"tokens per target pass over {N_LONG:,} tokens, measured (formula)")
print(f"{'draft':<14} {'alpha':>6} " + " ".join(f"{'g = ' + str(g):>13}" for g in gammas))
for lam, Q in drafts.items():
    alpha = acceptance[lam]
    measured = [N_LONG / speculative_generate(P_target, Q, 0, N_LONG, g, np.random.default_rng(100 + g))[1]
                for g in gammas]
    per_pass[lam] = measured
    print(f"lambda = {lam:<5} {alpha:6.3f} " + " ".join(
        f"{m:5.2f} ({(1 - alpha ** (g + 1)) / (1 - alpha):5.2f})" for m, g in zip(measured, gammas, strict=True)))

fig, ax = plt.subplots(figsize=(6.5, 4))
for (lam, measured), colour in zip(per_pass.items(), ["tab:green", "tab:blue", "tab:orange"], strict=True):
    alpha = acceptance[lam]
    g_line = np.arange(1, 9)
    _ = ax.plot(g_line, (1 - alpha ** (g_line + 1)) / (1 - alpha), "-", color=colour,
                label=f"formula, alpha = {alpha:.2f} (lambda = {lam})")
    _ = ax.plot(gammas, measured, "o", color=colour, label=f"measured, lambda = {lam}")
ax.set_xlabel("draft length gamma")
ax.set_ylabel("tokens per target pass")
ax.set_title("Speculative decoding: tokens per pass of the target, measured and predicted")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# *Figure: tokens per target pass against the draft length $\gamma$, for the three drafts: the
# lines are the formula with each draft's $\alpha$, the dots one measured run each.*
#
# The measurements follow the formula to within a few hundredths at small $\gamma$. The formula
# assumes the same acceptance rate at every position; here $\beta$ differs from context to
# context, and long drafts run through several contexts, so at $\gamma = 8$ the near-target draft
# gives 6.25 tokens per pass against the formula's 6.50. The shape is the lesson: the gain grows
# with $\gamma$ and saturates at $1/(1 - \alpha)$, 2.38 for the context-blind draft
# ($\alpha = 0.580$) and 11.9 for the near-target one ($\alpha = 0.916$). The output
# distribution is the target's in every case (the check above); only the speed depends on the
# draft.
#
# ## 5. What each way of decoding costs
#
# Count, for each method, the passes of the large model per token of output and the positions it
# scores per token (a pass over $n$ rows of a batch or $n$ positions scores $n$). Greedy decoding,
# sampling and beam search are counted on the trained encoder–decoder over 50 of the held-out
# sources, by wrapping `decoder_step` in a counter; speculative decoding on the bigram target,
# from the runs above, where each pass scores $\gamma + 1$ positions and the draft runs $\gamma$
# times per pass.

# %%
counter = {"passes": 0, "rows": 0}
plain_step = decoder_step


def counted_step(params_, tokens, cache, cross_kv_, source_valid_):
    """decoder_step, counting its calls (passes of the model) and their rows (positions scored)."""
    counter["passes"] += 1
    counter["rows"] += len(tokens)
    return plain_step(params_, tokens, cache, cross_kv_, source_valid_)


def counted(decode):
    """Passes and rows per output token of `decode()`, with decoder_step counted."""
    global decoder_step
    counter.update(passes=0, rows=0)
    decoder_step = counted_step
    try:
        n_tokens = decode()
    finally:
        decoder_step = plain_step
    return counter["passes"] / n_tokens, counter["rows"] / n_tokens


N_COST_SOURCES = demo_size(full=50, small=10)


def one_by_one(width=None, **settings):
    """Decode N_COST_SOURCES sources one at a time (batch 1) by beam search or by sampling; the tokens written."""
    total = 0
    for i in range(N_COST_SOURCES):
        kv, valid = (all_cross_kv[0][i:i + 1], all_cross_kv[1][i:i + 1]), beam_sources[i:i + 1] != PAD
        if width is not None:
            total += len(beam_search(step_params, kv, valid, width)[0])
        else:
            total += int((sample_decode(params, beam_sources[i:i + 1], np.random.default_rng(i), **settings)[0]
                          != PAD).sum())
    return total


costs = {"greedy": counted(lambda: one_by_one(temperature=0)), "sampling, tau = 1": counted(lambda: one_by_one())}
for width in [2, 4, 8]:
    costs[f"beam, width {width}"] = counted(lambda w=width: one_by_one(width=w))
print(f"{N_COST_SOURCES} sources, decoded one at a time")
print(f"{'method':<36} {'target passes/token':>19} {'positions/token':>15} {'draft passes/token':>18}")
for name, (passes, rows) in costs.items():
    print(f"{name:<36} {passes:19.2f} {rows:15.2f} {0:18.2f}")
for lam, gamma in [(0.2, 4), (0.2, 8), (1.0, 4)]:
    tokens_per_pass = per_pass[lam][gammas.index(gamma)]
    print(f"{f'speculative, lambda = {lam}, gamma = {gamma}':<36} {1 / tokens_per_pass:19.2f} "
          f"{(gamma + 1) / tokens_per_pass:15.2f} {gamma / tokens_per_pass:18.2f}")

# %% [markdown]
# Greedy decoding and sampling pay one pass per token, a pass that scores one position. Beam
# search pays about one pass per token too, since all hypotheses go through the model as one
# batch, but each pass scores up to $k$ positions: close to $k$ times the arithmetic. (A little
# less than $k$: finished hypotheses leave the beam, and the first step scores one.) Speculative
# decoding is the only one below one pass per token: 0.24 passes per token with the near-target
# draft at $\gamma = 4$, 0.16 at $\gamma = 8$. It scores more positions per token than greedy
# (1.2 and 1.44: rejected drafts are scored for nothing) and adds the draft's passes; it wins
# when a pass of the large model costs much more than scoring one more position in it, and when
# the draft is much cheaper than the target: the premise of section 4, which Leviathan et al.
# report for models of billions of parameters (2 to 3 times faster for T5-XXL), and which these
# counts do not measure.
#
# ## Time
#
# The CPU time of the training run (it varies with the machine and its load, so it is measured
# here rather than quoted):

# %%
# NBVAL_IGNORE_OUTPUT
print(f"training: {TRAIN_STEPS} steps, CPU {train_cpu:.1f} s")

# %% [markdown]
# ## Summary
#
# **Temperature, top-$k$, top-$p$.** Dividing the logits by $\tau$ keeps the order of the tokens and
# moves the entropy from 0 ($\tau \to 0$, greedy) to $\log V$; top-$k$ keeps a fixed number of tokens,
# top-$p$ the smallest set whose mass reaches $p$, crossing token included. Your sampler applies
# them in that order and draws by the inverse of the cumulative distribution (Exercise 1). On the
# trained model, quality falls and diversity rises with the temperature (0.954 valid and 7.74
# different outputs in 10 at $\tau = 1$, 0.182 and 9.57 at $\tau = 2.5$), and the cuts recover
# part of the quality (0.51 with top-$k$ 4 or top-$p$ 0.8), over five seeds each.
#
# **Testing a sampler.** Pearson's $X^2$ against the Wilson–Hilferty quantile (Exercise 2) passes
# your sampler and rejects a nucleus one token short and a nucleus measured before renormalising,
# at 20,000 draws; the total variation distance of a correct sampler is the size that noise
# predicts, $\sum_i \sqrt{p_i(1-p_i)/2\pi N}$.
#
# **Beam search** (Exercise 3) keeps $k$ hypotheses, prunes by summed log-probability, sets
# finished ones aside, and chooses by GNMT's length-penalised score. On the spelling task greedy
# decoding never finds the most probable output (its mean task log-probability $-4.01$); beams of
# width 2, 4 and 8 find it for 0.665, 0.825 and 0.850 of the sources ($-2.75$, $-2.49$, $-2.44$). The
# length penalty lengthens the outputs of models whose hypotheses end at any length (3.15 tokens
# at $\alpha = 0$, 4.28 at $\alpha = 2$, on 200 untrained decoders).
#
# **Speculative decoding** (Exercise 4) accepts a draft with probability $\min(1, p/q)$ and
# otherwise draws from the normalised $\max(0, p - q)$, and its output is exactly the target's:
# $\min(p, q) + \max(0, p - q) = p$. Over 10,000 runs with a context-blind draft, its first
# tokens and pairs pass the chi-squared test with a total variation at the noise's size, while
# the draft alone fails; tokens per target pass follow $(1 - \alpha^{\gamma+1})/(1 - \alpha)$.
#
# **Cost.** Greedy decoding and sampling: one pass per token. Beam search: one batched pass per
# token, about $k$ times the positions. Speculative decoding: below one pass per token (0.24 at
# $\alpha = 0.92$, $\gamma = 4$), at the price of scored-and-rejected positions and the draft's
# passes.
#
# ## The course, in one page
#
# Sixteen lessons built attention and the models around it from a softmax up, in NumPy, each
# claim measured in its notebook:
#
# 1. **One head**: queries, keys and values, the row-wise softmax and the weighted sum; the
#    overflow and its fix; attention is blind to order.
# 2. **Scaling**: why scores are divided by $\sqrt{d_k}$: variance, saturation, entropy, and the
#    softmax's vanishing gradients.
# 3. **Many heads**: split, attend in 4-D, concatenate; the whole multi-head layer.
# 4. **The output projection**: $W_o$ as a sum over heads, what folds into what, the QK and OV
#    circuits, the $4C^2$ budget.
# 5. **PyTorch** (optional): the same layer as an `nn.Module`, checked against NumPy.
# 6. **Masks**: causal and padding masks, fully masked rows, leakage, and decoding with a KV cache.
# 7. **The backward pass** by hand, through the softmax, checked by finite differences.
# 8. **Positions**: sinusoidal, learned and rotary encodings, and what they do to the scores.
# 9. **Learning**: attention trained with Adam on a task a bag of tokens cannot solve.
# 10. **Cost**: $T^2$ time and memory, the online softmax of fast kernels, the KV-cache bill, MQA
#     and GQA.
# 11. **The transformer block**: residual stream, LayerNorm, the MLP, pre-norm, $12C^2$.
# 12. **An induction head**: a two-layer GPT trained on repeated tokens, its circuit found and proven
#     by ablation.
# 13. **Cross-attention**: an encoder–decoder that learns to reverse, its alignment, its
#     interventions, and decoding with cached source keys and values.
# 14. **Long contexts**: sliding windows with a ring-buffer KV cache, attention sinks, ALiBi and
#     length extrapolation.
# 15. **Cheaper caches**: multi-head latent attention with absorbed matrices, and linear attention
#     as a recurrent state.
# 16. **Decoding**: temperature, top-$k$ and top-$p$ sampling tested against their distributions,
#     beam search with a length penalty, and speculative decoding, exact and counted.
#
# What runs through all of them: attention is a weighted average whose weights come from a
# softmax of scores; everything else (scaling, heads, masks, positions, caches, kernels) is about
# making those weights right, learnable, or cheap, and every model here is a few matrices you
# can write, train and take apart yourself.
#
# To read further on this lesson's subject:
#
# - Holtzman et al., *The Curious Case of Neural Text Degeneration* (2019, arXiv:1904.09751):
#   nucleus sampling, and why the most probable text is often not the best.
# - Wu et al., *Google's Neural Machine Translation System* (2016, arXiv:1609.08144): beam search
#   with the length penalty used here.
# - Leviathan, Kalman and Matias, *Fast Inference from Transformers via Speculative Decoding*
#   (2023, arXiv:2211.17192), and Chen et al., *Accelerating Large Language Model Decoding with
#   Speculative Sampling* (2023, arXiv:2302.01318): the accept/reject step and its proof.
