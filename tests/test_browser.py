"""The app in a real browser: a fresh server, deep links, charts drawn at a readable size.

Needs Chromium at /usr/bin/chromium (`apt-get install chromium`). Without it these tests are
skipped locally; CI sets REQUIRE_BROWSER=1 so that a missing browser fails instead.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from attn_core.examples import DEFAULT_SENTENCE
from attn_ui.page import SECTION_PICKER, VIEWS
from tests.browser_support import (
    EXCEPTION,
    IDLE,
    LAST_CHANGE,
    choose,
    exception_texts,
    finished_runs,
    rerun,
    run_events,
    settle_layout,
    settle_runs,
    skip_without_browser,
    visit,
)

skip_without_browser()
PlaywrightError = pytest.importorskip("playwright.sync_api").Error
NEW_SENTENCE = "my friend reads an old book"


def test_home_page_links_to_every_view(server, browser):
    page = visit(browser, server)
    assert page.locator(EXCEPTION).count() == 0
    for view in VIEWS:  # links can be drawn a moment after the run ends on a cold server: wait for each
        page.wait_for_selector(f"a[href$='{view.url_path}']", state="attached", timeout=30_000)


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.label)
def test_each_view_renders_without_exception(server, browser, view):
    page = visit(browser, f"{server}/{view.url_path}")
    assert page.locator(EXCEPTION).count() == 0
    assert page.locator("h1").count() >= 1


def test_shared_pipeline_link_shows_the_example(server, browser):
    page = visit(browser, f"{server}/Pipeline?preset=playing-outside&query=0&slide=all")
    assert page.locator(EXCEPTION).count() == 0
    page.get_by_text("0.51·v(Playing) + 0.49·v(Outside) = [0.3357, 0.6014, 0.1438, 0.5453]").wait_for(timeout=30_000)
    cells = page.locator("[data-testid='stVegaLiteChart'] g.mark-rect path")
    cells.first.wait_for(timeout=30_000)
    # Heatmap cells are drawn at a readable size (Streamlit's theme once collapsed them to a line).
    for index in range(cells.count()):
        box = cells.nth(index).bounding_box()
        assert box and box["height"] >= 10 and box["width"] >= 10, box
    assert "preset=playing-outside" in page.url


def test_changing_a_control_updates_the_url(server, browser):
    page = visit(browser, f"{server}/Pipeline")
    settle_layout(page)  # on a busy machine a click before the page has settled could land on a control not yet live
    with rerun(page):
        page.locator("label").filter(has_text="Divide scores by √d_k").click()
    page.wait_for_function("() => window.location.search.includes('scale=off')", timeout=10_000)
    assert page.locator(EXCEPTION).count() == 0


def test_back_and_forward_undo_and_redo_a_control_change(server, browser):
    """Each change of a control is a step of the browser's history: Back shows the view as it was before it, the
    control too, and Forward the change again, section and presenter mode alike."""
    page = visit(browser, f"{server}/Pipeline", viewport=(1280, 720))
    settle_layout(page)
    toggle = page.locator("[data-testid='stSidebar'] label").filter(has_text="Divide scores by √d_k")
    checked = lambda: toggle.locator("input").is_checked()  # noqa: E731
    assert checked()
    with rerun(page):
        toggle.click()
    page.wait_for_function("() => location.search.includes('scale=off')", timeout=10_000)
    settle_layout(page)
    assert not checked()
    with rerun(page):
        page.go_back()
    page.wait_for_function("() => !location.search.includes('scale=off')", timeout=10_000)
    settle_layout(page)
    assert checked() and "scale=off" not in page.url
    with rerun(page):
        page.go_forward()
    settle_layout(page)
    assert not checked() and "scale=off" in page.url and not exception_texts(page)
    headers = page.locator("[data-testid='stMain'] h2")
    first = headers.first.inner_text()
    with rerun(page):
        page.locator(f"[data-testid='stMain'] .st-key-{SECTION_PICKER}").get_by_role("radio", name="Scores", exact=True).click()
    settle_layout(page)
    assert headers.first.inner_text().startswith("4 · Scores")
    with rerun(page):
        page.locator("label").filter(has_text="Presenter mode").click()
    page.wait_for_function("() => location.search.includes('present=on')", timeout=10_000)
    settle_layout(page)
    for expected in ("4 · Scores", first):  # presenter mode off again, then the first section
        with rerun(page):
            page.go_back()
        settle_layout(page)
        assert headers.first.inner_text().startswith(expected) and "present=on" not in page.url
        assert page.locator("[data-testid='stSidebar']").bounding_box()["x"] >= 0  # the controls back in view
    assert not checked() and not exception_texts(page)


def change_text(page, label: str, text: str) -> None:
    """Type ``text`` into the box labelled ``label`` and send it, as Enter (a line) or Ctrl+Enter (an area) does."""
    box = page.get_by_role("textbox", name=label)
    box.fill(text)
    box.press("Control+Enter" if box.evaluate("(e) => e.tagName") == "TEXTAREA" else "Enter")


NOTE_CHANGES = {  # a change that brings a note above a section's charts, whose data it leaves as they were
    "studio sizes": ("Masking?slide=7", lambda page: change_text(page, "Mask B: sizes", "window=oops"), "Mask B:"),
    "a mask with empty rows": (
        "Masking?slide=5",
        lambda page: page.locator("[data-testid='stSidebar'] label").filter(has_text="Padding").first.click(),
        "no key at all",
    ),
    "one padded sentence": (
        "Real_model?slide=6",
        lambda page: change_text(page, "Sentences of different lengths, one per line", "One line only"),
        "Write two sentences or more",
    ),
}


@pytest.mark.parametrize("case", NOTE_CHANGES)
def test_a_note_that_comes_above_a_sections_charts_leaves_them_in_place(server, browser, case):
    """Streamlit matches a run's elements to the page's by their place: a note inserted above a section's charts
    would move them, and each moved chart is drawn anew from its spec. Notes come in slots of their own, so the charts
    stay the elements they were (a tag put on each is still there after the change)."""
    path, change, note = NOTE_CHANGES[case]
    page = visit(browser, f"{server}/{path}", viewport=(1440, 900))
    settle_layout(page)
    charts = page.locator("[data-testid='stMain'] [data-testid='stVegaLiteChart']")
    assert charts.count() >= 2
    charts.evaluate_all("(all) => all.forEach((chart) => { chart.dataset.before = 'yes'; })")
    with rerun(page):
        change(page)
    settle_layout(page)
    assert note in page.locator("[data-testid='stMain'] [data-testid='stAlertContainer']").first.inner_text()
    assert charts.evaluate_all("(all) => all.map((chart) => chart.dataset.before)") == ["yes"] * charts.count()
    assert not exception_texts(page)


STALE_FILLS = """() => { const here = location.href.split('#')[0];
    return [...document.querySelectorAll("svg [fill^='url(']")].map(e => e.getAttribute('fill'))
        .filter(fill => fill.slice(4, fill.lastIndexOf('#')) !== here); }"""


def test_colour_bars_follow_the_address_as_it_changes(server, browser):
    """Vega fills a colour bar with url(<the page's address>#gradient); the app writes each change of a control or a
    slide into the address after the charts are drawn, and a fill naming the old address draws nothing. Every such
    fill names the address the page has now: on a page after a control, on slides stepped with the → key."""
    page = visit(browser, f"{server}/Pipeline")
    settle_layout(page)
    with rerun(page):
        _step_up(page, "Seed")
    page.wait_for_function("() => window.location.search.includes('seed=1')", timeout=10_000)
    settle_layout(page)
    assert page.locator("svg [fill^='url(']").count() >= 1 and page.evaluate(STALE_FILLS) == []
    page.close()
    page = visit(browser, f"{server}/Pipeline?present=on", viewport=(1024, 576))
    for _ in range(3):
        settle_layout(page)
        with rerun(page):
            page.evaluate("() => document.activeElement && document.activeElement.blur()")
            page.keyboard.press("ArrowRight")
        settle_layout(page)
        assert page.locator("svg [fill^='url(']").count() >= 1 and page.evaluate(STALE_FILLS) == []
    assert not exception_texts(page)
    page.close()


def _step_up(page, label: str) -> None:
    page.locator("[data-testid='stNumberInput']").filter(has_text=label).get_by_role("button", name="Increment").click()


def _click_label(page, text: str) -> None:
    page.locator("[data-testid='stSidebar'] label").filter(has_text=text).click()


PIPELINE_STEPS = (
    ("Model width C +1", lambda page: _step_up(page, "Model width C")),
    ("Head size d_k +1", lambda page: _step_up(page, "Head size d_k")),
    ("Seed +1", lambda page: _step_up(page, "Seed")),
    ("toggle Divide scores by √d_k", lambda page: _click_label(page, "Divide scores by √d_k")),
    ("toggle Add position encodings", lambda page: _click_label(page, "Add position encodings")),
    ("Query token → 1: friend", lambda page: choose(page, "Query token", "1: friend")),
    ("Example → The cat sat on the mat", lambda page: choose(page, "Example", "The cat sat on the mat")),
    ("Example → Your sentence", lambda page: choose(page, "Example", "Your sentence")),
    ("Weights → all-MiniLM-L6-v2", lambda page: _click_label(page, "all-MiniLM-L6-v2, one trained head")),
)


def _run_step(page, name: str, action) -> str | None:
    """Do one step and wait for its rerun; what went wrong, if anything, as one line."""
    try:
        with rerun(page, timeout_s=30):
            action(page)
    except PlaywrightError as error:  # e.g. the control is gone because the previous run failed
        return f"{name}: could not act ({' / '.join(error.message.splitlines()[:4])})"
    shown = exception_texts(page)
    return f"{name}: {shown[0].splitlines()[0]}" if shown else None


def test_pipeline_survives_text_then_every_control(server, browser):
    """A typed sentence followed by any other control must never end in a traceback: widgets whose options
    depend on the tokens (the query selectbox) must not choke on a stale value the browser sends back.
    Every step is tried, so the message lists each one that failed, in order."""
    page = visit(browser, f"{server}/Pipeline?slide=all")
    page.set_default_timeout(10_000)
    sentence = page.locator("[data-testid='stSidebar'] [data-testid='stTextArea']").filter(has_text="Sentence")
    sentence.locator("textarea").fill(NEW_SENTENCE)
    with rerun(page):
        page.keyboard.press("Control+Enter")  # what commits an st.text_area (as does clicking elsewhere)
    page.wait_for_function("() => window.location.search.includes('friend')")  # the URL follows just after the run
    assert not exception_texts(page), f"after typing a sentence: {exception_texts(page)}"
    problems = [problem for name, action in PIPELINE_STEPS if (problem := _run_step(page, name, action))]
    assert not problems, "after typing a sentence, then:\n" + "\n".join(problems)


def test_masking_play_steps_to_the_last_token(server, browser):
    """Play moves the generation step forward on a timer (a fragment asks for full reruns) and stops at the end."""
    page = visit(browser, f"{server}/Masking?text=a+b+c+d&slide=all")
    settle_layout(page)  # a click before the page has settled could land on a control not yet live
    page.locator("label").filter(has_text="Play").click()
    page.wait_for_function("() => window.location.search.includes('step=4')", timeout=30_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    assert not exception_texts(page)
    page.wait_for_timeout(2_000)  # stopped at the last token: no further step, no error
    assert "step=4" in page.url and not exception_texts(page)


def test_query_label_follows_the_text(server, browser):
    """A new sentence renames the selected query token at once ("3: cats" becomes "3: black"), and the next
    change keeps that token rather than receiving a stale label back."""
    page = visit(browser, f"{server}/Pipeline?text=we+like+big+cats&query=3&slide=all")
    picker = page.get_by_role("combobox", name="Query token")
    assert picker.input_value() == "3: cats"
    with rerun(page):
        page.locator("textarea").first.fill("red green blue black white")
        page.keyboard.press("Control+Enter")
    assert picker.input_value() == "3: black"
    with rerun(page):
        page.locator("label").filter(has_text="Divide scores by").click()
    assert picker.input_value() == "3: black" and not exception_texts(page)


def test_right_arrow_steps_the_slides_straight_after_presenter_mode_is_switched_on(server, browser):
    """The toggle keeps the keyboard's focus in the closed sidebar, where Streamlit's shortcuts ignore keys: the slide
    takes it, so the presenter's next → goes to step 2."""
    page = visit(browser, f"{server}/Pipeline", viewport=(1024, 576))
    settle_layout(page)
    with rerun(page):
        page.locator("label").filter(has_text="Presenter mode").click()
    settle_layout(page)
    main = page.locator("[data-testid='stMain']")
    assert "Step 1 of" in main.inner_text()
    with rerun(page):
        page.keyboard.press("ArrowRight")
    settle_layout(page)
    assert "Step 2 of" in main.inner_text() and not exception_texts(page)


@pytest.mark.parametrize("key", ["mouse", "Space"])
def test_switching_presenter_mode_on_lays_the_first_slide_out_once_for_the_window(server, browser, key):
    """A scrolling page narrower than slide.WIDE_PX draws the same whatever its size and does not report it; the first
    slide was laid out for the smallest screen, then again once the slide had reported the window's size: two full
    redraws. The size now goes with the toggle's switch, by the mouse or the keyboard: no run is asked for after the
    slide's, which is magnified for the 1440 × 900 window (slide.zoom)."""
    page = visit(browser, f"{server}/Pipeline", viewport=(1440, 900))
    settle_layout(page)
    toggle = page.locator("label").filter(has_text="Presenter mode")
    before = len(run_events(page))
    with rerun(page):
        if key == "mouse":
            toggle.click()
        else:
            page.locator(".st-key-present input").focus()
            page.keyboard.press(key)
    settle_layout(page)
    page.wait_for_timeout(1000)  # a report comes 150 ms after the slide stops changing, and its run after it
    events = run_events(page)[before:]
    assert "rerun_script" not in events[events.index("script_finished") :], events
    zoom = page.evaluate("() => document.querySelector(\"[data-testid='stMainBlockContainer']\").currentCSSZoom")
    assert zoom == 1.125 and not exception_texts(page)


def test_leaving_presenter_mode_brings_the_sidebar_back(server, browser):
    """Presenter mode closes the sidebar; switching it off opens it again, with the view's controls."""
    page = visit(browser, f"{server}/Pipeline", viewport=(1280, 720))
    sidebar = page.locator("[data-testid='stSidebar']")
    with rerun(page):
        page.locator("label").filter(has_text="Presenter mode").click()
    page.wait_for_function("() => document.querySelector(\"[data-testid='stSidebar']\").getBoundingClientRect().right <= 0")
    page.locator("[data-testid='stExpandSidebarButton']").click()
    with rerun(page):
        page.locator("label").filter(has_text="Presenter mode").click()
    page.wait_for_function("() => document.querySelector(\"[data-testid='stSidebar']\").getBoundingClientRect().left >= 0")
    page.wait_for_function("() => !location.search.includes('present')")  # published at the end of the run
    assert sidebar.bounding_box()["width"] > 200 and not exception_texts(page)


def test_after_presenter_mode_a_change_takes_one_run(server, browser):
    """Streamlit calls the window-size reporter again when its data changes (on a slide, off it) but runs its cleanup
    only when it goes: the slide's listeners, left alive, reported after every redraw, and each change off the slide
    took two runs, twice the time. Each call now stops the one before."""
    page = visit(browser, f"{server}/Pipeline", viewport=(1440, 900))
    toggle = page.locator("label").filter(has_text="Presenter mode")
    with rerun(page):
        toggle.click()
    settle_layout(page)
    page.locator("[data-testid='stExpandSidebarButton']").click()
    with rerun(page):
        toggle.click()
    settle_layout(page)
    picker = page.locator(f"[data-testid='stMain'] .st-key-{SECTION_PICKER}")
    for label in ("Scores", "Context", "Scores"):
        before = finished_runs(page)
        picker.get_by_role("radio", name=label, exact=True).click()
        page.wait_for_timeout(1500)  # a report comes 150 ms after the page stops changing, and its run after it
        assert finished_runs(page) - before == 1, f"opening “{label}” took {finished_runs(page) - before} runs"
    assert not exception_texts(page)


def test_presenter_mode_keeps_the_open_section(server, browser):
    """Switching presenter mode on or off changes the page around the open section, not which section is open: the
    same charts come back, drawn at the slide's size in presenter mode (attn_ui.slide), where the slide bar stands in
    for the sections' picker, which is hidden."""
    page = visit(browser, f"{server}/Multi_head?slide=3", viewport=(1280, 720))
    settle_layout(page)
    titles = "(all) => all.map((chart) => chart.getAttribute('aria-label'))"
    charts = page.locator("[data-testid='stVegaLiteChart']")
    shown = charts.evaluate_all(titles)
    assert len(shown) == 3  # one head's slices of W_Q, W_K, W_V
    picker = page.locator(f"[data-testid='stMain'] .st-key-{SECTION_PICKER}")
    toggle = page.locator("label").filter(has_text="Presenter mode")
    for presenting in (True, False):
        if not presenting:
            page.locator("[data-testid='stExpandSidebarButton']").click()
        with rerun(page):
            toggle.click()
        settle_layout(page)
        assert picker.is_visible() is not presenting and ("present=on" in page.url) is presenting
        assert charts.evaluate_all(titles) == shown and not exception_texts(page)


def test_a_layout_is_not_settled_while_an_element_waits_for_its_script(server, browser):
    """Streamlit fetches each kind of element's script as a page first draws one, with a skeleton in its place
    meanwhile, which on a busy machine can take longer than settle_layout's quiet. Here Vega's chart script comes 2 s
    late: settle_layout returns with the chart drawn, not with its skeleton."""
    page = browser.browser.new_page(viewport={"width": 1280, "height": 720})  # a page of its own, for its route

    def late(route) -> None:  # the script itself waits 2 s before it runs (a module's top-level await)
        script = route.fetch()
        route.fulfill(response=script, body="await new Promise(done => setTimeout(done, 2000));\n" + script.text())

    try:
        page.route("**/ArrowVegaLiteChart.*.js", late)
        page.add_init_script(LAST_CHANGE)
        page.goto(f"{server}/Pipeline")
        page.wait_for_selector(IDLE, timeout=60_000)
        settle_layout(page)
        assert page.locator("[data-testid='stVegaLiteChart'] svg").count() >= 1
        assert page.locator("[data-testid='stSkeleton']").count() == 0
    finally:
        page.close()


def test_hiding_cls_updates_the_head_grid_in_place(server, browser):
    """Hiding [CLS] and [SEP] adds a note above the sections and changes the 72 heads' thumbnails' data only: the
    chart stays the same drawing, its data updated in place, not drawn anew."""
    page = visit(browser, f"{server}/Real_model?slide=2", viewport=(1280, 720))
    settle_layout(page)
    grid = page.locator("[data-testid='stVegaLiteChart'] > :is(svg, canvas)")
    assert grid.count() == 1
    grid.evaluate("(drawing) => { drawing.dataset.drawn = 'before'; }")
    with rerun(page):
        page.locator("label").filter(has_text="Hide [CLS] and [SEP]").click()
    settle_layout(page)
    assert page.get_by_text("hidden from the charts, not from the model").is_visible() and "hide=on" in page.url
    assert page.locator("[data-drawn='before']").count() == 1 and not exception_texts(page)


def test_clicking_a_heads_thumbnail_opens_it_in_the_head_view(server, browser):
    """The model view's 72 thumbnails are the way into the heads: a click opens that layer and head in section 1."""
    page = visit(browser, f"{server}/Real_model?slide=2", viewport=(1280, 720))
    settle_layout(page)
    thumbnails = page.locator("[data-testid='stVegaLiteChart'] image")
    assert thumbnails.count() == 6 * 12
    with rerun(page):
        thumbnails.nth(3 * 12 + 1).click()  # layer 3, head 1: row-major
    settle_layout(page)
    assert page.locator(f".st-key-{SECTION_PICKER} [role='radio'][aria-checked='true']").inner_text() == "One head"
    for label, value in (("Layer", "3"), ("Head", "1")):
        assert page.locator("[data-testid='stSelectbox']").filter(has_text=label).locator("input").input_value() == value
    assert page.get_by_text("Layer 3, head 1", exact=True).is_visible() and "layer=3&head=1" in page.url
    assert not exception_texts(page)


def test_a_sections_controls_keep_their_values_after_other_sections(server, browser):
    """Streamlit forgets a control that runs do not draw: the Real model's head, in its first section, came back
    showing head 0 after two runs on the grid's section, while the charts still drew head 2, and the next run
    took the 0."""
    page = visit(browser, f"{server}/Real_model", viewport=(1280, 720))
    head = page.locator("[data-testid='stSelectbox']").filter(has_text="Head").locator("input")
    hide = page.locator("label").filter(has_text="Hide [CLS] and [SEP]")
    assert head.input_value() == "2"
    for action in (page.get_by_role("radio", name="All heads", exact=True), hide, page.get_by_role("radio", name="One head")):
        with rerun(page):
            action.click()
    settle_layout(page)
    assert head.input_value() == "2"
    with rerun(page):
        hide.click()  # one more run: it takes the value the page shows
    settle_layout(page)
    assert head.input_value() == "2" and "head=" not in page.url and not exception_texts(page)


def test_scaling_opens_with_its_own_values_after_the_pipeline(server, browser):
    """Views share widget keys (text, d_k, scale): the Pipeline's values, from a shared link or changed on the page,
    must not follow the user through the sidebar's link to Scaling, which opens with its own defaults. (Without
    ``page.setup`` forgetting the previous view's values, Scaling opened from a Pipeline link with an empty
    sentence and d_k 1.)"""
    expect = pytest.importorskip("playwright.sync_api").expect
    page = visit(browser, f"{server}/Pipeline?text=we+like+big+cats&scale=off&d_k=9")  # 9: not a d_k Scaling offers
    page.set_default_timeout(30_000)
    sidebar = page.locator("[data-testid='stSidebar']")
    sentence = sidebar.locator("[data-testid='stTextArea']").filter(has_text="Sentence").locator("textarea")

    def open_view(name: str) -> None:
        with rerun(page):
            sidebar.locator(f"a[href$='{name}']").click()
        page.wait_for_function(f"() => window.location.pathname.endsWith('/{name}')")
        assert not exception_texts(page)

    def scaling_shows_its_defaults(after: str) -> None:
        # expect() waits a moment: a widget's value reaches the page shortly after its run has finished
        expect(sentence, after).to_have_value(DEFAULT_SENTENCE, timeout=10_000)
        for label, value in (("Head size d_k", "64"), ("Scale s", "1")):
            thumb = sidebar.locator("[data-testid='stSlider']").filter(has_text=label).get_by_test_id("stSliderThumbValue")
            expect(thumb, after).to_have_text(value, timeout=10_000)
        assert not any(part in page.url for part in ("text=", "scale=", "d_k=")), (after, page.url)

    expect(sentence).to_have_value("we like big cats", timeout=10_000)
    open_view("Scaling")
    scaling_shows_its_defaults("a Pipeline link")

    open_view("Pipeline")
    with rerun(page):
        sentence.fill(NEW_SENTENCE)
        page.keyboard.press("Control+Enter")
    with rerun(page):
        _click_label(page, "Divide scores by √d_k")
    page.wait_for_function("() => ['friend', 'scale=off'].every(part => window.location.search.includes(part))")
    open_view("Scaling")
    scaling_shows_its_defaults("a sentence typed and scaling turned off on the Pipeline")


def test_a_matrix_menu_and_its_numbers_open_on_click(server, browser):
    """A matrix's download menu and its table of numbers are made only when opened (each opening reruns the page):
    clicking them shows their contents, and the CSV downloads with the token labels."""
    page = visit(browser, f"{server}/Pipeline?text=we+like+big+cats", viewport=(1024, 576))
    settle_runs(page)  # any rerun for the window's size, which would move the menu as it opens
    page.set_default_timeout(30_000)
    assert page.get_by_role("button", name="CSV, with token labels").count() == 0
    with rerun(page):
        page.get_by_role("button", name="Download", exact=True).first.click()
    with page.expect_download() as download:
        page.get_by_role("button", name="CSV, with token labels").click()
    assert open(download.value.path()).read().splitlines()[1].startswith("we,")
    page.keyboard.press("Escape")
    numbers = page.locator("[data-testid='stExpander']").filter(has_text="Numbers").first
    with rerun(page):
        numbers.locator("summary").click()
    numbers.locator("[data-testid='stDataFrame']").wait_for()
    assert not exception_texts(page)


def test_hovering_a_cell_or_its_number_names_its_query_key_and_value(server, browser):
    """A small heatmap prints each value in its cell; the number lies over the cell, and hovering either shows the
    cell's tooltip (query, key, value), a masked cell's value as −∞."""
    page = visit(browser, f"{server}/Masking?slide=all", viewport=(1400, 900))
    chart = page.locator("[data-testid='stVegaLiteChart']").filter(has_text="Scaled scores, masked").first
    chart.scroll_into_view_if_needed()
    first_row_third_key = chart.locator("g.mark-rect path").nth(2).bounding_box()  # masked: a causal mask's row 0
    tooltip = page.locator("#vg-tooltip-element")
    for fraction in (0.5, 0.1):  # on the number, then on the cell beside it
        x = first_row_third_key["x"] + first_row_third_key["width"] * fraction
        page.mouse.move(x, first_row_third_key["y"] + first_row_third_key["height"] * fraction)
        page.wait_for_function("() => document.querySelector('#vg-tooltip-element')?.classList.contains('visible')")
        assert tooltip.inner_text().split() == ["query", "The", "key", "sat", "value", "−∞", "(masked)"]
        page.mouse.move(0, 0)


def test_a_view_draws_only_its_open_section_and_its_buttons_open_the_others(server, browser):
    """Outside presenter mode a row of buttons picks the section: only the open one is computed and drawn, a button
    opens another (and puts it in the URL), and "All sections" shows them all, one under the other."""
    page = visit(browser, f"{server}/Multi_head")
    charts = page.locator("[data-testid='stVegaLiteChart']")

    def sections() -> list[str]:
        return [text.split(" · ")[0] for text in page.locator("h2").all_inner_texts() if " · " in text]

    assert sections() == ["1"] and charts.count() == 0  # the first section is a table of shapes
    with rerun(page):
        page.get_by_role("radio", name="Q, K, V", exact=True).click()  # section 4, "Head 0: its queries, keys and values"
    settle_layout(page)  # charts are added a moment after the run has finished
    assert sections() == ["4"] and "slide=4" in page.url
    assert charts.count() == 3  # Q, K, V of one head
    with rerun(page):
        page.get_by_role("radio", name="All sections").click()
    assert sections() == [str(section) for section in range(1, 10)] and "slide=all" in page.url
    assert page.locator(EXCEPTION).count() == 0


def test_a_typed_address_or_colour_directive_is_shown_as_typed_not_as_a_link_or_a_colour(server, browser):
    """Markdown makes a link of a bare address and an e-mail (GFM's autolinks, backslash escapes or not) and Streamlit
    colours ":red[...]": the Real model's message about a sentence shows the sentence as typed."""
    typed = "http://x.io a@x.io :red[z]"  # within the message's 28 characters of a sentence
    page = visit(browser, f"{server}/Real_model?" + urlencode({"slide": 3, "text2": typed}), viewport=(1280, 720))
    try:
        settle_layout(page)
        message = page.locator("[data-testid='stAlertContainer']").filter(has_text="is not a word of sentence 2")
        assert message.inner_text().replace("\u2060", "") == f"“it” is not a word of sentence 2 (“{typed}”)."
        assert message.locator("a, code, span[class*='colored'], [style*='color']").count() == 0
    finally:
        page.close()
