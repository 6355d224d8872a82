"""attn_core.decoding: KV cache sizes of real models, and one attention layer decoding token by token (MHA, GQA, MQA,
MLA; with a window and attention sinks; without the cache) against causal attention over the whole sequence."""

from __future__ import annotations

import math

import pytest
import torch

from attn_core.decoding import KINDS, MODELS, ModelShape, generate, kv_cache_bytes, make_layer
from attn_core.masks import sink_window_mask

SMALL = {"d_model": 64, "heads": 8, "prompt": 12, "new_tokens": 12}


def test_llama_3_8b_caches_131072_bytes_a_token_in_bf16():
    assert kv_cache_bytes(MODELS["llama3-8b"].shape, 1) == 2 * 32 * 8 * 128 * 2 == 131_072
    assert kv_cache_bytes(MODELS["llama3-8b"].shape, 8192) == 8192 * 131_072


def test_gqa_caches_heads_over_kv_heads_times_less_than_mha():
    for heads, kv_heads in ((32, 8), (64, 8), (8, 2), (8, 1)):
        mha, gqa = ModelShape(4, heads, heads, 128), ModelShape(4, heads, kv_heads, 128)
        assert kv_cache_bytes(mha, 100) == kv_cache_bytes(gqa, 100) * heads // kv_heads


def test_deepseek_v2s_latent_cache_is_about_71_times_smaller_than_its_heads():
    mla, heads = MODELS["deepseek-v2"].shape, MODELS["deepseek-v2-mha"].shape
    assert kv_cache_bytes(mla, 1) == 60 * (512 + 64) * 2
    assert kv_cache_bytes(heads, 1) == 60 * 128 * (192 + 128) * 2
    assert kv_cache_bytes(heads, 1) / kv_cache_bytes(mla, 1) == pytest.approx(71.1, abs=0.1)


@pytest.mark.parametrize("kind", KINDS)
def test_every_layout_decodes_what_causal_attention_over_the_whole_sequence_gives(kind):
    run = generate(kind, **SMALL)
    assert run.outputs.shape == (24, 64) and run.max_error <= 1e-5
    assert len(run.step_seconds) == 12 and len(run.cache_bytes) == 13
    # The bytes measured from the cache's tensors are the formula's, after the prefill and after every step.
    assert run.cache_bytes == [kv_cache_bytes(run.shape, tokens) for tokens in range(12, 25)]


def test_the_layouts_cache_what_their_formulas_say_at_the_same_width():
    runs = {kind: generate(kind, **SMALL, kv_heads=2) for kind in KINDS}
    per_token = {kind: run.cache_bytes[-1] // 24 for kind, run in runs.items()}
    d, values = 64 // 8, 4  # head size; float32
    assert per_token["mha"] == 2 * 8 * d * values
    assert per_token["gqa"] == 2 * 2 * d * values == per_token["mha"] // 4
    assert per_token["mqa"] == 2 * d * values
    layer = make_layer("mla", 64, 8, None, None, 0, torch.float32, "cpu")
    assert per_token["mla"] == (layer.latent + layer.rope_dim) * values == (16 + 4) * values


@pytest.mark.parametrize("kind", KINDS)
def test_without_the_cache_the_outputs_are_the_same(kind):
    with_cache, without = generate(kind, **SMALL), generate(kind, **SMALL, cache=False)
    torch.testing.assert_close(with_cache.outputs, without.outputs, atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("window", "sinks"), [(5, 0), (5, 2)], ids=["window", "sinks and window"])
def test_a_window_ring_stops_growing_and_equals_attention_under_its_mask(kind, window, sinks):
    run = generate(kind, **SMALL, window=window, sinks=sinks)
    assert run.max_error <= 1e-5  # against the whole sequence under sink_window_mask / window_mask
    assert run.cache_bytes == [kv_cache_bytes(run.shape, window + sinks)] * 13  # full from the prefill on: a ring
    full = generate(kind, **SMALL)
    assert float((run.outputs[-1] - full.outputs[-1]).abs().max()) > 1e-4  # the window changes what the last token sees


def test_the_sink_window_mask_keeps_the_first_tokens_and_the_last_ones():
    mask = sink_window_mask(8, window=3, sinks=2)
    assert mask[7].tolist() == [True, True, False, False, False, True, True, True]
    assert mask[2].tolist() == [True, True, True, False, False, False, False, False]
    assert not mask.triu(diagonal=1).any()


def test_mla_with_its_up_projections_absorbed_equals_mla_decompressed():
    decompressed, absorbed = generate("mla", **SMALL), generate("mla", **SMALL, absorbed=True)
    assert absorbed.max_error <= 1e-5
    torch.testing.assert_close(absorbed.outputs, decompressed.outputs, atol=1e-5, rtol=0)
    assert absorbed.cache_bytes == decompressed.cache_bytes


def test_bad_shapes_are_refused_with_a_reason():
    with pytest.raises(ValueError, match="do not divide"):
        generate("mha", d_model=60, heads=8, prompt=4, new_tokens=2)
    with pytest.raises(ValueError, match="do not divide"):
        generate("gqa", d_model=64, heads=8, kv_heads=3, prompt=4, new_tokens=2)
    with pytest.raises(ValueError, match="kind must be one of"):
        generate("moe", prompt=4, new_tokens=2)


def test_the_layouts_at_one_width_cache_and_weigh_what_their_matrices_hold():
    from attn_core.decoding import layouts

    found = {layout.kind: layout for layout in layouts(512, 8, 2)}
    d = 512 // 8
    assert found["mha"].cached_values == 2 * 8 * d and found["mha"].parameters == 4 * 512 * 512
    assert found["gqa"].cached_values == 2 * 2 * d and found["gqa"].parameters == 2 * 512 * 512 + 2 * 512 * 2 * d
    assert found["mqa"].cached_values == 2 * d and found["mqa"].kv_heads == 1
    assert found["mla"].cached_values == 128 + d // 2 and found["mla"].latent == 128


@pytest.mark.parametrize(("d_model", "heads", "kv_heads"), [(512, 8, 2), (2048, 16, 4), (256, 4, 4)])
def test_the_layouts_count_the_weights_generate_draws_without_drawing_them(d_model, heads, kv_heads, monkeypatch):
    from attn_core import decoding

    drawn = {kind: decoding.make_layer(kind, d_model, heads, kv_heads, None, 0, torch.float32, "cpu") for kind in KINDS}
    monkeypatch.setattr(torch, "randn", None)  # the layouts draw no random number
    for layout in decoding.layouts(d_model, heads, kv_heads):
        layer = drawn[layout.kind]
        assert layout.parameters == sum(weight.numel() for weight in layer.weights.values())
        assert layout.cached_values == kv_cache_bytes(decoding.cache_shape(layer, 1), 1)


def test_llama_3_8bs_cache_outgrows_its_weights_at_the_context_the_bytes_say():
    from attn_core.decoding import cache_outgrows_weights

    model = MODELS["llama3-8b"]
    tokens = cache_outgrows_weights(model, batch=1)
    assert tokens == pytest.approx(2 * 8.03e9 / 131_072, abs=1)  # about 122,500 tokens
    assert kv_cache_bytes(model.shape, tokens) >= 2 * model.parameters > kv_cache_bytes(model.shape, tokens - 1)
    assert cache_outgrows_weights(model, batch=8) == math.ceil(2 * 8.03e9 / (131_072 * 8))  # a batch fills it 8× sooner


def test_a_measured_point_has_the_formulas_bytes_and_a_step_time():
    from attn_core.decoding_sweep import VARIANTS, measure_point

    cached, _, windowed, sinks_and_window = VARIANTS
    point = measure_point("gqa", cached, 64, steps=4, d_model=64, heads=8, kv_heads=2)
    assert point.cache_bytes == point.formula_bytes == kv_cache_bytes(ModelShape(1, 8, 2, 8, bytes_per_value=4), 68)
    assert point.step_ms > 0 and point.max_error <= 1e-5
    # A window keeps its last 512 keys (and the sinks the first 4): past them, the bytes stop growing.
    for variant, kept in ((windowed, 512), (sinks_and_window, 516)):
        point = measure_point("mqa", variant, 600, steps=4, d_model=64, heads=8)
        assert point.cache_bytes == point.formula_bytes == kv_cache_bytes(ModelShape(1, 8, 1, 8, bytes_per_value=4), kept)
        assert point.max_error <= 1e-5


def test_the_shipped_reference_results_hold_the_whole_sweep_checked():
    """attn_core/decoding_reference.json: a point for every layout, variant and context of the view's sweep, each with
    the formula's bytes and outputs equal to causal attention recomputed; with the cache a step's time grows about
    linearly from 1,024 tokens on, and with a window it stays about flat."""
    from attn_core.decoding_sweep import CONTEXTS, REFERENCE_COMMAND, VARIANTS, reference_results, sweep_settings
    from attn_core.timing import loglog_fit

    reference = reference_results()
    assert reference.machine["cpu"] and reference.machine["command"] == REFERENCE_COMMAND
    assert [(p.layout, p.variant, p.context) for p in reference.points] == [(k, v.name, t) for k, v, t in sweep_settings()]
    assert all(p.cache_bytes == p.formula_bytes and p.max_error <= 1e-4 for p in reference.points)
    long = [t for t in CONTEXTS if t >= 1024]
    for variant, low, high in ((VARIANTS[0], 0.3, 1.4), (VARIANTS[2], -0.3, 0.3)):
        for layout in ("mha", "gqa", "mqa", "mla absorbed"):
            kept = [p for p in reference.points if p.layout == layout and p.variant == variant.name and p.context >= 1024]
            assert low < loglog_fit(long, [p.step_ms for p in kept]).slope < high, (layout, variant.name)
