"""Files to take away from a view: matrices as CSV and ``.npy``, charts as PNG and SVG, and a whole view as a zip.

Pure functions returning bytes or text (no Streamlit), so a page hands them to ``st.download_button``; pass a
``lambda`` as its ``data`` to build a bundle only when it is clicked (rendering a heatmap takes about 0.2 s).
Charts are rendered by vl-convert, in the light theme whatever the screen's: on screen their text takes the page's
colour (``charts.THEME_CSS``), on a slide it is dark on white.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Mapping
from importlib.metadata import version
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import vl_convert as vlc

from attn_ui.charts import inline_data

SLIDE_WIDTH = 1920  # pixels: a PNG at least this wide fills a full-HD slide
SCALE = 2  # a PNG has at least twice the pixels of the chart on screen
TEXT_COLOUR = "#31333F"  # Streamlit's light theme text
LIGHT_CONFIG = {
    "background": "white",
    "axis": {"labelColor": TEXT_COLOUR, "titleColor": TEXT_COLOUR},
    "legend": {"labelColor": TEXT_COLOUR, "titleColor": TEXT_COLOUR},
    "header": {"labelColor": TEXT_COLOUR, "titleColor": TEXT_COLOUR},
    "title": {"color": TEXT_COLOUR, "subtitleColor": TEXT_COLOUR},
}
PACKAGES = ("torch", "streamlit", "numpy", "pandas", "vl-convert-python")

TensorEntry = np.ndarray | tuple[np.ndarray, list[str], list[str]]  # an array, or a matrix with its row and column labels


def unique_labels(labels: list[str]) -> list[str]:
    """Labels made distinct by their position where a token repeats ("the #4"), so each names one row or column."""
    return [f"{label} #{i}" if labels.count(label) > 1 else label for i, label in enumerate(labels)]


def matrix_csv(values: np.ndarray, row_labels: list[str], col_labels: list[str]) -> bytes:
    """A matrix as UTF-8 CSV with the token labels (made distinct) as row and column headers, every value exact
    (``pandas.read_csv(file, index_col=0)`` reads it back); masked scores are written ``-inf``."""
    frame = pd.DataFrame(np.asarray(values), index=unique_labels(row_labels), columns=unique_labels(col_labels))
    return frame.to_csv(na_rep="NaN").encode()


def matrix_npy(values: np.ndarray) -> bytes:
    """An array in NumPy's ``.npy`` format, dtype and values exactly as given (``numpy.load`` reads it back)."""
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(values), allow_pickle=False)
    return buffer.getvalue()


def titled(spec: dict, title: str, subtitle: str | None = None) -> dict:
    """A copy of a Vega-Lite spec with this title, and a subtitle under it (e.g. "softmax(Q Kᵀ / √d_k)")."""
    return {**spec, "title": {"text": title, **({"subtitle": subtitle} if subtitle else {})}}


def light(spec: dict) -> dict:
    """A copy of a Vega-Lite spec drawn dark on white: the text colours the screen's theme supplies, set explicitly."""
    config = dict(spec.get("config", {}))
    for section, colours in LIGHT_CONFIG.items():
        config[section] = {**config.get(section, {}), **colours} if isinstance(colours, dict) else colours
    return {**spec, "config": config}


def chart_svg(spec: dict) -> str:
    """A chart as an SVG document, in the light theme, at its size on screen."""
    return vlc.vegalite_to_svg(light(inline_data(spec)), vl_version=_vega_lite_version(spec))


def chart_png(spec: dict, width: int | None = SLIDE_WIDTH, scale: float = SCALE) -> bytes:
    """A chart as a PNG, in the light theme, enlarged ``scale`` times and to at least ``width`` pixels wide."""
    return _png(chart_svg(spec), width, scale)


def _png(svg: str, width: int | None, scale: float) -> bytes:
    if width:
        # Half a pixel over: vl-convert multiplies in single precision and drops the fraction, so the scale that
        # gives exactly ``width`` (500 px × 3.84) could make it 1,919.9999, a PNG one pixel short.
        scale = max(scale, (width + 0.5) / _svg_size(svg)[0])
    return vlc.svg_to_png(svg, scale=scale)


def _svg_size(svg: str) -> tuple[float, float]:
    """Width and height in pixels of an SVG document vl-convert wrote."""
    found = re.search(r'<svg[^>]*? width="([\d.]+)" height="([\d.]+)"', svg)
    return float(found[1]), float(found[2])


def _vega_lite_version(spec: dict) -> str | None:
    """The Vega-Lite version (e.g. "6.4") the spec's ``$schema`` declares, where vl-convert has it; else its latest."""
    found = re.search(r"/v(\d+\.\d+)", spec.get("$schema", ""))
    return found[1] if found and found[1] in vlc.get_vegalite_versions() else None


def installed_versions() -> dict[str, str]:
    """The versions of the packages the numbers and images depend on."""
    return {name: version(name) for name in PACKAGES}


def view_link(view: str, params: Mapping[str, str]) -> str:
    """The link path that opens ``view`` (its URL path, e.g. "Pipeline") with these query parameters."""
    return f"/{view}" + (f"?{urlencode(params)}" if params else "")


def view_bundle(
    view: str,
    params: Mapping[str, str],
    tensors: Mapping[str, TensorEntry],
    tables: Mapping[str, pd.DataFrame],
    charts: Mapping[str, dict],
    versions: Mapping[str, str],
    table_settings: Mapping[str, object] | None = None,
    code: Mapping[str, str] | None = None,
) -> bytes:
    """A zip of everything a view shows: ``params.json`` (the view, its URL query ``params`` as the link writes
    them, the link, the seed, ``versions`` and ``table_settings``: what the tables' rows were made with, by table
    name), each tensor as ``.npy`` (and CSV where it is a labelled matrix), each table as CSV, each chart as PNG
    (slide size) and SVG, each piece of ``code`` as a Python file, and ``README.txt`` saying what each file is.

    Names (dict keys) describe their entry in README.txt; file names are made from them.
    """
    link = view_link(view, params)
    seed = {"seed": params["seed"]} if "seed" in params else {}
    settings = {"view": view, "link": link, "query": dict(params), **seed, "versions": dict(versions)}
    what = "the view, its URL query, link, seed and package versions"
    if table_settings:
        settings["table settings"] = dict(table_settings)
        what += ", and what each table's rows were made with"
    files = [("params.json", json.dumps(settings, indent=2, ensure_ascii=False).encode(), what)]
    for name, tensor in tensors.items():
        files += _tensor_files(name, tensor)
    for name, table in tables.items():
        files.append((f"{file_stem(name)}.csv", table.to_csv().encode(), f"{name}: table, {_shape(table.shape)}"))
    for name, spec in charts.items():
        files += _chart_files(name, spec)
    for name, text in (code or {}).items():
        files.append((f"{file_stem(name)}.py", text.encode(), f"{name}: Python, runs with torch"))
    names = [file_name for file_name, _, _ in files]
    if len(set(names)) < len(names):
        raise ValueError(f"two entries of the bundle make the same file name: {names}")
    readme = _readme(view, link, files)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("README.txt", readme)
        for file_name, data, _ in files:
            bundle.writestr(file_name, data)
    return buffer.getvalue()


def _tensor_files(name: str, tensor: TensorEntry) -> list[tuple[str, bytes, str]]:
    values, labels = (tensor[0], tensor[1:]) if isinstance(tensor, tuple) else (tensor, None)
    values = np.asarray(values)
    npy = (f"{file_stem(name)}.npy", matrix_npy(values), f"{name}: {values.dtype} array, {_shape(values.shape)}, exact values")
    if labels is None or values.ndim != 2:
        return [npy]
    csv = f"{name}: {_shape(values.shape)}, token labels as row and column headers (a repeated token numbered “#position”)"
    return [npy, (f"{file_stem(name)}.csv", matrix_csv(values, *labels), csv)]


def _chart_files(name: str, spec: dict) -> list[tuple[str, bytes, str]]:
    spec = spec if spec.get("title") else titled(spec, name)
    svg = chart_svg(spec)
    png = _png(svg, SLIDE_WIDTH, SCALE)
    png_width, png_height = int.from_bytes(png[16:20]), int.from_bytes(png[20:24])  # the PNG header (IHDR)
    svg_width, svg_height = _svg_size(svg)
    return [
        (f"{file_stem(name)}.png", png, f"{name}: chart image, {png_width} × {png_height} pixels"),
        (f"{file_stem(name)}.svg", svg.encode(), f"{name}: the same chart as SVG, {svg_width:g} × {svg_height:g}"),
    ]


def file_stem(name: str) -> str:
    """A file name from an entry's name: letters, digits, "-" and "_" only ("W_Q", "attention_weights")."""
    return re.sub(r"[^\w-]+", "_", name, flags=re.ASCII).strip("_") or "unnamed"


def _shape(shape: tuple[int, ...]) -> str:
    return "shape (" + ", ".join(map(str, shape)) + ")"


def _readme(view: str, link: str, files: list[tuple[str, bytes, str]]) -> str:
    width = max(len(file_name) for file_name, _, _ in files)
    lines = [f"{file_name.ljust(width)}  {what}" for file_name, _, what in files]
    return (
        f"Attention Explorer, {view} view\n"
        f"Open it again: the app's address followed by {link}\n\n"
        + "\n".join(lines)
        + "\n\nRead with numpy.load(path) (.npy) and pandas.read_csv(path, index_col=0) (.csv).\n"
    )
