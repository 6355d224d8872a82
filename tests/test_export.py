"""Export: matrices as CSV and .npy, charts as PNG and SVG at slide size, a view as one zip."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pandas as pd
import pytest

from attn_ui import export
from attn_ui.charts import heatmap

AWKWARD = ["the", "a,b", 'say "hi"', "the", "café 🙂", " spaced ", "1"]
RNG = np.random.default_rng(0)
SVG = "{http://www.w3.org/2000/svg}"


def weights_spec(title: str = "Attention weights") -> dict:
    weights = RNG.random((len(AWKWARD), len(AWKWARD)))
    return heatmap(weights / weights.sum(axis=1, keepdims=True), AWKWARD, AWKWARD, kind="weights", title=title)


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    return int.from_bytes(png[16:20]), int.from_bytes(png[20:24])


def svg_texts(svg: str) -> list[str]:
    return [element.text for element in ET.fromstring(svg).iter(f"{SVG}text") if element.text]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matrix_csv_round_trips_values_and_awkward_labels(dtype):
    values = RNG.normal(size=(len(AWKWARD), 3)).astype(dtype)
    values[0, 1] = -np.inf  # a masked score
    values[2, 2] = np.nan
    read = pd.read_csv(io.BytesIO(export.matrix_csv(values, AWKWARD, ["x", "y,z", "ü"])), index_col=0)
    assert list(read.index.astype(str)) == ["the #0", "a,b", 'say "hi"', "the #3", "café 🙂", " spaced ", "1"]
    assert list(read.columns) == ["x", "y,z", "ü"]
    np.testing.assert_array_equal(read.to_numpy().astype(dtype), values)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matrix_npy_keeps_dtype_and_exact_values(dtype):
    values = RNG.normal(size=(2, 4, 5)).astype(dtype)
    values[0, 0, 0] = -np.inf
    read = np.load(io.BytesIO(export.matrix_npy(values)))
    assert read.dtype == dtype
    np.testing.assert_array_equal(read, values)


def test_chart_png_is_a_slide_sized_image():
    spec = weights_spec()
    width, height = png_size(export.chart_png(spec))
    assert width >= export.SLIDE_WIDTH
    small_width, _ = png_size(export.chart_png(spec, width=None, scale=1))
    assert small_width < width and png_size(export.chart_png(spec, width=None, scale=2))[0] == 2 * small_width


def test_chart_svg_parses_with_its_title_and_dark_text_on_white():
    svg = export.chart_svg(export.titled(weights_spec(""), "Attention weights", "softmax(Q Kᵀ / √d_k)"))
    root = ET.fromstring(svg)
    assert {"Attention weights", "softmax(Q Kᵀ / √d_k)", "query", "key", "café 🙂"} <= set(svg_texts(svg))
    assert root.find(f"{SVG}rect").get("fill") == "white"  # the background
    title = next(t for t in root.iter(f"{SVG}text") if t.text == "Attention weights")
    assert title.get("fill") == export.TEXT_COLOUR


def test_light_leaves_the_spec_on_screen_unchanged():
    spec = weights_spec()
    config = json.dumps(spec["config"])
    assert export.light(spec)["config"]["axis"]["labelColor"] == export.TEXT_COLOUR
    assert json.dumps(spec["config"]) == config


def test_view_bundle_holds_params_tensors_tables_and_charts():
    params = {"text": "the cat, “sat”", "seed": "7", "scale": "off"}
    weights = RNG.random((2, 3, 3)).astype(np.float32)
    x = RNG.normal(size=(3, 4))
    tensors = {"Attention weights": weights, "X": (x, ["the", "cat", "the"], ["0", "1", "2", "3"])}
    tables = {"Row sums": pd.DataFrame({"row sum": [1.0, 1.0, 1.0]}, index=["the", "cat", "sat"])}
    versions = {"torch": "2.13.0", "streamlit": "1.67.0"}
    data = export.view_bundle("Pipeline", params, tensors, tables, {"Weights chart": weights_spec()}, versions)

    bundle = zipfile.ZipFile(io.BytesIO(data))
    files = set(bundle.namelist())
    assert files == {
        "README.txt", "params.json", "Attention_weights.npy", "X.npy", "X.csv", "Row_sums.csv",
        "Weights_chart.png", "Weights_chart.svg",
    }  # fmt: skip
    settings = json.loads(bundle.read("params.json"))
    assert settings["query"] == params and settings["seed"] == "7" and settings["versions"] == versions
    assert settings["view"] == "Pipeline" and settings["link"] == export.view_link("Pipeline", params)
    readme = bundle.read("README.txt").decode()
    assert all(name in readme for name in files - {"README.txt"})
    assert "shape (2, 3, 3)" in readme and "float32" in readme
    loaded = np.load(io.BytesIO(bundle.read("Attention_weights.npy")))
    assert loaded.dtype == np.float32
    np.testing.assert_array_equal(loaded, weights)
    np.testing.assert_array_equal(np.load(io.BytesIO(bundle.read("X.npy"))), x)
    assert list(pd.read_csv(io.BytesIO(bundle.read("X.csv")), index_col=0).index) == ["the #0", "cat", "the #2"]
    assert pd.read_csv(io.BytesIO(bundle.read("Row_sums.csv")), index_col=0)["row sum"].tolist() == [1.0, 1.0, 1.0]
    assert png_size(bundle.read("Weights_chart.png"))[0] >= export.SLIDE_WIDTH
    assert "Attention weights" in svg_texts(bundle.read("Weights_chart.svg").decode())


def test_view_bundle_titles_an_untitled_chart_with_its_name():
    data = export.view_bundle("Masking", {}, {}, {}, {"Causal mask": weights_spec("")}, {})
    bundle = zipfile.ZipFile(io.BytesIO(data))
    assert "Causal mask" in svg_texts(bundle.read("Causal_mask.svg").decode())
    assert json.loads(bundle.read("params.json"))["link"] == "/Masking"


def test_view_link_encodes_the_query():
    assert export.view_link("Pipeline", {"text": "a b,“c”", "d_k": "4"}) == "/Pipeline?text=a+b%2C%E2%80%9Cc%E2%80%9D&d_k=4"


def test_view_bundle_refuses_two_entries_with_one_file_name():
    with pytest.raises(ValueError, match="same file name"):
        export.view_bundle("Pipeline", {}, {"W Q": np.zeros(2), "W_Q": np.ones(2)}, {}, {}, {})


def test_installed_versions_name_torch_and_streamlit():
    versions = export.installed_versions()
    assert versions["torch"].startswith("2.") and versions["streamlit"].startswith("1.")


def test_a_png_is_never_a_pixel_short_of_the_slide_width():
    """vl-convert multiplies in single precision and drops the fraction: 500 px at the scale 1920 / 500 = 3.84 make
    1,919.9999, a PNG 1,919 px wide."""
    for width in range(100, export.SLIDE_WIDTH // export.SCALE + 1):
        svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="10"><rect width="5" height="5"/></svg>'
        assert png_size(export._png(svg, export.SLIDE_WIDTH, export.SCALE))[0] >= export.SLIDE_WIDTH, width
