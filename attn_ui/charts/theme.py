"""The app's one chart theme: text sizes readable from the back of a lecture hall, and the colours every chart shares.

The theme (``theme``, registered with Altair and enabled once, when this module is imported) sets the text sizes;
colours of text and background come from Streamlit's light or dark theme, so charts follow the active one.

Colour conventions: a sequential scale for attention weights (0..1) that reads in grayscale and for colour-blind
viewers, a diverging scale centred on 0 for scores and other signed values, two named categories for boolean masks,
and grey, labelled cells for masked entries.
"""

from __future__ import annotations

import altair as alt

FONT_SIZE = 14  # pixels: axis labels, legends, headers
TITLE_SIZE = 16  # pixels: axis titles
CHART_TITLE_SIZE = TITLE_SIZE + 2  # pixels: a chart's title (bold)
CELL_FONT_SIZE = 14  # pixels: numbers written inside heatmap cells, as large as every other chart text
MASKED_COLOUR = "#9e9e9e"
ALLOWED_COLOUR = "#1f77b4"
HIGHLIGHT_COLOUR = "#e4572e"  # outlines the row in focus; stands out from viridis and the diverging scale
LEGEND_OFFSET = 8  # pixels between a plot (or its axis) and its legend (Vega-Lite's default: 18)
TITLE_OFFSET = 8  # pixels between a chart's subtitle (its title where it has none) and its plot
AXIS_PADDING = 4  # pixels from a plot to its axis labels, and from them to the axis title
KINDS = ("weights", "signed", "mask", "additive")
# Kinds drawn as two named colours, an allowed cell's name first: a boolean mask, an additive one (0 or -inf).
CATEGORIES = {"mask": ("allowed", "blocked"), "additive": ("0", "−∞")}
# Series of a line chart: Tableau 10's colours in an order that puts its orange and red apart, and a shape each, so
# that two series drawn on one another (SDPA's times and the tiled kernel's) still tell apart at their points.
SERIES_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2", "#72b7b2", "#eeca3b", "#9d755d", "#ff9da6", "#bab0ac")
SERIES_SHAPES = ("circle", "square", "triangle-up", "diamond", "triangle-down", "cross")


# Chart text (axes, legends, titles, headers) in the page's own text colour: Streamlit's chart theme draws it in a
# mid grey (3.7:1 on white); this keeps it at the theme's full contrast, light or dark. Numbers inside cells keep theirs.
# A layer named PLAIN_TEXT has its text in that colour too (Vega draws a text mark of no colour black, which a dark
# theme hides): Vega gives its marks' group the class "<name>_marks".
PLAIN_TEXT = "plain_text"
# A layer named COLOURED_TEXT writes its text in a shade of its colour that reads at 4.5:1 or more on the active
# theme's page, (light, dark) below: no one shade of these does on both (the query-key map's blue reads at 3.7:1 on
# a dark page, its orange at 3.7:1 on a white one). light-dark() follows the color-scheme Streamlit gives .stApp.
COLOURED_TEXT = "coloured_text"
TEXT_SHADES = {ALLOWED_COLOUR: ("#1f77b4", "#6baed6"), HIGHLIGHT_COLOUR: ("#c2410c", "#e4572e")}
SHADES_CSS = "\n".join(
    f'g.{COLOURED_TEXT}_marks > text[fill="{colour}"] {{ fill: light-dark({light}, {dark}); }}'
    for colour, (light, dark) in TEXT_SHADES.items()
)
THEME_CSS = f"""<style>
[data-testid="stVegaLiteChart"] :is(g[class*="role-axis"], g[class*="role-legend"], g[class*="title"],
  g[class*="header"], g.{PLAIN_TEXT}_marks) > text {{ fill: currentColor; }}
{SHADES_CSS}
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
    "title": {"fontSize": CHART_TITLE_SIZE, "subtitleFontSize": FONT_SIZE},
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
