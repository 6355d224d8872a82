"""attn_core.scaling and attn_core.masking against theory, PyTorch and the sources' numbers."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_core import additive_mask, causal_mask, entropy, tokenize
from attn_core.masking import (
    BATCH_MASKS,
    CUSTOM,
    PAD,
    TOY_D_K,
    TOY_D_MODEL,
    compare_fills,
    difference_from_alone,
    masked_batch_attention,
    pad_batch,
    weights_with_additive_mask,
)
from attn_core.masks import Mask, window_mask
from attn_core.scaling import (
    D_K_VALUES,
    SCALE_STEPS,
    dot_product_variance,
    jacobian_norm,
    normalized_entropy,
    sentence_attention,
    softmax_at_scale,
    softmax_jacobian,
    softmax_saturation,
)
from attn_core.toy import embed_tokens, qkv_projections
from attn_core.walkthrough import build_walkthrough

# Softmax temperature (source 003).
LOGITS = [0.1, 0.4, -0.9, 0.02, 0.35, -0.62]
SOFTMAX_ROUNDED = [0.18, 0.25, 0.07, 0.17, 0.24, 0.09]
SOFTMAX_X100_ROUNDED = [0.00, 0.99, 0.00, 0.00, 0.01, 0.00]

SENTENCES = [tokenize(s) for s in ("the cat sat on the mat", "I am going to play", "money goes into the bank every month")]


# --- Scaling ---------------------------------------------------------------------------------


def test_softmax_at_scale_reproduces_the_source():
    logits = torch.tensor(LOGITS)
    assert softmax_at_scale(logits, 1.0).round(decimals=2).tolist() == pytest.approx(SOFTMAX_ROUNDED)
    assert softmax_at_scale(logits, 100.0).round(decimals=2).tolist() == pytest.approx(SOFTMAX_X100_ROUNDED)
    assert torch.allclose(softmax_at_scale(logits, 0.3), torch.softmax(0.3 * logits, dim=-1))


def test_scale_steps_are_log_spaced_from_001_to_100():
    assert SCALE_STEPS[0] == 0.01 and SCALE_STEPS[-1] == 100.0 and 1.0 in SCALE_STEPS
    ratios = np.diff(np.log10(SCALE_STEPS))
    assert np.allclose(ratios, 0.1, atol=0.02)


@pytest.mark.parametrize("seed", [0, 1])
def test_entropy_falls_as_the_scale_grows(seed):
    random_logits = torch.randn(5, 9, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    for logits in (torch.tensor(LOGITS, dtype=torch.float64), random_logits):
        entropies = torch.stack([entropy(softmax_at_scale(logits, s)) for s in SCALE_STEPS])  # (S, ...)
        # Strictly falling until a row is one-hot to float64 precision.
        assert ((entropies[1:] < entropies[:-1]) | (entropies[:-1] < 1e-12)).all()
        assert (normalized_entropy(softmax_at_scale(logits, 0.01)) > 0.99).all()  # almost uniform
    assert float(normalized_entropy(softmax_at_scale(torch.tensor(LOGITS), 100.0))) < 0.1  # almost one-hot


def test_variance_grows_linearly_in_d_k_and_is_one_after_scaling():
    curves = dot_product_variance(seed=0)
    d_k = torch.tensor(D_K_VALUES, dtype=torch.float32)
    assert torch.equal(curves.d_k, d_k)
    # Measured Var(q.k) is d_k within Monte Carlo error, for every d_k; a log-log fit has slope 1.
    assert torch.allclose(curves.unscaled / d_k, torch.ones(len(D_K_VALUES)), atol=0.1)
    slope = np.polyfit(np.log(D_K_VALUES), np.log(curves.unscaled.numpy()), 1)[0]
    assert slope == pytest.approx(1.0, abs=0.03)
    # After dividing by sqrt(d_k) it is about 1.
    assert torch.allclose(curves.scaled, torch.ones(len(D_K_VALUES)), atol=0.1)
    assert torch.equal(curves.theory_unscaled, d_k) and torch.equal(curves.theory_scaled, torch.ones_like(d_k))


def test_monte_carlo_is_seeded():
    assert torch.equal(dot_product_variance(seed=3).unscaled, dot_product_variance(seed=3).unscaled)
    assert not torch.equal(dot_product_variance(seed=3).unscaled, dot_product_variance(seed=4).unscaled)
    assert torch.equal(softmax_saturation(seed=3).unscaled.max_weight, softmax_saturation(seed=3).unscaled.max_weight)


def test_unscaled_softmax_saturates_and_scaled_does_not():
    curves = softmax_saturation(seed=0)
    unscaled, scaled = curves.unscaled, curves.scaled
    # Unscaled: entropy and gradient fall, the largest weight rises as d_k grows.
    assert (unscaled.normalized_entropy[1:] < unscaled.normalized_entropy[:-1]).all()
    assert (unscaled.max_weight[1:] > unscaled.max_weight[:-1]).all()
    assert unscaled.max_weight[-1] > 0.9 and unscaled.normalized_entropy[-1] < 0.1
    assert unscaled.jacobian_norm[-1] < 0.2 * scaled.jacobian_norm[-1]
    # Scaled: every statistic stays about where it is at d_k = 1.
    for stat in (scaled.normalized_entropy, scaled.max_weight, scaled.jacobian_norm):
        assert float(stat.max() - stat.min()) < 0.08
    # At d_k = 1 both are the same computation.
    assert unscaled.normalized_entropy[0] == pytest.approx(float(scaled.normalized_entropy[0]))


def test_softmax_jacobian_matches_autograd():
    logits = torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    weights = torch.softmax(logits, dim=-1)
    for row in range(4):
        expected = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, dim=-1), logits[row])  # (6, 6)
        assert torch.allclose(softmax_jacobian(weights[row]), expected)
        assert float(jacobian_norm(weights[row])) == pytest.approx(float(torch.linalg.norm(expected)))
    assert float(jacobian_norm(torch.tensor([0.0, 1.0, 0.0]))) == 0.0  # one-hot: no gradient at all


def test_normalized_entropy():
    assert float(normalized_entropy(torch.full((5,), 0.2))) == pytest.approx(1.0)
    assert float(normalized_entropy(torch.tensor([1.0, 0.0, 0.0]))) == 0.0
    assert normalized_entropy(torch.ones(3, 1)).tolist() == [0.0, 0.0, 0.0]  # one key: nothing to spread over
    assert float(normalized_entropy(torch.tensor([0.5, 0.5, 0.0, 0.0]))) == pytest.approx(math.log(2) / math.log(4))


def test_sentence_attention_multiplies_the_usual_scale():
    tokens = tokenize("I am going to play")
    standard = sentence_attention(tokens, d_k=8, seed=0, multiplier=1.0)
    # With multiplier 1 it is the Pipeline's attention for the same sentence, seed and sizes.
    walk = build_walkthrough("custom", tokens, 32, 8, seed=0)
    assert torch.allclose(standard.weights, walk.steps.weights[0])
    hot = sentence_attention(tokens, d_k=8, seed=0, multiplier=4.0)
    assert hot.scale == pytest.approx(4.0 / math.sqrt(8))
    expected = F.scaled_dot_product_attention(hot.q, hot.k, hot.v, scale=4.0 / math.sqrt(8))
    assert torch.allclose(hot.context, expected, atol=1e-6)
    assert (entropy(hot.weights) < entropy(standard.weights)).all()


# --- Masking ---------------------------------------------------------------------------------


def test_pad_batch():
    padded, lengths = pad_batch([["a", "b", "c"], ["d"], ["e", "f"]])
    assert padded == [["a", "b", "c"], ["d", PAD, PAD], ["e", "f", PAD]]
    assert lengths == [3, 1, 2]


def batch_mask(kind: str, window: int = 3) -> Mask:
    """One of the Masking view's batch masks but the custom grid."""
    return Mask(kind, (window,) if kind == "window" else ())


def test_batch_masks():
    sentences, lengths, t = [["a", "b", "c"], ["d"]], [3, 1], 3
    causal = Mask("causal").boolean(t, lengths)
    assert torch.equal(causal, causal_mask(3))
    padding = Mask("padding").boolean(t, lengths)
    assert padding.shape == (2, 3, 3)
    assert padding[0].all()  # no PAD in the first sentence
    assert padding[1].tolist() == [[True, False, False], [False, False, False], [False, False, False]]
    assert torch.equal(Mask("both").boolean(t, lengths), padding & causal)
    grid = torch.rand(3, 3) > 0.5
    assert torch.equal(masked_batch_attention(sentences, grid).mask, grid)
    with pytest.raises(ValueError):
        masked_batch_attention(sentences, torch.ones(2, 2, dtype=torch.bool))
    with pytest.raises(ValueError):
        Mask("sideways")
    window = Mask("window", (2,)).boolean(t, lengths)
    assert torch.equal(window, padding & window_mask(3, 2))
    assert window[0].int().tolist() == [[1, 0, 0], [1, 1, 0], [0, 1, 1]]  # the last two keys, itself included


@pytest.mark.parametrize("window", [1, 2, 3, 50])
def test_window_outputs_see_only_the_last_w_tokens(window):
    """Padded or alone, each real token's context comes from itself and the window - 1 tokens before it."""
    batch = masked_batch_attention(SENTENCES, Mask("window", (window,)))
    assert batch.rule == Mask("window", (window,)) and max(difference_from_alone(batch)) < 1e-6
    weights = batch.steps.weights  # (B, T, T)
    for b, length in enumerate(batch.lengths):
        for i in range(length):
            seen = weights[b, i].nonzero().flatten().tolist()
            assert seen == list(range(max(0, i - window + 1), i + 1))
    w_q, w_k, w_v = qkv_projections(TOY_D_MODEL, TOY_D_K, 0)
    x = embed_tokens(SENTENCES[0], TOY_D_MODEL, 0)  # (L, C)
    local = window_mask(len(SENTENCES[0]), window)
    alone = F.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, attn_mask=local)
    assert torch.allclose(batch.steps.context[0, : len(SENTENCES[0])], alone, atol=1e-6)
    if window >= max(batch.lengths):  # a window as long as the text is the causal mask
        causal = masked_batch_attention(SENTENCES, Mask("both"))
        assert torch.equal(batch.mask, causal.mask) and torch.equal(batch.steps.context, causal.steps.context)


@pytest.mark.parametrize("kind", ["causal", "padding", "both"])
def test_padded_outputs_equal_unpadded_ones_for_real_tokens(kind):
    batch = masked_batch_attention(SENTENCES, Mask(kind))
    assert batch.steps.context.shape == (3, 7, TOY_D_K)
    assert max(difference_from_alone(batch)) < 1e-6
    # Independently: each sentence alone through PyTorch's own attention.
    w_q, w_k, w_v = qkv_projections(TOY_D_MODEL, TOY_D_K, 0)
    for b, tokens in enumerate(SENTENCES):
        x = embed_tokens(tokens, TOY_D_MODEL, 0)  # (L, C)
        alone = F.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, is_causal=kind != "padding")
        assert torch.allclose(batch.steps.context[b, : len(tokens)], alone, atol=1e-6)


def test_padding_blocks_pad_keys_and_pad_queries():
    batch = masked_batch_attention(SENTENCES, Mask("padding"))
    weights = batch.steps.weights  # (B, T, T)
    for b, length in enumerate(batch.lengths):
        assert weights[b, :, length:].eq(0).all()  # nobody attends to a PAD key
        assert weights[b, length:].eq(0).all() and batch.steps.context[b, length:].eq(0).all()  # PAD queries: 0
        assert batch.steps.empty_rows[b].tolist() == [i >= length for i in range(7)]


@pytest.mark.parametrize("kind", ["causal", "both"])
def test_causal_outputs_never_depend_on_later_tokens(kind):
    tokens = tokenize("the animal didn't cross the street because it was tired")
    original = masked_batch_attention([tokens], Mask(kind)).steps.context[0]  # (T, d)
    for t in range(len(tokens) - 1):
        changed = tokens[: t + 1] + ["zebra"] * (len(tokens) - t - 1)
        context = masked_batch_attention([changed], Mask(kind)).steps.context[0]
        assert torch.equal(context[: t + 1], original[: t + 1])
        assert not torch.allclose(context[t + 1 :], original[t + 1 :])  # the later outputs did change


def test_no_nan_for_any_mask():
    generator = torch.Generator().manual_seed(0)
    t = 7
    grids = [torch.zeros(t, t, dtype=torch.bool), torch.ones(t, t, dtype=torch.bool)]
    grids += [torch.rand(t, t, generator=generator) < p for p in (0.1, 0.3, 0.6) for _ in range(5)]
    batches = [masked_batch_attention(SENTENCES, grid) for grid in grids]
    batches += [masked_batch_attention(SENTENCES, batch_mask(kind)) for kind in BATCH_MASKS if kind != CUSTOM]
    for batch in batches:
        steps = batch.steps
        assert not steps.weights.isnan().any() and not steps.context.isnan().any()
        empty = steps.empty_rows
        assert steps.weights[empty].eq(0).all() and steps.context[empty].eq(0).all()
        assert torch.allclose(steps.weights.sum(-1)[~empty], torch.ones(()), atol=1e-5)
    blocked = batches[0].steps
    assert blocked.empty_rows.all() and blocked.weights.eq(0).all()


def test_compare_fills_on_a_blocked_and_an_open_row():
    scores = torch.tensor([0.5, -1.0, 2.0, 0.1])
    blocked = compare_fills(scores, torch.zeros(4, dtype=torch.bool))
    assert blocked.naive.isnan().all()  # softmax over only -inf: 0 / 0
    assert blocked.attn_core.eq(0).all()
    assert torch.allclose(blocked.large_negative, torch.full((4,), 0.25))  # uniform over forbidden keys
    open_row = compare_fills(scores, torch.tensor([True, False, True, False]))
    expected = torch.zeros(4)
    expected[[0, 2]] = torch.softmax(scores[[0, 2]], dim=-1)
    for weights in (open_row.naive, open_row.attn_core, open_row.large_negative):
        assert torch.allclose(weights, expected)


@pytest.mark.parametrize("kind", BATCH_MASKS)
def test_boolean_and_additive_masks_give_the_same_weights(kind):
    grid = torch.rand(7, 7, generator=torch.Generator().manual_seed(1)) < 0.5 if kind == CUSTOM else None
    batch = masked_batch_attention(SENTENCES, grid if kind == CUSTOM else batch_mask(kind))
    steps = batch.steps
    additive = additive_mask(batch.mask)
    assert set(additive.unique().tolist()) <= {0.0, -math.inf}
    assert torch.equal(additive == 0, batch.mask)
    assert torch.allclose(weights_with_additive_mask(steps, additive), steps.weights)
    # PyTorch's attention with the additive (float) mask agrees on every row that sees a key.
    reference = F.scaled_dot_product_attention(steps.q, steps.k, steps.v, attn_mask=additive, scale=steps.scale)
    visible = ~steps.empty_rows
    assert torch.allclose(reference[visible], steps.context[visible], atol=1e-6)
