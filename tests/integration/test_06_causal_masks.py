"""Lesson 6's convention and references, checked against PyTorch and against the full causal pass.

The lesson says that PyTorch's `scaled_dot_product_attention` gives a query row with no allowed key
zero weights (the course's convention), and that a KV-cache decoding step equals the row of the
full causal pass. These tests check both against the trusted spec's references, so the spec and
the prose cannot drift apart. The PyTorch test is skipped where the optional extra is missing.
"""

from __future__ import annotations

import numpy as np
import pytest

from grader.trusted import load_spec

LESSON = "06-causal-masks"


def reference(function: str):
    checks = load_spec(LESSON).checks
    return next(c.reference for c in checks.values() if c.function == function)


def masks(rng, B, T_q, T_k):
    """Masks of every shape the lesson uses, with fully masked rows among them."""
    causal = np.tril(np.ones((T_q, T_k), dtype=bool), k=T_k - T_q)  # (T_q, T_k), aligned on the last key
    lengths = np.array([T_k, 2, 0][:B])
    key_real = np.arange(T_k)[None, :] >= (T_k - lengths)[:, None]  # (B, T_k), left padding
    yield causal
    yield causal[None, None] & key_real[:, None, None, :]  # (B, 1, T_q, T_k), fully masked rows
    yield key_real[:, None, None, :]  # (B, 1, 1, T_k), one sequence all filler
    yield rng.random((B, 1, T_q, T_k)) < 0.3  # sparse: many fully masked rows
    yield np.zeros((T_q, T_k), dtype=bool)  # nothing allowed anywhere


@pytest.mark.needs("torch")
def test_masked_attention_matches_torch_sdpa_including_fully_masked_rows():
    import torch
    masked_attention = reference("masked_attention")
    rng = np.random.default_rng(2026)
    B, h, T_q, T_k, d_k, d_v = 3, 2, 5, 7, 4, 3
    Q, K, V = (rng.standard_normal(s) for s in ((B, h, T_q, d_k), (B, h, T_k, d_k), (B, h, T_k, d_v)))
    for mask in masks(rng, B, T_q, T_k):
        out, weights = masked_attention(Q, K, V, mask)
        expected = torch.nn.functional.scaled_dot_product_attention(
            torch.from_numpy(Q), torch.from_numpy(K), torch.from_numpy(V), attn_mask=torch.from_numpy(mask))
        np.testing.assert_allclose(out, expected.numpy(), rtol=0, atol=1e-12)
        fully_masked = ~np.broadcast_to(mask, weights.shape).any(axis=-1)
        assert np.all(expected.numpy()[fully_masked] == 0.0), "PyTorch's SDPA no longer returns zero rows"
        assert np.all(weights[fully_masked] == 0.0) and not np.isnan(weights).any()


def test_decode_step_reproduces_the_full_causal_pass():
    decode_step, masked_attention = reference("decode_step"), reference("masked_attention")
    rng = np.random.default_rng(6)
    for lead, T, d_k, d_v in [((), 1, 3, 2), ((2,), 7, 4, 5), ((2, 3), 9, 8, 8)]:
        Q, K, V = (rng.standard_normal((*lead, T, d)) for d in (d_k, d_k, d_v))
        full, _ = masked_attention(Q, K, V, np.tril(np.ones((T, T), dtype=bool)))
        K_cache, V_cache = np.zeros((*lead, 0, d_k)), np.zeros((*lead, 0, d_v))
        for t in range(T):
            K_cache, V_cache, out_t = decode_step(K_cache, V_cache, Q[..., t:t + 1, :], K[..., t:t + 1, :],
                                                  V[..., t:t + 1, :])
            np.testing.assert_allclose(out_t, full[..., t:t + 1, :], rtol=0, atol=1e-12)
        assert np.array_equal(K_cache, K) and np.array_equal(V_cache, V)
