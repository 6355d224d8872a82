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
    cell = max(10, min(44, max_width // max(n_cols, 1)))  # pixels per cell
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
    if values.size <= NUMBERS_UP_TO:
        dark_cell = f"abs(datum.value) > {0.6 * bound}"  # white numbers on dark cells
        layers.append(
            base.mark_text(fontSize=11).encode(
                text="text:N", color=alt.condition(dark_cell, alt.value("white"), alt.value("black"))
            )
        )
    # Sized in steps: Streamlit's chart theme ignores a fixed width and height on band scales.
    return alt.layer(*layers).properties(title=title, width=alt.Step(cell), height=alt.Step(cell))


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
