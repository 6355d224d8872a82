"""Layout, readability, themes and presenter mode of every view, in a real browser (Playwright + Chromium).

Each view is opened by URL with a 16-word sentence on its "All sections" tab (every section drawn) and measured at
four window sizes: no traceback, charts neither overlapping nor leaving the main column, no sideways scrolling, every
token shown on every heatmap axis, readable axis labels in the light and the dark theme. Presenter mode
(``?present=on``) shows one numbered slide at a time, moved by the arrow keys and a clicker's PageDown/PageUp. Slow
parts are shared: one server per module, each view loaded once per colour scheme and resized rather than reloaded.

Heatmaps are recognised by their Vega-Lite ``description`` ("heatmap: ..."), which Vega writes as the
``aria-label`` of the chart's container; "heatmap grid: ..." small multiples have no token axes.
"""

from __future__ import annotations

import re
import time
from urllib.parse import urlencode

import pytest

from attn_ui.page import SECTION_PICKER, VIEWS
from tests.browser_support import (
    IDLE,
    SENTENCE,
    contrast,
    exception_texts,
    luminance,
    rerun,
    rgba,
    settle_layout,
    settle_runs,
    skip_without_browser,
    visit,
)

skip_without_browser()
PlaywrightError = pytest.importorskip("playwright.sync_api").Error

WORDS = SENTENCE.split()
WITHOUT_TEXT = {"Cost", "Training"}  # views that take no sentence
VIEWPORTS = ((1024, 576), (1280, 720), (1440, 900), (1920, 1080))
DARK_VIEWPORT = (1280, 720)
SLACK_PX = 1.0
FORMULA_SLACK_PX = 4  # KaTeX's italic corrections overhang a formula's box by a pixel or two
MIN_LABEL_PX = 14
MIN_CONTRAST = 4.5
MAX_DARK_LUMINANCE = 0.2
STEP = re.compile(r"Step (\d+) of (\d+)")
KEY_WAIT_S = 60  # a slide change is one rerun; an unbound key never causes one

# Everything the layout checks read, in one pass over the page.
MEASURE = r"""(sectionPicker) => {
  const box = element => {
    const r = element.getBoundingClientRect();
    return { left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height };
  };
  const opacity = element => {
    let value = 1;
    for (let e = element; e && e.tagName.toLowerCase() !== "svg"; e = e.parentElement) {
      value *= parseFloat(getComputedStyle(e).opacity);
    }
    return value;
  };
  // The four corners of an SVG text's own box on screen: rotated labels keep their true outline.
  const corners = text => {
    const b = text.getBBox();
    const m = text.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const label = text => {
    const style = getComputedStyle(text);
    const b = text.getBBox();
    return {
      text: text.textContent.trim(),
      visible: opacity(text) > 0 && b.width > 0 && b.height > 0 && style.visibility !== "hidden",
      corners: corners(text),
      fontSize: parseFloat(style.fontSize),
      fill: style.fill,
      fillOpacity: parseFloat(style.fillOpacity),
    };
  };
  const texts = [...document.querySelectorAll(
    "[data-testid='stMain'] [data-testid='stMarkdownContainer'], [data-testid='stMain'] [data-testid='stHeading']",
  )].filter(t => !t.querySelector(".katex"));  // formulas read badly in a message
  const textBefore = element => {
    let last = "";
    for (const t of texts) {
      if (t.compareDocumentPosition(element) & Node.DOCUMENT_POSITION_FOLLOWING && t.innerText.trim()) last = t.innerText.trim();
    }
    return last.split("\n")[0].slice(0, 70);
  };
  const chart = (container, index) => {
    const svg = container.querySelector("svg");
    const drawing = svg || container.querySelector("canvas") || container;
    const title = [...container.querySelectorAll(".role-title-text text")].map(t => t.textContent).join(" ");
    const description = container.getAttribute("aria-label") === "Vega visualization" ? "" : container.getAttribute("aria-label");
    return {
      name: `chart #${index + 1} '${title || description || ""}' (after '${textBefore(container)}')`,
      description: description || "",
      box: box(drawing),
      background: svg ? getComputedStyle(svg).backgroundColor : "",
      axes: svg ? [...svg.querySelectorAll("g.role-axis")].map(axis => ({
        name: (axis.getAttribute("aria-label") || "axis").split(" for a ")[0],
        labels: [...axis.querySelectorAll("g.role-axis-label text")].map(label),
      })) : [],
    };
  };
  const heading = (element) => {  // the text of the nearest section header above an element
    const headers = [...document.querySelectorAll("[data-testid='stMain'] h2")]
      .filter(h => h.compareDocumentPosition(element) & Node.DOCUMENT_POSITION_FOLLOWING);
    return headers.length ? headers[headers.length - 1].innerText.slice(0, 50) : "the top";
  };
  const scroller = (name, element) => ({ name, scrollWidth: element.scrollWidth, clientWidth: element.clientWidth });
  const main = document.querySelector("[data-testid='stMain']");
  const sidebar = document.querySelector("[data-testid='stSidebar']");
  const tabBars = [...main.querySelectorAll("[role='tablist']")]
    .map((tabs, i) => scroller(`tab bar #${i + 1} (${tabs.innerText.replace(/\s+/g, " ").slice(0, 40)})`, tabs));
  return {
    exceptions: [...document.querySelectorAll("[data-testid='stException']")].map(e => e.innerText.split("\n")[0]),
    main: box(document.querySelector("[data-testid='stMainBlockContainer']")),
    scrollers: [scroller("document.scrollingElement", document.scrollingElement), scroller("stMain", main), ...tabBars],
    sectionButtons: [...main.querySelectorAll(`${sectionPicker} [role='radio']`)].map(b => ({ name: b.innerText, box: box(b) })),
    background: getComputedStyle(document.querySelector("[data-testid='stApp']")).backgroundColor,
    sidebar: sidebar ? { expanded: sidebar.getAttribute("aria-expanded"), box: box(sidebar) } : null,
    charts: [...document.querySelectorAll("[data-testid='stVegaLiteChart']")].map(chart),
    formulas: [...main.querySelectorAll(".katex-display")].map(scroller.bind(null, "formula")),
    // Tables, static or data grids, that scroll sideways inside themselves: their last columns are off screen.
    scrollingTables: [...main.querySelectorAll("[data-testid='stTable'], [data-testid='stDataFrame']")]
      .filter(table => table.getBoundingClientRect().width > 0)
      .filter(table => [table, ...table.querySelectorAll("*")].some(e =>
        ["auto", "scroll"].includes(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth + 1))
      .map(table => `${table.dataset.testid} after “${heading(table)}”`),
    cutMetricLabels: [...main.querySelectorAll("[data-testid='stMetricLabel']")]
      .filter(label => [label, ...label.querySelectorAll("*")].some(e => e.scrollWidth > e.clientWidth + 1))
      .map(label => label.innerText),
  };
}
"""


def view_url(base: str, view, **query: str) -> str:
    """The view's address on its "All sections" tab, with the 16-word sentence where the view takes one."""
    query = {"slide": "all", **query}
    if view.label not in WITHOUT_TEXT:
        query = {"text": SENTENCE, **query}
    return f"{base}/{view.url_path}" + (f"?{urlencode(query)}" if query else "")


def size_id(viewport: tuple[int, int]) -> str:
    return "x".join(map(str, viewport))


class Measurements:
    """Each view loaded once per colour scheme and resized through the window sizes; every measurement kept."""

    def __init__(self, base: str, browser):
        self.base, self.browser = base, browser
        self.taken: dict[tuple[str, str], dict] = {}

    def __call__(self, view, viewport: tuple[int, int], scheme: str = "light") -> dict:
        if (view.label, scheme) not in self.taken:
            sizes = VIEWPORTS if scheme == "light" else (DARK_VIEWPORT,)
            self.taken[view.label, scheme] = self._measure(view, sizes, scheme)
        return self.taken[view.label, scheme][viewport]

    def _measure(self, view, sizes, scheme: str) -> dict:
        page = visit(self.browser, view_url(self.base, view), viewport=sizes[0], color_scheme=scheme)
        try:
            # The window's report of its size reruns a new page after its first run; under load, measuring between
            # the two once found the page without its sections' picker.
            settle_runs(page)
            try:
                page.wait_for_selector(f".st-key-{SECTION_PICKER} [role='radio']", state="attached", timeout=20_000)
            except PlaywrightError:
                pass  # test_every_section_button_shows_whole_in_the_main_column says what is missing
            taken = {}
            for width, height in sizes:
                page.set_viewport_size({"width": width, "height": height})
                settle_layout(page)
                taken[width, height] = page.evaluate(MEASURE, f".st-key-{SECTION_PICKER}")
            return taken
        finally:
            page.close()


@pytest.fixture(scope="module")
def measure(server, browser):
    return Measurements(server, browser)


LAYOUT_CASES = [pytest.param(view, size, id=f"{view.url_path}-{size_id(size)}") for view in VIEWS for size in VIEWPORTS]
THEME_CASES = [
    pytest.param(view, size, scheme, id=f"{view.url_path}-{size_id(size)}-{scheme}")
    for scheme, sizes in (("light", VIEWPORTS), ("dark", (DARK_VIEWPORT,)))
    for view in VIEWS
    for size in sizes
]


def shown(charts: list[dict]) -> list[dict]:
    """Charts actually on screen (those in inactive tabs or closed expanders have no size)."""
    return [chart for chart in charts if chart["box"]["width"] > 0 and chart["box"]["height"] > 0]


def overlap(a: dict, b: dict) -> tuple[float, float]:
    """How far two boxes overlap horizontally and vertically (negative: a gap)."""
    return min(a["right"], b["right"]) - max(a["left"], b["left"]), min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])


def describe(box: dict) -> str:
    return f"x {box['left']:.0f}–{box['right']:.0f}, y {box['top']:.0f}–{box['bottom']:.0f}"


def where(view, viewport, scheme: str = "light") -> str:
    return f"{view.label} at {size_id(viewport)} ({scheme})"


@pytest.mark.parametrize(("view", "viewport"), LAYOUT_CASES)
def test_no_exception(measure, view, viewport):
    """A traceback is the worst thing a view can show; a 16-word sentence must not cause one."""
    assert not measure(view, viewport)["exceptions"], f"{where(view, viewport)}: {measure(view, viewport)['exceptions']}"


@pytest.mark.parametrize(("view", "viewport"), LAYOUT_CASES)
def test_charts_do_not_overlap(measure, view, viewport):
    """Charts side by side in columns must not be drawn over each other when the window is narrow."""
    charts = shown(measure(view, viewport)["charts"])
    problems = [
        f"{a['name']} [{describe(a['box'])}] overlaps {b['name']} [{describe(b['box'])}]"
        for i, a in enumerate(charts)
        for b in charts[i + 1 :]
        if min(overlap(a["box"], b["box"])) > SLACK_PX
    ]
    assert not problems, f"{where(view, viewport)}:\n" + "\n".join(problems)


@pytest.mark.parametrize(("view", "viewport"), LAYOUT_CASES)
def test_charts_stay_in_the_main_column(measure, view, viewport):
    """A chart wider than its column spills over the page's edge or under the sidebar."""
    taken = measure(view, viewport)
    main = taken["main"]
    problems = [
        f"{chart['name']} [{describe(chart['box'])}] leaves the main column [{describe(main)}]"
        for chart in shown(taken["charts"])
        if chart["box"]["left"] < main["left"] - SLACK_PX or chart["box"]["right"] > main["right"] + SLACK_PX
    ]
    assert not problems, f"{where(view, viewport)}:\n" + "\n".join(problems)


@pytest.mark.parametrize(("view", "viewport"), LAYOUT_CASES)
def test_every_section_button_shows_whole_in_the_main_column(measure, view, viewport):
    """The sections' picker wraps into rows where the column is narrow: no button is cut off or hidden."""
    taken = measure(view, viewport)
    main, buttons = taken["main"], taken["sectionButtons"]
    assert [button["name"] for button in buttons][-1:] == ["All sections"], f"{where(view, viewport)}: {buttons}"
    problems = [
        f"section button “{button['name']}” [{describe(button['box'])}] leaves the main column [{describe(main)}]"
        for button in buttons
        if button["box"]["width"] == 0
        or button["box"]["left"] < main["left"] - SLACK_PX
        or button["box"]["right"] > main["right"] + SLACK_PX
    ]
    assert not problems, f"{where(view, viewport)}:\n" + "\n".join(problems)


@pytest.mark.parametrize(("view", "viewport"), LAYOUT_CASES)
def test_page_never_scrolls_sideways(measure, view, viewport):
    """Sideways scrolling hides part of every row on a projector or a laptop screen; in a tab bar, the last tabs."""
    problems = [
        f"{s['name']} scrolls sideways: scrollWidth {s['scrollWidth']} > clientWidth {s['clientWidth']}"
        for s in measure(view, viewport)["scrollers"]
        if s["scrollWidth"] > s["clientWidth"]
    ]
    assert not problems, f"{where(view, viewport)}: " + "; ".join(problems)


@pytest.mark.parametrize(("view", "viewport"), LAYOUT_CASES)
def test_formulas_fit_the_main_column(measure, view, viewport):
    """A displayed formula wider than the column is cut at its edge (it scrolls, which nobody sees on a projector)."""
    formulas = measure(view, viewport)["formulas"]
    problems = [
        f"{f['scrollWidth']} px wide in {f['clientWidth']} px"
        for f in formulas
        if f["scrollWidth"] > f["clientWidth"] + FORMULA_SLACK_PX
    ]
    assert not problems, f"{where(view, viewport)}: formulas cut: " + "; ".join(problems)


@pytest.mark.parametrize(("view", "viewport"), LAYOUT_CASES)
def test_tables_fit_the_main_column(measure, view, viewport):
    """A table that scrolls sideways inside itself hides its last columns: with a 16-word sentence, a table with a
    column per token did, at 1024 px."""
    scrolling = measure(view, viewport)["scrollingTables"]
    assert not scrolling, f"{where(view, viewport)}: tables scroll sideways: {scrolling}"


@pytest.mark.parametrize(("view", "viewport"), LAYOUT_CASES)
def test_metric_labels_are_whole(measure, view, viewport):
    """A metric's label cut off with an ellipsis no longer says what its number is."""
    cut = measure(view, viewport)["cutMetricLabels"]
    assert not cut, f"{where(view, viewport)}: metric labels cut: {cut}"


def _separation(a: list, b: list) -> float:
    """How deep two convex outlines (corner lists) overlap: the least overlap of their projections on the
    edges' normals (separating axis theorem); zero or less when they do not intersect."""
    depth = float("inf")
    for outline in (a, b):
        for (x1, y1), (x2, y2) in zip(outline, outline[1:] + outline[:1], strict=True):
            nx, ny = y1 - y2, x2 - x1
            length = (nx * nx + ny * ny) ** 0.5 or 1.0
            pa = [(x * nx + y * ny) / length for x, y in a]
            pb = [(x * nx + y * ny) / length for x, y in b]
            depth = min(depth, min(max(pa), max(pb)) - max(min(pa), min(pb)))
    return depth


def _axis_problems(chart: dict, axis: dict) -> list[str]:
    """A token axis of the sentence that hides a word or draws two labels over each other. An axis is the sentence's
    when its labels, hidden ones included, hold at least half of its words: a chart of other sentences (the Real
    model's padded batch) may share a word or two with it."""
    visible = [label for label in axis["labels"] if label["visible"]]
    texts = [label["text"] for label in visible]
    if len({label["text"] for label in axis["labels"]} & set(WORDS)) < len(set(WORDS)) / 2:
        return []
    problems = []
    missing = [word for word in WORDS if word not in texts]
    if missing:
        hidden = len(axis["labels"]) - len(visible)
        problems.append(f"{chart['name']}, {axis['name']}: words not shown: {missing} ({hidden} labels hidden)")
    for i, a in enumerate(visible):
        for b in visible[i + 1 :]:
            if _separation(a["corners"], b["corners"]) > SLACK_PX:
                problems.append(f"{chart['name']}, {axis['name']}: labels '{a['text']}' and '{b['text']}' overlap")
    return problems


def heatmaps(charts: list[dict]) -> list[dict]:
    """Charts on screen that say they are a heatmap with axes ("heatmap grid" small multiples have none)."""
    return [chart for chart in shown(charts) if re.match(r"heatmap(?! grid)", chart["description"])]


@pytest.mark.parametrize(("view", "viewport"), [case for case in LAYOUT_CASES if case.values[0].label not in WITHOUT_TEXT])
def test_heatmap_axes_show_every_word(measure, view, viewport):
    """Vega-Lite silently drops axis labels that would collide: a heatmap over tokens must leave room for all of them."""
    maps = heatmaps(measure(view, viewport)["charts"])
    token_axes = [
        (chart, axis)
        for chart in maps
        for axis in chart["axes"]
        if {label["text"] for label in axis["labels"] if label["visible"]} & set(WORDS)
    ]
    assert token_axes, f"{where(view, viewport)}: no heatmap (chart description 'heatmap: ...') with a token axis on screen"
    problems = [problem for chart, axis in token_axes for problem in _axis_problems(chart, axis)]
    assert not problems, f"{where(view, viewport)}:\n" + "\n".join(problems)


def _readability_problems(chart: dict, page_background: str) -> list[str]:
    """Labels too small, or too faint against the page or the chart's own opaque background."""
    labels = [label for axis in chart["axes"] for label in axis["labels"] if label["visible"]]
    if not labels:
        return []
    problems = []
    smallest = min(label["fontSize"] for label in labels)
    if smallest < MIN_LABEL_PX:
        problems.append(f"{chart['name']}: axis labels at {smallest:g} px < {MIN_LABEL_PX} px")
    backgrounds = {"page": page_background}
    if chart["background"] and rgba(chart["background"])[3] == 1:
        backgrounds["chart"] = chart["background"]
    for name, background in backgrounds.items():
        worst = min(labels, key=lambda label: contrast(rgba(label["fill"]), label["fillOpacity"], rgba(background)))
        ratio = contrast(rgba(worst["fill"]), worst["fillOpacity"], rgba(background))
        if ratio < MIN_CONTRAST:
            problems.append(
                f"{chart['name']}: label '{worst['text']}' {worst['fill']} on {name} background {background}: "
                f"contrast {ratio:.2f} < {MIN_CONTRAST}"
            )
    return problems


@pytest.mark.parametrize(("view", "viewport", "scheme"), THEME_CASES)
def test_axis_labels_are_readable(measure, view, viewport, scheme):
    """Axis labels must be legible from the back of a room: at least 14 px and WCAG AA contrast, in both themes."""
    taken = measure(view, viewport, scheme)
    problems = [problem for chart in shown(taken["charts"]) for problem in _readability_problems(chart, taken["background"])]
    assert not problems, f"{where(view, viewport, scheme)}:\n" + "\n".join(problems)


@pytest.mark.parametrize("view", VIEWS, ids=lambda view: view.url_path)
def test_dark_theme_is_dark(measure, view):
    """With both themes configured, a browser that prefers dark must get a dark page, not the light one."""
    background = measure(view, DARK_VIEWPORT, "dark")["background"]
    assert luminance(rgba(background)) < MAX_DARK_LUMINANCE, f"{where(view, DARK_VIEWPORT, 'dark')}: background {background}"


def wait_for_step(page, step: int, timeout_s: float) -> None:
    """Wait for the page to show "Step ``step`` of n"; fail with the URL."""
    deadline = time.monotonic() + timeout_s
    while not re.search(rf"Step {step} of \d+", page.locator("[data-testid='stMain']").inner_text()):
        if time.monotonic() > deadline:
            raise AssertionError(f"the page should show step {step}: {page.url}")
        page.wait_for_timeout(100)


def shown_step(page) -> tuple[int, int]:
    """The (k, n) of the "Step k of n" the page shows."""
    main = page.locator("[data-testid='stMain']")
    try:
        main.get_by_text(STEP).first.wait_for(timeout=5_000)
    except PlaywrightError:
        raise AssertionError(f"no 'Step k of n' on the page: {page.url}") from None
    steps = set(STEP.findall(main.inner_text()))
    assert len(steps) == 1, f"several different 'Step k of n' on one slide: {sorted(steps)}"
    k, n = steps.pop()
    return int(k), int(n)


def press(page, key: str, step: int) -> None:
    """Press a key with nothing focused, as a presenter (or a clicker) does, and wait until the page shows the
    step it leads to and the rerun has finished. The page is let settle first: a key pressed while the browser is
    still building the page after a run may reach no button yet."""
    settle_layout(page)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press(key)
    try:
        wait_for_step(page, step, timeout_s=KEY_WAIT_S)
    except AssertionError as problem:
        raise AssertionError(f"{problem} ({KEY_WAIT_S} s after pressing {key}: no shortcut bound?)") from None
    page.wait_for_selector(IDLE, timeout=KEY_WAIT_S * 1000)


def key_tour(n: int) -> list[tuple[str, int]]:
    """Keys to press and the slide each should lead to: every key once, there and back."""
    if n >= 3:
        return [("ArrowRight", 2), ("PageDown", 3), ("ArrowLeft", 2), ("PageUp", 1)]
    return [("ArrowRight", 2), ("ArrowLeft", 1), ("PageDown", 2), ("PageUp", 1)]


def test_presenter_mode_opens_the_slide_in_the_url(server, browser):
    """A link to a slide (a bookmark, or the reload after a crash mid-talk) opens that slide."""
    page = visit(browser, f"{server}/Pipeline?present=on&slide=3", viewport=DARK_VIEWPORT)
    try:
        assert shown_step(page)[0] == 3, f"/Pipeline?present=on&slide=3 shows step {shown_step(page)}"
    finally:
        page.close()


@pytest.fixture(scope="module")
def dark_presenter(server, browser):
    """Each view in presenter mode and the dark theme, opened once and shared by the presenter-mode tests below: those
    that read it first, then the key tour, which moves it to another slide."""
    pages = {}

    def open_view(view):
        if view.label not in pages:
            url = f"{server}/{view.url_path}?present=on"
            pages[view.label] = visit(browser, url, viewport=DARK_VIEWPORT, color_scheme="dark")
        return pages[view.label]

    yield open_view
    for page in pages.values():
        page.close()


@pytest.mark.parametrize("view", VIEWS, ids=lambda view: view.url_path)
def test_presenter_mode_collapses_the_sidebar(dark_presenter, view):
    """Slides get the whole screen: presenter mode opens with the sidebar closed (off-screen, zero width)."""
    sidebar = dark_presenter(view).locator("[data-testid='stSidebar']")
    box = sidebar.bounding_box() if sidebar.count() else None
    expanded = sidebar.get_attribute("aria-expanded") if sidebar.count() else None
    open_on_screen = box is not None and box["width"] > SLACK_PX and box["x"] + box["width"] > 0
    assert not open_on_screen and expanded != "true", (
        f"{view.label}: sidebar open in presenter mode ({box}, aria-expanded={expanded})"
    )


@pytest.mark.parametrize("view", VIEWS, ids=lambda view: view.url_path)
def test_presenter_mode_dark_theme_has_no_exception(dark_presenter, view):
    """Presenter mode's own styling must work in the dark theme too."""
    page = dark_presenter(view)
    assert not exception_texts(page), f"{view.label}, presenter mode, dark: {exception_texts(page)}"
    background = page.locator("[data-testid='stApp']").evaluate("element => getComputedStyle(element).backgroundColor")
    assert luminance(rgba(background)) < MAX_DARK_LUMINANCE, f"{view.label}, presenter mode, dark: background {background}"


@pytest.mark.parametrize("view", VIEWS, ids=lambda view: view.url_path)
def test_presenter_mode_keys_move_between_slides(dark_presenter, view):
    """A presenter moves through the slides with the arrow keys or a clicker (PageDown/PageUp); the "Step k of n"
    caption follows, and so does the URL: a reload or a shared link opens the same slide. (On the page the tests
    above have read, which this one leaves on another slide.)"""
    page = dark_presenter(view)
    first, n = shown_step(page)
    assert (first, n >= 2) == (1, True), f"{view.label}: opens at 'Step {first} of {n}', wanted step 1 of 2 or more"
    for key, step in key_tour(n) + [("ArrowRight", 2)]:
        press(page, key, step)
        assert shown_step(page) == (step, n), f"{view.label}: after {key} the page shows {shown_step(page)}"
        assert not exception_texts(page), f"{view.label}, step {step}: {exception_texts(page)}"
    with rerun(page):
        page.reload()
    assert shown_step(page) == (2, n), f"{view.label}: {page.url} opens at step {shown_step(page)}, not 2"
