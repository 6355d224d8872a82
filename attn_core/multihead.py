"""Multi-head attention: h heads, each attending in its own C/h-dimensional slice, then mixed by W_O."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attn_core.attention import AttentionSteps, attend
from attn_core.toy import projection

MAX_HEADS = 16


def nearest_head_counts(d_model: int, n_heads: int, max_heads: int = MAX_HEADS) -> list[int]:
    """The head counts up to ``max_heads`` that divide ``d_model`` and are closest to ``n_heads``
    (one, or one on each side at equal distance). ``[n_heads]`` when it already divides."""
    valid = [h for h in range(1, max_heads + 1) if d_model % h == 0]
    distance = min(abs(h - n_heads) for h in valid)
    return [h for h in valid if abs(h - n_heads) == distance]


def check_head_count(d_model: int, n_heads: int) -> None:
    """Raise ValueError, naming the nearest valid counts, unless ``n_heads`` divides ``d_model``."""
    if n_heads < 1 or d_model % n_heads:
        nearest = " or ".join(str(h) for h in nearest_head_counts(d_model, n_heads))
        raise ValueError(
            f"{n_heads} heads do not divide the model width C = {d_model}: each head needs C/h whole features. "
            f"Nearest valid head counts: {nearest}."
        )


@dataclass(frozen=True)
class MultiHeadSteps:
    """Every step of multi-head self-attention."""

    heads: AttentionSteps  # per head: q, k, v (..., h, T, C/h), weights (..., h, T, T), context (..., h, T, C/h)
    concat: Tensor  # (..., T, C) the heads' contexts side by side: Concat(Z_1, ..., Z_h)
    output: Tensor  # (..., T, C) concat @ W_O

    @property
    def n_heads(self) -> int:
        return self.heads.weights.shape[-3]


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """(..., T, C) -> (..., h, T, C/h): head i takes features i*C/h to (i+1)*C/h."""
    return x.unflatten(-1, (n_heads, -1)).transpose(-3, -2)


def merge_heads(x: Tensor) -> Tensor:
    """(..., h, T, d) -> (..., T, h·d): the heads side by side, split_heads undone."""
    return x.transpose(-3, -2).flatten(start_dim=-2)


def head_weights(w: Tensor, n_heads: int) -> Tensor:
    """A (C, C) projection as each head's own (C, C/h) block of columns: (h, C, C/h)."""
    return w.unflatten(-1, (n_heads, -1)).transpose(0, 1)


def multi_head_attention(
    x: Tensor,
    w_q: Tensor,
    w_k: Tensor,
    w_v: Tensor,
    w_o: Tensor,
    n_heads: int,
    mask: Tensor | None = None,
    scale: float | None = None,
) -> MultiHeadSteps:
    """Concat(head_1, ..., head_h) W_O, head_i = attend(X W_Q^i, X W_K^i, X W_V^i): multi-head self-attention without
    biases, keeping every step.

    Args:
        x: token embeddings, (..., T, C).
        w_q, w_k, w_v, w_o: (C, C), applied as ``x @ w``; head i uses columns i*C/h to (i+1)*C/h of
            W_Q, W_K and W_V, and W_O mixes the concatenated heads.
        n_heads: h, which must divide C.
        mask: boolean, broadcastable to (..., h, T, T); True where a query may attend to a key.
        scale: ``None`` means 1/sqrt(C/h), the head size.
    """
    check_head_count(x.shape[-1], n_heads)
    q = split_heads(x @ w_q, n_heads)  # (..., h, T, C/h)
    k = split_heads(x @ w_k, n_heads)  # (..., h, T, C/h)
    v = split_heads(x @ w_v, n_heads)  # (..., h, T, C/h)
    heads = attend(q, k, v, mask=mask, scale=scale)
    concat = merge_heads(heads.context)  # (..., T, C)
    return MultiHeadSteps(heads, concat, concat @ w_o)


def multi_head_projections(d_model: int, seed: int = 0) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Seeded W_Q, W_K, W_V, W_O, each (C, C): the same matrices whatever the number of heads."""
    return tuple(projection(d_model, d_model, seed, f"multi-head/{name}") for name in ("W_Q", "W_K", "W_V", "W_O"))


def torch_mha_difference(
    x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor, steps: MultiHeadSteps, mask: Tensor | None = None
) -> float:
    """Largest |output - torch.nn.MultiheadAttention's| on the same input, weights and mask
    (PyTorch's module always scales by 1/sqrt(C/h): compare steps computed with the default scale).

    Queries that see no key are left out: PyTorch gives NaN there, ``attend`` gives 0.
    """
    d_model, n_heads = x.shape[-1], steps.n_heads
    reference = torch.nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True, device=x.device, dtype=x.dtype)
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([w_q, w_k, w_v], dim=1).T)  # (3C, C)
        reference.out_proj.weight.copy_(w_o.T)  # (C, C)
    batch = x.reshape(-1, *x.shape[-2:])  # (B, T, C)
    n_batch, t = batch.shape[:2]
    blocked = None
    if mask is not None:  # PyTorch's boolean attn_mask is True where attention is NOT allowed
        blocked = ~mask.to(torch.bool).expand(n_batch, n_heads, t, t).reshape(n_batch * n_heads, t, t)  # (B*h, T, T)
    with torch.inference_mode():
        expected, _ = reference(batch, batch, batch, attn_mask=blocked, need_weights=False)  # (B, T, C)
    row_diff = (steps.output.reshape(expected.shape) - expected).abs().amax(dim=-1)  # (B, T)
    seen_by_no_head = steps.heads.empty_rows.reshape(n_batch, n_heads, t).any(dim=1)  # (B, T)
    return float(row_diff.masked_fill(seen_by_no_head, 0.0).max())
