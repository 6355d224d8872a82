"""Sections with their own controls rerun alone (``page.live``, a Streamlit fragment), in a real browser: the rest
of the page is not sent again, and the URL still follows the control."""

from __future__ import annotations

import pytest

from tests.browser_support import browser, exception_texts, last_run_was_a_section, rerun, server, skip_without_browser, visit

skip_without_browser()
PlaywrightError = pytest.importorskip("playwright.sync_api").Error
__all__ = ["browser", "server"]  # module-scoped fixtures from tests.browser_support


def choose(page, label: str, option: str) -> None:
    """Pick an option of a select box (opened by the keyboard: a click does not always open it)."""
    box = page.get_by_role("combobox", name=label, exact=True)
    wanted = page.get_by_role("option", name=option, exact=True)
    for attempt in range(3):  # a key pressed while the page is still drawing may be lost: try again
        box.press("ArrowDown")
        try:
            wanted.wait_for(timeout=3_000 * (attempt + 1))
            break
        except PlaywrightError:
            box.press("Escape")
    with rerun(page):
        wanted.click()


@pytest.mark.parametrize(
    ("path", "label", "option", "in_url", "gone"),
    [  # what the section showed before the change (the default query or token is the last word, "book")
        ("Pipeline", "Query token", "1: friend", "query=1", "Context vector of book:"),
        ("Real_model", "Layer", "3", "layer=3", "previous-token head"),  # said of the default layer 0, head 2 only
        ("Real_model", "Attention from token", "1: my", "token=1", "Entropy of “book”'s row"),
    ],
)
def test_a_section_control_reruns_its_section_only(server, browser, path, label, option, in_url, gone):
    page = visit(browser, f"{server}/{path}?text=my+friend+reads+an+old+book")
    page.set_default_timeout(30_000)
    page.get_by_text(gone).first.wait_for()
    choose(page, label, option)
    assert last_run_was_a_section(page)
    page.wait_for_function(f"() => window.location.search.includes({in_url!r})")
    assert "text=my" in page.url  # the rest of the view's state stays in the link
    page.get_by_text(gone).first.wait_for(state="detached")
    assert not exception_texts(page)
