"""Page set-up shared by every view: title, layout, URL state, the sidebar's map of views, presenter mode."""

from __future__ import annotations

import functools
import gc
import sys
from dataclasses import dataclass

import streamlit as st
import torch
from streamlit.delta_generator import DeltaGenerator

from attn_ui import downloads, exercises, lesson_builder, lesson_player, malloc, slide, tcp, url_state
from attn_ui.charts import THEME_CSS
from attn_ui.draw import mend_svg_links
from attn_ui.inputs import escape_markdown
from attn_ui.url_state import Param
from attn_ui.views import (  # noqa: F401 (re-exported: the views are reached through the page module)
    COST,
    DECODING,
    HOME,
    MASKING,
    MULTI_HEAD,
    PIPELINE,
    POSITIONS,
    REAL_MODEL,
    SCALING,
    TRAINING,
    VIEWS,
    View,
)

ALL_SECTIONS = 0  # the section number that stands for all of them, one under the other ("slide=all" in a link)
PRESENT = Param("present", False, url_state.on_off, url_state.format_on_off)
SEED = Param("seed", 0, url_state.Integer(0, 2**31 - 1))  # of a view's random embeddings, weights or vectors
PRESENTER = (
    PRESENT,
    Param("slide", 1, url_state.integer_or(ALL_SECTIONS, "all", 1, 99), url_state.format_integer_or(ALL_SECTIONS, "all")),
    Param("part", 1, url_state.Integer(1, 9)),  # of the open section, in presenter mode
    *lesson_player.PARAMS,  # the lesson being played, and its step
)
# Presenter mode, the window's size, the lesson being played and the answers to its exercises, from one view to the next
KEPT_ACROSS_VIEWS = ("present", slide.VIEWPORT_KEY, *lesson_player.KEPT, exercises.ANSWERS)
REPORT = "_report"  # session-state key, for one run: where the link's report goes, above the sections (Slides)
SECTION_PICKER = "_section"  # session-state key of the sections' picker (PRESENTER_STYLE hides it by its class)
# Both modes: the charts' theme, and out of sight the window's size (and on a slide, a clicker's keys). Streamlit
# writes a primary button's label (Next, Train, Check) in white, 2.4:1 on the dark theme's light blue primary colour
# (.streamlit/config.toml): there it is dark (7.5:1), and a disabled one keeps Streamlit's grey; light-dark() follows
# the color-scheme Streamlit gives .stApp.
PAGE_STYLE = (
    THEME_CSS
    + """<style>
.stApp [data-testid="stBaseButton-primary"]:enabled { color: light-dark(#ffffff, #16181d); }
.st-key-slide_hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
[data-testid="stLayoutWrapper"]:has(> .st-key-slide_hidden) { position: absolute; width: 1px; height: 1px; overflow: hidden; }
</style>"""
)
# A slide: type large enough for the back of a hall (slide.type_px), the page's margins down to a thin frame,
# Streamlit's header see-through so that the slide's bar sits beside its buttons, a compact section title, no toolbar
# over a chart the mouse rests on (it would cover the title or caption above the chart), and the notes above the section
# (Slides) in a caption's type with a thin frame: they keep the charts' room small. On a window larger than
# slide.DESIGN all of it is magnified (PRESENTER_STYLES).
PRESENTER_STYLE = (
    PAGE_STYLE
    + f"""<style>
[data-testid="stHeader"] {{ background: transparent; }}
[data-testid="stHeader"], [data-testid="stHeader"] * {{ pointer-events: none !important; }}
[data-testid="stHeader"] :is(button, a, button *, a *) {{ pointer-events: auto !important; }}
[data-testid="stMainBlockContainer"] {{ padding: 0.4rem {slide.SIDE_PX}px 0.5rem !important; }}
[data-testid="stMain"] h2 {{ font-size: 1.5rem !important; padding: 0 !important; }}
.st-key-slide_bar p {{ margin: 0; }}
.st-key-slide_bar button {{ min-height: 2.2rem; padding: 0 0.75rem; }}
.st-key-_section {{ display: none; }}
[data-testid="stElementToolbar"] {{ display: none; }}
.st-key-{slide.NOTES_CONTAINER} {{ gap: 0.3rem; margin-bottom: {slide.NOTES_GAP_REM - slide.GAP_REM}rem; }}
.st-key-{slide.NOTES_CONTAINER} [data-testid="stAlertContainer"] {{ padding: 0.2rem 0.6rem; }}
.st-key-{slide.NOTES_CONTAINER} [data-testid="stAlertContainer"] :is(p, li) {{ font-size: 0.875rem; line-height: 1.4; }}
</style>"""
)


# Each slide's stylesheet, by its type size and zoom (slide.type_px, slide.zoom): PRESENTER_STYLE with its content
# magnified, laid out for the window's size divided by the zoom. Not the popover of Controls, which the presenter reads:
# placed beside its button for its unmagnified size, magnified it would stray off the screen.
PRESENTER_STYLES = {
    (type_px, zoom): PRESENTER_STYLE
    + f"""<style>
html {{ font-size: {type_px}px; }}
[data-testid="stMainBlockContainer"] {{ zoom: {zoom}; }}
</style>"""
    for type_px in (slide.TYPE_PX, slide.TALL_TYPE_PX)
    for zoom in slide.ZOOMS
}


_modules_frozen = 0  # how many modules were loaded when the collector last froze what was alive


def freeze_loaded_modules() -> None:
    """Keep Streamlit's garbage collection after every run (its runner.postScriptGC) short: call at the start of
    every run.

    That collection is a full pass over every object the collector tracks, holding the GIL: with torch, pandas and
    Streamlit loaded, a large share of a redraw (docs/performance.md), and the first FlexAttention block mask (the mask
    studio, the Cost view's FlexAttention) imports 800 more modules (torch._dynamo, sympy: 117,000 objects). Modules,
    their functions and tables live as long as the process, so whenever the runs before this one have loaded modules,
    what is alive now is frozen, out of the collector's sight; each pass then walks only what the runs create, which
    it still collects. Freezing here follows the last run's collection, so it keeps little else: at most what other
    sessions' runs hold at this moment, once for each time modules were loaded."""
    global _modules_frozen
    if len(sys.modules) != _modules_frozen:
        gc.freeze()
        _modules_frozen = len(sys.modules)


@functools.cache
def tune_server() -> None:
    """The process-wide settings that serve the views well, applied once, by the first run of any page (setup)."""
    malloc.set_mmap_threshold(malloc.VIEWS_THRESHOLD)  # see attn_ui.malloc: the server's memory stops creeping
    tcp.no_delay_on_tcp_sockets()  # see attn_ui.tcp: responses do not wait for the browser's delayed acknowledgement
    # The views compute small tensors (a sentence, a few heads), for which torch's threads only wait on each other;
    # when the cores are busy (other sessions, a sweep, a shared host like Community Cloud) that waiting dominates
    # (docs/performance.md, the real model's forward pass under load). The Cost view's sweep uses every core
    # (attn_core.device.DEFAULT_THREADS) while it runs.
    torch.set_num_threads(1)


def setup(view: View, params: tuple[Param, ...] = ()) -> url_state.Values:
    """Call first on every page: page config, the view's state from its URL, and the sidebar's map of views; the
    values of the view's parameters, read by name (``values.text``).

    Each view opens with its own URL's values or its own defaults: values of the view seen before
    (whose widgets may share a key with this one's) are forgotten when the view changes.
    """
    tune_server()
    freeze_loaded_modules()
    lesson_player.follow(view.path)  # may open another view (a lesson's step), ending this run
    navigated = url_state.history_navigation()  # Back or Forward: the address holds the values gone back to
    present = st.session_state.get("present")  # the toggle's new value, or on a first run or after Back the link's
    if type(present) is not bool or navigated:
        present = url_state.from_link(PRESENT)  # the page's layout is set before restore() reports a bad value
    leaving = st.session_state.get("_presenting") and not present  # the sidebar comes back with the controls
    st.set_page_config(
        page_title=f"{view.label} · Attention Explorer",
        page_icon=view.icon,
        layout="wide",
        initial_sidebar_state="collapsed" if present else "expanded" if leaving else "auto",
    )
    st.session_state["_presenting"] = present
    restoring = params + PRESENTER if view != HOME else params
    known = {param.key for param in params + PRESENTER}  # Home's link may name a lesson, which follow() opened
    in_step = lesson_player.unknown_parameters(known)  # a lesson step just opened: its link's, the step named
    # The view's first run, or a lesson step's until one finishes: its link as the user, or the lesson, opened it.
    opened = st.session_state.get("_view") != view.path or lesson_player.arriving()
    if opened:
        for key in [key for key in st.session_state if key not in KEPT_ACROSS_VIEWS]:
            del st.session_state[key]
        st.session_state["_view"] = view.path
    in_link = url_state.unknown_in_link(known) if opened or in_step else []  # taken out of the address
    st.session_state[slide.OFFERS] = 0  # the crowded rows of this run (attn_ui.steps.row) count from here
    ignored = url_state.restore(restoring, navigated) + (in_step or in_link)
    # The link's ignored values are shown (above the sections, at the run's end: publish) until the user changes a
    # control: runs that follow the window's report of its size, unasked, show them again (one may stop the first
    # before publish). From the view's first run on, the values the runs leave are kept to tell the user's changes
    # from the app's (a link's value a section moves: url_state.keep_in).
    if ignored or opened:
        st.session_state[url_state.IGNORED], st.session_state[url_state.PUBLISHED] = ignored, _values(restoring)
    elif _values(restoring) != st.session_state.get(url_state.PUBLISHED):
        st.session_state.pop(url_state.IGNORED, None)
        st.session_state.pop(url_state.LINKED, None)  # a value the user changed is no longer the link's
    with st.sidebar:
        st.markdown("**Attention Explorer**")
        for item in (HOME, *VIEWS):
            st.page_link(item.path, label=item.label, icon=item.icon)
        if view != HOME:
            st.toggle("Presenter mode", key="present", help="One section per screen, large type; ← and → step through.")
            downloads.begin(view.url_path)
            lesson_builder.sidebar(view.label)
        st.divider()
    slide.take_report()  # before the style: a slide is magnified for the window's size
    # One element in both modes, so that what follows keeps its place in the page when presenter mode changes.
    if slide.presenting():
        st.html(PRESENTER_STYLES[slide.type_px(), slide.zoom()])
    else:
        st.html(PAGE_STYLE)
    return url_state.Values(params)


def report_ignored() -> None:
    """The link's values not used as given, if any, until the user changes a control (setup)."""
    url_state.report_ignored(st.session_state.get(url_state.IGNORED, []))


def publish(params: tuple[Param, ...]) -> None:
    """Call last: the link's report, in the place Slides kept for it (the sections have checked the values that
    depend on others: url_state.keep_in); the view's controls, and the presenter's mode and slide, written to the URL
    and the view's link."""
    report: DeltaGenerator | None = st.session_state.pop(REPORT, None)
    if report is not None:
        with report:
            report_ignored()
    exercises.finish()  # a lesson step's question, asked about what the section drew
    lesson_player.arrived()
    url_state.publish(params + PRESENTER)
    downloads.share(params + PRESENTER)
    st.session_state[url_state.PUBLISHED] = _values(params + PRESENTER)


def _values(params: tuple[Param, ...]) -> dict:
    """The controls' values now, to tell whether the user changed one since the last run."""
    return {param.key: st.session_state.get(param.key) for param in params}


@dataclass(frozen=True)
class Section:
    """One section of a view: its title (its header reads "3 · title"), the word or two of its button in the
    sections' picker, so that a view's buttons fit in two rows of a 1024-px window, and the number of slides it takes
    in presenter mode, where its charts would not fit one screen (``Slides.part`` tells which is on screen)."""

    label: str
    title: str
    parts: int = 1


class Slides:
    """A view's title, introduction and numbered sections, one on screen at a time.

    The open section is in the URL ("slide"). Only it is computed and drawn: a control change redraws one section's
    charts, not the whole view's. A row of buttons picks the section; the last, "All sections", shows every section
    one under the other. In presenter mode the section is a slide that fits the window: one line at the top names the
    view and the step, with Previous and Next (→ and ← on a keyboard, PageDown and PageUp from a presentation clicker)
    and the view's controls in a popover (the sidebar is closed); the title and introduction are left to the
    presenter's words, and the charts take the room left (``attn_ui.slide``). Both modes put the open section in the
    same place in the page, so that switching mode leaves its charts as they are drawn.
    ``controls`` is where the view draws its controls: that popover, or the sidebar.
    """

    def __init__(self, sections: tuple[Section, ...], title: str, intro: str):
        self.sections = sections
        last = len(sections)
        numbers = range(1, last + 1) if slide.presenting() else range(ALL_SECTIONS, last + 1)
        slide_number = st.session_state.get("slide")
        nearest = min(slide_number, last) if type(slide_number) is int and slide_number > 0 else 1
        why = "a slide shows one section" if slide_number == ALL_SECTIONS else f"this view has {last} sections"
        url_state.keep_in("slide", numbers, nearest, why=why)
        self.current = st.session_state["slide"]
        if slide.presenting():
            parts = sections[self.current - 1].parts
            why = f"section {self.current} takes {parts} slide{'s' if parts > 1 else ''}"
            self.open_part = url_state.keep_in("part", range(1, parts + 1), 1, why=why)
        else:  # a scrolling page shows the section whole
            self.open_part = st.session_state["part"] = 1
        self._picker_drawn = False
        # Two elements in both modes, so that the sections keep their place in the page.
        if slide.presenting():
            self.controls = self._navigation()
        else:
            st.title(title)
            with st.container():
                st.markdown(intro)
                with st.container(key="slide_hidden"):
                    slide.read_window_size()  # a wide window gives the charts more room (attn_ui.slide.room)
                    mend_svg_links()
            self.controls = st.sidebar
        # What the view draws above its sections (the link's ignored values, a note on its input, a warning about its
        # controls) goes into one container, entered for the rest of the run until the picker is drawn, so that the
        # picker keeps its place in the page whether it holds anything or not: a note that comes or goes does not
        # redraws the section. On a slide the browser reports its height, which the charts leave it (attn_ui.slide).
        self._above = st.container(key=slide.NOTES_CONTAINER)
        self._above.__enter__()
        st.session_state[REPORT] = self._above  # the link's report, at the end of the run (publish)
        if slide.presenting():
            lesson_player.problem_of_step()
            exercises.report_score()
            exercises.make_room()  # a lesson step's question, drawn when the section is (exercises.finish)

    def show(self, number: int, title: str | None = None) -> bool:
        """Whether section ``number`` (from 1) is on screen now; if so its header is drawn (``title`` may name
        the section more precisely than its slide title, e.g. "Head 3: its queries, keys and values").

        The first call draws the sections' picker, after whatever the view drew above its sections (a warning about
        its controls); the open section follows it."""
        if not self._picker_drawn:
            self._picker_drawn = True
            self._above.__exit__(None, None, None)
            self._section_picker()
        if self.current not in (number, ALL_SECTIONS):
            return False
        parts = self.sections[number - 1].parts if slide.presenting() else 1
        of_parts = f" ({self.open_part}/{parts})" if parts > 1 else ""
        st.header(f"{number} · {title or self.sections[number - 1].title}{of_parts}")
        if slide.presenting():
            exercises.hide_until_answered()  # a lesson step's charts, until its question is answered
        return True

    def section_controls(self) -> DeltaGenerator:
        """Where the open section draws its own controls (the query it follows): in its place, or on a slide in the
        controls' popover, so that the slide's room goes to its charts."""
        return self.controls if slide.presenting() else st.container()

    def tabs(self, label: str, labels: list[str], key: str) -> tuple[int, DeltaGenerator]:
        """Tabs of which only the open one is drawn (opening another reruns the view): the open tab's number (from 0)
        and where to draw it. On a slide, the choice is a row of buttons named ``label`` in the controls' popover,
        and the slide's height goes to its charts."""
        url_state.keep_in(key, labels, labels[0])  # a tab fewer (one sentence less): back to the first
        if slide.presenting():
            with self.controls:
                st.segmented_control(label, labels, key=key, required=True)
            return labels.index(st.session_state[key]), st.container()
        tabs = st.tabs(labels, key=key, on_change="rerun")
        number = next((number for number, tab in enumerate(tabs) if tab.open), 0)
        return number, tabs[number]

    def part(self, number: int) -> bool:
        """Whether part ``number`` (from 1) of the open section is on screen: on its slide in presenter mode, always
        outside it."""
        return not slide.presenting() or self.open_part == number

    def _section_picker(self) -> None:
        """The sections' picker: a row of buttons, one a section and "All sections" (one widget, where ten tabs were
        eleven elements, redrawn on every run: a tenth of a Multi-head redraw); the rest of the run draws under it.
        Only the open section is drawn: choosing another reruns the view with that section open."""
        labels = [section.label for section in self.sections] + ["All sections"]
        numbers = [*range(1, len(self.sections) + 1), ALL_SECTIONS]
        st.session_state[SECTION_PICKER] = labels[numbers.index(self.current)]
        st.segmented_control(
            "Section",
            labels,
            required=True,
            key=SECTION_PICKER,
            on_change=_open_section,
            args=(dict(zip(labels, numbers, strict=True)),),
            label_visibility="collapsed",
        )

    def _navigation(self) -> DeltaGenerator:
        """The slide's bar, and under it, out of sight, a clicker's keys and the window's size; returns the
        controls' popover. While a lesson plays, the bar names it and walks its steps (attn_ui.lesson_player)."""
        order = [(number, part) for number, section in enumerate(self.sections, 1) for part in range(1, section.parts + 1)]
        step = order.index((self.current, self.open_part)) + 1
        view = next((view for view in VIEWS if view.path == st.session_state.get("_view")), HOME)
        where = f"**{view.label}** · Step {step} of {len(order)} · {self.sections[self.current - 1].label}"
        walk, previous, following = _go_to, order[max(step - 2, 0)], order[min(step, len(order) - 1)]
        lesson, at_step = lesson_player.playing(), lesson_player.current_step()  # None, None: no lesson plays
        if at_step:
            step, order = at_step[0], lesson.steps
            where = f"**{escape_markdown(lesson.title)}** · step {step} of {len(order)}"
            walk, previous, following = lesson_player.go, (max(step - 1, 1),), (min(step + 1, len(order)),)
        # The buttons first, so that they keep their place from one slide to the next whatever the title's length.
        with st.container(horizontal=True, vertical_alignment="center", gap="small", key="slide_bar"):
            st.button(
                "Previous",
                icon=":material/arrow_back:",
                shortcut="Left",
                key="slide_previous",
                on_click=walk,
                args=previous,
                disabled=step == 1,
            )
            st.button(
                "Next",
                icon=":material/arrow_forward:",
                shortcut="Right",
                key="slide_next",
                on_click=walk,
                args=following,
                disabled=step == len(order),
                type="primary",
            )
            controls = st.popover("Controls", icon=":material/tune:")
            st.markdown(where, width="content")
        with controls:  # above the view's controls: the lesson's notes for the presenter, and the lesson's buttons
            if at_step:
                st.markdown(f"**Step {step}: {escape_markdown(at_step[1].title)}**")
                st.markdown(escape_markdown(at_step[1].notes))  # the presenter's notes, shown as text
            with st.container(horizontal=True, gap="small"):
                title = f"{view.label}: {self.sections[self.current - 1].title}"
                add = lesson_builder.add_this_slide
                st.button("Add this slide to the lesson", icon=":material/add:", on_click=add, args=(title,))
                if at_step:
                    st.button("Leave the lesson", icon=":material/close:", on_click=lesson_player.leave)
            st.divider()
        with st.container(key="slide_hidden"):
            st.button("Previous slide", shortcut="PageUp", key="clicker_previous", on_click=walk, args=previous)
            st.button("Next slide", shortcut="PageDown", key="clicker_next", on_click=walk, args=following)
            slide.read_window_size()
            mend_svg_links()
        return controls


def _open_section(labels: dict[str, int]) -> None:
    st.session_state["slide"], st.session_state["part"] = labels.get(st.session_state.get(SECTION_PICKER), 1), 1


def bring_into_view(section: int) -> None:
    """In a callback: open ``section`` at its first part, unless every section is on screen (it is then already)."""
    if st.session_state.get("slide") != ALL_SECTIONS:
        _go_to(section, 1)


def _go_to(section: int, part: int) -> None:
    st.session_state["slide"], st.session_state["part"] = section, part
