"""How big a chart is: the pixel sizes charts share, and a chart's cells or panels, width and frame computed from its
labels and the room it is given; ``attn_ui.steps`` gives each chart its block on the page from those.

Heatmaps are sized in pixels per cell so that every token gets its label on both axes; a page places them in a
wrapping row (``attn_ui.steps.row``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from attn_ui.charts.theme import AXIS_PADDING, CATEGORIES, FONT_SIZE, TITLE_SIZE

LABEL_LIMIT = 14  # characters of a token shown on an axis (the tooltip has the whole token)
SENTENCE_LABEL = 28  # characters of a sentence shown in a legend, a table or on an axis
CHAR_WIDTH = 7.5  # pixels of one label character at FONT_SIZE, a generous average (a lowercase word: 7.0)
WORD_CHAR_WIDTH = 7.0  # the same, of a lowercase word (measured 6.7-7.0): a heatmap's upright column labels' height
TITLE_CHAR_WIDTH = 11  # pixels of one character of a chart's title (bold, CHART_TITLE_SIZE)
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
LEGEND_HEIGHT = 60  # pixels of a colour legend under a plot: its offset from the axis title, its bar and labels
LEGEND_WIDTH = 70  # pixels of a colour scale's legend at a plot's right: its offset, bar and labels (measured 62-69)
KEY_LEGEND_WIDTH = 100  # pixels of a mask's legend of named colours at a plot's right ("allowed", "blocked"; 96)
VIEW_PADDING = 5  # pixels Vega leaves around a chart
HEATMAP_PADDING = 18  # pixels a heatmap's drawing has above its title and under its axis title (17-18 measured)
TEXT_LINE = FONT_SIZE + 6  # pixels of a line of chart text: a heatmap's title or subtitle, a panel's header
TITLE_LINES_PADDING = 4  # pixels a heatmap's title lines take besides their lines (a title and a subtitle: 44 measured)
BAR_HEIGHT = 260  # pixels
BAR_STEP = MIN_STEP + 6  # pixels per bar: its label's box, and a gap
MIN_BARS_WIDTH = 320  # pixels of a bar chart of few bars
VALUE_AXIS_WIDTH = 80  # pixels of a bar chart's value axis: its labels and title
VALUE_AXIS_ROOM = 40  # pixels of a line or bar chart's value axis left of its plot, at least ("0.5" and the axis title)
LINE_HEIGHT = 320  # pixels
LINE_WIDTH = 440  # pixels of a line chart that shares a row
PLOT_HEIGHT = 240  # pixels of the plot area of a labelled_lines chart, legend and labels not included
WRAPPED_PANEL = 120  # pixels: the smallest panel of a wrapped row of heads
PANEL_SPACING = 4  # pixels between the panels of a grid of small heatmaps or thumbnails
MAX_PANEL = 160  # pixels: the largest panel of a grid of small heatmaps or thumbnails
GRID_MARGIN = 3 * TITLE_SIZE  # pixels of a row of panels besides its panels: a row header's title and labels, about


def short_label(token: str, limit: int = LABEL_LIMIT) -> str:
    return token if len(token) <= limit else token[: limit - 1] + "…"


def label_around(text: str, word: str, limit: int = SENTENCE_LABEL) -> str:
    """``text`` cut to ``limit`` characters around its first ``word`` ("…money at the bank"), so that a sentence's
    label keeps the word a chart compares across sentences; cut at its end (short_label) where the word is not in it."""
    found = re.search(rf"\b{re.escape(word)}\b", text, flags=re.IGNORECASE)
    if len(text) <= limit or found is None:
        return short_label(text, limit)
    start = max(0, min((found.start() + found.end() - limit) // 2, len(text) - limit))  # the word in the middle
    piece = text[start : start + limit]
    if start > 0:
        piece = "…" + piece[1:]
    if start + limit < len(text):
        piece = piece[:-1] + "…"
    return piece


def is_index(labels: list[str]) -> bool:
    """Labels that only number positions (features 0, 1, 2 ...): such an axis may be squeezed and labelled sparsely."""
    return all(label.isdigit() for label in labels)


@dataclass(frozen=True)
class CellSizes:
    """How large ``heatmap`` may draw a matrix's cells (``cell_steps``): the chart's cells and row labels within
    ``max_width`` and its cells within ``max_height`` pixels, a cell at most ``max_step`` a side, up to ``max_aspect``
    times taller than wide where the columns are features, a feature-by-feature matrix's cells within
    ``compact_height``, and a token's row or column at least ``min_step`` while that fits."""

    max_width: int = MAX_WIDTH
    max_height: int = MAX_HEIGHT
    max_step: float = MAX_STEP
    max_aspect: float = 1.0
    compact_height: int = COMPACT_HEIGHT
    min_step: float = MIN_STEP


PAGE_CELLS = CellSizes()  # a heatmap's cells on a scrolling page


def cell_steps(row_labels: list[str], col_labels: list[str], sizes: CellSizes = PAGE_CELLS) -> tuple[float, float]:
    """Pixels per cell (width, height): at most ``max_step``, square where the matrix fits, or up to ``max_aspect``
    times taller than wide where its columns are features and the height allows (a slide's token-by-feature matrix);
    at least ``min_step`` along a token axis (so every token gets its label) and MIN_INDEX_STEP along a feature axis
    while that fits; squeezed to fit otherwise (a 384-feature axis of a real model), never below 1 pixel. A
    feature-by-feature matrix (a W) is kept compact: its cells at most ``compact_height`` high."""
    max_height = min(sizes.max_height, sizes.compact_height) if is_index(row_labels) else sizes.max_height
    cells_width = sizes.max_width - _label_room(row_labels)
    fit_width, fit_height = cells_width / max(len(col_labels), 1), max_height / max(len(row_labels), 1)
    side = min(sizes.max_step, fit_width, fit_height)
    tall = min(sizes.max_step, fit_height, side * sizes.max_aspect) if is_index(col_labels) else side

    def step(side: float, fit: float, labels: list[str]) -> float:
        return max(side, min(MIN_INDEX_STEP if is_index(labels) else sizes.min_step, fit), 1.0)

    return step(side, fit_width, col_labels), step(tall, fit_height, row_labels)


def longest_label(labels: list[str]) -> int:
    """Characters of the longest of ``labels`` as an axis shows them (short_label); 1 where there are none."""
    return max((len(short_label(label)) for label in labels), default=1)


def _label_room(labels: list[str]) -> int:
    """Pixels the labels and title of a y axis take beside the plot."""
    return int(longest_label(labels) * CHAR_WIDTH) + TITLE_SIZE + 2 * AXIS_PADDING + VIEW_PADDING


def heatmap_width(
    row_labels: list[str],
    col_labels: list[str],
    sizes: CellSizes = PAGE_CELLS,
    legend_side: str = "bottom",
    kind: str = "weights",
) -> int:
    """The pixel width ``heatmap`` draws a matrix of this ``kind`` with these labels at, given its cells' ``sizes``."""
    cell_width, _ = cell_steps(row_labels, col_labels, sizes)
    return width_at(cell_width, row_labels, col_labels, legend_side, kind)


def width_at(cell_width: float, row_labels: list[str], col_labels: list[str], legend_side: str, kind: str) -> int:
    """The pixel width of a heatmap of cells ``cell_width`` pixels wide: cells plus the row labels and title, and a
    legend at the right."""
    return int(len(col_labels) * cell_width) + _label_room(row_labels) + (legend_width(kind) if legend_side == "right" else 0)


def legend_width(kind: str) -> int:
    """Pixels a heatmap's legend takes at the plot's right: named colours for a mask, else a colour scale."""
    return KEY_LEGEND_WIDTH if kind in CATEGORIES else LEGEND_WIDTH


def heatmap_frame(col_labels: list[str], title_lines: int, legend_side: str = "bottom") -> int:
    """Pixels of a heatmap's height outside its cells, at most: ``title_lines`` lines of title and subtitle (a title
    alone is set as far above the cells as one with a subtitle line: 44 px, measured), the column labels (upright,
    as on a narrow cell) and the axis title with their paddings, a legend under the plot, and the padding Vega leaves
    above and below (HEATMAP_PADDING)."""
    labels = FONT_SIZE if is_index(col_labels) else max(FONT_SIZE, longest_label(col_labels) * WORD_CHAR_WIDTH)
    axis = labels + 2 * AXIS_PADDING + TITLE_SIZE
    legend = LEGEND_HEIGHT if legend_side == "bottom" else 0
    titles = max(2, title_lines) * TEXT_LINE + TITLE_LINES_PADDING if title_lines else 0
    return titles + axis + legend + HEATMAP_PADDING


def title_width(title: str, subtitle: tuple[str, ...] = ()) -> int:
    """Pixels a chart's title and subtitle lines take across, about."""
    return int(max([len(title) * TITLE_CHAR_WIDTH] + [len(line) * CHAR_WIDTH for line in subtitle]))


def bars_width(labels: list[str]) -> int:
    """Pixels a bar chart needs for every label: BAR_STEP per bar, plus the value axis."""
    return min(MAX_WIDTH, max(MIN_BARS_WIDTH, len(labels) * BAR_STEP + VALUE_AXIS_WIDTH))


def grid_panels(panels: int, max_width: int, max_panel: float, min_panel: float) -> tuple[float, int]:
    """The side in pixels of each panel of ``heatmap_grid``, and how many panels a row holds: as large as ``panels``
    panels in one row ``max_width`` wide allow, between ``min_panel`` and ``max_panel``; the row wraps where they do
    not fit."""
    room = max_width - GRID_MARGIN
    panel = min(max_panel, max(min_panel, room / panels - PANEL_SPACING))
    return panel, max(1, min(panels, int(room // (panel + PANEL_SPACING))))


def thumbnail_panel(heads: int, max_width: int, max_panel: int) -> int:
    """The side in pixels of each of ``head_thumbnails``' thumbnails, ``heads`` to a row ``max_width`` wide, at most
    ``max_panel``: whole pixels, so that no thumbnail has a blurred edge."""
    return min(max_panel, (max_width - GRID_MARGIN) // heads - PANEL_SPACING)
