"""Every head of every layer as a thumbnail: an image of its attention weights, a pixel per weight, in the heatmaps'
colours, for where cells would be too small to label or to hover (every head of the real model)."""

from __future__ import annotations

import base64
import io

import altair as alt
import numpy as np
import pandas as pd
from PIL import Image

from attn_ui.charts.build import about, compile_chart
from attn_ui.charts.parts import matrix_colour, tooltip_expression
from attn_ui.charts.sizes import MAX_PANEL, MAX_WIDTH, PANEL_SPACING, thumbnail_panel

PICKED_HEAD = "picked_head"  # the selection of head_thumbnails: the layer and head of the thumbnail clicked
# Vega's viridis scheme (vega-scale): the colours its scale interpolates between, which head_thumbnails' images reproduce.
VIRIDIS = (
    "440154470e61481a6c482575472f7d443a834144873d4e8a39568c35608d31688e2d708e2a788e27818e23888e21918d1f988b1fa088"
    "22a8842ab07f35b77943bf7154c56866cc5d7ad1518fd744a5db36bcdf27d2e21be9e51afde725"
)


def head_thumbnails(
    weights: np.ndarray,
    tokens: list[str],
    *,
    max_width: int = MAX_WIDTH,
    max_panel: int = MAX_PANEL,
    title: str = "",
) -> dict:
    """Every head of every layer as a thumbnail of its attention weights: ``weights`` is (layers, heads, T, T), a
    row of thumbnails per layer, shrunk until a row fits ``max_width``.

    Each thumbnail is an image (a pixel per weight, coloured as the heatmaps colour weights) rather than a mark per
    cell: 72 heads of 32 tokens are 73,728 cells, each under two pixels wide, which the browser took a third of a
    second or more to draw and no one can point at. Hovering a thumbnail names its layer and head and its strongest
    weight, from which query to which key.
    """
    weights = np.asarray(weights, dtype=float)
    layers, heads = weights.shape[:2]
    heads_weights = weights.reshape(layers * heads, -1)  # (layers · heads, T · T), row-major like the panels
    queries, keys = np.unravel_index(heads_weights.argmax(axis=1), weights.shape[2:])
    strongest = heads_weights.max(axis=1)
    panels = pd.DataFrame(
        {
            "layer": np.repeat(np.arange(layers), heads),
            "head": np.tile(np.arange(heads), layers),
            "image": [_png_data_url(weight_colours(head)) for head in weights.reshape(-1, *weights.shape[2:])],
            "value": strongest,
            "strongest": [f"{tokens[q]} → {tokens[k]} ({w:.4f})" for q, k, w in zip(queries, keys, strongest, strict=True)],
        }
    )
    return compile_chart(_thumbnails_chart, {"cells": panels}, panel=thumbnail_panel(heads, max_width, max_panel), title=title)


def _thumbnails_chart(panel: int, title: str) -> alt.FacetChart:
    tooltip = tooltip_expression({"layer": "datum.layer", "head": "datum.head", "strongest weight": "datum.strongest"})
    # The image's pixels are stretched to the panel, each a sharp square ("smooth": false). The colour channel draws
    # the legend (an image mark has no colour of its own) from the strongest weights, on the heatmaps' scale.
    thumbnail = {"width": panel, "height": panel, "aspect": False, "smooth": False, "align": "left", "baseline": "top"}
    # A click picks the thumbnail's layer and head: Streamlit hands them to the page (st.vega_lite_chart's on_select).
    # The panel is named, so the selection's reference to it (Altair moves the selection to the top) is the same
    # in every compiled spec.
    picked = alt.selection_point(name=PICKED_HEAD, fields=["layer", "head"])
    panel_chart = (
        alt.Chart(name="thumbnail", width=panel, height=panel)
        .mark_image(**thumbnail, tooltip=tooltip, cursor="pointer")
        .encode(x=alt.XValue(0), y=alt.YValue(0), url=alt.Url(field="image", type="nominal"), color=matrix_colour("weights"))
        .add_params(picked)
    )
    row = alt.Row(field="layer", type="ordinal", title="layer")
    column = alt.Column(field="head", type="ordinal", title="head")
    return panel_chart.facet(row=row, column=column, spacing=PANEL_SPACING, **about(f"head thumbnails: {title}", title))


def weight_colours(weights: np.ndarray) -> np.ndarray:
    """The RGB colour (uint8, a last axis of 3) of each attention weight, as the heatmaps' scale colours it: Vega's
    viridis, which interpolates linearly in RGB between the colours of VIRIDIS over the domain 0..1."""
    stops = np.frombuffer(bytes.fromhex(VIRIDIS), dtype=np.uint8).reshape(-1, 3).astype(float)  # (32, 3)
    position = np.clip(np.asarray(weights, dtype=float), 0, 1) * (len(stops) - 1)
    below = np.minimum(position.astype(int), len(stops) - 2)
    fraction = (position - below)[..., None]
    return np.floor(stops[below] * (1 - fraction) + stops[below + 1] * fraction + 0.5).astype(np.uint8)


def _png_data_url(pixels: np.ndarray) -> str:
    """An RGB image (H, W, 3) as a PNG in a data: URL, which a Vega image mark draws without fetching anything."""
    png = io.BytesIO()
    Image.fromarray(pixels).save(png, format="PNG")
    return "data:image/png;base64," + base64.b64encode(png.getvalue()).decode()
