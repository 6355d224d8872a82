"""The parts of a chart that builders share: an axis that labels tokens, a matrix's colours, a tooltip, a title, a
layer."""

from __future__ import annotations

import json

import altair as alt
import numpy as np

from attn_ui.charts.sizes import CHAR_WIDTH, MIN_STEP, longest_label, short_label
from attn_ui.charts.theme import ALLOWED_COLOUR, CATEGORIES, MASKED_COLOUR, TITLE_OFFSET


def label_axis(labels: list[str], title: str, step: float, horizontal: bool = False, min_step: float = MIN_STEP) -> alt.Axis:
    """An axis over integer positions that shows the tokens (duplicates stay distinct).

    Every label is drawn (no overlap removal) when a cell is at least ``min_step`` pixels; on a squeezed
    axis (hundreds of features) every k-th position is labelled instead, spaced ``min_step`` apart.
    Labels along x are written across when they fit their cell and upright (rotated -90°) otherwise.
    """
    names = json.dumps([short_label(label) for label in labels])
    every = max(1, int(np.ceil(min_step / max(step, 1))))
    fits_across = horizontal or longest_label(labels) * CHAR_WIDTH <= step
    return alt.Axis(
        title=title,
        labelExpr=f"{names}[datum.value]",
        labelAngle=0 if fits_across else -90,
        labelOverlap=False,
        values=list(range(0, len(labels), every)),
    )


def matrix_colour(kind: str, legend_side: str = "bottom", grey_masked: bool = False) -> alt.Color:
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


def tooltip_expression(entries: dict[str, str]) -> alt.ExprRef:
    """A mark's tooltip as one Vega expression, ``entries`` mapping each line's title to its value's expression.

    Vega-Lite's own tooltip wraps every field in three checks, and Streamlit's Vega evaluates expressions by
    interpreting them, cell by cell, on every redraw."""
    return alt.ExprRef("{" + ", ".join(f"{json.dumps(title)}: {value}" for title, value in entries.items()) + "}")


def heading(title: str, subtitle: tuple[str, ...], limit: int | alt.ExprRef | None = None) -> str | alt.Title:
    """A chart's title, with lines under it when there are any; ``limit``: its longest line in pixels (Vega-Lite
    otherwise cuts a title at the plot's width, though the title also spans the axis left of the plot)."""
    if not subtitle and (limit is None or not title):
        return title
    limited = {"limit": limit} if limit else {}
    return alt.Title(text=title, subtitle=list(subtitle), anchor="start", offset=TITLE_OFFSET, **limited)


def layer(mark: alt.Chart, encoding: dict, keep: str | None = None) -> alt.Chart:
    """One layer of a chart: a mark, its encoding, and the cells it keeps (a Vega expression)."""
    encoded = mark.encode(**encoding)
    return encoded.transform_filter(keep) if keep else encoded
