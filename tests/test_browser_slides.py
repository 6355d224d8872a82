"""Presenter slides fit the screen they are projected on, in a real browser (Playwright + Chromium).

Every slide of a view is walked with the → key at the four window sizes a lecture meets, in the light and the dark
theme, with the view's default sentence, and measured: the page does not scroll, every chart, table, metric, block of
code and image lies wholly inside the window, every token of a heatmap keeps its label on both axes, chart text is at
least 14 px, a window larger than 1280 × 720 magnifies the slide, and on a full-HD screen the slide's charts take at
least half of its height. One server and one browser serve the whole module.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

import pytest

from attn_ui.page import COST, MULTI_HEAD, TRAINING, VIEWS  # Training's slides are walked trained: tests/test_browser_training.py
from tests.browser_support import (
    SENTENCE,
    contrast,
    exception_texts,
    finished_runs,
    rerun,
    rgba,
    settle_layout,
    skip_without_browser,
    visit,
    wait_for_runs,
    wait_for_size_report,
)

skip_without_browser()

VIEWPORTS = ((1024, 576), (1280, 720), (1440, 900), (1920, 1080))
FULL_HD = (1920, 1080)
SLACK_PX = 1
MIN_TEXT_PX = 14
MIN_SPAN = 0.5  # of the window's height, taken by a full-HD slide's charts
# How much a slide is magnified on each window (attn_ui.slide.zoom): laid out for 1280 × 720 (1280 × 800 at 1440 × 900)
ZOOM = {(1024, 576): 1, (1280, 720): 1, (1440, 900): 1.125, (1920, 1080): 1.5}

SLIDE = r"""() => {
  const main = document.querySelector("[data-testid='stMain']");
  const step = (main.innerText.match(/Step (\d+) of (\d+)/) || []).slice(1).map(Number);
  const charts = [...document.querySelectorAll("[data-testid='stVegaLiteChart']")]
    .filter(chart => chart.getClientRects().length > 0)
    .map(chart => {
      const svg = chart.querySelector("svg");
      const box = (svg || chart).getBoundingClientRect();
      const shown = text => parseFloat(getComputedStyle(text).opacity) > 0 && text.getBBox().width > 0;
      const axes = svg ? [...svg.querySelectorAll("g.role-axis")].map(axis => {
        const labels = [...axis.querySelectorAll("g.role-axis-label text")];
        return { labels: labels.length, shown: labels.filter(shown).length };
      }) : [];
      const sizes = svg ? [...svg.querySelectorAll("text")].filter(shown).map(t => parseFloat(getComputedStyle(t).fontSize)) : [];
      const titles = svg ? [...svg.querySelectorAll("g[class*='title'] text")].map(t => t.textContent) : [];
      const cut = titles.filter(t => t.endsWith("…"));
      return {
        name: chart.getAttribute("aria-label") || "chart",
        top: box.top, bottom: box.bottom, left: box.left, right: box.right,
        axes, smallestText: Math.min(...sizes), cutTitles: cut,
      };
    });
  const others = [...main.querySelectorAll(["stTable", "stDataFrame", "stMetric", "stCode", "stImage"]
      .map(kind => `[data-testid='${kind}']`).join(", "))]
    .map(element => ({ kind: element.dataset.testid, box: element.getBoundingClientRect() }))
    .filter(element => element.box.width > 0 && element.box.height > 0)  // not in a closed expander or popover
    .map(({ kind, box }) => ({ name: kind, top: box.top, bottom: box.bottom, left: box.left, right: box.right }));
  const zoom = document.querySelector("[data-testid='stMainBlockContainer']").currentCSSZoom;
  return { step, scrollHeight: main.scrollHeight, clientHeight: main.clientHeight, charts, others, zoom };
}"""
SCHEME = "() => matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'"  # the one the page is shown in


def walk(
    server_url: str, browser, view, viewports: tuple[tuple[int, int], ...], schemes: tuple[str, ...], query: str = ""
) -> dict[tuple[int, int], list[dict]]:
    """Every slide of ``view`` in presenter mode (``query``: more of its link's parameters) at each window size of
    ``viewports``, measured once it has settled in each colour scheme of ``schemes`` (the theme follows the browser's
    preference without a rerun). A page per window size, walked in step: each key and each change of theme goes to
    every page before any is waited for, so that the pages settle together."""
    url = f"{server_url}/{view.url_path}?present=on" + (f"&{query}" if query else "")
    pages = {}
    try:
        for viewport in viewports:
            pages[viewport] = visit(browser, url, viewport=viewport, color_scheme=schemes[0])
        for page in pages.values():
            wait_for_size_report(page)
        slides = {viewport: [] for viewport in viewports}
        shown, acted = schemes[0], time.monotonic()
        while True:
            walked = len(slides[viewports[0]]) // len(schemes)  # slides measured so far
            for scheme in schemes if walked % 2 == 0 else schemes[::-1]:  # a slide's last scheme first on the next
                if scheme != shown:
                    for page in pages.values():
                        page.emulate_media(color_scheme=scheme)
                    shown, acted = scheme, time.monotonic()
                for viewport, page in pages.items():
                    settle_layout(page, acted_s_ago=time.monotonic() - acted)
                    slide = page.evaluate(SLIDE) | {"scheme": page.evaluate(SCHEME)}
                    slide["exceptions"] = exception_texts(page)
                    slides[viewport].append(slide)
            steps = {tuple(taken[-1]["step"]) for taken in slides.values()}
            assert len(steps) == 1, f"the pages are on different slides: {steps}"
            number, last = steps.pop()
            if number >= last:
                return slides
            finished = {viewport: finished_runs(page) for viewport, page in pages.items()}
            for page in pages.values():
                page.evaluate("() => document.activeElement && document.activeElement.blur()")
                page.keyboard.press("ArrowRight")
            acted = time.monotonic()
            for viewport, page in pages.items():
                wait_for_runs(page, finished[viewport])
    finally:
        for page in pages.values():
            page.close()


def problems_of(slide: dict, viewport: tuple[int, int]) -> list[str]:
    width, height = viewport
    found = list(slide["exceptions"])
    if slide["zoom"] != ZOOM[viewport]:
        found.append(f"the slide is magnified {slide['zoom']} times, not {ZOOM[viewport]}")
    if slide["scrollHeight"] > slide["clientHeight"] + SLACK_PX:
        found.append(f"the page scrolls: {slide['scrollHeight']} px of content in {slide['clientHeight']}")
    for element in slide["charts"] + slide["others"]:  # charts, tables, metrics, code and images
        box = f"[x {element['left']:.0f}–{element['right']:.0f}, y {element['top']:.0f}–{element['bottom']:.0f}]"
        if (
            element["top"] < -SLACK_PX
            or element["left"] < -SLACK_PX
            or element["bottom"] > height + SLACK_PX
            or element["right"] > width + SLACK_PX
        ):
            found.append(f"{element['name'][:60]} {box} is not wholly on screen")
    for chart in slide["charts"]:
        where = f"{chart['name'][:60]} [x {chart['left']:.0f}–{chart['right']:.0f}, y {chart['top']:.0f}–{chart['bottom']:.0f}]"
        if chart["name"].startswith("heatmap:") and any(axis["shown"] < axis["labels"] for axis in chart["axes"]):
            found.append(f"{where} drops token labels: {chart['axes']}")
        if chart["smallestText"] < MIN_TEXT_PX and chart["name"].startswith(("heatmap:", "bars:", "lines:")):
            found.append(f"{where} has text of {chart['smallestText']} px")
        if chart["cutTitles"]:
            found.append(f"{where} has its title cut short: {chart['cutTitles']}")
    return found


def walk_problems(slides: list[dict], viewport: tuple[int, int]) -> list[str]:
    """Every slide's problems; at full HD also those whose charts take less than MIN_SPAN of the screen's height."""
    problems = [
        f"slide {slide['step'][0]} ({slide['scheme']}): {problem}" for slide in slides for problem in problems_of(slide, viewport)
    ]
    for slide in slides if viewport == FULL_HD else ():
        charts = slide["charts"]
        span = (max(c["bottom"] for c in charts) - min(c["top"] for c in charts)) / viewport[1] if charts else 1
        if span < MIN_SPAN:
            problems.append(f"slide {slide['step'][0]}: its charts take {span:.0%} of the screen's height")
    return problems


@pytest.mark.parametrize("view", [view for view in VIEWS if view != TRAINING], ids=lambda view: view.url_path)
def test_every_slide_fits_every_screen(server, browser, view):
    """At each of the four window sizes, in the light and the dark theme."""
    walked = walk(server, browser, view, VIEWPORTS, ("light", "dark"))
    problems = []
    for viewport, slides in walked.items():
        assert len(slides) == 2 * slides[0]["step"][1] and slides[0]["step"][1] >= 3, viewport
        assert [slide["scheme"] for slide in slides].count("dark") == len(slides) // 2, viewport
        problems += [f"at {viewport}, {problem}" for problem in walk_problems(slides, viewport)]
    assert not problems, f"{view.label}:\n" + "\n".join(problems)


@pytest.mark.parametrize("view", [view for view in VIEWS if view not in (COST, TRAINING)], ids=lambda view: view.url_path)
def test_every_slide_fits_a_projector_with_a_sixteen_word_sentence(server, browser, view):
    """The sentence a lecture types, 16 words (18 word pieces in the real model), fits every slide of a 1024 × 576
    projector: rows of 16 px keep every token's label, legends go where they cost least, long tables go in blocks side
    by side, and a slide's text goes beside its slider."""
    slides = walk(server, browser, view, VIEWPORTS[:1], ("light",), urlencode({"text": SENTENCE}))[VIEWPORTS[0]]
    problems = walk_problems(slides, VIEWPORTS[0])
    assert not problems, f"{view.label} with “{SENTENCE}”:\n" + "\n".join(problems)


@pytest.mark.parametrize("viewport", [VIEWPORTS[0], FULL_HD], ids=lambda size: "x".join(map(str, size)))
def test_the_slide_bar_answers_the_mouse(server, browser, viewport):
    """The slide's bar lies in the band of Streamlit's header, which is see-through: a click on Next or Controls
    reaches the button, not the header. A chart the mouse rests on shows no toolbar over the title and caption."""
    page = visit(browser, f"{server}/Pipeline?present=on", viewport=viewport)
    try:
        wait_for_size_report(page)
        settle_layout(page)
        with rerun(page):
            page.locator(".st-key-slide_next button").click(timeout=5_000)
        assert "Step 2 of" in page.locator("[data-testid='stMain']").inner_text()
        page.locator("[data-testid='stVegaLiteChart']").first.hover()  # its toolbar would cover the caption above it
        assert not [box for box in page.locator("[data-testid='stElementToolbar']").all() if box.is_visible()]
        page.locator(".st-key-slide_bar button").filter(has_text="Controls").click(timeout=5_000)
        page.get_by_text("Sentence", exact=True).wait_for(timeout=5_000)  # the popover holds the view's controls
    finally:
        page.close()


def test_the_next_buttons_label_reads_at_4_5_to_1_on_either_theme(server, browser):
    """Next is the slide's primary button, the one a presenter looks for: its label against its own colour; on the
    last slide, disabled, in Streamlit's faint grey for a disabled button (2.5:1 on white), not white on white."""
    for scheme in ("light", "dark"):
        for slide, least in (("1", 4.5), ("8", 2.0)):  # the Pipeline's first and last slides
            page = visit(browser, f"{server}/Pipeline?present=on&slide={slide}", viewport=VIEWPORTS[0], color_scheme=scheme)
            try:
                settle_layout(page)
                button = page.locator(".st-key-slide_next button")
                assert button.is_disabled() == (slide == "8")
                label = button.get_by_text("Next", exact=True).evaluate("e => getComputedStyle(e).color")
                colour = button.evaluate("e => getComputedStyle(e).backgroundColor")
                if rgba(colour)[3] == 0:  # see-through: the page behind it
                    colour = page.evaluate("() => getComputedStyle(document.querySelector('.stApp')).backgroundColor")
                assert contrast(rgba(label), 1.0, rgba(colour)) >= least, (scheme, slide, label, colour)
            finally:
                page.close()


def test_the_slide_bars_buttons_keep_their_place_whatever_the_title(server, browser):
    """A presenter with a mouse finds Previous and Next where they were, on slides whose titles differ in length."""
    places = set()
    for path in ("Pipeline?present=on&slide=1", "Pipeline?present=on&slide=4", "Masking?present=on&slide=7"):
        page = visit(browser, f"{server}/{path}", viewport=VIEWPORTS[0])
        try:
            settle_layout(page)
            places.add(
                tuple(
                    round(page.locator(f".st-key-{key} button").bounding_box()["x"]) for key in ("slide_previous", "slide_next")
                )
            )
        finally:
            page.close()
    assert len(places) == 1, places


def test_charts_grow_with_a_wide_window_outside_presenter_mode(server, browser):
    """On a scrolling page, a full-HD window gives a lone heatmap and the Cost view's log-log charts the main column's
    width (their row's share of it), where a 1280-px window keeps them as wide as they were, and does not even
    report its size (which would cost a second run of the script on opening)."""
    sentence = urlencode({"text": SENTENCE})
    widths = {}
    for viewport in ((1280, 720), FULL_HD):
        for address in (f"/Pipeline?slide=1&{sentence}", "/Cost?slide=1"):
            page = visit(browser, f"{server}{address}", viewport=viewport)
            try:
                if viewport == FULL_HD:
                    wait_for_runs(page, 1)  # the rerun after the window's report of its size
                settle_layout(page)
                page.wait_for_timeout(500)
                runs = finished_runs(page)
                assert runs == (2 if viewport == FULL_HD else 1), f"{address} at {viewport}: {runs} runs on opening"
                drawings = page.locator("[data-testid='stVegaLiteChart'] svg")
                widths[address, viewport] = [box["width"] for box in (d.bounding_box() for d in drawings.all())]
                assert not exception_texts(page)
            finally:
                page.close()
    for address in (f"/Pipeline?slide=1&{sentence}", "/Cost?slide=1"):
        narrow, wide = widths[address, (1280, 720)], widths[address, FULL_HD]
        assert len(narrow) == len(wide) >= 1 and all(w > 1.2 * n for n, w in zip(narrow, wide, strict=True)), (
            address,
            narrow,
            wide,
        )


def test_sixteen_heads_fit_a_projector(server, browser):
    """Multi-head's grid of 16 heads shrinks its panels (an overview: no token labels) to fit a 1024 × 576 slide."""
    slides = walk(server, browser, MULTI_HEAD, VIEWPORTS[:1], ("light",), query="heads=16&d_model=64")[VIEWPORTS[0]]
    grid = next(slide for slide in slides if any(chart["name"].startswith("heatmap grid") for chart in slide["charts"]))
    assert not problems_of(grid, VIEWPORTS[0])


def test_the_first_multi_head_slide_fits_a_projector_under_the_heads_warning(server, browser):
    """Heads that do not divide the width put a warning and a button above the slide: its table of shapes then goes in
    two blocks side by side (steps.table) rather than off the bottom of a 1024 × 576 screen."""
    query = urlencode({"text": SENTENCE, "heads": 5})
    slides = walk(server, browser, MULTI_HEAD, VIEWPORTS[:1], ("light",), query=query)[VIEWPORTS[0]]
    assert not problems_of(slides[0], VIEWPORTS[0])


MAGNIFIED = r"""() => [...document.querySelectorAll("[data-testid='stVegaLiteChart'] svg")].map(svg => {
  const box = svg.getBoundingClientRect();
  const label = svg.querySelector("g.role-axis-label text");
  return { width: box.width, height: box.height, labelPx: parseFloat(getComputedStyle(label).fontSize) * label.currentCSSZoom };
})"""
LAST_CELL = r"""() => {
  const cells = [...document.querySelector("[data-testid='stVegaLiteChart'] svg").querySelectorAll("g.mark-rect path")]
    .filter(cell => cell.__data__?.datum?.tip !== undefined);
  const cell = cells[cells.length - 1], box = cell.getBoundingClientRect(), datum = cell.__data__.datum;
  const words = ["query", datum.query, "key", datum.key, "value", datum.tip];
  return { x: box.left + box.width / 2, y: box.top + box.height / 2, words };
}"""


def test_a_full_hd_slide_is_the_1280_by_720_one_magnified(server, browser):
    """On a full-HD window a slide is laid out for 1280 × 720 and magnified 1.5× (attn_ui.slide.zoom), text and charts
    alike: each chart is 1.5 times as wide and high as at 1280 × 720, its 14-px labels are 21 px on the screen, and
    hovering a cell (the last, farthest from the chart's corner) still shows that cell's tooltip."""
    measured = {}
    for viewport in ((1280, 720), FULL_HD):
        page = visit(browser, f"{server}/Pipeline?present=on&slide=4", viewport=viewport)
        try:
            wait_for_size_report(page)
            settle_layout(page)
            measured[viewport] = page.evaluate(MAGNIFIED)
            cell = page.evaluate(LAST_CELL)
            page.mouse.move(cell["x"], cell["y"])
            page.wait_for_function("() => document.querySelector('#vg-tooltip-element')?.classList.contains('visible')")
            assert page.locator("#vg-tooltip-element").inner_text().split() == cell["words"], viewport
        finally:
            page.close()
    small, large = measured[(1280, 720)], measured[FULL_HD]
    assert len(small) == len(large) == 2, measured
    assert all(chart["labelPx"] == 14 for chart in small) and all(chart["labelPx"] == 21 for chart in large), measured
    for before, after in zip(small, large, strict=True):
        assert after["width"] / before["width"] == pytest.approx(1.5, abs=0.02), measured
        assert after["height"] / before["height"] == pytest.approx(1.5, abs=0.02), measured
