# ---
# jupyter:
#   jupytext:
#     formats: 05-pytorch-module//ipynb,py:percent
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
# # Lesson 5 (optional extra): The same layer as an `nn.Module`
#
# Lesson 3 built multi-head attention as one NumPy function, `multi_head_attention_forward`. A
# GPT written in PyTorch holds the same layer as an `nn.Module`: an object that owns its weights,
# knows whether it is training or evaluating, and can be stacked, saved and trained. This lesson
# writes that module the way nanoGPT-style code does, in two small files, `config.py` and
# `attention.py`, then runs it, checks it, and proves it is the layer you already know by
# loading your NumPy weights into it.
#
# The idea to hold onto: **the module is Lesson 3's function with the weights moved inside.**
# The only new things are bookkeeping: one fused projection instead of three, PyTorch's
# `(out, in)` weight layout, and dropout that behaves differently in training and evaluation.
#
# **What you'll do**
# - write `GPTConfig` and `MultiHeadAttention` as files and import them;
# - run the laptop checks: shape preserved, exactly $4C^2$ parameters, deterministic in eval
#   mode, every position sees every other position;
# - load Lesson 3's NumPy weights into the module and get the same output, then take them back out
#   (graded);
# - compare the module with PyTorch's `scaled_dot_product_attention`, and time it against NumPy
#   at GPT-2 small size.
#
# **What you'll learn**
# - how the fused `qkv` projection is laid out and split into heads, `(B, T, 3C)` to three `(B, H, T, D)`;
# - why `nn.Linear` stores $W^\top$, and how a silent layout mistake looks;
# - what `train()` and `eval()` change, and what the parameter budget of a block is.
#
# **What you'll need**
# - Lesson 3 (multi-head attention in NumPy);
# - PyTorch, which is not part of the course's core environment: run `make torch` once (it
#   installs `requirements-torch.txt` into `.venv`), then restart the kernel.
#
# Three graded exercises close the lesson. Their visible checks run as you work; hidden tests
# with fresh inputs run when your notebook is graded.

# %%
import math
import os
import sys
import tempfile
import time

import matplotlib.pyplot as plt
import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ModuleNotFoundError as missing:
    raise ModuleNotFoundError("this optional lesson needs PyTorch: run `make torch` in the course folder, "
                              "then restart the kernel") from missing

from lesson_helpers import demo_size  # the course's helpers: the size a demonstration runs at

# %% [markdown]
# ## 1. The configuration: `config.py`
#
# A model's shape lives in one small object that every module reads. For GPT-2 small, the width
# is $C = 768$ (`n_embd`) and there are $H = 12$ heads (`n_head`), so each head has
# $D = C / H = 64$ dimensions (`head_size`). Dropout is 0.0: switched off, so that the module's
# output can be compared exactly with Lesson 3's NumPy layer, which has no dropout (section 3
# shows that `eval()` switches dropout off whatever its rate).
#
# The layer lives in two files on disk, `config.py` and `attention.py`, because that is how a
# real project is organised. The notebook writes them with `%%writefile` cells. The files
# go into a fresh temporary folder, not next to this notebook: the notebook's own folder is the
# lesson as handed out, and should hold nothing but the notebook. The cell below creates that
# folder, makes it the working folder (so `%%writefile config.py` writes there) and puts it first
# on Python's import path. Python deletes the folder when the kernel shuts down or restarts.

# %%
module_dir = tempfile.TemporaryDirectory(prefix="attention-module-", ignore_cleanup_errors=True)
os.chdir(module_dir.name)  # from here on, relative paths (the files below) land in the temporary folder
sys.path.insert(0, module_dir.name)  # so `import config` and `import attention` find them first

# %%
# %%writefile config.py
from dataclasses import dataclass


@dataclass
class GPTConfig:
    n_embd: int = 768  # C, the model width of GPT-2 small
    n_head: int = 12  # H, the number of attention heads
    dropout: float = 0.0  # off: outputs can be compared exactly with the NumPy layer

    @property
    def head_size(self) -> int:
        return self.n_embd // self.n_head  # D = C / H


# %% [markdown]
# ## 2. The module: `attention.py`
#
# Everything Lesson 3 did to $X$ of shape `(B, T, C)`, in the same order:
#
# 1. **One fused projection.** Instead of three products $XW_q$, $XW_k$, $XW_v$, one linear layer
#    maps each position's $C$ numbers to $3C$: $[\,Q \mid K \mid V\,] = X W_{qkv}$, `(B, T, 3C)`.
#    `.split(C, dim=-1)` cuts that into three `(B, T, C)` tensors. (`split` takes the **size** of each
#    piece, not their number.)
# 2. **Heads.** `view(B, T, H, D)` then `transpose(1, 2)`: `(B, T, C)` to `(B, H, T, D)`, exactly
#    Lesson 3's reshape and transpose.
# 3. **Attention.** $\text{softmax}\!\left(Q K^\top / \sqrt{D}\right) V$ for all heads at once, with
#    dropout on the attention weights.
# 4. **Concatenate and project.** `(B, H, T, D)` back to `(B, T, C)`, then
#    $\text{MultiHead}(X) = \text{Concat}(\text{head}_1, \dots, \text{head}_H)\, W_o$ (the `proj`
#    layer), with dropout on the result.
#
# Here is `attention.py`, with a shape comment on every reshape and matmul. There is no causal
# mask yet: every position may look at every other, including later ones.

# %%
# %%writefile attention.py
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from config import GPTConfig


class MultiHeadAttention(nn.Module):
    """(B, T, n_embd) -> (B, T, n_embd)"""

    def __init__(self, config: GPTConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.head_size = config.head_size  # C / H

        # One fused projection: (B, T, C) -> (B, T, 3C). Q, K, V at once.
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd, bias=False)
        self.proj = nn.Linear(config.n_embd, config.n_embd, bias=False)

        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        H = self.n_head
        D = self.head_size

        q, k, v = self.qkv(x).split(self.n_embd, dim=-1)  # (B, T, 3C) -> three (B, T, C)

        # Reshape into heads for parallel attention.
        q = q.view(B, T, H, D).transpose(1, 2)  # (B, T, C) -> (B, T, H, D) -> (B, H, T, D)
        k = k.view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        v = v.view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)

        # Scaled dot-product. No causal mask yet: every position sees every position.
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)  # (B, H, T, D) @ (B, H, D, T) -> (B, H, T, T)
        att = F.softmax(att, dim=-1)  # each row sums to 1
        att = self.attn_dropout(att)

        y = att @ v  # (B, H, T, T) @ (B, H, T, D) -> (B, H, T, D)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, H, T, D) -> (B, T, H, D) -> (B, T, C)

        return self.resid_dropout(self.proj(y))  # (B, T, C) @ (C, C) -> (B, T, C)


# %% [markdown]
# Three details of this code:
#
# - **One fused `qkv` layer** holds $W_q$, $W_k$ and $W_v$ side by side and computes the same numbers
#   as three separate `Linear(C, C)` layers (Section 6 checks it). Fusing is often said to be
#   faster; Section 6 measures it rather than assuming it.
# - **`bias=False` on both linear layers.** This keeps the block at exactly $4C^2$ parameters.
#   It is this module's choice, not GPT-2's: a common mistake is to say GPT-2 has no attention
#   biases, but both of its attention layers add one (Section 3 counts them).
# - **Two dropouts**, one on the attention weights and one on the output. With `dropout = 0.0`
#   they do nothing; Section 3 shows what they do when the rate is not zero.
#
# Now import both files. Python caches a module after its first import, so the cell first drops
# any cached copy: if you edit a `%%writefile` cell, re-run it and then this cell.

# %%
for cached in ("config", "attention"):
    sys.modules.pop(cached, None)  # forget an earlier import, so edits to the files take effect
from attention import MultiHeadAttention
from config import GPTConfig

print("files in the module folder:", sorted(name for name in os.listdir() if name.endswith(".py")))
print(GPTConfig())
print("head_size:", GPTConfig().head_size)

# %% [markdown]
# ## 3. Run it on your laptop
#
# Four checks, each printed and asserted. The input is random, standing in for token
# embeddings: two sequences ($B = 2$) of eight positions ($T = 8$) at full GPT-2 width. PyTorch
# draws both the module's initial weights and the input from its global generator, so
# `torch.manual_seed(0)` makes the run reproducible.
#
# **Check 1: the layer preserves shape**, `(B, T, C)` in and out, so layers can be stacked.

# %%
torch.manual_seed(0)
config = GPTConfig()
attn = MultiHeadAttention(config)

# Fake input: pretend we already ran the embeddings.
B, T, C = 2, 8, config.n_embd
x = torch.randn(B, T, C)

y = attn(x)
print("output shape:", y.shape)
assert y.shape == x.shape, "attention should preserve (B, T, C)"

# %% [markdown]
# **Check 2: the parameter count is exactly $4C^2$.** `qkv` is a `(3C, C)` matrix and `proj` a
# `(C, C)` one, so the block has $3C^2 + C^2 = 4C^2$ weights, whatever the number of heads.

# %%
n_params = sum(p.numel() for p in attn.parameters())
for name, p in attn.named_parameters():
    print(f"{name:12s} {tuple(p.shape)}")
print(f"attention params: {n_params:,}   4 * C^2 = {4 * config.n_embd ** 2:,}")
assert n_params == 4 * config.n_embd ** 2
print(f"12 such blocks (GPT-2 small): {12 * n_params:,}")

# %% [markdown]
# Two common mistakes about this budget are worth seeing in numbers. The first counts
# $3 \cdot 768^2$ per layer: that is `qkv` alone ($W_q$, $W_k$, $W_v$), and it forgets the output
# projection `proj`. The second says that GPT-2's attention has no biases. It has them: each of its
# two attention layers, the fused projection and the output projection, adds a bias vector, $3C$
# and $C$ numbers, as `nn.Linear` does by default (`bias=True`). Count both versions:

# %%
print(f"3 * 768^2 = {3 * 768 ** 2:,} = qkv.weight alone ({attn.qkv.weight.numel():,}); "
      f"with proj.weight: {n_params:,}")
with_bias = {"qkv": torch.nn.Linear(C, 3 * C), "proj": torch.nn.Linear(C, C)}  # bias=True, nn.Linear's default
for name, layer in with_bias.items():
    print(f"{name}.bias {tuple(layer.bias.shape)}")
n_with_bias = sum(p.numel() for layer in with_bias.values() for p in layer.parameters())
print(f"with biases: {n_with_bias:,} parameters = 4C^2 + 4C = {4 * C * C + 4 * C:,}")
assert n_with_bias == 4 * C * C + 4 * C
print(f"the biases as a share of the weights: {4 * C / (4 * C * C):.2%}")

# %% [markdown]
# The biases add $4C = 3{,}072$ numbers per block, 0.13% of its $4C^2$ weights: leaving them out
# hardly changes the budget. Lesson 4 asks you to count this budget yourself, with and without
# biases.

# %% [markdown]
# **Check 3: eval mode is deterministic.** `attn.eval()` switches every dropout layer off, so
# the same input gives the same output.

# %%
attn.eval()
y1 = attn(x)
y2 = attn(x)
assert torch.allclose(y1, y2)
print("eval mode, same input twice, same output:", torch.allclose(y1, y2))

# %% [markdown]
# With `dropout = 0.0` that check cannot fail, though: there is nothing random to switch off, and
# training mode gives the same output as eval mode. That is why this lesson sets the rate to 0.0:
# sections 4 and 6 compare the module with Lesson 3's NumPy layer, which has no dropout, number for
# number. In eval mode the rate would not matter anyway. To see both, give a copy of the layer a
# dropout rate of 0.1. In training mode each call drops a different random tenth of the attention
# weights and of the outputs (and scales the rest by $1/0.9$); in eval mode dropout is the identity.

# %%
torch.manual_seed(1)
attn_drop = MultiHeadAttention(GPTConfig(dropout=0.1))
attn_drop.load_state_dict(attn.state_dict())  # the same weights as `attn`

attn_drop.train()
train_agree = torch.allclose(attn_drop(x), attn_drop(x))
attn_drop.eval()
eval_agree = torch.allclose(attn_drop(x), attn_drop(x))
print("dropout 0.1, train mode, two calls agree:", train_agree)
print("dropout 0.1, eval mode,  two calls agree:", eval_agree)
print("dropout 0.1 in eval mode equals dropout 0.0:", torch.allclose(attn_drop(x), y1))
attn.train()
print("dropout 0.0, train mode equals eval mode:", torch.allclose(attn(x), y1))
attn.eval()
assert not train_agree and eval_agree

# %% [markdown]
# **Check 4: every output position depends on every input position.** Add 1 to every feature of
# position 0, run the layer again, and look at position 5.

# %%
x2 = x.clone()
x2[:, 0, :] += 1.0
y_pert = attn(x2)
changed = not torch.allclose(y[:, 5, :], y_pert[:, 5, :])
print("y changed at pos 5?", changed)
assert changed

# %% [markdown]
# Position 5 changed when position 0 did. Do it for every pair: perturb input position $j$,
# measure the largest change at each output position $i$, and draw the $(T, T)$ table. (The loop
# over positions is an experiment on the layer, not part of it.)

# %%
with torch.no_grad():  # no gradients needed: this only inspects the layer
    base = attn(x)  # (B, T, C)
    influence = torch.zeros(T, T)
    for j in range(T):
        x_j = x.clone()
        x_j[:, j, :] += 1.0  # perturb input position j
        influence[:, j] = (attn(x_j) - base).abs().amax(dim=(0, 2))  # (B, T, C) -> (T,): largest change per output position

print("every output position moved for every perturbed input:", bool((influence > 0).all()))
print(f"smallest change in the table: {influence.min().item():.3f}")

fig, ax = plt.subplots(figsize=(6.4, 5.2), constrained_layout=True)
image = ax.imshow(influence.numpy(), cmap="viridis", vmin=0.0)
for i in range(T):
    for j in range(T):
        value = influence[i, j].item()
        ax.text(j, i, f"{value:.3f}", ha="center", va="center", fontsize=7,
                color="black" if value > 0.7 * influence.max().item() else "white")
ax.set_xticks(range(T))
ax.set_yticks(range(T))
ax.set_xlabel("key position (the perturbed input j)")
ax.set_ylabel("query position (the output i)")
ax.set_title("Largest |change| of output i after adding 1 to input j\n(no causal mask, B=2, T=8, C=768, H=12)")
fig.colorbar(image, ax=ax, label="max |Δy| over batch and features")
plt.show()

# %% [markdown]
# *Figure: entry $(i, j)$ is how far output position $i$ moved when input position $j$ was
# perturbed. Every one of the 64 cells is non-zero, including the upper triangle, where
# $j > i$: each position reads from later positions too. A language model must not, which is
# why the next step in building a GPT is a causal mask that zeroes that triangle. The diagonal
# cells tend to be larger, since there the perturbed position's own query moved as well.*

# %% [markdown]
# ## 4. The NumPy layer inside the module
#
# The module should be Lesson 3's layer, not merely something of the same shape. Prove it: take
# Lesson 3's function and the weights Lesson 3 drew, copy the weights into a module, and compare
# the outputs. This is `multi_head_attention_forward`, the layer you built in Lesson 3, provided
# here so this notebook runs on its own:

# %%
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    x = x - x.max(axis=axis, keepdims=True)  # subtract the row max for stability
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h):
    """Multi-head self-attention: X (B, T, C) -> (out (B, T, C), cache of intermediates)."""
    B, T, C = X.shape
    if C % h:
        raise ValueError(f"model width C={C} is not divisible by h={h} heads")
    hs = C // h  # head size

    # 1. Project the full width, split C into h heads, lift the head axis up front.
    Q = (X @ Wq).reshape(B, T, h, hs).transpose(0, 2, 1, 3)  # (B, T, C) -> (B, T, h, hs) -> (B, h, T, hs)
    K = (X @ Wk).reshape(B, T, h, hs).transpose(0, 2, 1, 3)  # (B, h, T, hs)
    V = (X @ Wv).reshape(B, T, h, hs).transpose(0, 2, 1, 3)  # (B, h, T, hs)

    # 2. Scaled dot-product attention, batched over B and h at once.
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(hs)  # (B, h, T, hs) @ (B, h, hs, T) -> (B, h, T, T)
    weights = softmax(scores, axis=-1)  # (B, h, T, T), each row sums to 1
    per_head = weights @ V  # (B, h, T, T) @ (B, h, T, hs) -> (B, h, T, hs)

    # 3. Concatenate the heads: the split run backwards.
    concat = per_head.transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)

    # 4. The output projection mixes the heads.
    out = concat @ Wo  # (B, T, C) @ (C, C) -> (B, T, C)

    cache = dict(Q=Q, K=K, V=V, scores=scores, weights=weights, per_head=per_head, concat=concat, out=out)
    return out, cache


# %% [markdown]
# ### Two layouts to reconcile
#
# **`nn.Linear` stores the transpose.** Lesson 3 multiplies on the right, $Q = X W_q$, with $W_q$
# shaped `(C_in, C_out)`. `nn.Linear(C_in, C_out)` keeps a `weight` of shape `(C_out, C_in)`, one
# row per output feature, and computes $x\,W^\top$. So the module's weight is $W_q^\top$.
#
# **The fused layer stacks the three.** `qkv.weight` is `(3C, C)`: its first $C$ rows produce
# the first $C$ output features, which `.split` hands out as $q$; the next $C$ rows give $k$, the
# last $C$ give $v$. So
#
# $$W_{qkv}^{\text{torch}} = \begin{bmatrix} W_q^\top \\ W_k^\top \\ W_v^\top \end{bmatrix}, \qquad W_{\text{proj}}^{\text{torch}} = W_o^\top .$$
#
# Inside each block nothing needs to move: feature $i \cdot D + d$ is dimension $d$ of head $i$
# both in Lesson 3's `reshape(B, T, h, hs)` and in the module's `view(B, T, H, D)`.

# %%
def load_numpy_weights(module, Wq, Wk, Wv, Wo):
    """Copy Lesson 3's (C, C) matrices, used as X @ W, into the module's two nn.Linear layers."""
    qkv_weight = np.concatenate([Wq.T, Wk.T, Wv.T], axis=0)  # three (C_out, C_in) blocks -> (3C, C)
    with torch.no_grad():  # copying into parameters is not a computation to differentiate
        module.qkv.weight.copy_(torch.from_numpy(qkv_weight))  # copy_ also converts float64 to the module's dtype
        module.proj.weight.copy_(torch.from_numpy(Wo.T))  # (C_in, C_out) -> (C_out, C_in)
    return module


# %% [markdown]
# Lesson 3's setup, drawn exactly as there: `np.random.default_rng(42)`, $B = 2$, $T = 6$,
# $C = 64$, $h = 4$, then $X$, $W_q$, $W_k$, $W_v$, $W_o$ in that order, the weights at scale 0.2.
# The module is converted to float64 with `.double()`, so both sides compute in the same precision.

# %%
rng = np.random.default_rng(42)
B3, T3, C3, h3 = 2, 6, 64, 4
X3 = rng.standard_normal((B3, T3, C3))  # (B, T, C)
Wq3 = rng.standard_normal((C3, C3)) * 0.2
Wk3 = rng.standard_normal((C3, C3)) * 0.2
Wv3 = rng.standard_normal((C3, C3)) * 0.2
Wo3 = rng.standard_normal((C3, C3)) * 0.2
out3, cache3 = multi_head_attention_forward(X3, Wq3, Wk3, Wv3, Wo3, h3)

small = MultiHeadAttention(GPTConfig(n_embd=C3, n_head=h3)).double().eval()
load_numpy_weights(small, Wq3, Wk3, Wv3, Wo3)
with torch.no_grad():
    out_module = small(torch.from_numpy(X3)).numpy()  # (B, T, C)

print("NumPy  out[0, 0, :4]:", np.round(out3[0, 0, :4], 4))
print("module out[0, 0, :4]:", np.round(out_module[0, 0, :4], 4))
print("float64: module equals NumPy to 1e-12:", np.allclose(out_module, out3, rtol=0, atol=1e-12))
assert np.allclose(out_module, out3, rtol=0, atol=1e-12)

# %% [markdown]
# The two agree to within $10^{-12}$: the module is Lesson 3's layer. In float32, PyTorch's
# default, the agreement is only what single precision allows: within $10^{-4}$, not $10^{-12}$.

# %%
small32 = load_numpy_weights(MultiHeadAttention(GPTConfig(n_embd=C3, n_head=h3)).eval(), Wq3, Wk3, Wv3, Wo3)
with torch.no_grad():
    out_module32 = small32(torch.from_numpy(X3).float()).numpy()  # float32 in, float32 out
print("float32 module output dtype:", out_module32.dtype)
print("float32: module equals NumPy to 1e-4:", np.allclose(out_module32, out3, rtol=0, atol=1e-4))
print("float32: module equals NumPy to 1e-12:", np.allclose(out_module32, out3, rtol=0, atol=1e-12))
assert np.allclose(out_module32, out3, rtol=0, atol=1e-4)

# %% [markdown]
# ### The silent mistake
#
# Forget the transposes and stack $W_q$, $W_k$, $W_v$ as they are. The result is also `(3C, C)`,
# so `copy_` accepts it and the module runs without a complaint. It is a different layer:

# %%
wrong_qkv = np.concatenate([Wq3, Wk3, Wv3], axis=0)  # (3C, C): right shape, but each block is W, not W.T
wrong = MultiHeadAttention(GPTConfig(n_embd=C3, n_head=h3)).double().eval()
load_numpy_weights(wrong, Wq3, Wk3, Wv3, Wo3)
with torch.no_grad():
    wrong.qkv.weight.copy_(torch.from_numpy(wrong_qkv))
    out_wrong = wrong(torch.from_numpy(X3)).numpy()
print("untransposed weight has the right shape:", wrong_qkv.shape == tuple(wrong.qkv.weight.shape))
print("module with untransposed weights equals NumPy:", np.allclose(out_wrong, out3))

# %% [markdown]
# Only a comparison against a trusted reference catches this kind of mistake; a shape check never will.
#
# ## 5. PyTorch's own attention: `scaled_dot_product_attention`
#
# PyTorch ships step 3 as one function, `torch.nn.functional.scaled_dot_product_attention(q, k, v)`.
# Without a mask it computes $\text{softmax}(q k^\top / \sqrt{D})\, v$, where $D$ is the last axis of
# `q` (the head size, the scale it uses by default), and it may run a fused kernel that never
# stores the $(T, T)$ weights. Compare it with the explicit formula on the module's own queries,
# keys and values:

# %%
with torch.no_grad():
    H, D = config.n_head, config.head_size
    q, k, v = attn.qkv(x).split(C, dim=-1)  # (B, T, 3C) -> three (B, T, C)
    q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))  # each (B, T, C) -> (B, H, T, D)
    explicit = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(D), dim=-1) @ v  # (B, H, T, T) @ (B, H, T, D) -> (B, H, T, D)
    library = F.scaled_dot_product_attention(q, k, v)  # (B, H, T, D)
print("per-head outputs:", tuple(library.shape), "(B, H, T, D)")
print("scaled_dot_product_attention equals the explicit formula:", torch.allclose(library, explicit, atol=1e-6))
assert torch.allclose(library, explicit, atol=1e-6)


# %% [markdown]
# So the three lines of step 3 can be one call. A module that makes that call keeps the same
# parameters, with the same names, so it loads the same `state_dict`. Dropout on the weights
# moves into the call, as `dropout_p`, only in training mode:

# %%
class SDPAMultiHeadAttention(MultiHeadAttention):
    """MultiHeadAttention with step 3 done by F.scaled_dot_product_attention."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(self.n_embd, dim=-1)  # (B, T, 3C) -> three (B, T, C)
        q, k, v = (t.view(B, T, self.n_head, self.head_size).transpose(1, 2) for t in (q, k, v))  # each (B, H, T, D)
        dropout_p = self.attn_dropout.p if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)  # (B, H, T, D)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, H, T, D) -> (B, T, H, D) -> (B, T, C)
        return self.resid_dropout(self.proj(y))  # (B, T, C)


attn_sdpa = SDPAMultiHeadAttention(config)
attn_sdpa.load_state_dict(attn.state_dict())
attn_sdpa.eval()
with torch.no_grad():
    print("SDPA module equals MultiHeadAttention:", torch.allclose(attn_sdpa(x), attn(x), atol=1e-6))

# %% [markdown]
# ## 6. Timing at GPT-2 small size
#
# Now the realistic size: one sequence of GPT-2's full context, $T = 1024$, at $C = 768$ with
# $H = 12$ heads. Nothing in this section is graded, and its cells print the size they ran. The
# weights are drawn once, at scale 0.02 (GPT-2's initialisation), and loaded into every version.
# First make sure all versions compute the same layer, and that the fused `qkv` layer equals three
# separate `Linear(C, C)` layers holding its three blocks:

# %%
T_big = demo_size(full=1024, small=128)  # GPT-2 small's context length
C_big, h_big = 768, 12  # GPT-2 small: width, heads
print(f"T = {T_big}, C = {C_big}, H = {h_big}")
timing_rng = np.random.default_rng(7)
X_big = timing_rng.standard_normal((1, T_big, C_big))  # (1, T, C), float64
W_big = [timing_rng.standard_normal((C_big, C_big)) * 0.02 for _ in range(4)]  # Wq, Wk, Wv, Wo

module64 = load_numpy_weights(MultiHeadAttention(GPTConfig()).double().eval(), *W_big)
module32 = load_numpy_weights(MultiHeadAttention(GPTConfig()).eval(), *W_big)
sdpa32 = load_numpy_weights(SDPAMultiHeadAttention(GPTConfig()).eval(), *W_big)
x_big64 = torch.from_numpy(X_big)
x_big32 = x_big64.float()

separate = [torch.nn.Linear(C_big, C_big, bias=False) for _ in range(3)]  # W_q, W_k, W_v as three layers
with torch.no_grad():
    for i, layer in enumerate(separate):
        layer.weight.copy_(module32.qkv.weight[i * C_big:(i + 1) * C_big])  # block i of the fused (3C, C) weight
    reference_out, _ = multi_head_attention_forward(X_big, *W_big, h_big)  # (1, T, C)
    print("float64 module equals NumPy:", np.allclose(module64(x_big64).numpy(), reference_out, rtol=0, atol=1e-10))
    print("float32 module equals NumPy to 1e-4:", np.allclose(module32(x_big32).numpy(), reference_out, rtol=0, atol=1e-4))
    print("float32 SDPA module equals NumPy to 1e-4:", np.allclose(sdpa32(x_big32).numpy(), reference_out, rtol=0, atol=1e-4))
    fused_qkv = module32.qkv(x_big32)  # (1, T, 3C)
    three_qkv = torch.cat([layer(x_big32) for layer in separate], dim=-1)  # three (1, T, C) -> (1, T, 3C)
    print("fused qkv equals three separate layers:", torch.allclose(fused_qkv, three_qkv, atol=1e-5))


# %% [markdown]
# The timing cell runs each version several times and keeps the fastest run. Every module runs
# under `torch.no_grad()`, as inference code does: otherwise PyTorch records each operation for a
# later backward pass. The comparisons, each changing one thing:
#
# - NumPy float64 against the module in float64: the same arithmetic, two libraries;
# - the module in float32 against float64: half the bytes per number;
# - `scaled_dot_product_attention` against the explicit formula, both in float32;
# - the fused `qkv` layer against three separate layers.
#
# Timings change from run to run and from machine to machine, so the lesson quotes none of this
# cell's numbers.

# %%
# NBVAL_IGNORE_OUTPUT
def best_time(fn, repeats=3):
    """Fastest of `repeats` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


with torch.no_grad():
    t_numpy = best_time(lambda: multi_head_attention_forward(X_big, *W_big, h_big))
    timings = {
        "NumPy, float64 (Lesson 3)": t_numpy,
        "nn.Module, float64": best_time(lambda: module64(x_big64)),
        "nn.Module, float32": best_time(lambda: module32(x_big32)),
        "nn.Module + SDPA, float32": best_time(lambda: sdpa32(x_big32)),
    }
    t_fused = best_time(lambda: module32.qkv(x_big32))
    t_three = best_time(lambda: [layer(x_big32) for layer in separate])

print(f"T={T_big}, C={C_big}, H={h_big}; PyTorch uses {torch.get_num_threads()} threads")
for label, seconds in timings.items():
    print(f"{label:27s} {seconds * 1e3:8.1f} ms   NumPy / this = {t_numpy / seconds:4.2f}x")
print(f"{'qkv: one fused layer':27s} {t_fused * 1e3:8.1f} ms")
print(f"{'qkv: three separate layers':27s} {t_three * 1e3:8.1f} ms   three / fused = {t_three / t_fused:4.2f}x")

# %% [markdown]
# Read the ratios you measured. In the last column of the first four rows, a value above 1 means
# that version was faster than Lesson 3's NumPy function and below 1 slower; the fused-layer ratio
# above 1 means the fused layer was faster. The answers depend on your CPU, its number of cores
# and the libraries underneath, which is why the course states no speed-up. What the cells above
# did prove holds everywhere: all these versions compute the same layer.

# %% [markdown]
# ## Practice exercises
#
# Three exercises on this lesson's own steps: the fused split, the $\sqrt{D}$ scale, and the
# weight layout. Each asks for one function. Replace `raise NotImplementedError()` with your code,
# run the cell, then run the test cell below it. The visible checks tell you what a failure most
# likely means; when your notebook is graded, hidden tests call your function again on fresh
# inputs (other widths, head counts, batch sizes and seeds), so write the general function.

# %% [markdown]
# ### Exercise 1: the fused split (3 points)
#
# Write `split_heads(qkv_out, n_head)`: given the output of a fused `qkv` layer, a tensor of
# shape `(B, T, 3C)` laid out as $[\,q \mid k \mid v\,]$, return the tuple `(q, k, v)`, each of
# shape `(B, H, T, D)` with head $i$ holding features $i \cdot D$ to $(i+1) \cdot D$ of its
# $C$-wide block. Use PyTorch operations; do not modify the input.

# %% nbgrader={"grade": false, "grade_id": "split_heads", "locked": false, "schema_version": 3, "solution": true, "task": false}
def split_heads(qkv_out, n_head):
    """(B, T, 3C) fused projection output -> (q, k, v), each (B, H, T, D)."""
    ### BEGIN SOLUTION
    B, T, three_C = qkv_out.shape
    C = three_C // 3
    D = C // n_head
    pieces = qkv_out.split(C, dim=-1)  # three (B, T, C) blocks: split takes a SIZE, not a count
    return tuple(part.reshape(B, T, n_head, D).transpose(1, 2) for part in pieces)  # (B, T, C) -> (B, T, H, D) -> (B, H, T, D)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_split_heads", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_split_heads(qkv_out, n_head):
    """Visible check with a hint for the usual mistakes."""
    B, T, three_C = qkv_out.shape
    C = three_C // 3
    D = C // n_head
    before = qkv_out.clone()
    got = split_heads(qkv_out, n_head)
    assert torch.equal(qkv_out, before), "split_heads modified its input: build new tensors instead"
    assert isinstance(got, (tuple, list)), f"return the three tensors (q, k, v) as a tuple, got {type(got).__name__}"
    assert len(got) == 3, (f"expected 3 tensors (q, k, v), got {len(got)}: .split(C, dim=-1) takes the SIZE of "
                           "each piece, not the number of pieces")
    blocks = [qkv_out[..., i * C:(i + 1) * C] for i in range(3)]  # q, k, v, each (B, T, C)
    expected = [b.reshape(B, T, n_head, D).transpose(1, 2) for b in blocks]  # each (B, H, T, D)
    per_head_layout = qkv_out.reshape(B, T, n_head, 3 * D)  # the OTHER fused layout: each head's q, k, v side by side
    for index, (name, tensor, want) in enumerate(zip("qkv", got, expected, strict=True)):
        assert isinstance(tensor, torch.Tensor), f"{name} should be a torch.Tensor, got {type(tensor).__name__}"
        assert tuple(tensor.shape) == (B, n_head, T, D), (
            f"{name} should be (B, H, T, D) = {(B, n_head, T, D)}, got {tuple(tensor.shape)}")
        if torch.equal(tensor, want):
            continue
        if torch.equal(tensor, blocks[index].reshape(B, n_head, T, D)):
            raise AssertionError(f"{name} has the right shape but heads and positions are mixed: view it as "
                                 "(B, T, H, D) first, then transpose(1, 2) to (B, H, T, D)")
        if torch.equal(tensor, per_head_layout[..., index * D:(index + 1) * D].transpose(1, 2)):
            raise AssertionError("the fused output is [q | k | v], three blocks of C features: split into the "
                                 "three blocks first, then each block into H heads")
        for other, other_name in zip(expected, "qkv", strict=True):
            if torch.equal(tensor, other):
                raise AssertionError(f"position {index} of the tuple holds {other_name}: return (q, k, v) in that "
                                     "order, q from the first C features")
        raise AssertionError(f"{name} has the right shape but the wrong values: head i of {name} should hold "
                             f"features i*D:(i+1)*D of the {name} block")


check_split_heads(torch.randn(2, 8, 3 * 768, generator=torch.Generator().manual_seed(11)), 12)
check_split_heads(torch.randn(2, 6, 3 * 64, generator=torch.Generator().manual_seed(12)), 4)
print("Exercise 1 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: the $\sqrt{d_k}$ fix (3 points)
#
# Write `scaled_attention_weights(q, k)`: given queries and keys of shape `(B, H, T, D)`, return
# the attention weights
#
# $$\text{softmax}\!\left(\frac{q k^\top}{\sqrt{D}}\right), \quad \text{shape } (B, H, T, T),$$
#
# with the softmax over the keys, so that every row sums to 1. $D$ is the head size, the last axis
# of `q`.

# %% nbgrader={"grade": false, "grade_id": "scaled_attention_weights", "locked": false, "schema_version": 3, "solution": true, "task": false}
def scaled_attention_weights(q, k):
    """Attention weights softmax(q k^T / sqrt(D)) over the keys: (B, H, T, D) x2 -> (B, H, T, T)."""
    ### BEGIN SOLUTION
    head_size = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_size)  # (B, H, T, D) @ (B, H, D, T) -> (B, H, T, T)
    return torch.softmax(scores, dim=-1)  # normalise over the key axis
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_scaled_attention_weights", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def check_scaled_attention_weights(q, k):
    """Visible check with a hint for the usual mistakes."""
    B, H, T, D = q.shape
    raw = q @ k.transpose(-2, -1)  # (B, H, T, T) unscaled scores
    expected = torch.softmax(raw / math.sqrt(D), dim=-1)
    got = scaled_attention_weights(q, k)
    assert isinstance(got, torch.Tensor), f"return a torch.Tensor, got {type(got).__name__}"
    assert tuple(got.shape) == (B, H, T, T), f"expected weights of shape (B, H, T, T) = {(B, H, T, T)}, got {tuple(got.shape)}"
    if torch.allclose(got, expected, atol=1e-6):
        return
    hints = [
        (torch.softmax(raw, dim=-1), "the scores are not scaled: divide q @ k^T by sqrt(D) before the softmax"),
        (torch.softmax(raw / D, dim=-1), "you divided by D; the fix divides by sqrt(D)"),
        (torch.softmax(raw / math.sqrt(H * D), dim=-1),
         "you scaled by the model width C = H * D; scale by the head size D = q.size(-1)"),
        (torch.softmax(raw / math.sqrt(T), dim=-1), "you scaled by sqrt(T), the sequence length; scale by sqrt(D)"),
        (torch.softmax(raw / math.sqrt(D), dim=-2),
         "the columns sum to 1, not the rows: take the softmax over the last axis (the keys)"),
    ]
    for wrong, message in hints:
        if torch.allclose(got, wrong, atol=1e-6):
            raise AssertionError(message)
    raise AssertionError("the weights differ from softmax(q @ k^T / sqrt(D)) over the last axis")


_visible = torch.Generator().manual_seed(21)
check_scaled_attention_weights(torch.randn(2, 3, 5, 16, generator=_visible), torch.randn(2, 3, 5, 16, generator=_visible))
print("Exercise 2 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# With your function, repeat Lesson 2's experiment: queries and keys with unit-variance entries at
# GPT-2's head size $D = 64$, four positions per row, averaged over 256 rows. Without the scale,
# the scores have a standard deviation near $\sqrt{D} = 8$ and the rows are nearly one-hot: their
# entropy is far below $\log T$, the entropy of a uniform row. With the scale, the rows spread
# their weight again: most of the way back to $\log T$, though not all of it, as Lesson 2 found.

# %%
entropy_gen = torch.Generator().manual_seed(0)
q_unit = torch.randn(256, 1, 4, 64, generator=entropy_gen)  # (B, H, T, D), unit-variance entries
k_unit = torch.randn(256, 1, 4, 64, generator=entropy_gen)


def mean_row_entropy(weights):
    """Average entropy, in nats, of the rows of (..., T, T) attention weights (0 log 0 counts as 0)."""
    return torch.special.entr(weights).sum(dim=-1).mean().item()  # entr(p) = -p log p, and entr(0) = 0


raw_scores = q_unit @ k_unit.transpose(-2, -1)  # (B, H, T, D) @ (B, H, D, T) -> (B, H, T, T)
print(f"std of the unscaled scores: {raw_scores.std().item():.2f}   sqrt(D) = {math.sqrt(64):.2f}")
print(f"mean row entropy, unscaled: {mean_row_entropy(torch.softmax(raw_scores, dim=-1)):.3f}")
print(f"mean row entropy, scaled  : {mean_row_entropy(scaled_attention_weights(q_unit, k_unit)):.3f}")
print(f"log T (uniform rows)      : {math.log(4):.3f}")

# %% [markdown]
# Finally, your two functions are the middle of the module's `forward`. Put them between `attn`'s
# own `qkv` and `proj` layers and you get the module's output back:

# %%
with torch.no_grad():
    q_yours, k_yours, v_yours = split_heads(attn.qkv(x), config.n_head)  # each (B, H, T, D)
    per_head_yours = scaled_attention_weights(q_yours, k_yours) @ v_yours  # (B, H, T, T) @ (B, H, T, D) -> (B, H, T, D)
    y_yours = attn.proj(per_head_yours.transpose(1, 2).reshape(B, T, C))  # (B, H, T, D) -> (B, T, H, D) -> (B, T, C)
    print("your split + your weights rebuild the module's output:", torch.allclose(y_yours, attn(x), atol=1e-6))

# %% [markdown]
# ### Exercise 3: the weights, back in Lesson 3's layout (2 points)
#
# Section 4 copied Lesson 3's matrices into the module. Now go the other way. Write
# `unpack_weights(qkv_weight, proj_weight)`: given a module's `qkv.weight`, a tensor of shape
# `(3C, C)`, and its `proj.weight`, of shape `(C, C)`, return the tuple `(Wq, Wk, Wv, Wo)` of four
# `(C, C)` tensors in Lesson 3's layout, where each is used as `X @ W`: then
# `multi_head_attention_forward(X, Wq, Wk, Wv, Wo, h)` computes the module's layer. Use PyTorch
# operations, and do not modify the inputs.

# %% nbgrader={"grade": false, "grade_id": "unpack_weights", "locked": false, "schema_version": 3, "solution": true, "task": false}
def unpack_weights(qkv_weight, proj_weight):
    """nn.Linear weights qkv (3C, C) and proj (C, C) -> (Wq, Wk, Wv, Wo), each (C, C), used as X @ W."""
    ### BEGIN SOLUTION
    C = proj_weight.shape[0]
    blocks = qkv_weight.split(C, dim=0)  # three (C, C) blocks, stored (out, in): W_q^T, W_k^T, W_v^T
    return tuple(block.T for block in blocks) + (proj_weight.T,)  # (out, in) -> (in, out), as X @ W needs
    ### END SOLUTION


# %% [markdown]
# With your function, take the weights out of section 4's float64 module `small` and give them to
# Lesson 3's function: it should compute the module's output, and loading the unpacked matrices
# into a fresh module should give back the same weights:

# %%
with torch.no_grad():
    unpacked = [w.numpy() for w in unpack_weights(small.qkv.weight, small.proj.weight)]  # four (C, C) arrays
    out_unpacked, _ = multi_head_attention_forward(X3, *unpacked, h3)  # (B, T, C)
    print("Lesson 3's function with your matrices equals the module:", np.allclose(out_unpacked, out_module, atol=1e-12))
    reloaded = load_numpy_weights(MultiHeadAttention(GPTConfig(n_embd=C3, n_head=h3)).double(), *unpacked)
    print("loading them back gives the same weights:",
          all(torch.equal(a, b) for a, b in zip(reloaded.state_dict().values(), small.state_dict().values(), strict=True)))

# %% nbgrader={"grade": true, "grade_id": "test_unpack_weights", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def check_unpack_weights(C, weight_seed):
    """Visible check with a hint for the usual mistakes."""
    generator = torch.Generator().manual_seed(weight_seed)
    qkv_weight = torch.randn(3 * C, C, generator=generator)  # (3C, C), as nn.Linear(C, 3C) stores it
    proj_weight = torch.randn(C, C, generator=generator)  # (C, C), as nn.Linear(C, C) stores it
    before = (qkv_weight.clone(), proj_weight.clone())
    got = unpack_weights(qkv_weight, proj_weight)
    assert torch.equal(qkv_weight, before[0]) and torch.equal(proj_weight, before[1]), (
        "unpack_weights modified its inputs: build new tensors (or views) instead")
    assert isinstance(got, (tuple, list)) and len(got) == 4, "return the four matrices (Wq, Wk, Wv, Wo) as a tuple"
    stored = [qkv_weight[i * C:(i + 1) * C] for i in range(3)] + [proj_weight]  # (out, in) each
    expected = [w.T for w in stored]  # Lesson 3's (in, out) layout: X @ W
    names = ("Wq", "Wk", "Wv", "Wo")
    for index, (name, tensor, want) in enumerate(zip(names, got, expected, strict=True)):
        assert isinstance(tensor, torch.Tensor), f"{name} should be a torch.Tensor, got {type(tensor).__name__}"
        assert tuple(tensor.shape) == (C, C), f"{name} should be (C, C) = {(C, C)}, got {tuple(tensor.shape)}"
        if torch.equal(tensor, want):
            continue
        if torch.equal(tensor, stored[index]):
            raise AssertionError(f"{name} is the weight as nn.Linear stores it, (out, in), for x @ W.T; Lesson 3 "
                                 "computes X @ W, so transpose it")
        for other, other_name in zip(expected, names, strict=True):
            if torch.equal(tensor, other):
                raise AssertionError(f"position {index} of the tuple holds {other_name}: the fused weight is "
                                     "[W_q^T; W_k^T; W_v^T] from the top, and Wo comes from proj")
        raise AssertionError(f"{name} has the right shape but the wrong values: take rows {index}*C to "
                             f"({index}+1)*C of qkv_weight (or proj_weight for Wo) and transpose them")


check_unpack_weights(8, 31)
check_unpack_weights(64, 32)
print("Exercise 3 visible checks passed (hidden tests run at grading).")
### BEGIN HIDDEN TESTS
# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.
assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", "these hidden tests need the course's trusted grader (grader/trusted)"
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# **The module.** `GPTConfig` holds the shape ($C = 768$, $H = 12$, $D = 64$, dropout 0.0) and
# `MultiHeadAttention` holds the weights: one fused `qkv` layer `(3C, C)`, split into $q, k, v$,
# each viewed as `(B, T, H, D)` and transposed to `(B, H, T, D)`; $\text{softmax}(qk^\top/\sqrt{D})\,v$
# for all heads at once; the heads concatenated back to `(B, T, C)` and projected by `proj`.
#
# **The laptop checks.** The output keeps the input's shape `(2, 8, 768)`; the block has exactly
# $4C^2 = 2{,}359{,}296$ parameters ($3 \cdot 768^2$ is `qkv` alone; biases would add $4C$, 0.13%);
# eval mode is deterministic, and with dropout 0.1 training mode is not, while with dropout 0.0 the
# two modes agree, which is what lets the module be compared with NumPy exactly; every output
# position moved when any input position did, later ones included, because there is no causal
# mask yet.
#
# **The same layer as Lesson 3.** With `qkv.weight` set to $[W_q^\top; W_k^\top; W_v^\top]$ and
# `proj.weight` to $W_o^\top$, the module reproduces `multi_head_attention_forward` to $10^{-12}$ in
# float64 and to $10^{-4}$ in float32. Stacking the untransposed matrices gives the right shape and
# the wrong layer. Taking each block back out and transposing it (`unpack_weights`) gives Lesson 3's
# matrices, and Lesson 3's function then computes the module's output. `scaled_dot_product_attention`
# computes the same per-head outputs as the explicit formula.
#
# **Speed** is measured, not assumed: the timing cell compares NumPy with the module at GPT-2 small
# size on your machine.
#
# **Next:** the causal mask, which zeroes the upper triangle of the influence table in Section 3
# so that each position sees only itself and the past.
