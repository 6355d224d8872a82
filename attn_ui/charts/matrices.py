"""Matrices as coloured cells: a heatmap with every token labelled on both axes, small heatmaps side by side (a
layer's heads), and a mask's tiles as the tiled kernel treats them."""

from __future__ import annotations

import json

import altair as alt
import numpy as np
import pandas as pd

from attn_ui.charts.build import about, compile_chart
from attn_ui.charts.parts import heading, label_axis, layer, matrix_colour, tooltip_expression
from attn_ui.charts.sizes import (
    MAX_PANEL,
    MAX_STEP,
    MAX_WIDTH,
    NUMBER_STEP,
    NUMBERS_UP_TO,
    PAGE_CELLS,
    PANEL_SPACING,
    WRAPPED_PANEL,
    CellSizes,
    cell_steps,
    grid_panels,
    title_width,
    width_at,
)
from attn_ui.charts.theme import ALLOWED_COLOUR, CATEGORIES, HIGHLIGHT_COLOUR, KINDS, MASKED_COLOUR, SERIES_COLOURS

HIGHLIGHT_WIDTH = 3  # pixels of the outline of the row in focus
MARKED_WIDTH = 5  # pixels of the outline of a marked cell (an exercise's answer): wider than a row's in focus
DARK_WEIGHT = 0.45  # weights below this are dark enough for white numbers: the purple-blue end of viridis
DARK_SHARE = 0.6  # signed values beyond this share of the largest |value| are dark enough for white numbers
TILE_CLASSES = ("skipped", "full", "partial")  # attn_core's TILE_SKIPPED, TILE_FULL, TILE_PARTIAL, by name
TILE_COLOURS = (MASKED_COLOUR, ALLOWED_COLOUR, HIGHLIGHT_COLOUR)  # hidden grey, visible blue, masked orange
TILE_MAP_SIDE = 320  # pixels of a tile map's plot on a scrolling page
TILE_BORDER = 1  # pixels of white between a tile map's tiles, and between query heads
HEAD_ROW_STEP = 40  # pixels of a layout's row of query heads


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
    sizes: CellSizes = PAGE_CELLS,
    legend_side: str = "bottom",
    highlight: int | None = None,
    marked: tuple[tuple[int, int], ...] = (),
) -> dict:
    """A matrix as coloured cells with every token labelled on both axes and values on hover, as a Vega-Lite spec.

    ``kind`` "mask" draws a boolean matrix as "allowed" / "blocked", "additive" a matrix of 0 and -inf as "0" / "−∞",
    in the same two colours. Otherwise ``-inf`` cells (masked scores) are drawn grey and labelled "masked". ``sizes``:
    how large its cells may be; ``legend_side``: "bottom" or "right". ``highlight`` outlines one row (e.g. the query
    at a generation step), ``marked`` the cells at these (row, column) positions (an exercise's answer).
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
    cell_width, cell_height = cell_steps(row_labels, col_labels, sizes)
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
    if marked:
        columns["marked"] = np.isin(rows * values.shape[1] + cols, [row * values.shape[1] + col for row, col in marked])
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
        "min_step": sizes.min_step,
        "numbers": numbers,
        "highlight": highlight is not None,
        "marked": bool(marked),
    }
    return compile_chart(_heatmap_chart, {"cells": pd.DataFrame(columns)}, **layout)


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
    marked: bool,
) -> alt.LayerChart:
    """``heatmap``'s chart: cells, with their ``numbers`` written on them, a ``highlight``ed row and ``marked`` cells
    outlined."""
    position = {
        "x": alt.X(field="col", type="ordinal", axis=label_axis(col_labels, col_title, cell_width, min_step=min_step)),
        "y": alt.Y(field="row", type="ordinal", axis=label_axis(row_labels, row_title, cell_height, True, min_step)),
    }
    names = {row_title: f"datum[{json.dumps(row_title)}]", col_title: f"datum[{json.dumps(col_title)}]"}
    cell = {"width": cell_width, "height": cell_height}
    if kind in CATEGORIES:
        tooltip = tooltip_expression(names | {"category": "datum.category"})
        layers = [layer(alt.Chart().mark_rect(**cell, tooltip=tooltip), position | {"color": matrix_colour(kind, legend_side)})]
    else:
        # One layer for every cell: a masked cell (value null) is kept ("invalid": "show") and drawn grey.
        colour = matrix_colour(kind, legend_side, grey_masked=True)
        tooltip = tooltip_expression(names | {"value": "datum.tip"})
        layers = [layer(alt.Chart().mark_rect(**cell, invalid="show", tooltip=tooltip), position | {"color": colour})]
    if numbers:
        text_colour = alt.ColorValue("black", condition={"test": "datum.dark", "value": "white"})
        # The number lies over its cell: hovering it shows the cell's tooltip, not Streamlit's default (row, col, text).
        text = {**position, "text": alt.Text(field="text"), "color": text_colour}
        layers.append(layer(alt.Chart().mark_text(tooltip=tooltip), text))
    if highlight:
        outline = alt.Chart().mark_rect(**cell, fill=None, stroke=HIGHLIGHT_COLOUR, strokeWidth=HIGHLIGHT_WIDTH, tooltip=tooltip)
        # The row is a field, so a new row changes only the data; its outline's tooltip is its cell's, like the number's.
        layers.append(layer(outline, position, "datum.highlight"))
    if marked:
        outline = alt.Chart().mark_rect(**cell, fill=None, stroke=HIGHLIGHT_COLOUR, strokeWidth=MARKED_WIDTH, tooltip=tooltip)
        layers.append(layer(outline, position, "datum.marked"))
    # Sized in steps: Streamlit's chart theme ignores a fixed width and height on band scales.
    size = {"width": alt.Step(cell_width), "height": alt.Step(cell_height)}
    # Its title is not cut (Vega-Lite cuts it at the cells' width): the chart is as wide as the cells, the row labels
    # left of them and a legend right of them, or as its title where that is wider (steps' blocks make room for it).
    limit = max(width_at(cell_width, list(row_labels), list(col_labels), legend_side, kind), title_width(title, subtitle))
    return alt.layer(*layers, **size, **_scale_params(kind), **about(f"heatmap: {title}", heading(title, subtitle, limit)))


def heatmap_grid(
    values: np.ndarray,
    row_labels: list[str],
    col_labels: list[str],
    *,
    panel_names: list[str],
    kind: str = "weights",
    max_width: int = MAX_WIDTH,
    max_panel: int = MAX_PANEL,
    min_panel: int = WRAPPED_PANEL,
    panel_title: str = "head",
    row_title: str = "query",
    col_title: str = "key",
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
    return compile_chart(
        _grid_chart, {"cells": cells}, panel_names=tuple(panel_names), kind=kind, panel=panel, columns=columns, **titles
    )


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
    tooltip = tooltip_expression(names | {"value": "format(datum.value, '.4f')"})
    # A panel's size in pixels rather than a step per token: the spec then does not depend on the number of tokens,
    # so that a new sentence changes only the data, which the browser updates in place.
    panel_chart = (
        alt.Chart(width=panel, height=panel)
        .mark_rect(tooltip=tooltip)
        .encode(
            x=alt.X(field="col", type="ordinal", axis=None),
            y=alt.Y(field="row", type="ordinal", axis=None),
            color=matrix_colour(kind),
        )
    )
    # No title over the panels: each panel's header names it ("head 2").
    facet = alt.Facet(field="panel", type="ordinal", title=None, header=_panel_header(panel_names))
    grid = about(f"heatmap grid: {title}", title)
    return panel_chart.facet(facet=facet, columns=columns, spacing=PANEL_SPACING, **_scale_params(kind), **grid)


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
    blocks = {"q_blocks": len(classes), "k_blocks": len(classes[0]), "block_q": block_q, "block_k": block_k}
    return compile_chart(_tile_map_chart, {"cells": cells}, **blocks, side=side, title=title)


def _tile_map_chart(q_blocks: int, k_blocks: int, block_q: int, block_k: int, side: int, title: str) -> alt.Chart:
    colour = alt.Color(
        "class:N",
        scale=alt.Scale(domain=list(TILE_CLASSES), range=list(TILE_COLOURS)),
        title=None,
        legend=alt.Legend(orient="bottom"),
    )
    return (
        # Sized in steps: Streamlit's chart theme ignores a fixed width and height on band scales.
        alt.Chart(
            **about(f"tile map: {title}", heading(title, (), title_width(title))),
            width=alt.Step(side / k_blocks),
            height=alt.Step(side / q_blocks),
        )
        .mark_rect(stroke="white", strokeWidth=TILE_BORDER)
        .encode(
            x=alt.X(
                "k_block:O", axis=alt.Axis(title="keys", labelExpr=f"datum.value * {block_k}", labelAngle=0, labelOverlap=True)
            ),
            y=alt.Y("q_block:O", axis=alt.Axis(title="queries", labelExpr=f"datum.value * {block_q}", labelOverlap=True)),
            color=colour,
            tooltip=["queries:N", "keys:N", "class:N"],
        )
    )


def head_groups(reads: dict[str, list[str]], *, plot_width: int = MAX_WIDTH, title: str = "") -> dict:
    """Which cached head each query head reads, a row of cells per layout: ``reads`` maps a layout's name to, for each
    query head in order, the name of the K/V head it reads ("0", "1", …, or "latent"); the query heads that share one
    are drawn in one colour, with its name in them where it fits. Its plot is at most ``plot_width`` pixels wide (not
    ``width``, which attn_ui.draw takes for the element's)."""
    layouts = list(reads)
    heads = len(next(iter(reads.values())))
    shared = [name for names in reads.values() for name in names]
    cells = pd.DataFrame(
        {
            "layout": np.repeat(np.arange(len(layouts)), heads),
            "head": np.tile(np.arange(heads), len(layouts)),
            "reads": shared,
            "row": np.repeat(layouts, heads),
        }
    )
    kv_names = tuple(dict.fromkeys(shared))  # in order of first use: K/V head 0, 1, … then the latent
    step = min(MAX_STEP, plot_width / heads)
    return compile_chart(
        _head_groups_chart, {"cells": cells}, layouts=tuple(layouts), kv_names=kv_names, heads=heads, step=step, title=title
    )


def _head_groups_chart(
    layouts: tuple[str, ...], kv_names: tuple[str, ...], heads: int, step: float, title: str
) -> alt.LayerChart:
    colours = [SERIES_COLOURS[i % len(SERIES_COLOURS)] for i in range(len(kv_names))]
    colour = alt.Color(field="reads", type="nominal", scale=alt.Scale(domain=list(kv_names), range=colours), legend=None)
    tooltip = tooltip_expression({"layout": "datum.row", "query head": "datum.head", "reads": "datum.reads"})
    encoding = {
        "x": alt.X(field="head", type="ordinal", axis=label_axis([str(h) for h in range(heads)], "query head", step, True)),
        "y": alt.Y(field="layout", type="ordinal", axis=label_axis(list(layouts), "", HEAD_ROW_STEP, True)),
    }
    cells = alt.Chart().mark_rect(stroke="white", strokeWidth=TILE_BORDER, tooltip=tooltip).encode(color=colour, **encoding)
    text = alt.Text(field="reads", type="nominal")
    names = alt.Chart().mark_text(color="black").encode(text=text, **encoding)  # 4.5:1 or more on every series colour
    shown = [cells] + ([names] if step >= NUMBER_STEP else [])
    size = {"width": alt.Step(step), "height": alt.Step(HEAD_ROW_STEP)}  # steps: Streamlit's theme ignores band sizes
    return alt.layer(*shown, **size, **about(f"head groups: {title}", title))


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


def _dark_cells(kind: str, values: np.ndarray) -> np.ndarray:
    """Where a cell's colour is dark enough for white numbers."""
    if kind == "weights":
        return values < DARK_WEIGHT
    finite = np.abs(values[np.isfinite(values)])
    bound = finite.max() if finite.size and finite.max() > 0 else 1.0
    return np.abs(values) > DARK_SHARE * bound


def _names(labels: list[str], positions: np.ndarray) -> pd.Categorical:
    """The label of each position, for the tooltip: a categorical (an Arrow dictionary), so that each distinct name
    is sent once and the browser computes no lookup per cell (4 per cell took a third of a 23,000-cell grid's redraw)."""
    return pd.Categorical(np.asarray(labels, dtype=object)[positions])


def _panel_header(labels: list[str]) -> alt.Header:
    """A facet header that shows ``labels`` for the panels' integer positions."""
    return alt.Header(labelExpr=f"{json.dumps(labels)}[datum.value]")
