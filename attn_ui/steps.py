"""Drawing one named step of a computation: its matrix, titled with its formula and shape."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler
from streamlit.delta_generator import DeltaGenerator
from torch import Tensor

from attn_core import AttentionSteps
from attn_ui import downloads, slide
from attn_ui.charts import (
    BAR_HEIGHT,
    LEGEND_HEIGHT,
    MAX_HEIGHT,
    MAX_STEP,
    MAX_WIDTH,
    PANEL_SPACING,
    SLIDE_MIN_STEP,
    WRAPPED_PANEL,
    CellSizes,
    bars,
    bars_width,
    cell_steps,
    heatmap,
    heatmap_frame,
    heatmap_grid,
    heatmap_width,
    is_index,
    labelled_lines,
    legend_width,
    title_width,
)
from attn_ui.charts.sizes import GRID_MARGIN, TEXT_LINE, short_label
from attn_ui.draw import draw
from attn_ui.export import unique_labels
from attn_ui.formula import plain_formula
from attn_ui.inputs import escape_markdown, keep_first_tokens

TABLE_UP_TO = 400  # cells; larger matrices are shown as heatmaps only
SCORE_WIDTH = 460  # pixels: scores, scaled scores and weights fit three in a row on a 1920-px-wide screen
MIN_BLOCK = 260  # pixels: the narrowest block a step is drawn in (room for its title and formula)
SLIDE_MAX_STEP = 160  # pixels per cell at most on a slide: a short sentence's matrix fills a full-HD screen
SLIDE_MAX_ASPECT = 1.5  # a slide's token-by-feature cells may be this much taller than wide, to fill its height
FIRST_TOKENS = 16  # a crowded slide offers at most this many of its sentence's first tokens, as many as fit
# Pixels a side of a grid's panel on a slide at least: panels are an overview without token labels (each cell's
# tooltip names its tokens), so 16 heads fit a 1024 × 576 slide; a head's own heatmap labels every token.
SLIDE_MIN_PANEL = 72
SLIDE_TERMS = 6  # terms of a context vector's weighted sum written on a slide: two lines of a 1024-px window
MAX_TABLE_BLOCKS = 4  # a slide's table in at most this many blocks side by side (attn_ui.steps.table)
METRIC_WIDTH = 200  # pixels of a column of metrics beside a row's charts (row's aside): their labels fit
MIN_CHART = 240  # pixels: the lowest bar or line chart on a slide, its title and labels included (a plot of 130)
# A heatmap's cells at the least a slide may draw them: every token at SLIDE_MIN_STEP, whatever the room.
SLIDE_LEAST = CellSizes(max_width=10**6, max_height=10**6, max_step=SLIDE_MIN_STEP, min_step=SLIDE_MIN_STEP)
THUMBNAILS_FRAME = 150  # pixels of head_thumbnails' height besides its panels: headers, labels, legend (measured 147)


@dataclass(frozen=True)
class Crowding:
    """A heatmap whose ``tokens`` do not fit a slide at SLIDE_MIN_STEP each, and how many of its first tokens would:
    ``fitting``."""

    tokens: int
    fitting: int


@dataclass(frozen=True)
class HeatmapFit:
    """How a heatmap is drawn in its room: its cells' ``sizes``, its legend's side, and its ``crowding`` where its
    tokens do not fit (None where they do)."""

    sizes: CellSizes
    legend_side: str = "bottom"
    crowding: Crowding | None = None


@dataclass
class Row:
    """A row of blocks being drawn (``row``): the ``room`` each block may take, and the heatmaps drawn in it whose
    tokens did not fit (``crowded``, said under the row once it is drawn)."""

    room: slide.Room | None
    crowded: list[Crowding] = field(default_factory=list)


def heatmap_size(
    room: slide.Room | None,
    row_labels: list[str],
    col_labels: list[str],
    title_lines: int,
    max_width: int = MAX_WIDTH,
    kind: str = "weights",
) -> HeatmapFit:
    """How a ``kind`` of heatmap is drawn in ``room``: on a slide, as large as the room allows, but never so small that
    a token's label would not fit (the slide then scrolls, and the fit says by how much: it needs splitting); on a wide
    window's scrolling page, as wide as its share of the row; elsewhere at most ``max_width`` wide."""
    if room is None or room.height is None:
        width = max(max_width, room.width if room else 0)
        return HeatmapFit(CellSizes(max_width=width, max_height=MAX_HEIGHT, max_step=MAX_STEP))
    # Features may be squeezed, tokens not: the cells' least height, and the chart's least width.
    readable = 0 if is_index(row_labels) else len(row_labels) * SLIDE_MIN_STEP
    readable_width = 0 if is_index(col_labels) else heatmap_width(row_labels, col_labels, SLIDE_LEAST)

    def fit(legend_side: str) -> tuple[tuple[bool, float], HeatmapFit]:
        """The fit with the legend on this side, ranked: whether the tokens' rows fit the room's height, then the side
        of a cell."""
        cells_height = room.height - heatmap_frame(col_labels, title_lines, legend_side)
        width = room.width - (legend_width(kind) if legend_side == "right" else 0)
        height = max(cells_height, readable)
        sizes = CellSizes(
            max_width=max(width, readable_width),
            max_height=height,
            max_step=SLIDE_MAX_STEP,
            max_aspect=SLIDE_MAX_ASPECT,
            compact_height=height,  # a W takes a slide's height as the other matrices do
            min_step=SLIDE_MIN_STEP,
        )
        cell = min(cell_steps(row_labels, col_labels, sizes))
        return (cells_height >= readable and width >= readable_width, cell), HeatmapFit(sizes, legend_side)

    (fits, _), best = max(fit("bottom"), fit("right"), key=lambda ranked: ranked[0])  # the legend where it costs least
    if fits:
        return best
    fitting = max(tokens_fitting(room, row_labels, col_labels, title_lines, side, kind) for side in ("bottom", "right"))
    return HeatmapFit(best.sizes, best.legend_side, Crowding(len(row_labels), fitting))


def tokens_fitting(
    room: slide.Room, row_labels: list[str], col_labels: list[str], title_lines: int, legend_side: str, kind: str
) -> int:
    """How many first tokens of a ``kind`` of heatmap's rows (and token columns) fit ``room`` at SLIDE_MIN_STEP each."""
    cells_height = room.height - heatmap_frame(col_labels, title_lines, legend_side)
    width = room.width - (legend_width(kind) if legend_side == "right" else 0)
    n = min(len(row_labels), int(cells_height // SLIDE_MIN_STEP))
    while n > 0:
        columns = col_labels if is_index(col_labels) else col_labels[:n]  # features stay; token columns are cut too
        if heatmap_width(row_labels[:n], columns, SLIDE_LEAST) <= width:
            break
        n -= 1
    return max(n, 0)


def formula_lines(room: slide.Room | None, formula: str, shape: str) -> tuple[str, ...]:
    """A matrix's formula and shape under its title: on one line on a slide, where that line fits the chart's
    ``room`` (a line of the slide's height goes to the cells instead), on two lines elsewhere."""
    one_line = f"{formula} · {shape}"
    if slide.on_slide(room) is not None and title_width("", (one_line,)) <= room.width:
        return (one_line,)
    return formula, shape


def note_slot() -> DeltaGenerator:
    """A place for notes that come and go above a section's charts (a message on an input, a caveat on a setting).
    Streamlit matches a run's elements to the page's by their place: a note inserted among the section's elements
    would move the charts below it, and a moved chart is drawn anew from its spec; in a slot of its own it moves
    nothing, and the charts keep their drawing, updated where only their data change."""
    return st.container()


@contextmanager
def row(count: int = 1, *, lines_above: int = 2, lines_below: int = 0, aside: int = 0) -> Iterator[Row]:
    """A row of ``count`` blocks (charts with their titles), and ``aside`` pixels for a last block beside them
    (metrics), that wraps to fewer per line when the main column is narrow; on a slide, they share its width and take
    its height, less its lead of ``lines_above`` lines (with any control above the row) and ``lines_below`` lines
    of text under the row (``attn_ui.slide.room``). Yields the Row that the blocks drawn in it are given."""
    drawn = Row(slide.room(count, lines_above, lines_below, aside))
    with st.container(horizontal=True, wrap=True, gap="medium"):
        yield drawn
    if drawn.crowded:  # said under the row, not squeezed
        say_crowded(drawn.crowded)


def say_crowded(crowded: list[Crowding]) -> None:
    """Under a row whose heatmaps' tokens do not fit the slide: how many, and a button that keeps as many first
    tokens of the sentence as every one of them fits."""
    st.caption(
        f"{max(c.tokens for c in crowded)} tokens do not fit this window at {SLIDE_MIN_STEP} px each: the slide scrolls. "
        "A larger window, or a shorter sentence in Controls, fits it on one screen."
    )
    offered = min(FIRST_TOKENS, *(c.fitting for c in crowded))
    if offered >= 2 and "text" in st.session_state:
        st.session_state[slide.OFFERS] += 1  # a key per crowded row of the run: page.setup sets it to 0 at its start
        st.button(
            f"Show the first {offered} tokens",
            key=f"first_tokens_{st.session_state[slide.OFFERS]}",
            on_click=keep_first_tokens,
            args=(offered,),
            help="Cuts the sentence (each sentence, in a batch) in Controls to the tokens this window fits.",
        )


def as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its labels and text cells escaped, for st.table, which renders each as Markdown: a token ">" or
    "#" would be an empty quote or heading, and "*" a bullet."""

    def escape(value: Any) -> Any:
        return escape_markdown(value) if isinstance(value, str) else value

    return frame.map(escape).rename(index=escape, columns=escape)


def table(frame: pd.DataFrame, lines_above: int = 2, lines_below: int = 0, hide_index: bool = False) -> None:
    """``st.table(frame)`` (give user text as_text); on a slide whose height does not hold its rows (under
    ``lines_above`` lines of lead, above ``lines_below``), its rows in blocks side by side, each with the header, as
    many to a block as the height holds: a 16-token sentence's rows in two blocks of 8 on a 1024 × 576 slide.
    ``hide_index``: no column of row labels."""
    room = slide.on_slide(slide.room(1, lines_above, lines_below))
    rows = 0 if room is None else int(room.height // (slide.TABLE_ROW_REM * slide.type_px())) - 1  # under the header
    blocks = 1 if room is None else min(MAX_TABLE_BLOCKS, math.ceil(len(frame) / max(rows, 1)))
    if blocks <= 1:
        st.table(frame, hide_index=hide_index)
        return
    per_block = math.ceil(len(frame) / blocks)
    for column, start in zip(st.columns(blocks), range(0, len(frame), per_block), strict=False):
        column.table(frame.iloc[start : start + per_block], hide_index=hide_index)


def dataframe(data: pd.DataFrame | Styler, hide_index: bool = False) -> None:
    """``st.dataframe(data)``; on a slide, as wide as the slide. The grid takes its width from the window before the
    slide's magnification (attn_ui.slide.zoom), so a slide magnified 1.125 times drew it past the screen's right edge."""
    room = slide.on_slide(slide.room(1))
    st.dataframe(data, width="stretch" if room is None else room.width, hide_index=hide_index)


def block(width: int) -> DeltaGenerator:
    """A block of ``width`` pixels in a row (narrower when its column is)."""
    return st.container(width=max(MIN_BLOCK, width))


def cell_text(value: float) -> str:
    """One number as the tables print it; masked (-inf) and undefined (NaN) cells by name."""
    if np.isneginf(value):
        return "−∞ (masked)"
    return "NaN" if np.isnan(value) else f"{value:.4f}"


def numbers_table(matrix: np.ndarray, row_labels: list[str], col_labels: list[str]) -> pd.DataFrame:
    """A matrix as text to 4 decimals, with token labels (made distinct) on rows and columns."""
    text = [[cell_text(value) for value in row] for row in np.asarray(matrix, dtype=float)]
    return pd.DataFrame(text, index=unique_labels(row_labels), columns=unique_labels(col_labels))


def matrix_step(
    row: Row,
    title: str,
    formula: str,
    tensor: Tensor,
    row_labels: list[str],
    col_labels: list[str],
    *,
    shape: tuple[int, ...] | None = None,
    kind: str = "signed",
    row_title: str = "token",
    col_title: str = "feature",
    max_width: int = MAX_WIDTH,
    highlight: int | None = None,
) -> None:
    """Heatmap of one matrix titled with its name, formula and shape, in a block of ``row`` as wide as it; its download
    menu; its numbers too when it is small. Title, formula and shape are part of the chart, so its images carry them.

    ``shape`` is the full tensor's shape when ``tensor`` is one slice of a batch; ``highlight`` outlines one row.
    Several steps of a row sit side by side as long as the column is wide enough.
    """
    exact = tensor.detach().cpu().numpy()
    matrix = exact.astype(np.float64)
    subtitle = formula_lines(row.room, plain_formula(formula), f"shape {tuple(shape or matrix.shape)}")
    fit = fitted(row, row_labels, col_labels, 1 + len(subtitle), max_width, kind)
    width = heatmap_width(row_labels, col_labels, fit.sizes, fit.legend_side, kind)
    with block(max(width, title_width(title, subtitle))):
        name = downloads.keep_matrix(title, exact, row_labels, col_labels)  # first: a lesson's reveal marks it (draw)
        draw(
            heatmap,
            matrix,
            row_labels,
            col_labels,
            kind=kind,
            row_title=row_title,
            col_title=col_title,
            title=title,
            subtitle=subtitle,
            highlight=highlight,
            sizes=fit.sizes,
            legend_side=fit.legend_side,
        )
        if slide.presenting():  # a slide shows the chart alone; the view's bundle has its numbers
            return
        with st.container(horizontal=True, gap="small"):
            downloads.download_menu(name, exact, row_labels, col_labels)
            if matrix.size <= TABLE_UP_TO and kind != "mask":
                # Made only while open (opening it reruns the page): a dozen tables took a fifth of every rerun.
                with st.expander("Numbers", key=f"numbers {name}", on_change="rerun") as numbers:
                    if numbers.open:
                        st.dataframe(numbers_table(matrix, row_labels, col_labels))


def projection_steps(
    weights: tuple[Tensor, Tensor, Tensor], row_labels: list[str], col_labels: list[str], head: int | None = None
) -> None:
    """W_Q, W_K and W_V, each (C, d), as heatmaps in a row; with ``head``, as that head's slices of them."""
    with row(len(weights)) as charts:
        for name, matrix in zip("QKV", weights, strict=True):
            if head is None:
                title, formula = f"W_{name}", rf"W_{name} \in \mathbb{{R}}^{{C \times d_k}}"
            else:
                title, formula = f"W_{name} of head {head}", rf"W_{name}^{{{head}}} \in \mathbb{{R}}^{{C \times C/h}}"
            matrix_step(
                charts, title, formula, matrix, row_labels, col_labels, row_title="input feature", col_title="output feature"
            )


def fitted(
    row: Row, row_labels: list[str], col_labels: list[str], title_lines: int, max_width: int = MAX_WIDTH, kind: str = "weights"
) -> HeatmapFit:
    """``heatmap_size`` in ``row``'s room; a heatmap whose tokens do not fit is added to the row's ``crowded``."""
    fit = heatmap_size(row.room, row_labels, col_labels, title_lines, max_width, kind)
    if fit.crowding is not None:
        row.crowded.append(fit.crowding)
    return fit


def heatmap_block(row: Row, values: np.ndarray, row_labels: list[str], col_labels: list[str], **options) -> None:
    """A heatmap (``options`` as for ``charts.heatmap``) in a block of ``row``, sized to hold every label; with a
    title, its values can be downloaded."""
    title, subtitle, kind = options.get("title"), options.get("subtitle", ()), options.get("kind", "weights")
    fit = fitted(row, row_labels, col_labels, 1 + len(subtitle) if title else 0, kind=kind)
    width = heatmap_width(row_labels, col_labels, fit.sizes, fit.legend_side, kind)
    with block(max(width, title_width(title or "", subtitle))):
        if title:
            name = downloads.keep_matrix(title, values, row_labels, col_labels)
            if not slide.presenting():
                downloads.download_menu(name, values, row_labels, col_labels)
        draw(heatmap, values, row_labels, col_labels, sizes=fit.sizes, legend_side=fit.legend_side, **options)


def grid_block(row: Row, values: np.ndarray, row_labels: list[str], col_labels: list[str], **options) -> None:
    """Small heatmaps side by side (``options`` as for ``charts.heatmap_grid``); on a slide, as large as the rows
    of panels it needs fit ``row``'s room."""
    room = slide.on_slide(row.room)
    if room is not None:
        panel = grid_panel(len(values), room.width, room.height)
        options |= {"max_width": room.width, "max_panel": panel, "min_panel": min(panel, WRAPPED_PANEL)}
    draw(heatmap_grid, values, row_labels, col_labels, **options)


def grid_panel(panels: int, width: int, height: int) -> int:
    """The largest panel (pixels a side, at least SLIDE_MIN_PANEL) with which ``panels`` panels, wrapped into rows as
    wide as ``width`` and each under its header, fit ``height`` with the grid's legend."""
    for panel in range(min(width, height), SLIDE_MIN_PANEL, -4):
        per_row = max(1, int((width - GRID_MARGIN) // (panel + PANEL_SPACING)))
        rows = -(-panels // per_row)
        if rows * (panel + PANEL_SPACING + TEXT_LINE) + LEGEND_HEIGHT <= height:
            return panel
    return SLIDE_MIN_PANEL


def thumbnails_size(room: slide.Room | None, layers: int) -> dict:
    """``charts.head_thumbnails``' size options: on a slide, a row of panels per layer as high as ``room`` allows."""
    room = slide.on_slide(room)
    if room is None:
        return {}
    return {"max_width": room.width, "max_panel": (room.height - THUMBNAILS_FRAME) // layers - PANEL_SPACING}


def score_steps(
    row: Row,
    steps: AttentionSteps,
    b: int,
    queries: list[str],
    keys: list[str],
    scale_text: str,
    shown: slice = slice(None),
    *,
    masked: bool = False,
    highlight: int | None = None,
    max_width: int = SCORE_WIDTH,
) -> None:
    """Scores, scaled scores and weights of batch item ``b``, or the ``shown`` slice of them, as blocks of ``row``
    (``steps`` may have a head dimension after the batch one: ``b`` then picks a (batch, head)
    pair, e.g. ``(0, 2)``). ``masked``: the scaled scores are titled as masked; ``highlight`` outlines a query's row."""
    scaled = (
        ("Scaled scores, masked", rf"S' = S \cdot {scale_text}, \; -\infty \text{{ where masked}}")
        if masked
        else (
            "Scaled scores",
            rf"S' = S \cdot {scale_text}",
        )
    )
    matrices = (
        ("Scores", r"S = Q K^\top", steps.scores, "signed"),
        (*scaled, steps.scaled, "signed"),
        ("Attention weights", r"A = \operatorname{softmax}_{\text{keys}}(S')", steps.weights, "weights"),
    )
    for title, formula, tensor, kind in matrices[shown]:
        matrix_step(
            row,
            title,
            formula,
            tensor[b],
            queries,
            keys,
            shape=tuple(tensor.shape),
            kind=kind,
            row_title="query",
            col_title="key",
            max_width=max_width,
            highlight=highlight,
        )


def bar_block(
    row: Row,
    values: Tensor,
    labels: list[str],
    *,
    value_title: str,
    title: str,
    label_title: str = "key",
    subtitle: tuple[str, ...] = (),
) -> None:
    """One value per token as bars, in a block of ``row``, every token labelled."""
    values = values.detach().cpu().double().numpy()
    chart_block(
        row,
        bars_width(labels),
        BAR_HEIGHT,
        bars,
        values,
        labels,
        value_title=value_title,
        label_title=label_title,
        title=title,
        subtitle=subtitle,
    )


def chart_block(row: Row, width: int, height: int | str, builder: Callable, *args: Any, **options: Any) -> None:
    """``builder(*args, **options)`` (a chart of ``attn_ui.charts``) in a block of ``row``: ``width`` pixels, or its
    whole column where that is narrower; ``height`` in pixels, or "content" for the chart's own. On a slide, a chart
    of a given height takes the row's room."""
    room = row.room
    drawn_width = "stretch"
    if room is not None and height != "content" and room.height is None:  # a wide window's scrolling page
        width = max(width, room.width)
    elif room is not None and height != "content":  # a slide; never so low that the plot is unreadable: it then scrolls
        width, height = room.width, max(room.height, MIN_CHART)
        drawn_width = width  # in pixels, as draw() needs on a magnified slide
    with block(width):
        draw(builder, *args, width=drawn_width, height=height, **options)


def labelled_lines_block(row: Row, *args: Any, **options: Any) -> None:
    """``charts.labelled_lines`` as wide as its column, at its own height; on a slide, with its legend at its right,
    as high as ``row``'s room (its legend under it would push the chart off the screen)."""
    if slide.on_slide(row.room) is None:
        chart_block(row, MAX_WIDTH, "content", labelled_lines, *args, **options)
    else:
        chart_block(row, MAX_WIDTH, MIN_CHART, labelled_lines, *args, legend_side="right", **options)


def feature_labels(n: int) -> list[str]:
    return [str(i) for i in range(n)]


def one_query_blocks(query: str, keys: list[str], scaled: Tensor, weights: Tensor, context: Tensor) -> None:
    """One query's row: its scaled scores and its weights over the keys as bars, and its context vector written out as
    the weighted sum of the values (on a slide, its SLIDE_TERMS largest terms and first entries: two lines)."""
    with row(2, lines_above=0, lines_below=5) as charts:  # its context vector below: a line, and two or three of the sum
        bar_block(charts, scaled, keys, value_title="scaled score", title=f"Scaled scores of “{query}”")
        bar_block(charts, weights, keys, value_title="weight", title=f"Attention weights of “{query}”")
    st.markdown(f"Context vector of **{escape_markdown(short_label(query))}**:")  # a token of any length: as the charts cut it
    short = slide.presenting()
    summary = weighted_sum(weights, keys, context, 4 if short else 8, SLIDE_TERMS if short else None)
    st.text(summary)  # plain text: st.code's highlighter costs a new tab a quarter of a second the first time it draws


def weighted_sum(weights: Tensor, tokens: list[str], context: Tensor, max_entries: int = 8, max_terms: int | None = None) -> str:
    """A context vector written out, e.g. ``0.51·v(Playing) + 0.49·v(Outside) = [0.3357, ...]``; with ``max_terms``,
    only that many of the largest weights' terms, in the sentence's order, and how many more there are. A token is cut
    to the charts' LABEL_LIMIT characters (a word of thousands would fill a slide)."""
    kept = range(len(tokens))
    if max_terms is not None and len(tokens) > max_terms:
        kept = sorted(np.argsort(-weights.numpy(), kind="stable")[:max_terms].tolist())
    terms = " + ".join(f"{float(weights[i]):.2f}·v({short_label(tokens[i])})" for i in kept)
    if len(kept) < len(tokens):
        terms += f" + … ({len(tokens) - len(kept)} more)"
    entries = [f"{float(c):.4f}" for c in context[:max_entries]]
    if len(context) > max_entries:
        entries.append(f"… {len(context) - max_entries} more")
    return f"{terms} = [{', '.join(entries)}]"
