"""A map's labels: one where points share a place, each put around its point where it covers no other label, no
point, and stays inside the plot (Vega-Lite places no labels itself)."""

from __future__ import annotations

import numpy as np

from attn_ui.charts.sizes import CHAR_WIDTH

SAME_PLACE = 0.01  # of a map's domain: points nearer than this (on both axes) share one label
LABEL_HEIGHT = 16  # pixels of a map label's box: CELL_FONT_SIZE and a little room (its letters are about 13 px high)
DOT_RADIUS = 6  # pixels around a map's point that its marker covers
LINE_STEP = 6  # pixels between the spots of a map's line that a label should not cover (each a 4-px box)
CROWD_RADIUS = 40  # pixels: a map's points nearer than this to many others have their labels placed first
# Where a map's label may go around its point, in order of preference: the text's anchor (dx, dy) from the point, in
# pixels, and the side of the text it is on (baseline "middle"): up and right, down and right, up and left ...
LABEL_SPOTS = ((7, -8, "left"), (7, 8, "left"), (-7, -8, "right"), (-7, 8, "right"), (10, 0, "left"), (-10, 0, "right"),
               (0, -14, "center"), (0, 14, "center"), (4, -24, "left"), (4, 24, "left"), (-4, -24, "right"),
               (-4, 24, "right"))  # fmt: skip
# A map's labels, each written at its own spot (label_spots), read from its row of the data.
PLACED_TEXT = {"align": {"expr": "datum.align"}, "dx": {"expr": "datum.dx"}, "dy": {"expr": "datum.dy"}, "baseline": "middle"}


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


def label_spots(
    points: np.ndarray, labels: list[str], domain: list[float], side: float, lines: np.ndarray | None = None
) -> list[tuple[int, int, str]]:
    """For each of a map's labels, its spot around its point (one of LABEL_SPOTS): the first that overlaps neither the
    labels placed before it, any point nor any of ``lines`` and stays inside the plot, else the one that covers least
    of them; the labels of crowded points are placed first, while they have most room (Vega-Lite places no labels
    itself). ``points`` (n, 2) and ``lines`` (m, 2, 2), segments from one point to another, in the map's units, on a
    ``side`` × ``side`` px plot over ``domain`` on both axes; an empty label keeps the first spot."""
    scale = side / (domain[1] - domain[0])
    anchors = _pixels(points, domain, scale)  # (n, 2) px from top left
    dots = np.concatenate([anchors - DOT_RADIUS, anchors + DOT_RADIUS], axis=1)  # (n, 4) boxes: left, top, right, bottom
    if lines is not None and len(lines):
        dots = np.concatenate([dots, _line_boxes(_pixels(lines.reshape(-1, 2), domain, scale).reshape(-1, 2, 2))])
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
        others = np.concatenate([placed, dots[:i], dots[i + 1 :]])  # its own point's box left out
        off_plot = width * LABEL_HEIGHT - _shared_area(boxes, plot)  # (s,)
        best = int(np.argmin(_shared_area(boxes, others) + off_plot))  # the first of equals
        spots[i] = LABEL_SPOTS[best]
        placed = np.concatenate([placed, boxes[best : best + 1]])
    return spots


def spot_columns(
    points: np.ndarray, labels: list[str], domain: list[float], side: int | None, lines: np.ndarray | None = None
) -> dict[str, list]:
    """A map's label spots (label_spots) as the columns PLACED_TEXT reads; the first spot for all on a plot of no set side."""
    spots = label_spots(points, labels, domain, side, lines) if side else [LABEL_SPOTS[0]] * len(labels)
    return dict(zip(("dx", "dy", "align"), (list(column) for column in zip(*spots, strict=True)), strict=True))


def _shared_area(boxes: np.ndarray, others: np.ndarray) -> np.ndarray:
    """For each of ``boxes`` (k, 4), the area it shares with ``others`` (m, 4), in all; boxes as left, top, right, bottom."""
    across = np.minimum(boxes[:, None, 2], others[None, :, 2]) - np.maximum(boxes[:, None, 0], others[None, :, 0])  # (k, m)
    down = np.minimum(boxes[:, None, 3], others[None, :, 3]) - np.maximum(boxes[:, None, 1], others[None, :, 1])  # (k, m)
    return (across.clip(min=0) * down.clip(min=0)).sum(axis=1)  # (k,)


def _pixels(points: np.ndarray, domain: list[float], scale: float) -> np.ndarray:
    """Points (n, 2) in a map's units as pixels from the plot's top left corner (y grows downwards)."""
    return np.stack([points[:, 0] - domain[0], domain[1] - points[:, 1]], axis=1) * scale  # (n, 2)


def _line_boxes(segments: np.ndarray) -> np.ndarray:
    """Small boxes every LINE_STEP pixels along each segment (m, 2, 2) in pixels, their ends left out (a point's own box
    covers them): what a label placed over the line would hide of it. (k, 4)."""
    boxes = []
    for start, end in segments[np.isfinite(segments).all(axis=(1, 2))]:  # a point off the map has no line to keep clear
        steps = int(np.linalg.norm(end - start) // LINE_STEP)
        for t in np.arange(1, steps) / steps:
            spot = start + t * (end - start)
            boxes.append([*(spot - 2), *(spot + 2)])
    return np.array(boxes, dtype=float).reshape(-1, 4)
