"""The Positions & geometry view's query-key map in a real browser: hovering a point names its token."""

from __future__ import annotations

from urllib.parse import urlencode

from attn_core import tokenize
from tests.browser_support import browser, exception_texts, server, settle_layout, skip_without_browser, visit

skip_without_browser()
__all__ = ["browser", "server"]  # module-scoped fixtures from tests.browser_support
SENTENCE = "my friend reads an old book"
SEED = 23  # toy weights (the same on every machine) that leave every point of this sentence's map clear of the others
TOOLTIP = "#vg-tooltip-element"


def test_hovering_a_point_of_the_map_names_its_token_and_role(server, browser):
    query = urlencode({"slide": "4", "text": SENTENCE, "seed": SEED})
    page = visit(browser, f"{server}/Positions?{query}", viewport=(1400, 1000))
    try:
        settle_layout(page)
        chart = page.locator("[data-testid='stVegaLiteChart']").filter(has_text="Toy head").first
        chart.scroll_into_view_if_needed()
        symbols = chart.locator("g.mark-symbol.role-mark path")
        tokens = tokenize(SENTENCE)
        assert symbols.count() == 2 * len(tokens)
        named = set()
        for i in range(symbols.count()):
            box = symbols.nth(i).bounding_box()
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.wait_for_function(f"() => document.querySelector('{TOOLTIP}')?.classList.contains('visible')")
            rows = [[cell.strip() for cell in row.split("\t")] for row in page.locator(f"{TOOLTIP} tr").all_inner_texts()]
            lines = dict(rows)
            named.add((lines["token"], lines["role"]))
            page.mouse.move(0, 0)
            page.wait_for_function(f"() => !document.querySelector('{TOOLTIP}')?.classList.contains('visible')")
        assert named == {(token, role) for token in tokens for role in ("query", "key")}
        assert not exception_texts(page)
    finally:
        page.close()
