"""Every chart builder of attn_ui.charts produces a valid Vega-Lite spec with the app's theme.

The app compiles its Altair charts without validating them at run time (Altair's JSON-schema check was most of a
rerun), so the check is here: each builder, in each of its variants, against the Vega-Lite schema that the installed
Altair carries."""

from __future__ import annotations

import base64
import io
import json
import re

import altair as alt
import numpy as np
import pytest

from attn_ui import charts
from attn_ui.charts import build, label_around
from attn_ui.charts.theme import HIGHLIGHT_COLOUR
from attn_ui.draw import chart_spec

TOKENS = ["the", "cat", "sat", "on", "the", "mat"]
RNG = np.random.default_rng(0)
SCORES = RNG.normal(size=(6, 6))
SCORES[2, 4] = -np.inf  # a masked score
D_K = np.array([1.0, 2.0, 4.0, 8.0])

CHARTS = {
    "weights heatmap, highlighted row": lambda: charts.heatmap(np.full((6, 6), 1 / 6), TOKENS, TOKENS, highlight=2),
    "signed heatmap with a masked cell": lambda: charts.heatmap(SCORES, TOKENS, TOKENS, kind="signed"),
    "heatmap with marked cells": lambda: charts.heatmap(np.full((6, 6), 1 / 6), TOKENS, TOKENS, marked=((1, 2), (4, 0))),
    "bars, one marked": lambda: charts.bars(np.full(6, 1 / 6), TOKENS, value_title="weight", marked=(3,)),
    "lines with marked points": lambda: charts.lines(
        D_K, {"a": D_K, "b": D_K / 2}, x_title="d_k", y_title="v", marked=(("b", 2),)
    ),
    "series lines with a marked point": lambda: charts.series_lines(
        {"naive": ([128, 256], [1.0, 4.0]), "tiled": ([128, 256, 512], [2.0, 5.0, 20.0])},
        x_title="T",
        y_title="median ms",
        log_x=True,
        marked=(("tiled", 2), ("naive", 0)),
    ),
    "mask heatmap": lambda: charts.heatmap(np.tril(np.ones((6, 6))), TOKENS, TOKENS, kind="mask"),
    "small heatmap with numbers": lambda: charts.heatmap(RNG.random((3, 3)), TOKENS[:3], TOKENS[:3]),
    "feature heatmap (W)": lambda: charts.heatmap(RNG.normal(size=(64, 8)), list(map(str, range(64))), list(map(str, range(8)))),
    "bars": lambda: charts.bars(np.full(6, 1 / 6), TOKENS, value_title="weight", title="weights"),
    "lines with theory and marker": lambda: charts.lines(
        D_K, {"measured": D_K}, theory={"measured": D_K}, x_title="d_k", y_title="variance", log_x=True, log_y=True, marker=4
    ),
    "lines": lambda: charts.lines(D_K, {"a": D_K, "b": D_K / 2}, x_title="d_k", y_title="value"),
    "head grid, wrapped": lambda: charts.heatmap_grid(
        RNG.random((5, 6, 6)), TOKENS, TOKENS, panel_names=[f"head {i}" for i in range(5)]
    ),
    "layer by head thumbnails": lambda: charts.head_thumbnails(RNG.random((2, 3, 6, 6)), TOKENS),
    "labelled lines": lambda: charts.labelled_lines(
        RNG.random((2, 4)),
        ["a ↔ b", "a ↔ c"],
        ["lookup", "embedding layer", "layer 0", "layer 1"],
        value_title="cosine similarity",
        point_title="stage",
        series_title="sentences",
    ),
    "series lines": lambda: charts.series_lines(
        {"naive": ([128, 256], [1.0, 4.0]), "tiled": ([128, 256, 512], [2.0, 5.0, 20.0])},
        x_title="T",
        y_title="median ms",
        log_x=True,
        log_y=True,
    ),
    "head groups": lambda: charts.head_groups({"MHA": list("0123"), "GQA": list("0011"), "MLA": ["latent"] * 4}, title="heads"),
    "tile map": lambda: charts.tile_map([["full", "skipped"], ["partial", "full"]], 32, 32, 50, title="a mask's tiles"),
    "query-key scatter": lambda: charts.query_key_scatter(
        RNG.normal(size=(12, 2)), TOKENS, [(0, 1, 0.7), (0, 2, 0.2), (3, 3, 0.9)], title="map", subtitle=("a line",)
    ),
    "rotation circle": lambda: charts.rotation_circle(RNG.normal(size=(6, 2)), 3, theta=0.5, title="pair 0"),
    "word path map": lambda: charts.word_path_map(RNG.normal(size=(2, 8, 2)), ["a bank", "b bank"], [f"s{i}" for i in range(8)]),
}


def as_spec(spec: dict) -> dict:
    """A builder's output as the JSON Vega-Lite reads, its data written out as rows."""
    return charts.inline_data(spec)


def tooltip_lines(mark: dict) -> dict[str, str]:
    """A mark's tooltip expression (an object literal) as {line's title: its value's expression}."""
    expression = mark["tooltip"]["expr"]
    assert expression.startswith("{") and expression.endswith("}")
    return dict(re.findall(r'"([^"]+)": (.*?)(?=, "|}$)', expression))


def validate(spec: dict) -> None:
    """Raise on anything the Vega-Lite schema (of the installed Altair) rejects."""
    kind = alt.LayerChart if "layer" in spec else alt.FacetChart if "facet" in spec else alt.Chart
    kind.from_dict(spec, validate=True)


@pytest.mark.parametrize("name", CHARTS)
def test_spec_is_valid_vega_lite_with_the_app_theme(name):
    spec = as_spec(CHARTS[name]())
    validate(spec)
    assert spec["$schema"] == alt.SCHEMA_URL
    assert spec["config"] == charts.CONFIG  # the registered theme's, and nothing of Altair's default theme
    assert spec["config"]["axis"]["labelFontSize"] == charts.FONT_SIZE
    assert spec["config"]["axis"]["labelFlush"] is False


def test_validation_catches_a_broken_spec():
    spec = as_spec(charts.heatmap(SCORES, TOKENS, TOKENS))
    spec["layer"][0]["mark"]["type"] = "hexagon"
    with pytest.raises(Exception, match="hexagon"):
        validate(spec)


def test_heatmap_data_names_masked_cells_and_keeps_the_values():
    spec = as_spec(charts.heatmap(SCORES, TOKENS, TOKENS, kind="signed"))
    cells = {(cell["row"], cell["col"]): cell for cell in spec["datasets"]["cells"]}
    assert cells[2, 4]["masked"] and cells[2, 4]["text"] == "−∞" and cells[2, 4]["value"] is None
    assert cells[0, 1]["value"] == SCORES[0, 1] and cells[0, 1]["query"] == "the" and cells[0, 1]["key"] == "cat"


def test_an_exercises_answer_is_marked_where_it_is_and_only_there():
    """The marked cells, bar and points (an exercise's reveal) are outlined or ringed in the highlight colour at their
    place: the data rows say which, and the drawing has one outline or ring per mark."""
    import vl_convert

    cells = as_spec(CHARTS["heatmap with marked cells"]())["datasets"]["cells"]
    assert {(c["row"], c["col"]) for c in cells if c["marked"]} == {(1, 2), (4, 0)}
    bars = as_spec(CHARTS["bars, one marked"]())["datasets"]["cells"]
    assert [b["key"] for b in bars if b["marked"]] == ["on"]
    points = as_spec(CHARTS["lines with marked points"]())["datasets"]["cells"]
    assert [(p["d_k"], p["v"]) for p in points if p["source"] == "marked"] == [(4.0, 2.0)]
    series = as_spec(CHARTS["series lines with a marked point"]())["datasets"]["cells"]
    assert [(p["T"], p["median ms"]) for p in series if p["series"] == "marked"] == [(512, 20.0), (128, 1.0)]
    for name, marks in [
        ("heatmap with marked cells", 2),
        ("bars, one marked", 1),
        ("lines with marked points", 1),
        ("series lines with a marked point", 2),
    ]:
        assert vl_convert.vegalite_to_svg(as_spec(CHARTS[name]())).count(f'stroke="{HIGHLIGHT_COLOUR}"') == marks, name


def test_masked_cells_are_drawn_grey_and_say_so_on_hover():
    """One layer draws every cell: a masked (−inf) score gets the grey, not a colour of the scale, and is not
    dropped as an invalid value."""

    import vl_convert

    values = np.array([[0.5, -np.inf], [1.0, 2.0]])
    spec = as_spec(charts.heatmap(values, ["a", "b"], ["a", "b"], kind="signed"))
    marks = vl_convert.vegalite_to_svg(spec).split('class="mark-rect role-mark')[1].split("</g>")[0]
    fills = re.findall(r'<path[^>]*d="M(\d+),(\d+)h[^"]*" fill="([^"]*)"', marks)
    assert {(int(x) // 44, int(y) // 44): fill for x, y, fill in fills}[1, 0] == charts.MASKED_COLOUR  # (col, row)
    assert len(fills) == 4 and sum(fill == charts.MASKED_COLOUR for *_, fill in fills) == 1
    tips = {(cell["row"], cell["col"]): cell["tip"] for cell in spec["datasets"]["cells"]}
    assert tips == {(0, 0): "0.5000", (0, 1): "−∞ (masked)", (1, 0): "1.0000", (1, 1): "2.0000"}


def test_a_grid_cell_names_its_head_and_tokens_on_hover():
    values = RNG.random((3, 6, 6))
    spec = as_spec(charts.heatmap_grid(values, TOKENS, TOKENS, panel_names=["a", "b", "c"]))
    cell = next(c for c in spec["datasets"]["cells"] if (c["panel"], c["row"], c["col"]) == (2, 0, 3))
    assert (cell["head"], cell["query"], cell["key"]) == ("c", TOKENS[0], TOKENS[3])
    assert cell["value"] == values[2, 0, 3]
    assert tooltip_lines(spec["spec"]["mark"]) == {
        "head": 'datum["head"]',
        "query": 'datum["query"]',
        "key": 'datum["key"]',
        "value": "format(datum.value, '.4f')",
    }


def test_a_grid_spec_does_not_depend_on_the_number_of_tokens():
    """A new sentence changes only a grid's data, which the browser updates in place."""
    specs = [
        as_spec(charts.heatmap_grid(RNG.random((3, t, t)), TOKENS[:t], TOKENS[:t], panel_names=["a", "b", "c"])) for t in (6, 4)
    ]
    without_data = [{key: value for key, value in spec.items() if key != "datasets"} for spec in specs]
    assert json.dumps(without_data[0]) == json.dumps(without_data[1])
    assert [len(spec["datasets"]["cells"]) for spec in specs] == [3 * 36, 3 * 16]


def rgb(fill: str) -> tuple[int, ...]:
    """An SVG fill ("rgb(68, 1, 84)" or "#440154") as (red, green, blue)."""
    if fill.startswith("#"):
        return tuple(int(fill[i : i + 2], 16) for i in (1, 3, 5))
    return tuple(int(part) for part in re.findall(r"\d+", fill))


def test_weight_colours_are_the_colours_vega_gives_the_heatmaps_cells():
    """The thumbnails' pixels are coloured in Python: they must match the cells Vega draws for the same weights."""
    import vl_convert

    weights = np.linspace(0, 1, 40).reshape(5, 8)
    weights[0, :3] = [0.123456, 0.5, 0.987]
    labels = [str(i) for i in range(8)]
    svg = vl_convert.vegalite_to_svg(as_spec(charts.heatmap(weights, labels[:5], labels)))
    marks = svg.split('class="mark-rect role-mark')[1].split("</g>")[0]
    drawn = [rgb(fill) for fill in re.findall(r'<path[^>]*fill="([^"]*)"', marks)]  # row-major, like the data
    assert len(drawn) == 40 and len(set(drawn)) == 40
    assert np.abs(np.array(drawn) - charts.weight_colours(weights).reshape(-1, 3)).max() <= 1


def thumbnail_pixels(url: str) -> np.ndarray:
    """The RGB pixels (H, W, 3) of a thumbnail's PNG data: URL."""
    from PIL import Image

    header, data = url.split(",", 1)
    assert header == "data:image/png;base64"
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"))


def test_a_thumbnail_is_its_heads_weights_and_names_its_strongest_link():
    weights = RNG.random((2, 3, 6, 6)) * 0.5
    weights[1, 2, 4, 1] = 0.9  # layer 1, head 2: "the" (position 4) → "cat" (position 1)
    spec = as_spec(charts.head_thumbnails(weights, TOKENS))
    panels = spec["datasets"]["cells"]
    assert [(p["layer"], p["head"]) for p in panels] == [(i, j) for i in range(2) for j in range(3)]
    panel = panels[5]
    pixels = thumbnail_pixels(panel["image"])
    assert pixels.shape == (6, 6, 3)
    np.testing.assert_array_equal(pixels, charts.weight_colours(weights[1, 2]))
    assert not np.array_equal(pixels, thumbnail_pixels(panels[4]["image"]))
    assert panel["strongest"] == "the → cat (0.9000)" and panel["value"] == 0.9
    assert tooltip_lines(spec["spec"]["mark"]) == {
        "layer": "datum.layer",
        "head": "datum.head",
        "strongest weight": "datum.strongest",
    }
    # A click selects the thumbnail's layer and head, which the page opens in its head view.
    select = {"type": "point", "fields": ["layer", "head"]}
    assert spec["params"] == [{"name": charts.PICKED_HEAD, "select": select, "views": [spec["spec"]["name"]]}]


def test_a_thumbnail_grid_spec_does_not_depend_on_the_number_of_tokens():
    """Hiding [CLS] and [SEP] or a new sentence changes only the thumbnails' data, which the browser updates in place."""
    specs = [as_spec(charts.head_thumbnails(RNG.random((2, 3, t, t)), TOKENS[:t])) for t in (6, 4)]
    without_data = [{key: value for key, value in spec.items() if key != "datasets"} for spec in specs]
    assert json.dumps(without_data[0]) == json.dumps(without_data[1])
    assert [thumbnail_pixels(spec["datasets"]["cells"][0]["image"]).shape for spec in specs] == [(6, 6, 3), (4, 4, 3)]


def test_chart_spec_is_built_once_per_input():
    first = chart_spec(charts.heatmap, SCORES, TOKENS, TOKENS, kind="signed")
    again = chart_spec(charts.heatmap, SCORES, TOKENS, TOKENS, kind="signed")
    other = chart_spec(charts.heatmap, SCORES + 1, TOKENS, TOKENS, kind="signed")
    assert first == again and first is not again  # a copy from the cache, safe to change
    assert other["datasets"] != first["datasets"]
    assert all(isinstance(data, bytes) for data in first["datasets"].values())  # Arrow, made once per input


def heatmap(values, row_labels, col_labels, **options):
    """A builder outside attn_ui.charts with the name of one of it: bars instead of cells."""
    return charts.bars(values[0], col_labels, value_title="score")


def test_chart_spec_is_keyed_by_the_builder_itself():
    """The cache tells builders apart by their module as well as their name, and calls the builder it is given."""
    ours = chart_spec(heatmap, SCORES, TOKENS, TOKENS)
    theirs = chart_spec(charts.heatmap, SCORES, TOKENS, TOKENS)
    assert ours["description"].startswith("bars:") and theirs["description"].startswith("heatmap:")


def test_new_values_reuse_the_compiled_chart():
    """A spec is compiled by Altair once per layout (labels, titles, sizes): new values change only its data."""
    charts.heatmap(SCORES, TOKENS, TOKENS, kind="signed", title="reused")
    compiled = build._compiled.cache_info()
    first, second = (as_spec(charts.heatmap(v, TOKENS, TOKENS, kind="signed", title="reused")) for v in (SCORES, 2 * SCORES))
    assert build._compiled.cache_info().hits == compiled.hits + 2
    assert build._compiled.cache_info().misses == compiled.misses
    assert first["datasets"] != second["datasets"]
    assert {**first, "datasets": None} == {**second, "datasets": None}


def test_a_maps_layout_is_compiled_once_and_its_points_are_data():
    """A map is compiled once per layout too, its domain part of it: the rotation circle's next position (the same
    points, so the same domain) changes only its data."""
    points = RNG.normal(size=(6, 2))
    charts.rotation_circle(points, 1, theta=0.5, side=200)
    compiled = build._compiled.cache_info()
    first, second = (as_spec(charts.rotation_circle(points, current, theta=0.5, side=200)) for current in (2, 3))
    assert build._compiled.cache_info().hits == compiled.hits + 2
    assert build._compiled.cache_info().misses == compiled.misses
    assert [row["shown"] for row in second["datasets"]["positions"]] == [True] * 4 + [False] * 2
    assert first["datasets"] != second["datasets"]
    assert {**first, "datasets": None} == {**second, "datasets": None}


def test_signed_heatmap_spec_depends_on_the_values_only_through_its_data():
    """A new seed changes a chart's data only, so the browser updates it in place; Vega computes the colour scale's
    bound from the data: the same matrix times 7 is drawn in the same colours, with its own legend."""
    import vl_convert

    values = np.array([[0.5, -3.0], [1.0, 2.0]])
    small, large = (as_spec(charts.heatmap(v, ["a", "b"], ["a", "b"], kind="signed")) for v in (values, 7 * values))
    without_data = [{key: value for key, value in spec.items() if key != "datasets"} for spec in (small, large)]
    assert json.dumps(without_data[0]) == json.dumps(without_data[1])
    small_svg, large_svg = (vl_convert.vegalite_to_svg(spec) for spec in (small, large))
    fills = [re.findall(r'fill="(rgb\([^)]*\))"', svg) for svg in (small_svg, large_svg)]
    assert len(set(fills[0])) >= 4 and fills[0] == fills[1]
    assert ">−2<" in small_svg and ">−20<" in large_svg  # the legends follow the values


def test_numbers_in_dark_cells_are_white():
    spec = as_spec(charts.heatmap(np.array([[0.1, 0.9], [-2.0, 0.0]]), ["a", "b"], ["a", "b"], kind="signed"))
    dark = {(cell["row"], cell["col"]): cell["dark"] for cell in spec["datasets"]["cells"]}
    assert dark == {(0, 0): False, (0, 1): False, (1, 0): True, (1, 1): False}
    text_layer = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "text")
    assert text_layer["encoding"]["color"]["condition"] == {"test": "datum.dark", "value": "white"}
    assert text_layer["mark"]["tooltip"] == spec["layer"][0]["mark"]["tooltip"]  # hovering a number: its cell's
    assert tooltip_lines(text_layer["mark"]) == {"query": 'datum["query"]', "key": 'datum["key"]', "value": "datum.tip"}


def test_line_specs_depend_on_the_values_only_through_their_data():
    """A new marker (the d_k slider) or new measurements change a line chart's data only: the browser updates it in
    place; Vega compiles the spec and draws the marker where the data puts it."""
    import vl_convert

    first, second = (
        as_spec(charts.lines(D_K, {"measured": values}, x_title="d_k", y_title="variance", log_x=True, marker=marker))
        for values, marker in ((D_K, 2), (2 * D_K, 4))
    )
    without_data = [{key: value for key, value in spec.items() if key != "datasets"} for spec in (first, second)]
    assert json.dumps(without_data[0]) == json.dumps(without_data[1])
    assert {"d_k": 4.0, "source": "marker", "series": None, "variance": None} in second["datasets"]["cells"]
    assert "<svg" in vl_convert.vegalite_to_svg(second)


def test_labelled_lines_keep_their_plot_height_under_a_long_legend():
    """Streamlit's default autosize ("fit") squeezed the plot of the Real model's similarity chart to nothing under
    its legend of sentence pairs: the chart fits only its width and keeps a plot of PLOT_HEIGHT pixels."""
    spec = charts.labelled_lines(
        RNG.random((3, 8)),
        ["a ↔ b", "a ↔ c", "b ↔ c"],
        [f"layer {i}" for i in range(8)],
        value_title="cosine similarity",
        point_title="stage",
        series_title="sentences",
    )
    assert spec["height"] == charts.PLOT_HEIGHT and spec["autosize"]["type"] == "fit-x"


def test_an_additive_mask_is_drawn_as_zero_and_minus_infinity_in_the_boolean_masks_colours():
    """An additive mask holds only 0 and −∞: two named colours, those of the boolean mask it equals, not a colour scale
    around a 0 that every visible cell has."""
    additive = np.array([[0.0, -np.inf], [0.0, 0.0]])
    spec = as_spec(charts.heatmap(additive, ["a", "b"], ["a", "b"], kind="additive"))
    assert [cell["category"] for cell in spec["datasets"]["cells"]] == ["0", "−∞", "0", "0"]
    boolean = as_spec(charts.heatmap(np.array([[1.0, 0.0], [1.0, 1.0]]), ["a", "b"], ["a", "b"], kind="mask"))
    assert [cell["category"] for cell in boolean["datasets"]["cells"]] == ["allowed", "blocked", "allowed", "allowed"]
    colour = spec["layer"][0]["encoding"]["color"]
    assert colour["scale"] == {"domain": ["0", "−∞"], "range": boolean["layer"][0]["encoding"]["color"]["scale"]["range"]}
    assert "text" not in spec["datasets"]["cells"][0]  # no numbers written in the cells


def test_series_of_a_line_chart_differ_in_colour_and_in_the_shape_of_their_points():
    """Three series, two of them drawn on one another (SDPA's times and the tiled kernel's): each its own colour and its
    own shape, in one legend; Tableau's orange and red are not the second and third colours."""
    x = np.array([128.0, 256.0])
    series = {name: (x, x * factor) for name, factor in (("naive", 3.0), ("sdpa", 1.0), ("tiled", 1.01))}
    spec = as_spec(charts.series_lines(series, x_title="T", y_title="ms", title="Time"))
    line, dots = spec["layer"]
    colours, shapes = dots["encoding"]["color"]["scale"], dots["encoding"]["shape"]["scale"]
    assert colours["domain"] == shapes["domain"] == ["naive", "sdpa", "tiled"]
    assert len(set(colours["range"][:3])) == 3 and len(set(shapes["range"][:3])) == 3
    assert {"#f58518", "#e45756"} != set(colours["range"][1:3])  # orange and red apart
    assert line["encoding"]["color"]["scale"] == colours
    assert dots["encoding"]["shape"]["legend"] == dots["encoding"]["color"]["legend"]  # one legend of coloured shapes


def test_tokens_at_one_place_of_the_query_key_map_share_one_label():
    """'The' and 'the' with one vector (a toy embedding that does not tell case apart) and a word twice: one label at
    each place, joined on its first token, so none is written over another; a key at a query's place keeps its own."""
    tokens = ["The", "cat", "saw", "the", "cat"]
    queries = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.001], [1.0, 0.0]])  # (T, 2)
    keys = np.array([[0.0, 0.0], [2.0, 2.0], [1.0, 1.0], [0.5, 0.0], [3.0, 0.0]])  # the first at the first query's place
    spec = as_spec(charts.query_key_scatter(np.vstack([queries, keys]), tokens, [(0, 1, 0.5)]))
    labels = {role: [dot["label"] for dot in spec["datasets"]["points"] if dot["role"] == role] for role in ("query", "key")}
    assert labels["query"] == ["The · the", "cat ×2", "saw", "", ""]
    assert labels["key"] == tokens
    text_layer = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "text")
    assert text_layer["encoding"]["text"]["field"] == "label"


def test_the_stages_of_word_paths_are_named_once_on_the_first_path():
    """The paths start together (the word's own row of the embedding table) and go through the stages in order: each
    stage is named once, on the first sentence's path, not "5 5" side by side."""
    points = np.array([[[0.0, 0.0], [1.0, 2.0], [3.0, 1.0]], [[0.0, 0.0], [2.0, 1.0], [3.0, 3.0]]])  # (sentences, stages, 2)
    spec = as_spec(charts.word_path_map(points, ["a bank", "b bank"], ["lookup", "layer 1", "layer 2"], side=200))
    assert [cell["label"] for cell in spec["datasets"]["cells"]] == ["lookup", "1", "2", "", "", ""]
    assert (spec["width"], spec["height"], spec["autosize"]) == (200, 200, {"type": "pad"})  # a square plot


def label_boxes(points: np.ndarray, labels: list[str], spots: list, domain: list[float], side: float) -> list[tuple]:
    """Each label's box (left, top, right, bottom) in pixels of the plot, as Vega writes it at its spot (baseline middle)."""
    scale = side / (domain[1] - domain[0])
    boxes = []
    for (x, y), label, (dx, dy, align) in zip(points, labels, spots, strict=True):
        width = len(label) * charts.CHAR_WIDTH
        left = (x - domain[0]) * scale + dx - {"left": 0, "center": width / 2, "right": width}[align]
        top = (domain[1] - y) * scale + dy - charts.LABEL_HEIGHT / 2
        boxes.append((left, top, left + width, top + charts.LABEL_HEIGHT))
    return boxes


def overlapping(a: tuple, b: tuple) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def test_map_labels_go_where_they_cover_no_other_label_and_stay_in_the_plot():
    """A lone point's label sits up and right of it; points a few pixels apart have their labels on different sides;
    a point at the plot's right edge has its label on its left."""
    domain, side = [0.0, 100.0], 200  # 2 px a unit
    lone = np.array([[50.0, 50.0]])
    assert charts.label_spots(lone, ["cat"], domain, side) == [charts.LABEL_SPOTS[0]]
    cluster = np.array([[40.0, 50.0], [43.0, 50.0], [46.0, 52.0], [41.0, 47.0], [45.0, 46.0]])  # 5 points within 12 px
    labels = ["quick", "brown", "fox", "jumps", "over"]
    boxes = label_boxes(cluster, labels, charts.label_spots(cluster, labels, domain, side), domain, side)
    assert not [(i, j) for i in range(5) for j in range(i + 1, 5) if overlapping(boxes[i], boxes[j])]
    assert all(0 <= box[0] and box[2] <= side and 0 <= box[1] and box[3] <= side for box in boxes)
    edge = np.array([[98.0, 50.0]])
    spot = charts.label_spots(edge, ["longword"], domain, side)[0]
    assert spot[2] == "right" and label_boxes(edge, ["longword"], [spot], domain, side)[0][2] <= side


def test_a_map_label_goes_where_it_covers_no_line():
    """A label whose first spot (up and right) lies across a line from its point goes to a free spot instead."""
    domain, side = [0.0, 100.0], 200  # 2 px a unit
    point = np.array([[50.0, 50.0]])
    up_right = np.array([[[50.0, 50.0], [70.0, 60.0]]])  # a line from the point up and to the right, under "cat"
    assert charts.label_spots(point, ["cat"], domain, side) == [charts.LABEL_SPOTS[0]]
    spot = charts.label_spots(point, ["cat"], domain, side, up_right)[0]
    assert spot != charts.LABEL_SPOTS[0]
    (left, top, right, bottom) = label_boxes(point, ["cat"], [spot], domain, side)[0]
    line_px = [(100 + 40 * t, 100 - 20 * t) for t in np.linspace(0.1, 1, 10)]  # the line in pixels from the top left
    assert not [(x, y) for x, y in line_px if left <= x <= right and top <= y <= bottom]


def test_a_map_with_a_point_off_it_still_places_its_labels():
    """A point that is not a number (a degenerate projection) has no line to keep clear of, and raises nothing."""
    points = np.array([[10.0, 10.0], [np.nan, 20.0], [30.0, 30.0]])
    lines = np.stack([points[:-1], points[1:]], axis=1)  # (2, 2, 2), both touching the NaN point
    spots = charts.label_spots(points, ["a", "b", "c"], [0.0, 100.0], 200, lines)
    assert len(spots) == 3 and all(spot in charts.LABEL_SPOTS for spot in spots)


def test_the_query_key_map_writes_each_label_at_its_spot():
    """The spots go into the map's data, and its text layer reads each label's offsets and side from its row."""
    points = np.array([[0.0, 0.0], [0.05, 0.0], [1.0, 1.0], [-1.0, 1.0]])  # two queries, then two keys
    spec = as_spec(charts.query_key_scatter(points, ["cat", "sat"], [(0, 1, 0.5)], side=240))
    rows = spec["datasets"]["points"]
    domain = spec["layer"][1]["encoding"]["x"]["scale"]["domain"]
    lines = np.array([[points[0], points[3]]])  # the query "cat" to the key "sat"
    expected = charts.label_spots(points, [row["label"] for row in rows], domain, 240, lines)
    assert [(row["dx"], row["dy"], row["align"]) for row in rows] == expected
    assert (rows[0]["dx"], rows[0]["dy"], rows[0]["align"]) != (rows[1]["dx"], rows[1]["dy"], rows[1]["align"])  # 5 px apart
    text_layer = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "text")
    assert {key: text_layer["mark"][key] for key in ("align", "dx", "dy")} == {
        key: {"expr": f"datum.{key}"} for key in ("align", "dx", "dy")
    }


def test_a_tile_map_draws_each_tile_with_its_class_and_spans():
    """A 50-token mask in 32 × 32 tiles: the last tiles are shorter; hovering a tile names its queries and keys."""
    spec = as_spec(charts.tile_map([["full", "skipped"], ["partial", "full"]], 32, 32, 50))
    rows = spec["datasets"]["cells"]
    assert [(row["q_block"], row["k_block"], row["class"]) for row in rows] == [
        (0, 0, "full"),
        (0, 1, "skipped"),
        (1, 0, "partial"),
        (1, 1, "full"),
    ]
    assert [(row["queries"], row["keys"]) for row in rows][-1] == ("32–49", "32–49")
    colours = spec["encoding"]["color"]["scale"]
    assert dict(zip(colours["domain"], colours["range"], strict=True)) == dict(
        zip(charts.TILE_CLASSES, charts.TILE_COLOURS, strict=True)
    )


def test_a_heatmaps_room_is_a_value_and_what_does_not_fit_comes_back():
    """``steps.heatmap_size`` depends on its arguments only: on a scrolling page the cells keep the page's sizes;
    in a slide's room a sentence too long for it comes back as a Crowding naming the first tokens that would fit, and
    that many tokens do fit the same room."""
    from attn_ui.slide import Room
    from attn_ui.steps import heatmap_size

    words = [f"w{i}" for i in range(40)]
    assert heatmap_size(None, words[:8], words[:8], title_lines=1).crowding is None
    room = Room(width=896, height=340)  # a 1024 × 576 slide's one chart, about
    crowded = heatmap_size(room, words, words, title_lines=3)
    assert crowded.crowding is not None and crowded.crowding.tokens == 40
    fitting = crowded.crowding.fitting
    assert 2 <= fitting < 40
    assert heatmap_size(room, words[:fitting], words[:fitting], title_lines=3).crowding is None
    assert heatmap_size(room, words[: fitting + 1], words[: fitting + 1], title_lines=3).crowding is not None
    assert room == Room(width=896, height=340)  # the room itself is not written to


def test_no_chart_takes_an_argument_that_draw_keeps_for_itself():
    """attn_ui.draw takes width, height, name, key and on_select for the element: a builder's argument of one of these
    names never reached the builder (the Decoding view's head groups were drawn at their default width, as wide again
    on a full-HD slide)."""
    import inspect

    from attn_ui.draw import draw

    kept = set(inspect.signature(draw).parameters) - {"builder", "args", "options"}
    builders = [f for f in vars(charts).values() if inspect.isfunction(f) and f.__module__.startswith("attn_ui.charts")]
    assert kept == {"width", "height", "name", "key", "on_select"} and len(builders) > 10
    assert not [(f.__name__, p) for f in builders for p in inspect.signature(f).parameters if p in kept]
    heads = {"MHA": list("01234567"), "MQA": list("00000000")}
    spec = as_spec(charts.head_groups(heads, plot_width=320))
    assert spec["width"] == {"step": 40}  # 320 px over 8 query heads


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("short: the bank", "short: the bank"),  # whole where it fits
        ("I deposited all of my money at the bank today", "… my money at the bank today"),  # the word in the middle
        ("Bank holidays are the days when nobody works", "Bank holidays are the days …"),  # at the start, any case
        ("My banking app shows that the bank is shut", "…shows that the bank is shut"),  # the word, not "banking"
        ("No such word in this rather long sentence", "No such word in this rather…"),  # cut at its end
    ],
)
def test_a_sentences_label_is_cut_around_the_word_compared(text, label):
    assert label_around(text, "bank", limit=28) == label and len(label) <= 28
