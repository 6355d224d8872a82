"""The room a presenter slide leaves its charts: the browser's window size, reported by a tiny component, less the
slide's bar, section title and lead; and outside presenter mode, a wide window's column shared by a row of charts.

Streamlit does not tell a script how large the window is, and a chart's text must keep its size (14 px and up) while
the chart fits the screen: CSS that scales a drawn chart would shrink its text with it, and Vega's container sizing
stretches the plot but not a heatmap's cells per token. So the window reports its size (on opening and after a
resize), the script reruns with it, and each chart is drawn at the size the slide leaves it. Until the window has
reported, the smallest screen presenters use is assumed, so that the first slide drawn already fits.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import streamlit as st

SMALLEST = (1024, 576)  # pixels: a 1280 × 720 projector at 125 % zoom
VIEWPORT_KEY = "_viewport"  # session state: the window's (width, height) as last reported
SIDE_PX = 64  # pixels left and right of the slide (the sidebar's open button lies in the left one)
TYPE_PX = 18  # the presenter's type size (a CSS rem) on a screen less than TALL_PX high; TALL_TYPE_PX on a taller one
TALL_TYPE_PX = 21
TALL_PX = 800
ROW_GAP_REM = 2  # between charts side by side: a row's "medium" gap
# Above a slide's charts, the bar (view, step, Previous / Next, Controls) and the section's title, with their margins
# (7.4 rem, measured); below them, the page's bottom margin and a little spare. In rem: they grow with the presenter's
# type.
CHROME_REM = 8.4
LINE_REM = 1.7  # a line of text on a slide (its lead, a caption)
GAP_REM = 1  # between the charts and text under them
# Outside presenter mode: from this window width, rows of charts grow with the main column, which is the window less
# the sidebar (when open) and the column's side padding, in Streamlit's own 16-px type.
WIDE_PX = 1600
SIDEBAR_PX = 300
PAGE_SIDE_PX = 80
PAGE_TYPE_PX = 16

# The window's size, read in the browser. It reports on opening and, 150 ms after the last change, on a resize, but
# only where the size matters: on a slide always, on a scrolling page when the window is or was at least ``wide``
# pixels wide (a narrower one draws as it always did, and a report would only cost a rerun). The script's last known
# size comes back as ``known``, so that a remount of the same size reports nothing.
_WINDOW_SIZE_JS = """
export default function({ setStateValue, data }) {
  const { known, wide } = data;
  const report = () => {
    const size = [window.innerWidth, window.innerHeight];
    const matters = size[0] >= wide || (known && known[0] >= wide);
    if (matters && !(known && known[0] === size[0] && known[1] === size[1])) setStateValue("size", size);
  };
  let timer;
  const onResize = () => { clearTimeout(timer); timer = setTimeout(report, 150); };
  window.addEventListener("resize", onResize);
  report();
  return () => { clearTimeout(timer); window.removeEventListener("resize", onResize); };
}
"""
_window_size = st.components.v2.component("attention_explorer.window_size", js=_WINDOW_SIZE_JS)


def read_window_size() -> None:
    """Mount the component that reports the window's size (call it where the page can hold an invisible element)."""
    data = {"known": st.session_state.get(VIEWPORT_KEY), "wide": 0 if presenting() else WIDE_PX}
    result = _window_size(key="window_size", data=data, on_size_change=_rerun_only, height=0)
    size = result.get("size")
    if isinstance(size, list) and len(size) == 2 and all(isinstance(n, int) and 200 <= n <= 10_000 for n in size):
        st.session_state[VIEWPORT_KEY] = tuple(size)


def _rerun_only() -> None:
    """A new size needs nothing but the rerun that follows it."""


def presenting() -> bool:
    return st.session_state.get("present") is True


def window() -> tuple[int, int]:
    """The window's (width, height) in CSS pixels; SMALLEST until the browser has said."""
    return st.session_state.get(VIEWPORT_KEY, SMALLEST)


@dataclass(frozen=True)
class Room:
    """Pixels one chart may take on the open slide; ``crowded``: the token counts of the charts drawn in it that do
    not fit it at a readable size, and ``fitting``: how many tokens each of them would fit."""

    width: int
    height: int | None  # None on a page that scrolls
    crowded: list[int] = field(default_factory=list)
    fitting: list[int] = field(default_factory=list)


_room: ContextVar[Room | None] = ContextVar("room", default=None)
OFFERS = "_first_tokens_offers"  # session-state key: the crowded rows of the run so far, for their buttons' keys


def room() -> Room | None:
    """The room of each chart of the row being drawn: on a slide, or on a wide window's scrolling page; None outside
    such a row."""
    return _room.get()


def slide_room() -> Room | None:
    """The room of each chart of the row being drawn on a slide; None elsewhere."""
    share = _room.get()
    return share if share is not None and share.height is not None else None


@contextmanager
def sharing(count: int, lines_above: int = 2, lines_below: int = 0, aside: int = 0) -> Iterator[None]:
    """Within the block, ``count`` charts share the slide's width side by side, less ``aside`` pixels kept beside
    them (a column of metrics), and have its height, less the lines of text that the slide shows above them (its
    lead) and below them (captions, metrics), and the gap above the latter. Outside presenter mode, on a window at
    least WIDE_PX wide, they share the main column's width likewise (the page scrolls: no height); on a narrower one,
    nothing changes."""
    width, height = window()
    blocks = count + (aside > 0)  # blocks side by side, a gap between two
    if presenting():
        rem = TALL_TYPE_PX if height >= TALL_PX else TYPE_PX
        share = Room(
            width=int((width - 2 * SIDE_PX - aside - (blocks - 1) * ROW_GAP_REM * rem) / count),
            height=int(height - (CHROME_REM + (lines_above + lines_below) * LINE_REM + GAP_REM * (lines_below > 0)) * rem),
        )
    elif width >= WIDE_PX:
        column = width - SIDEBAR_PX - 2 * PAGE_SIDE_PX - aside
        share = Room(width=int((column - (blocks - 1) * ROW_GAP_REM * PAGE_TYPE_PX) / count), height=None)
    else:
        yield
        return
    token = _room.set(share)
    try:
        yield
    finally:
        _room.reset(token)
