"""Deterministic toy inputs: seeded word embeddings and projection matrices.

Every random draw comes from a CPU generator seeded by a hash of the seed and a
name, so the same seed gives the same numbers on every machine and device.
"""

from __future__ import annotations

import hashlib
import math

import torch
from torch import Tensor


def _generator(seed: int, name: str) -> torch.Generator:
    digest = hashlib.sha256(f"{seed}/{name}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))


def embed_tokens(tokens: list[str], d_model: int, seed: int = 0, device: torch.device | str | None = None) -> Tensor:
    """(T, C) embeddings, unit variance: one fixed vector per word (case-folded), in any sentence.

    Like word2vec, the vector depends on the word alone, never on its neighbours or position.
    """
    rows = [torch.randn(d_model, generator=_generator(seed, "word:" + token.casefold())) for token in tokens]
    return torch.stack(rows).to(device) if rows else torch.zeros(0, d_model, device=device)  # (T, C)


def projection(d_in: int, d_out: int, seed: int, name: str, device: torch.device | str | None = None) -> Tensor:
    """W ~ N(0, 1/d_in), (d_in, d_out), seeded: x W keeps unit variance."""
    weights = torch.randn(d_in, d_out, generator=_generator(seed, name)) / math.sqrt(d_in)
    return weights.to(device)  # (d_in, d_out)


def qkv_projections(
    d_model: int, d_k: int, seed: int = 0, device: torch.device | str | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """Seeded W_Q, W_K, W_V, each (C, d_k)."""
    return tuple(projection(d_model, d_k, seed, name, device) for name in ("W_Q", "W_K", "W_V"))
