"""Drawing a chart of ``attn_ui.charts`` fast: its Vega-Lite spec is built once per distinct input and reused.

Building an Altair chart and validating its spec against the Vega-Lite JSON schema took about 100 ms a chart,
most of a rerun of a view with a dozen heatmaps. A rerun caused by an unrelated control now finds the specs of
unchanged charts in the cache. The schema check moved to the tests (tests/test_charts.py validates every
builder's output), where it costs nothing at run time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import streamlit as st
from streamlit import dataframe_util

from attn_ui import charts, downloads

SPECS_KEPT = 64  # chart specs cached per server process: about 15 kB a heatmap, 1.4 MB the real model's 72-head grid


@st.cache_data(max_entries=SPECS_KEPT, show_spinner=False)
def chart_spec(builder: str, *args: Any, **options: Any) -> dict:
    """The Vega-Lite spec of ``charts.<builder>(*args, **options)`` (an Altair chart, or a spec written as a dict),
    with the app's theme, ready for ``st.vega_lite_chart``."""
    chart = getattr(charts, builder)(*args, **options)
    spec = chart if isinstance(chart, dict) else stable_dataset_names(chart.to_dict(validate=False))
    return with_arrow_data(spec)


def with_arrow_data(spec: dict) -> dict:
    """The spec with its datasets as the Arrow bytes Streamlit sends to the browser, made once here, in the cache:
    converting them on every rerun took a sixth of one."""
    datasets = {name: dataframe_util.convert_anything_to_arrow_bytes(data) for name, data in spec.get("datasets", {}).items()}
    return {**spec, "datasets": datasets}


def stable_dataset_names(spec: dict) -> dict:
    """The spec with its datasets named by position ("values_0", ...) instead of by a hash of their values, as Altair
    names them: a spec whose text does not change with its values lets the browser update the chart's data in place
    instead of drawing it anew. ("data_0" would clash with the names Vega-Lite gives the datasets it derives.)"""
    text = json.dumps(spec)
    for position, name in enumerate(spec.get("datasets", {})):
        text = text.replace(json.dumps(name), json.dumps(f"values_{position}"))
    return json.loads(text)


def draw(
    builder: Callable,
    *args: Any,
    width: int | str = "content",
    height: int | str = "content",
    name: str | None = None,
    **options: Any,
) -> None:
    """Draw ``builder(*args, **options)`` (a function of ``attn_ui.charts``) at the given width and height, and record
    it for the view's bundle under ``name`` (by default its title)."""
    spec = chart_spec(builder.__name__, *args, **options)
    st.vega_lite_chart(spec=spec, width=width, height=height)
    downloads.keep_chart(name or options.get("title") or builder.__name__.replace("_", " "), builder, args, options)
