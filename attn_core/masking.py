"""A padded batch under a mask: look-ahead (causal), padding, both, sliding-window (local) or a custom grid.

The masks are ``attn_core.masks.Mask``s, built on the batch's real lengths. Padding masks the [PAD] keys for every
query, and a [PAD] query sees nothing: its row is fully blocked, so it gets weights 0 and context 0 (``masked_softmax``).
A custom grid is drawn by hand, cell by cell: a (T, T) boolean at one length, with no sizes to make a Mask of.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attn_core.attention import AttentionSteps, masked_softmax, self_attention
from attn_core.masks import Mask
from attn_core.toy import embed_tokens, qkv_projections

PAD = "[PAD]"
CUSTOM = "custom"  # a grid drawn by hand
BATCH_MASKS = ("causal", "padding", "both", CUSTOM, "window")  # the Masking view's masks of a batch: Masks, and CUSTOM
TOY_D_MODEL, TOY_D_K = 16, 8  # the toy head's model width C and head size: small enough to print every matrix
LARGE_NEGATIVE = -1e9  # the "large negative number" some code fills masked scores with


def pad_batch(sentences: list[list[str]]) -> tuple[list[list[str]], list[int]]:
    """Each token list padded with PAD to the longest one, and the real lengths."""
    longest = max((len(tokens) for tokens in sentences), default=0)
    padded = [tokens + [PAD] * (longest - len(tokens)) for tokens in sentences]
    return padded, [len(tokens) for tokens in sentences]


@dataclass(frozen=True)
class MaskedBatch:
    """A batch of sentences padded to one length, its mask and its attention."""

    tokens: list[list[str]]  # B lists of T tokens, PAD at the end of the shorter ones
    lengths: list[int]  # B real lengths
    rule: Mask | None  # the Mask it was built from; None for a custom grid
    mask: Tensor  # bool, broadcastable to (B, T, T); True = may attend
    steps: AttentionSteps  # every tensor with a leading B


def masked_batch_attention(sentences: list[list[str]], mask: Mask | Tensor, seed: int = 0) -> MaskedBatch:
    """Pad the sentences, build the mask and run self-attention on the toy embeddings.

    ``mask`` is a Mask, built on the batch's real lengths, or a custom (T, T) boolean grid, used as it is. Every word
    has one fixed embedding (PAD too), so a sentence gets the same vectors alone or in a batch.
    """
    tokens, lengths = pad_batch(sentences)
    t = len(tokens[0])
    if isinstance(mask, Mask):
        rule, allowed = mask, mask.boolean(t, lengths)  # (T, T) or (B, T, T)
    elif mask.shape == (t, t):
        rule, allowed = None, mask.to(torch.bool)  # (T, T)
    else:
        raise ValueError(f"a custom mask must be a ({t}, {t}) boolean grid")
    x = torch.stack([embed_tokens(row, TOY_D_MODEL, seed) for row in tokens])  # (B, T, C)
    w_q, w_k, w_v = qkv_projections(TOY_D_MODEL, TOY_D_K, seed)
    return MaskedBatch(tokens, lengths, rule, allowed, self_attention(x, w_q, w_k, w_v, mask=allowed))


def difference_from_alone(batch: MaskedBatch, seed: int = 0) -> list[float]:
    """Per sentence, the largest |context in the batch - context of the sentence run alone|
    over its real tokens (sentences are not empty). The alone run has no padding; it keeps
    the causal or window mask if the batch has one.
    """
    if batch.rule is None:
        raise ValueError("a custom mask has no unpadded counterpart")
    differences = []
    for b, (row, length) in enumerate(zip(batch.tokens, batch.lengths, strict=True)):
        alone = masked_batch_attention([row[:length]], batch.rule, seed=seed).steps.context[0]  # (L, d_v)
        padded = batch.steps.context[b, :length]  # (L, d_v)
        differences.append(float((padded - alone).abs().max()))
    return differences


def weights_with_additive_mask(steps: AttentionSteps, additive: Tensor) -> Tensor:
    """softmax(scores * scale + additive mask), (..., Tq, Tk): the additive convention."""
    return masked_softmax(steps.scores * steps.scale + additive)


@dataclass(frozen=True)
class FillComparison:
    """One query row under three ways of applying its mask before softmax."""

    naive: Tensor  # (Tk,) torch.softmax after filling masked scores with -inf: NaN if all are masked
    attn_core: Tensor  # (Tk,) attn_core's masked_softmax: 0 if all are masked
    large_negative: Tensor  # (Tk,) torch.softmax after filling with LARGE_NEGATIVE: uniform if all are masked


def compare_fills(scaled_scores: Tensor, mask_row: Tensor) -> FillComparison:
    """Apply one row's mask three ways.

    Args:
        scaled_scores: (Tk,) the row's scores times the scale, before masking.
        mask_row: (Tk,) boolean, True = may attend.
    """
    filled_inf = scaled_scores.masked_fill(~mask_row, float("-inf"))  # (Tk,)
    filled_large = scaled_scores.masked_fill(~mask_row, LARGE_NEGATIVE)  # (Tk,)
    return FillComparison(torch.softmax(filled_inf, dim=-1), masked_softmax(filled_inf), torch.softmax(filled_large, dim=-1))
