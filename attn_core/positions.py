"""Where a token is: self-attention alone treats a sentence as a set, so positions must be put in.

Two ways, both from the papers that introduced them:

- **Absolute sinusoidal encodings** (Vaswani et al., 2017) are added to the embeddings, X + P, before the projections:

      P[pos, 2i] = sin(pos / 10000^(2i/d)),   P[pos, 2i+1] = cos(pos / 10000^(2i/d))

- **Rotary embeddings, RoPE** (Su et al., 2021) rotate each pair of features (2i, 2i+1) of a query or key at
  position m by the angle m·θ_i, θ_i = base^(-2i/d). A rotation by m·θ of q and by n·θ of k leaves their dot
  product depending on m − n only: the score of two words depends on their distance, not on where they are.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def sinusoidal(t: int, d: int, device: torch.device | str | None = None) -> Tensor:
    """The Transformer's sinusoidal position signal, (T, d): sin on even, cos on odd features."""
    position = torch.arange(t, dtype=torch.float32).unsqueeze(1)  # (T, 1)
    frequency = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))  # (ceil(d/2),)
    angles = position * frequency  # (T, ceil(d/2))
    encoding = torch.zeros(t, d)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles[:, : d // 2])
    return encoding.to(device)  # (T, d)


def rope(x: Tensor, positions: Tensor, base: float = 10000.0) -> Tensor:
    """x (..., T, d), d even, with each pair of features (2i, 2i+1) of the row at position m rotated by m·θ_i,
    θ_i = base^(-2i/d); ``positions`` (T,) may be any numbers (a shuffled or shifted sentence)."""
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"RoPE rotates pairs of features: d must be even, not {d}")
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)  # (d/2,)
    angles = positions.to(torch.float64)[:, None] * theta  # (T, d/2)
    cos, sin = (f(angles).to(x.dtype) for f in (torch.cos, torch.sin))  # (T, d/2)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., T, d/2)
    rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)  # (..., T, d/2, 2)
    return rotated.flatten(-2)  # (..., T, d)
