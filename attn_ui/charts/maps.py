"""Vectors as points of a 2-D map, one domain on both axes: queries and keys joined by their weights, a rotary pair of
features turning with position, one word's path through a model's stages."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from attn_ui.charts.build import compile_chart
from attn_ui.charts.labels import PLACED_TEXT, labels_by_place, spot_columns
from attn_ui.charts.parts import heading
from attn_ui.charts.theme import ALLOWED_COLOUR, COLOURED_TEXT, HIGHLIGHT_COLOUR, PLAIN_TEXT, SERIES_COLOURS

ROLE_COLOURS = {"query": ALLOWED_COLOUR, "key": HIGHLIGHT_COLOUR}
MAP_MARGIN = 0.12  # of a map's span of values: the room its domain leaves on each side of its points
MAP_LINK_WIDTH = (0.5, 8)  # pixels of a query-key line at weight 0 and at weight 1
MAP_LINK_OPACITY = 0.6
MAP_TITLE_LIMIT = 640  # pixels: the longest line of a map's title, which may be wider than its plot
MAP_POINT_SIZE = 110  # square pixels of a query's or key's point (the DOT_RADIUS around it)
MAP_POINT_OPACITY = 0.9
PATH_POINT_SIZE = 70  # square pixels of a point of a word's path
CIRCLE_POINTS = 73  # points of the rotation circle's ring: one every 5 degrees, the last on the first
CIRCLE_ROOM = 1.25  # radii of the rotation circle's plot from the origin, each way
RING_DASH = (3, 3)  # pixels of the ring's dashes and gaps
ARROW_WIDTH = 3  # pixels of an arrow from the origin
POSITION_POINT_SIZE = 80  # square pixels of a position's point on the rotation circle
POSITION_LABEL_OFFSET = 9  # pixels of a position's label right of its point, and above it


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
    query, key, weight = (list(column) for column in zip(*links, strict=True)) if links else ([], [], [])
    segments = np.stack([points[query], points[[t + j for j in key]]], axis=1).reshape(-1, 2, 2)  # (links, 2, 2)
    dots = pd.DataFrame(
        {
            "x": points[:, 0],
            "y": points[:, 1],
            "token": tokens + tokens,
            "label": (labels := labels_by_place(points, tokens + tokens, roles, domain[1] - domain[0])),
            "role": roles,
            "position": list(range(t)) * 2,
            **spot_columns(points, labels, domain, side, segments),
        }
    )
    lines = pd.DataFrame(
        {
            "x": segments[:, 0, 0],
            "y": segments[:, 0, 1],
            "x2": segments[:, 1, 0],
            "y2": segments[:, 1, 1],
            "query": [tokens[i] for i in query],
            "key": [tokens[j] for j in key],
            "weight": np.asarray(weight, dtype=float),
        }
    )
    layout = {"domain": tuple(domain), "axis_titles": tuple(axis_titles), "legend_side": legend_side, "side": side}
    return compile_chart(_query_key_chart, {"points": dots, "links": lines}, **layout, title=title, subtitle=tuple(subtitle))


def _query_key_chart(
    domain: tuple[float, float],
    axis_titles: tuple[str, str],
    legend_side: str,
    side: int | None,
    title: str,
    subtitle: tuple[str, ...],
) -> alt.LayerChart:
    x, y = _axes(domain, axis_titles)
    colour = alt.Color(
        "role:N",
        title=None,
        scale=alt.Scale(domain=list(ROLE_COLOURS), range=list(ROLE_COLOURS.values())),
        legend=alt.Legend(orient=legend_side),
    )
    link_layer = (
        alt.Chart(alt.NamedData("links"))
        .mark_rule(color="grey", opacity=MAP_LINK_OPACITY)
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
        .mark_point(filled=True, size=MAP_POINT_SIZE, opacity=MAP_POINT_OPACITY)
        .encode(
            x=x,
            y=y,
            color=colour,
            shape=alt.Shape("role:N", scale=alt.Scale(domain=list(ROLE_COLOURS), range=["circle", "diamond"]), legend=None),
            tooltip=[alt.Tooltip("token:N"), alt.Tooltip("role:N"), alt.Tooltip("position:Q")],
        )
    )
    label_layer = (
        alt.Chart(alt.NamedData("points"), name=COLOURED_TEXT)  # each label in a shade of its role's colour
        .mark_text(**PLACED_TEXT)
        .encode(x=x, y=y, text="label:N", color=colour, tooltip=[alt.Tooltip("label:N"), alt.Tooltip("role:N")])
    )
    return _map([link_layer, dot_layer, label_layer], f"map: {title}", title, subtitle, side)


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
    angles = np.linspace(0, 2 * np.pi, CIRCLE_POINTS)
    circle = pd.DataFrame({"x": radius * np.cos(angles), "y": radius * np.sin(angles), "order": np.arange(CIRCLE_POINTS)})
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
    datasets = {"circle": circle, "positions": positions, "arrows": arrows}
    layout = {"domain": (-CIRCLE_ROOM * radius, CIRCLE_ROOM * radius), "legend_side": legend_side, "side": side}
    return compile_chart(_rotation_chart, datasets, **layout, title=title, subtitle=tuple(subtitle))


def _rotation_chart(
    domain: tuple[float, float], legend_side: str, side: int | None, title: str, subtitle: tuple[str, ...]
) -> alt.LayerChart:
    x, y = _axes(domain, ("feature 2i", "feature 2i+1"))
    ring = (
        alt.Chart(alt.NamedData("circle")).mark_line(color="grey", strokeDash=list(RING_DASH)).encode(x=x, y=y, order="order:Q")
    )
    arrow_colour = alt.Color(
        "arrow:N", title=None, scale=alt.Scale(range=["grey", HIGHLIGHT_COLOUR]), legend=alt.Legend(orient=legend_side)
    )
    arrow_layer = (
        alt.Chart(alt.NamedData("arrows"))
        .mark_rule(strokeWidth=ARROW_WIDTH)
        .encode(x=x, y=y, x2="x2:Q", y2="y2:Q", color=arrow_colour)
    )
    shown = alt.Chart(alt.NamedData("positions")).transform_filter("datum.shown")
    tooltip = [alt.Tooltip("position:Q", title="position m"), alt.Tooltip("angle:N", title="angle m·θ")]
    dots = shown.mark_point(filled=True, size=POSITION_POINT_SIZE, color=ALLOWED_COLOUR).encode(x=x, y=y, tooltip=tooltip)
    labels = (  # named in its constructor: .properties() would check the chart against the schema
        alt.Chart(alt.NamedData("positions"), name=PLAIN_TEXT)
        .transform_filter("datum.shown")
        .mark_text(dx=POSITION_LABEL_OFFSET, dy=-POSITION_LABEL_OFFSET)
        .encode(x=x, y=y, text="position:Q", tooltip=tooltip)
    )
    return _map([ring, arrow_layer, dots, labels], f"rotation: {title}", title, subtitle, side)


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
    # Each stage named once, on the first sentence's path: the paths start together (the word's own row of the
    # embedding table), so the others' stages follow in the same order, and labels on every path would stand side by
    # side where the paths run close ("5 5").
    labels = [stage.removeprefix("layer ") for stage in stages] + [""] * ((n - 1) * s)  # in the order of the rows below
    segments = np.stack([points[:, :-1], points[:, 1:]], axis=2).reshape(-1, 2, 2)  # (n·(s − 1), 2, 2): each path's steps
    cells = pd.DataFrame(
        {
            "x": points[..., 0].ravel(),
            "y": points[..., 1].ravel(),
            "sentence": np.asarray(sentences, dtype=object)[sentence_index],
            "stage": np.asarray(stages, dtype=object)[stage_index],
            "label": labels,
            "order": stage_index,
            **spot_columns(points.reshape(-1, 2), labels, domain, side, segments),
        }
    )
    layout = {"domain": tuple(domain), "sentences": tuple(sentences), "legend_side": legend_side, "side": side}
    return compile_chart(_word_path_chart, {"cells": cells}, **layout, title=title, subtitle=tuple(subtitle))


def _word_path_chart(
    domain: tuple[float, float],
    sentences: tuple[str, ...],
    legend_side: str,
    side: int | None,
    title: str,
    subtitle: tuple[str, ...],
) -> alt.LayerChart:
    x, y = _axes(domain, ("PC 1", "PC 2"))
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
    layers = [base.mark_line().encode(order="order:Q"), base.mark_point(filled=True, size=PATH_POINT_SIZE), labels]
    return _map(layers, f"paths: {title}", title, subtitle, side)


def _equal_domains(x: np.ndarray, y: np.ndarray) -> list[float]:
    """One domain for both axes of a map, so that a distance reads the same across and up, with a margin."""
    low, high = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
    pad = (high - low) * MAP_MARGIN or 1.0
    return [low - pad, high + pad]


def _axes(domain: tuple[float, float], titles: tuple[str, str]) -> tuple[alt.X, alt.Y]:
    """A map's x and y, titled ``titles``, over one ``domain``."""
    scale = alt.Scale(domain=list(domain), nice=False)
    return alt.X("x:Q", title=titles[0], scale=scale), alt.Y("y:Q", title=titles[1], scale=scale)


def _map(layers: list[alt.Chart], description: str, title: str, subtitle: tuple[str, ...], side: int | None) -> alt.LayerChart:
    """A map's layers, with its title and a ``description`` (for a screen reader): its plot ``side`` pixels across and up
    (its title, legend and axes around it: autosize "pad", where Streamlit would fit the whole chart into its element),
    so that with one domain on both axes a circle is drawn round and a distance reads the same across and up; else as
    wide and high as drawn. Given to the chart's constructor: ``.properties()`` would check each against the schema."""
    size = {} if side is None else {"width": side, "height": side, "autosize": alt.AutoSizeParams(type="pad")}
    return alt.layer(*layers, description=description, title=heading(title, subtitle, MAP_TITLE_LIMIT), **size)
