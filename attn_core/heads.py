"""Summaries of attention heads: what each head's pattern looks like, and which heads look alike."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from attn_core.attention import entropy


@dataclass(frozen=True)
class HeadMetrics:
    """Each head's weights summarized over its query rows (self-attention: query i is key i).

    Every field has the leading shape of the weights, without the last two dimensions.
    """

    entropy: Tensor  # mean entropy of a row, nats: low = focused, log(T) = uniform
    distance: Tensor  # mean attention distance, tokens: sum_j A[i, j] |i - j|, averaged over i
    self_weight: Tensor  # mean A[i, i]: weight on the token itself
    first_weight: Tensor  # mean A[i, 0]: weight on the first token
    max_weight: Tensor  # mean over rows of the row's largest weight

    def columns(self) -> dict[str, Tensor]:
        """The metrics by their names with units, as a table's columns."""
        return {
            "entropy (nats)": self.entropy,
            "mean distance (tokens)": self.distance,
            "weight on itself": self.self_weight,
            "weight on first token": self.first_weight,
            "largest weight": self.max_weight,
        }


def head_metrics(weights: Tensor) -> HeadMetrics:
    """Summaries of self-attention weights (..., T, T), one per leading index (e.g. per head)."""
    t = weights.shape[-1]
    positions = torch.arange(t, device=weights.device)  # (T,)
    offsets = (positions[:, None] - positions[None, :]).abs().to(weights.dtype)  # (T, T)
    return HeadMetrics(
        entropy=entropy(weights).mean(dim=-1),
        distance=(weights * offsets).sum(dim=-1).mean(dim=-1),
        self_weight=weights.diagonal(dim1=-2, dim2=-1).mean(dim=-1),
        first_weight=weights[..., 0].mean(dim=-1),
        max_weight=weights.amax(dim=-1).mean(dim=-1),
    )


def pattern_similarity(weights: Tensor) -> Tensor:
    """S[a, b] = ⟨A_a, A_b⟩ / (‖A_a‖ ‖A_b‖): cosine similarity between every pair of attention patterns,
    (N, Tq, Tk) -> (N, N).

    1 means two heads attend in the same proportions everywhere (one of them is redundant).
    """
    patterns = F.normalize(weights.flatten(start_dim=-2), dim=-1)  # (N, Tq*Tk), unit length
    return patterns @ patterns.transpose(-2, -1)  # (N, N)


def pairs_by_similarity(similarity: Tensor) -> list[tuple[int, int, float]]:
    """Every pair of distinct heads (i, j), i < j, with its similarity from an (N, N) matrix, most alike first."""
    n = similarity.shape[-1]
    pairs = [(i, j, float(similarity[i, j])) for i in range(n) for j in range(i + 1, n)]
    return sorted(pairs, key=lambda pair: pair[2], reverse=True)
