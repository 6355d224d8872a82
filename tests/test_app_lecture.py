"""Lecture-ready views, run by AppTest: sequences of control changes, stale values the browser sends back,
presenter mode, the chart theme, and views that do not leak their values into each other."""

from __future__ import annotations

import json

import pytest
import torch
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Selectbox

from attn_core import tokenize
from attn_core.masking import masked_batch_attention
from attn_core.walkthrough import FIXED_SIZES
from attn_ui.charts import FONT_SIZE, TITLE_SIZE
from attn_ui.page import PRESENTER_STYLES, VIEWS
from attn_ui.slide import NOTES_KEY, VIEWPORT_KEY, notes_height, type_px, window, zoom
from attn_ui.url_state import mask_to_text
from tests.conftest import APP, TIMEOUT, assert_clean, chart_frames, chart_headings, heatmap_values, open_view, texts

SENTENCE = "the quick brown fox jumps over a lazy dog while my friend reads an old book"
PIPELINE, SCALING, MASKING, MULTI_HEAD, COST, DECODING, REAL, TRAINING, POSITIONS = (view.path for view in VIEWS)

# Every control of each view (but presenter mode, tested below), with values to change it to in turn. Cost runs
# small sweeps (T_max first), and its "Run sweep" button is covered by its own tests.
WALKS = {
    PIPELINE: [
        ("seed", 7),
        ("d_k", 4),
        ("d_model", 24),
        ("scale", False),
        ("pos", True),
        ("source", "a cat sat"),
        ("source", ""),
        ("query", 0),
        ("preset", "cat-sat"),
        ("preset", "random-batch"),
        ("batch", 5),
        ("preset", "playing-outside"),
        ("preset", "custom"),
        ("weights", "minilm"),
        ("layer", 3),
        ("head", 11),
        ("query", 2),
        ("weights", "toy"),
    ],
    SCALING: [("seed", 3), ("d_k", 1024), ("scale", 100.0), ("d_k", 1), ("scale", 0.01)],
    MASKING: [("mask", "padding"), ("step", 16), ("mask", "both"), ("mask", "custom"), ("step", 1), ("mask", "causal")],
    MULTI_HEAD: [("heads", 8), ("head", 7), ("d_model", 12), ("heads", 5), ("head", 0), ("seed", 4), ("d_model", 1)],
    COST: [("T_max", 256), ("heads", 2), ("d_head", 16), ("mask", "causal"), ("batch", 2), ("repeats", 1), ("dtype", "bfloat16")],
    DECODING: [("step", 5), ("d_model", 1024), ("heads", 16), ("kv_heads", 3), ("kv_heads", 4), ("batch", 8), ("seed", 2)],
    REAL: [
        ("hide", True),
        ("layer", 5),
        ("head", 11),
        ("token", 3),
        ("text2", "The animal didn't cross the street because it was too wide"),
        ("coref", "it, fox, dog"),
        ("word", "fox"),
        ("sentences", "a fox\nthe fox ran"),
        ("hide", False),
    ],
    POSITIONS: [
        ("seed", 5),
        ("d_k", 32),
        ("positions", True),
        ("query", 3),
        ("key", 0),
        ("pair", 15),
        ("m", 20),
        ("d_k", 4),
        ("scaled", False),
        ("top", 4),
        ("word", "sat"),
        ("sentences", "the cat sat\nwe sat on it"),
    ],
}
TEXT_KEY = {
    PIPELINE: "text",
    SCALING: "text",
    MASKING: "text",
    MULTI_HEAD: "text",
    DECODING: "text",
    REAL: "text",
    POSITIONS: "text",
}


def widget(at, key: str):
    """The widget with this key, whatever its kind, or None when the page does not draw it now."""
    matches = [w for kind in WIDGET_KINDS for w in at.get(kind) if getattr(w, "key", None) == key]
    return matches[0] if matches else None


WIDGET_KINDS = ("selectbox", "number_input", "toggle", "slider", "select_slider", "radio", "text_area", "text_input")


@pytest.mark.parametrize("view", list(WALKS), ids=lambda path: path.split("_", 1)[1].removesuffix(".py"))
def test_change_the_text_then_every_other_control(view):
    at = open_view(view)
    assert_clean(at)
    if view in TEXT_KEY:
        widget(at, TEXT_KEY[view]).set_value(SENTENCE).run()
        assert_clean(at)
    for key, value in WALKS[view]:
        control = widget(at, key)
        assert control is not None, f"{view}: no control {key} after the previous changes"
        control.set_value(value).run()
        assert_clean(at)
        assert at.session_state[key] == value, f"{view}: {key} did not take {value!r}"


def send_stale_label(monkeypatch, at, key: str, label: str) -> None:
    """From now on, send ``label`` as the value of the select box ``key``, as a browser does after the box's
    options changed under it (AppTest itself would send a fresh label)."""
    target = widget(at, key).id
    fresh = Selectbox._widget_state

    def stale(self):
        state = fresh.fget(self)
        if self.id == target:
            state.string_value = label
        return state

    monkeypatch.setattr(Selectbox, "_widget_state", property(stale))


@pytest.mark.parametrize(
    ("view", "key", "stale", "fallback"),
    [
        (PIPELINE, "query", "4: play", 15),  # the last word of SENTENCE
        (MULTI_HEAD, "head", "head 7", 0),
        (REAL, "token", "10: it", 16),
        (REAL, "layer", "layer 9", 0),
        (POSITIONS, "query", "30: gone", 1),
    ],
)
def test_a_stale_label_sent_back_by_the_browser_is_replaced(monkeypatch, view, key, stale, fallback):
    """Streamlit stores a label that is no longer an option as a raw string under the widget's key: the view
    must not crash on it (the reported TypeError), and falls back to a valid value."""
    at = open_view(view)
    widget(at, TEXT_KEY[view]).set_value(SENTENCE).run()
    send_stale_label(monkeypatch, at, key, stale)
    at.run()
    assert_clean(at)
    assert widget(at, key).value == fallback


def test_pipeline_text_change_then_stale_query_label(monkeypatch):
    """The reported crash: type a sentence, then change another control while the browser still holds the
    query picker's old label. The query falls back to the last word of the new sentence, and its labels are new."""
    at = open_view(PIPELINE)
    widget(at, "text").set_value("we like cats .").run()
    send_stale_label(monkeypatch, at, "query", "4: play")
    widget(at, "seed").set_value(5).run()
    assert_clean(at)
    picker = widget(at, "query")
    assert picker.value == 2 and picker.options == ["0: we", "1: like", "2: cats", "3: ."]


def test_default_query_is_a_word_with_real_weights():
    at = open_view(PIPELINE, weights="minilm")
    assert_clean(at)
    picker = widget(at, "query")
    assert picker.options[picker.value] == f"{picker.value}: play"  # "I am going to play": not [SEP]


@pytest.mark.parametrize("preset", list(FIXED_SIZES))
def test_presets_show_their_real_sizes(preset):
    at = open_view(PIPELINE, preset=preset)
    assert_clean(at)
    shown = {w.label: w.value for w in at.number_input if w.label in ("Model width C", "Head size d_k")}
    assert shown == {"Model width C": FIXED_SIZES[preset][0], "Head size d_k": FIXED_SIZES[preset][1]}


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.label)
def test_every_chart_carries_the_app_theme(view):
    at = open_view(view.path, text=SENTENCE) if view.path in TEXT_KEY else open_view(view.path, T_max="256")
    if view.path == COST:
        at.button(key="run").click().run()  # its charts show a sweep's results
    if view.path == TRAINING:
        next(button for button in at.button if button.label == "Train").click().run()  # its charts show a trained run
    assert_clean(at)
    charts = at.get("vega_lite_chart")
    assert charts
    for chart in charts:
        config = json.loads(chart.proto.spec)["config"]
        assert config["axis"]["labelFontSize"] >= 14 and config["axis"]["titleFontSize"] >= 14
        assert config["legend"]["labelFontSize"] >= 14 and config["header"]["labelFontSize"] >= 14
        assert (FONT_SIZE, TITLE_SIZE) == (config["axis"]["labelFontSize"], config["axis"]["titleFontSize"])


def test_heatmaps_label_every_token_and_never_drop_labels():
    at = open_view(PIPELINE, text=SENTENCE)
    tokens = SENTENCE.split()
    for chart in at.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        if not spec.get("description", "").startswith("heatmap:"):
            continue
        for channel in ("x", "y"):
            axis = spec["layer"][0]["encoding"][channel]["axis"]
            if axis["labelExpr"].startswith(json.dumps(tokens[:1])[:-1]):  # a token axis
                assert axis["labelOverlap"] is False and axis["values"] == list(range(len(tokens)))


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.label)
def test_presenter_mode_shows_one_slide_and_steps_with_next(view):
    at = open_view(view.path, present="on")
    assert_clean(at)
    bar = f"**{view.label}** · Step 1 of "
    steps = [text for text in texts(at, "markdown") if text.startswith(bar)]
    assert steps, "no slide bar naming the view and the step"
    last = int(steps[0].removeprefix(bar).split(" · ")[0])
    assert last >= 3 and len(at.header) == 1 and at.header[0].value.startswith("1 · ")
    assert not at.title, "a slide repeats the view's title"
    at.button(key="slide_next").click().run()
    assert_clean(at)
    assert any(text.startswith(f"**{view.label}** · Step 2 of {last}") for text in texts(at, "markdown"))
    moved = (at.query_params.get("slide"), at.query_params.get("part"))
    assert moved in (("2", None), (None, "2")), moved  # the next section, or the first section's second part
    at.button(key="clicker_previous").click().run()
    assert not {"slide", "part"} & set(at.query_params) and at.header[0].value.startswith("1 · ")


def test_a_section_too_large_for_one_screen_is_two_slides_in_presenter_mode():
    """Multi-head's scores section is two slides in presenter mode (scores and scaled scores, then weights and the
    head's context: three token-by-token matrices do not fit a 1024-px window side by side), counted by the step
    counter and named in the URL ("part"); outside presenter mode it is one section."""
    at = open_view(MULTI_HEAD, present="on", slide="5")
    assert_clean(at)
    assert [h.value for h in at.header] == ["5 · Head 0: scores, weights and context (1/2)"]
    assert [heading.split("\n")[0] for heading in chart_headings(at)] == ["Scores", "Scaled scores"]
    bar = next(text for text in texts(at, "markdown") if text.startswith("**Multi-head** · Step "))
    assert bar.startswith("**Multi-head** · Step 5 of 13 · ")  # one step per part of sections 1-5, parts of 5, 6, 7, 8
    at.button(key="slide_next").click().run()
    assert at.query_params["slide"] == "5" and at.query_params["part"] == "2"
    assert [h.value for h in at.header] == ["5 · Head 0: scores, weights and context (2/2)"]
    assert [heading.split("\n")[0] for heading in chart_headings(at)] == ["Attention weights", "Z, head 0's context"]
    at.button(key="slide_next").click().run()
    assert at.query_params["slide"] == "6" and "part" not in at.query_params and at.header[0].value.startswith("6 · ")
    at.button(key="clicker_previous").click().run()
    assert (at.query_params["slide"], at.query_params["part"]) == ("5", "2")
    at = open_view(MULTI_HEAD, slide="5")
    assert [h.value for h in at.header] == ["5 · Head 0: scores, weights and context"] and len(chart_headings(at)) == 4


@pytest.mark.parametrize(("window", "crowded"), [((1024, 576), True), ((1920, 1080), False)])
def test_a_slide_says_when_its_tokens_do_not_fit_the_window(window, crowded):
    """On a slide, a heatmap keeps MIN_STEP (16) px per token: where the window is too small for that, the slide says so
    rather than squeeze the rows; the window's size is what the browser reported (attn_ui.slide)."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    # One head's weights and context, of 22 tokens: 352 px of rows, which a 576-px-high window has not.
    at.query_params.update({"present": "on", "slide": "5", "part": "2", "text": " ".join(["word"] * 22)})
    at.switch_page(MULTI_HEAD)
    at.session_state[VIEWPORT_KEY] = window
    at.run()
    assert_clean(at)
    notes = [text for text in texts(at, "caption") if "do not fit this window" in text]
    assert notes == (
        [
            "22 tokens do not fit this window at 16 px each: the slide scrolls. A larger window, or a shorter "
            "sentence in Controls, fits it on one screen."
        ]
        if crowded
        else []
    )
    offers = [button for button in at.button if button.label.startswith("Show the first")]
    assert len(offers) == crowded
    if crowded:  # the offer cuts the sentence to what the window fits, and then the slide fits
        (offer,) = offers
        fitting = int(offer.label.split()[3])
        assert 2 <= fitting < 22
        offer.click().run()
        assert_clean(at)
        assert at.session_state["text"] == " ".join(["word"] * fitting)
        assert not [text for text in texts(at, "caption") if "do not fit this window" in text]


@pytest.mark.parametrize(
    ("reported", "magnified", "laid_out"),
    [
        ((1024, 576), 1.0, (1024, 576)),
        ((1280, 720), 1.0, (1280, 720)),
        ((1280, 1024), 1.0, (1280, 1024)),
        ((1366, 768), 1.0, (1366, 768)),
        ((1600, 900), 1.25, (1280, 720)),
        ((1440, 900), 1.125, (1280, 800)),
        ((1920, 1080), 1.5, (1280, 720)),
        ((1920, 1200), 1.5, (1280, 800)),
        ((3840, 2160), 1.5, (2560, 1440)),
    ],
)
def test_a_slide_on_a_large_window_is_laid_out_for_1280_by_720_and_magnified(monkeypatch, reported, magnified, laid_out):
    """On a slide, a window larger than 1280 × 720 magnifies the slide (up to 1.5×, a full-HD window) and lays it out
    for its size divided by that, notes included; off a slide nothing is magnified."""
    state = {"present": True, VIEWPORT_KEY: reported, NOTES_KEY: 300}
    monkeypatch.setattr("attn_ui.slide.st.session_state", state)
    assert (zoom(), window(), notes_height()) == (magnified, laid_out, int(300 / magnified))
    assert f"zoom: {magnified};" in PRESENTER_STYLES[type_px(), zoom()]
    state["present"] = False
    assert (zoom(), window(), notes_height()) == (1.0, reported, 0)


@pytest.mark.parametrize(("notes_px", "crowded"), [(0, False), (600, True)])
def test_a_slide_leaves_its_notes_the_height_the_browser_reported(notes_px, crowded):
    """The notes above a slide's section (a message on the input, the link's ignored values) take the height the
    browser reported (attn_ui.slide): on a full-HD window, 16 tokens' scores fit under no notes, not under 600 px."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({"present": "on", "slide": "4", "text": SENTENCE})
    at.switch_page(PIPELINE)
    at.session_state[VIEWPORT_KEY] = (1920, 1080)
    at.run()
    at.session_state[NOTES_KEY] = notes_px  # as the browser's report does, on the view's second run
    at.run()
    assert_clean(at)
    assert bool([text for text in texts(at, "caption") if "16 tokens do not fit this window" in text]) == crowded


def test_a_links_ignored_values_stay_until_a_control_changes():
    """A slide's window reports its size (and its notes' height) right after opening, which reruns the view: the
    link's ignored values are still said then, and go once the user changes a control."""
    at = open_view(PIPELINE, present="on", slide="1", preset="nonsense", d_model="abc")
    ignored = [text for text in texts(at, "warning") if text.startswith("Some values were not used as given")]
    assert len(ignored) == 1 and "preset = “nonsense”" in ignored[0] and "d_model = “abc”" in ignored[0]
    assert ignored[0].count("; its default is used") == 2  # each value says what took its place
    at.run()  # the rerun that follows the window's report: no control changed
    assert [text for text in texts(at, "warning") if text.startswith("Some values were not used as given")] == ignored
    at.button(key="slide_next").click().run()
    assert_clean(at)
    assert not [text for text in texts(at, "warning") if text.startswith("Some values were not used as given")]


def test_presenter_link_opens_at_its_slide_and_clamps_past_the_end():
    at = open_view(PIPELINE, present="on", slide="4")
    assert [h.value for h in at.header] == ["4 · Scores, scaling and softmax (1/2)"]
    at = open_view(PIPELINE, present="on", slide="99")
    assert_clean(at)
    assert [h.value for h in at.header] == ["7 · Correctness"]


def test_without_presenter_mode_a_link_opens_its_section_or_all_of_them():
    at = open_view(PIPELINE, slide="4")
    assert [h.value for h in at.header] == ["4 · Scores, scaling and softmax"]
    (picker,) = at.button_group
    assert picker.options == ["Embeddings", "Projections", "Q, K, V", "Scores", "Context", "One query", "Check", "All sections"]
    assert picker.value == "Scores"
    at = open_view(PIPELINE, slide="all")
    assert [h.value.split(" · ")[0] for h in at.header] == ["1", "2", "3", "4", "5", "6", "7"]
    assert at.button_group[0].value == "All sections" and at.query_params["slide"] == "all"
    at = open_view(PIPELINE, slide="1")
    assert [h.value for h in at.header] == ["1 · Token embeddings"] and "slide" not in at.query_params


def test_the_sections_picker_opens_the_section_chosen_and_keeps_it_in_the_link():
    at = open_view(MULTI_HEAD)
    for choice, headers, slide in (
        ("Scores", ["5 · Head 0: scores, weights and context"], "5"),
        ("All sections", [str(number) for number in range(1, 10)], "all"),
        ("Split", ["1 · Splitting the width into heads"], None),
    ):
        at.button_group[0].set_value(choice).run()
        assert_clean(at)
        shown = [h.value if len(headers) == 1 else h.value.split(" · ")[0] for h in at.header]
        assert shown == headers and at.query_params.get("slide") == slide
        assert at.button_group[0].value == choice


def test_custom_mask_grid_link_reproduces_the_grid():
    grid = torch.tensor([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    at = open_view(MASKING, mask="custom", text="I am going to play", grid=mask_to_text(grid))
    assert_clean(at)
    assert "1 query row sees no key" in " ".join(texts(at, "info"))
    batch = masked_batch_attention([tokenize("I am going to play")], grid)
    assert any(torch.allclose(m, batch.steps.weights[0].double(), atol=1e-6) for m in heatmap_values(at, 5, 5))
    assert at.query_params["grid"] == mask_to_text(grid)


def test_bad_mask_grid_link_is_reported():
    at = open_view(MASKING, mask="custom", grid="10-1x")
    assert_clean(at)
    assert "grid = “10\\-1x”" in " ".join(texts(at, "warning"))


def test_masking_step_highlights_the_query_row():
    at = open_view(MASKING, step="3")
    outlined = [
        rows
        for chart, rows in zip(at.get("vega_lite_chart"), chart_frames(at), strict=True)
        for layer in json.loads(chart.proto.spec).get("layer", [])
        if layer.get("mark", {}).get("stroke") and layer.get("transform") == [{"filter": "datum.highlight"}]
    ]
    assert outlined
    assert all({cell["row"] for cell in rows if cell["highlight"]} == {2} for rows in outlined)
