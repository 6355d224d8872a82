"""Masks on a trained model: what its padding mask protects, what a causal mask it never saw changes, and whether
the heads that park their attention on [CLS] or [SEP] need it.

Each compares runs of the same sentences: as trained, and with one thing changed (MiniLM.run's keywords), by the
sentence embeddings (cosine similarity, 1 = unchanged) and head by head.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from attn_core.real_model.bert import MiniLM, RealRun, sentence_embeddings


@dataclass(frozen=True)
class PaddingCheck:
    """A batch of sentences of different lengths, padded to the longest, against each sentence run alone."""

    tokens: list[list[str]]  # each sentence's word pieces, no padding
    pads: list[int]  # [PAD] tokens added to each sentence
    masked_difference: float  # largest |padded − alone| over the embeddings, with the padding mask: rounding only
    unmasked_cosine: Tensor  # (B,) cosine of each sentence's embedding without the mask and alone: 1 = unchanged
    pad_weight: Tensor  # (L, H) weight each head puts on [PAD] keys without the mask, over the padded sentences' real queries
    unmasked: RealRun  # the batch run without the mask


def padding_check(model: MiniLM, texts: Sequence[str]) -> PaddingCheck:
    encoded = model.encode(texts)
    alone = torch.cat([model.embed([text]) for text in texts])  # (B, C)
    masked = sentence_embeddings(model.run(encoded))  # (B, C)
    unmasked_run = model.run(encoded, padding_mask=False)
    unmasked = sentence_embeddings(unmasked_run)  # (B, C)
    return PaddingCheck(
        encoded.tokens,
        [int((~row).sum()) for row in encoded.mask],
        float((masked - alone).abs().max()),
        (unmasked * alone).sum(dim=-1),
        weight_on(unmasked_run, ~encoded.mask, queries=encoded.mask & (~encoded.mask).any(dim=-1, keepdim=True)),
        unmasked_run,
    )


def weight_on(run: RealRun, keys: Tensor, queries: Tensor) -> Tensor:
    """(L, H): each head's weight on the ``keys`` ((B, T) bool) summed over them, averaged over the ``queries``
    ((B, T) bool); 0 where there are no such queries."""
    weights = torch.stack([steps.weights for steps in run.attention])  # (L, B, H, T, T)
    on_keys = (weights * keys[None, :, None, None, :]).sum(dim=-1)  # (L, B, H, T)
    chosen = queries.to(weights.dtype)[None, :, None, :]  # (1, B, 1, T)
    return (on_keys * chosen).sum(dim=(1, 3)) / chosen.sum().clamp(min=1)


@dataclass(frozen=True)
class Change:
    """What a change to the model did to a batch: each sentence's embedding against as trained, and each head."""

    cosine: Tensor  # (B,) cosine of each sentence's embedding with the change and as trained: 1 = unchanged
    head_change: Tensor  # (L, H) share of each head's row weight that moved (½ Σ_keys |Δ w|), mean over real queries


def change_of(
    model: MiniLM,
    texts: Sequence[str],
    *,
    causal: bool = False,
    hide_token: str = "[SEP]",
    hide_in: Collection[tuple[int, int]] = (),
) -> Change:
    """How far a causal mask, or ``hide_token``'s key hidden from the (layer, head) pairs ``hide_in``, moves a batch."""
    encoded = model.encode(texts)
    trained, changed = model.run(encoded), model.run(encoded, causal=causal, hide_token=hide_token, hide_in=hide_in)
    real = encoded.mask.to(torch.float32)  # (B, T)
    head_change = torch.stack(
        [
            ((after.weights - before.weights).abs().sum(dim=-1) / 2 * real[:, None, :]).sum(dim=(0, 2)) / real.sum()  # (H,)
            for before, after in zip(trained.attention, changed.attention, strict=True)
        ]
    )  # (L, H)
    cosine = (sentence_embeddings(trained) * sentence_embeddings(changed)).sum(dim=-1)
    return Change(cosine, head_change)
