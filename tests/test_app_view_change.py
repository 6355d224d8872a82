"""Messages a browser sends for a view that has gone (attn_ui.callbacks), run by AppTest from streamlit_app.py.

A view change deletes the view's session-state keys (page.setup), but Streamlit keeps the callbacks of its widgets
until a run ends without them: a click, a toggle or a field's text sent before the new view arrived still runs one.
CI met it once, walking a lesson: the Play toggle's callback raised KeyError on the next step's slide. Each test
leaves the state as page.setup does (the key deleted, the widget and its callback kept), then sends the widget's
message: the page shows no traceback and the old view's callback changes nothing.
"""

from __future__ import annotations

from attn_ui.downloads import SHOWN
from attn_ui.exercises import ANSWERS
from attn_ui.lesson_builder import BUILDER
from attn_ui.lesson_player import DRAFT
from tests.conftest import assert_clean, open_all, open_view

MASKING, POSITIONS = "pages/3_Masking.py", "pages/8_Positions.py"


def test_the_play_toggle():
    at = open_view(MASKING, mask="causal", step="3")
    toggle = at.toggle(key="playing")
    del at.session_state["playing"]
    toggle.set_value(True).run()
    assert_clean(at)
    assert at.toggle(key="playing").value is True and at.slider(key="step").value == 3  # the step is not moved


def test_the_shuffle_button():
    at = open_view(POSITIONS, slide="1", shuffle="0")
    del at.session_state["shuffle"]
    at.button(key="shuffle_button").click().run()
    assert_clean(at)
    assert at.session_state["shuffle"] == 0  # the link's, not shuffled again


def test_add_this_slide_to_the_lesson():
    at = open_view(MASKING, slide="2", present="on")
    del at.session_state[SHOWN]
    next(button for button in at.button if button.label == "Add this slide to the lesson").click().run()
    assert_clean(at)
    assert at.session_state.get(DRAFT, {"steps": []})["steps"] == []


def test_an_exercise_checked():
    at = open_view(None, lesson="masks-of-todays-models")  # its first step asks how many keys row 3 sees
    at.number_input(key="_exercise_given").set_value(4.0).run()  # the right answer
    del at.session_state[SHOWN]
    next(button for button in at.button if button.key == "_exercise_check").click().run()
    assert_clean(at)
    assert not at.session_state.get(ANSWERS)


def test_a_lesson_builders_field():
    at = open_all(open_view("pages/1_Pipeline.py"), "expander", BUILDER)
    next(button for button in at.button if button.label == "Add this view to the lesson").click().run()
    at = open_all(at, "expander", BUILDER)
    field = at.text_input(key="_draft_title")
    del at.session_state["_draft_title"]
    field.input("Typed before the view changed").run()
    assert_clean(at)
    assert at.session_state[DRAFT]["title"] == "My lesson"


def test_the_coreference_example_leaves_another_views_sentence():
    at = open_view("pages/6_Real_model.py", slide="3", coref="it", text="My friend reads a book")  # the example offered
    button = next(button for button in at.button if button.label == "Use the example pair")
    at.text_input(key="coref").set_value("it")  # as the browser sends it with the click
    del at.session_state["coref"]  # the view left; its sentence's key, "text", is one the next view has too
    text = at.session_state["text"]
    button.click().run()
    assert_clean(at)
    assert at.session_state["text"] == text


def test_use_n_heads_leaves_another_views_head_count():
    at = open_view("pages/4_Multi_head.py", slide="1", d_model="30", heads="4")  # 4 does not divide 30: offers others
    button = next(button for button in at.button if button.label.startswith("Use "))
    at.selectbox(key="head").set_value(0)  # as the browser sends it with the click
    del at.session_state["head"]  # the view left; Cost and Decoding have a "heads" too
    button.click().run()
    assert_clean(at)
    assert at.session_state["heads"] == 4
