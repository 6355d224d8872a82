"""Every chart of the app, built with Altair in one place.

Colour conventions: a sequential scale for attention weights (0..1), a
diverging scale centred on 0 for scores and other signed values, and grey,
labelled cells for masked entries (never the colour of a big number).
"""

from __future__ import annotations

import json

import altair as alt
import numpy as np
import pandas as pd

MASKED_COLOUR = "#d9d9d9"
LABEL_LIMIT = 18  # characters of a token shown on an axis
NUMBERS_UP_TO = 144  # print values inside cells when a matrix has at most this many
NUMBER_WIDTH = 30  # pixels a cell needs to print its value legibly ("-0.07")
KINDS = ("weights", "signed")
BAR_HEIGHT = 240  # pixels
LINE_HEIGHT = 300  # pixels


def short_label(token: str) -> str:
    return token if len(token) <= LABEL_LIMIT else token[: LABEL_LIMIT - 1] + "…"


def _label_axis(labels: list[str], title: str) -> alt.Axis:
    """An axis over integer positions that shows the tokens (duplicates stay distinct)."""
    names = json.dumps([short_label(label) for label in labels])
    return alt.Axis(title=title, labelExpr=f"{names}[datum.value]", labelAngle=0 if len(labels) <= 12 else -45)


def _colour_bound(kind: str, values: np.ndarray) -> float:
    """The largest |value| the colour scale spans."""
    if kind == "weights":
        return 1.0
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def _colour_scale(kind: str, bound: float) -> alt.Scale:
    if kind == "weights":
        return alt.Scale(scheme="blues", domain=[0, 1])
    return alt.Scale(scheme="redblue", reverse=True, domain=[-bound, bound], domainMid=0)


def _cell_sizes(n_rows: int, n_cols: int, max_width: int, max_height: int) -> tuple[int, int]:
    """Pixels per cell (width, height): square, 10 to 44 pixels, or thinner along a side that would
    otherwise pass its limit (a 384-feature row of a real model)."""
    side = max(10, min(44, max_width // max(n_cols, 1)))
    width = side if n_cols * side <= max_width else max(1, max_width // n_cols)
    height = side if n_rows * side <= max_height else max(1, max_height // n_rows)
    return width, height


def heatmap(
    values: np.ndarray,
    row_labels: list[str],
    col_labels: list[str],
    *,
    kind: str = "weights",
    row_title: str = "query",
    col_title: str = "key",
    title: str = "",
    max_width: int = 640,
    max_height: int = 800,
) -> alt.LayerChart:
    """A matrix as coloured cells with token labels on both axes and values on hover.

    ``-inf`` cells (masked scores) are drawn grey and labelled "masked".
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    values = np.asarray(values, dtype=float)
    n_rows, n_cols = values.shape
    rows, cols = np.indices(values.shape, dtype=np.int32)  # int32: Arrow's int64 reaches Vega as BigInt
    masked = np.isneginf(values)
    data = pd.DataFrame(
        {
            "row": rows.ravel(),
            "col": cols.ravel(),
            row_title: [row_labels[i] for i in rows.ravel()],
            col_title: [col_labels[j] for j in cols.ravel()],
            "value": np.where(masked, np.nan, values).ravel(),
            "masked": masked.ravel(),
            "text": np.where(masked, "−∞", np.char.mod("%.2f", np.where(masked, 0, values))).ravel(),
        }
    )
    cell_width, cell_height = _cell_sizes(n_rows, n_cols, max_width, max_height)
    bound = _colour_bound(kind, values)
    base = alt.Chart(data).encode(
        x=alt.X("col:O", axis=_label_axis(col_labels, col_title)),
        y=alt.Y("row:O", axis=_label_axis(row_labels, row_title)),
    )
    tooltip = [row_title, col_title, alt.Tooltip("value:Q", format=".4f")]
    cells = (
        base.transform_filter("!datum.masked")
        .mark_rect()
        .encode(
            color=alt.Color(
                "value:Q",
                scale=_colour_scale(kind, bound),
                title=None,
                legend=alt.Legend(orient="bottom", direction="horizontal"),
            ),
            tooltip=tooltip,
        )
    )
    masked_cells = (
        base.transform_filter("datum.masked")
        .mark_rect(color=MASKED_COLOUR)
        .encode(tooltip=[row_title, col_title, alt.Tooltip("text:N", title="masked")])
    )
    layers = [cells, masked_cells]
    if values.size <= NUMBERS_UP_TO and cell_width >= NUMBER_WIDTH:
        dark_cell = f"abs(datum.value) > {0.6 * bound}"  # white numbers on dark cells
        layers.append(
            base.mark_text(fontSize=11).encode(
                text="text:N", color=alt.condition(dark_cell, alt.value("white"), alt.value("black"))
            )
        )
    # Sized in steps: Streamlit's chart theme ignores a fixed width and height on band scales.
    return alt.layer(*layers).properties(title=title, width=alt.Step(cell_width), height=alt.Step(cell_height))


def bars(values: np.ndarray, labels: list[str], *, value_title: str, label_title: str = "key", title: str = "") -> alt.Chart:
    """One value per token as bars (e.g. a query's weights over the keys).

    Draw it with an explicit height: ``st.altair_chart(chart, height=BAR_HEIGHT)``.
    """
    positions = np.arange(len(labels), dtype=np.int32)
    data = pd.DataFrame({"position": positions, label_title: labels, value_title: np.asarray(values, dtype=float)})
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("position:O", axis=_label_axis(labels, label_title)),
            y=alt.Y(f"{value_title}:Q"),
            tooltip=[label_title, alt.Tooltip(f"{value_title}:Q", format=".4f")],
        )
        .properties(title=title)
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
) -> alt.LayerChart:
    """Curves of y against x, one colour per series of ``measured``.

    Without ``theory`` the measured series are lines with points. With it, measured values are
    points and each theory curve (keyed like the measured series it predicts) a dashed line of
    the same colour. ``marker`` draws a vertical rule at that x. A log x axis is in base 2 with
    a tick at every x (e.g. d_k = 1, 2, 4 ... 1024). Column names must not contain quotes.
    Draw it with an explicit height: ``st.altair_chart(chart, height=LINE_HEIGHT)``.
    """
    frames = [
        pd.DataFrame({x_title: np.asarray(x, dtype=float), y_title: np.asarray(y, dtype=float), "series": name, "source": source})
        for source, curves in (("measured", measured), ("theory", theory or {}))
        for name, y in curves.items()
    ]
    data = pd.concat(frames, ignore_index=True)
    x_scale = alt.Scale(type="log", base=2) if log_x else alt.Scale()
    x_axis = alt.Axis(values=[float(value) for value in x]) if log_x else alt.Axis()
    base = alt.Chart(data).encode(
        x=alt.X(f"{x_title}:Q", scale=x_scale, axis=x_axis),
        y=alt.Y(f"{y_title}:Q", scale=alt.Scale(type="log") if log_y else alt.Scale()),
        color=alt.Color(
            "series:N", title=None, sort=list(measured), scale=alt.Scale(scheme="tableau10"), legend=alt.Legend(orient="top")
        ),
        tooltip=["series", "source", alt.Tooltip(f"{x_title}:Q", format="g"), alt.Tooltip(f"{y_title}:Q", format=".4g")],
    )
    points = base.transform_filter("datum.source == 'measured'").mark_point(filled=True, size=40)
    if theory:
        layers = [base.transform_filter("datum.source == 'theory'").mark_line(strokeDash=[6, 4]), points]
    else:
        layers = [base.mark_line(), points]
    if marker is not None:
        rule = alt.Chart(pd.DataFrame({x_title: [float(marker)]})).mark_rule(color="grey", strokeDash=[2, 2])
        layers.append(rule.encode(x=f"{x_title}:Q"))
    return alt.layer(*layers).properties(title=title)


def heatmap_grid(
    values: np.ndarray,
    row_labels: list[str],
    col_labels: list[str],
    *,
    panel_rows: list[str],
    panel_cols: list[str],
    panel_row_title: str = "layer",
    panel_col_title: str = "head",
    row_title: str = "query",
    col_title: str = "key",
    kind: str = "weights",
    panel_size: int = 72,
    title: str = "",
) -> alt.FacetChart:
    """Small heatmaps side by side, e.g. every head of every layer: ``values`` is
    (panel rows, panel columns, rows, columns) and panel (i, j) draws ``values[i, j]``.

    Each panel is at most ``panel_size`` pixels wide; hovering a cell names its panel, tokens and value.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    values = np.asarray(values, dtype=float)
    n_rows, n_cols = values.shape[2:]
    panel_i, panel_j, rows, cols = (index.ravel() for index in np.indices(values.shape, dtype=np.int32))
    data = pd.DataFrame(
        {
            panel_row_title: [panel_rows[i] for i in panel_i],
            panel_col_title: [panel_cols[j] for j in panel_j],
            "panel_row": panel_i,
            "panel_col": panel_j,
            "row": rows,
            "col": cols,
            row_title: [row_labels[i] for i in rows],
            col_title: [col_labels[j] for j in cols],
            "value": values.ravel(),
        }
    )
    cell = max(1, panel_size // max(n_rows, n_cols, 1))
    return (
        alt.Chart(data)
        .mark_rect()
        .encode(
            x=alt.X("col:O", axis=None),
            y=alt.Y("row:O", axis=None),
            color=alt.Color("value:Q", scale=_colour_scale(kind, _colour_bound(kind, values)), title=kind),
            tooltip=[panel_row_title, panel_col_title, row_title, col_title, alt.Tooltip("value:Q", format=".4f")],
        )
        .properties(width=alt.Step(cell), height=alt.Step(cell))
        .facet(
            row=alt.Row("panel_row:O", title=panel_row_title, header=_panel_header(panel_rows)),
            column=alt.Column("panel_col:O", title=panel_col_title, header=_panel_header(panel_cols)),
            spacing=4,
            title=title,
        )
    )


def _panel_header(labels: list[str]) -> alt.Header:
    """A facet header that shows ``labels`` for the panels' integer positions."""
    return alt.Header(labelExpr=f"{json.dumps(labels)}[datum.value]", labelFontSize=11, titleFontSize=12)


def labelled_lines(
    values: np.ndarray,
    series: list[str],
    points: list[str],
    *,
    value_title: str,
    point_title: str,
    series_title: str,
    title: str = "",
) -> alt.Chart:
    """One line per series over ordered points, e.g. a similarity per layer for each pair of sentences:
    ``values`` is (series, points).

    Draw it with an explicit height: ``st.altair_chart(chart, height=BAR_HEIGHT)``.
    """
    values = np.asarray(values, dtype=float)
    series_index, point_index = (index.ravel() for index in np.indices(values.shape, dtype=np.int32))
    data = pd.DataFrame(
        {
            "position": point_index,
            point_title: [points[j] for j in point_index],
            series_title: [series[i] for i in series_index],
            value_title: values.ravel(),
        }
    )
    return (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("position:O", axis=_label_axis(points, point_title)),
            y=alt.Y(f"{value_title}:Q", scale=alt.Scale(zero=False)),
            color=alt.Color(f"{series_title}:N", legend=alt.Legend(orient="bottom", labelLimit=400)),
            tooltip=[series_title, point_title, alt.Tooltip(f"{value_title}:Q", format=".4f")],
        )
        .properties(title=title)
    )


def series_lines(
    series: dict[str, tuple[np.ndarray, np.ndarray]],
    *,
    x_title: str,
    y_title: str,
    log_x: bool = False,
    log_y: bool = False,
    title: str = "",
) -> alt.LayerChart:
    """Lines with points, one colour per series, each series with its own x values: ``series`` maps
    a name to (x, y), so one series may stop before another (e.g. a method refused at long lengths).

    A log x axis is in base 2 with a tick at every x. Column names must not contain quotes.
    Draw it with an explicit height: ``st.altair_chart(chart, height=LINE_HEIGHT)``.
    """
    frames = [
        pd.DataFrame({x_title: np.asarray(x, dtype=float), y_title: np.asarray(y, dtype=float), "series": name})
        for name, (x, y) in series.items()
    ]
    data = pd.concat(frames, ignore_index=True)
    ticks = sorted(set(data[x_title]))
    base = alt.Chart(data).encode(
        x=alt.X(
            f"{x_title}:Q",
            scale=alt.Scale(type="log", base=2) if log_x else alt.Scale(),
            axis=alt.Axis(values=ticks) if log_x else alt.Axis(),
        ),
        y=alt.Y(f"{y_title}:Q", scale=alt.Scale(type="log") if log_y else alt.Scale()),
        color=alt.Color(
            "series:N",
            title=None,
            sort=list(series),
            scale=alt.Scale(scheme="tableau10"),
            legend=alt.Legend(orient="top", labelLimit=400),
        ),
        tooltip=["series", alt.Tooltip(f"{x_title}:Q", format=","), alt.Tooltip(f"{y_title}:Q", format=".4g")],
    )
    return alt.layer(base.mark_line(), base.mark_point(filled=True, size=40)).properties(title=title)
