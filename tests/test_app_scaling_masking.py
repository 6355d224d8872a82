"""The Scaling and Masking views, run by AppTest from streamlit_app.py."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from attn_core import entropy, tokenize
from attn_core.examples import DEFAULT_SENTENCE, MASKING_SENTENCES
from attn_core.masking import masked_batch_attention
from attn_core.masks import Mask
from attn_core.scaling import D_K_VALUES, dot_product_variance, sentence_attention, softmax_saturation
from attn_ui.mask_grid import editor_key
from attn_ui.url_state import mask_to_text
from tests.conftest import assert_clean, chart_frames, chart_headings, heatmap_values, open_all, open_view, shown, texts

SCALING = "pages/2_Scaling.py"
MASKING = "pages/3_Masking.py"

# Softmax temperature (source 003), as the table prints them.
LOGITS = [0.1, 0.4, -0.9, 0.02, 0.35, -0.62]
SOFTMAX_ROUNDED = ["0.18", "0.25", "0.07", "0.17", "0.24", "0.09"]
SOFTMAX_X100_ROUNDED = ["0.00", "0.99", "0.00", "0.00", "0.01", "0.00"]
DEFAULT_SENTENCES = [tokenize(part) for part in MASKING_SENTENCES.split("|")]


def metric(at, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def bar_charts(at, value_title: str) -> list[list[float]]:
    """The values of every bar chart whose values are called ``value_title``, in position order."""
    return [
        [row[value_title] for row in sorted(rows, key=lambda r: r["position"])]
        for rows in chart_frames(at)
        if rows and value_title in rows[0]
    ]


def line_series(at, y_title: str, series: str, source: str = "measured") -> list[list[float]]:
    """The y values of one series in every line chart with that y column."""
    return [
        [row[y_title] for row in rows if row.get("series") == series and row.get("source") == source]
        for rows in chart_frames(at)
        if rows and y_title in rows[0] and "series" in rows[0]
    ]


def alone_differences(at) -> list[float]:
    """The "padded or alone" check's column of differences."""
    frame = next(df.value for df in at.dataframe if "largest |difference|" in df.value.columns)
    return frame["largest |difference|"].tolist()


def temperature_table(at) -> dict[str, list[str]]:
    """Section 1's rows of rounded weights, from the table made when its *Numbers* expander opens."""
    if not at.table:
        open_all(at, "expander", "temperature_numbers")
    table = at.table[0].value
    return {name: list(table.loc[name])[:6] for name in table.index}


def temperature_entropies(at) -> dict[str, str]:
    """The entropy under the title of each of section 1's bar charts, by title."""
    lines = [heading.split("\n") for heading in chart_headings(at)]
    return {title: rest[0] for title, *rest in lines if rest and rest[0].startswith("entropy")}


# --- Scaling ---------------------------------------------------------------------------------


def test_scaling_defaults_show_the_source_numbers_and_the_engine():
    at = open_view(SCALING)
    assert_clean(at)
    logits = torch.tensor(LOGITS, dtype=torch.float64)
    assert temperature_entropies(at) == {
        name: f"entropy {float(entropy(torch.softmax(factor * logits, dim=-1))):.3f} nats"
        for name, factor in (("scale 1", 1.0), ("scale 100", 100.0), ("your scale s = 1", 1.0))
    }
    assert not at.table  # the numbers are made when their expander opens
    rows = temperature_table(at)
    assert rows["scale 1"] == SOFTMAX_ROUNDED
    assert rows["scale 100"] == SOFTMAX_X100_ROUNDED
    assert rows["your scale s = 1"] == SOFTMAX_ROUNDED
    reference = torch.softmax(torch.tensor(LOGITS, dtype=torch.float64), dim=-1)
    assert metric(at, "Entropy of softmax(1·x)") == f"{float(-(reference * reference.log()).sum()):.3f} nats"

    # The variance chart draws the engine's Monte Carlo and the theory line d_k.
    variance = dot_product_variance(0)
    assert line_series(at, "variance", "q·k (unscaled)") == [pytest.approx(variance.unscaled.tolist())]
    assert line_series(at, "variance", "q·k / √d_k") == [pytest.approx(variance.scaled.tolist())]
    assert line_series(at, "variance", "q·k (unscaled)", "theory") == [pytest.approx(list(map(float, D_K_VALUES)))]
    index = D_K_VALUES.index(64)
    assert metric(at, "Var(q·k) at d_k = 64") == f"{float(variance.unscaled[index]):.2f}"
    saturation = softmax_saturation(0)
    assert line_series(at, "largest weight", "unscaled") == [pytest.approx(saturation.unscaled.max_weight.tolist())]
    assert line_series(at, "Jacobian norm", "÷ √d_k") == [pytest.approx(saturation.scaled.jacobian_norm.tolist())]

    # The sentence's weights and each row's entropy.
    tokens = tokenize(DEFAULT_SENTENCE)
    steps = sentence_attention(tokens, 64, 0, 1.0)
    assert any(torch.allclose(m, steps.weights.double(), atol=1e-6) for m in heatmap_values(at, len(tokens), len(tokens)))
    assert bar_charts(at, "entropy (nats)") == [pytest.approx(entropy(steps.weights).tolist(), abs=1e-6)]


def test_scaling_link_sets_every_control():
    at = open_view(SCALING, text="The animal was tired", seed="5", d_k="16", scale="100")
    assert_clean(at)
    assert at.select_slider(key="d_k").value == 16
    assert at.select_slider(key="scale").value == 100.0
    assert temperature_table(at)["your scale s = 100"] == SOFTMAX_X100_ROUNDED
    tokens = tokenize("The animal was tired")
    steps = sentence_attention(tokens, 16, 5, 100.0)
    assert any(torch.allclose(m, steps.weights.double(), atol=1e-6) for m in heatmap_values(at, 4, 4))
    assert line_series(at, "variance", "q·k (unscaled)") == [pytest.approx(dot_product_variance(5).unscaled.tolist())]


def test_scaling_snaps_link_values_and_rejects_bad_ones():
    at = open_view(SCALING, d_k="100", scale="3")
    assert_clean(at)
    assert at.select_slider(key="d_k").value == 128  # nearest power of two on a log scale
    assert at.select_slider(key="scale").value == 3.2
    at = open_view(SCALING, d_k="0", scale="banana", seed="-1")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert "d_k = “0”" in warning and "scale = “banana”" in warning and "seed = “\\-1”" in warning
    assert at.select_slider(key="d_k").value == 64 and at.select_slider(key="scale").value == 1.0


def test_scaling_controls_are_written_to_the_url():
    at = open_view(SCALING)
    at.select_slider(key="scale").set_value(0.1)
    at.select_slider(key="d_k").set_value(256)
    at.run()
    assert_clean(at)
    assert at.query_params["scale"] == "0.1" and at.query_params["d_k"] == "256"
    assert "your scale s = 0.1" in temperature_table(at)


def test_scaling_with_no_words_shows_the_example():
    at = open_view(SCALING, text=" \n ")
    assert_clean(at)
    assert any("no words" in message for message in texts(at, "info"))
    assert bar_charts(at, "entropy (nats)")[0] == pytest.approx(
        entropy(sentence_attention(tokenize(DEFAULT_SENTENCE), 64, 0, 1.0).weights).tolist(), abs=1e-6
    )


def test_scaling_with_one_token():
    at = open_view(SCALING, text="Hello")
    assert_clean(at)
    assert any("one token" in message for message in texts(at, "info"))
    assert heatmap_values(at, 1, 1)[0].tolist() == [[1.0]]
    assert bar_charts(at, "entropy (nats)") == [[0.0]]


def test_scaling_cuts_a_huge_text():
    at = open_view(SCALING, text="word " * 3000)
    assert_clean(at)
    assert any("first 32" in message for message in texts(at, "warning"))
    assert len(bar_charts(at, "entropy (nats)")[0]) == 32


# --- Masking ---------------------------------------------------------------------------------


def open_sentence(at, b: int) -> None:
    """Open sentence ``b``'s tab of the generation section (lazy: only the open one's charts are drawn)."""
    at.session_state["sentence_tab"] = f"Sentence {b + 1}"
    at.run()


def sentence_heatmaps(at, batch) -> list[torch.Tensor]:
    """The T × T heatmaps drawn with each sentence's tab open in turn; the first one is left open."""
    t = len(batch.tokens[0])
    matrices = []
    for b in reversed(range(len(batch.tokens))):
        open_sentence(at, b)
        matrices += heatmap_values(at, t, t)
    return matrices


def contains(matrices: list[torch.Tensor], expected: torch.Tensor) -> bool:
    """Some matrix equals ``expected`` (NaN on the page where the engine has -inf: a masked cell)."""
    expected = expected.double().masked_fill(torch.isneginf(expected), float("nan"))
    return any(torch.allclose(m, expected, atol=1e-5, equal_nan=True) for m in matrices)


def fill_table(at) -> pd.DataFrame:
    """The three ways to fill a masked row, a column each, a row per key."""
    return next(table.value for table in at.table if "attn_core masked_softmax" in table.value.columns)


def test_masking_defaults_match_the_engine():
    at = open_view(MASKING)
    assert_clean(at)
    assert at.radio(key="mask").value == "causal"
    batch = masked_batch_attention(DEFAULT_SENTENCES, Mask("causal"))
    matrices = sentence_heatmaps(at, batch)
    for b in range(3):
        assert contains(matrices, batch.steps.scaled[b])  # masked cells are drawn as masked
        assert contains(matrices, batch.steps.weights[b])
        assert batch.steps.weights[b].triu(diagonal=1).eq(0).all()
    # The padded tokens and the key padding mask.
    padded = next(table.value for table in at.table if "sentence 2" in table.value.columns)  # a column per sentence
    assert [shown(cell) for cell in padded["sentence 2"]] == ["I", "am", "going", "to", "play", "[PAD]", "[PAD]"]
    assert list(padded.index) == [str(j) for j in range(7)]  # positions j from 0, as in M_bj = [j < length_b]
    assert heatmap_values(at, 3, 7)[0][1].tolist() == [1, 1, 1, 1, 1, 0, 0]
    # Padded against alone, and the two mask conventions.
    assert max(alone_differences(at)) < 1e-6
    assert float(metric(at, "Largest difference")) == 0.0


def test_masking_link_plays_generation_to_step_three():
    at = open_view(MASKING, mask="causal", step="3")
    assert_clean(at)
    assert at.slider(key="step").value == 3
    step_texts = [shown(text) for text in texts(at, "markdown") if shown(text).startswith("Step 3:")]
    assert step_texts[0] == "Step 3: “sat” may see 3 of 7 keys: The, cat, sat."
    batch = masked_batch_attention(DEFAULT_SENTENCES, Mask("causal"))
    for b in range(3):
        open_sentence(at, b)
        (bars,) = bar_charts(at, "weight")
        assert bars == pytest.approx(batch.steps.weights[b, 2].tolist(), abs=1e-6)
        assert bars[3:] == [0.0] * 4  # nothing after the third token


def test_masking_sliding_window_link_and_slider():
    """A window of w keys: each query sees itself and the w - 1 keys before it, never a [PAD]; the slider moves it."""
    at = open_view(MASKING, mask="window", window="2", step="5")
    assert_clean(at)
    assert at.slider(key="window").value == 2
    assert [shown(text) for text in texts(at, "markdown") if shown(text).startswith("Step 5:")] == [
        "Step 5: “the” may see 2 of 7 keys: on, the."
    ]
    batch = masked_batch_attention(DEFAULT_SENTENCES, Mask("window", (2,)))
    visible = batch.mask[0].int()  # (T, T) for sentence 1: 6 tokens and a [PAD], which sees nothing
    assert visible.sum(dim=-1).tolist() == [1, 2, 2, 2, 2, 2, 0] and visible.triu(diagonal=1).eq(0).all()
    matrices = sentence_heatmaps(at, batch)
    for b in range(3):
        assert contains(matrices, batch.steps.weights[b])
    at.slider(key="window").set_value(4).run()
    assert_clean(at)
    assert at.query_params["window"] == "4"
    assert [shown(text) for text in texts(at, "markdown") if shown(text).startswith("Step 5:")] == [
        "Step 5: “the” may see 4 of 7 keys: cat, sat, on, the."
    ]


@pytest.mark.parametrize("kind", ["padding", "both"])
def test_masking_padding_blocks_pad_rows(kind):
    at = open_view(MASKING, mask=kind)
    assert_clean(at)
    assert any("3 query rows see no key" in message for message in texts(at, "info"))
    batch = masked_batch_attention(DEFAULT_SENTENCES, Mask(kind))
    matrices = sentence_heatmaps(at, batch)
    assert all(contains(matrices, batch.steps.weights[b]) for b in range(3))
    # The first blocked row: NaN naively, 0 in attn_core, uniform with -1e9.
    fills = fill_table(at)
    assert list(fills.iloc[:, 0]) == ["NaN"] * 7
    assert list(fills.iloc[:, 1]) == ["0.0000"] * 7
    assert list(fills.iloc[:, 2]) == [f"{1 / 7:.4f}"] * 7
    assert max(alone_differences(at)) < 1e-6


def test_masking_numbers_name_masked_cells():
    at = open_all(open_view(MASKING, mask="causal"), "expander", "numbers Scaled scores, masked")
    assert_clean(at)
    scores = next(df.value for df in at.dataframe if df.value.shape == (7, 7))
    assert scores.iloc[0, 1] == "−∞ (masked)"  # above the diagonal: masked, not "None"
    assert scores.iloc[1, 0] != "−∞ (masked)"
    float(scores.iloc[1, 0])


def test_masking_with_no_sentences_shows_the_example():
    at = open_view(MASKING, text=" | |  ")
    assert_clean(at)
    assert any("no sentences" in message for message in texts(at, "info"))
    batch = masked_batch_attention(DEFAULT_SENTENCES, Mask("causal"))
    assert contains(sentence_heatmaps(at, batch), batch.steps.weights[0])


def test_the_batchs_tokens_are_shown_as_typed_in_its_table():
    """st.table renders a cell as Markdown: a token ">" would be an empty quote, "#" an empty heading, "*" a bullet."""
    at = open_view(MASKING, text="a > b | c # d * e", slide="1", part="1")
    assert_clean(at)
    frame = at.table[0].value  # a column per sentence, a row per position
    cells = [cell for column in frame.columns for cell in frame[column] if cell]
    assert [shown(cell) for cell in cells] == ["a", ">", "b", "[PAD]", "[PAD]", "c", "#", "d", "*", "e"]
    assert not {">", "#", "*"} & set(cells)  # each escaped


def test_masking_with_one_token():
    at = open_view(MASKING, text="Hi", mask="both", step="4")
    assert_clean(at)
    assert any("nothing to step through" in caption for caption in texts(at, "caption"))
    assert any("One sentence" in message for message in texts(at, "info"))
    assert heatmap_values(at, 1, 1)[0].tolist() == [[1.0]]  # its only key: weight 1


def test_masking_with_one_sentence_far_longer():
    long = " ".join(f"w{i}" for i in range(40))
    at = open_view(MASKING, text=f"Hi there | {long}", mask="padding", step="16")
    assert_clean(at)
    warnings = " ".join(texts(at, "warning"))
    assert "Sentence 2 has 40 tokens" in warnings and "first 16" in warnings
    assert "far longer" in warnings
    batch = masked_batch_attention([["Hi", "there"], [f"w{i}" for i in range(16)]], Mask("padding"))
    assert contains(sentence_heatmaps(at, batch), batch.steps.weights[0])
    assert at.slider(key="step").value == 16


def test_masking_with_too_many_sentences():
    at = open_view(MASKING, text="a b | c | d e f | g | h i")
    assert_clean(at)
    assert any("uses the first 4" in message for message in texts(at, "warning"))
    assert [tab.label for tab in at.tabs if tab.label.startswith("Sentence")] == [f"Sentence {i}" for i in range(1, 5)]


def test_with_no_blocked_row_the_three_fills_are_shown_on_the_steps_row_blocked_whole():
    at = open_view(MASKING, mask="causal", step="3")  # every query sees itself at least
    assert_clean(at)
    query = DEFAULT_SENTENCES[0][2]
    assert f"“{query}” of sentence 1 sees a key under this mask; here every key is blocked" in shown(
        " ".join(texts(at, "markdown"))
    )
    fills = fill_table(at)  # NaN naively, 0 in attn_core, uniform with -1e9 over the batch's 7 keys
    assert list(fills.iloc[:, 0]) == ["NaN"] * 7 and list(fills.iloc[:, 1]) == ["0.0000"] * 7
    assert list(fills.iloc[:, 2]) == [f"{1 / 7:.4f}"] * 7


def test_custom_mask_that_blocks_everything():
    at = open_view(MASKING, mask="custom", text="I am going to play")
    at.button(key="grid_start_none").click().run()
    assert_clean(at)
    assert any("blocks every key for every query" in message for message in texts(at, "warning"))
    weights = heatmap_values(at, 5, 5)
    assert any(m.eq(0).all() for m in weights)  # every weight 0
    assert any(m.isnan().all() for m in weights)  # every score drawn as masked
    fills = fill_table(at)
    assert list(fills.iloc[:, 0]) == ["NaN"] * 5 and list(fills.iloc[:, 1]) == ["0.0000"] * 5
    assert bar_charts(at, "weight") == [[0.0] * 5]
    assert float(metric(at, "Largest difference")) == 0.0


def test_custom_mask_edit_blocks_one_row():
    at = open_view(MASKING, mask="custom", text="I am going to play", step="2")
    causal = mask_to_text(torch.ones(5, 5, dtype=torch.bool).tril())
    at.session_state[editor_key(causal, ["I", "am", "going", "to", "play"])] = {
        "edited_rows": {1: {"I": False, "am": False}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    assert_clean(at)
    assert any("1 query row sees no key" in message for message in texts(at, "info"))
    grid = torch.ones(5, 5, dtype=torch.bool).tril()
    grid[1] = False
    batch = masked_batch_attention([tokenize("I am going to play")], grid)
    assert contains(heatmap_values(at, 5, 5), batch.steps.weights[0])
    assert contains(heatmap_values(at, 5, 5), batch.steps.scaled[0])
    assert "“am” may see 0 of 5 keys" in " ".join(texts(at, "markdown"))
    assert list(fill_table(at).iloc[:, 0]) == ["NaN"] * 5


def test_masking_bad_link_values_warn_and_fall_back():
    at = open_view(MASKING, mask="sideways", step="0")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert "mask = “sideways”" in warning and "step = “0”" in warning
    assert at.radio(key="mask").value == "causal" and at.slider(key="step").value == 1


def test_masking_step_beyond_the_sentence_is_clamped():
    at = open_view(MASKING, text="one two three", step="9")
    assert_clean(at)
    assert at.slider(key="step").value == 3
    assert math.isclose(sum(bar_charts(at, "weight")[0]), 1.0, abs_tol=1e-6)


def test_slides_say_in_their_text_or_titles_what_a_page_writes_beside_or_under_its_charts():
    """On a slide the room goes to the charts: Masking's lead gives the two conventions' difference (no metric beside
    the masks), and Scaling's entropy chart says a uniform row's entropy under its title (no caption under it)."""
    at = open_view(MASKING, present="on", slide="5")
    assert_clean(at)
    assert not [m for m in at.metric if m.label == "Largest difference"]
    assert any("Both give the same weights (largest difference 0.0e+00)" in text for text in texts(at, "markdown"))
    at = open_view("pages/2_Scaling.py", present="on", slide="4")
    assert_clean(at)
    n = len(tokenize(DEFAULT_SENTENCE))
    assert f"Entropy of each row\nuniform over {n} keys: log {n} = {math.log(n):.3f} nats; one-hot: 0" in chart_headings(at)


def test_the_note_on_rows_that_see_no_key_stays_with_the_sections_of_the_batch():
    """The padded batch under the sidebar's mask has rows that see nothing: said above the batch's sections, not above
    the model masks and the studio, which make masks of their own."""
    for slide, said in (("1", True), ("4", True), ("all", True), ("6", False), ("7", False)):
        at = open_view(MASKING, mask="padding", slide=slide)
        assert_clean(at)
        assert any("see no key at all" in message for message in texts(at, "info")) is said, slide
