"""The room a presenter slide leaves its charts: the browser's window size, reported by a tiny component, less the
slide's bar, section title and lead; and outside presenter mode, a wide window's column shared by a row of charts.

Streamlit does not tell a script how large the window is, and a chart's text must keep its size (14 px and up) while
the chart fits the screen: CSS that scales a drawn chart would shrink its text with it, and Vega's container sizing
stretches the plot but not a heatmap's cells per token. So the window reports its size (on opening and after a
resize), the script reruns with it, and each chart is drawn at the size the slide leaves it. Until the window has
reported, the smallest screen presenters use is assumed, so that the first slide drawn already fits. On a slide it
reports the height of the notes drawn above the section too (a message on the input, a link's ignored parameters, a
button to press first), whatever they hold and however their text wraps, and the charts take the room they leave.
A window larger than DESIGN does not give a slide more room but magnifies it (zoom), text and charts alike, as a
slide deck grows with its screen: its text keeps the share of the screen's height it has on a 1280 × 720 projector.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

SMALLEST = (1024, 576)  # pixels: a 1280 × 720 projector at 125 % zoom
DESIGN = (1280, 720)  # pixels: the largest window a slide is laid out for; on a larger one it is magnified (zoom)
MAX_ZOOM = 1.5  # a full-HD window; beyond it a larger window gives the slide more room, as does zooming the browser out
ZOOM_STEP = 0.125  # zoom() comes in steps, each with its stylesheet (page.PRESENTER_STYLES)
ZOOMS = tuple(1 + ZOOM_STEP * step for step in range(round((MAX_ZOOM - 1) / ZOOM_STEP) + 1))  # 1, 1.125, …, MAX_ZOOM
VIEWPORT_KEY = "_viewport"  # session state: the window's (width, height) as last reported
NOTES_KEY = "_notes_px"  # session state: the height of the open slide's notes (page.Slides), as last reported
WINDOW_SIZE_KEY = "window_size"  # the reporting component's key: its state holds the browser's last report
NOTES_CONTAINER = "slide_notes"  # the key of the notes' container (page.Slides); its class is st-key-slide_notes
SIDE_PX = 64  # pixels left and right of the slide (the sidebar's open button lies in the left one)
TYPE_PX = 18  # the presenter's type size (a CSS rem) on a slide less than TALL_PX high (window()); TALL_TYPE_PX on a taller one
TALL_TYPE_PX = 21
TALL_PX = 800
ROW_GAP_REM = 2  # between charts side by side: a row's "medium" gap
# Above a slide's charts, the bar (view, step, Previous / Next, Controls) and the section's title, with their margins;
# below them, the page's bottom margin: 6.9 rem, measured; and half a line spare. In rem: they grow with the
# presenter's type.
CHROME_REM = 7.4
LINE_REM = 1.6  # a line of text on a slide (its lead, a caption)
TABLE_ROW_REM = 1.9  # a row of a table on a slide, its header's too (34 px in 18-px type, measured)
GAP_REM = 1  # between the charts and text under them, as between any two elements of a page
NOTES_GAP_REM = 0.5  # between the notes above a section and its title (page.PRESENTER_STYLE): a slide's room is small
# Outside presenter mode: from this window width, rows of charts grow with the main column, which is the window less
# the sidebar (when open) and the column's side padding, in Streamlit's own 16-px type.
WIDE_PX = 1600
SIDEBAR_PX = 300
PAGE_SIDE_PX = 80
PAGE_TYPE_PX = 16

# The window's size, read in the browser. It reports on opening and, 150 ms after the last change, on a resize, but only
# where the size matters: on a slide always, on a scrolling page when the window is or was at least ``wide`` pixels wide
# (a narrower one draws as it always did, and a report would only cost a rerun). On a slide (``notes``: the notes'
# container's key) it adds the notes' height, measured 150 ms after the page's content last changed size, as it does
# when a note comes, goes or wraps anew. Such a report (a resize's, the notes') waits until the app's run has ended, and
# 150 ms more: its rerun carries the controls' values as the browser holds them, which until the browser has drawn a
# run's elements are those of the run before (a lesson's step, reported on before it was drawn whole, went back to the
# step before's section; a sweep's run would stop), and a layout measured in the middle of a run is not the one the run
# leaves. The script's last known report comes back as ``known``, so that a remount with the same size and notes reports
# nothing. Streamlit calls the function again whenever ``data`` changes but runs the returned cleanup only when the
# element goes: each call stops the listeners of the one before (``stop`` on its element), else they live on with their
# old ``known`` and ``wide`` and report again after every redraw (after leaving presenter mode, a second run for every
# change: twice the redraw time). On a slide it also takes the keyboard from the presenter-mode toggle just switched on:
# Streamlit's shortcuts (← and →) ignore keys while an input has the focus, and the toggle keeps it in the closed
# sidebar. A scrolling page that has not reported its size sends it with that toggle's click (the mouse's or the
# keyboard's), in the same moment as the toggle's own rerun: the first slide is then laid out for the window, not for
# SMALLEST and again after the slide has reported. While a report waits, ``window.attentionExplorerSizeReportDue`` is
# true: a page that looks settled then is about to rerun (the browser tests wait for it; on a busy machine the timer
# fires late).
_WINDOW_SIZE_JS = """
export default function({ setStateValue, data, parentElement }) {
  parentElement.stopReports?.();
  const { known, wide, notes } = data;
  if (notes) document.querySelector(".st-key-present input:focus")?.blur();
  const notesHeight = () => {
    const box = notes && document.querySelector(".st-key-" + notes);
    return box ? Math.round(box.getBoundingClientRect().height) : 0;
  };
  const report = () => {
    const size = [window.innerWidth, window.innerHeight, notesHeight()];
    const matters = size[0] >= wide || (known && known[0] >= wide);
    if (matters && !(known && size.every((n, i) => n === known[i]))) setStateValue("size", size);
  };
  const withToggle = event => {
    if (!event.target.closest?.(".st-key-present")) return;
    const size = [window.innerWidth, window.innerHeight, 0];
    if (!(known && size[0] === known[0] && size[1] === known[1])) setStateValue("size", size);
  };
  if (!notes) document.addEventListener("click", withToggle, true);
  let timer, waited = false;
  const due = pending => { window.attentionExplorerSizeReportDue = pending; };  // read by whoever waits for the page
  const app = () => document.querySelector("[data-testid='stApp']")?.dataset.testScriptState;  // Streamlit's run state
  const running = () => ["running", "rerunRequested"].includes(app());
  const later = () => {
    clearTimeout(timer);
    due(true);
    timer = setTimeout(() => {
      if (!running() && !waited) {
        due(false);
        report();
        return;
      }
      waited = running();  // while a run's elements arrive, wait for its end and 150 ms more
      later();
    }, 150);
  };
  window.addEventListener("resize", later);
  const content = new ResizeObserver(later);
  const main = document.querySelector("[data-testid='stMainBlockContainer']");
  if (notes && main) content.observe(main);  // fires once at once, then as the page's content changes size
  else report();
  const stop = () => {
    clearTimeout(timer);
    due(false);
    content.disconnect();
    window.removeEventListener("resize", later);
    document.removeEventListener("click", withToggle, true);
  };
  parentElement.stopReports = stop;
  return stop;
}
"""
_window_size = st.components.v2.component("attention_explorer.window_size", js=_WINDOW_SIZE_JS)


def read_window_size() -> None:
    """Mount the component that reports the window's size, and on a slide its notes' height (call it where the page
    can hold an invisible element). Its report reruns the script, which takes it first (take_report)."""
    known = [*st.session_state[VIEWPORT_KEY], reported_notes()] if VIEWPORT_KEY in st.session_state else None
    data = {"known": known, "wide": 0 if presenting() else WIDE_PX, "notes": NOTES_CONTAINER if presenting() else None}
    _window_size(key=WINDOW_SIZE_KEY, data=data, on_size_change=_rerun_only, height=0)


def take_report() -> None:
    """Keep the browser's last report of the window's size and the notes' height (VIEWPORT_KEY, NOTES_KEY), if it is
    one: call it at the start of a run (page.setup), before anything is laid out or magnified (zoom) for the window."""
    state = st.session_state.get(WINDOW_SIZE_KEY)
    size = state.get("size") if state is not None else None
    if isinstance(size, list) and len(size) == 3 and all(isinstance(n, int) for n in size):
        width, height, notes = size
        if 200 <= width <= 10_000 and 200 <= height <= 10_000 and 0 <= notes <= height:
            st.session_state[VIEWPORT_KEY], st.session_state[NOTES_KEY] = (width, height), notes


def _rerun_only() -> None:
    """A new size needs nothing but the rerun that follows it."""


def lead(full: str, gist: str = "") -> None:
    """A section's text: in full on a scrolling page; on a slide its gist, a line or two or none, and the presenter
    says the rest."""
    if not presenting():
        st.markdown(full)
    elif gist:
        st.markdown(gist)


def presenting() -> bool:
    return st.session_state.get("present") is True


def reported() -> tuple[int, int]:
    """The window's (width, height) in the browser's CSS pixels; SMALLEST until the browser has said."""
    return st.session_state.get(VIEWPORT_KEY, SMALLEST)


def zoom() -> float:
    """How much a slide is magnified (CSS zoom, page.PRESENTER_STYLES): 1 on a window up to DESIGN, then as much as
    the window is larger than DESIGN (the lesser of its width's and its height's ratios), down to a step of ZOOMS, up
    to MAX_ZOOM. Every size on a slide, text and charts alike, grows with it: at 1920 × 1080 a chart's 14-px labels are
    21 px on the screen. 1 off a slide."""
    if not presenting():
        return 1.0
    width, height = reported()
    larger = min(width / DESIGN[0], height / DESIGN[1])
    return max(zoom for zoom in ZOOMS if zoom <= max(larger, 1.0))


def window() -> tuple[int, int]:
    """The window's (width, height) in the slide's own pixels, the browser's divided by zoom(): what a slide is laid
    out for."""
    width, height = reported()
    return int(width / zoom()), int(height / zoom())


def type_px() -> int:
    """The presenter's type size (a CSS rem) on this window, in the slide's pixels."""
    return TALL_TYPE_PX if window()[1] >= TALL_PX else TYPE_PX


def reported_notes() -> int:
    """The notes' height as the browser last reported it, in its CSS pixels (0 off a slide)."""
    return st.session_state.get(NOTES_KEY, 0) if presenting() else 0


def notes_height() -> int:
    """Pixels of the slide that the notes above the open slide's section take (0 when there are none, or off a slide)."""
    return int(reported_notes() / zoom())


OFFERS = "_first_tokens_offers"  # session-state key: the crowded rows of the run so far, for their buttons' keys


@dataclass(frozen=True)
class Room:
    """Pixels one block of a row may take: on a slide its ``width`` and ``height``; on a wide window's scrolling page
    its ``width``, and no height (None: the page scrolls)."""

    width: int
    height: int | None


def room(count: int, lines_above: int = 2, lines_below: int = 0, aside: int = 0) -> Room | None:
    """The room of each of ``count`` blocks side by side on the open window, less ``aside`` pixels kept beside them (a
    column of metrics): on a slide, its width shared, and its height less the lines of text that the slide shows above
    them (its lead), the notes above its section, and below them (captions, metrics), and the gaps under the notes and
    above the latter. Outside presenter mode, on a window at least WIDE_PX wide, the main column's width shared likewise
    (the page scrolls: no height); on a narrower one None, and blocks take the width their content needs."""
    width, height = window()
    blocks = count + (aside > 0)  # blocks side by side, a gap between two
    if presenting():
        rem = type_px()
        text_rem = CHROME_REM + (lines_above + lines_below) * LINE_REM + GAP_REM * (lines_below > 0)
        notes = notes_height()
        notes_px = notes + NOTES_GAP_REM * rem if notes else 0  # the notes and the gap under them
        return Room(
            width=int((width - 2 * SIDE_PX - aside - (blocks - 1) * ROW_GAP_REM * rem) / count),
            height=int(height - notes_px - text_rem * rem),
        )
    if width >= WIDE_PX:
        column = width - SIDEBAR_PX - 2 * PAGE_SIDE_PX - aside
        return Room(width=int((column - (blocks - 1) * ROW_GAP_REM * PAGE_TYPE_PX) / count), height=None)
    return None


def on_slide(room: Room | None) -> Room | None:
    """``room`` where it is a slide's (it has a height); None on a scrolling page."""
    return room if room is not None and room.height is not None else None
