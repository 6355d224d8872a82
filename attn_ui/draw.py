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

from attn_ui import downloads, exercises

# Vega's SVG renderer fills a colour bar with url(<the page's address>#gradient_N), the address when it drew it
# (vega/vega#3948). When the app then writes its state into the address (a slide, a control: attn_ui.url_state), that
# fill points at another page, and the browser fills nothing: the colour bar is gone. This script, once a page, points
# every such reference at the new address whenever the address changes.
_MEND_SVG_LINKS_JS = """
export default function() {
  if (window.attentionExplorerMendsSvgLinks) return;
  window.attentionExplorerMendsSvgLinks = true;
  const address = () => location.hash ? location.href.slice(0, -location.hash.length) : location.href;
  const mend = () => {
    const here = address();
    for (const element of document.querySelectorAll("svg [fill^='url('], svg [stroke^='url(']")) {
      for (const name of ["fill", "stroke"]) {
        const value = element.getAttribute(name);
        const at = value ? value.lastIndexOf("#") : -1;
        if (value && value.startsWith("url(") && at > 0 && value.slice(4, at) !== here) {
          element.setAttribute(name, "url(" + here + value.slice(at));
        }
      }
    }
  };
  for (const name of ["pushState", "replaceState"]) {
    const original = history[name];
    history[name] = function (...args) { const result = original.apply(this, args); mend(); return result; };
  }
  window.addEventListener("popstate", mend);
}
"""
_mend_svg_links = st.components.v2.component("attention_explorer.mend_svg_links", js=_MEND_SVG_LINKS_JS)


def mend_svg_links() -> None:
    """Mount the script that keeps the charts' colour bars drawn when the page's address changes (see above); call it
    where the page can hold an invisible element."""
    _mend_svg_links(key="mend_svg_links", height=0)


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
    selection changes (a click), which ``st.session_state[key].selection`` then holds. Where a lesson step's exercise
    asked about this chart and has been answered, the chart marks the answer (not in the bundle's recipe)."""
    recorded = downloads.keep_chart(name or options.get("title") or builder.__name__.replace("_", " "), builder, args, options)
    spec = chart_spec(builder, *args, **options, **exercises.marks(recorded, builder, args))
    if isinstance(width, int) and isinstance(height, int):
        # Given to Vega in the spec, not to Streamlit, which would fit the chart to its element's size as measured on
        # the screen: on a magnified slide (attn_ui.slide.zoom) that is the zoomed size, and the chart would be zoomed twice.
        spec, width, height = {**spec, "width": width, "height": height}, "content", "content"
    st.vega_lite_chart(spec=spec, width=width, height=height, key=key, on_select=on_select or "ignore")


def selected(key: str, selection: str) -> list[dict]:
    """In the on_select callback of a chart drawn with ``key``: the points its selection ``selection`` holds."""
    return st.session_state[key].selection.get(selection) or []
