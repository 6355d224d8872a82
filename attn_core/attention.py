"""Scaled dot-product attention that keeps every intermediate step.

Conventions follow ``torch.nn.functional.scaled_dot_product_attention``:
a boolean mask is True where a query may attend to a key and broadcasts
over any leading (batch, head) dimensions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class AttentionSteps:
    """Every intermediate tensor of one attention computation.

    Shapes use ``...`` for any leading batch/head dimensions.
    """

    q: Tensor  # (..., Tq, d_k)
    k: Tensor  # (..., Tk, d_k)
    v: Tensor  # (..., Tk, d_v)
    scores: Tensor  # (..., Tq, Tk)  Q K^T
    scaled: Tensor  # (..., Tq, Tk)  scores * scale, -inf where masked
    weights: Tensor  # (..., Tq, Tk) softmax over keys, exactly 0 where masked
    context: Tensor  # (..., Tq, d_v) weights @ V
    empty_rows: Tensor  # (..., Tq) bool: queries with no visible key (weights and context 0)
    scale: float  # the factor the scores were multiplied by
    mask: Tensor | None  # bool, broadcastable to (..., Tq, Tk); True = may attend


def default_scale(d_k: int) -> float:
    """The Transformer's 1/sqrt(d_k)."""
    return 1.0 / math.sqrt(d_k)


def masked_softmax(logits: Tensor) -> Tensor:
    """Softmax over the last dimension where -inf means "masked".

    A row that is entirely -inf gets weights 0 instead of NaN.
    """
    row_max = logits.amax(dim=-1, keepdim=True)  # (..., Tq, 1)
    row_max = row_max.masked_fill(row_max == float("-inf"), 0.0)
    exp = torch.exp(logits - row_max)  # exp(-inf) = 0 for masked cells
    total = exp.sum(dim=-1, keepdim=True)  # (..., Tq, 1)
    return exp / total.masked_fill(total == 0, 1.0)


def attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    scale: float | None = None,
) -> AttentionSteps:
    """Scaled dot-product attention, returning every step.

    Args:
        q: queries, (..., Tq, d_k).
        k: keys, (..., Tk, d_k).
        v: values, (..., Tk, d_v).
        mask: boolean, broadcastable to (..., Tq, Tk); True where the query
            may attend to the key. ``None`` lets every query see every key.
        scale: factor applied to the scores. ``None`` means 1/sqrt(d_k);
            ``1.0`` leaves them unscaled.
    """
    scale = default_scale(q.shape[-1]) if scale is None else float(scale)
    scores = q @ k.transpose(-2, -1)  # (..., Tq, Tk)
    scaled = scores * scale  # (..., Tq, Tk)
    if mask is None:
        empty_rows = torch.zeros(scores.shape[:-1], dtype=torch.bool, device=scores.device)
    else:
        mask = mask.to(device=scores.device, dtype=torch.bool)
        scaled = scaled.masked_fill(~mask, float("-inf"))
        visible = mask.expand_as(scores)  # (..., Tq, Tk)
        empty_rows = ~visible.any(dim=-1)  # (..., Tq)
    weights = masked_softmax(scaled)  # (..., Tq, Tk)
    context = weights @ v  # (..., Tq, d_v)
    return AttentionSteps(q, k, v, scores, scaled, weights, context, empty_rows, scale, mask)


def self_attention(
    x: Tensor,
    w_q: Tensor,
    w_k: Tensor,
    w_v: Tensor,
    mask: Tensor | None = None,
    scale: float | None = None,
) -> AttentionSteps:
    """Project x to queries, keys and values, then attend.

    Args:
        x: token embeddings, (..., T, C).
        w_q, w_k: (C, d_k); w_v: (C, d_v). Applied as ``x @ w``, no bias.
    """
    return cross_attention(x, x, w_q, w_k, w_v, mask=mask, scale=scale)


def cross_attention(
    x_query: Tensor,
    x_source: Tensor,
    w_q: Tensor,
    w_k: Tensor,
    w_v: Tensor,
    mask: Tensor | None = None,
    scale: float | None = None,
) -> AttentionSteps:
    """Attention between two sequences: queries from one, keys and values from the other.

    Args:
        x_query: (..., Tq, C), e.g. the decoder's tokens.
        x_source: (..., Tk, C), e.g. the encoder's tokens.
        w_q, w_k: (C, d_k); w_v: (C, d_v). Applied as ``x @ w``, no bias.
    """
    q = x_query @ w_q  # (..., Tq, d_k)
    k = x_source @ w_k  # (..., Tk, d_k)
    v = x_source @ w_v  # (..., Tk, d_v)
    return attend(q, k, v, mask=mask, scale=scale)


def causal_mask(t: int, device: torch.device | str | None = None) -> Tensor:
    """(t, t) boolean look-ahead mask: True on and below the diagonal."""
    return torch.ones(t, t, dtype=torch.bool, device=device).tril()


def padding_mask(lengths: list[int] | Tensor, t: int, device: torch.device | str | None = None) -> Tensor:
    """(B, 1, t) boolean key-padding mask: True for the first ``lengths[b]`` (real) tokens."""
    lengths = torch.as_tensor(lengths, device=device).reshape(-1, 1)  # (B, 1)
    positions = torch.arange(t, device=lengths.device)  # (t,)
    return (positions < lengths).unsqueeze(1)  # (B, 1, t)


def entropy(weights: Tensor) -> Tensor:
    """Entropy of each attention row in nats, (..., Tq). Zero weights contribute 0."""
    return -torch.special.xlogy(weights, weights).sum(dim=-1)


def sdpa_difference(steps: AttentionSteps) -> float:
    """Largest |context - PyTorch's scaled_dot_product_attention| on the same inputs.

    Rows with no visible key are left out: there our context is 0 by definition.
    """
    reference = torch.nn.functional.scaled_dot_product_attention(
        steps.q, steps.k, steps.v, attn_mask=steps.mask, scale=steps.scale
    )  # (..., Tq, d_v)
    row_diff = (steps.context - reference).abs().amax(dim=-1)  # (..., Tq)
    row_diff = row_diff.masked_fill(steps.empty_rows, 0.0)
    return float(row_diff.max()) if row_diff.numel() else 0.0
