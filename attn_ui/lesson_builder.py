"""Building a lesson in the app, with nothing stored on the server: *Add this slide to the lesson* (the Controls
popover of any slide, or the sidebar) puts the view's link, as it is, at the end of the draft; the sidebar's *Build a
lesson* edits its title, each step's title and notes, and their order, plays it, downloads it as a lesson file
(attn_ui.lessons' TOML) and opens such a file again by uploading it. The draft lives in the browser tab's session,
from one view to the next.
"""

from __future__ import annotations

import streamlit as st

from attn_ui import callbacks, lesson_player
from attn_ui.downloads import SHOWN, Shown
from attn_ui.export import view_link
from attn_ui.inputs import escape_markdown
from attn_ui.lessons import Lesson, dump, from_data, parse

DRAFT = lesson_player.DRAFT
UPLOAD = "_lesson_upload"  # the uploader's key
BUILDER = "_lesson_builder"  # the expander's key
NOT_IN_A_STEP = ("present", "lesson", "lesson_step")  # how a step is shown is the lesson's business, not its link's
FILE_NAME = "lesson.toml"


def draft() -> dict:
    """The lesson being built, as a lesson file's tables: {"title": str, "steps": [{"title", "link", "notes", ...}]}."""
    return st.session_state.setdefault(DRAFT, {"title": "My lesson", "steps": []})


@callbacks.needing(SHOWN)
def add_this_slide(title: str) -> None:
    """In a callback: the view as its last run drew it (its link) as the draft's last step."""
    shown: Shown = st.session_state[SHOWN]
    link = view_link(shown.view, {key: value for key, value in shown.changed.items() if key not in NOT_IN_A_STEP})
    draft()["steps"].append({"title": title, "link": link, "notes": ""})
    _forget_fields()


def from_lesson(lesson: Lesson) -> dict:
    """A lesson's tables, to edit as the draft."""
    steps = [{"title": step.title, "link": step.link, "notes": step.notes, "exercise": step.exercise} for step in lesson.steps]
    return {"title": lesson.title, "steps": steps}


def sidebar(view_label: str) -> None:
    """The sidebar's *Build a lesson*: open a file, add this view, edit and order the steps, play, download. Its
    fields are drawn only while it is open: a view's redraw does not pay for them."""
    lesson = draft()
    label = f"Build a lesson ({len(lesson['steps'])} steps)"
    with st.expander(label, icon=":material/school:", key=BUILDER, on_change="rerun") as builder:
        if builder.open:
            _fields(lesson, view_label)


def _fields(lesson: dict, view_label: str) -> None:
    st.file_uploader("Open a lesson file", type=["toml"], key=UPLOAD, on_change=_open_upload)
    if "_lesson_upload_problem" in st.session_state:
        st.error(escape_markdown(st.session_state["_lesson_upload_problem"]))
    _field("_draft_title", lesson, "title", st.text_input, "Lesson title")
    for number, step in enumerate(lesson["steps"], 1):
        st.markdown(f"**Step {number}** · {escape_markdown(step['link'])}")
        _field(f"_draft_step_title_{number}", step, "title", st.text_input, "Title", label_visibility="collapsed")
        _field(f"_draft_step_notes_{number}", step, "notes", st.text_area, "What to say", height=68)
        with st.container(horizontal=True, gap="small"):
            last = number == len(lesson["steps"])
            st.button("Up", key=f"_draft_up_{number}", on_click=_move, args=(number, -1), disabled=number == 1)
            st.button("Down", key=f"_draft_down_{number}", on_click=_move, args=(number, 1), disabled=last)
            st.button("Remove", key=f"_draft_remove_{number}", on_click=_remove, args=(number,))
    st.button("Add this view to the lesson", icon=":material/add:", on_click=add_this_slide, args=(view_label,))
    if lesson["steps"]:
        st.button("Play the lesson", icon=":material/play_arrow:", on_click=play)
        st.download_button(
            "Download the lesson",
            data=dump(from_data(lesson)),
            file_name=FILE_NAME,
            mime="application/toml",
            on_click="ignore",
            icon=":material/download:",
        )


def play() -> None:
    """In a callback: play the draft from its first step."""
    st.session_state["lesson"] = lesson_player.DRAFT_NAME
    lesson_player.go(1)


def _field(key: str, holder: dict, name: str, widget, label: str, **options) -> None:
    """A text field editing ``holder[name]``; its value is kept in the draft, which outlives the widget's key."""
    if key not in st.session_state:
        st.session_state[key] = holder[name]
    widget(label, key=key, on_change=_keep, args=(key, holder, name), **options)


def _keep(key: str, holder: dict, name: str) -> None:
    """A field's edit, into the draft; none where its key was deleted since the field was drawn (a view change, as in
    attn_ui.callbacks, or a step moved)."""
    if key in st.session_state:
        holder[name] = st.session_state[key]


def _open_upload() -> None:
    upload = st.session_state.get(UPLOAD)
    st.session_state.pop("_lesson_upload_problem", None)
    if upload is None:
        return
    try:
        st.session_state[DRAFT] = from_lesson(parse(upload.getvalue().decode("utf-8")))
    except (ValueError, UnicodeDecodeError) as error:
        st.session_state["_lesson_upload_problem"] = f"{upload.name} is not a lesson file: {error}"
    _forget_fields()


def _move(number: int, by: int) -> None:
    steps = draft()["steps"]
    steps.insert(number - 1 + by, steps.pop(number - 1))
    _forget_fields()


def _remove(number: int) -> None:
    draft()["steps"].pop(number - 1)
    _forget_fields()


def _forget_fields() -> None:
    """The text fields take their values from the draft again: its steps moved, came or went."""
    for key in [key for key in st.session_state if key.startswith("_draft_")]:
        del st.session_state[key]
