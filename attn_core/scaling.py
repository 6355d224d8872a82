"""Why attention divides by sqrt(d_k): softmax temperature, variance of q.k, saturation.

With query and key entries of unit variance, q.k is a sum of d_k products of
unit variance, so its variance is d_k. Large scores push softmax towards a
one-hot row, where its gradient (the Jacobian) vanishes. Dividing by sqrt(d_k)
brings the variance back to 1 for every d_k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from attn_core.attention import AttentionSteps, default_scale, entropy, masked_softmax, self_attention
from attn_core.toy import embed_tokens, qkv_projections

D_K_VALUES = tuple(2**power for power in range(11))  # 1, 2, 4 ... 1024
# Log-spaced scale factors from 0.01 to 100, ten per decade, two significant digits (1.0 and 100.0 exact).
SCALE_STEPS = tuple(float(f"{10 ** (step / 10):.2g}") for step in range(-20, 21))
SENTENCE_D_MODEL = 32  # model width C of the toy embeddings in the Scaling view
VARIANCE_SAMPLES = 4000  # (q, k) pairs per Monte Carlo run
SATURATION_SAMPLES = 1000  # attention rows per Monte Carlo run
SATURATION_KEYS = 8  # keys per attention row


def softmax_at_scale(logits: Tensor, scale: float) -> Tensor:
    """softmax(scale * logits) over the last dimension; the temperature is 1 / scale."""
    return masked_softmax(logits * scale)


def normalized_entropy(weights: Tensor) -> Tensor:
    """H(w) / ln T_k: entropy of each row divided by that of the uniform row, (...,): 1 = uniform, 0 = one-hot.

    Rows over a single key have nothing to spread over: their normalized entropy is 0.
    """
    n_keys = weights.shape[-1]
    return entropy(weights) / math.log(n_keys) if n_keys > 1 else weights.new_zeros(weights.shape[:-1])


def softmax_jacobian(weights: Tensor) -> Tensor:
    """d softmax / d logits for each row of weights p: diag(p) - p p^T, (..., T, T)."""
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)


def jacobian_norm(weights: Tensor) -> Tensor:
    """‖diag(p) - p pᵀ‖_F: the Frobenius norm of each row's softmax Jacobian, (...,): 0 when the row is one-hot."""
    return torch.linalg.matrix_norm(softmax_jacobian(weights))


def _dot_products_per_d_k(q: Tensor, k: Tensor) -> Tensor:
    """q.k over the first d_k entries, for every d_k in D_K_VALUES, (D, ...); q and k broadcast."""
    return torch.stack([(q[..., :d_k] * k[..., :d_k]).sum(dim=-1) for d_k in D_K_VALUES])


@dataclass(frozen=True)
class VarianceCurves:
    """Measured and theoretical variance of q.k against d_k."""

    d_k: Tensor  # (D,) the head sizes, D_K_VALUES
    unscaled: Tensor  # (D,) measured Var(q.k)
    scaled: Tensor  # (D,) measured Var(q.k / sqrt(d_k))
    theory_unscaled: Tensor  # (D,) d_k
    theory_scaled: Tensor  # (D,) 1


def dot_product_variance(seed: int = 0, samples: int = VARIANCE_SAMPLES) -> VarianceCurves:
    """Var(q·k) = d_k for q, k with independent N(0, 1) entries, measured by Monte Carlo for each d_k.

    Every d_k uses the first d_k entries of the same ``samples`` random (q, k) pairs.
    """
    d_k = torch.tensor(D_K_VALUES, dtype=torch.float32)  # (D,)
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(samples, D_K_VALUES[-1], generator=generator)  # (N, max d_k)
    k = torch.randn(samples, D_K_VALUES[-1], generator=generator)  # (N, max d_k)
    dots = _dot_products_per_d_k(q, k)  # (D, N)
    unscaled = dots.var(dim=-1)  # (D,)
    scaled = (dots / d_k.sqrt().unsqueeze(-1)).var(dim=-1)  # (D,)
    return VarianceCurves(d_k, unscaled, scaled, d_k, torch.ones_like(d_k))


@dataclass(frozen=True)
class SoftmaxStats:
    """Averages over many attention rows, one value per d_k."""

    normalized_entropy: Tensor  # (D,) 1 = uniform, 0 = one-hot
    max_weight: Tensor  # (D,) the largest weight of a row
    jacobian_norm: Tensor  # (D,) Frobenius norm of d softmax / d logits


@dataclass(frozen=True)
class SaturationCurves:
    """What the size of q.k does to softmax rows, with and without 1/sqrt(d_k)."""

    d_k: Tensor  # (D,)
    n_keys: int
    unscaled: SoftmaxStats
    scaled: SoftmaxStats


def _row_stats(weights: Tensor) -> SoftmaxStats:
    """Per-d_k means of weights (D, N, n_keys)."""
    return SoftmaxStats(
        normalized_entropy(weights).mean(dim=-1),
        weights.amax(dim=-1).mean(dim=-1),
        jacobian_norm(weights).mean(dim=-1),
    )


def softmax_saturation(seed: int = 0, samples: int = SATURATION_SAMPLES, n_keys: int = SATURATION_KEYS) -> SaturationCurves:
    """Monte Carlo: ``samples`` attention rows of one random query over ``n_keys`` random keys, per d_k."""
    d_k = torch.tensor(D_K_VALUES, dtype=torch.float32)  # (D,)
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(samples, 1, D_K_VALUES[-1], generator=generator)  # (N, 1, max d_k): one query per row
    k = torch.randn(samples, n_keys, D_K_VALUES[-1], generator=generator)  # (N, n_keys, max d_k)
    scores = _dot_products_per_d_k(q, k)  # (D, N, n_keys)
    unscaled = torch.softmax(scores, dim=-1)  # (D, N, n_keys)
    scaled = torch.softmax(scores / d_k.sqrt().reshape(-1, 1, 1), dim=-1)  # (D, N, n_keys)
    return SaturationCurves(d_k, n_keys, _row_stats(unscaled), _row_stats(scaled))


def sentence_attention(tokens: list[str], d_k: int, seed: int = 0, multiplier: float = 1.0) -> AttentionSteps:
    """softmax(Q Kᵀ · multiplier / √d_k) V: self-attention over a sentence's toy embeddings.

    ``multiplier`` is the inverse temperature on top of the usual scaling: 1 is standard attention.
    Shapes: q, k, v (T, d_k); weights (T, T).
    """
    x = embed_tokens(tokens, SENTENCE_D_MODEL, seed)  # (T, C)
    w_q, w_k, w_v = qkv_projections(SENTENCE_D_MODEL, d_k, seed)
    return self_attention(x, w_q, w_k, w_v, scale=multiplier * default_scale(d_k))
