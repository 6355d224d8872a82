"""Masks and score modifications in FlexAttention's terms (attn_core.mask_mods): each gallery mask against its
definition and against torch's own create_mask (which calls it through vmap, as FlexAttention does), the combinators
against torch's, and attend_mod against flex_attention and scaled_dot_product_attention."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import flex_attention as flex

from attn_core.mask_mods import GALLERY, SCORE_MODS, and_masks, attend_mod, dense, mod_weights, not_mask, or_masks
from attn_core.masks import block_counts, causal_mask, global_local_mask, prefix_lm_mask, sink_window_mask, window_mask

T = 11

# Each gallery mask at its default sizes, as a predicate on (query i, key j), written from its definition.
DOCUMENT = [0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 3]  # lengths (3, 3, 2), then the rest one more document
SHARED = [0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]  # a prompt of 2, continuations of 3 and 3, then the rest
DEFINITIONS = {
    "full": lambda i, j: True,
    "causal": lambda i, j: j <= i,
    "sliding_window": lambda i, j: i - 3 < j <= i,
    "dilated_sliding_window": lambda i, j: j <= i and (i - j) % 2 == 0 and (i - j) // 2 < 3,
    "global_local": lambda i, j: i - 3 < j <= i or i < 1 or j < 1,
    "sink_window": lambda i, j: j <= i and (i - 3 < j or j < 1),
    "prefix_lm": lambda i, j: j <= i or (i < 3 and j < 3),
    "documents": lambda i, j: DOCUMENT[i] == DOCUMENT[j],
    "causal_documents": lambda i, j: DOCUMENT[i] == DOCUMENT[j] and j <= i,
    "shared_prefix": lambda i, j: j <= i and (j < 2 or SHARED[i] == SHARED[j]),
    "chunked": lambda i, j: j <= i and i // 4 == j // 4,
    "block_causal": lambda i, j: j // 4 <= i // 4,
}


def defined(name: str) -> torch.Tensor:
    return torch.tensor([[DEFINITIONS[name](i, j) for j in range(T)] for i in range(T)])


def test_the_gallery_has_the_masks_of_todays_models_each_defined_here():
    assert set(GALLERY) == set(DEFINITIONS) and len(GALLERY) >= 10


@pytest.mark.parametrize("name", DEFINITIONS)
def test_each_gallery_mask_is_its_definition_and_what_torch_builds_from_it(name):
    mask_mod = GALLERY[name]()
    ours = dense(mask_mod, T)[0, 0]  # (T, T), by broadcasting index grids
    assert torch.equal(ours, defined(name))
    assert torch.equal(flex.create_mask(mask_mod, 1, 1, T, T, device="cpu")[0, 0], ours)  # torch vmaps it per element


def test_the_gallery_takes_its_sizes_by_keyword():
    assert torch.equal(dense(GALLERY["sliding_window"](window=2), 5)[0, 0], window_mask(5, 2))
    assert torch.equal(
        dense(GALLERY["chunked"](chunk=2), 4)[0, 0], torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]]).bool()
    )


def test_the_masking_views_builders_are_the_gallerys_masks():
    """One mask model: the boolean masks attn_core.masks builds for the views equal the gallery's."""
    assert torch.equal(causal_mask(T), dense(GALLERY["causal"](), T)[0, 0])
    assert torch.equal(window_mask(T, 4), dense(GALLERY["sliding_window"](window=4), T)[0, 0])
    assert torch.equal(prefix_lm_mask(5, T), dense(GALLERY["prefix_lm"](prefix=5), T)[0, 0])
    assert torch.equal(global_local_mask(T, 3, 2), dense(GALLERY["global_local"](window=3, n_global=2), T)[0, 0])
    assert torch.equal(sink_window_mask(T, 3, 2), dense(GALLERY["sink_window"](window=3, sinks=2), T)[0, 0])


def test_the_combinators_have_torchs_semantics():
    window, prefix = GALLERY["sliding_window"](window=2), GALLERY["prefix_lm"](prefix=4)
    for ours, theirs in ((and_masks, flex.and_masks), (or_masks, flex.or_masks)):
        assert torch.equal(dense(ours(window, prefix), T), flex.create_mask(theirs(window, prefix), 1, 1, T, T, device="cpu"))
    assert torch.equal(dense(not_mask(window), T), ~dense(window, T))
    assert dense(and_masks(), 3).all() and not dense(or_masks(), 3).any()  # of none: every key, and no key


@pytest.mark.parametrize("name", SCORE_MODS)
def test_attend_mod_equals_flex_attention_under_each_score_mod_and_a_mask(name):
    """flex_attention, run eagerly (torch materialises the scores: fine at T = 11), with a block mask of the causal
    documents and each score modification at its defaults, on 4 heads."""
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 4, T, 8).unbind(0)  # (B, H, T, d) each
    mask_mod, score_mod = GALLERY["causal_documents"](), SCORE_MODS[name]()
    block_mask = flex.create_block_mask(mask_mod, 2, 4, T, T, device="cpu", BLOCK_SIZE=4)
    expected = flex.flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask)
    assert torch.allclose(attend_mod(q, k, v, mask_mod, score_mod), expected, atol=1e-5)


def test_attend_mod_without_mods_and_under_a_mask_is_scaled_dot_product_attention():
    torch.manual_seed(1)
    q, k, v = torch.randn(3, 1, 2, T, 16).unbind(0)
    assert torch.allclose(attend_mod(q, k, v), F.scaled_dot_product_attention(q, k, v), atol=1e-6)
    window = window_mask(T, 3)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=window)
    assert torch.allclose(attend_mod(q, k, v, GALLERY["sliding_window"](window=3)), expected, atol=1e-6)


def test_score_mods_change_the_scores_as_their_formulas_say():
    """On q·k = 0 everywhere (q = 0) the weights show each modification alone: ALiBi favours near keys, more so in
    head 0 (slope 2^-2 of 4 heads) than in head 3 (2^-8); a temperature of 0.5 doubles a score."""
    q, k = torch.zeros(1, 4, 5, 8), torch.randn(1, 4, 5, 8)
    weights = mod_weights(q, k, GALLERY["causal"](), SCORE_MODS["alibi"](heads=4))  # (1, 4, 5, 5)
    expected = torch.softmax(-0.25 * torch.arange(4, -1, -1.0), dim=0)  # the last query: distances 4 … 0, head 0
    assert torch.allclose(weights[0, 0, 4], expected, atol=1e-6)
    assert weights[0, 0, 4, 4] > weights[0, 3, 4, 4] > 0.2
    q = torch.ones(1, 1, 2, 4)
    k = torch.tensor([[[[1.0, 1, 1, 1], [0, 0, 0, 0]]]])  # scores 4 / sqrt(4) = 2 and 0
    sharp = mod_weights(q, k, score_mod=SCORE_MODS["head_temperature"](temperatures=(0.5,)))
    assert torch.allclose(sharp[0, 0, 0], torch.softmax(torch.tensor([4.0, 0.0]), 0), atol=1e-6)
    capped = mod_weights(q, k, score_mod=SCORE_MODS["soft_cap"](cap=1.0))
    assert torch.allclose(capped[0, 0, 0], torch.softmax(torch.tensor([math.tanh(2.0), 0.0]), 0), atol=1e-6)


def test_a_query_that_sees_no_key_gets_zeros_as_in_flex_attention():
    q, k, v = torch.randn(3, 1, 1, 4, 8).unbind(0)
    nothing_for_query_0 = lambda b, h, q_idx, kv_idx: q_idx > 0  # noqa: E731
    out = attend_mod(q, k, v, nothing_for_query_0)
    assert torch.equal(out[0, 0, 0], torch.zeros(8)) and torch.isfinite(out).all()
    block_mask = flex.create_block_mask(nothing_for_query_0, 1, 1, 4, 4, device="cpu", BLOCK_SIZE=2)
    assert torch.allclose(out, flex.flex_attention(q, k, v, block_mask=block_mask), atol=1e-6)


@pytest.mark.parametrize("t", [300, 384])  # not a multiple of the block size, and one
@pytest.mark.parametrize("name", ["causal", "sliding_window", "causal_documents", "block_causal", "documents"])
def test_block_counts_are_what_create_block_mask_reports(name, t):
    """(empty, partial, full) over the (query block, key block) grid at block size 128: create_block_mask's
    kv_num_blocks counts the partial tiles, full_kv_num_blocks the full ones, and the rest are skipped."""
    sizes = {"sliding_window": {"window": 100}, "causal_documents": {"lengths": (90, 150)}, "documents": {"lengths": (200,)}}
    mask_mod = GALLERY[name](**sizes.get(name, {}))
    block_mask = flex.create_block_mask(mask_mod, 1, 1, t, t, device="cpu", BLOCK_SIZE=128)
    partial, full = int(block_mask.kv_num_blocks.sum()), int(block_mask.full_kv_num_blocks.sum())
    blocks = math.ceil(t / 128) ** 2
    assert block_counts(mask_mod, t, block=128) == (blocks - partial - full, partial, full)


@pytest.mark.parametrize("t", [200, 333])  # no multiple of FlexAttention's block of 128
def test_every_gallery_mask_and_score_modification_equals_flex_attention_compiled(t):
    """One compile a length: head h runs gallery mask h (12 heads, 12 masks) and score modification h mod 4, so that
    every mask and every score modification is checked against the dense reference, and every score modification
    under three masks."""
    masks, scores = [factory() for factory in GALLERY.values()], [factory() for factory in SCORE_MODS.values()]

    def mask_of_head(b, h, q_idx, kv_idx):
        chosen = masks[0](b, h, q_idx, kv_idx)
        for number, mask_mod in enumerate(masks[1:], 1):
            chosen = torch.where(h == number, mask_mod(b, h, q_idx, kv_idx), chosen)
        return chosen

    def score_of_head(score, b, h, q_idx, kv_idx):
        chosen = scores[0](score, b, h, q_idx, kv_idx)
        for number, score_mod in enumerate(scores[1:], 1):
            chosen = torch.where(h % len(scores) == number, score_mod(score, b, h, q_idx, kv_idx), chosen)
        return chosen

    torch.manual_seed(t)
    q, k, v = torch.randn(3, 1, len(masks), t, 16).unbind(0)  # (B, H, T, d) each
    block_mask = flex.create_block_mask(mask_of_head, None, len(masks), t, t, device="cpu", BLOCK_SIZE=128)
    compiled = torch.compile(flex.flex_attention, dynamic=False)(q, k, v, score_mod=score_of_head, block_mask=block_mask)
    dense = attend_mod(q, k, v, mask_of_head, score_of_head)  # (B, H, T, d)
    worst = (dense - compiled).abs().amax(dim=(0, 2, 3))  # (H,): each mask's largest difference
    assert (worst <= 1e-5).all(), dict(zip(GALLERY, worst.tolist(), strict=True))


def test_attend_mod_equals_flex_attention_compiled_on_this_cpu():
    """torch.compile's fused flex_attention (one compile, some seconds) at a length that is no multiple of its block
    size, under a composition of gallery masks and a score modification: the dense reference's numbers."""
    torch.manual_seed(2)
    t = 200
    q, k, v = torch.randn(3, 1, 4, t, 16).unbind(0)
    mask_mod = or_masks(GALLERY["causal_documents"](lengths=(70, 80)), GALLERY["sink_window"](window=16, sinks=4))
    score_mod = SCORE_MODS["relative_bias"](max_distance=8)
    block_mask = flex.create_block_mask(mask_mod, None, None, t, t, device="cpu", BLOCK_SIZE=128)
    compiled = torch.compile(flex.flex_attention)(q, k, v, score_mod=score_mod, block_mask=block_mask)
    assert torch.allclose(attend_mod(q, k, v, mask_mod, score_mod), compiled, atol=1e-5)
