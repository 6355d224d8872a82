"""The Cost view in a real browser: leaving the page stops a running sweep, so another session's sweep need not wait;
resizing the window does not stop it.

Needs Chromium at /usr/bin/chromium, as tests/test_browser.py (skipped without it, failing with REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import math
import time

import pytest

from attn_ui.measure import MEASURE
from tests.browser_support import (
    IDLE,
    exception_texts,
    finished_runs,
    rerun,
    settle_layout,
    settle_runs,
    skip_without_browser,
    visit,
)
from tests.test_browser_slides import FULL_HD, SLIDE, problems_of

skip_without_browser()
WAITING = "Another sweep is running on this server"  # what a session is told while another sweep holds the lock
# A sweep whose every length takes 20 timed rounds of the three methods and the matmul reference: T=2,048 alone
# lasts about 8 s on the 2-core development machine, each of its samples under 0.2 s, and the 300 s budget
# would let it go on to T=4,096 (about half a minute) had the user not left.
LONG_SWEEP = "Cost?T_max=4096&repeats=20&time_budget=300"
LEAVE_AT = "Measuring T=2,048"
# A sweep must have stopped this long after the user left. It stops before its next timed sample, under 0.2 s on an
# idle machine; beside the suite's other process a sample on both cores took over 3 s (the cores' threads wait on
# each other). A sweep that went on would hold the lock for the rest of T=2,048 and all of T=4,096: 38 s and more.
STOP_S = 10.0
REACH_S = 240  # seconds the sweep may take to reach LEAVE_AT: about 6 on the idle machine, far more beside other tests


def test_leaving_the_cost_view_stops_its_sweep(server, browser):
    """Start a long sweep, leave for the Pipeline while it measures T=2,048, and STOP_S later a second session's
    sweep starts at once: the first released the server's sweep lock (it would wait, told so, while the sweep
    went on)."""
    page = visit(browser, f"{server}/{LONG_SWEEP}")
    page.get_by_role("button", name=MEASURE).click()
    page.get_by_text(LEAVE_AT).wait_for(timeout=REACH_S * 1000)
    with rerun(page):
        page.locator("[data-testid='stSidebar'] a[href$='Pipeline']").click()
    left = time.monotonic()
    page.wait_for_function("() => window.location.pathname.endsWith('/Pipeline')")
    assert not exception_texts(page)

    other = visit(browser, f"{server}/Cost?T_max=128")  # a second browser context: another session
    other.wait_for_timeout(max(0.0, left + STOP_S - time.monotonic()) * 1000)
    before = finished_runs(other)
    other.get_by_role("button", name=MEASURE).click()
    waiting, deadline = other.get_by_text(WAITING), time.monotonic() + 30
    while finished_runs(other) <= before or not other.locator(IDLE).count():  # the T=128 sweep takes a second or two
        if waiting.count():
            pytest.fail(f"{time.monotonic() - left:.1f} s after the user left the Cost view its sweep still held the lock")
        assert time.monotonic() < deadline, "the second sweep did not finish within 30 s"
        other.wait_for_timeout(100)
    assert not waiting.count() and not exception_texts(other)
    other.get_by_text("This server: the fits and every point", exact=True).wait_for(timeout=10_000)  # its own points, measured


@pytest.mark.parametrize("slide", ["Cost?present=on&slide=1", "Decoding?present=on&slide=4&part=1"])
def test_a_log_axis_labels_its_powers_of_ten_only(server, browser, slide):
    """Vega ticks a log axis at 1 to 9 in each decade and hides the labels that would overlap, which leaves an uneven
    few (Decoding's step times: 0.01, 0.03, 0.2, 1, 3): the time and memory charts label their powers of ten."""
    page = visit(browser, f"{server}/{slide}", viewport=(1024, 576))
    try:
        settle_layout(page)
        axes = page.locator("[data-testid='stVegaLiteChart'] g.role-axis[aria-label^='Y-axis']")
        assert axes.count() == 2  # time and memory; a step's time with the cache and without
        for axis in axes.all():
            texts = axis.locator("g.role-axis-label text").evaluate_all(
                "labels => labels.filter(t => getComputedStyle(t).opacity !== '0' && t.textContent).map(t => t.textContent)"
            )
            decades = [math.log10(float(text.replace(",", ""))) for text in texts]
            assert len(decades) >= 2 and all(abs(d - round(d)) < 1e-9 for d in decades), texts
    finally:
        page.close()


def test_a_sweep_on_a_slide_outlives_a_resize_and_the_slide_then_fits_the_new_window(server, browser):
    """A presenter starts a sweep on a 1024 × 576 slide and moves the window to a full-HD projector while it runs: the
    window's report of its new size waits for the sweep's run to end (its rerun would stop the sweep), then the slide
    is laid out for the new window, the sweep's own points drawn."""
    page = visit(browser, f"{server}/Cost?present=on&slide=1&T_max=2048&repeats=5", viewport=(1024, 576))
    try:
        settle_runs(page)
        page.get_by_role("button", name="Controls").click()
        page.get_by_role("button", name=MEASURE).click()
        page.get_by_text("Measuring T=").first.wait_for(timeout=REACH_S * 1000)
        page.set_viewport_size({"width": 1920, "height": 1080})
        assert not page.locator(IDLE).count()  # resized while the sweep runs
        settle_runs(page, timeout_s=REACH_S)
        assert page.get_by_text("this server: time").count() == 1  # the sweep ran to its end: its slopes
        slide = page.evaluate(SLIDE) | {"exceptions": exception_texts(page)}
        assert not problems_of(slide, FULL_HD), problems_of(slide, FULL_HD)  # magnified 1.5 times, and it fits
    finally:
        page.close()
