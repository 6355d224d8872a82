"""attn_core.attention against PyTorch's own attention and the sources' worked examples."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_core import (
    attend,
    available_devices,
    causal_mask,
    cross_attention,
    entropy,
    masked_softmax,
    padding_mask,
    sdpa_difference,
    self_attention,
)

# "Playing Outside" (source 001), d_k = 4, and its results to 4 decimals (computed in float64).
PLAYING_Q = [[0.212, 0.04, 0.63, 0.36], [0.1, 0.14, 0.86, 0.77]]
PLAYING_K = [[0.31, 0.84, 0.963, 0.57], [0.45, 0.94, 0.73, 0.58]]
PLAYING_V = [[0.36, 0.83, 0.1, 0.38], [0.31, 0.36, 0.19, 0.72]]
PLAYING_SCORES = [[0.9112, 0.8017], [1.4157, 1.2510]]
PLAYING_SCALED = [[0.4556, 0.4008], [0.7078, 0.6255]]
PLAYING_WEIGHTS = [[0.5137, 0.4863], [0.5206, 0.4794]]
PLAYING_CONTEXT = [[0.3357, 0.6014, 0.1438, 0.5453], [0.3360, 0.6047, 0.1431, 0.5430]]

# Softmax temperature (source 003).
LOGITS = [0.1, 0.4, -0.9, 0.02, 0.35, -0.62]
SOFTMAX_ROUNDED = [0.18, 0.25, 0.07, 0.17, 0.24, 0.09]
SOFTMAX_X100_ROUNDED = [0.00, 0.99, 0.00, 0.00, 0.01, 0.00]

DEVICES = available_devices()


@st.composite
def attention_inputs(draw):
    """Random q, k, v, an optional boolean mask (possibly blocking whole rows) and scale."""
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    tq, tk = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    d_k, d_v = draw(st.integers(1, 16)), draw(st.integers(1, 16))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
    q = torch.randn(*batch, tq, d_k, generator=gen)
    k = torch.randn(*batch, tk, d_k, generator=gen)
    v = torch.randn(*batch, tk, d_v, generator=gen)
    mask = None
    mask_kind = draw(st.sampled_from(["none", "full", "broadcast", "causal"]))
    if mask_kind == "full":
        mask = torch.rand(*batch, tq, tk, generator=gen) < draw(st.floats(0.1, 1.0))
    elif mask_kind == "broadcast":
        mask = torch.rand(tq, tk, generator=gen) < draw(st.floats(0.1, 1.0))
    elif mask_kind == "causal" and tq == tk:
        mask = causal_mask(tq)
    scale = draw(st.one_of(st.none(), st.floats(0.01, 10.0)))
    return q, k, v, mask, scale


def float32_tolerance(steps) -> float:
    """1e-5, or more where float32 rounding of large scores allows: the scores' rounding error is at most
    about eps · scale · |q| |k|, and a context row moves by at most that times max |v| (seen up to 0.5x of it)."""
    largest_score = steps.scale * steps.q.norm(dim=-1).max() * steps.k.norm(dim=-1).max()
    rounding = torch.finfo(torch.float32).eps * steps.v.abs().max() * (1 + largest_score)
    return max(1e-5, 4 * float(rounding))


@settings(max_examples=300, deadline=None)
@given(attention_inputs())
def test_attend_equals_torch_sdpa(inputs):
    q, k, v, mask, scale = inputs
    steps = attend(q, k, v, mask=mask, scale=scale)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    visible = ~steps.empty_rows.unsqueeze(-1)  # rows with at least one visible key
    assert steps.context.shape == expected.shape
    tolerance = float32_tolerance(steps)
    assert torch.allclose(steps.context * visible, expected * visible, atol=tolerance, rtol=0)
    assert sdpa_difference(steps) < tolerance
    assert not steps.weights.isnan().any() and not steps.context.isnan().any()
    # Each visible row is a distribution; masked keys get exactly 0.
    sums = steps.weights.sum(-1)
    assert torch.allclose(sums[~steps.empty_rows], torch.ones(()), atol=1e-5)
    if mask is not None:
        assert steps.weights.masked_select(~mask.expand_as(steps.weights)).eq(0).all()


@pytest.mark.parametrize("device", DEVICES)
def test_fully_masked_rows_give_zero_not_nan(device):
    q = torch.randn(2, 3, 4, device=device)
    v = torch.randn(2, 3, 5, device=device)
    mask = torch.ones(2, 3, 3, dtype=torch.bool, device=device)
    mask[0, 1] = False  # query 1 of sentence 0 sees nothing
    mask[1] = False  # sentence 1 sees nothing at all
    steps = attend(q, q, v, mask=mask)
    assert steps.empty_rows.tolist() == [[False, True, False], [True, True, True]]
    assert steps.weights[0, 1].eq(0).all() and steps.context[0, 1].eq(0).all()
    assert steps.weights[1].eq(0).all() and steps.context[1].eq(0).all()
    assert torch.isneginf(steps.scaled[1]).all()
    # Naive softmax over a row of -inf is NaN: the engine's answer is what differs.
    assert torch.softmax(steps.scaled[1], dim=-1).isnan().all()


def test_playing_outside_worked_example():
    q, k, v = (torch.tensor(rows, dtype=torch.float64) for rows in (PLAYING_Q, PLAYING_K, PLAYING_V))
    steps = attend(q, k, v)
    assert steps.scale == 0.5
    for got, expected in [
        (steps.scores, PLAYING_SCORES),
        (steps.scaled, PLAYING_SCALED),
        (steps.weights, PLAYING_WEIGHTS),
        (steps.context, PLAYING_CONTEXT),
    ]:
        assert got.round(decimals=4).tolist() == expected


def test_softmax_temperature_example():
    logits = torch.tensor(LOGITS)
    assert masked_softmax(logits).round(decimals=2).tolist() == pytest.approx(SOFTMAX_ROUNDED)
    assert masked_softmax(100 * logits).round(decimals=2).tolist() == pytest.approx(SOFTMAX_X100_ROUNDED)


@pytest.mark.parametrize("device", DEVICES)
def test_batch_example_shapes(device):
    b, t, c, d = 6, 8, 32, 16
    x = torch.randn(b, t, c, device=device)
    w_q, w_k, w_v = (torch.randn(c, d, device=device) for _ in range(3))
    steps = self_attention(x, w_q, w_k, w_v)
    assert steps.q.shape == steps.k.shape == steps.v.shape == (6, 8, 16)
    assert steps.scores.shape == steps.weights.shape == (6, 8, 8)
    assert steps.context.shape == (6, 8, 16)
    assert torch.allclose(steps.q, x @ w_q) and torch.allclose(steps.v, x @ w_v)
    assert steps.scale == pytest.approx(1 / math.sqrt(16))


def test_unscaled_means_scale_one():
    q, k, v = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 2)
    steps = attend(q, k, v, scale=1.0)
    assert torch.equal(steps.scaled, steps.scores)


def test_cross_attention_takes_keys_and_values_from_the_source():
    x_query, x_source = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    w_q, w_k, w_v = torch.randn(8, 4), torch.randn(8, 4), torch.randn(8, 6)
    steps = cross_attention(x_query, x_source, w_q, w_k, w_v)
    assert steps.weights.shape == (2, 3, 5) and steps.context.shape == (2, 3, 6)
    assert torch.allclose(steps.k, x_source @ w_k) and torch.allclose(steps.q, x_query @ w_q)


@pytest.mark.parametrize("device", DEVICES)
def test_masks(device):
    assert causal_mask(3, device).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    pad = padding_mask([2, 3], 4, device)
    assert pad.shape == (2, 1, 4)
    assert pad.tolist() == [[[True, True, False, False]], [[True, True, True, False]]]
    assert torch.equal(padding_mask(torch.tensor([2, 3]), 4), pad.cpu())


def test_causal_mask_blocks_the_future():
    x = torch.randn(6, 8)
    w = [torch.randn(8, 4) for _ in range(3)]
    weights = self_attention(x, *w, mask=causal_mask(6)).weights
    assert weights.triu(diagonal=1).eq(0).all()


def test_entropy():
    uniform = torch.full((4,), 0.25)
    assert float(entropy(uniform)) == pytest.approx(math.log(4))
    assert float(entropy(torch.tensor([0.0, 1.0, 0.0]))) == 0.0
    assert entropy(torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 0.0]])).tolist() == pytest.approx([math.log(2), 0.0])
