"""Playing a lesson (attn_ui.lessons) across views.

``?lesson=NAME`` opens the lesson's first step, ``?lesson=NAME&lesson_step=K`` its step K: the step's link, in
presenter mode, with the lesson's name and step added, so that the address of any step is a link to it. While a lesson
plays, the slide's bar names it ("step k of n") and its Previous and Next (and → ←, PageUp PageDown) walk the lesson's
steps, from one view to the next; the Controls popover holds the step's notes, for the presenter's eyes only, and a
button that leaves the lesson. A step that cannot open (no such view) is reported on the slide, the view stays, and
the lesson goes on; a step that names a parameter its view does not have, or a section beyond its last, is reported
with the link's other ignored values.
"""

from __future__ import annotations

import streamlit as st

from attn_ui import url_state
from attn_ui.inputs import escape_markdown
from attn_ui.lessons import Lesson, Step, available, from_data, load
from attn_ui.url_state import Param
from attn_ui.views import VIEWS

PAGES = {view.url_path: view.path for view in VIEWS}


DRAFT = "_lesson_draft"  # session state: the lesson being built in this tab (attn_ui.lesson_builder), a file's tables
DRAFT_NAME = "built"  # the name of that lesson while it plays


def lesson_name(raw: str) -> str:
    """The name of a lesson in lessons/, or of the one built in this tab while it has steps ("" for none)."""
    if raw in available():
        load(available()[raw])  # ValueError naming the file where it is not a lesson
    elif raw and not (raw == DRAFT_NAME and _draft()):
        raise ValueError(
            "expected the name of a lesson: " + ", ".join(available()) + " (a lesson built in the app plays only in the "
            "browser tab it was built in: download it, and put it in lessons/ or open it there)"
        )
    return raw


LESSON = Param("lesson", "", lesson_name)
LESSON_STEP = Param("lesson_step", 1, url_state.Integer(1, 99))
PARAMS = (LESSON, LESSON_STEP)
GOING = "_lesson_going"  # session state: the step Previous or Next asked for, opened by the next run's setup
ARRIVED = "_lesson_arrived"  # session state: the step just opened, until a run of it finishes (arriving)
KEPT = ("lesson", "lesson_step", ARRIVED, DRAFT)  # session state kept from one view to the next


def playing() -> Lesson | None:
    """The lesson being played, or None. Read from its file on every run: a teacher may edit it while the app runs."""
    name = st.session_state.get("lesson")
    if name == DRAFT_NAME:
        return from_data(_draft()) if _draft() else None
    try:
        return load(available()[name]) if name in available() else None
    except ValueError:
        return None  # its file was broken since the lesson began: the view goes on without it


def _draft() -> dict | None:
    """The lesson built in this tab, if it has a step."""
    draft = st.session_state.get(DRAFT)
    return draft if draft and draft["steps"] else None


def current_step() -> tuple[int, Step] | None:
    """The number (from 1) and the step on screen of the lesson being played, or None."""
    lesson = playing()
    if lesson is None:
        return None
    number = min(st.session_state.get("lesson_step", 1), len(lesson.steps))
    return number, lesson.steps[number - 1]


def follow(view_path: str) -> None:
    """First thing of every run (page.setup): open the step Previous or Next asked for, or the step a link names
    where it is not the one playing (a lesson's link followed), unless this page already is that step."""
    number = st.session_state.pop(GOING, None)
    if number is None:
        name, number = url_state.from_link(LESSON), url_state.from_link(LESSON_STEP)
        if not name or (name, number) == (st.session_state.get("lesson"), st.session_state.get("lesson_step")):
            return
        st.session_state["lesson"] = name
        number = min(number, len(playing().steps))
        if "lesson_step" in st.query_params and _at(playing().steps[number - 1], view_path):
            st.session_state["lesson_step"] = number
            return  # a step's own link, as the app wrote it (its controls perhaps changed since): opened as it is
    _open(number)


def go(number: int) -> None:
    """In a callback (Previous, Next): open step ``number`` of the lesson at the next run."""
    st.session_state[GOING] = number


def leave() -> None:
    """In a callback: stop playing the lesson; the view stays as it is."""
    st.session_state["lesson"], st.session_state["lesson_step"] = "", 1
    for key in ("lesson", "lesson_step"):  # not followed again by the run this callback starts (follow)
        st.query_params.pop(key, None)


def arriving() -> bool:
    """Whether a step has been opened and no run of it has finished yet. Such a run takes the step's values from its
    link, as the first did: the first may have been stopped by a rerun the browser asked for before it learnt of the
    new step (a click on the step before's slide, say), which brings the controls' values of the step before."""
    return ARRIVED in st.session_state


def arrived() -> None:
    """At the end of a run (page.publish): the step on screen, if one was opened, is shown with its link's values."""
    st.session_state.pop(ARRIVED, None)


def unknown_parameters(known: set[str]) -> list[str]:
    """On the runs that open a step (arriving): the parameters of its link that this view does not have, each with its
    reason."""
    arrived, found = st.session_state.get(ARRIVED), current_step()
    if arrived is None or found is None or found[0] != arrived:
        return []
    number, step = found
    title = escape_markdown(step.title)
    return [
        f"{escape_markdown(key)}: step {number} (“{title}”) of the lesson names a parameter this view does not have"
        for key in sorted(set(step.query) - known - {"lesson", "lesson_step"})
    ]


def _at(step: Step, view_path: str) -> bool:
    """Whether this page, with its link, shows ``step``'s view, section and part."""
    here = {key: st.query_params.get(key, "1") for key in ("slide", "part")}
    return PAGES.get(step.view) == view_path and all(step.query.get(key, "1") == value for key, value in here.items())


def _open(number: int) -> None:
    """Open step ``number`` (from 1): its view with its link's values, in presenter mode, even on this same view."""
    lesson = playing()
    if lesson is None:
        return  # its file broke, or the lesson built here lost its steps, since the button was drawn
    st.session_state["lesson_step"] = number = min(number, len(lesson.steps))
    step = lesson.steps[number - 1]
    if step.problem:
        return  # reported on the slide (problem_of_step); the view stays, and Next goes on
    st.session_state["present"], st.session_state[ARRIVED] = True, number
    st.session_state["_view"] = None  # the view's values from the step's link, not from the step before
    query = step.query | {"present": "on", "lesson": st.session_state["lesson"], "lesson_step": str(number)}
    st.switch_page(PAGES[step.view], query_params=query)


def problem_of_step() -> None:
    """On a slide: the step's problem, if it cannot open."""
    found = current_step()
    if found and found[1].problem:
        st.warning(escape_markdown(found[1].problem) + " The lesson goes on at the next step.")
