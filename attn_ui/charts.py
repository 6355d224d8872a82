"""Every chart of the app, in one place, with one theme: each built with Altair and compiled to a Vega-Lite spec.

A builder is a plain function in two parts: it puts the values in a DataFrame, the chart's data (the named dataset
"cells", which ``attn_ui.draw`` sends to the browser as Arrow, caching the spec per input), and hands the rest
(labels, titles, sizes) to a function that builds the Altair chart; ``_compile`` compiles that once per layout and
attaches the data. Altair's checks of each object against the JSON schema (as it is made, as ``.properties()`` sets
it, in ``to_dict()``) were most of a rerun (30 ms a heatmap): the charts are compiled without them, and the tests
validate every builder's output against the schema instead (tests/test_charts.py).

The theme (``theme``, registered with Altair and enabled once, when this module is imported) sets text sizes readable
from the back of a lecture hall; colours of text and background come from Streamlit's light or dark theme, so charts
follow the active one. A spec does not depend on the values otherwise than through its data, so new values update a
chart in place.

Colour conventions: a sequential scale for attention weights (0..1) that reads in grayscale and
for colour-blind viewers, a diverging scale centred on 0 for scores and other signed values, two
named categories for boolean masks, and grey, labelled cells for masked entries.

Sizes: every pixel constant is at the top of this module, and the functions under "How big a chart is" compute a
chart's cells or panels, width and frame from them; ``attn_ui.steps`` gives each chart its block on the page from those.
Heatmaps are sized in pixels per cell so that every token gets its label on both axes; a page places them in a
wrapping row (``attn_ui.steps.row``). Where cells would be too small to label or to hover (every head of the real
model), ``head_thumbnails`` draws each matrix as an image in the same colours.
"""

from __future__ import annotations

import base64
import copy
import functools
import io
import json
from collections.abc import Callable
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import pyarrow as pa
from PIL import Image

FONT_SIZE = 14  # pixels: axis labels, legends, headers
TITLE_SIZE = 16  # pixels: axis and chart titles
CELL_FONT_SIZE = 14  # pixels: numbers written inside heatmap cells, as large as every other chart text
MASKED_COLOUR = "#9e9e9e"
ALLOWED_COLOUR = "#1f77b4"
HIGHLIGHT_COLOUR = "#e4572e"  # outlines the row in focus; stands out from viridis and the diverging scale
LABEL_LIMIT = 14  # characters of a token shown on an axis (the tooltip has the whole token)
CHAR_WIDTH = 7.5  # pixels of one label character at FONT_SIZE, a generous average (a lowercase word: 7.0)
WORD_CHAR_WIDTH = 7.0  # the same, of a lowercase word (measured 6.7-7.0): a heatmap's upright column labels' height
TITLE_CHAR_WIDTH = 11  # pixels of one character of a chart's title (bold, TITLE_SIZE + 2)
MIN_STEP = 20  # pixels per token row or column: a 14-px label's box (18 px high) fits, rotated or not
# The same on a slide, where height is short: 16 tokens fit a 1024 × 576 window. The labels' boxes touch; their
# letters stay apart (a lowercase word's ink is about 13 px high).
SLIDE_MIN_STEP = 16
MIN_INDEX_STEP = 10  # pixels per row or column numbering features, labelled every other one
MAX_STEP = 44  # pixels per cell at most
NUMBER_STEP = 44  # pixels a cell needs to print its value legibly ("-0.07")
NUMBERS_UP_TO = 144  # print values inside cells when a matrix has at most this many
MAX_WIDTH = 560  # pixels: the widest chart fits the main column (564 px) of a 1024-px-wide browser with the sidebar open
MAX_HEIGHT = 720  # pixels of cells: 36 tokens at MIN_STEP
COMPACT_HEIGHT = 360  # pixels of cells of a feature-by-feature matrix (a W)
KINDS = ("weights", "signed", "mask", "additive")
# Kinds drawn as two named colours, an allowed cell's name first: a boolean mask, an additive one (0 or -inf).
CATEGORIES = {"mask": ("allowed", "blocked"), "additive": ("0", "−∞")}
LEGEND_OFFSET = 8  # pixels between a plot (or its axis) and its legend (Vega-Lite's default: 18)
LEGEND_HEIGHT = 60  # pixels of a colour legend under a plot: its offset from the axis title, its bar and labels
LEGEND_WIDTH = 70  # pixels of a colour scale's legend at a plot's right: its offset, bar and labels (measured 62-69)
KEY_LEGEND_WIDTH = 100  # pixels of a mask's legend of named colours at a plot's right ("allowed", "blocked"; 96)
VIEW_PADDING = 5  # pixels Vega leaves around a chart
# A title over a line or bar chart spans its plot and the value axis left of it, this many pixels at least ("0.5" and
# the axis title); Vega-Lite cuts it at the plot's width.
VALUE_AXIS_ROOM = 40
OVER_PLOT_AND_AXIS = alt.ExprRef(f"width + {VALUE_AXIS_ROOM}")
HEATMAP_PADDING = 18  # pixels a heatmap's drawing has above its title and under its axis title (17-18 measured)
AXIS_PADDING = 4  # pixels from a plot to its axis labels, and from them to the axis title
BAR_HEIGHT = 260  # pixels
LINE_HEIGHT = 320  # pixels
LINE_WIDTH = 440  # pixels of a line chart that shares a row
PLOT_HEIGHT = 240  # pixels of the plot area of a labelled_lines chart, legend and labels not included
WRAPPED_PANEL = 120  # pixels: the smallest panel of a wrapped row of heads
PANEL_SPACING = 4  # pixels between the panels of a grid of small heatmaps or thumbnails
LAYOUTS_KEPT = 256  # compiled specs kept, without their data: about 10 kB a heatmap of a 32-token sentence
PICKED_HEAD = "picked_head"  # the selection of head_thumbnails: the layer and head of the thumbnail clicked
# Vega's viridis scheme (vega-scale): the colours its scale interpolates between, which head_thumbnails' images reproduce.
VIRIDIS = (
    "440154470e61481a6c482575472f7d443a834144873d4e8a39568c35608d31688e2d708e2a788e27818e23888e21918d1f988b1fa088"
    "22a8842ab07f35b77943bf7154c56866cc5d7ad1518fd744a5db36bcdf27d2e21be9e51afde725"
)


# ---- The theme: text sizes for a projector, colours from Streamlit's light or dark theme
# Chart text (axes, legends, titles, headers) in the page's own text colour: Streamlit's chart theme draws it in a
# mid grey (3.7:1 on white); this keeps it at the theme's full contrast, light or dark. Numbers inside cells keep theirs.
# A layer named PLAIN_TEXT has its text in that colour too (Vega draws a text mark of no colour black, which a dark
# theme hides): Vega gives its marks' group the class "<name>_marks".
PLAIN_TEXT = "plain_text"
THEME_CSS = f"""<style>
[data-testid="stVegaLiteChart"] :is(g[class*="role-axis"], g[class*="role-legend"], g[class*="title"],
  g[class*="header"], g.{PLAIN_TEXT}_marks) > text {{ fill: currentColor; }}
</style>"""

# Text sizes for a projector; no colours, so Streamlit's light or dark theme supplies them.
CONFIG = {
    # labelFlush off: Streamlit's theme shifts the first and last labels inwards, onto their neighbours. Its paddings
    # (16 px from the plot to the labels, 16 more to the title) took a slide's heatmap 24 px of height and as much width.
    "axis": {
        "labelFontSize": FONT_SIZE,
        "titleFontSize": TITLE_SIZE,
        "labelLimit": 0,
        "labelFlush": False,
        "labelPadding": AXIS_PADDING,
        "titlePadding": AXIS_PADDING,
    },
    "legend": {"labelFontSize": FONT_SIZE, "titleFontSize": FONT_SIZE, "labelLimit": 0, "offset": LEGEND_OFFSET},
    "header": {"labelFontSize": FONT_SIZE, "titleFontSize": TITLE_SIZE},
    "title": {"fontSize": TITLE_SIZE + 2, "subtitleFontSize": FONT_SIZE},
    "text": {"fontSize": CELL_FONT_SIZE},
    # No ARIA description per mark item: Vega builds one string per cell (thousands per view) on every redraw, and a
    # screen reader is better served by the chart's description and its Numbers table. Axes and legends keep theirs.
    "mark": {"aria": False},
}

THEME = "attention_explorer"


@alt.theme.register(THEME, enable=True)
def theme() -> alt.theme.ThemeConfig:
    """The app's one theme, which Altair merges into every spec it compiles (the spec's own config wins)."""
    return {"config": CONFIG}


# ---- How big a chart is: pixels per cell, a chart's width and frame, from its labels and the room it is given
def short_label(token: str, limit: int = LABEL_LIMIT) -> str:
    return token if len(token) <= limit else token[: limit - 1] + "…"


def is_index(labels: list[str]) -> bool:
    """Labels that only number positions (features 0, 1, 2 ...): such an axis may be squeezed and labelled sparsely."""
    return all(label.isdigit() for label in labels)


def cell_steps(
    row_labels: list[str],
    col_labels: list[str],
    max_width: int,
    max_height: int,
    max_step: float = MAX_STEP,
    max_aspect: float = 1.0,
    compact_height: int = COMPACT_HEIGHT,
    min_step: float = MIN_STEP,
) -> tuple[float, float]:
    """Pixels per cell (width, height): at most ``max_step``, square where the matrix fits, or up to ``max_aspect``
    times taller than wide where its columns are features and the height allows (a slide's token-by-feature matrix);
    at least ``min_step`` along a token axis (so every token gets its label) and MIN_INDEX_STEP along a feature axis
    while that fits; squeezed to fit otherwise (a 384-feature axis of a real model), never below 1 pixel. A
    feature-by-feature matrix (a W) is kept compact: its cells at most ``compact_height`` high."""
    if is_index(row_labels):
        max_height = min(max_height, compact_height)
    cells_width = max_width - _label_room(row_labels)
    fit_width, fit_height = cells_width / max(len(col_labels), 1), max_height / max(len(row_labels), 1)
    side = min(max_step, fit_width, fit_height)
    tall = min(max_step, fit_height, side * max_aspect) if is_index(col_labels) else side

    def step(side: float, fit: float, labels: list[str]) -> float:
        return max(side, min(MIN_INDEX_STEP if is_index(labels) else min_step, fit), 1.0)

    return step(side, fit_width, col_labels), step(tall, fit_height, row_labels)


def _label_room(labels: list[str]) -> int:
    """Pixels the labels and title of a y axis take beside the plot."""
    longest = max((len(short_label(label)) for label in labels), default=1)
    return int(longest * CHAR_WIDTH) + TITLE_SIZE + 2 * AXIS_PADDING + VIEW_PADDING


def heatmap_width(
    row_labels: list[str],
    col_labels: list[str],
    max_width: int = MAX_WIDTH,
    max_height: int = MAX_HEIGHT,
    max_step: float = MAX_STEP,
    max_aspect: float = 1.0,
    compact_height: int = COMPACT_HEIGHT,
    legend_side: str = "bottom",
    kind: str = "weights",
    min_step: float = MIN_STEP,
) -> int:
    """The pixel width ``heatmap`` draws a matrix of this ``kind`` with these labels at: cells plus the row labels
    and title, and a legend at the right."""
    sizes = (max_width, max_height, max_step, max_aspect, compact_height, min_step)
    cell_width, _ = cell_steps(row_labels, col_labels, *sizes)
    return int(len(col_labels) * cell_width) + _label_room(row_labels) + (legend_width(kind) if legend_side == "right" else 0)


def legend_width(kind: str) -> int:
    """Pixels a heatmap's legend takes at the plot's right: named colours for a mask, else a colour scale."""
    return KEY_LEGEND_WIDTH if kind in CATEGORIES else LEGEND_WIDTH


def heatmap_frame(col_labels: list[str], title_lines: int, legend_side: str = "bottom") -> int:
    """Pixels of a heatmap's height outside its cells, at most: ``title_lines`` lines of title and subtitle (a title
    alone is set as far above the cells as one with a subtitle line: 44 px, measured), the column labels (upright,
    as on a narrow cell) and the axis title with their paddings, a legend under the plot, and the padding Vega leaves
    above and below (HEATMAP_PADDING)."""
    longest = max((len(short_label(label)) for label in col_labels), default=1)
    labels = FONT_SIZE if is_index(col_labels) else max(FONT_SIZE, longest * WORD_CHAR_WIDTH)
    axis = labels + 2 * AXIS_PADDING + TITLE_SIZE
    legend = LEGEND_HEIGHT if legend_side == "bottom" else 0
    titles = max(2, title_lines) * (FONT_SIZE + 6) + 4 if title_lines else 0
    return titles + axis + legend + HEATMAP_PADDING


def title_width(title: str, subtitle: tuple[str, ...] = ()) -> int:
    """Pixels a chart's title and subtitle lines take across, about."""
    return int(max([len(title) * TITLE_CHAR_WIDTH] + [len(line) * CHAR_WIDTH for line in subtitle]))


def bars_width(labels: list[str]) -> int:
    """Pixels a bar chart needs for every label: MIN_STEP per bar, plus the value axis."""
    return min(MAX_WIDTH, max(320, len(labels) * (MIN_STEP + 6) + 80))


def grid_panels(panels: int, max_width: int, max_panel: float, min_panel: float) -> tuple[float, int]:
    """The side in pixels of each panel of ``heatmap_grid``, and how many panels a row holds: as large as ``panels``
    panels in one row ``max_width`` wide allow, between ``min_panel`` and ``max_panel``; the row wraps where they do
    not fit."""
    room = max_width - 3 * TITLE_SIZE
    panel = min(max_panel, max(min_panel, room / panels - PANEL_SPACING))
    return panel, max(1, min(panels, int(room // (panel + PANEL_SPACING))))


def thumbnail_panel(heads: int, max_width: int, max_panel: int) -> int:
    """The side in pixels of each of ``head_thumbnails``' thumbnails, ``heads`` to a row ``max_width`` wide, at most
    ``max_panel``: whole pixels, so that no thumbnail has a blurred edge."""
    return min(max_panel, (max_width - 3 * TITLE_SIZE) // heads - PANEL_SPACING)


# ---- Compiling a chart: once per layout, its data attached as a DataFrame
CELLS = alt.NamedData("cells")  # every chart's data: the named dataset "cells", a DataFrame until it is sent
# Altair checks every object against the JSON schema as it is made (its "debug mode"), which took most of a rerun;
# the tests check every builder's output instead.
alt.utils.schemapi.disable_debug_mode()


def _about(description: str, title: str | alt.Title) -> dict:
    """A chart's top-level properties besides its view: its data, the named dataset "cells", a description (for a
    screen reader) and its title. Given to the chart's constructor: ``.properties()`` would check each against the
    schema."""
    return {"data": CELLS, "description": description, "title": title}


def _compile(chart: Callable[..., alt.TopLevelMixin], cells: pd.DataFrame, **layout: Any) -> dict:
    """The Vega-Lite spec of ``chart(**layout)``, an Altair chart drawn from the named dataset "cells", with the app's
    theme; its data the DataFrame ``cells``.

    A spec depends on the values only through its data: it is compiled once per layout (labels, titles, sizes), and
    new values (a seed, a toggle) reuse it. The cells are attached as a DataFrame, which ``attn_ui.draw`` sends to the
    browser as Arrow (Altair would write them out as a dict per cell, and Streamlit would convert them back to a
    table: most of a rerun); ``inline_data`` writes them out as the JSON rows Vega-Lite itself reads."""
    return {**copy.deepcopy(_compiled(chart, **layout)), "datasets": {"cells": cells}}


@functools.lru_cache(maxsize=LAYOUTS_KEPT)
def _compiled(chart: Callable[..., alt.TopLevelMixin], **layout: Any) -> dict:
    return chart(**layout).to_dict(validate=False)


def _with_data(chart: alt.TopLevelMixin, description: str, datasets: dict[str, pd.DataFrame]) -> dict:
    """The spec of a chart whose layout depends on its values (a map's domain from its points), compiled each time,
    with a description and its named ``datasets`` as DataFrames (several, where its layers draw different rows)."""
    return {**chart.to_dict(validate=False), "description": description, "datasets": datasets}


def inline_data(spec: dict) -> dict:
    """A copy of the spec with every dataset a list of rows (JSON), as Vega-Lite reads it: for an image renderer,
    a file, a test."""
    datasets = {
        name: pa.Table.from_pandas(data, preserve_index=False).to_pylist() if isinstance(data, pd.DataFrame) else data
        for name, data in spec.get("datasets", {}).items()
    }
    return {**spec, "datasets": datasets} if datasets else spec


# ---- The builders: each prepares its data, and its chart function draws the layout
def heatmap(
    values: np.ndarray,
    row_labels: list[str],
    col_labels: list[str],
    *,
    kind: str = "weights",
    row_title: str = "query",
    col_title: str = "key",
    title: str = "",
    subtitle: tuple[str, ...] = (),
    max_width: int = MAX_WIDTH,
    max_height: int = MAX_HEIGHT,
    max_step: float = MAX_STEP,
    max_aspect: float = 1.0,
    compact_height: int = COMPACT_HEIGHT,
    legend_side: str = "bottom",
    min_step: float = MIN_STEP,
    highlight: int | None = None,
) -> dict:
    """A matrix as coloured cells with every token labelled on both axes and values on hover, as a Vega-Lite spec.

    ``kind`` "mask" draws a boolean matrix as "allowed" / "blocked", "additive" a matrix of 0 and -inf as "0" / "−∞",
    in the same two colours. Otherwise ``-inf`` cells (masked scores)
    are drawn grey and labelled "masked". ``highlight`` outlines one row (e.g. the query at a generation step).
    ``subtitle``: lines under the title (a formula, a shape), part of the chart so that its images carry them.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    values = np.asarray(values, dtype=float)
    infinite = np.isneginf(values)
    shown_values = np.where(infinite, np.nan, values)
    rows, cols = np.indices(values.shape).reshape(2, -1)  # (rows · columns,) each: the cells in row-major order
    columns = {
        "row": rows,
        "col": cols,
        row_title: _names(row_labels, rows),
        col_title: _names(col_labels, cols),
        "value": shown_values.ravel(),
    }
    sizes = (max_width, max_height, max_step, max_aspect, compact_height, min_step)
    cell_width, cell_height = cell_steps(row_labels, col_labels, *sizes)
    numbers = kind not in CATEGORIES and values.size <= NUMBERS_UP_TO and min(cell_width, cell_height) >= NUMBER_STEP
    if kind in CATEGORIES:
        allowed, blocked = CATEGORIES[kind]
        hidden = infinite if kind == "additive" else infinite | (values == 0)
        columns["category"] = np.where(hidden, blocked, allowed).ravel()
    else:
        finite = np.where(infinite, 0, values)
        columns["masked"] = infinite.ravel()
        columns["tip"] = np.where(infinite, "−∞ (masked)", np.char.mod("%.4f", finite)).ravel()
    if numbers:
        columns["text"] = np.where(infinite, "−∞", np.char.mod("%.2f", finite)).ravel()
        columns["dark"] = _dark_cells(kind, finite).ravel()
    if highlight is not None:
        columns["highlight"] = rows == highlight
    layout = {
        "row_labels": tuple(row_labels),
        "col_labels": tuple(col_labels),
        "kind": kind,
        "row_title": row_title,
        "col_title": col_title,
        "title": title,
        "subtitle": tuple(subtitle),
        "cell_width": cell_width,
        "cell_height": cell_height,
        "legend_side": legend_side,
        "min_step": min_step,
        "numbers": numbers,
        "highlight": highlight is not None,
    }
    return _compile(_heatmap_chart, pd.DataFrame(columns), **layout)


def _heatmap_chart(
    row_labels: tuple[str, ...],
    col_labels: tuple[str, ...],
    kind: str,
    row_title: str,
    col_title: str,
    title: str,
    subtitle: tuple[str, ...],
    cell_width: float,
    cell_height: float,
    legend_side: str,
    min_step: float,
    numbers: bool,
    highlight: bool,
) -> alt.LayerChart:
    """``heatmap``'s chart: cells, with their ``numbers`` written on them, and a ``highlight``ed row outlined."""
    position = {
        "x": alt.X(field="col", type="ordinal", axis=_label_axis(col_labels, col_title, cell_width, min_step=min_step)),
        "y": alt.Y(field="row", type="ordinal", axis=_label_axis(row_labels, row_title, cell_height, True, min_step)),
    }
    names = {row_title: f"datum[{json.dumps(row_title)}]", col_title: f"datum[{json.dumps(col_title)}]"}
    cell = {"width": cell_width, "height": cell_height}
    if kind in CATEGORIES:
        tooltip = _tooltip(names | {"category": "datum.category"})
        layers = [_layer(alt.Chart().mark_rect(**cell, tooltip=tooltip), position | {"color": _colour(kind, legend_side)})]
    else:
        # One layer for every cell: a masked cell (value null) is kept ("invalid": "show") and drawn grey.
        colour = _colour(kind, legend_side, grey_masked=True)
        tooltip = _tooltip(names | {"value": "datum.tip"})
        layers = [_layer(alt.Chart().mark_rect(**cell, invalid="show", tooltip=tooltip), position | {"color": colour})]
    if numbers:
        text_colour = alt.ColorValue("black", condition={"test": "datum.dark", "value": "white"})
        # The number lies over its cell: hovering it shows the cell's tooltip, not Streamlit's default (row, col, text).
        text = {**position, "text": alt.Text(field="text"), "color": text_colour}
        layers.append(_layer(alt.Chart().mark_text(tooltip=tooltip), text))
    if highlight:
        outline = alt.Chart().mark_rect(**cell, fill=None, stroke=HIGHLIGHT_COLOUR, strokeWidth=3, tooltip=tooltip)
        # The row is a field, so a new row changes only the data; its outline's tooltip is its cell's, like the number's.
        layers.append(_layer(outline, position, "datum.highlight"))
    # Sized in steps: Streamlit's chart theme ignores a fixed width and height on band scales.
    size = {"width": alt.Step(cell_width), "height": alt.Step(cell_height)}
    # Its title is not cut (Vega-Lite cuts it at the cells' width): the chart is as wide as the cells, the row labels
    # left of them and a legend right of them, or as its title where that is wider (steps' blocks make room for it).
    legend = legend_width(kind) if legend_side == "right" else 0
    limit = max(int(len(col_labels) * cell_width) + _label_room(list(row_labels)) + legend, title_width(title, subtitle))
    return alt.layer(*layers, **size, **_scale_params(kind), **_about(f"heatmap: {title}", _heading(title, subtitle, limit)))


def bars(
    values: np.ndarray,
    labels: list[str],
    *,
    value_title: str,
    label_title: str = "key",
    title: str = "",
    subtitle: tuple[str, ...] = (),
) -> dict:
    """One value per token as bars (e.g. a query's weights over the keys), every token labelled; ``subtitle``: lines
    under the title.

    Draw it in a block ``bars_width(labels)`` wide, BAR_HEIGHT high (``steps.bar_block``).
    """
    positions = np.arange(len(labels))
    cells = pd.DataFrame({"position": positions, label_title: labels, value_title: np.asarray(values, dtype=float)})
    layout = {"labels": tuple(labels), "value_title": value_title, "label_title": label_title}
    return _compile(_bars_chart, cells, **layout, title=title, subtitle=tuple(subtitle))


def _bars_chart(labels: tuple[str, ...], value_title: str, label_title: str, title: str, subtitle: tuple[str, ...]) -> alt.Chart:
    return (
        alt.Chart(**_about(f"bars: {title}", _heading(title, subtitle, OVER_PLOT_AND_AXIS)))
        .mark_bar()
        .encode(
            x=alt.X(field="position", type="ordinal", axis=_label_axis(labels, label_title, MIN_STEP)),
            y=alt.Y(field=value_title, type="quantitative"),
            tooltip=[
                alt.Tooltip(field=label_title, type="nominal"),
                alt.Tooltip(field=value_title, type="quantitative", format=".4f"),
            ],
        )
    )


def lines(
    x: np.ndarray,
    measured: dict[str, np.ndarray],
    *,
    x_title: str,
    y_title: str,
    theory: dict[str, np.ndarray] | None = None,
    log_x: bool = False,
    log_y: bool = False,
    marker: float | None = None,
    title: str = "",
    points: bool = True,
) -> dict:
    """Curves of y against x, one colour per series of ``measured``.

    Without ``theory`` the measured series are lines with points (``points=False``: lines alone, for long series).
    With it, measured values are points and each theory curve (keyed like the measured series it predicts) a dashed
    line of the same colour. ``marker`` draws a vertical rule at that x (a row of the data, so that moving it changes
    only the data). A log x axis is in base 2 with a tick at every x (e.g. d_k = 1, 2, 4 ... 1024).
    Column names must not contain quotes or dots.
    Draw it with an explicit height: ``steps.chart_block(width, LINE_HEIGHT, lines, ...)``.
    """
    frames = [
        pd.DataFrame({x_title: np.asarray(x, dtype=float), y_title: np.asarray(y, dtype=float), "series": name, "source": source})
        for source, curves in (("measured", measured), ("theory", theory or {}))
        for name, y in curves.items()
    ]
    if marker is not None:
        frames.append(pd.DataFrame({x_title: [float(marker)], "source": ["marker"]}))
    cells = pd.concat(frames, ignore_index=True)
    layout = {
        "x_title": x_title,
        "y_title": y_title,
        "x_ticks": tuple(sorted(set(np.asarray(x, dtype=float)))),
        "log_x": log_x,
        "log_y": log_y,
        "names": tuple(measured),
        "theory": bool(theory),
        "marker": marker is not None,
        "points": points,
        "title": title,
    }
    return _compile(_lines_chart, cells, **layout)


def _lines_chart(
    x_title: str,
    y_title: str,
    x_ticks: tuple[float, ...],
    log_x: bool,
    log_y: bool,
    names: tuple[str, ...],
    theory: bool,
    marker: bool,
    points: bool,
    title: str,
) -> alt.LayerChart:
    encoding = {
        "x": _x_encoding(x_title, x_ticks, log_x),
        "y": _y_encoding(y_title, log_y),
        "color": _series_colour(names),
        "tooltip": [
            alt.Tooltip(field="series", type="nominal"),
            alt.Tooltip(field="source", type="nominal"),
            alt.Tooltip(field=x_title, type="quantitative", format="g"),
            alt.Tooltip(field=y_title, type="quantitative", format=".4g"),
        ],
    }
    dots = _layer(
        alt.Chart().mark_point(filled=True, size=60), encoding | {"shape": _series_shape(names)}, "datum.source == 'measured'"
    )
    if theory:
        layers = [_layer(alt.Chart().mark_line(strokeDash=[6, 4]), encoding, "datum.source == 'theory'"), dots]
    else:
        layers = [_layer(alt.Chart().mark_line(), encoding, "datum.source == 'measured'"), *([dots] if points else [])]
    if marker:
        rule = alt.Chart().mark_rule(color="grey", strokeDash=[2, 2])
        layers.append(_layer(rule, {"x": alt.X(field=x_title, type="quantitative")}, "datum.source == 'marker'"))
    return alt.layer(*layers, **_about(f"lines: {title}", _heading(title, (), OVER_PLOT_AND_AXIS)))


def heatmap_grid(
    values: np.ndarray,
    row_labels: list[str],
    col_labels: list[str],
    *,
    panel_names: list[str],
    panel_title: str = "head",
    row_title: str = "query",
    col_title: str = "key",
    kind: str = "weights",
    max_width: int = MAX_WIDTH,
    max_panel: int = 160,
    min_panel: int = WRAPPED_PANEL,
    title: str = "",
) -> dict:
    """Small heatmaps side by side, e.g. every head of a layer: ``values`` is (panels, rows, columns) and panel i,
    named ``panel_names[i]``, draws ``values[i]``.

    Every panel is always visible: the row of panels wraps into as many rows as it needs (panels of at least
    ``min_panel`` pixels). Hovering a cell names its panel, tokens and value.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    values = np.asarray(values, dtype=float)
    panels, rows, cols = np.indices(values.shape).reshape(3, -1)  # (cells,) each, row-major
    cells = pd.DataFrame({"panel": panels, "row": rows, "col": cols, "value": values.ravel()})
    names = {panel_title: ("panel", panel_names), row_title: ("row", row_labels), col_title: ("col", col_labels)}
    for name, (field, labels) in names.items():
        cells[name] = _names(labels, cells[field])
    panel, columns = grid_panels(len(panel_names), max_width, max_panel, min_panel)
    titles = {"panel_title": panel_title, "row_title": row_title, "col_title": col_title, "title": title}
    return _compile(_grid_chart, cells, panel_names=tuple(panel_names), kind=kind, panel=panel, columns=columns, **titles)


def _grid_chart(
    panel_names: tuple[str, ...],
    kind: str,
    panel: float,
    columns: int,
    panel_title: str,
    row_title: str,
    col_title: str,
    title: str,
) -> alt.FacetChart:
    names = {name: f"datum[{json.dumps(name)}]" for name in (panel_title, row_title, col_title)}
    tooltip = _tooltip(names | {"value": "format(datum.value, '.4f')"})
    # A panel's size in pixels rather than a step per token: the spec then does not depend on the number of tokens,
    # so that a new sentence changes only the data, which the browser updates in place.
    panel_chart = (
        alt.Chart(width=panel, height=panel)
        .mark_rect(tooltip=tooltip)
        .encode(
            x=alt.X(field="col", type="ordinal", axis=None),
            y=alt.Y(field="row", type="ordinal", axis=None),
            color=_colour(kind),
        )
    )
    facet = alt.Facet(field="panel", type="ordinal", title=panel_title, header=_panel_header(panel_names))
    about = _about(f"heatmap grid: {title}", title)
    return panel_chart.facet(facet=facet, columns=columns, spacing=PANEL_SPACING, **_scale_params(kind), **about)


def head_thumbnails(
    weights: np.ndarray,
    tokens: list[str],
    *,
    max_width: int = MAX_WIDTH,
    max_panel: int = 160,
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
    return _compile(_thumbnails_chart, panels, panel=thumbnail_panel(heads, max_width, max_panel), title=title)


def _thumbnails_chart(panel: int, title: str) -> alt.FacetChart:
    tooltip = _tooltip({"layer": "datum.layer", "head": "datum.head", "strongest weight": "datum.strongest"})
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
        .encode(x=alt.XValue(0), y=alt.YValue(0), url=alt.Url(field="image", type="nominal"), color=_colour("weights"))
        .add_params(picked)
    )
    row = alt.Row(field="layer", type="ordinal", title="layer")
    column = alt.Column(field="head", type="ordinal", title="head")
    return panel_chart.facet(row=row, column=column, spacing=PANEL_SPACING, **_about(f"head thumbnails: {title}", title))


def labelled_lines(
    values: np.ndarray,
    series: list[str],
    points: list[str],
    *,
    value_title: str,
    point_title: str,
    series_title: str,
    title: str = "",
    legend_side: str = "bottom",
) -> dict:
    """One line per series over ordered points, e.g. a similarity per layer for each pair of sentences:
    ``values`` is (series, points); the series' legend under the plot or at its right.

    Draw it with ``steps.labelled_lines_block``: at its own height with the legend under it, at the height of the
    room it is given with the legend at its right.
    """
    values = np.asarray(values, dtype=float)
    series_index, point_index = np.indices(values.shape).reshape(2, -1)  # (series · points,) each, row-major
    cells = pd.DataFrame(
        {
            "position": point_index,
            point_title: np.asarray(points, dtype=object)[point_index],
            series_title: np.asarray(series, dtype=object)[series_index],
            value_title: values.ravel(),
        }
    )
    titles = {"value_title": value_title, "point_title": point_title, "series_title": series_title, "title": title}
    return _compile(_labelled_lines_chart, cells, points=tuple(points), **titles, legend_side=legend_side)


def _labelled_lines_chart(
    points: tuple[str, ...], value_title: str, point_title: str, series_title: str, title: str, legend_side: str
) -> alt.Chart:
    # Under the plot, the legend (a line per series) and the upright labels come on top of the plot's own height
    # ("fit-x": only the width fits the column; Streamlit's default, "fit", squeezed the plot to nothing under a long
    # legend). With the legend at its right, the whole chart fits the height it is drawn at.
    if legend_side == "bottom":
        size = {"height": PLOT_HEIGHT, "autosize": alt.AutoSizeParams(type="fit-x", contains="padding")}
    else:
        size = {"autosize": alt.AutoSizeParams(type="fit", contains="padding")}
    return (
        alt.Chart(**size, **_about(f"lines: {title}", _heading(title, (), OVER_PLOT_AND_AXIS)))
        .mark_line(point=True)
        .encode(
            x=alt.X(field="position", type="ordinal", axis=_label_axis(points, point_title, 2 * MIN_STEP)),
            y=alt.Y(field=value_title, type="quantitative", scale=alt.Scale(zero=False)),
            color=alt.Color(field=series_title, type="nominal", legend=alt.Legend(orient=legend_side, columns=1)),
            tooltip=[
                alt.Tooltip(field=series_title, type="nominal"),
                alt.Tooltip(field=point_title, type="nominal"),
                alt.Tooltip(field=value_title, type="quantitative", format=".4f"),
            ],
        )
    )


def series_lines(
    series: dict[str, tuple[np.ndarray, np.ndarray]],
    *,
    x_title: str,
    y_title: str,
    log_x: bool = False,
    log_y: bool = False,
    title: str = "",
) -> dict:
    """Lines with points, one colour per series, each series with its own x values: ``series`` maps
    a name to (x, y), so one series may stop before another (e.g. a method refused at long lengths).

    A log x axis is in base 2 with a tick at every x. Column names must not contain quotes or dots.
    Draw it with an explicit height: ``steps.chart_block(width, LINE_HEIGHT, series_lines, ...)``.
    """
    frames = [
        pd.DataFrame({x_title: np.asarray(x, dtype=float), y_title: np.asarray(y, dtype=float), "series": name})
        for name, (x, y) in series.items()
    ]
    cells = pd.concat(frames, ignore_index=True)
    layout = {"x_title": x_title, "y_title": y_title, "x_ticks": tuple(sorted(set(cells[x_title]))), "log_x": log_x}
    return _compile(_series_lines_chart, cells, **layout, log_y=log_y, names=tuple(series), title=title)


def _series_lines_chart(
    x_title: str, y_title: str, x_ticks: tuple[float, ...], log_x: bool, log_y: bool, names: tuple[str, ...], title: str
) -> alt.LayerChart:
    encoding = {
        "x": _x_encoding(x_title, x_ticks, log_x),
        "y": _y_encoding(y_title, log_y),
        "color": _series_colour(names),
        "tooltip": [
            alt.Tooltip(field="series", type="nominal"),
            alt.Tooltip(field=x_title, type="quantitative", format=","),
            alt.Tooltip(field=y_title, type="quantitative", format=".4g"),
        ],
    }
    dots = _layer(alt.Chart().mark_point(filled=True, size=60), encoding | {"shape": _series_shape(names)})
    layers = [_layer(alt.Chart().mark_line(), encoding), dots]
    return alt.layer(*layers, **_about(f"lines: {title}", _heading(title, (), OVER_PLOT_AND_AXIS)))


TILE_CLASSES = ("skipped", "full", "partial")  # attn_core's TILE_SKIPPED, TILE_FULL, TILE_PARTIAL, by name
TILE_COLOURS = (MASKED_COLOUR, ALLOWED_COLOUR, HIGHLIGHT_COLOUR)  # hidden grey, visible blue, masked orange
TILE_MAP_SIDE = 320  # pixels of a tile map's plot on a scrolling page


def tile_map(classes: list[list[str]], block_q: int, block_k: int, t: int, *, side: int = TILE_MAP_SIDE, title: str = "") -> dict:
    """A (T, T) mask's tiles as the tiled kernel treats them: ``classes[i][j]`` (one of TILE_CLASSES) is the tile of
    query block i and key block j, ``block_q`` × ``block_k`` tokens (the last ones shorter, up to ``t``); a square
    ``side`` pixels wide holds them all. Each block's axis label is its first token; hovering a tile names its queries,
    keys and class."""
    q_block, k_block = np.indices((len(classes), len(classes[0]))).reshape(2, -1)  # (tiles,) each, row-major

    def spans(block: np.ndarray, size: int) -> list[str]:
        return [f"{start}–{min(t, start + size) - 1}" for start in block * size]

    cells = pd.DataFrame(
        {
            "q_block": q_block,
            "k_block": k_block,
            "class": np.asarray(classes, dtype=object).ravel(),
            "queries": spans(q_block, block_q),
            "keys": spans(k_block, block_k),
        }
    )
    colour = alt.Color(
        "class:N",
        scale=alt.Scale(domain=list(TILE_CLASSES), range=list(TILE_COLOURS)),
        title=None,
        legend=alt.Legend(orient="bottom"),
    )
    chart = (
        # Sized in steps: Streamlit's chart theme ignores a fixed width and height on band scales.
        alt.Chart(
            alt.NamedData("cells"), title=title, width=alt.Step(side / len(classes[0])), height=alt.Step(side / len(classes))
        )
        .mark_rect(stroke="white", strokeWidth=1)
        .encode(
            x=alt.X(
                "k_block:O", axis=alt.Axis(title="keys", labelExpr=f"datum.value * {block_k}", labelAngle=0, labelOverlap=True)
            ),
            y=alt.Y("q_block:O", axis=alt.Axis(title="queries", labelExpr=f"datum.value * {block_q}", labelOverlap=True)),
            color=colour,
            tooltip=["queries:N", "keys:N", "class:N"],
        )
    )
    return _with_data(chart, f"tile map: {title}", {"cells": cells})


ROLE_COLOURS = {"query": "#1f77b4", "key": HIGHLIGHT_COLOUR}
MAP_LINK_WIDTH = (0.5, 8)  # pixels of a query-key line at weight 0 and at weight 1


def _equal_domains(x: np.ndarray, y: np.ndarray, margin: float = 0.12) -> list[float]:
    """One domain for both axes of a map, so that a distance reads the same across and up, with a margin."""
    low, high = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
    pad = (high - low) * margin or 1.0
    return [low - pad, high + pad]


SAME_PLACE = 0.01  # of a map's domain: points nearer than this (on both axes) share one label
MAP_TITLE_LIMIT = 640  # pixels: the longest line of a map's title, which may be wider than its plot


def labels_by_place(points: np.ndarray, labels: list[str], groups: list[str], span: float, counted: bool = True) -> list[str]:
    """Each point's label; where points of one group lie at one place (within SAME_PLACE · ``span`` on both axes),
    their labels joined on the first of them ("The · the", and "the ×2" where ``counted``, else "the") and none on the
    others, so that no label is written over another. ``points`` (n, 2)."""
    cells = np.round(points / (SAME_PLACE * span or 1.0)).astype(int).tolist()
    at: dict[tuple, list[int]] = {}
    for i, (group, cell) in enumerate(zip(groups, cells, strict=True)):
        at.setdefault((group, *cell), []).append(i)
    shown = [""] * len(labels)
    for members in at.values():
        names = [labels[i] for i in members]
        counts = {name: names.count(name) for name in names}  # in order of first appearance
        shown[members[0]] = " · ".join(name if n == 1 or not counted else f"{name} ×{n}" for name, n in counts.items())
    return shown


LABEL_HEIGHT = 16  # pixels of a map label's box: CELL_FONT_SIZE and a little room (its letters are about 13 px high)
DOT_RADIUS = 6  # pixels around a map's point that its marker covers
CROWD_RADIUS = 40  # pixels: a map's points nearer than this to many others have their labels placed first
# Where a map's label may go around its point, in order of preference: the text's anchor (dx, dy) from the point, in
# pixels, and the side of the text it is on (baseline "middle"): up and right, down and right, up and left ...
LABEL_SPOTS = ((7, -8, "left"), (7, 8, "left"), (-7, -8, "right"), (-7, 8, "right"), (10, 0, "left"), (-10, 0, "right"),
               (0, -14, "center"), (0, 14, "center"), (4, -24, "left"), (4, 24, "left"), (-4, -24, "right"),
               (-4, 24, "right"))  # fmt: skip


# A map's labels, each written at its own spot (label_spots), read from its row of the data.
PLACED_TEXT = {"align": {"expr": "datum.align"}, "dx": {"expr": "datum.dx"}, "dy": {"expr": "datum.dy"}, "baseline": "middle"}


def label_spots(points: np.ndarray, labels: list[str], domain: list[float], side: float) -> list[tuple[int, int, str]]:
    """For each of a map's labels, its spot around its point (one of LABEL_SPOTS): the first that overlaps neither the
    labels placed before it nor any point and stays inside the plot, else the one that covers least of them; the labels
    of crowded points are placed first, while they have most room (Vega-Lite places no labels itself). ``points``
    (n, 2) in the map's units, on a ``side`` × ``side`` px plot over ``domain`` on both axes; an empty label keeps the
    first spot."""
    scale = side / (domain[1] - domain[0])
    anchors = np.stack([points[:, 0] - domain[0], domain[1] - points[:, 1]], axis=1) * scale  # (n, 2) px from top left
    dots = np.concatenate([anchors - DOT_RADIUS, anchors + DOT_RADIUS], axis=1)  # (n, 4) boxes: left, top, right, bottom
    offsets = np.array([(dx, dy) for dx, dy, _ in LABEL_SPOTS], dtype=float)  # (s, 2)
    shift = np.array([{"left": 0.0, "center": 0.5, "right": 1.0}[side_of_text] for *_, side_of_text in LABEL_SPOTS])  # (s,)
    plot = np.array([[0.0, 0.0, side, side]])
    distances = np.linalg.norm(anchors[:, None] - anchors[None], axis=-1)  # (n, n) px
    crowded_first = np.argsort(-(distances < CROWD_RADIUS).sum(axis=1), kind="stable")  # (n,) most neighbours first
    placed = np.empty((0, 4))
    spots = [LABEL_SPOTS[0]] * len(labels)
    for i in crowded_first.tolist():
        label = labels[i]
        if not label:
            continue
        width = len(label) * CHAR_WIDTH
        corner = anchors[i] + offsets - np.stack([shift * width, np.full(len(shift), LABEL_HEIGHT / 2)], axis=1)  # (s, 2)
        boxes = np.concatenate([corner, corner + (width, LABEL_HEIGHT)], axis=1)  # (s, 4)
        others = np.concatenate([placed, dots[:i], dots[i + 1 :]])
        off_plot = width * LABEL_HEIGHT - _shared_area(boxes, plot)  # (s,)
        best = int(np.argmin(_shared_area(boxes, others) + off_plot))  # the first of equals
        spots[i] = LABEL_SPOTS[best]
        placed = np.concatenate([placed, boxes[best : best + 1]])
    return spots


def _spot_columns(points: np.ndarray, labels: list[str], domain: list[float], side: int | None) -> dict[str, list]:
    """A map's label spots (label_spots) as the columns PLACED_TEXT reads; the first spot for all on a plot of no set side."""
    spots = label_spots(points, labels, domain, side) if side else [LABEL_SPOTS[0]] * len(labels)
    return dict(zip(("dx", "dy", "align"), (list(column) for column in zip(*spots, strict=True)), strict=True))


def _shared_area(boxes: np.ndarray, others: np.ndarray) -> np.ndarray:
    """For each of ``boxes`` (k, 4), the area it shares with ``others`` (m, 4), in all; boxes as left, top, right, bottom."""
    across = np.minimum(boxes[:, None, 2], others[None, :, 2]) - np.maximum(boxes[:, None, 0], others[None, :, 0])  # (k, m)
    down = np.minimum(boxes[:, None, 3], others[None, :, 3]) - np.maximum(boxes[:, None, 1], others[None, :, 1])  # (k, m)
    return (across.clip(min=0) * down.clip(min=0)).sum(axis=1)  # (k,)


def query_key_scatter(
    points: np.ndarray,
    tokens: list[str],
    links: list[tuple[int, int, float]],
    *,
    title: str = "",
    subtitle: tuple[str, ...] = (),
    axis_titles: tuple[str, str] = ("PC 1", "PC 2"),
    side: int | None = None,
    legend_side: str = "top",
) -> dict:
    """Queries and keys as points of one map, each query joined to some keys by lines as wide as their weights.

    ``points`` (2T, 2): the T queries, then the T keys; ``tokens`` their T tokens; ``links`` (query, key, weight).
    Hover a point for its token, role and position; a line for its pair and weight. Tokens at one place (a word
    twice, "The" and "the" where case is not told apart) share one label (labels_by_place).
    """
    t = len(tokens)
    roles = ["query"] * t + ["key"] * t
    domain = _equal_domains(points[:, 0], points[:, 1])
    dots = pd.DataFrame(
        {
            "x": points[:, 0],
            "y": points[:, 1],
            "token": tokens + tokens,
            "label": (labels := labels_by_place(points, tokens + tokens, roles, domain[1] - domain[0])),
            "role": roles,
            "position": list(range(t)) * 2,
            **_spot_columns(points, labels, domain, side),
        }
    )
    query, key, weight = (list(column) for column in zip(*links, strict=True)) if links else ([], [], [])
    lines = pd.DataFrame(
        {
            "x": points[query, 0] if links else [],
            "y": points[query, 1] if links else [],
            "x2": points[[t + j for j in key], 0] if links else [],
            "y2": points[[t + j for j in key], 1] if links else [],
            "query": [tokens[i] for i in query],
            "key": [tokens[j] for j in key],
            "weight": np.asarray(weight, dtype=float),
        }
    )
    x = alt.X("x:Q", title=axis_titles[0], scale=alt.Scale(domain=domain, nice=False))
    y = alt.Y("y:Q", title=axis_titles[1], scale=alt.Scale(domain=domain, nice=False))
    colour = alt.Color(
        "role:N",
        title=None,
        scale=alt.Scale(domain=list(ROLE_COLOURS), range=list(ROLE_COLOURS.values())),
        legend=alt.Legend(orient=legend_side),
    )
    link_layer = (
        alt.Chart(alt.NamedData("links"))
        .mark_rule(color="grey", opacity=0.6)
        .encode(
            x=x,
            y=y,
            x2="x2:Q",
            y2="y2:Q",
            strokeWidth=alt.StrokeWidth("weight:Q", scale=alt.Scale(domain=[0, 1], range=list(MAP_LINK_WIDTH)), legend=None),
            tooltip=[alt.Tooltip("query:N"), alt.Tooltip("key:N"), alt.Tooltip("weight:Q", format=".3f")],
        )
    )
    dot_layer = (
        alt.Chart(alt.NamedData("points"))
        .mark_point(filled=True, size=110, opacity=0.9)
        .encode(
            x=x,
            y=y,
            color=colour,
            shape=alt.Shape("role:N", scale=alt.Scale(domain=list(ROLE_COLOURS), range=["circle", "diamond"]), legend=None),
            tooltip=[alt.Tooltip("token:N"), alt.Tooltip("role:N"), alt.Tooltip("position:Q")],
        )
    )
    label_layer = (
        alt.Chart(alt.NamedData("points"))
        .mark_text(**PLACED_TEXT)
        .encode(x=x, y=y, text="label:N", color=colour, tooltip=[alt.Tooltip("label:N"), alt.Tooltip("role:N")])
    )
    chart = alt.layer(link_layer, dot_layer, label_layer, title=_heading(title, subtitle, MAP_TITLE_LIMIT))
    return _with_data(_square(chart, side), f"map: {title}", {"points": dots, "links": lines})


def rotation_circle(
    points: np.ndarray,
    current: int,
    *,
    theta: float,
    title: str = "",
    subtitle: tuple[str, ...] = (),
    side: int | None = None,
    legend_side: str = "top",
) -> dict:
    """One 2-D pair of features at positions 0, 1, 2 ...: points on a circle, position m turned m·θ from position 0,
    with arrows from the origin to position 0 and to the ``current`` position. ``points`` (positions, 2)."""
    radius = float(np.hypot(*points[0])) or 1.0
    angles = np.linspace(0, 2 * np.pi, 73)
    circle = pd.DataFrame({"x": radius * np.cos(angles), "y": radius * np.sin(angles), "order": np.arange(73)})
    positions = pd.DataFrame(
        {
            "x": points[:, 0],
            "y": points[:, 1],
            "position": np.arange(len(points)),
            "angle": [f"{m} × {theta:.3g} = {m * theta:.3g} rad" for m in range(len(points))],
            "shown": np.arange(len(points)) <= current,
        }
    )
    arrows = pd.DataFrame(
        {
            "x": [0.0, 0.0],
            "y": [0.0, 0.0],
            "x2": points[[0, current], 0],
            "y2": points[[0, current], 1],
            "arrow": ["m = 0", f"m = {current}"],
        }
    )
    domain = [-1.25 * radius, 1.25 * radius]
    x = alt.X("x:Q", title="feature 2i", scale=alt.Scale(domain=domain, nice=False))
    y = alt.Y("y:Q", title="feature 2i+1", scale=alt.Scale(domain=domain, nice=False))
    ring = alt.Chart(alt.NamedData("circle")).mark_line(color="grey", strokeDash=[3, 3]).encode(x=x, y=y, order="order:Q")
    arrow_colour = alt.Color(
        "arrow:N", title=None, scale=alt.Scale(range=["grey", HIGHLIGHT_COLOUR]), legend=alt.Legend(orient=legend_side)
    )
    arrow_layer = (
        alt.Chart(alt.NamedData("arrows")).mark_rule(strokeWidth=3).encode(x=x, y=y, x2="x2:Q", y2="y2:Q", color=arrow_colour)
    )
    shown = alt.Chart(alt.NamedData("positions")).transform_filter("datum.shown")
    tooltip = [alt.Tooltip("position:Q", title="position m"), alt.Tooltip("angle:N", title="angle m·θ")]
    dots = shown.mark_point(filled=True, size=80, color=ALLOWED_COLOUR).encode(x=x, y=y, tooltip=tooltip)
    labels = (  # named in its constructor: .properties() would check the chart against the schema
        alt.Chart(alt.NamedData("positions"), name=PLAIN_TEXT)
        .transform_filter("datum.shown")
        .mark_text(dx=9, dy=-9)
        .encode(x=x, y=y, text="position:Q", tooltip=tooltip)
    )
    chart = alt.layer(ring, arrow_layer, dots, labels, title=_heading(title, subtitle, MAP_TITLE_LIMIT))
    return _with_data(_square(chart, side), f"rotation: {title}", {"circle": circle, "positions": positions, "arrows": arrows})


def word_path_map(
    points: np.ndarray,
    sentences: list[str],
    stages: list[str],
    *,
    title: str = "",
    subtitle: tuple[str, ...] = (),
    side: int | None = None,
    legend_side: str = "bottom",
) -> dict:
    """One word's vector in several sentences, stage by stage: a path per sentence through one 2-D map, its legend of
    sentences under it or at its right (``legend_side``).

    ``points`` (sentences, stages, 2). Hover a point for its sentence and stage."""
    n, s = points.shape[:2]
    sentence_index, stage_index = np.indices((n, s)).reshape(2, -1)  # (n·s,) each, row-major
    domain = _equal_domains(points[..., 0].ravel(), points[..., 1].ravel())
    stage_labels = [stage.removeprefix("layer ") for stage in stages]
    cells = pd.DataFrame(
        {
            "x": points[..., 0].ravel(),
            "y": points[..., 1].ravel(),
            "sentence": np.asarray(sentences, dtype=object)[sentence_index],
            "stage": np.asarray(stages, dtype=object)[stage_index],
            "label": (
                labels := labels_by_place(  # the sentences' first stages often at one place: the word's own row
                    points.reshape(-1, 2), [stage_labels[i] for i in stage_index], [""] * (n * s), domain[1] - domain[0], False
                )
            ),
            "order": stage_index,
            **_spot_columns(points.reshape(-1, 2), labels, domain, side),
        }
    )
    x = alt.X("x:Q", title="PC 1", scale=alt.Scale(domain=domain, nice=False))
    y = alt.Y("y:Q", title="PC 2", scale=alt.Scale(domain=domain, nice=False))
    scale = alt.Scale(domain=list(sentences), range=list(SERIES_COLOURS))
    colour = alt.Color(
        "sentence:N", title=None, sort=list(sentences), scale=scale, legend=alt.Legend(orient=legend_side, columns=1)
    )
    tooltip = [alt.Tooltip("sentence:N"), alt.Tooltip("stage:N")]
    base = alt.Chart(alt.NamedData("cells")).encode(x=x, y=y, color=colour, tooltip=tooltip)
    # The stages' labels in the text's colour (a light series colour is faint as text), each beside its sentence's point.
    labels = (
        alt.Chart(alt.NamedData("cells"), name=PLAIN_TEXT)
        .mark_text(**PLACED_TEXT)
        .encode(x=x, y=y, text="label:N", tooltip=tooltip)
    )
    chart = alt.layer(
        base.mark_line().encode(order="order:Q"),
        base.mark_point(filled=True, size=70),
        labels,
        title=_heading(title, subtitle, MAP_TITLE_LIMIT),
    )
    return _with_data(_square(chart, side), f"paths: {title}", {"cells": cells})


# ---- Their parts: axes, colours, tooltips, titles; the thumbnails' pixels
def _label_axis(labels: list[str], title: str, step: float, horizontal: bool = False, min_step: float = MIN_STEP) -> alt.Axis:
    """An axis over integer positions that shows the tokens (duplicates stay distinct).

    Every label is drawn (no overlap removal) when a cell is at least ``min_step`` pixels; on a squeezed
    axis (hundreds of features) every k-th position is labelled instead, spaced ``min_step`` apart.
    Labels along x are written across when they fit their cell and upright (rotated -90°) otherwise.
    """
    names = json.dumps([short_label(label) for label in labels])
    every = max(1, int(np.ceil(min_step / max(step, 1))))
    fits_across = horizontal or max(len(short_label(label)) for label in labels) * CHAR_WIDTH <= step
    return alt.Axis(
        title=title,
        labelExpr=f"{names}[datum.value]",
        labelAngle=0 if fits_across else -90,
        labelOverlap=False,
        values=list(range(0, len(labels), every)),
    )


# The signed scale spans -bound..bound, the largest |value| of the chart's cells, computed by Vega from the data (the
# dataset "cells") rather than written into the spec: a spec that does not depend on the values lets the browser
# update a chart's data in place when only the values change (a new seed), instead of compiling and drawing it anew.
BOUND_PARAMS = [
    alt.VariableParameter(name="value_range", expr="extent(pluck(data('cells'), 'value'))"),
    alt.VariableParameter(name="bound", expr="max(abs(value_range[0]), abs(value_range[1])) || 1"),
]


def _scale_params(kind: str) -> dict:
    """The chart's parameters its colour scale needs: the bound of a signed scale, none for the others."""
    return {"params": BOUND_PARAMS} if kind == "signed" else {}


def _colour(kind: str, legend_side: str = "bottom", grey_masked: bool = False) -> alt.Color:
    """The colour channel of a ``kind`` of matrix, with its legend under the plot or at its right; ``grey_masked``:
    the cells whose field "masked" is true in grey, whatever their value."""
    if kind in CATEGORIES:
        scale = alt.Scale(domain=list(CATEGORIES[kind]), range=[ALLOWED_COLOUR, MASKED_COLOUR])
        return alt.Color(field="category", type="nominal", scale=scale, title=None, legend=alt.Legend(orient=legend_side))
    if kind == "weights":
        scale = alt.Scale(scheme="viridis", domain=[0, 1])
    else:
        scale = alt.Scale(scheme="blueorange", domain=alt.ExprRef("[-bound, bound]"), domainMid=0)
    legend = alt.Legend(orient=legend_side, direction="horizontal" if legend_side == "bottom" else "vertical")
    masked = {"condition": {"test": "datum.masked", "value": MASKED_COLOUR}} if grey_masked else {}
    return alt.Color(field="value", type="quantitative", scale=scale, title=None, legend=legend, **masked)


def _dark_cells(kind: str, values: np.ndarray) -> np.ndarray:
    """Where a cell's colour is dark enough for white numbers."""
    if kind == "weights":
        return values < 0.45  # the dark (purple-blue) end of viridis
    finite = np.abs(values[np.isfinite(values)])
    bound = finite.max() if finite.size and finite.max() > 0 else 1.0
    return np.abs(values) > 0.6 * bound


def _tooltip(entries: dict[str, str]) -> alt.ExprRef:
    """A mark's tooltip as one Vega expression, ``entries`` mapping each line's title to its value's expression.

    Vega-Lite's own tooltip wraps every field in three checks, and Streamlit's Vega evaluates expressions by
    interpreting them, cell by cell, on every redraw."""
    return alt.ExprRef("{" + ", ".join(f"{json.dumps(title)}: {value}" for title, value in entries.items()) + "}")


def _names(labels: list[str], positions: np.ndarray) -> pd.Categorical:
    """The label of each position, for the tooltip: a categorical (an Arrow dictionary), so that each distinct name
    is sent once and the browser computes no lookup per cell (4 per cell took a third of a 23,000-cell grid's redraw)."""
    return pd.Categorical(np.asarray(labels, dtype=object)[positions])


def _square(chart: alt.LayerChart, side: int | None) -> alt.LayerChart:
    """A map's plot ``side`` pixels across and up (its title, legend and axes around it: autosize "pad", where Streamlit
    would fit the whole chart into its element), so that with one domain on both axes a circle is drawn round and a
    distance reads the same across and up; else as wide and high as drawn."""
    return chart if side is None else chart.properties(width=side, height=side, autosize=alt.AutoSizeParams(type="pad"))


def _heading(title: str, subtitle: tuple[str, ...], limit: int | alt.ExprRef | None = None) -> str | alt.Title:
    """A chart's title, with lines under it when there are any; ``limit``: its longest line in pixels (Vega-Lite
    otherwise cuts a title at the plot's width, though the title also spans the axis left of the plot)."""
    if not subtitle and (limit is None or not title):
        return title
    return alt.Title(text=title, subtitle=list(subtitle), anchor="start", offset=8, **({"limit": limit} if limit else {}))


def _layer(mark: alt.Chart, encoding: dict, keep: str | None = None) -> alt.Chart:
    """One layer of a chart: a mark, its encoding, and the cells it keeps (a Vega expression)."""
    layer = mark.encode(**encoding)
    return layer.transform_filter(keep) if keep else layer


def _x_encoding(x_title: str, ticks: tuple[float, ...], log_x: bool) -> alt.X:
    """A quantitative x; on a log axis (base 2) a tick at every x, every other one when they would crowd."""
    if not log_x:
        return alt.X(field=x_title, type="quantitative")
    shown = list(ticks if len(ticks) <= 8 else ticks[::2])
    axis = alt.Axis(values=shown, labelOverlap=False)
    return alt.X(field=x_title, type="quantitative", scale=alt.Scale(type="log", base=2), axis=axis)


def _y_encoding(y_title: str, log_y: bool) -> alt.Y:
    return alt.Y(field=y_title, type="quantitative", **({"scale": alt.Scale(type="log")} if log_y else {}))


# Series of a line chart: Tableau 10's colours in an order that puts its orange and red apart, and a shape each, so
# that two series drawn on one another (SDPA's times and the tiled kernel's) still tell apart at their points.
SERIES_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2", "#72b7b2", "#eeca3b", "#9d755d", "#ff9da6", "#bab0ac")
SERIES_SHAPES = ("circle", "square", "triangle-up", "diamond", "triangle-down", "cross")
SERIES_LEGEND = alt.Legend(orient="top", columns=2)


def _series_colour(names: tuple[str, ...]) -> alt.Color:
    scale = alt.Scale(domain=list(names), range=list(SERIES_COLOURS))
    return alt.Color(field="series", type="nominal", title=None, sort=list(names), scale=scale, legend=SERIES_LEGEND)


def _series_shape(names: tuple[str, ...]) -> alt.Shape:
    scale = alt.Scale(domain=list(names), range=list(SERIES_SHAPES))
    return alt.Shape(field="series", type="nominal", title=None, sort=list(names), scale=scale, legend=SERIES_LEGEND)


def _panel_header(labels: list[str]) -> alt.Header:
    """A facet header that shows ``labels`` for the panels' integer positions."""
    return alt.Header(labelExpr=f"{json.dumps(labels)}[datum.value]")


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
