"""Drawing a chart of ``attn_ui.charts`` fast: its Vega-Lite spec, with its data as Arrow, is made once per distinct
input and reused.

A rerun caused by an unrelated control finds the specs of unchanged charts in the cache, their data already in the
Arrow form Streamlit sends to the browser (converting a dozen heatmaps' data on every rerun took a sixth of it).
"""

from __future__ import annotations

from collections.abc import Callable
from types import FunctionType
from typing import Any

import streamlit as st
from streamlit import dataframe_util

from attn_ui import downloads

SPECS_KEPT = 64  # chart specs cached per server process: about 15 kB a heatmap, 1.4 MB the real model's 72-head grid


def qualified_name(function: FunctionType) -> str:
    """What tells one builder from another in the cache: its module and name (Streamlit cannot hash a function)."""
    return f"{function.__module__}.{function.__qualname__}"


@st.cache_data(max_entries=SPECS_KEPT, show_spinner=False, hash_funcs={FunctionType: qualified_name})
def chart_spec(builder: Callable[..., dict], *args: Any, **options: Any) -> dict:
    """The Vega-Lite spec of ``builder(*args, **options)`` (a function of ``attn_ui.charts``), its datasets as Arrow
    bytes, ready for ``st.vega_lite_chart``."""
    spec = builder(*args, **options)
    datasets = {name: dataframe_util.convert_anything_to_arrow_bytes(data) for name, data in spec["datasets"].items()}
    return {**spec, "datasets": datasets}


def draw(
    builder: Callable,
    *args: Any,
    width: int | str = "content",
    height: int | str = "content",
    name: str | None = None,
    key: str | None = None,
    on_select: Callable[[], None] | None = None,
    **options: Any,
) -> None:
    """Draw ``builder(*args, **options)`` (a function of ``attn_ui.charts``) at the given width and height, and record
    it for the view's bundle under ``name`` (by default its title). ``on_select`` is called when the chart's
    selection changes (a click), which ``st.session_state[key].selection`` then holds."""
    spec = chart_spec(builder, *args, **options)
    st.vega_lite_chart(spec=spec, width=width, height=height, key=key, on_select=on_select or "ignore")
    downloads.keep_chart(name or options.get("title") or builder.__name__.replace("_", " "), builder, args, options)
