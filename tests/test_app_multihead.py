"""The Multi-head view, run by AppTest from streamlit_app.py: defaults, shared links, bad input."""

from __future__ import annotations

import pytest
import torch

from attn_core import embed_tokens, head_metrics, multi_head_attention, multi_head_projections, sinusoidal, tokenize
from attn_core.examples import COREFERENCE_SENTENCES
from tests.conftest import assert_clean, chart_frames, heatmap_values, open_view, texts

MULTI_HEAD = "pages/4_Multi_head.py"


def engine(text: str, d_model: int, n_heads: int, seed: int):
    tokens = tokenize(text)
    x = embed_tokens(tokens, d_model, seed) + sinusoidal(len(tokens), d_model)  # (T, C)
    return tokens, multi_head_attention(x, *multi_head_projections(d_model, seed), n_heads)


def grid_weights(at) -> torch.Tensor:
    """The every-head overview's panels as (h, T, T)."""
    rows = next(rows for rows in chart_frames(at) if rows and "panel" in rows[0])
    n_heads = 1 + max(cell["panel"] for cell in rows)
    t = 1 + max(cell["row"] for cell in rows)
    weights = torch.zeros(n_heads, t, t, dtype=torch.float64)
    for cell in rows:
        weights[cell["panel"], cell["row"], cell["col"]] = cell["value"]
    return weights


def mha_difference(at) -> float:
    return float(next(m.value for m in at.metric if "MultiheadAttention" in m.label))


def test_defaults_show_every_head_and_agree_with_the_engine_and_pytorch():
    at = open_view(MULTI_HEAD)
    assert_clean(at)
    tokens, steps = engine(COREFERENCE_SENTENCES[0], 32, 4, 0)
    torch.testing.assert_close(grid_weights(at), steps.heads.weights.double(), atol=1e-6, rtol=0)
    assert mha_difference(at) < 1e-5
    table = at.table[1].value  # the per-head metrics (after the shapes table)
    metrics = head_metrics(steps.heads.weights)
    assert [str(head) for head in table["head"]] == ["0", "1", "2", "3"]
    assert table["entropy (nats)"].tolist() == pytest.approx(metrics.entropy.tolist(), abs=1e-3)
    assert table["mean distance (tokens)"].tolist() == pytest.approx(metrics.distance.tolist(), abs=1e-3)
    assert table["weight on first token"].tolist() == pytest.approx(metrics.first_weight.tolist(), abs=1e-3)
    # The head-by-head similarity matrix is 4 x 4 with ones on its diagonal.
    (similarity,) = heatmap_values(at, 4, 4)
    torch.testing.assert_close(similarity.diagonal(), torch.ones(4, dtype=torch.float64))
    assert "32 × 8" in " ".join(texts(at, "markdown"))
    comparison = next(table.value for table in at.table if "attention maps" in table.value.columns)  # one head or 4
    assert comparison["parameters"].tolist() == [f"{4 * 32 * 32:,}"] * 2 == ["4,096"] * 2  # W_Q, W_K, W_V, W_O


def test_a_shared_link_opens_the_same_heads():
    text = "The cat sat on the mat"
    at = open_view(MULTI_HEAD, text=text, d_model="24", heads="6", head="5", seed="3")
    assert_clean(at)
    assert not texts(at, "warning")
    assert at.number_input(key="d_model").value == 24 and at.number_input(key="heads").value == 6
    assert at.selectbox(key="head").value == 5
    tokens, steps = engine(text, 24, 6, 3)
    torch.testing.assert_close(grid_weights(at), steps.heads.weights.double(), atol=1e-6, rtol=0)
    # Head 5's own weights matrix is drawn step by step.
    shown = heatmap_values(at, len(tokens), len(tokens))
    assert any(torch.allclose(matrix, steps.heads.weights[5].double(), atol=1e-6) for matrix in shown)
    assert mha_difference(at) < 1e-5
    assert at.query_params["heads"] == "6" and at.query_params["head"] == "5"


def test_heads_that_do_not_divide_the_width_get_a_message_and_the_nearest_counts():
    at = open_view(MULTI_HEAD, d_model="30", heads="4")
    assert_clean(at)
    (warning,) = texts(at, "warning")
    assert "4 heads do not divide the model width C = 30" in warning and "3 or 5" in warning
    assert [button.label for button in at.button] == ["Use 3 heads", "Use 5 heads"]
    assert grid_weights(at).shape[0] == 3  # the page goes on with the nearest valid count
    at.button[1].click().run()
    assert_clean(at)
    assert at.number_input(key="heads").value == 5 and not texts(at, "warning")
    assert grid_weights(at).shape[0] == 5


def test_changing_the_head_count_keeps_the_chosen_head_in_range():
    at = open_view(MULTI_HEAD, heads="8", head="7")
    at.number_input(key="heads").set_value(2).run()
    assert_clean(at)
    assert at.selectbox(key="head").value == 1


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"text": ""}, "no words"),
        ({"text": "word " * 1000}, "1,000 tokens"),
        ({"text": "🙂 漢字 مرحبا\u200b ñ"}, None),
        ({"d_model": "1", "heads": "1"}, None),
        ({"heads": "17", "d_model": "abc"}, "not used as given"),
    ],
    ids=["empty", "huge", "odd-unicode", "width-1", "bad-link"],
)
def test_bad_input_gets_a_message_not_a_traceback(query, message):
    at = open_view(MULTI_HEAD, **query)
    assert_clean(at)
    if message:
        assert any(message in text for text in texts(at, "info") + texts(at, "warning"))
    assert grid_weights(at).shape[0] >= 1
    assert mha_difference(at) < 1e-5
