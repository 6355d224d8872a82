"""The Decoding view, run by AppTest from streamlit_app.py: generation step by step against the KV cache, the
layouts at one width, and real models' caches."""

from __future__ import annotations

from itertools import pairwise

import pytest
import torch

from attn_core import attend, causal_mask
from attn_core.decoding import MODELS, ModelShape, kv_cache_bytes, layouts
from attn_core.decoding_sweep import CONTEXTS, STEPS, reference_results
from attn_core.text import tokenize
from attn_core.toy import embed_tokens, qkv_projections
from attn_ui.decoding_view import MEASURED_POINTS
from tests.conftest import assert_clean, chart_frames, heatmap_values, open_view, shown, texts

DECODING = "pages/9_Decoding.py"
SENTENCE = "the cat sat on the warm mat"


def test_a_link_opens_the_step_its_query_row_and_the_cache_so_far():
    """?slide=1&step=3: the causal weights with row 3 outlined, and the K cache of the first three tokens, each the
    engine's numbers on the view's toy weights."""
    at = open_view(DECODING, slide="1", step="3", text=SENTENCE, seed="2")
    assert_clean(at)
    tokens = tokenize(SENTENCE)
    x = embed_tokens(tokens, 16, 2)
    w_q, w_k, w_v = qkv_projections(16, 8, 2)
    steps = attend(x @ w_q, x @ w_k, x @ w_v, mask=causal_mask(len(tokens)))
    drawn = heatmap_values(at, len(tokens), len(tokens))
    expected = steps.weights.double().masked_fill(~causal_mask(len(tokens)), float("nan"))
    assert any(torch.allclose(m, expected, atol=1e-6, equal_nan=True) for m in drawn)
    cache = [m for m in heatmap_values(at, len(tokens), 8)]  # the cache: the first 3 rows written, the rest empty
    assert any(torch.allclose(m[:3], steps.k[:3].double(), atol=1e-6) and m[3:].isnan().all() for m in cache)
    assert at.slider(key="step").value == 3
    assert any("its query is row 3, against the 3 keys of the cache" in shown(text) for text in texts(at, "markdown"))
    first = open_view(DECODING, slide="1", step="1", text=SENTENCE)
    assert any("its query is row 1, against the one key of the cache" in shown(text) for text in texts(first, "markdown"))


def test_the_layouts_table_is_the_engines_at_the_links_width():
    at = open_view(DECODING, slide="2", d_model="1024", heads="16", kv_heads="4")
    assert_clean(at)
    table = at.table[0].value
    found = layouts(1024, 16, 4)
    assert list(table["bytes a token (bf16)"]) == [f"{2 * layout.cached_values:,}" for layout in found]
    assert list(table["bytes a token (bf16)"])[:3] == ["4,096", "1,024", "256"]  # MHA, GQA, MQA: 2 × 2 × (16, 4, 1) × 64


def test_heads_that_a_gqa_group_count_does_not_divide_get_a_message_with_the_counts_that_do():
    at = open_view(DECODING, slide="2", heads="8", kv_heads="3")
    assert_clean(at)
    assert any("try 1, 2, 4, 8" in text for text in texts(at, "warning"))


def test_real_models_caches_for_a_batch():
    at = open_view(DECODING, slide="3", batch="4")
    assert_clean(at)
    table = at.table[0].value
    llama = table.loc["Llama 3 8B"]
    assert llama["context read (tokens)"] == "8,192" and table.loc["GPT-2 small"]["context read (tokens)"] == "1,024"
    assert llama["KiB a token"] == "128.0"
    assert float(llama["8k tokens (GiB)"]) == pytest.approx(8192 * 131_072 * 4 / 2**30)
    assert float(table.loc["DeepSeek-V2 (MLA)"]["128k tokens (GiB)"].replace(",", "")) == pytest.approx(
        kv_cache_bytes(MODELS["deepseek-v2"].shape, 131_072) * 4 / 2**30, abs=0.05
    )


def test_bad_values_in_a_link_are_reported_and_the_view_works():
    at = open_view(DECODING, step="x", d_model="abc", batch="-3", heads="1000")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert all(key in warning for key in ("step", "d_model", "batch"))
    assert at.table  # the sections still draw


def step_charts(at) -> list[list[dict]]:
    return [rows for rows in chart_frames(at) if rows and "ms a step" in rows[0]]


def test_the_reference_results_are_drawn_at_once_and_measure_runs_on_its_button_only():
    """Section 4 opened by a link draws the shipped reference results and measures nothing; its button measures every
    layout and variant, the shortest contexts first, on a layer of C = 512, 8 heads (2 K/V heads in GQA) whatever the
    controls, until its time budget; a press goes on from there. The bytes charted are the formula's."""
    reference = {(p.layout, p.variant, p.context): p for p in reference_results().points}
    at = open_view(DECODING, slide="4", d_model="4096", heads="64", kv_heads="8", time_budget="3")
    assert_clean(at)
    drawn = {(r["series"], r["tokens before"]): r["ms a step"] for r in step_charts(at)[0]}
    assert drawn["GQA", 2048] == pytest.approx(reference["gqa", "with the cache", 2048].step_ms)
    assert any("Reference results" in text for text in texts(at, "caption"))
    measured = []  # the points measured after each press; the charts show the contexts every point of is measured
    for _ in range(8):  # presses of 3 s each, each going on from the last, until the sweep ends or 256 … 1,024 are in
        at.button(key="measure_decoding").click().run()
        assert_clean(at)
        measured.append(at.session_state[MEASURED_POINTS])
        complete = [t for t in CONTEXTS if sum(p.context == t for p in measured[-1]) == 20]
        assert sorted({r["tokens before"] for r in step_charts(at)[0]} if complete else []) == complete
        assert not any("Reference results" in text for text in texts(at, "caption"))
        stopped = any("Stopped by the 3 s budget" in text for text in texts(at, "info"))
        assert stopped or len(complete) == len(CONTEXTS)
        if not stopped or len(complete) >= 3:
            break
    assert [p.context for p in measured[0]] == sorted(p.context for p in measured[0])  # the shortest contexts first
    assert all(later[: len(earlier)] == earlier and len(later) > len(earlier) for earlier, later in pairwise(measured))
    assert len(step_charts(at)) == 4  # cache or not, window, sinks + window
    shapes = {"MHA": ModelShape(1, 8, 8, 64, bytes_per_value=4), "GQA": ModelShape(1, 8, 2, 64, bytes_per_value=4)}
    full, windowed = [rows for rows in chart_frames(at) if rows and "MiB" in rows[0]]
    t = 256 + STEPS
    for rows, kept in ((full, t), (windowed, t)):
        measured = {(r["series"], r["tokens written"]): r["MiB"] for r in rows if r["source"] == "measured"}
        for name, shape in shapes.items():
            assert measured[name, t] == pytest.approx(kv_cache_bytes(shape, kept) / 2**20)
    fitted = sum(t >= 1024 for t in complete) >= 2  # the slopes need two lengths from 1,024 on
    assert any(("Log-log slopes" if fitted else "measure on to see them") in text for text in texts(at, "caption"))


def test_a_change_of_control_after_a_stopped_sweep_measures_nothing():
    at = open_view(DECODING, slide="4", time_budget="1")
    at.button(key="measure_decoding").click().run()
    stopped = [text for text in texts(at, "info") if "budget" in text]
    frames = chart_frames(at)
    at.number_input(key="batch").set_value(3).run()
    assert_clean(at)
    assert chart_frames(at) == frames and [text for text in texts(at, "info") if "budget" in text] == stopped
