"""The multi-head engine against torch.nn.MultiheadAttention, and the head summaries."""

from __future__ import annotations

import math

import pytest
import torch

from attn_core import (
    attend,
    available_devices,
    causal_mask,
    check_head_count,
    head_metrics,
    multi_head_attention,
    multi_head_projections,
    padding_mask,
    pattern_similarity,
)
from attn_core.heads import pairs_by_similarity
from attn_core.multihead import head_weights, nearest_head_counts, torch_mha_difference


def random_inputs(batch: int, t: int, d_model: int, dtype=torch.float64, device="cpu"):
    generator = torch.Generator().manual_seed(batch * 1000 + t * 10 + d_model)
    x = torch.randn(batch, t, d_model, generator=generator, dtype=dtype)  # (B, T, C)
    weights = [torch.randn(d_model, d_model, generator=generator, dtype=dtype) / math.sqrt(d_model) for _ in range(4)]
    return x.to(device), [w.to(device) for w in weights]


def torch_module(weights, n_heads: int) -> torch.nn.MultiheadAttention:
    w_q, w_k, w_v, w_o = weights
    d_model = w_q.shape[0]
    module = torch.nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True, dtype=w_q.dtype, device=w_q.device)
    with torch.no_grad():
        module.in_proj_weight.copy_(torch.cat([w_q, w_k, w_v], dim=1).T)
        module.out_proj.weight.copy_(w_o.T)
    return module


@pytest.mark.parametrize("device", available_devices())
@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_equals_torch_multihead_attention(n_heads, dtype, device):
    x, weights = random_inputs(3, 7, 16, dtype, device)
    steps = multi_head_attention(x, *weights, n_heads)
    expected, expected_weights = torch_module(weights, n_heads)(x, x, x, average_attn_weights=False)
    assert steps.output.shape == (3, 7, 16)
    assert steps.heads.weights.shape == (3, n_heads, 7, 7)
    torch.testing.assert_close(steps.output, expected.detach(), atol=1e-5, rtol=0)
    torch.testing.assert_close(steps.heads.weights, expected_weights.detach(), atol=1e-5, rtol=0)
    assert torch_mha_difference(x, *weights, steps) < 1e-5


@pytest.mark.parametrize("device", available_devices())
def test_equals_torch_with_causal_and_padding_masks(device):
    x, weights = random_inputs(2, 6, 12, device=device)
    lengths = [6, 4]
    mask = causal_mask(6, device) & padding_mask(lengths, 6, device).unsqueeze(1)  # (B, 1, T, T)
    steps = multi_head_attention(x, *weights, 3, mask=mask)
    module = torch_module(weights, 3)
    causal_blocked = ~causal_mask(6, device)
    key_padding_blocked = ~padding_mask(lengths, 6, device).squeeze(1)  # (B, T)
    expected, _ = module(x, x, x, attn_mask=causal_blocked, key_padding_mask=key_padding_blocked)
    torch.testing.assert_close(steps.output, expected.detach(), atol=1e-5, rtol=0)
    assert torch_mha_difference(x, *weights, steps, mask=mask) < 1e-5
    # Future keys and padded keys get exactly zero weight in every head.
    assert (steps.heads.weights[..., ~causal_mask(6, device)] == 0).all()
    assert (steps.heads.weights[1, :, :, 4:] == 0).all()


def test_a_query_that_sees_no_key_gets_zeros_not_nan():
    x, weights = random_inputs(1, 4, 8)
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[2] = False  # query 2 may see nothing
    steps = multi_head_attention(x, *weights, 2, mask=mask)
    assert not steps.output.isnan().any()
    assert (steps.output[0, 2] == 0).all()
    assert torch_mha_difference(x, *weights, steps, mask=mask) < 1e-5  # the other rows still match


def test_each_head_is_attention_on_its_own_slice_of_the_projections():
    x, weights = random_inputs(1, 5, 12)
    w_q, w_k, w_v, w_o = weights
    steps = multi_head_attention(x, *weights, 4)
    for head, (wq, wk, wv) in enumerate(zip(*(head_weights(w, 4) for w in (w_q, w_k, w_v)), strict=True)):
        assert wq.shape == (12, 3)
        alone = attend(x @ wq, x @ wk, x @ wv)
        torch.testing.assert_close(steps.heads.weights[:, head], alone.weights)
        torch.testing.assert_close(steps.concat[..., head * 3 : (head + 1) * 3], alone.context)
    torch.testing.assert_close(steps.output, steps.concat @ w_o)


def test_one_head_of_size_c_is_plain_attention_with_the_same_parameters():
    x, weights = random_inputs(1, 5, 8)
    w_q, w_k, w_v, w_o = weights
    one = multi_head_attention(x, *weights, 1)
    many = multi_head_attention(x, *weights, 4)
    torch.testing.assert_close(one.concat, attend(x @ w_q, x @ w_k, x @ w_v).context)
    assert one.heads.scale == pytest.approx(1 / math.sqrt(8)) and many.heads.scale == pytest.approx(1 / math.sqrt(2))
    assert not torch.allclose(one.output, many.output)  # same 4 C^2 parameters, different attention


@pytest.mark.parametrize(
    ("d_model", "n_heads", "nearest"),
    [(32, 4, [4]), (32, 5, [4]), (32, 6, [4, 8]), (30, 4, [3, 5]), (30, 8, [6, 10]), (7, 3, [1]), (13, 16, [13])],
)
def test_nearest_head_counts(d_model, n_heads, nearest):
    assert nearest_head_counts(d_model, n_heads) == nearest


def test_a_head_count_that_does_not_divide_the_width_is_refused_with_suggestions():
    x, weights = random_inputs(1, 3, 30)
    with pytest.raises(ValueError, match=r"4 heads do not divide the model width C = 30.*3 or 5"):
        multi_head_attention(x, *weights, 4)
    check_head_count(30, 5)  # divides: no error


def test_head_metrics_of_known_patterns():
    t = 4
    identity = torch.eye(t)  # every token attends to itself
    uniform = torch.full((t, t), 1 / t)
    first = torch.zeros(t, t)
    first[:, 0] = 1  # every token attends to the first
    metrics = head_metrics(torch.stack([identity, uniform, first]))  # (3,)
    torch.testing.assert_close(metrics.entropy, torch.tensor([0.0, math.log(t), 0.0]))
    torch.testing.assert_close(metrics.self_weight, torch.tensor([1.0, 1 / t, 1 / t]))
    torch.testing.assert_close(metrics.first_weight, torch.tensor([1 / t, 1 / t, 1.0]))
    torch.testing.assert_close(metrics.max_weight, torch.tensor([1.0, 1 / t, 1.0]))
    # Distances: itself 0; uniform: mean |i - j| over all pairs = 1.25; first: mean i = 1.5.
    torch.testing.assert_close(metrics.distance, torch.tensor([0.0, 1.25, 1.5]))
    assert metrics.columns()["mean distance (tokens)"] is metrics.distance and len(metrics.columns()) == 5


def test_pattern_similarity():
    a = torch.softmax(torch.randn(5, 5, generator=torch.Generator().manual_seed(1)), dim=-1)
    b = torch.softmax(torch.randn(5, 5, generator=torch.Generator().manual_seed(2)), dim=-1)
    similarity = pattern_similarity(torch.stack([a, a.clone(), b, torch.eye(5)]))  # (4, 4)
    torch.testing.assert_close(similarity.diagonal(), torch.ones(4))
    torch.testing.assert_close(similarity, similarity.T)
    assert similarity[0, 1] == pytest.approx(1.0)
    expected = torch.dot(a.flatten(), b.flatten()) / (a.norm() * b.norm())
    assert similarity[0, 2] == pytest.approx(float(expected))
    pairs = pairs_by_similarity(similarity)
    assert len(pairs) == 6 and pairs[0][:2] == (0, 1)  # every pair once; the two copies of a first
    assert [alike for *_, alike in pairs] == sorted((alike for *_, alike in pairs), reverse=True)


def test_toy_projections_are_seeded_and_independent_of_the_head_count():
    first, again, other = multi_head_projections(16, 3), multi_head_projections(16, 3), multi_head_projections(16, 4)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[0], other[0])
    assert all(w.shape == (16, 16) for w in first)
