"""Values along an axis: bars, one per token, and lines, one per series, against a number (d_k, T) or through
ordered points (stages, layers)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from attn_ui.charts.build import about, compile_chart
from attn_ui.charts.parts import heading, label_axis, layer
from attn_ui.charts.sizes import MIN_STEP, PLOT_HEIGHT, VALUE_AXIS_ROOM
from attn_ui.charts.theme import HIGHLIGHT_COLOUR, SERIES_COLOURS, SERIES_SHAPES

# A title over a line or bar chart spans its plot and the value axis left of it (Vega-Lite cuts it at the plot's width).
OVER_PLOT_AND_AXIS = alt.ExprRef(f"width + {VALUE_AXIS_ROOM}")
POINT_SIZE = 60  # square pixels of a series' point
THEORY_DASH = (6, 4)  # pixels of a theory curve's dashes and gaps
MARKER_DASH = (2, 2)  # pixels of a marker rule's dashes and gaps
RING_SIZE = 6 * POINT_SIZE  # square pixels of the ring around a marked point (an exercise's answer)
RING_WIDTH = 3  # pixels of its stroke, and of a marked bar's outline
POINT_STEP = 2 * MIN_STEP  # pixels per point of a labelled_lines chart: a label is written across where it fits
MAX_LOG_TICKS = 8  # ticks of a log x axis, a tick at every x: at most, else at every other x
SERIES_LEGEND = alt.Legend(orient="top", columns=2)


def bars(
    values: np.ndarray,
    labels: list[str],
    *,
    value_title: str,
    label_title: str = "key",
    title: str = "",
    subtitle: tuple[str, ...] = (),
    marked: tuple[int, ...] = (),
) -> dict:
    """One value per token as bars (e.g. a query's weights over the keys), every token labelled; ``subtitle``: lines
    under the title; ``marked``: the positions of bars outlined (an exercise's answer).

    Draw it in a block ``bars_width(labels)`` wide, BAR_HEIGHT high (``steps.bar_block``).
    """
    positions = np.arange(len(labels))
    cells = pd.DataFrame({"position": positions, label_title: labels, value_title: np.asarray(values, dtype=float)})
    cells["marked"] = np.isin(positions, marked)
    layout = {"labels": tuple(labels), "value_title": value_title, "label_title": label_title, "marked": bool(marked)}
    return compile_chart(_bars_chart, {"cells": cells}, **layout, title=title, subtitle=tuple(subtitle))


def _bars_chart(
    labels: tuple[str, ...], value_title: str, label_title: str, marked: bool, title: str, subtitle: tuple[str, ...]
) -> alt.LayerChart:
    encoding = {
        "x": alt.X(field="position", type="ordinal", axis=label_axis(labels, label_title, MIN_STEP)),
        "y": alt.Y(field=value_title, type="quantitative"),
        "tooltip": [
            alt.Tooltip(field=label_title, type="nominal"),
            alt.Tooltip(field=value_title, type="quantitative", format=".4f"),
        ],
    }
    layers = [layer(alt.Chart().mark_bar(), encoding)]
    if marked:
        outline = alt.Chart().mark_bar(fillOpacity=0, stroke=HIGHLIGHT_COLOUR, strokeWidth=RING_WIDTH)
        layers.append(layer(outline, encoding, "datum.marked"))
    return alt.layer(*layers, **about(f"bars: {title}", heading(title, subtitle, OVER_PLOT_AND_AXIS)))


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
    x_ticks: tuple[float, ...] = (),
    marked: tuple[tuple[str, int], ...] = (),
) -> dict:
    """Curves of y against x, one colour per series of ``measured``.

    Without ``theory`` the measured series are lines with points (``points=False``: lines alone, for long series).
    With it, measured values are points and each theory curve (keyed like the measured series it predicts) a dashed
    line of the same colour. ``marker`` draws a vertical rule at that x (a row of the data, so that moving it changes
    only the data). A log x axis is in base 2 with a tick at every x (e.g. d_k = 1, 2, 4 ... 1024), or at ``x_ticks``
    where given (x values that are not round numbers: 0.1, 1, 10 on an axis of 17 temperatures). ``marked``: points
    ringed (an exercise's answer), each a measured series' name and a position in ``x``.
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
    if marked:
        rings = [(float(np.asarray(x)[at]), float(np.asarray(measured[name])[at])) for name, at in marked]
        frames.append(pd.DataFrame(rings, columns=[x_title, y_title]).assign(source="marked"))
    cells = pd.concat(frames, ignore_index=True)
    layout = {
        "x_title": x_title,
        "y_title": y_title,
        "x_ticks": tuple(x_ticks) or tuple(sorted(set(np.asarray(x, dtype=float)))),
        "log_x": log_x,
        "log_y": log_y,
        "names": tuple(measured),
        "theory": bool(theory),
        "marker": marker is not None,
        "marked": bool(marked),
        "points": points,
        "title": title,
    }
    return compile_chart(_lines_chart, {"cells": cells}, **layout)


def _lines_chart(
    x_title: str,
    y_title: str,
    x_ticks: tuple[float, ...],
    log_x: bool,
    log_y: bool,
    names: tuple[str, ...],
    theory: bool,
    marker: bool,
    marked: bool,
    points: bool,
    title: str,
) -> alt.LayerChart:
    tooltip = [
        alt.Tooltip(field="series", type="nominal"),
        alt.Tooltip(field="source", type="nominal"),
        alt.Tooltip(field=x_title, type="quantitative", format="g"),
        alt.Tooltip(field=y_title, type="quantitative", format=".4g"),
    ]
    encoding = _series_position(x_title, y_title, x_ticks, log_x, log_y, names) | {"tooltip": tooltip}
    dots = layer(
        alt.Chart().mark_point(filled=True, size=POINT_SIZE),
        encoding | {"shape": _series_shape(names)},
        "datum.source == 'measured'",
    )
    if theory:
        layers = [layer(alt.Chart().mark_line(strokeDash=list(THEORY_DASH)), encoding, "datum.source == 'theory'"), dots]
    else:
        layers = [layer(alt.Chart().mark_line(), encoding, "datum.source == 'measured'"), *([dots] if points else [])]
    if marker:
        rule = alt.Chart().mark_rule(color="grey", strokeDash=list(MARKER_DASH))
        layers.append(layer(rule, {"x": alt.X(field=x_title, type="quantitative")}, "datum.source == 'marker'"))
    if marked:
        layers.append(_rings(encoding))
    return alt.layer(*layers, **about(f"lines: {title}", heading(title, (), OVER_PLOT_AND_AXIS)))


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
    return compile_chart(_labelled_lines_chart, {"cells": cells}, points=tuple(points), **titles, legend_side=legend_side)


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
        alt.Chart(**size, **about(f"lines: {title}", heading(title, (), OVER_PLOT_AND_AXIS)))
        .mark_line(point=True)
        .encode(
            x=alt.X(field="position", type="ordinal", axis=label_axis(points, point_title, POINT_STEP)),
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
    marked: tuple[tuple[str, int], ...] = (),
) -> dict:
    """Lines with points, one colour per series, each series with its own x values: ``series`` maps
    a name to (x, y), so one series may stop before another (e.g. a method refused at long lengths). ``marked``:
    points ringed (an exercise's answer), each a series' name and a position in its x.

    A log x axis is in base 2 with a tick at every x. Column names must not contain quotes or dots.
    Draw it with an explicit height: ``steps.chart_block(width, LINE_HEIGHT, series_lines, ...)``.
    """
    frames = [
        pd.DataFrame({x_title: np.asarray(x, dtype=float), y_title: np.asarray(y, dtype=float), "series": name})
        for name, (x, y) in series.items()
    ]
    ticks = tuple(sorted(set(pd.concat(frames)[x_title])))
    if marked:
        rings = [(float(np.asarray(series[name][0])[at]), float(np.asarray(series[name][1])[at])) for name, at in marked]
        frames.append(pd.DataFrame(rings, columns=[x_title, y_title]).assign(series="marked"))
    cells = pd.concat(frames, ignore_index=True)
    layout = {"x_title": x_title, "y_title": y_title, "x_ticks": ticks, "log_x": log_x, "marked": bool(marked)}
    return compile_chart(_series_lines_chart, {"cells": cells}, **layout, log_y=log_y, names=tuple(series), title=title)


def _series_lines_chart(
    x_title: str,
    y_title: str,
    x_ticks: tuple[float, ...],
    log_x: bool,
    marked: bool,
    log_y: bool,
    names: tuple[str, ...],
    title: str,
) -> alt.LayerChart:
    tooltip = [
        alt.Tooltip(field="series", type="nominal"),
        alt.Tooltip(field=x_title, type="quantitative", format=","),
        alt.Tooltip(field=y_title, type="quantitative", format=".4g"),
    ]
    encoding = _series_position(x_title, y_title, x_ticks, log_x, log_y, names) | {"tooltip": tooltip}
    measured = "datum.series != 'marked'"
    dots = layer(alt.Chart().mark_point(filled=True, size=POINT_SIZE), encoding | {"shape": _series_shape(names)}, measured)
    layers = [layer(alt.Chart().mark_line(), encoding, measured), dots]
    if marked:
        layers.append(_rings(encoding))
    return alt.layer(*layers, **about(f"lines: {title}", heading(title, (), OVER_PLOT_AND_AXIS)))


def _rings(encoding: dict) -> alt.Chart:
    """Rings around the marked points (rows of source or series "marked"), in the highlight colour."""
    ring = alt.Chart().mark_point(filled=False, size=RING_SIZE, strokeWidth=RING_WIDTH, color=HIGHLIGHT_COLOUR)
    marked = "datum.source == 'marked' || datum.series == 'marked'"
    return layer(ring, {"x": encoding["x"], "y": encoding["y"]}, marked)


def _series_position(
    x_title: str, y_title: str, x_ticks: tuple[float, ...], log_x: bool, log_y: bool, names: tuple[str, ...]
) -> dict:
    """A chart of series' x and y, each on a log axis where asked, and its colour: one per series of ``names``."""
    return {"x": _x_encoding(x_title, x_ticks, log_x), "y": _y_encoding(y_title, log_y), "color": _series_colour(names)}


def _x_encoding(x_title: str, ticks: tuple[float, ...], log_x: bool) -> alt.X:
    """A quantitative x; on a log axis (base 2) a tick at every x, every other one when they would crowd."""
    if not log_x:
        return alt.X(field=x_title, type="quantitative")
    shown = list(ticks if len(ticks) <= MAX_LOG_TICKS else ticks[::2])
    axis = alt.Axis(values=shown, labelOverlap=False)
    scale = alt.Scale(type="log", base=2, nice=False)  # the data's span, not the powers of two around it
    return alt.X(field=x_title, type="quantitative", scale=scale, axis=axis)


# A log y axis labels its powers of ten only (its domain is rounded out to them): Vega ticks 1 to 9 in each decade,
# and of their labels Vega hides those that would overlap, which leaves an uneven few (0.01, 0.03, 0.2, 1, 3).
POWERS_OF_TEN = "abs(log(datum.value) / LN10 - round(log(datum.value) / LN10)) < 1e-6 ? datum.label : ''"


def _y_encoding(y_title: str, log_y: bool) -> alt.Y:
    if not log_y:
        return alt.Y(field=y_title, type="quantitative")
    return alt.Y(field=y_title, type="quantitative", scale=alt.Scale(type="log"), axis=alt.Axis(labelExpr=POWERS_OF_TEN))


def _series_colour(names: tuple[str, ...]) -> alt.Color:
    scale = alt.Scale(domain=list(names), range=list(SERIES_COLOURS))
    return alt.Color(field="series", type="nominal", title=None, sort=list(names), scale=scale, legend=SERIES_LEGEND)


def _series_shape(names: tuple[str, ...]) -> alt.Shape:
    scale = alt.Scale(domain=list(names), range=list(SERIES_SHAPES))
    return alt.Shape(field="series", type="nominal", title=None, sort=list(names), scale=scale, legend=SERIES_LEGEND)
