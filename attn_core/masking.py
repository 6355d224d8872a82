"""Masks in attention: look-ahead (causal), padding, both, sliding-window (local) and custom ones.

A boolean mask is True where a query may attend to a key (PyTorch's
convention); an additive mask holds 0 there and -inf elsewhere. A padded
batch masks the [PAD] keys for every query, and a [PAD] query sees nothing:
its row is fully blocked, so attn_core gives it weights 0 and context 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attn_core.attention import AttentionSteps, causal_mask, masked_softmax, padding_mask, self_attention
from attn_core.tiled import hidden_keys
from attn_core.toy import embed_tokens, qkv_projections

PAD = "[PAD]"
MASK_KINDS = ("causal", "padding", "both", "custom", "window")
MASKING_WINDOW = 3  # keys a query sees under the "window" kind by default: itself and the two before it
MASKING_D_MODEL = 16  # model width C of the toy embeddings in the Masking view
MASKING_D_K = 8  # head size of the Masking view
LARGE_NEGATIVE = -1e9  # the "large negative number" some code fills masked scores with


def pad_batch(sentences: list[list[str]]) -> tuple[list[list[str]], list[int]]:
    """Each token list padded with PAD to the longest one, and the real lengths."""
    longest = max((len(tokens) for tokens in sentences), default=0)
    padded = [tokens + [PAD] * (longest - len(tokens)) for tokens in sentences]
    return padded, [len(tokens) for tokens in sentences]


def window_mask(t: int, window: int, t_k: int | None = None, device: torch.device | str | None = None) -> Tensor:
    """(t, t_k) boolean sliding-window (local) mask: query i sees keys j with i - window < j <= i, the last
    ``window`` keys up to itself (``t_k`` defaults to t). ``window`` >= t is the causal mask."""
    if window < 1:
        raise ValueError("the window must be at least 1 key")
    return ~hidden_keys(range(t), range(t if t_k is None else t_k), window, device)  # (t, t_k)


def document_mask(lengths: list[int], t: int) -> Tensor:
    """(t, t) boolean: several documents packed into one row of ``t`` tokens, each seeing only itself, causally.

    Document d holds ``lengths[d]`` consecutive tokens; tokens after the last document (padding) see nothing.
    Packing saves the padding of a batch; the mask keeps the documents from reading each other.
    """
    if min(lengths, default=1) < 1 or sum(lengths) > t:
        raise ValueError(f"document lengths must be at least 1 and add up to at most {t}, not {lengths}")
    document = torch.repeat_interleave(torch.arange(len(lengths) + 1), torch.tensor([*lengths, t - sum(lengths)]))  # (t,)
    same = document[:, None] == document[None, :]  # (t, t)
    real = document < len(lengths)  # (t,): not the padding after the documents
    return same & real[:, None] & causal_mask(t)  # (t, t)


def prefix_lm_mask(prefix: int, t: int) -> Tensor:
    """(t, t) boolean: the first ``prefix`` tokens (a prompt, an image's patches) see each other both ways; the
    rest see everything before them, causally (a prefix language model, as in T5's and PaliGemma's decoders)."""
    if not 0 <= prefix <= t:
        raise ValueError(f"the prefix must be between 0 and {t} tokens, not {prefix}")
    in_prefix = torch.arange(t) < prefix  # (t,)
    return causal_mask(t) | (in_prefix[:, None] & in_prefix[None, :])  # (t, t)


def global_local_mask(t: int, window: int, n_global: int) -> Tensor:
    """(t, t) boolean: a causal sliding window of ``window`` keys, plus ``n_global`` first tokens that every token
    sees and that see every token (Longformer's and BigBird's global tokens; StreamingLLM's attention sinks are
    the causal half of this)."""
    if not 0 <= n_global <= t:
        raise ValueError(f"the global tokens must be between 0 and {t}, not {n_global}")
    is_global = torch.arange(t) < n_global  # (t,)
    return window_mask(t, window) | is_global[None, :] | is_global[:, None]  # (t, t)


def query_key_padding_mask(lengths: list[int], t: int) -> Tensor:
    """(B, t, t) boolean: True where both the query and the key are real tokens."""
    real = padding_mask(lengths, t)  # (B, 1, t): real keys
    return real & real.transpose(-2, -1)  # (B, t, t)


def build_mask(kind: str, lengths: list[int], t: int, custom: Tensor | None = None, window: int = MASKING_WINDOW) -> Tensor:
    """The boolean mask of one kind of MASK_KINDS, broadcastable to (B, t, t).

    ``custom`` is a (t, t) boolean grid, used as it is by the "custom" kind. "window" keeps the last
    ``window`` keys of each query (itself included) among the real tokens.
    """
    if kind == "causal":
        return causal_mask(t)  # (t, t)
    if kind == "padding":
        return query_key_padding_mask(lengths, t)  # (B, t, t)
    if kind == "both":
        return query_key_padding_mask(lengths, t) & causal_mask(t)  # (B, t, t)
    if kind == "custom":
        if custom is None or custom.shape != (t, t):
            raise ValueError(f"a custom mask must be a ({t}, {t}) boolean grid")
        return custom.to(torch.bool)  # (t, t)
    if kind == "window":
        return query_key_padding_mask(lengths, t) & window_mask(t, window)  # (B, t, t)
    raise ValueError(f"kind must be one of {MASK_KINDS}")


@dataclass(frozen=True)
class MaskedBatch:
    """A batch of sentences padded to one length, its mask and its attention."""

    tokens: list[list[str]]  # B lists of T tokens, PAD at the end of the shorter ones
    lengths: list[int]  # B real lengths
    kind: str  # one of MASK_KINDS
    mask: Tensor  # bool, broadcastable to (B, T, T); True = may attend
    steps: AttentionSteps  # every tensor with a leading B
    window: int = MASKING_WINDOW  # keys per query under the "window" kind


def masked_batch_attention(
    sentences: list[list[str]], kind: str, custom: Tensor | None = None, seed: int = 0, window: int = MASKING_WINDOW
) -> MaskedBatch:
    """Pad the sentences, build the mask and run self-attention on the toy embeddings.

    Every word has one fixed embedding (PAD too), so a sentence gets the same
    vectors alone or in a batch.
    """
    tokens, lengths = pad_batch(sentences)
    t = len(tokens[0])
    x = torch.stack([embed_tokens(row, MASKING_D_MODEL, seed) for row in tokens])  # (B, T, C)
    mask = build_mask(kind, lengths, t, custom, window)  # (T, T) or (B, T, T)
    w_q, w_k, w_v = qkv_projections(MASKING_D_MODEL, MASKING_D_K, seed)
    return MaskedBatch(tokens, lengths, kind, mask, self_attention(x, w_q, w_k, w_v, mask=mask), window)


def difference_from_alone(batch: MaskedBatch, seed: int = 0) -> list[float]:
    """Per sentence, the largest |context in the batch - context of the sentence run alone|
    over its real tokens (sentences are not empty). The alone run has no padding; it keeps
    the causal or window mask if the batch has one.
    """
    if batch.kind == "custom":
        raise ValueError("a custom mask has no unpadded counterpart")
    differences = []
    for b, (row, length) in enumerate(zip(batch.tokens, batch.lengths, strict=True)):
        alone = masked_batch_attention([row[:length]], batch.kind, seed=seed, window=batch.window).steps.context[0]  # (L, d_v)
        padded = batch.steps.context[b, :length]  # (L, d_v)
        differences.append(float((padded - alone).abs().max()))
    return differences


def additive_mask(mask: Tensor) -> Tensor:
    """The additive form of a boolean mask: 0 where True (attend), -inf where False."""
    return torch.zeros(mask.shape, device=mask.device).masked_fill(~mask, float("-inf"))


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


def mask_to_text(mask: Tensor) -> str:
    """A (T, T) boolean mask as compact text for a link: rows of 0/1 joined by "-" ("10-11" is causal for T = 2)."""
    return "-".join("".join("1" if allowed else "0" for allowed in row) for row in mask.tolist())


def mask_from_text(text: str) -> Tensor:
    """The (T, T) boolean mask ``mask_to_text`` wrote; ValueError with a readable reason for anything else."""
    rows = text.split("-")
    if not all(rows) or any(set(row) - {"0", "1"} for row in rows) or any(len(row) != len(rows) for row in rows):
        raise ValueError("expected T rows of T digits 0 or 1, joined by “-”")
    return torch.tensor([[digit == "1" for digit in row] for row in rows], dtype=torch.bool)  # (T, T)
