"""How fast the app answers in a real browser, and how much memory its server keeps (issue 14).

Drives headless Chromium (playwright, as the browser tests do) against a fresh server of this checkout and reports:
- cold start: server launched -> the Pipeline view's first run finished and the page fully drawn (the median of three
  fresh servers);
- per view, at default settings (1440 x 900, light): its first visit on the server, its first render in a fresh
  tab once the server is warm, and in-app navigation to it from Home (a sidebar link);
- per view and control (every widget of the sidebar and the main area at default settings, found in the page):
  the redraw time of each of N changes that alternate between two values, from the input event (pointer down or
  key down) to the app's ``script_finished`` message with the page fully drawn (p50, p95, min, n);
- per view, its sections: the redraw time of opening each (N rounds through them), each section's own controls
  (those of the main area) on their section, and every control again on the section, other than the first, that
  took the longest to open (its charts take the longest to draw; the first section had every control already);
- the Cost view's "Measure on this server": the time until its progress bar appears, and until the sweep's run ends;
- the floor (``benchmarks/floor_app.py``, a one-chart page, its server up for the whole run): its first render, at
  the root and at its own address, and its redraw after a change of its seed; each view's first render above the
  floor's at its own address, their loads interleaved (what the view itself adds, on the host as it was then);
- memory: a second fresh server, N sessions in turn (each a new browser context visiting every view, on its "All
  sections", and changing a few controls, with a sentence of its own), its resident memory (VmRSS, with any
  child processes) after sessions 1, 10 and N, the largest seen and the kernel's peak (VmHWM); and what its heap
  holds (``benchmarks.heap_probe``, which serves the app): malloc's bytes in use and free, Python's blocks.

Times come from the page's own clock: an init script marks the input event, decodes each WebSocket message's type
(``script_finished``) and watches the page for the last change to a chart's drawing and the last placeholder
(``stSkeleton``, shown while an element's code loads) to go. "Fully drawn": the page is idle, no placeholder is
visible and every visible chart has its svg or canvas; a redraw ends at the latest of the run's end, the charts'
last change and the last placeholder's removal, once nothing has happened for QUIET_MS.

Run from the repository root: ``.venv/bin/python -m benchmarks.bench_interactions`` (``--quick`` for a smoke run,
``--json`` for a JSON record as well, ``--views Scaling,Cost``, ``--repeats``, ``--sessions``); ``make bench``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # also runs as `python benchmarks/bench_interactions.py`
    sys.path.insert(0, str(ROOT))

from attn_core import bench  # noqa: E402
from attn_ui.measure import MEASURE  # noqa: E402
from attn_ui.page import PIPELINE, SECTION_PICKER, VIEWS, View  # noqa: E402
from benchmarks import heap_probe  # noqa: E402
from tests.browser_support import (  # noqa: E402
    SENTENCE,
    app_server,
    chromium,
    exception_texts,
    rerun,
    visit,
)

VIEWPORT = (1440, 900)
P50_MS, P95_MS = 300, 600
FIRST_RENDER_S, COLD_START_S = 1.5, 5.0
# The one-chart floor page's first render when the views last met 1.5 s (11-25, 03:00): a view may take 1.5/0.9 times
# as long as any Streamlit page. Where the host or browser makes the floor page itself slower, a view is held to that
# ratio to the floor page loaded beside it (first_render_limit): a busier host slows a page in proportion to its work.
FLOOR_AT_TARGET_S = 0.9
FLOOR_RATIO = FIRST_RENDER_S / FLOOR_AT_TARGET_S
SECTION = "section"  # the kind of a section's button in the sections' picker
WHOLE_VIEW = "whole view"  # the kind of the "All sections" button: it draws every section, as a view's first render does
RSS_MB = 600
GROWTH_MB = 1  # MB from session 10 to 20, on the line through them, that counts as growth (see memory_grows)
QUIET_MS = 200  # a redraw is over once no run has finished and no chart has changed for this long
WAIT_S = 60  # longest wait for one run (a sweep stops at its time budget)
COLD_STARTS = 3  # fresh servers timed for the cold start, one after the other (fewer with --repeats below 3)
RENDER_VISITS = 5  # loads in a new tab (each kind) and sidebar navigations per view, at most (fewer with --repeats below 5)
FLOOR_APP = "benchmarks/floor_app.py"  # a one-chart Streamlit page: the first render no app can beat here
FLOOR_CONTROL = "Seed"  # the floor app's one control: new values in its chart
FLOOR_AS_VIEWS = "at its own address (/chart)"  # where the floor page is opened as a view's link opens a view
FLOOR_PAGES = {"at the root (/)": "", FLOOR_AS_VIEWS: "/chart"}  # the floor app's page, where it is opened
SWEEP_RUNS = 3  # presses of the measure button, at most
RUN_SWEEP = MEASURE
PRESENTER = "Presenter mode"  # left alone by the memory sessions: it moves the controls into a popover
TEXTS = ("stTextArea", "stTextInput")
NEW_TEXT = "my friend reads an old book"  # for a text control that starts empty
TEXT_OVERRIDES = {  # text controls whose value has a structure a rotated sentence would break
    "The pronoun, then two words it may refer to": "it, street, animal",
    "Word": "the",
    "Document lengths": "4, 2",  # text it refuses would be replaced by its default, "3,3": no change to time
}
KINDS = {
    "stSelectbox": "selectbox",
    "stNumberInput": "number input",
    "stCheckbox": "toggle",
    "stRadio": "radio",
    "stSlider": "slider",
    "stTextArea": "text area",
    "stTextInput": "text input",
    "stButton": "button",
}

# Installed in every page before the app's scripts: the page-clock timestamps the measurements read.
INSTRUMENT = r"""(() => {
  const bench = window.__bench = { armed: false, input: null, finished: [], chartChange: 0, loaded: 0, progress: null };
  for (const type of ["pointerdown", "keydown"]) {
    window.addEventListener(type, () => {
      if (bench.armed) { bench.input = performance.now(); bench.armed = false; }
    }, true);
  }
  const varint = (bytes, at) => {
    let value = 0, scale = 1;
    while (true) {
      const byte = bytes[at++];
      value += (byte & 127) * scale;
      scale *= 128;
      if (byte < 128) return [value, at];
    }
  };
  const SCRIPT_FINISHED = 6;  // ForwardMsg.script_finished's field number
  const isScriptFinished = bytes => {  // walks the top-level fields of one ForwardMsg
    let at = 0;
    while (at < bytes.length) {
      let key, size;
      [key, at] = varint(bytes, at);
      if (key >>> 3 === SCRIPT_FINISHED) return true;
      const wire = key & 7;
      if (wire === 0) [, at] = varint(bytes, at);
      else if (wire === 1) at += 8;
      else if (wire === 5) at += 4;
      else if (wire === 2) { [size, at] = varint(bytes, at); at += size; }
      else return false;
    }
    return false;
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", event => {
        const now = performance.now();
        if (event.data instanceof ArrayBuffer && isScriptFinished(new Uint8Array(event.data))) bench.finished.push(now);
      });
    }
  };
  const SKELETON = "[data-testid='stSkeleton']";  // stands in for an element whose code is still loading
  const BAR = "[data-testid='stProgress']";
  const holds = (node, selector) => node.nodeType === 1 && (node.matches(selector) || node.querySelector(selector) !== null);
  // A chart's redraw sets thousands of SVG attributes, each a record: looking up the chart of every one of them cost
  // 75 ms of a 16-chart redraw, so only the first record of a batch that lies in a chart is looked up.
  new MutationObserver(records => {
    const now = performance.now();
    let inChart = false;
    for (const record of records) {
      if (!inChart) {
        const node = record.target.nodeType === 1 ? record.target : record.target.parentElement;
        inChart = node !== null && node.closest("[data-testid='stVegaLiteChart']") !== null;
        if (inChart) bench.chartChange = now;
      }
      if (record.type !== "childList") continue;
      if (bench.progress === null && [...record.addedNodes].some(added => holds(added, BAR))) bench.progress = now;
      if ([...record.removedNodes].some(gone => holds(gone, SKELETON))) bench.loaded = now;
    }
  }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
})();"""

# Resolves once the page is idle, fully drawn (no visible placeholder, every visible chart with its svg or canvas) and
# quiet for `quiet` ms; `end` is when the last of those things happened, on the page's clock.
SETTLED = r"""async ({ before, needRun, quiet, timeout }) => {
  const bench = window.__bench;
  const start = performance.now();
  const shown = selector => [...document.querySelectorAll(selector)].filter(element => element.getClientRects().length > 0);
  const drawn = () => shown("[data-testid='stSkeleton']").length === 0
    && shown("[data-testid='stVegaLiteChart']").every(chart => chart.querySelector("svg, canvas"));
  const idle = () => document.querySelector("[data-testid='stApp'][data-test-script-state='notRunning']") !== null;
  while (true) {
    await new Promise(done => setTimeout(done, 10));
    const now = performance.now();
    const lastRun = bench.finished.length ? bench.finished[bench.finished.length - 1] : 0;
    const last = Math.max(lastRun, bench.chartChange, bench.loaded, bench.input || 0);
    const ran = bench.finished.length > before;
    if ((ran || !needRun) && idle() && drawn() && now - last >= quiet) {
      return { end: last, input: bench.input, now, progress: bench.progress, runs: bench.finished.length - before };
    }
    if (now - start > timeout) return { timedOut: true, ran, idle: idle(), drawn: drawn(), input: bench.input };
  }
}"""

ARM = """() => {
  Object.assign(window.__bench, { armed: true, input: null, progress: null });
  return window.__bench.finished.length;
}"""

# Every widget on the page: its kind (data-testid), label, rank among widgets of that kind and label, place, state.
CONTROLS = r"""(kinds) => {
  const seen = {};
  return [...document.querySelectorAll(kinds.map(kind => `[data-testid='${kind}']`).join(","))].map(widget => {
    const testid = widget.dataset.testid;
    const named = testid === "stButton" ? widget.querySelector("button") : widget.querySelector("[data-testid='stWidgetLabel']");
    const label = named ? named.textContent.replace(/\s+/g, " ").trim() : "";
    const id = testid + "\n" + label;
    seen[id] = id in seen ? seen[id] + 1 : 0;
    const first = widget.querySelector("input, textarea, button, [role='slider']");
    const disabled = !first || first.disabled || first.getAttribute("aria-disabled") === "true";
    return { testid, label, nth: seen[id], sidebar: widget.closest("[data-testid='stSidebar']") !== null,
             visible: widget.getClientRects().length > 0 && widget.getBoundingClientRect().right > 0, disabled };
  });
}"""


@dataclass(frozen=True)
class Control:
    testid: str
    label: str
    nth: int
    sidebar: bool
    visible: bool
    disabled: bool

    @property
    def kind(self) -> str:
        return KINDS[self.testid]

    @property
    def name(self) -> str:
        return self.label + (f" #{self.nth + 1}" if self.nth else "")


@dataclass
class Timing:
    """The samples of one measured action, in milliseconds, with what went wrong."""

    view: str
    action: str
    where: str = ""
    kind: str = ""
    samples_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {"view": self.view, "action": self.action, "where": self.where, "kind": self.kind, **stats(self.samples_ms)}

    def add(self, sample: Callable[[], float]) -> None:
        """Take one sample; an error ends in ``errors`` rather than stopping the benchmark."""
        try:
            self.samples_ms.append(sample())
        except Exception as error:  # noqa: BLE001 - a benchmark reports every failure and goes on
            self.errors.append(describe(error))


def describe(error: Exception) -> str:
    """An error in one line: its type and the first line of its message."""
    lines = str(error).splitlines()
    return f"{type(error).__name__}: {lines[0][:300] if lines else ''}"


def stats(samples: list[float]) -> dict:
    """p50, p95 (linear interpolation between order statistics), min, max and n of some samples."""
    if not samples:
        return {"n": 0, "p50": None, "p95": None, "min": None, "max": None}
    ordered = sorted(map(float, samples))  # the page's clock may give whole milliseconds as integers
    position = 0.95 * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    p95 = ordered[low] + (ordered[high] - ordered[low]) * (position - low)
    return {"n": len(ordered), "p50": statistics.median(ordered), "p95": p95, "min": ordered[0], "max": ordered[-1]}


# ---------------------------------------------------------------- the page's clock


def settled(page, before: int = 0, *, need_run: bool = True) -> dict:
    """Wait (in the page) until the app has finished a run after ``before`` runs, is idle and its charts are drawn."""
    options = {"before": before, "needRun": need_run, "quiet": QUIET_MS, "timeout": WAIT_S * 1000}
    result = page.evaluate(SETTLED, options)
    if result.get("timedOut"):
        raise TimeoutError(f"no settled redraw within {WAIT_S} s: {result}")
    return result


Action = Callable[[Callable[[], None]], None]  # does one change, calling its argument just before the event that commits it


def timed(page, action: Action) -> dict:
    """Run ``action`` (which must cause one rerun) and return the page's timestamps of its input event and redraw."""
    settled(page, need_run=False)  # what came before is over
    before = []

    def arm() -> None:
        before.append(page.evaluate(ARM))

    with rerun(page, timeout_s=WAIT_S):
        action(arm)
    result = settled(page, before[0])
    if result["input"] is None:
        raise RuntimeError("the action sent no pointer or key event")
    return result


def click(arm: Callable[[], None], target) -> None:
    arm()
    target.click()


def redraw_ms(page, action: Action) -> float:
    result = timed(page, action)
    return result["end"] - result["input"]


# ---------------------------------------------------------------- controls


def find_controls(page) -> list[Control]:
    return [Control(**found) for found in page.evaluate(CONTROLS, list(KINDS))]


def locate(page, control: Control):
    widgets = page.locator(f"[data-testid='{control.testid}']")
    if control.testid == "stButton":
        named = widgets.filter(has=page.get_by_role("button", name=control.label, exact=True))
    else:
        named = widgets.filter(has=page.locator("[data-testid='stWidgetLabel']").get_by_text(control.label, exact=True))
    return named.nth(control.nth)


def other_text(label: str, text: str) -> str:
    """A real change of a text control that keeps its structure: every line (or "|"-separated sentence) with its
    first word moved to its end."""
    if label in TEXT_OVERRIDES:
        return TEXT_OVERRIDES[label]

    def rotate(part: str) -> str:
        words = part.split()
        return " ".join(words[1:] + words[:1]) if len(words) > 1 else part

    separator = "\n" if "\n" in text else "|"
    changed = f" {separator} " if separator == "|" else "\n"
    rotated = changed.join(rotate(part) for part in text.split(separator))
    return rotated if rotated.split() != text.split() else NEW_TEXT


try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # the test module skips without playwright; the benchmark needs it
    PlaywrightTimeout = TimeoutError


class Driver:
    """Changes one control; change ``k`` (0, 1, 2, ...) alternates between another value (k even) and the value it
    started from (k odd), so that every change is a real one and an even number of changes restores it."""

    def __init__(self, page, control: Control):
        self.page, self.control = page, control
        self.widget = locate(page, control)
        self.start = None  # the value it started from, read at the first change

    def act(self, k: int, arm: Callable[[], None] = lambda: None) -> None:
        """Prepare change ``k``, call ``arm`` just before the input event that commits it, then send that event."""
        if self.control.sidebar:
            open_sidebar(self.page)
        getattr(self, "_" + self.control.testid[2:].lower())(k, arm)

    def _selectbox(self, k, arm):
        box = self.widget.get_by_role("combobox")
        if self.start is None:
            self.start = box.input_value()
        options = self.page.get_by_role("option")
        for attempt in range(3):  # a key pressed while the page redraws may be lost: try again
            box.press("ArrowDown")  # 1.67's selectbox is a combobox; the keyboard opens its list
            try:
                options.first.wait_for(timeout=3_000 * (attempt + 1))
                break
            except PlaywrightTimeout:
                box.press("Escape")
        else:
            raise TimeoutError(f"the list of “{self.control.label}” did not open")
        names = [name.strip() for name in options.all_inner_texts()]
        index = next(i for i, name in enumerate(names) if name != self.start) if k % 2 == 0 else names.index(self.start)
        click(arm, options.nth(index))

    def _numberinput(self, k, arm):
        up, down = self.widget.get_by_test_id("stNumberInputStepUp"), self.widget.get_by_test_id("stNumberInputStepDown")
        if self.start is None:
            self.start = "up" if up.is_enabled() else "down"
        click(arm, up if (self.start == "up") == (k % 2 == 0) else down)

    def _checkbox(self, k, arm):
        click(arm, self.widget.locator("label").first)

    def _radio(self, k, arm):
        choices = self.widget.get_by_role("radio")
        if self.start is None:
            self.start = choices.evaluate_all("inputs => inputs.findIndex(input => input.checked)")
        index = (self.start + 1) % choices.count() if k % 2 == 0 else self.start
        click(arm, self.widget.locator("label").filter(has=self.page.get_by_role("radio")).nth(index))

    def _slider(self, k, arm):
        thumb = self.widget.get_by_role("slider").first
        if self.start is None:
            at_end = thumb.evaluate("t => Number(t.value ?? t.ariaValueNow) >= Number(t.max || t.ariaValueMax)")
            self.start = ("ArrowLeft", "ArrowRight") if at_end else ("ArrowRight", "ArrowLeft")
        thumb.focus()
        arm()
        self.page.keyboard.press(self.start[k % 2])

    def _text(self, k, arm, box: str, commit: str):
        field_ = self.widget.locator(box)
        if self.start is None:
            self.start = field_.input_value()
        field_.fill(other_text(self.control.label, self.start) if k % 2 == 0 else self.start)
        arm()
        field_.press(commit)

    def _textarea(self, k, arm):
        self._text(k, arm, "textarea", "Control+Enter")  # what commits an st.text_area

    def _textinput(self, k, arm):
        self._text(k, arm, "input", "Enter")

    def _button(self, k, arm):
        click(arm, self.widget.get_by_role("button"))


def open_sidebar(page) -> None:
    """Open the sidebar where it is collapsed (as presenter mode leaves it), as a user would: untimed."""
    opener = page.get_by_test_id("stExpandSidebarButton")
    if opener.count() and opener.is_visible():
        opener.click()
        page.wait_for_function("() => document.querySelector(\"[data-testid='stSidebar']\").getBoundingClientRect().right > 0")


def drivable(control: Control) -> bool:
    return control.visible and not control.disabled and control.label != RUN_SWEEP


def measure_control(page, label: str, control: Control, repeats: int, section: str = "") -> Timing:
    """``control`` of the page (of the view or app ``label``) changed ``repeats`` times, each redraw timed."""
    name = f"{control.name} · on {section}" if section else control.name
    timing = Timing(label, name, "sidebar" if control.sidebar else "main", control.kind)
    driver = Driver(page, control)
    for k in range(repeats):
        if k and control.testid == "stButton" and not driver.widget.count():
            break  # a button that goes once pressed (the Real model's sweep, measured) is timed once
        timing.add(lambda k=k: redraw_ms(page, lambda arm: driver.act(k, arm)))
        if exception_texts(page):
            timing.errors.append(f"change {k + 1} shows an exception: {exception_texts(page)[0].splitlines()[0]}")
    if repeats % 2 and control.testid != "stButton" and not timing.errors:  # back to the default value, untimed
        with rerun(page, timeout_s=WAIT_S):
            driver.act(repeats)
    return timing


def view_url(base: str, view: View, slide: int | str | None = None) -> str:
    """The view's address, on its first section or on section ``slide`` ("all": every section)."""
    return f"{base}/{view.url_path}" + (f"?slide={slide}" if slide else "")


def open_view(browser, base: str, view: View):
    """A fresh tab on ``view`` after its first run, and that first render's time (s) from the start of navigation."""
    return open_tab(browser, view_url(base, view))


def open_tab(opener, url: str):
    """A new tab of ``opener`` (a browser: in a fresh context; or ``CachedTabs``) on ``url`` after its first run, and
    that first render's time (s) from the start of navigation."""
    page = visit(opener, url, VIEWPORT, "light", init_script=INSTRUMENT)
    page.set_default_timeout(30_000)
    return page, settled(page)["end"] / 1000


class CachedTabs:
    """New tabs in one browser context, which keeps its HTTP cache, as a browser that has opened the app before: a
    link opened in a new tab, a reload. Streamlit serves its scripts as immutable for a year, so only a browser's
    first visit loads them (a fresh context, with nothing cached, is that first visit)."""

    def __init__(self, browser):
        width, height = VIEWPORT
        self.viewport = {"width": width, "height": height}
        self.context = browser.new_context(viewport=self.viewport, color_scheme="light")

    def new_page(self, viewport: dict, color_scheme: str):
        """As ``Browser.new_page`` (``tests.browser_support.visit`` calls it), in this context and its settings."""
        assert viewport == self.viewport and color_scheme == "light"
        return self.context.new_page()


def first_renders(browser, pages: dict[str, str], visits: int) -> dict[str, tuple[Timing, Timing]]:
    """The first render of each of ``pages`` (label: URL) in a new tab, ``visits`` times each, the pages and the two
    ways interleaved, so that a host that slows down slows them all: in a fresh browser context, with nothing cached,
    and in a browser that has loaded the page once (its scripts cached)."""
    timings, tabs = {}, {}
    try:
        for label, url in pages.items():
            fresh = Timing(label, "first render, fresh tab", kind="page load")
            timings[label] = fresh, Timing(label, "first render, new tab, scripts cached", kind="page load")
            tabs[label] = CachedTabs(browser)
            open_tab(tabs[label], url)[0].close()  # the browser's first visit: its scripts are cached from now on
        for visit_number in range(visits):
            order = list(pages) if visit_number % 2 == 0 else list(pages)[::-1]
            for label in order:
                for timing, opener in zip(timings[label], (browser, tabs[label]), strict=True):
                    timing.add(lambda opener=opener, url=pages[label]: 1000 * load(opener, url))
    finally:
        for cached in tabs.values():
            cached.context.close()
    return timings


def load(opener, url: str) -> float:
    """Seconds from navigation start to the first render of ``url`` in a new tab of ``opener``."""
    page, seconds = open_tab(opener, url)
    page.close()
    return seconds


def back_to_defaults(page, url: str, controls: list[Control]) -> None:
    """Reload the view unless its URL (where the app keeps its state) and its controls are those it opened with."""
    settled(page, need_run=False)
    if page.url != url or find_controls(page) != controls:
        with rerun(page, timeout_s=WAIT_S):
            page.goto(url)
        settled(page, need_run=False)


def navigate_from_home(page, base: str, view: View) -> float:
    """Seconds from a click on ``view``'s sidebar link (on Home) to its first run drawn: in-app navigation."""
    with rerun(page, timeout_s=WAIT_S):
        page.goto(base)
    link = page.locator(f"[data-testid='stSidebar'] a[href$='{view.url_path}']")
    return redraw_ms(page, lambda arm: click(arm, link)) / 1000


def sweep_sample(page, done: Timing) -> float:
    """Press "Measure on this server": milliseconds until its progress bar appears; the time until the run ends with its charts
    drawn goes to ``done``."""
    button = page.locator("[data-testid='stSidebar']").get_by_role("button", name=RUN_SWEEP, exact=True)
    result = timed(page, lambda arm: click(arm, button))
    done.samples_ms.append(result["end"] - result["input"])
    if result["progress"] is None:
        raise RuntimeError("no progress bar appeared")
    return result["progress"] - result["input"]


@dataclass
class ViewResult:
    view: str
    first_visit_s: float | None = None
    fresh_tab: Timing | None = None  # seconds * 1000 in samples_ms
    cached_tab: Timing | None = None  # seconds * 1000 in samples_ms
    floor_fresh_tab: Timing | None = None  # the floor page's, its loads interleaved with the view's
    floor_cached_tab: Timing | None = None
    from_home: Timing | None = None
    controls: list[Timing] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    sweep_progress: Timing | None = None
    sweep_done: Timing | None = None


def sections_picker(page):
    """The view's sections' picker: a button a section (the first section's, ..., "All sections"), in order."""
    return page.locator(f"[data-testid='stMain'] .st-key-{SECTION_PICKER}")


def measure_sections(page, view: View, repeats: int) -> tuple[list[Timing], dict[int, float]]:
    """Open each section in turn (its button in the sections' picker), from the first: the second, the third ...,
    "All sections", the first again, ``repeats`` rounds. Returns a timing per section, and each section's p50 (ms)
    by its number."""
    labels = [label.strip() for label in sections_picker(page).get_by_role("radio").all_inner_texts()]
    order = labels[1:] + labels[:1]
    kinds = {label: WHOLE_VIEW if label == labels[-1] else SECTION for label in labels}
    timings = {label: Timing(view.label, f"section “{label}”", "main", kinds[label]) for label in order}
    for _ in range(repeats):
        for label in order:
            button = sections_picker(page).get_by_role("radio", name=label, exact=True)
            timings[label].add(lambda button=button: redraw_ms(page, lambda arm: click(arm, button)))
    p50 = {number: timings[label].summary()["p50"] or 0.0 for number, label in enumerate(labels[:-1], 1)}
    return list(timings.values()), p50


def measure_controls(page, view: View, repeats: int, result: ViewResult, section: str = "", main_only: bool = False) -> None:
    """Every control of the page as it is now (``main_only``: those of the main area, a section's own), each changed
    ``repeats`` times, the page restored after each."""
    opened_at, controls = page.url, find_controls(page)
    for control in controls:
        if control.label == RUN_SWEEP or main_only and control.sidebar:
            continue
        if not drivable(control):
            if not section:
                result.skipped.append(f"{control.kind} “{control.name}” ({'hidden' if not control.visible else 'disabled'})")
            continue
        progress(f"{view.label} · {control.name}" + (f" · on {section}" if section else ""))
        result.controls.append(measure_control(page, view.label, control, repeats, section))
        back_to_defaults(page, opened_at, controls)


def floor_redraw(browser, base: str, repeats: int) -> Timing:
    """The one-chart page's redraw after a change of its seed (new values in the same chart): the redraw no view can
    beat on this machine, and a measure of how fast the machine is in this run."""
    page, _ = open_tab(browser, base)
    try:
        (seed,) = [control for control in find_controls(page) if control.label == FLOOR_CONTROL]
        return measure_control(page, FLOOR_APP, seed, repeats)
    finally:
        page.close()


def measure_view(browser, base: str, view: View, repeats: int, floor_base: str) -> ViewResult:
    """Every measurement of one view; its first renders beside the floor page's (``floor_base``: its server), opened
    at its own address, as a view's link opens a view."""
    result = ViewResult(view.label)
    page, result.first_visit_s = open_view(browser, base, view)
    page.close()
    pages = {view.label: view_url(base, view), FLOOR_APP: floor_base + FLOOR_PAGES[FLOOR_AS_VIEWS]}
    renders = first_renders(browser, pages, min(repeats, RENDER_VISITS))
    result.fresh_tab, result.cached_tab = renders[view.label]
    result.floor_fresh_tab, result.floor_cached_tab = renders[FLOOR_APP]
    page, _ = open_view(browser, base, view)
    opened_at = page.url
    measure_controls(page, view, repeats, result)
    progress(f"{view.label} · sections")
    sections, opening_ms = measure_sections(page, view, repeats)
    result.controls += sections
    # every control again on the slowest section to open but the first, where they were all measured already
    slowest = max(opening_ms.keys() - {1}, key=opening_ms.get, default=1)
    for section in sorted(opening_ms.keys() - {1}):  # each section's own controls; all of them on the slowest
        with rerun(page, timeout_s=WAIT_S):
            page.goto(view_url(base, view, slide=section))
        settled(page, need_run=False)  # every control drawn
        measure_controls(page, view, repeats, result, f"section {section}", main_only=section != slowest)
    with rerun(page, timeout_s=WAIT_S):
        page.goto(opened_at)
    settled(page, need_run=False)
    if any(control.label == RUN_SWEEP for control in find_controls(page)):
        result.sweep_progress = Timing(view.label, f"“{RUN_SWEEP}” → progress bar shown", "sidebar", "button")
        result.sweep_done = Timing(view.label, f"“{RUN_SWEEP}” → sweep drawn", "sidebar", "button")
        for _ in range(min(repeats, SWEEP_RUNS)):
            result.sweep_progress.add(lambda: sweep_sample(page, result.sweep_done))
    result.from_home = Timing(view.label, "first render, sidebar link from Home", kind="navigation")
    for _ in range(min(repeats, RENDER_VISITS)):
        result.from_home.add(lambda: 1000 * navigate_from_home(page, base, view))
    page.close()
    return result


# ---------------------------------------------------------------- memory


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    found, at = [pid], 0
    while at < len(found):
        for task in Path(f"/proc/{found[at]}/task").glob("*"):
            found += [int(child) for child in (task / "children").read_text().split()]
        at += 1
    return found


def status_mb(pid: int, key: str) -> float:
    """One memory figure of /proc/PID/status (VmRSS, VmHWM), in MB, summed over the process and its children."""
    total_kib = 0
    for member in process_tree(pid):
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{member}/status").read_text().splitlines() if ":" in line)
        total_kib += int(fields.get(key, "0 kB").split()[0])
    return total_kib / 1024


def session_sentence(text: str, session: int) -> str:
    """The session's own sentence, so that every session brings new values to the caches."""
    words = SENTENCE.split()
    return f"{text} {words[session % len(words)]} {words[session // len(words) % len(words)]}"


def one_session(browser, base: str, views: list[View], session: int, changes: int = 2) -> None:
    """A new browser context that opens every view, types its own sentence and changes ``changes`` other controls.
    Each view is opened on "All sections", so that every section runs and fills its caches."""
    page = visit(browser, view_url(base, views[0], slide="all"), VIEWPORT, "light", init_script=INSTRUMENT)
    page.set_default_timeout(30_000)
    where = views[0].label
    try:
        for number, view in enumerate(views):
            where = view.label
            if number:
                with rerun(page, timeout_s=WAIT_S):
                    page.goto(view_url(base, view, slide="all"))
            settled(page, need_run=False)  # elements whose code loads late are there
            text = next((c for c in find_controls(page) if drivable(c) and c.testid in TEXTS), None)
            if text:
                where = f"{view.label} · {text.name}"
                box = locate(page, text).locator("textarea, input").first
                box.fill(session_sentence(box.input_value(), session))
                with rerun(page, timeout_s=WAIT_S):
                    box.press("Control+Enter" if text.testid == "stTextArea" else "Enter")
                settled(page, need_run=False)
            changed = set()
            for _ in range(changes):  # found again after each change, which may disable or hide others
                others = [c for c in find_controls(page) if drivable(c) and c.testid not in TEXTS + ("stButton",)]
                control = next((c for c in others if c.label != PRESENTER and c.name not in changed), None)
                if control is None:
                    break
                where = f"{view.label} · {control.name}"
                changed.add(control.name)
                with rerun(page, timeout_s=WAIT_S):
                    Driver(page, control).act(0)
                settled(page, need_run=False)
    except Exception as error:
        raise RuntimeError(f"{where}: {describe(error)}") from error
    finally:
        page.context.close()


def growth_mb(rss: list[float]) -> tuple[float, float] | None:
    """MB gained from session 10 to 20 (None before 20) on the least-squares line through those 11 readings, and the
    standard error of that figure: one session's RSS moves by a megabyte or two either way, so the two ends alone can
    show growth where there is none, and even the line's moves by about a megabyte from run to run."""
    if len(rss) < 20:
        return None
    (slope, _), covariance = np.polyfit(np.arange(10, 21), rss[9:20], 1, cov=True)
    return 10 * float(slope), 10 * float(np.sqrt(covariance[0, 0]))


def memory_grows(growth: float, error: float) -> bool:
    """Whether the line's growth from session 10 to 20 is more than GROWTH_MB and more than twice its standard
    error: more than the readings' own noise could give (a leak of half a megabyte a session gives 5 MB)."""
    return growth > max(GROWTH_MB, 2 * error)


def fitted_growth(growth: tuple[float, float]) -> str:
    """A line's growth and its standard error (``growth_mb``), with the verdict on it."""
    return "{:+.1f} ± {:.1f} MB ({})".format(*growth, verdict(not memory_grows(*growth)))


def measure_memory(browser, views: list[View], sessions: int) -> dict:
    """A fresh server's resident memory, and its heap (``benchmarks.heap_probe``), after each of ``sessions``
    sessions."""
    rss, heaps = [], []
    errors = []
    with app_server(module="benchmarks.heap_probe") as server:
        for session in range(1, sessions + 1):
            progress(f"memory: session {session} of {sessions}")
            try:
                one_session(browser, server.base, views, session)
            except Exception as error:  # noqa: BLE001 - reported, and the sessions go on
                errors.append(f"session {session}: {describe(error)}")
            rss.append(status_mb(server.pid, "VmRSS"))
            heaps.append(heap_probe.read(server.pid) or {})
        peak = status_mb(server.pid, "VmHWM")
    after = {n: rss[n - 1] for n in sorted({1, min(10, sessions), sessions})}
    kept = [heap["kept_mb"] for heap in heaps if "kept_mb" in heap]
    return {
        "sessions": sessions,
        "rss_mb": rss,
        "heap": heaps,
        "after": after,
        "max_mb": max(rss),
        "peak_mb": peak,
        "growth_10_to_last_mb": rss[-1] - rss[min(10, sessions) - 1],
        "growth_10_to_20_mb": growth_mb(rss),
        "kept_growth_10_to_20_mb": growth_mb(kept) if len(kept) == len(heaps) else None,
        "errors": errors,
    }


# ---------------------------------------------------------------- the run


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def machine(browser) -> dict:
    """attn_core.bench's record of the machine (its CPU model and caches: one model name, "AMD EPYC", comes with
    different caches, and the times follow them), with its memory, the app's versions and the browser's."""
    meminfo = Path("/proc/meminfo").read_text().split()
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return bench.machine() | {
        "memory_gb": round(int(meminfo[meminfo.index("MemTotal:") + 1]) / 2**20, 1),
        "streamlit": version("streamlit"),
        "chromium": browser.version,
        "commit": commit,
    }


@contextmanager
def launched_server() -> Iterator[tuple]:
    """A fresh server and the perf_counter time at which it was launched."""
    launched = time.perf_counter()
    with app_server() as server:
        yield server, launched


def cold_start(browser, server, launched: float, view: View) -> dict:
    """Seconds from the server's launch until it answered its health check, and until ``view`` was drawn in a tab."""
    healthy = time.perf_counter() - launched
    page = visit(browser, view_url(server.base, view), VIEWPORT, "light", init_script=INSTRUMENT)
    result = settled(page)
    drawn = time.perf_counter() - launched - (result["now"] - result["end"]) / 1000
    page.close()
    return {"view": view.label, "healthy_s": healthy, "drawn_s": drawn}


def cold_starts(browser, view: View, launches: int) -> dict:
    """``cold_start`` of ``launches`` fresh servers in turn: the median of each figure (one launch near the target
    passes or misses with the host), and every launch's time until ``view`` was drawn."""
    samples = []
    for _ in range(launches):
        with launched_server() as (server, launched):
            samples.append(cold_start(browser, server, launched, view))
    medians = {key: statistics.median(sample[key] for sample in samples) for key in ("healthy_s", "drawn_s")}
    return {"view": view.label, **medians, "drawn_samples_s": [sample["drawn_s"] for sample in samples]}


def run(views: list[View], repeats: int, sessions: int) -> dict:
    """Every measurement; a JSON-ready record."""
    settings = {
        "views": [view.label for view in views],
        "repeats": repeats,
        "sessions": sessions,
        "viewport": list(VIEWPORT),
        "color_scheme": "light",
        "quiet_ms": QUIET_MS,
    }
    with chromium() as browser, app_server(script=FLOOR_APP) as floor:
        record = {"machine": machine(browser), "settings": settings, "views": []}
        progress("cold start")
        record["cold_start"] = cold_starts(browser, PIPELINE, min(repeats, COLD_STARTS))
        with app_server() as server:
            for view in views:
                progress(f"{view.label}: first render, controls")
                try:
                    result = measure_view(browser, server.base, view, repeats, floor.base)
                except Exception as error:  # noqa: BLE001 - one view's failure must not hide the others
                    result = ViewResult(view.label, skipped=[f"the view failed: {describe(error)}"])
                record["views"].append(view_record(result))
            record["timing_server_rss_mb"] = status_mb(server.pid, "VmRSS")
        progress("one-chart Streamlit app: first render")
        pages = {where: floor.base + path for where, path in FLOOR_PAGES.items()}
        renders = first_renders(browser, pages, min(repeats, RENDER_VISITS))
        record["floor"] = {
            where: {"fresh_tab": summary(fresh), "cached_tab": summary(cached)} for where, (fresh, cached) in renders.items()
        }
        record["floor_redraw"] = summary(floor_redraw(browser, floor.base, repeats))
        record["memory"] = measure_memory(browser, views, sessions)
    return record


def summary(timing: Timing | None) -> dict | None:
    return timing and {**timing.summary(), "errors": timing.errors, "samples_ms": timing.samples_ms}


def view_record(result: ViewResult) -> dict:
    return {
        "view": result.view,
        "first_visit_s": result.first_visit_s,
        "fresh_tab": summary(result.fresh_tab),
        "cached_tab": summary(result.cached_tab),
        "floor_fresh_tab": summary(result.floor_fresh_tab),
        "floor_cached_tab": summary(result.floor_cached_tab),
        "from_home": summary(result.from_home),
        "controls": [summary(timing) for timing in result.controls],
        "sweep_progress": summary(result.sweep_progress),
        "sweep_done": summary(result.sweep_done),
        "skipped": result.skipped,
    }


# ---------------------------------------------------------------- the report


def number(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def verdict(passed: bool | None) -> str:
    return "—" if passed is None else ("ok" if passed else "**MISS**")


def redraw_verdict(row: dict) -> str:
    """Against the redraw targets; "All sections", which draws every section of the view, as a first render."""
    if row["p50"] is None:
        return verdict(None)
    if row["kind"] == WHOLE_VIEW:
        return f"{verdict(row['p50'] < 1000 * FIRST_RENDER_S)} (whole view: first render)"
    misses = [name for name, value, limit in (("p50", row["p50"], P50_MS), ("p95", row["p95"], P95_MS)) if value >= limit]
    return "ok" if not misses else "**MISS** " + ", ".join(misses)


def redraw_cells(row: dict, verdict_text: str) -> list[str]:
    """One row of the redraw table: what was changed where, its p50, p95 and min (ms), and ``verdict_text``."""
    return [
        row["view"],
        row["action"],
        row["where"],
        row["kind"],
        str(row["n"]),
        number(row["p50"]),
        number(row["p95"]),
        number(row["min"]),
        verdict_text,
    ]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(cells) + " |" for cells in rows]


def first_render_limit(floor: dict | None) -> float:
    """The first render (s) a view must beat, given the floor page's loaded beside it (a timing in ms): 1.5 s, or,
    where the floor page itself takes more than it did when the views met 1.5 s, 1.5/0.9 times the floor page's p50."""
    if not floor or floor["p50"] is None:
        return FIRST_RENDER_S
    return max(FIRST_RENDER_S, floor["p50"] / 1000 * FLOOR_RATIO)


def seconds_stats(timing: dict | None, limit_s: float = FIRST_RENDER_S) -> tuple[str, str, bool | None]:
    """p50 and max of a timing held in ms, in seconds, and whether its p50 is below ``limit_s``."""
    if not timing or timing["p50"] is None:
        return "—", "—", None
    return number(timing["p50"] / 1000, 2), number(timing["max"] / 1000, 2), timing["p50"] / 1000 < limit_s


def above_floor(view: dict | None, floor: dict | None) -> list[str]:
    """How much longer than the floor page a view's first render took (p50 against p50), in seconds and as a ratio."""
    if not view or not floor or view["p50"] is None or floor["p50"] is None:
        return ["—", "—"]
    return [f"{(view['p50'] - floor['p50']) / 1000:+.2f}", f"{view['p50'] / floor['p50']:.2f}"]


def report(record: dict) -> str:
    m, s = record["machine"], record["settings"]
    lines = [
        "# Interactions in a real browser (benchmarks/bench_interactions.py)",
        "",
        f"Machine: {m['cpu']} ({m['caches'] or 'caches unknown'}), {m['cores']} cores, {m['memory_gb']} GB; "
        f"load average at start {m['load_average']}; "
        f"Python {m['python']}, torch {m['torch']}, streamlit {m['streamlit']}, Chromium {m['chromium']}; "
        f"commit {m['commit']}; {m['date']}.",
        f"Settings: {s['repeats']} changes per control, {s['sessions']} sessions, viewport {s['viewport'][0]}×{s['viewport'][1]} "
        f"{s['color_scheme']}, views {', '.join(s['views'])}.",
        "",
        f"## Start and first render (targets: cold start < {COLD_START_S:g} s, first render < {FIRST_RENDER_S:g} s or, "
        f"where the one-chart page loaded beside it takes over {FLOOR_AT_TARGET_S:g} s, less than "
        f"{FLOOR_RATIO:.2f} times it)",
        "",
    ]
    cold = record["cold_start"]
    lines += table(
        ["cold start (median of the launches)", "seconds", "target"],
        [
            ["server launched → health check answers", number(cold["healthy_s"], 2), ""],
            [
                f"server launched → {cold['view']} drawn in a tab (each launch: "
                + ", ".join(number(drawn, 2) for drawn in cold["drawn_samples_s"])
                + ")",
                number(cold["drawn_s"], 2),
                verdict(cold["drawn_s"] < COLD_START_S),
            ],
        ],
    )
    rows = []
    for view in record["views"]:
        row = [view["view"], number(view["first_visit_s"], 2)]
        for kind in ("fresh_tab", "cached_tab", "from_home"):
            p50, most, ok = seconds_stats(view[kind], first_render_limit(view.get(f"floor_{kind}")))
            row += [p50, most, verdict(ok)]
        rows.append(row)
    for where, floor in record.get("floor", {}).items():
        row = [f"one-chart page ({FLOOR_APP}) {where}", "—"]
        for timing in (floor["fresh_tab"], floor["cached_tab"]):
            row += [*seconds_stats(timing)[:2], "(not a target)"]
        rows.append(row + ["—", "—", "—"])
    header = ["view", "first visit (s)", "fresh tab p50 (s)", "max", "target", "scripts cached p50 (s)", "max", "target"]
    lines += ["", *table(header + ["from Home p50 (s)", "max", "target"], rows)]
    lines += [
        "",
        "First visit: the view's first tab on this server (its caches empty). Fresh tab: a new browser context once the "
        "server is warm, from navigation start, nothing cached (a browser's first visit). Scripts cached: a new tab of a "
        "browser that has loaded the page once (a link opened in a new tab, a reload). From Home: a click on the view's "
        "sidebar link, in the same session. The one-chart app is the floor: the first render no app can beat here.",
        "",
    ]
    rows = [
        [
            view["view"],
            *(seconds_stats(view[f"floor_{kind}"])[0] for kind in ("fresh_tab", "cached_tab")),
            *(cell for kind in ("fresh_tab", "cached_tab") for cell in above_floor(view[kind], view[f"floor_{kind}"])),
        ]
        for view in record["views"]
        if view["fresh_tab"]
    ]
    header = ["view", "floor: fresh tab p50 (s)", "floor: scripts cached p50 (s)", "fresh tab − floor (s)", "÷ floor"]
    lines += [
        *table(header + ["scripts cached − floor (s)", "÷ floor"], rows),
        "",
        f"Above the floor: each view's first render less the one-chart page's {FLOOR_AS_VIEWS}, as a view's link "
        "opens it, their loads interleaved (p50 against p50): what the view adds to what any Streamlit page costs on "
        f"this machine at that moment. The one-chart page took {FLOOR_AT_TARGET_S:g} s when the views last met "
        f"{FIRST_RENDER_S:g} s; where it takes longer, a view's first render is held to {FLOOR_RATIO:.2f} times it "
        "(÷ floor; the target column of the table above): a busier host slows a page in proportion to its work.",
        "",
    ]
    lines += [
        f"## Redraw after a control change (targets: p50 < {P50_MS} ms, p95 < {P95_MS} ms)",
        "",
    ]
    rows, notes = [], []
    for view in record["views"]:
        for row in view["controls"] + [view["sweep_progress"], view["sweep_done"]]:
            if row is None:
                continue
            is_sweep = row["action"].startswith(f"“{RUN_SWEEP}”")
            rows.append(redraw_cells(row, "(not a target)" if is_sweep else redraw_verdict(row)))
            notes += [f"{row['view']} · {row['action']}: {error}" for error in row["errors"]]
        for timing in (view[kind] for kind in ("fresh_tab", "cached_tab", "floor_fresh_tab", "floor_cached_tab", "from_home")):
            notes += [f"{view['view']} · {timing['action']}: {error}" for error in (timing or {}).get("errors", [])]
        notes += [f"{view['view']}: skipped {what}" for what in view["skipped"]]
    floor = record.get("floor_redraw")
    if floor:
        rows.append(redraw_cells(floor, "(not a target)"))
        notes += [f"{floor['view']} · {floor['action']}: {error}" for error in floor["errors"]]
    lines += table(["view", "control", "where", "kind", "n", "p50 ms", "p95 ms", "min ms", "target"], rows)
    if floor:
        lines += [
            "",
            f"The one-chart page's {FLOOR_CONTROL} (new values in its one chart) is the floor: the redraw no view can "
            "beat here, and how fast this machine was in this run.",
        ]
    if notes:
        lines += ["", "Notes:", *[f"- {note}" for note in notes]]
    memory = record["memory"]
    lines += memory_lines(memory, record["timing_server_rss_mb"])
    lines += [f"- {error}" for error in memory["errors"]]
    return "\n".join(lines)


def memory_lines(memory: dict, timing_server_mb: float) -> list[str]:
    """Resident memory after sessions 1, 10 and the last, against its ceiling; what the server keeps
    (``benchmarks.heap_probe``) against "no growth": resident memory also counts the free space in malloc's arenas,
    which grows for a while as each arena (one a thread, up to 8 a core) reaches the free space its own mix of blocks
    leaves. Without the probe (not Linux with glibc 2.33+), no growth is judged on resident memory."""
    heaps = {n: memory["heap"][int(n) - 1] for n in memory["after"]}  # int: a record read back from JSON has str keys
    probed = all("kept_mb" in heap for heap in heaps.values())
    rss_growth, kept_growth = memory["growth_10_to_20_mb"], memory["kept_growth_10_to_20_mb"]
    lines = [
        "",
        f"## Server memory (target: < {RSS_MB} MB after 20 sessions; no growth from the 10th to the 20th: every cache bounded)",
        "",
        *table(
            ["after session", "RSS MB"],
            [[str(n), number(mb)] for n, mb in memory["after"].items()]
            + [["largest after any session", number(memory["max_mb"])], ["peak (VmHWM)", number(memory["peak_mb"])]],
        ),
        "",
        f"Below {RSS_MB} MB after every session: {verdict(memory['max_mb'] < RSS_MB)}. Timing server at its end: "
        f"{number(timing_server_mb)} MB. Resident memory from session {min(10, memory['sessions'])} to "
        f"{memory['sessions']}: {memory['growth_10_to_last_mb']:+.0f} MB between the two"
        + (
            "; on the least-squares line through sessions 10 to 20 (± its standard error), "
            + ("{:+.1f} ± {:.1f} MB".format(*rss_growth) if probed else fitted_growth(rss_growth))
            if rss_growth is not None
            else " (fewer than 20 sessions)"
        )
        + ".",
    ]
    if not probed:
        return lines + ["", "(What the server keeps was not read after every session: that needs Linux, glibc 2.33 or later.)"]
    header = ["after session", "kept MB", "malloc: in use MB", "malloc: free in its arenas MB", "Python: blocks", "Python: MB"]
    rows = [
        [str(n), *(number(h[k]) for k in ("kept_mb", "in_use_mb", "free_mb")), f"{h['python_blocks']:,}", number(h["python_mb"])]
        for n, h in heaps.items()
    ]
    line = "(needs 20 sessions, each read)" if kept_growth is None else fitted_growth(kept_growth)
    return lines + [
        "",
        *table(header, rows),
        "",
        f"No growth, judged on what the server keeps (the bytes malloc and Python's small-object allocator have handed out "
        f"and not got back), on the least-squares line through sessions 10 to 20: {line}. Resident memory also counts "
        "the free space between the blocks in malloc's arenas, one a thread up to 8 a core (Streamlit runs each script "
        "run in a thread of its own); it grows for a while as each arena in turn reaches the free space its own mix of "
        "blocks leaves, which is not anything the app keeps.",
    ]


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    labels = [view.url_path for view in VIEWS]
    parser.add_argument("--views", default=",".join(labels), help=f"comma-separated, of {', '.join(labels)}")
    parser.add_argument("--repeats", type=int, default=7, help="changes per control (alternating values)")
    parser.add_argument("--sessions", type=int, default=20, help="browser sessions for the memory figures")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 changes per control, 3 sessions")
    parser.add_argument(
        "--json", nargs="?", const="-", metavar="PATH", help="also write the record as JSON (to PATH, or to stdout)"
    )
    options = parser.parse_args(argv)
    if options.quick:
        options.repeats, options.sessions = 3, 3
    by_name = {name.lower(): view for view in VIEWS for name in (view.url_path, view.label)}
    try:
        options.views = [by_name[name.strip().lower()] for name in options.views.split(",") if name.strip()]
    except KeyError as missing:
        parser.error(f"unknown view {missing}; choose from {', '.join(labels)}")
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    started = time.perf_counter()
    record = run(options.views, options.repeats, options.sessions)
    record["benchmark_s"] = time.perf_counter() - started
    print(report(record))
    print(f"\n(benchmark took {record['benchmark_s']:.0f} s)")
    if options.json == "-":
        print(json.dumps(record, indent=1))
    elif options.json:
        Path(options.json).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
