"""The Training view in a real browser: Train, the snapshot slider and Play, and its slides at every lecture size."""

from __future__ import annotations

import pytest

from attn_ui.page import TRAINING
from tests.browser_support import exception_texts, rerun, settle_layout, skip_without_browser, visit
from tests.test_browser_slides import VIEWPORTS, walk, walk_problems

skip_without_browser()

QUICK = "task=marker&d_k=16&steps=100"  # a pair of runs in about a second; the server keeps it


def wait_for_progress(page) -> None:
    """Until a run's progress shows (it has begun); if it does not within a minute, what the page shows instead."""
    from playwright.sync_api import Error as PlaywrightError

    try:
        page.get_by_text("Training: step").wait_for(timeout=60_000)
    except PlaywrightError as error:
        shown = page.locator("[data-testid='stMain']").inner_text(timeout=5_000)[:600]
        raise AssertionError(f"no run began at {page.url}; the page shows: {shown!r}") from error


def snapshot_title(page) -> str:
    return page.locator("[data-testid='stVegaLiteChart']").first.get_attribute("aria-label") or ""


@pytest.fixture(scope="module")
def trained(server, browser) -> str:
    """The server holds a trained pair of runs for QUICK: a link to it shows the run at once. It may hold it already:
    the server is the test process's, and a process that runs this module's tests apart (pytest-xdist hands tests out
    one by one) sets this fixture up again."""
    page = visit(browser, f"{server}/Training?{QUICK}&slide=2")
    untrained = page.get_by_text("Not trained yet")
    untrained.or_(page.locator("[data-testid='stVegaLiteChart']")).first.wait_for()
    if untrained.is_visible():
        with rerun(page, timeout_s=120):
            page.get_by_role("button", name="Train").click()
    page.close()
    return server


def test_train_then_the_snapshot_slider_and_play_move_the_pattern(trained, browser):
    page = visit(browser, f"{trained}/Training?{QUICK}&slide=2")
    settle_layout(page)
    assert "Attention at step 100" in snapshot_title(page)  # after training: the last snapshot
    slider = page.get_by_role("slider", name="Snapshot")
    with rerun(page):
        slider.focus()
        page.keyboard.press("Home")
    settle_layout(page)
    assert "Attention at step 0" in snapshot_title(page)
    page.locator("label").filter(has_text="Play").click()
    page.wait_for_function("() => window.location.search.includes('step=3')", timeout=30_000)
    settle_layout(page)
    assert "Attention at step" in snapshot_title(page) and "step 0" not in snapshot_title(page)
    assert not exception_texts(page)
    page.close()


def test_every_training_slide_fits_every_screen(trained, browser):
    """At each of the four window sizes, in the light and the dark theme."""
    problems = []
    for viewport, slides in walk(trained, browser, TRAINING, VIEWPORTS, ("light", "dark"), query=QUICK).items():
        assert len(slides) == 2 * slides[0]["step"][1] and slides[0]["step"][1] >= 3, viewport
        assert sum(len(slide["charts"]) for slide in slides) >= 20, viewport  # the trained run's charts, not the untrained view
        problems += [f"at {viewport}, {problem}" for problem in walk_problems(slides, viewport)]
    assert not problems, "Training:\n" + "\n".join(problems)


def test_stop_interrupts_a_run(server, browser):
    page = visit(browser, f"{server}/Training?task=first&steps=1000&slide=2")
    page.get_by_role("button", name="Train").click()
    wait_for_progress(page)
    with rerun(page):
        page.locator("[data-testid='stMain']").get_by_role("button", name="Stop").click()
    settle_layout(page)
    assert page.get_by_text("Not trained yet").is_visible()  # nothing kept: the run did not finish
    assert page.locator("[data-testid='stVegaLiteChart']").count() == 0 and not exception_texts(page)
    page.close()


def test_train_on_a_slide(server, browser):
    """On a slide the notes above it (here the Train button) have their height reported by the browser, and a report
    reruns the view, which would stop a run: Train's progress bar goes beside the buttons, leaving that height as it
    is, and the run finishes. (Settings of their own: a run kept by the server from another test would show at once.)"""
    page = visit(browser, f"{server}/Training?present=on&task=first&d_k=64&steps=300&seed=5", viewport=(1024, 576))
    settle_layout(page)
    page.get_by_role("button", name="Train").click()
    wait_for_progress(page)  # the run has begun, and goes on to its end
    page.get_by_text("Not trained yet").wait_for(state="detached", timeout=120_000)
    settle_layout(page)
    assert not exception_texts(page)
    page.close()
