"""Masks and score modifications in PyTorch FlexAttention's terms, and attention under them, densely.

    mask_mod(b, h, q_idx, kv_idx) -> bool        True where query q_idx of head h of sequence b may attend to kv_idx
    score_mod(score, b, h, q_idx, kv_idx) -> score     applied to each scaled score q·k / sqrt(d) before the mask

FlexAttention calls them once per (b, h, q_idx, kv_idx) through vmap; ``dense`` calls them once with index grids that
broadcast to (B, H, T, S). Both work because every function here is written with tensor operations only (no
``if`` on a value, no ``.item()``), as FlexAttention requires. GALLERY and SCORE_MODS map a name to a factory that
takes the sizes as keyword arguments with defaults and returns the function: ``GALLERY["sliding_window"](window=3)``.

    attend_mod:  S = Q Kᵀ / sqrt(d);  S' = score_mod(S);  S'[~mask_mod] = -inf;  A = softmax(S');  out = A V
(a query that sees no key gets weights 0 and output 0, as in FlexAttention).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import accumulate

import torch
from torch import Tensor

MaskMod = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
ScoreMod = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]


# Combinators, with torch.nn.attention.flex_attention's semantics (and_masks of none: every key; or_masks: none).
def and_masks(*mask_mods: MaskMod) -> MaskMod:
    def both(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = b.new_ones((), dtype=torch.bool)
        for mask_mod in mask_mods:
            result = result & mask_mod(b, h, q_idx, kv_idx)
        return result

    return both


def or_masks(*mask_mods: MaskMod) -> MaskMod:
    def either(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = b.new_zeros((), dtype=torch.bool)
        for mask_mod in mask_mods:
            result = result | mask_mod(b, h, q_idx, kv_idx)
        return result

    return either


def not_mask(mask_mod: MaskMod) -> MaskMod:
    def negated(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return ~mask_mod(b, h, q_idx, kv_idx)

    return negated


# The gallery: the masks of today's models and papers. M_ij in each docstring: True where query i sees key j.
def full() -> MaskMod:
    """M_ij = 1: no mask (an encoder)."""
    return lambda b, h, q_idx, kv_idx: q_idx >= 0


def causal() -> MaskMod:
    """M_ij = [j ≤ i]: each token sees itself and the tokens before it (GPT)."""
    return lambda b, h, q_idx, kv_idx: kv_idx <= q_idx


def sliding_window(window: int = 3) -> MaskMod:
    """M_ij = [i - w < j ≤ i]: the last ``window`` keys (Mistral, Gemma 2's local layers)."""
    return lambda b, h, q_idx, kv_idx: (kv_idx <= q_idx) & (q_idx - kv_idx < window)


def dilated_sliding_window(window: int = 3, dilation: int = 2) -> MaskMod:
    """M_ij = [j ≤ i] ∧ [(i - j) mod r = 0] ∧ [(i - j) / r < w]: ``window`` keys ``dilation`` apart (Longformer's
    dilated heads): the same number of keys reaches ``dilation`` times as far back."""
    return lambda b, h, q_idx, kv_idx: (
        (kv_idx <= q_idx) & ((q_idx - kv_idx) % dilation == 0) & (q_idx - kv_idx < window * dilation)
    )


def global_local(window: int = 3, n_global: int = 1) -> MaskMod:
    """M_ij = [i - w < j ≤ i] ∨ [i < G] ∨ [j < G]: a sliding window plus ``n_global`` first tokens that see every
    token and that every token sees (Longformer, BigBird)."""
    return or_masks(sliding_window(window), lambda b, h, q_idx, kv_idx: (q_idx < n_global) | (kv_idx < n_global))


def sink_window(window: int = 3, sinks: int = 1) -> MaskMod:
    """M_ij = [j ≤ i] ∧ ([i - w < j] ∨ [j < S]): a sliding window plus the first ``sinks`` tokens, kept in sight
    (StreamingLLM's attention sinks)."""
    return and_masks(causal(), lambda b, h, q_idx, kv_idx: (q_idx - kv_idx < window) | (kv_idx < sinks))


def prefix_lm(prefix: int = 3) -> MaskMod:
    """M_ij = [j ≤ i] ∨ [i < P ∧ j < P]: the first ``prefix`` tokens (a prompt, an image's patches) see each other
    both ways, the rest causally (T5's and PaliGemma's prefix LM)."""
    return or_masks(causal(), lambda b, h, q_idx, kv_idx: (q_idx < prefix) & (kv_idx < prefix))


def segment(index: Tensor, ends: tuple[int, ...]) -> Tensor:
    """The segment a token index falls in, the segments ending (exclusive) at ``ends``: 0 before ends[0], 1 before
    ends[1], …, n after the last. Arithmetic rather than a lookup table, so it holds at any length, and one comparison
    with a whole number per segment: no reduction and no tensor made outside the mask_mod, which Inductor compiles
    into FlexAttention's kernel whatever the shapes it has seen before."""
    found = torch.zeros_like(index)
    for end in ends:
        found = found + (index >= end)
    return found  # index's shape


def documents(lengths: tuple[int, ...] = (3, 3, 2)) -> MaskMod:
    """M_ij = [doc(i) = doc(j)]: documents of ``lengths`` packed into one sequence, each seeing all of itself and
    nothing of the others (a packed encoder batch); tokens after the last document form one more."""
    ends = tuple(accumulate(lengths))  # each document's end
    return lambda b, h, q_idx, kv_idx: segment(q_idx, ends) == segment(kv_idx, ends)


def causal_documents(lengths: tuple[int, ...] = (3, 3, 2)) -> MaskMod:
    """M_ij = [doc(i) = doc(j)] ∧ [j ≤ i]: packed documents, each causal (pretraining on packed sequences)."""
    return and_masks(documents(lengths), causal())


def shared_prefix(prefix: int = 2, continuations: tuple[int, ...] = (3, 3)) -> MaskMod:
    """M_ij = [j ≤ i] ∧ ([j < P] ∨ [seg(i) = seg(j)]): one prompt of ``prefix`` tokens followed by several
    continuations of ``continuations`` tokens, each seeing the prompt and itself, not the others (several samples,
    or a preference pair, scored in one pass)."""
    ends = tuple(accumulate(continuations, initial=prefix))  # the prompt's end, then each continuation's
    return and_masks(causal(), lambda b, h, q_idx, kv_idx: (kv_idx < prefix) | (segment(q_idx, ends) == segment(kv_idx, ends)))


def chunked(chunk: int = 4) -> MaskMod:
    """M_ij = [j ≤ i] ∧ [⌊i / c⌋ = ⌊j / c⌋]: causal within chunks of ``chunk`` tokens, nothing across (Llama 4's
    local layers)."""
    return lambda b, h, q_idx, kv_idx: (kv_idx <= q_idx) & (q_idx // chunk == kv_idx // chunk)


def block_causal(block: int = 4) -> MaskMod:
    """M_ij = [⌊j / c⌋ ≤ ⌊i / c⌋]: blocks of ``block`` tokens that see all of themselves and every block before
    (block diffusion, which denoises a block at a time)."""
    return lambda b, h, q_idx, kv_idx: kv_idx // block <= q_idx // block


GALLERY: dict[str, Callable[..., MaskMod]] = {
    "full": full,
    "causal": causal,
    "sliding_window": sliding_window,
    "dilated_sliding_window": dilated_sliding_window,
    "global_local": global_local,
    "sink_window": sink_window,
    "prefix_lm": prefix_lm,
    "documents": documents,
    "causal_documents": causal_documents,
    "shared_prefix": shared_prefix,
    "chunked": chunked,
    "block_causal": block_causal,
}


# Score modifications: score' = f(score, b, h, i, j), on the scaled score, before the mask.
def alibi(heads: int = 8) -> ScoreMod:
    """score' = score - m_h (i - j), m_h = 2^(-8 (h + 1) / H): a penalty growing with the distance, steeper in the
    first heads (ALiBi, Press et al. 2022; BLOOM, MPT); heads past ``heads`` take the last slope."""
    slopes = torch.tensor([2 ** (-8 * (head + 1) / heads) for head in range(heads)])  # (H,)
    return lambda score, b, h, q_idx, kv_idx: score - slopes.to(score.device)[h.clamp(max=heads - 1)] * (q_idx - kv_idx)


def soft_cap(cap: float = 5.0) -> ScoreMod:
    """score' = c tanh(score / c): scores squashed into (-c, c), smooth near 0 (Gemma 2 caps its logits at 50)."""
    return lambda score, b, h, q_idx, kv_idx: cap * torch.tanh(score / cap)


def relative_bias(max_distance: int = 4, seed: int = 0) -> ScoreMod:
    """score' = score + β[clip(i - j, -D, D)]: a bias learnt per relative position, distances past ``max_distance``
    sharing one (T5's relative attention bias, here with seeded values)."""
    bias = torch.randn(2 * max_distance + 1, generator=torch.Generator().manual_seed(seed))  # (2D + 1,)
    return lambda score, b, h, q_idx, kv_idx: (
        score + bias.to(score.device)[(q_idx - kv_idx).clamp(-max_distance, max_distance) + max_distance]
    )


def head_temperature(temperatures: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)) -> ScoreMod:
    """score' = score / τ_h: each head's own temperature, sharper below 1, flatter above (heads past the list take its
    last)."""
    taus = torch.tensor(temperatures)  # (n,)
    return lambda score, b, h, q_idx, kv_idx: score / taus.to(score.device)[h.clamp(max=len(temperatures) - 1)]


SCORE_MODS: dict[str, Callable[..., ScoreMod]] = {
    "alibi": alibi,
    "soft_cap": soft_cap,
    "relative_bias": relative_bias,
    "head_temperature": head_temperature,
}


def index_grids(batch: int, heads: int, t_q: int, t_k: int, device=None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """b (B, 1, 1, 1), h (1, H, 1, 1), q_idx (1, 1, T, 1), kv_idx (1, 1, 1, S): every (b, h, i, j) by broadcasting."""
    b = torch.arange(batch, device=device).view(-1, 1, 1, 1)
    h = torch.arange(heads, device=device).view(1, -1, 1, 1)
    q_idx = torch.arange(t_q, device=device).view(1, 1, -1, 1)
    kv_idx = torch.arange(t_k, device=device).view(1, 1, 1, -1)
    return b, h, q_idx, kv_idx


def dense(mask_mod: MaskMod, t: int, t_k: int | None = None, batch: int = 1, heads: int = 1, device=None) -> Tensor:
    """The boolean mask ``mask_mod`` describes, (B, H, t, t_k); as torch's create_mask builds it."""
    grids = index_grids(batch, heads, t, t if t_k is None else t_k, device)
    return mask_mod(*grids).expand(batch, heads, t, grids[3].shape[-1])


def mod_scores(q: Tensor, k: Tensor, mask_mod: MaskMod | None = None, score_mod: ScoreMod | None = None) -> Tensor:
    """S' = mask(score_mod(Q Kᵀ / sqrt(d))), -inf where ``mask_mod`` hides a key: (B, H, T, S) for q (B, H, T, d) and
    k (B, H, S, d)."""
    batch, heads, t_q, d = q.shape
    grids = index_grids(batch, heads, t_q, k.shape[-2], q.device)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, H, T, S)
    if score_mod is not None:
        scores = score_mod(scores, *grids)
    if mask_mod is not None:
        scores = scores.masked_fill(~mask_mod(*grids), float("-inf"))
    return scores


def softmax_seen(scores: Tensor) -> Tensor:
    """softmax over the last dimension; a row of only -inf (a query that sees no key) gets weights 0."""
    seen = torch.isfinite(scores).any(-1, keepdim=True)  # (..., T, 1)
    return torch.softmax(scores.masked_fill(~seen, 0.0), dim=-1) * seen


def mod_weights(q: Tensor, k: Tensor, mask_mod: MaskMod | None = None, score_mod: ScoreMod | None = None) -> Tensor:
    """A = softmax(S'), S' = mod_scores: (B, H, T, S); a query that sees no key gets weights 0."""
    return softmax_seen(mod_scores(q, k, mask_mod, score_mod))


def attend_mod(q: Tensor, k: Tensor, v: Tensor, mask_mod: MaskMod | None = None, score_mod: ScoreMod | None = None) -> Tensor:
    """Attention under ``mask_mod`` and ``score_mod``, densely: (B, H, T, d_v), what flex_attention computes."""
    return mod_weights(q, k, mask_mod, score_mod) @ v  # (B, H, T, d_v)
