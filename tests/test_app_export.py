"""Export and share, through AppTest (issue 17): each matrix's CSV and .npy downloads, every view's zip, and the
link in its params.json, which opens the same view with the same numbers.

Download buttons build their files on click (a callable handed to Streamlit); the tests record those callables as
Streamlit registers them and call them, as a click does."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import fields
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pandas as pd
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager

from attn_core.bench import reference_results
from attn_core.sweep import Point
from attn_ui.downloads import SHARE_LINK
from attn_ui.page import VIEWS
from tests.conftest import assert_clean, chart_frames, open_all, open_view, texts

PIPELINE, SCALING, MASKING, MULTI_HEAD, COST, DECODING, REAL, TRAINING, POSITIONS = (view.path for view in VIEWS)
BUNDLE = "Download this view"


@pytest.fixture
def downloads(monkeypatch) -> dict[str, tuple]:
    """file id -> (file name, the callable that makes its bytes), for every download button drawn."""
    found = {}
    register = MediaFileManager.add_deferred

    def add_deferred(self, data, mimetype, coordinates, file_name=None, element_id=""):
        file_id = register(self, data, mimetype, coordinates, file_name=file_name, element_id=element_id)
        found[file_id] = (file_name, data)
        return file_id

    monkeypatch.setattr(MediaFileManager, "add_deferred", add_deferred)
    return found


def click(at, downloads, label: str) -> list[tuple[str, bytes]]:
    """(file name, bytes) of every download button with this label, in page order."""
    buttons = [button for button in at.get("download_button") if button.proto.label == label]
    assert buttons, f"no “{label}” button"
    return [(downloads[b.proto.deferred_file_id][0], downloads[b.proto.deferred_file_id][1]()) for b in buttons]


def shown_matrices(at) -> list[np.ndarray]:
    """Every heatmap's values as drawn (float64, masked cells NaN)."""
    found = []
    for rows in chart_frames(at):
        if rows and {"row", "col", "value"} <= set(rows[0]) and "panel" not in rows[0]:
            matrix = np.full((max(r["row"] for r in rows) + 1, max(r["col"] for r in rows) + 1), np.nan)
            for cell in rows:
                matrix[cell["row"], cell["col"]] = np.nan if cell["value"] is None else cell["value"]
            found.append(matrix)
    return found


def test_every_pipeline_matrix_downloads_as_csv_and_npy_with_its_labels(downloads):
    at = open_view(PIPELINE, text="the cat sat on the mat")
    assert_clean(at)
    assert [b.proto.label for b in at.get("download_button")] == [BUNDLE]  # a matrix's menu makes its buttons when opened
    open_all(at, "popover")
    csvs, arrays = click(at, downloads, "CSV, with token labels"), click(at, downloads, ".npy, exact float32")
    names = [name for name, _ in arrays]
    assert names == [
        f"{name}.npy"
        for name in ("X_the_token_embeddings", "W_Q", "W_K", "W_V", "Q", "K", "V", "Scores", "Scaled_scores")
        + ("Attention_weights", "Context")
    ]
    drawn = shown_matrices(at)
    assert len(arrays) == len(csvs) == len(drawn) == 11
    for (npy_name, npy), (csv_name, csv), matrix in zip(arrays, csvs, drawn, strict=True):
        values = np.load(io.BytesIO(npy))
        assert values.dtype == np.float32 and np.array_equal(values.astype(np.float64), matrix), npy_name
        table = pd.read_csv(io.BytesIO(csv), index_col=0, keep_default_na=False)
        assert np.array_equal(table.to_numpy(dtype=np.float32), values) and csv_name == npy_name.replace(".npy", ".csv")
    weights = pd.read_csv(io.BytesIO(csvs[names.index("Attention_weights.npy")][1]), index_col=0)
    assert list(weights.index) == ["the #0", "cat", "sat", "on", "the #4", "mat"] == list(weights.columns)


@pytest.mark.parametrize("view", [PIPELINE, SCALING, MASKING, MULTI_HEAD, COST, REAL, TRAINING, POSITIONS])
def test_every_view_has_its_bundle_and_a_link_to_copy(view, downloads):
    at = open_view(view)
    assert_clean(at)
    ((name, bundle),) = click(at, downloads, BUNDLE)
    with zipfile.ZipFile(io.BytesIO(bundle)) as files:
        listed = set(files.namelist())
        params = json.loads(files.read("params.json"))
        readme = files.read("README.txt").decode()
    assert name.endswith(".zip") and params["view"] in view and params["versions"]["torch"]
    assert all(file in readme for file in listed - {"README.txt"})
    with zipfile.ZipFile(io.BytesIO(bundle)) as files:  # PNG header (IHDR) widths: each fills a full-HD slide
        assert all(int.from_bytes(files.read(file)[16:20]) >= 1920 for file in listed if file.endswith(".png"))

    def links() -> list[str]:
        return [text for text in texts(at, "code") if "/" + params["view"] in text]

    assert not links()  # made when its popover opens
    open_all(at, "popover", SHARE_LINK)
    (link,) = links()
    assert urlsplit(link).path.endswith("/" + params["view"])


@pytest.mark.parametrize(
    ("view", "query"),
    [
        (PIPELINE, {"text": "my friend reads an old book", "seed": "7", "d_k": "4"}),
        (MASKING, {"text": "a b c|d e", "mask": "custom", "grid": "100-110-011"}),
        (MULTI_HEAD, {"heads": "2", "seed": "3"}),
    ],
)
def test_params_json_reopens_the_same_view_with_the_same_numbers(view, query, downloads):
    at = open_view(view, **query)
    ((_, bundle),) = click(at, downloads, BUNDLE)
    with zipfile.ZipFile(io.BytesIO(bundle)) as files:
        params = json.loads(files.read("params.json"))
        arrays = {name: np.load(io.BytesIO(files.read(name))) for name in files.namelist() if name.endswith(".npy")}
        assert any(name.endswith(".png") for name in files.namelist())
    assert query.items() <= params["query"].items()
    assert arrays and len(arrays) == len(shown_matrices(at))
    again = open_view(view, **dict(parse_qsl(urlsplit(params["link"]).query)))  # the link, on a fresh server
    assert_clean(again)
    for array, matrix in zip(arrays.values(), shown_matrices(again), strict=True):
        exact = array.astype(np.float64)
        assert np.array_equal(np.where(np.isneginf(exact), np.nan, exact), matrix, equal_nan=True)  # masked: -inf
    assert [len(m) for m in shown_matrices(again)] == [len(m) for m in shown_matrices(at)]


def test_a_matrix_chart_downloads_as_a_titled_slide_image(downloads):
    at = open_all(open_view(PIPELINE, text="the cat sat on the mat"), "popover")
    pngs, svgs = click(at, downloads, "PNG image, slide size"), click(at, downloads, "SVG image")
    assert len(pngs) == len(svgs) == 11
    (name, png), (_, svg) = next((p, s) for p, s in zip(pngs, svgs, strict=True) if p[0] == "Attention_weights.png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20]) >= 1920  # IHDR width
    assert ">Attention weights</text>" in svg and ">mat</text>" in svg  # the matrix's title and its tokens
    assert ">A = softmax_keys(S')<" in svg and ">shape (1, 6, 6)<" in svg  # its formula and shape (subtitle lines)
    ((_, bundle),) = click(at, downloads, BUNDLE)
    with zipfile.ZipFile(io.BytesIO(bundle)) as files:
        assert {"Attention_weights.png", "Attention_weights.svg", "Attention_weights.npy"} <= set(files.namelist())


def test_the_cost_bundle_holds_every_point_drawn_and_what_each_source_was_measured_with(downloads):
    at = open_view(COST, T_max="256", repeats="1")
    at.button(key="run").click().run()
    assert_clean(at)
    ((_, bundle),) = click(at, downloads, BUNDLE)
    with zipfile.ZipFile(io.BytesIO(bundle)) as files:
        results = pd.read_csv(io.BytesIO(files.read("Results.csv")), index_col=0, keep_default_na=False)
        settings = json.loads(files.read("params.json"))["table settings"]["Results"]
        assert "Results.csv" in files.read("README.txt").decode()
    assert list(results.columns) == ["source", *(field.name for field in fields(Point))]
    reference = reference_results()
    drawn = [point for point in reference.points if point.mask == "none"]  # the view's mask
    assert results["source"].tolist() == ["reference"] * len(drawn) + ["this server"] * 3 * 2  # 3 methods, T = 128, 256
    assert results["median_ms"].tolist()[: len(drawn)] == [point.median_ms for point in drawn]  # exact
    assert settings["reference"] == {**reference.settings, "machine": reference.machine}
    server = settings["this server"]
    shape = [server[key] for key in ("batch", "heads", "d_head", "dtype", "masks", "lengths", "repeats")]
    assert shape == [1, 8, 64, "float32", ["none"], [128, 256], 1] and "threads" in server["machine"]
