"""Playing a lesson in the app (attn_ui.lesson_player), with AppTest: a lesson's link opens its step in presenter
mode, Next and Previous walk it across views, a step's own link opens that step, and bad steps are reported while
the rest of the lesson plays."""

from __future__ import annotations

import re

import pytest

from attn_ui import lessons
from attn_ui.lesson_builder import BUILDER
from attn_ui.lesson_player import ARRIVED, DRAFT
from attn_ui.lessons import available, from_data, load, parse
from attn_ui.page import VIEWS
from tests.conftest import assert_clean, open_all, open_view, shown, texts

PAGES = {view.url_path: view.path for view in VIEWS}
SHIPPED = available()
MASKS = "masks-of-todays-models"


def bar(at) -> str:
    return next(block.value for block in at.markdown if re.search(r" · [Ss]tep \d+ of \d+", block.value))  # the slide's bar


def lesson_file(tmp_path, monkeypatch, name: str, title: str, steps: list[tuple[str, str]]):
    """A lesson of (title, link) steps, written as a teacher writes one, into the lessons folder (a temporary one)."""
    path = tmp_path / f"{name}.toml"
    path.write_text(f'title = "{title}"\n' + "".join(f'[[steps]]\ntitle = "{t}"\nlink = "{link}"\n' for t, link in steps))
    monkeypatch.setattr(lessons, "LESSONS", tmp_path)
    return path


def click(at, key: str):
    next(button for button in at.button if button.key == key).click().run()
    return at


def click_label(at, label: str, number: int = 1):
    """Click the ``number``-th button labelled ``label`` (a step's Up, Down, Remove in the lesson builder)."""
    [button for button in at.button if button.label == label][number - 1].click().run()
    return at


def assert_at_step(at, lesson: lessons.Lesson, number: int) -> None:
    """``at`` shows step ``number`` of ``lesson``: its view, section, part and parameters, in presenter mode."""
    step = lesson.steps[number - 1]
    assert_clean(at)
    on_screen = at.session_state["_shown"]
    assert at.session_state["_view"] == PAGES[step.view] and at.session_state["present"] is True, step
    assert {key: on_screen.query[key] for key in step.query} == step.query, step
    assert f"**{lesson.title}** · step {number} of {len(lesson.steps)}" in shown(bar(at))
    assert not any("not used as given" in text for text in texts(at, "warning")), texts(at, "warning")


@pytest.mark.parametrize("start", [None, "pages/4_Multi_head.py"], ids=["home", "another view"])
def test_a_lessons_link_opens_its_first_step_on_a_slide(start):
    at = open_view(start, lesson=MASKS)
    assert_at_step(at, load(SHIPPED[MASKS]), 1)
    assert at.query_params["lesson"] == MASKS


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_next_walks_every_step_across_views_and_previous_walks_back(name):
    lesson = load(SHIPPED[name])
    at = open_view(None, lesson=name)
    for number in range(1, len(lesson.steps) + 1):
        assert_at_step(at, lesson, number)
        if number > 1:
            assert at.query_params["lesson_step"] == str(number)  # the address is a link to the step
        click(at, "slide_next" if number < len(lesson.steps) else "slide_previous")
    assert_at_step(at, lesson, len(lesson.steps) - 1)
    click(at, "clicker_previous")  # a clicker's PageUp
    assert_at_step(at, lesson, len(lesson.steps) - 2)


def test_a_steps_link_opens_that_step_as_it_was_shared():
    """A step's address, its controls changed by the presenter, opens as it is; a step's link on another view opens
    the step's view."""
    lesson = load(SHIPPED[MASKS])
    at = open_view("pages/3_Masking.py", slide="2", part="1", mask="both", present="on", lesson=MASKS, lesson_step="1")
    assert at.session_state["mask"] == "both" and at.session_state["slide"] == 2
    assert f"step 1 of {len(lesson.steps)}" in bar(at)
    at = open_view("pages/1_Pipeline.py", lesson=MASKS, lesson_step="3")
    assert_at_step(at, lesson, 3)


def test_leaving_the_lesson_keeps_the_slide_and_gives_back_the_views_own_steps():
    at = open_view(None, lesson=MASKS, lesson_step="3")
    next(button for button in at.button if button.label == "Leave the lesson").click().run()
    assert_clean(at)
    assert at.session_state["slide"] == 6 and "lesson" not in at.query_params
    assert bar(at).startswith("**Masking** · Step")


def test_bad_lesson_values_in_a_link_are_reported_and_the_view_opens(tmp_path, monkeypatch):
    at = open_view("pages/1_Pipeline.py", lesson="no-such-lesson", lesson_step="x")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert "lesson = “no\\-such\\-lesson”" in warning and "lesson_step = “x”" in warning
    (tmp_path / "broken.toml").write_text('title = "Half written"\n[[steps]]\ntitle = ')
    monkeypatch.setattr(lessons, "LESSONS", tmp_path)
    at = open_view("pages/1_Pipeline.py", lesson="broken")
    assert_clean(at)
    assert "lesson = “broken”: broken.toml: not TOML" in " ".join(texts(at, "warning"))


def test_a_lesson_edited_while_it_plays_shows_the_edit_at_the_next_run(tmp_path, monkeypatch):
    """A teacher may edit a lesson's file while it plays: each run reads the file, and parses a text it has not seen
    (a dozen reads a run of the same text parse it once)."""
    path = lesson_file(tmp_path, monkeypatch, "live", "Live", [("First", "/Pipeline?slide=2")])
    at = open_view(None, lesson="live")
    assert "**Live** · step 1 of 1" in bar(at)
    parsed = lessons.parse.cache_info().misses
    at.run()
    assert lessons.parse.cache_info().misses == parsed
    path.write_text(path.read_text().replace('"Live"', '"Live, edited"'))
    at.run()
    assert "**Live, edited** · step 1 of 1" in bar(at)
    assert lessons.parse.cache_info().misses == parsed + 1


def test_the_home_page_lists_the_shipped_lessons():
    at = open_view(None)
    titles = [shown(link.label) for link in at.get("page_link")]
    assert {f"{load(path).title} ({len(load(path).steps)} steps)" for path in SHIPPED.values()} <= set(titles)


def test_a_lesson_with_bad_steps_reports_each_and_plays_the_others(tmp_path, monkeypatch):
    steps = [
        ("Fine", "/Pipeline?slide=2"),
        ("No such view", "/Pipelin?slide=1"),
        ("Unknown parameter, no such section", "/Scaling?temperatur=2&slide=42"),
        ("Fine again", "/Masking?slide=3&mask=causal"),
    ]
    lesson = load(lesson_file(tmp_path, monkeypatch, "typos", "A lesson with typos", steps))
    at = open_view(None, lesson="typos")
    assert_at_step(at, lesson, 1)
    click(at, "slide_next")  # step 2 cannot open: the view stays, and says why
    assert_clean(at)
    assert at.session_state["_view"] == "pages/1_Pipeline.py" and "step 2 of 4" in bar(at)
    assert any("Step 2 (“No such view”) names no view" in shown(text) for text in texts(at, "warning"))
    click(at, "slide_next")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert at.session_state["_view"] == "pages/2_Scaling.py" and "step 3 of 4" in bar(at)
    assert "temperatur: step 3" in warning and "slide = “42”: this view has" in warning
    assert warning.count("temperatur") == 1 and "temperatur" not in at.query_params  # said once, out of the address
    click(at, "slide_next")
    assert_at_step(at, lesson, 4)


def test_a_lessons_own_text_is_shown_as_typed_never_as_markdown(tmp_path, monkeypatch):
    """A lesson file is anyone's (downloaded, uploaded, shared): its title, its steps' titles and its links' keys are
    shown as text wherever they appear (home page, slide bar, a step's problems), never as a link or emphasis."""
    link = "[a prize](https://example.com)"
    steps = [("Fine", "/Pipeline?slide=2"), (link, "/Pipelin?slide=1"), ("**bold**", "/Scaling?_x_=2&slide=1")]
    lesson_file(tmp_path, monkeypatch, "tricky", f"{link} *now*", steps)
    home = open_view(None)
    label = next(link.label for link in home.get("page_link") if "prize" in link.label)
    assert shown(label) == f"{link} *now* (3 steps)" and "](" not in label
    at = open_view(None, lesson="tricky")
    assert shown(bar(at)).startswith(f"**{link} *now*** · step 1 of 3") and "](" not in bar(at)
    click(at, "slide_next")
    warning = " ".join(texts(at, "warning"))
    assert f"Step 2 (“{link}”) names no view" in shown(warning) and "](" not in warning
    click(at, "slide_next")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert "_x_: step 3 (“**bold**”)" in shown(warning) and "**bold**" not in warning and "_x_" not in warning


def builder(at):
    """The sidebar's Build a lesson, opened (its fields are made when it opens; AppTest closes it after a click)."""
    return open_all(at, "expander", BUILDER)


@pytest.fixture
def downloads(monkeypatch):
    """The bytes of a download button, by its label: read from the media storage the app's runs put them in."""
    from streamlit.runtime import memory_media_file_storage as media

    stores, make_store = [], media.MemoryMediaFileStorage.__init__

    def remember(store, *args, **kwargs):
        make_store(store, *args, **kwargs)
        stores.append(store)

    monkeypatch.setattr(media.MemoryMediaFileStorage, "__init__", remember)

    def read(at, label: str) -> bytes:
        button = next(button for button in at.get("download_button") if button.label == label)
        file_id = button.proto.url.rsplit("/", 1)[1]
        return next(store.get_file(file_id).content for store in stores if file_id in store._files_by_id)

    return read


def test_a_lesson_built_in_the_app_plays_and_downloads_and_uploads_as_the_same_lesson(downloads):
    at = open_view("pages/3_Masking.py", slide="2", part="1", mask="both", present="on")
    click_label(at, "Add this slide to the lesson")
    at.switch_page("pages/4_Multi_head.py").run()  # the draft goes from one view to the next (AppTest keeps slide=2)
    click_label(at, "Add this slide to the lesson")
    click_label(builder(at), "Add this view to the lesson")  # the view as it is
    links = [step["link"] for step in at.session_state[DRAFT]["steps"]]
    assert links == ["/Masking?mask=both&slide=2", "/Multi_head?slide=2", "/Multi_head?slide=2"]
    click_label(builder(at), "Remove", number=3)
    click_label(builder(at), "Up", number=2)  # Multi-head first
    builder(at).text_input(key="_draft_title").input("Two views").run()
    builder(at).text_area(key="_draft_step_notes_2").input("Say: <b>both</b> masks at once").run()
    assert_clean(at)
    built = parse(downloads(at, "Download the lesson").decode())
    assert built.title == "Two views" and [step.link for step in built.steps] == [
        "/Multi_head?slide=2",
        "/Masking?mask=both&slide=2",
    ]
    assert built.steps[1].notes == "Say: <b>both</b> masks at once" and built.steps[1].title == "Masking: Generation step by step"

    again = builder(open_view("pages/1_Pipeline.py"))  # another tab: the file opened by uploading it
    again.get("file_uploader")[0].set_value(("two-views.toml", downloads(at, "Download the lesson"), "application/toml")).run()
    assert from_data(again.session_state[DRAFT]) == built
    click_label(builder(again), "Play the lesson")
    assert_at_step(again, built, 1)
    click(again, "slide_next")
    assert_at_step(again, built, 2)
    assert again.session_state["mask"] == "both" and again.query_params["lesson"] == "built"
    notes = "Say\\: \\<b\\>both\\</b\\> masks at once"  # as text, not HTML
    assert notes in [block.value for block in again.markdown] and shown(notes) == "Say: <b>both</b> masks at once"


def test_a_file_that_is_not_a_lesson_is_refused_with_its_reason():
    at = builder(open_view("pages/1_Pipeline.py"))
    at.get("file_uploader")[0].set_value(("notes.toml", b"title = ", "application/toml")).run()
    assert_clean(at)
    assert any("notes.toml is not a lesson file: not TOML" in shown(text) for text in texts(at, "error"))


def test_an_uploaded_files_name_is_shown_as_typed():
    at = builder(open_view("pages/1_Pipeline.py"))
    at.get("file_uploader")[0].set_value(("[a prize](https://example.com).toml", b"title = ", "application/toml")).run()
    (error,) = [text for text in texts(at, "error") if "is not a lesson file" in text]
    assert shown(error).startswith("[a prize](https://example.com).toml is not") and "](" not in error


def test_a_step_opened_on_the_same_view_keeps_its_link_when_the_browser_reruns_with_the_step_before():
    """Next from step 2 to step 3 of the revision lesson stays on Multi-head (section 8 to section 7, part 2). The
    run that opens step 3 can be stopped before it finishes by a rerun the browser asked for before it learnt of the
    step (a click on step 2's slide; before attn_ui.slide's report waited for a run's end, the report of the notes'
    height, seen in Chromium on a busy machine), carrying the section picker's value of step 2. The next run still
    opens step 3 as its link says, not step 3 on step 2's slide."""
    name = "revision-questions-across-the-views"
    lesson = load(SHIPPED[name])
    at = open_view(None, lesson=name, lesson_step="2")
    assert_at_step(at, lesson, 2)
    step = lesson.steps[2]
    assert PAGES[step.view] == at.session_state["_view"] and step.query["slide"] != str(at.session_state["slide"])
    # What Next and the stopped run of step 3 leave: the step opened (lesson_player._open), its address, and the view
    # already marked as opened (page.setup); the page's widgets still hold step 2's section and part.
    at.session_state["lesson_step"], at.session_state[ARRIVED] = 3, 3
    for key, value in (step.query | {"present": "on", "lesson": name, "lesson_step": "3"}).items():
        at.query_params[key] = value
    at.run()
    assert_at_step(at, lesson, 3)
    assert at.query_params["slide"] == step.query["slide"]
