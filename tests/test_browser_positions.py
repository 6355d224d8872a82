"""The Positions & geometry view's query-key map in a real browser: hovering a point names its token."""

from __future__ import annotations

from urllib.parse import urlencode

from attn_core import tokenize
from tests.browser_support import SENTENCE as SIXTEEN_WORDS
from tests.browser_support import contrast, exception_texts, rgba, settle_layout, skip_without_browser, visit

skip_without_browser()
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


MAPS = {3: "feature 2i", 4: "PC 1", 5: "PC 1"}  # slide: the x-axis title of its map (rotation, query-key map, word paths)


def test_every_map_has_a_square_plot_on_a_page_and_on_a_projector(server, browser):
    """One domain on both axes needs a square plot, or a circle is drawn as an ellipse and a distance reads differently
    across and up: the plot's background is square whatever room the chart's title, legend and axes take. On a
    projector a legend of two entries goes beside the plot, which is then at least 230 px a side."""
    for slide, axis in MAPS.items():
        for present, viewport in (("off", (1920, 1080)), ("on", (1024, 576))):
            query = urlencode({"slide": slide, "present": present, "text": SENTENCE})
            page = visit(browser, f"{server}/Positions?{query}", viewport=viewport)
            try:
                settle_layout(page)
                chart = page.locator(f"[data-testid='stVegaLiteChart']:has([aria-label^=\"X-axis titled '{axis}\"])").first
                chart.scroll_into_view_if_needed()
                width, height = chart.evaluate(
                    "e => { const b = e.querySelector('path.background').getBoundingClientRect(); return [b.width, b.height]; }"
                )
                assert abs(width - height) <= 1 and width >= 230, (slide, present, width, height)
                assert not exception_texts(page)
            finally:
                page.close()


LABEL_BOXES = """chart => [...chart.querySelectorAll('g.mark-text.role-mark text')].filter(t => t.textContent).map(t => {
    const b = t.getBoundingClientRect(); return [t.textContent, b.left, b.top + INK, b.right, b.bottom - INK]; })"""
INK = 3  # pixels above and under a 14-px label's letters within its box (19 px high)
TOUCH = 3  # pixels two labels may share across and up: touching, still readable


def test_the_labels_of_a_crowded_map_do_not_cover_each_other(server, browser):
    """Sixteen words make 32 points on the query-key map; on a 1024 × 576 slide the plot is about 300 px a side, and
    each label is put where it covers no other (charts.label_spots): no two labels' letters overlap, toy or MiniLM."""
    for present, viewport in (("on", (1024, 576)), ("off", (1920, 1080))):
        for source in ("toy", "real"):
            query = urlencode({"slide": 4, "present": present, "text": SIXTEEN_WORDS, "map": source})
            page = visit(browser, f"{server}/Positions?{query}", viewport=viewport)
            try:
                settle_layout(page)
                chart = page.locator("[data-testid='stVegaLiteChart']:has([aria-label^=\"X-axis titled 'PC 1\"])").first
                chart.scroll_into_view_if_needed()
                boxes = chart.evaluate(LABEL_BOXES.replace("INK", str(INK)))
                assert len(boxes) >= 30, (present, source, len(boxes))
                covered = [
                    (a[0], b[0])
                    for i, a in enumerate(boxes)
                    for b in boxes[i + 1 :]
                    if min(a[3], b[3]) - max(a[1], b[1]) > TOUCH and min(a[4], b[4]) - max(a[2], b[2]) > TOUCH
                ]
                assert not covered, (present, source, covered)
                assert not exception_texts(page)
            finally:
                page.close()


def test_the_labels_of_the_rotation_and_the_word_paths_are_written_in_the_themes_text_colour(server, browser):
    """Vega writes a text mark of no colour in black, which the dark theme's background hides, and a light series colour
    is faint as text on white: the rotation's numbers of positions and the word paths' stages are in the page's text
    colour, near white in the dark theme and near black in the light one."""
    themes = (("dark", lambda channel: channel >= 200), ("light", lambda channel: channel <= 60))
    for (scheme, readable), slide in ((theme, slide) for theme in themes for slide in (3, 5)):
        page = visit(browser, f"{server}/Positions?slide={slide}&present=on", viewport=(1024, 576), color_scheme=scheme)
        try:
            settle_layout(page)
            fills = page.evaluate(
                "() => [...document.querySelectorAll('g.mark-text.role-mark text')].map(t => getComputedStyle(t).fill)"
            )
            numbers = [[int(channel) for channel in fill[fill.index("(") + 1 : -1].split(",")[:3]] for fill in fills]
            assert len(numbers) >= 4 and all(readable(channel) for rgb in numbers for channel in rgb), (scheme, slide, fills)
        finally:
            page.close()


def test_the_maps_labels_read_at_4_5_to_1_on_either_theme(server, browser):
    """A query's label is blue and a key's orange, each a shade that reads on the theme's page (charts.TEXT_SHADES):
    no one blue reads on a dark page as on a white one."""
    query = urlencode({"slide": 4, "present": "on", "text": SENTENCE, "seed": SEED})
    for scheme in ("light", "dark"):
        page = visit(browser, f"{server}/Positions?{query}", viewport=(1024, 576), color_scheme=scheme)
        try:
            settle_layout(page)
            fills = page.evaluate(
                "() => [...document.querySelectorAll('g.coloured_text_marks > text')].map(t => getComputedStyle(t).fill)"
            )
            page_colour = page.evaluate(
                "() => getComputedStyle(document.querySelector(\"[data-testid='stApp']\")).backgroundColor"
            )
            assert len(fills) == 2 * len(tokenize(SENTENCE)) and len(set(fills)) == 2, (scheme, set(fills))  # two roles
            worst = min(contrast(rgba(fill), 1.0, rgba(page_colour)) for fill in fills)
            assert worst >= 4.5, (scheme, set(fills), page_colour, worst)
        finally:
            page.close()
