"""The home page and the Pipeline view, run by AppTest from streamlit_app.py."""

from __future__ import annotations

import pytest
import torch

from attn_core import tokenize
from attn_core.examples import DEFAULT_SENTENCE
from attn_core.walkthrough import PRESETS, build_walkthrough
from attn_ui.charts.sizes import LABEL_LIMIT
from attn_ui.page import MULTI_HEAD, POSITIONS, TRAINING, VIEWS
from attn_ui.page import PIPELINE as PIPELINE_VIEW
from tests.conftest import assert_clean, heatmap_values, open_view, texts

PIPELINE = "pages/1_Pipeline.py"


def metric(at, label_start: str) -> float:
    return float(next(m.value for m in at.metric if m.label.startswith(label_start)))


def test_home_page_links_every_view():
    at = open_view()
    assert_clean(at)
    assert "Attention Explorer" in at.title[0].value
    linked = {link.proto.page for link in at.get("page_link")}
    assert {view.url_path for view in VIEWS} <= linked


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.label)
def test_every_view_opens_without_exception(view):
    at = open_view(view.path)
    assert_clean(at)
    assert at.title, view.path


def test_pipeline_defaults_match_engine():
    at = open_view(PIPELINE)
    assert_clean(at)
    tokens = tokenize(DEFAULT_SENTENCE)
    walk = build_walkthrough("custom", tokens, 16, 8, seed=0, scaled=True, positional=False)
    t = len(tokens)
    # The weights heatmap on the page draws exactly the engine's weights.
    expected = walk.steps.weights[0].double()
    assert any(torch.allclose(m, expected, atol=1e-6) for m in heatmap_values(at, t, t))
    # The query picker defaults to the last token; its context is written out as a weighted sum.
    written = texts(at, "text")[0]
    last = walk.steps.context[0, -1]
    assert written.endswith("= [" + ", ".join(f"{float(c):.4f}" for c in last) + "]")
    assert f"·v({tokens[0]})" in written
    assert metric(at, "Largest |row sum") < 1e-5
    assert metric(at, "Largest difference") < 1e-5


def test_a_slide_writes_the_largest_terms_of_a_long_sentences_weighted_sum():
    """On a slide (two lines of a projector's window) the context vector of a 16-word sentence's last token is written
    as its 6 largest weights' terms, in the sentence's order, the number of the others, and its first 4 entries."""
    sentence = "the quick brown fox jumps over a lazy dog while my friend reads an old book"
    at = open_view(PIPELINE, present="on", slide="6", text=sentence)
    assert_clean(at)
    tokens = tokenize(sentence)
    walk = build_walkthrough("custom", tokens, 16, 8, seed=0, scaled=True, positional=False)
    weights, context = walk.steps.weights[0, -1], walk.steps.context[0, -1]
    largest = sorted(torch.argsort(weights, descending=True)[:6].tolist())
    terms = " + ".join(f"{float(weights[i]):.2f}·v({tokens[i]})" for i in largest)
    entries = ", ".join(f"{float(c):.4f}" for c in context[:4])
    assert texts(at, "text")[0] == f"{terms} + … (10 more) = [{entries}, … 4 more]"


def test_a_huge_token_is_written_cut_as_the_charts_cut_it():
    """A word of 3,000 letters would fill a slide many times over in the context vector's sum: it is cut, with "…"."""
    word = "x" * 3000
    at = open_view(PIPELINE, present="on", slide="6", text=f"{word} cat")
    assert_clean(at)
    cut = "x" * (LABEL_LIMIT - 1) + "…"
    written = texts(at, "text")[0]
    assert f"·v({cut}) + " in written and word not in written and len(written) < 200
    assert "Context vector of **cat**:" in texts(at, "markdown")  # the last token, the query by default
    at = open_view(PIPELINE, present="on", slide="6", text=f"cat {word}")
    assert f"Context vector of **{cut}**:" in texts(at, "markdown")


@pytest.mark.parametrize("preset", [p for p in PRESETS if p != "custom"])
def test_each_preset_runs(preset):
    at = open_view(PIPELINE, preset=preset)
    assert_clean(at)
    assert at.selectbox(key="preset").value == preset
    assert metric(at, "Largest difference") < 1e-5


def test_playing_outside_link_shows_reference_numbers():
    at = open_view(PIPELINE, preset="playing-outside", query="0")
    assert_clean(at)
    weights = heatmap_values(at, 2, 2)
    reference = torch.tensor([[0.5137, 0.4863], [0.5206, 0.4794]], dtype=torch.float64)
    assert any(torch.allclose(m, reference, atol=5e-5) for m in weights)
    assert texts(at, "text")[0] == "0.51·v(Playing) + 0.49·v(Outside) = [0.3357, 0.6014, 0.1438, 0.5453]"


def test_random_batch_selector_picks_the_sentence():
    at = open_view(PIPELINE, preset="random-batch", batch="3")
    assert_clean(at)
    walk = build_walkthrough("random-batch", [], 32, 16, seed=0, scaled=True, positional=False)
    assert tuple(walk.steps.weights.shape) == (6, 8, 8)
    assert at.selectbox(key="batch").value == 3
    expected = walk.steps.weights[3].double()
    assert any(torch.allclose(m, expected, atol=1e-6) for m in heatmap_values(at, 8, 8))


def test_controls_are_written_to_the_url():
    at = open_view(PIPELINE)
    at.number_input(key="seed").set_value(7)
    at.toggle(key="scale").set_value(False)
    at.run()
    assert_clean(at)
    assert at.query_params["seed"] == "7"
    assert at.query_params["scale"] == "off"


def test_empty_sentence_shows_the_example():
    at = open_view(PIPELINE, text="   ")
    assert_clean(at)
    assert any("no words" in message for message in texts(at, "info"))
    assert metric(at, "Largest difference") < 1e-5


def test_huge_text_is_cut_with_a_notice():
    at = open_view(PIPELINE)
    at.text_area(key="text").set_value("word " * 5000).run()
    assert_clean(at)
    assert any("first 32" in message for message in texts(at, "warning"))
    assert len(at.selectbox(key="query").options) == 32


def test_unicode_and_emoji_are_tokens():
    at = open_view(PIPELINE, text="Café naïve 😀 東京 👍🏽!")
    assert_clean(at)
    options = at.selectbox(key="query").options
    assert len(options) == 7
    assert any("😀" in option for option in options)


def test_bad_link_values_warn_and_fall_back():
    at = open_view(PIPELINE, seed="banana", d_k="100000", preset="nope", query="99")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert "seed = “banana”" in warning and "d_k = “100000”" in warning and "preset = “nope”" in warning
    assert at.number_input(key="seed").value == 0


@pytest.mark.parametrize("written, presenting", [("On", True), ("yes", True), ("off", False), ("maybe", False)])
def test_present_in_a_link_is_read_as_every_on_off_value(written, presenting):
    """The page's layout (its sidebar) and its presenter mode read ``present`` with the one parser of its Param: "On"
    is presenter mode, and a value that is neither on nor off is reported and means off."""
    at = open_view(PIPELINE, present=written)
    assert_clean(at)
    slide_bar = any(text.startswith("**Pipeline** · Step 1 of ") for text in texts(at, "markdown"))
    assert at.session_state["present"] is presenting and slide_bar == presenting
    assert any("present" in text for text in texts(at, "warning")) == (written == "maybe")


@pytest.mark.parametrize("view", [PIPELINE_VIEW, MULTI_HEAD, TRAINING, POSITIONS], ids=lambda view: view.label)
def test_a_number_box_takes_the_bounds_of_its_link_parameter(view):
    """Each number box is drawn from its Param (its bounds written once, in the parser): a link may hold its largest
    value, and one past it is reported."""
    at = open_view(view.path)
    boxes = [box for box in at.number_input if not box.disabled and box.key]
    assert boxes
    for box in boxes:
        low, high = int(box.proto.min), int(box.proto.max)
        assert box.proto.has_min and box.proto.has_max
        at_high = open_view(view.path, **{box.key: str(high)})
        assert at_high.number_input(key=box.key).value == high and not texts(at_high, "warning")
        past = open_view(view.path, **{box.key: str(high + 1)})
        refused = f"{box.key} = “{high + 1}”: expected a whole number from {low} to {high}"
        assert any(refused in text for text in texts(past, "warning"))
