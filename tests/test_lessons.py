"""Lessons (attn_ui.lessons): the shipped lessons load, every step opens its view cleanly with parameters the view
knows, and a lesson with a broken step says which and keeps the others."""

from __future__ import annotations

from collections import Counter

import pytest

from attn_ui.lessons import available, dump, load, parse
from attn_ui.page import VIEWS
from tests.conftest import assert_clean, open_view, texts

SHIPPED = available()
PAGES = {view.url_path: view.path for view in VIEWS}
LINK_ONLY = {"slide", "part", "present"}  # what every view reads besides its parameters


def test_the_shipped_lessons_and_their_exercises_cover_every_view():
    """Two lectures (the whole of self-attention; attention while a model writes), the masks of today's models, and a
    revision lesson; at least three exercises on each view."""
    assert set(SHIPPED) == {
        "self-attention-in-one-lecture",
        "masks-of-todays-models",
        "attention-when-a-model-writes",
        "revision-questions-across-the-views",
    }
    lecture, masks = load(SHIPPED["self-attention-in-one-lecture"]), load(SHIPPED["masks-of-todays-models"])
    assert lecture.title == "Self-attention in one lecture" and len(lecture.steps) >= 15
    assert {"Pipeline", "Scaling", "Masking", "Multi_head", "Cost", "Real_model", "Training"} <= {s.view for s in lecture.steps}
    assert masks.title == "The masks of today's models" and len(masks.steps) >= 8
    steps = [step for path in SHIPPED.values() for step in load(path).steps]
    for step in steps:
        assert step.problem is None and step.title and step.notes, step
    exercises = Counter(step.view for step in steps if step.exercise)
    assert {view.url_path for view in VIEWS} == set(exercises) and min(exercises.values()) >= 3, exercises


@pytest.mark.parametrize("step", [step for path in SHIPPED.values() for step in load(path).steps], ids=lambda step: step.title)
def test_every_shipped_step_opens_its_view_cleanly_with_parameters_it_knows(step):
    at = open_view(PAGES[step.view], **step.query)
    assert_clean(at)
    assert not any("not used as given" in text for text in texts(at, "warning")), texts(at, "warning")
    known = set(at.session_state["_shown"].query)  # every parameter of the view
    assert set(step.query) - LINK_ONLY <= known, set(step.query) - LINK_ONLY - known


def test_a_step_that_names_no_view_says_which_and_the_others_stay():
    lesson = parse(
        """
        title = "A lesson with a typo"
        [[steps]]
        title = "Fine"
        link = "/Pipeline?slide=2"
        [[steps]]
        title = "Misspelt"
        link = "/Pipeline2?slide=1"
        [[steps]]
        title = "No link"
        notes = "forgot it"
        """
    )
    fine, misspelt, no_link = lesson.steps
    assert fine.problem is None and fine.query == {"slide": "2"}
    assert "Step 2 (“Misspelt”) names no view of this app: “Pipeline2”" in misspelt.problem
    assert "Step 3 (“No link”) has no link" in no_link.problem


@pytest.mark.parametrize(
    "text, message",
    [("title = ", "not TOML"), ('steps = [{ title = "x", link = "/Pipeline" }]', "has a title"), ('title = "x"', "at least one")],
)
def test_a_file_that_is_not_a_lesson_says_what_a_lesson_is(text, message):
    with pytest.raises(ValueError, match=message):
        parse(text)


def test_a_lesson_written_by_dump_reads_back_as_the_same_lesson():
    odd = parse(
        """
        title = "Quotes \\" and \\\\ back, “curly”, ünïcode, tab\\t"
        [[steps]]
        title = "Line\\nbreak"
        link = "/Masking?slide=7&studio_a=causal"
        notes = "<script>alert(1)</script> and [a](link)"
        exercise = { question = "How many keys?", answer = 3, tolerance = 0.5, choices = ["a", "b"], strict = true }
        """
    )
    for lesson in (odd, *(load(path) for path in SHIPPED.values())):
        assert parse(dump(lesson)) == lesson
    assert odd.steps[0].exercise["choices"] == ["a", "b"] and odd.title.endswith("tab\t")
