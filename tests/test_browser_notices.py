"""Notes above a slide's section fit the projector with it, in a real browser (Playwright + Chromium).

A note drawn above a section (the example shown for an empty sentence, a link's ignored values, what [UNK] stands
for) is measured by the browser and its height left to it (attn_ui.slide): at 1024 × 576 the note is on screen, in
full, and the slide under it does not scroll. One server and one browser serve the whole module.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

import pytest

from attn_ui.page import PIPELINE, REAL_MODEL
from tests.browser_support import IDLE, _runs, rerun, settle_layout, skip_without_browser, visit
from tests.test_browser_slides import SLIDE, problems_of

skip_without_browser()

PROJECTOR = (1024, 576)
QUIET_S = 1.5  # no run starts for this long: the notes' report (150 ms after the page stops changing) has come
EXAMPLE = "There are no words to attend to yet"

NOTE = r"""() => {
  const notes = document.querySelector(".st-key-slide_notes");
  if (!notes) return null;
  const box = notes.getBoundingClientRect();
  return { text: notes.innerText, top: box.top, bottom: box.bottom, height: box.height };
}"""


def wait_until_quiet(page, timeout_s: float = 90) -> None:
    """Wait until the app is idle and has started no run for QUIET_S: opening a slide with a note takes a run for
    the window's size and one for the note's height."""
    deadline = time.monotonic() + timeout_s
    seen, since = len(_runs[page]), time.monotonic()
    while time.monotonic() - since < QUIET_S or _runs[page][-1:] != ["script_finished"]:
        if time.monotonic() > deadline:
            raise AssertionError(f"the app still reruns after {timeout_s} s (page {page.url})")
        page.wait_for_timeout(100)
        if len(_runs[page]) != seen:
            seen, since = len(_runs[page]), time.monotonic()
    page.wait_for_selector(IDLE)
    settle_layout(page)


def measured(page) -> dict:
    """The slide as tests.test_browser_slides measures it, with its note."""
    slide = page.evaluate(SLIDE)
    slide["exceptions"], slide["note"] = [], page.evaluate(NOTE)
    return slide


def assert_fits_with_its_note(slide: dict, note: str) -> None:
    assert slide["note"] is not None and note in slide["note"]["text"], slide["note"]
    assert 0 <= slide["note"]["top"] and slide["note"]["bottom"] <= PROJECTOR[1], f"the note is off screen: {slide['note']}"
    problems = problems_of(slide, PROJECTOR)
    assert not problems, f"slide {slide['step'][0]} under the note “{note}”:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("view", "query", "note"),
    [
        (PIPELINE, {"preset": "nonsense", "d_model": "abc"}, "Some values were not used as given"),
        (REAL_MODEL, {"text": "🙂 cats purr"}, "[UNK] stands for characters"),
    ],
    ids=["ignored link values", "unknown characters"],
)
def test_a_slide_fits_under_its_note(server, browser, view, query, note):
    page = visit(browser, f"{server}/{view.url_path}?present=on&{urlencode(query)}", viewport=PROJECTOR)
    try:
        wait_until_quiet(page)
        slide = measured(page)
        assert slide["charts"], "a slide with charts, which the note's height shrinks"
        assert_fits_with_its_note(slide, note)
    finally:
        page.close()


def test_every_slide_of_an_empty_sentence_fits_under_its_note(server, browser):
    """The example's note stays on every slide of the Pipeline view, each of which fits the window under it."""
    page = visit(browser, f"{server}/{PIPELINE.url_path}?present=on&text=", viewport=PROJECTOR)
    try:
        wait_until_quiet(page)
        while True:
            slide = measured(page)
            assert_fits_with_its_note(slide, EXAMPLE)
            number, last = slide["step"]
            if number >= last:
                break
            with rerun(page):
                page.evaluate("() => document.activeElement && document.activeElement.blur()")
                page.keyboard.press("ArrowRight")
            settle_layout(page)
        assert last == 8
    finally:
        page.close()


def test_the_charts_regrow_when_the_note_goes(server, browser):
    """The link's ignored values go with the user's next step; back on the first slide, the browser has reported
    that there are no notes, and its chart takes the room back."""
    page = visit(browser, f"{server}/{PIPELINE.url_path}?present=on&d_model=abc", viewport=PROJECTOR)
    try:
        wait_until_quiet(page)
        under_note = measured(page)
        assert_fits_with_its_note(under_note, "Some values were not used as given")
        for button, step in (("next", 2), ("previous", 1)):
            # Each click waits for the app to be quiet: leaving the note's slide reruns once more for the note's
            # height, and that rerun redraws the bar under a click made meanwhile.
            with rerun(page):
                page.locator(f".st-key-slide_{button} button").click()
            wait_until_quiet(page)
            assert measured(page)["step"][0] == step, f"after {button}"
        bare = measured(page)
        assert bare["step"] == under_note["step"] and bare["note"] is None
        assert not problems_of(bare, PROJECTOR)
        height = [chart["bottom"] - chart["top"] for chart in (under_note["charts"][0], bare["charts"][0])]
        assert height[1] > height[0] + under_note["note"]["height"] / 2, height
    finally:
        page.close()
