"""The shipped lessons in a real browser: every step fits a 1024 × 576 projector and a full-HD screen, an exercise's
step both asked and revealed, and the keyboard's → and ← walk a lesson from one view to the next."""

from __future__ import annotations

import re
import time

import pytest

from attn_ui.lessons import available, load
from tests.browser_support import (
    asked_while_running,
    exception_texts,
    rerun,
    run_events,
    running_app,
    settle_runs,
    skip_without_browser,
    visit,
)
from tests.test_browser_slides import FULL_HD, SLIDE, VIEWPORTS, problems_of

skip_without_browser()
PlaywrightError = pytest.importorskip("playwright.sync_api").Error


@pytest.fixture
def server():
    """A server of its own for each lesson's walk: one walk that goes wrong (in a full suite under load, twice a slide
    bar never came back) leaves nothing behind for the next."""
    with running_app() as base:
        yield base


def bar_step(page) -> tuple[int, int]:
    """The lesson's step on screen and its number of steps, as the slide's bar says them."""
    try:
        text = page.locator(".st-key-slide_bar").inner_text(timeout=90_000)
    except PlaywrightError as error:  # say what the page shows instead, for whoever reads the failure
        shown = page.locator("[data-testid='stMain']").inner_text(timeout=5_000)[:600]
        raise AssertionError(f"no slide bar at {page.url}; the page shows: {shown!r}") from error
    found = re.search(r"step (\d+) of (\d+)", text)
    return (int(found[1]), int(found[2])) if found else (0, 0)


def press_and_wait(pages: dict, key: str, step: int) -> None:
    """Press ``key`` on every page's slide, then wait until each shows the lesson's step ``step``, drawn."""
    for page in pages.values():
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        page.keyboard.press(key)
    pressed = time.monotonic()
    for page in pages.values():
        page.wait_for_function(
            "([step]) => /step (\\d+) of/.exec(document.querySelector('.st-key-slide_bar')?.innerText || '')?.[1] == step",
            arg=[step],
            timeout=90_000,
        )
        settle_runs(page, acted_s_ago=time.monotonic() - pressed)


def answer_and_check(page) -> None:
    """Answer the step's exercise (its first token, or 1) and press Check: the charts are revealed. A Training step's
    question waits for its run: Train first."""
    train = page.get_by_role("button", name="Train")
    if train.count():
        with rerun(page, timeout_s=120):
            train.click()
        settle_runs(page)
    given = page.locator(".st-key-_exercise_given")
    try:
        given.wait_for(state="attached", timeout=60_000)
    except PlaywrightError as error:  # say what the step shows instead, and what its page's runs were
        shown = page.locator("[data-testid='stMain']").inner_text(timeout=5_000)[:600]
        raise AssertionError(f"no question at {page.url}; the runs {run_events(page)[-8:]}; the page shows: {shown!r}") from error
    number = given.locator("input")
    with rerun(page):  # the answer is the app's before Check is pressed
        if number.count():
            number.fill("1")
            number.press("Enter")
        else:  # a token to choose
            given.locator("button").first.click()
    settle_runs(page)
    with rerun(page):
        page.get_by_role("button", name="Check").click()
    page.locator(".st-key-slide_notes [data-testid='stAlertContainer']").first.wait_for(timeout=30_000)
    settle_runs(page)  # the notes, now taller, report their height, and the slide is laid out again for it
    assert page.locator("[data-testid='stVegaLiteChart']").count() > 0  # the charts, revealed


@pytest.mark.parametrize("name", sorted(available()))
def test_every_step_of_a_lesson_fits_the_screen_and_the_keyboard_walks_it(server, browser, name):
    """At 1024 × 576 and on a full-HD screen: a page each, walked in step."""
    lesson = load(available()[name])
    pages = {}
    try:
        for viewport in (VIEWPORTS[0], FULL_HD):
            pages[viewport] = visit(browser, f"{server}/?lesson={name}", viewport=viewport)
        for page in pages.values():
            page.wait_for_function("() => document.querySelector('.st-key-slide_bar')", timeout=90_000)
            settle_runs(page)
        problems, views = [], {viewport: [] for viewport in pages}
        for number in range(1, len(lesson.steps) + 1):
            if number > 1:
                press_and_wait(pages, "ArrowRight", number)
            step = lesson.steps[number - 1]
            for viewport, page in pages.items():
                assert bar_step(page) == (number, len(lesson.steps)), viewport
                views[viewport].append(page.url.split("?")[0].rsplit("/", 1)[1])
                slide = page.evaluate(SLIDE) | {"exceptions": exception_texts(page)}
                where = f"at {viewport}, step {number} ({step.title})"
                problems += [f"{where}: {problem}" for problem in problems_of(slide, viewport)]
                if step.exercise and viewport == VIEWPORTS[0]:  # the reveal too, where room is tightest (a larger
                    # window magnifies the same layout): the charts, the verdict and its reason
                    answer_and_check(page)
                    slide = page.evaluate(SLIDE) | {"exceptions": exception_texts(page)}
                    problems += [f"{where}, revealed: {problem}" for problem in problems_of(slide, viewport)]
        for viewport in pages:
            assert views[viewport] == [step.view for step in lesson.steps], viewport  # each step on its own view's page
        press_and_wait(pages, "ArrowLeft", len(lesson.steps) - 1)  # back across views too
        for viewport, page in pages.items():
            assert page.url.split("?")[0].endswith("/" + lesson.steps[-2].view)
            # the window's reports came between runs: one sent before a step was drawn whole would carry the
            # controls' values of the step before (its section), and another step's slide could be shown
            assert asked_while_running(page) == 0, (viewport, run_events(page))
        assert not problems, f"{lesson.title}:\n" + "\n".join(problems)
    finally:
        for page in pages.values():
            page.close()
