"""Scaled dot-product attention, written as its equation: every step kept (``attend``), or only the output
(``naive_attention``, the reference the Cost view measures).

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

Conventions follow ``torch.nn.functional.scaled_dot_product_attention``: a boolean mask (``attn_core.masks``) is
True where a query may attend to a key and broadcasts over any leading (batch, head) dimensions; hidden scores
become -inf, and a query that sees no key gets weights 0 and output 0 (``masked_softmax``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from attn_core.masks import hidden_keys


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
    scale: float | Tensor  # the factor the scores were multiplied by; a tensor broadcast to them, one a head
    mask: Tensor | None  # bool, broadcastable to (..., Tq, Tk); True = may attend


def default_scale(d_k: int) -> float:
    """1 / √d_k, the Transformer's scale."""
    return 1.0 / math.sqrt(d_k)


def masked_softmax(logits: Tensor) -> Tensor:
    """w_j = exp(x_j) / Σ_k exp(x_k) over the last dimension, where x_j = -inf marks a hidden (masked) entry: w_j = 0.

    A row with every entry hidden gets weights 0, not softmax's 0 / 0 = NaN: attn_core's one rule for a query that
    sees no key, the rule of ``scaled_dot_product_attention`` too.
    """
    weights = torch.softmax(logits, dim=-1)  # (..., Tq, Tk); NaN in a row of only -inf
    nothing_visible = logits.amax(dim=-1, keepdim=True) == float("-inf")  # (..., Tq, 1)
    if weights.requires_grad:  # softmax's backward reads its output: leave it as it is
        return weights.masked_fill(nothing_visible, 0.0)
    return weights.masked_fill_(nothing_visible, 0.0)  # in place: naive attention holds one (Tq, Tk) matrix less


def attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    scale: float | Tensor | None = None,
) -> AttentionSteps:
    """softmax(Q Kᵀ · scale, hidden scores -inf) V, scaled dot-product attention, returning every step.

    Args:
        q: queries, (..., Tq, d_k).
        k: keys, (..., Tk, d_k).
        v: values, (..., Tk, d_v).
        mask: boolean, broadcastable to (..., Tq, Tk); True where the query
            may attend to the key. ``None`` lets every query see every key.
        scale: factor applied to the scores. ``None`` means 1/sqrt(d_k);
            ``1.0`` leaves them unscaled; a tensor broadcastable to the scores
            gives each head its own, e.g. (H, 1, 1).
    """
    if scale is None:
        scale = default_scale(q.shape[-1])
    elif not isinstance(scale, Tensor):
        scale = float(scale)
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


def naive_attention(
    q: Tensor, k: Tensor, v: Tensor, *, causal: bool = False, mask: Tensor | None = None, window: int | None = None
) -> Tensor:
    """softmax(Q Kᵀ / √d, hidden scores -inf) V, materializing the (Tq, Tk) scores and weights and keeping the output.

    q: (B, H, Tq, d); k: (B, H, Tk, d); v: (B, H, Tk, d_v); mask: bool, broadcastable to (B, H, Tq, Tk);
    causal: query i sees keys j <= i; window: query i sees keys i - window < j <= i only (a causal mask).
    """
    t_q, t_k = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) * default_scale(q.shape[-1])  # (B, H, Tq, Tk)
    if causal or window is not None:
        scores.masked_fill_(hidden_keys(range(t_q), range(t_k), window, q.device), float("-inf"))  # (B, H, Tq, Tk)
    if mask is not None:
        scores.masked_fill_(~mask, float("-inf"))  # (B, H, Tq, Tk)
    return masked_softmax(scores) @ v  # (B, H, Tq, d_v)


def self_attention(
    x: Tensor,
    w_q: Tensor,
    w_k: Tensor,
    w_v: Tensor,
    mask: Tensor | None = None,
    scale: float | None = None,
) -> AttentionSteps:
    """attend(X W_Q, X W_K, X W_V): project x to queries, keys and values, then attend.

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
    """attend(X_q W_Q, X_s W_K, X_s W_V): queries from one sequence, keys and values from the other.

    Args:
        x_query: (..., Tq, C), e.g. the decoder's tokens.
        x_source: (..., Tk, C), e.g. the encoder's tokens.
        w_q, w_k: (C, d_k); w_v: (C, d_v). Applied as ``x @ w``, no bias.
    """
    q = x_query @ w_q  # (..., Tq, d_k)
    k = x_source @ w_k  # (..., Tk, d_k)
    v = x_source @ w_v  # (..., Tk, d_v)
    return attend(q, k, v, mask=mask, scale=scale)


def entropy(weights: Tensor) -> Tensor:
    """H = -Σ_j w_j ln w_j: the entropy of each attention row in nats, (..., Tq). Zero weights contribute 0."""
    return -torch.special.xlogy(weights, weights).sum(dim=-1)


def sdpa_difference(steps: AttentionSteps) -> float:
    """max |context - scaled_dot_product_attention(Q, K, V)|: attend's error against PyTorch's on the same inputs.

    Rows with no visible key are left out: there our context is 0 by definition.
    """
    reference = torch.nn.functional.scaled_dot_product_attention(
        steps.q, steps.k, steps.v, attn_mask=steps.mask, scale=steps.scale
    )  # (..., Tq, d_v)
    row_diff = (steps.context - reference).abs().amax(dim=-1)  # (..., Tq)
    row_diff = row_diff.masked_fill(steps.empty_rows, 0.0)
    return float(row_diff.max()) if row_diff.numel() else 0.0
