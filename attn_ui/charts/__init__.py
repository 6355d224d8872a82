"""Every chart of the app, with one theme: each built with Altair and compiled to a Vega-Lite spec.

Every builder is a plain function in two parts: it puts the values in a DataFrame, the chart's data (the named
dataset "cells", or one per layer of a map, which ``attn_ui.draw`` sends to the browser as Arrow, caching the spec per
input), and hands the rest (labels, titles, sizes) to a function that builds the Altair chart; ``build.compile_chart``
compiles that once per layout and attaches the data, without Altair's checks of each object against the JSON schema
(``build``). A spec does not depend on the values otherwise than through its data (but for a map's
domain, which its points set), so new values update a chart in place.

Where each thing is:

- ``theme``: the theme (registered with Altair and enabled once, when this package is imported), text sizes readable
  from the back of a lecture hall, and the colours charts share; colours of text and background come from
  Streamlit's light or dark theme, so charts follow the active one.
- ``sizes``: the pixel sizes charts share, and the functions that compute a chart's cells or panels, width and frame
  from them; ``attn_ui.steps`` gives each chart its block on the page from those. Heatmaps are sized in pixels per
  cell so that every token gets its label on both axes.
- ``build``: compiling a chart once per layout, its data attached; ``parts``: the axes, colours, tooltips, titles and
  layers builders share.
- The builders: ``matrices`` (heatmap, heatmap_grid, tile_map, head_groups), ``thumbnails`` (head_thumbnails: each matrix as an
  image in the heatmaps' colours, where cells would be too small to label or to hover, as for every head of the real
  model), ``curves`` (bars and lines), ``maps`` (2-D maps of vectors), whose labels ``labels`` places.

The names below are the builders, sizes and colours pages and other modules use, as ``charts.NAME`` or ``from
attn_ui.charts import NAME``; a new builder may be imported from its module.
"""

from attn_ui.charts.build import inline_data
from attn_ui.charts.curves import bars, labelled_lines, lines, series_lines
from attn_ui.charts.labels import LABEL_HEIGHT, LABEL_SPOTS, label_spots
from attn_ui.charts.maps import query_key_scatter, rotation_circle, word_path_map
from attn_ui.charts.matrices import TILE_CLASSES, TILE_COLOURS, TILE_MAP_SIDE, head_groups, heatmap, heatmap_grid, tile_map
from attn_ui.charts.sizes import (
    BAR_HEIGHT,
    CHAR_WIDTH,
    LEGEND_HEIGHT,
    LINE_HEIGHT,
    LINE_WIDTH,
    MAX_HEIGHT,
    MAX_STEP,
    MAX_WIDTH,
    PANEL_SPACING,
    PLOT_HEIGHT,
    SENTENCE_LABEL,
    SLIDE_MIN_STEP,
    WRAPPED_PANEL,
    CellSizes,
    bars_width,
    cell_steps,
    heatmap_frame,
    heatmap_width,
    is_index,
    label_around,
    legend_width,
    short_label,
    title_width,
)
from attn_ui.charts.theme import CONFIG, FONT_SIZE, MASKED_COLOUR, THEME_CSS, TITLE_SIZE
from attn_ui.charts.thumbnails import PICKED_HEAD, head_thumbnails, weight_colours

__all__ = [
    "BAR_HEIGHT",
    "CHAR_WIDTH",
    "CONFIG",
    "FONT_SIZE",
    "LABEL_HEIGHT",
    "LABEL_SPOTS",
    "LEGEND_HEIGHT",
    "LINE_HEIGHT",
    "LINE_WIDTH",
    "MASKED_COLOUR",
    "MAX_HEIGHT",
    "MAX_STEP",
    "MAX_WIDTH",
    "PANEL_SPACING",
    "PICKED_HEAD",
    "PLOT_HEIGHT",
    "SENTENCE_LABEL",
    "SLIDE_MIN_STEP",
    "THEME_CSS",
    "TILE_CLASSES",
    "TILE_COLOURS",
    "TILE_MAP_SIDE",
    "TITLE_SIZE",
    "WRAPPED_PANEL",
    "bars",
    "bars_width",
    "CellSizes",
    "cell_steps",
    "head_thumbnails",
    "heatmap",
    "heatmap_frame",
    "head_groups",
    "heatmap_grid",
    "heatmap_width",
    "inline_data",
    "is_index",
    "label_around",
    "label_spots",
    "labelled_lines",
    "legend_width",
    "lines",
    "query_key_scatter",
    "rotation_circle",
    "series_lines",
    "short_label",
    "tile_map",
    "title_width",
    "weight_colours",
    "word_path_map",
]
