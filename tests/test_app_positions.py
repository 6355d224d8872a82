"""The Positions & geometry view, run by AppTest from streamlit_app.py."""

from __future__ import annotations

import pytest
import torch

from attn_core import MiniLM, default_scale, embed_tokens, qkv_projections, tokenize
from attn_core.geometry import head_queries_keys, order_check, position_scores, query_key_map, shuffled_order, weights_from
from attn_core.real_model.files import ENV_VAR, PACKAGE_PIN
from attn_ui.charts import SENTENCE_LABEL, label_around
from tests.conftest import assert_clean, chart_frames, chart_headings, open_view, texts

POSITIONS = "pages/8_Positions.py"
D_MODEL = 32  # the view's toy embedding size
SECTIONS = 5
LINK = {  # every parameter of the view, none at its default
    "text": "the dog saw the cat and the bird",
    "seed": "3",
    "d_k": "16",
    "shuffle": "5",
    "positions": "on",
    "query": "2",
    "key": "4",
    "pair": "3",
    "m": "7",
    "map": "real",
    "scaled": "off",
    "layer": "1",
    "head": "4",
    "top": "3",
    "word": "river",
    "sentences": "We sat on the river bank\nThe river rose at night\nA boat on the river",
}


def chart_rows(at, title_start: str) -> list[dict]:
    """The rows of every dataset of the one chart whose title starts with ``title_start``."""
    found = [rows for heading, rows in zip(chart_headings(at), chart_frames(at), strict=True) if heading.startswith(title_start)]
    assert len(found) == 1, (title_start, chart_headings(at))
    return found[0]


def matrix_of(rows: list[dict]) -> torch.Tensor:
    """A heatmap's cells as a matrix."""
    n_rows, n_cols = max(r["row"] for r in rows) + 1, max(r["col"] for r in rows) + 1
    matrix = torch.zeros(n_rows, n_cols, dtype=torch.float64)
    for cell in rows:
        matrix[cell["row"], cell["col"]] = cell["value"]
    return matrix


def row_labels(rows: list[dict], title: str = "query") -> list[str]:
    return [label for _, label in sorted({(r["row"], r[title]) for r in rows})]


def map_points(rows: list[dict]) -> tuple[torch.Tensor, list[str]]:
    """The map's points in the order the view gives them (queries, then keys), and their tokens."""
    points = sorted((r["role"] != "query", r["position"], r["x"], r["y"], r["token"]) for r in rows if "role" in r)
    return torch.tensor([[x, y] for *_, x, y, _ in points], dtype=torch.float64), [p[-1] for p in points]


def toy_setup(text: str, seed: int, d_k: int) -> tuple[list[str], torch.Tensor, tuple[torch.Tensor, ...]]:
    tokens = tokenize(text)
    return tokens, embed_tokens(tokens, D_MODEL, seed), qkv_projections(D_MODEL, d_k, seed)


@pytest.mark.parametrize("slide", [*map(str, range(1, SECTIONS + 1)), "all"])
def test_every_section_opens(slide):
    at = open_view(POSITIONS, slide=slide)
    assert_clean(at)
    assert not texts(at, "warning") and not texts(at, "error")
    headers = [header.value for header in at.header]
    assert headers[0].startswith("1 ·" if slide == "all" else f"{slide} ·") and len(headers) == (
        SECTIONS if slide == "all" else 1
    )
    assert at.get("vega_lite_chart")


def test_shuffle_changes_the_order_and_the_outputs_follow_their_tokens():
    at = open_view(POSITIONS, slide="1", shuffle="0")
    tokens = tokenize("The cat sat on the mat")
    assert row_labels(chart_rows(at, "Weights, shuffled")) == tokens
    orders = [tokens]
    for _ in range(3):
        at.button(key="shuffle_button").click().run()
        assert_clean(at)
        seed = at.session_state["shuffle"]
        order = shuffled_order(len(tokens), seed)
        shown = row_labels(chart_rows(at, "Weights, shuffled"))
        assert shown == [tokens[i] for i in order.tolist()] and shown != orders[-1]
        orders.append(shown)
        metrics = {metric.label: float(metric.value) for metric in at.metric}
        without, with_positions = metrics.values()
        assert without < 1e-5 and with_positions > 1e-3
        # The shuffled weights are the original ones with rows and columns moved with their tokens.
        original, shuffled = (matrix_of(chart_rows(at, f"Weights, {where}")) for where in ("original order", "shuffled"))
        assert torch.allclose(shuffled, original[order][:, order], atol=1e-4)
    at.button(key="unshuffle").click().run()
    assert row_labels(chart_rows(at, "Weights, shuffled")) == tokens and "shuffle" in at.query_params


def test_a_link_with_every_parameter_reproduces_the_view():
    at = open_view(POSITIONS, **LINK, slide="all")
    assert_clean(at)
    assert not texts(at, "warning")
    assert {key: at.query_params[key] for key in LINK} == LINK  # written back as the link gave them
    tokens, x, (w_q, w_k, w_v) = toy_setup(LINK["text"], 3, 16)
    order = shuffled_order(len(tokens), 5)
    check = order_check(x, w_q, w_k, w_v, order, positions=True)
    assert torch.allclose(matrix_of(chart_rows(at, "Weights, shuffled")), check.shuffled.weights.double(), atol=1e-4)
    assert float(at.metric[1].value) == pytest.approx(check.difference, rel=1e-2)
    pair = "“saw” → “cat”"  # query 2, key 4
    for kind, name in (("sinusoidal", "Sinusoidal"), ("rope", "RoPE")):
        expected = position_scores(x[2], x[4], w_q, w_k, len(tokens), kind).double()
        assert torch.allclose(matrix_of(chart_rows(at, f"{name}: score of {pair}")), expected, atol=1e-4)
    rotation = [r for r in chart_rows(at, "Pair 3") if "position" in r and "shown" in r]
    assert sum(r["shown"] for r in rotation) == 8  # positions 0 .. m = 7
    # The map: MiniLM's layer 1, head 4, its 3 strongest keys per query.
    model = MiniLM.load()
    run = model.run_texts([LINK["text"]])
    q, k, weights = head_queries_keys(run, 1, 4)
    expected = query_key_map(q, k, weights, 3)
    rows = chart_rows(at, "MiniLM, layer 1, head 4")
    points, labels = map_points(rows)
    assert labels == run.encoded.tokens[0] * 2
    assert torch.allclose(points, expected.points, atol=1e-4)
    assert len([r for r in rows if "weight" in r]) == 3 * len(labels) // 2
    paths = chart_rows(at, "“river”, stage by stage")
    assert len({r["sentence"] for r in paths}) == 3


def test_the_toy_map_is_the_engines_with_and_without_the_scale():
    for scaled in ("on", "off"):
        at = open_view(POSITIONS, slide="4", map="toy", scaled=scaled, top="1")
        assert_clean(at)
        tokens, x, (w_q, w_k, _) = toy_setup("The cat sat on the mat", 0, 8)
        q, k = x @ w_q, x @ w_k
        scale = default_scale(8) if scaled == "on" else 1.0
        expected = query_key_map(q, k, weights_from(q, k, scale), 1)
        rows = next(rows for rows in chart_frames(at) if rows and "role" in rows[0])
        points, labels = map_points(rows)
        assert labels == tokens * 2 and torch.allclose(points, expected.points, atol=1e-4)
        links = sorted((r["query"], r["key"], r["weight"]) for r in rows if "weight" in r)
        wanted = sorted(
            (tokens[i], tokens[j], float(expected.weights[i, j])) for i, j in enumerate(expected.strongest[:, 0].tolist())
        )
        assert [link[:2] for link in links] == [link[:2] for link in wanted]
        assert [link[2] for link in links] == pytest.approx([link[2] for link in wanted], abs=1e-5)
        agree = round(expected.agreement * len(tokens))
        assert [(m.label, m.value) for m in at.metric] == [("Strongest key is nearest", f"{agree} of {len(tokens)}")]


def test_bad_values_are_reported_and_replaced():
    bad = {"d_k": "abc", "shuffle": "-1", "positions": "maybe", "map": "pca", "top": "9", "m": "99", "layer": "7", "seed": "x"}
    at = open_view(POSITIONS, **bad)
    assert_clean(at)
    warning = texts(at, "warning")[0]
    for key in bad:
        assert f"{key} = “" in warning
        assert key not in at.query_params  # back to its default, which a link leaves out
    assert at.session_state["d_k"] == 8 and at.session_state["map"] == "toy" and at.session_state["shuffle"] == 1


def test_a_word_missing_from_the_sentences_is_said_not_raised():
    at = open_view(POSITIONS, slide="5", word="river", sentences="I deposited money at the bank\nWe sat on the river bank")
    assert_clean(at)
    assert any("at least two of the sentences" in text for text in texts(at, "info"))


def test_each_sentences_label_keeps_the_word_the_charts_compare():
    sentences = ["I deposited all of my money at the bank today", "We sat on the grassy river bank all afternoon"]
    at = open_view(POSITIONS, slide="5", word="bank", sentences="\n".join(sentences))
    assert_clean(at)
    paths, cosines = [rows for rows in chart_frames(at) if rows and ("sentence" in rows[0] or "sentences" in rows[0])]
    names = {row["sentence"] for row in paths} | {name for row in cosines for name in row["sentences"].split(" ↔ ")}
    assert names == {label_around(sentence, "bank") for sentence in sentences}  # longer than a label: cut around "bank"
    assert all("bank" in name and len(name) == SENTENCE_LABEL for name in names), names


def test_without_the_model_the_toy_sections_work_and_the_real_ones_say_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))  # an empty folder as the only source: no model at all
    at = open_view(POSITIONS, map="real")
    assert_clean(at)
    assert [PACKAGE_PIN in error for error in texts(at, "error")] == [True]  # said once
    headings = chart_headings(at)
    assert any(heading.startswith("Weights, shuffled") for heading in headings)
    assert any(heading.startswith("RoPE: score of") for heading in headings)
    assert not [heading for heading in headings if heading.startswith(("MiniLM", "“bank”"))]
