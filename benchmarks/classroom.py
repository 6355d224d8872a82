"""A class on one container (issue 38, part 4): N students open the shared link within a minute, each visits three
views and changes a control on each, against one app server pinned to a few CPUs.

Sixty browsers do not fit on this machine's two cores, so the students are driven at Streamlit's own protocol: each
is one websocket client of ``/_stcore/stream`` that speaks as Streamlit 1.67's frontend does (``BackMsg`` and
``ForwardMsg`` from ``streamlit.proto``):
- opening the shared link, it sends ``rerun_script`` with the link's path as ``ClientState.page_name``, no
  ``page_script_hash`` and the link's query string; the server runs that page and says which it ran (``navigation``:
  the page's hash and every page's hash and address);
- following a sidebar link to another view, it sends that view's hash, no widget states and no query string (the
  frontend drops the page's widgets and its query parameters when the page changes);
- changing a control, it sends the current page's hash, the query string the app last published
  (``page_info_changed``) and the state of every widget of the page as the frontend's widget manager holds it (the
  value a delta set, ``set_value``, else the value held before, else the default), that one control's changed;
- it lists the hashes of the large elements it keeps (``cached_message_hashes``), and the server sends those as
  references (``ref_hash``), which it resolves from its own cache, dropping what went unused for
  ``max_cached_message_age`` runs, as the frontend does.
Every run's page is read from its deltas: the page the server ran, its title (``page_config_changed``, which
``attn_ui.page.setup`` sets to the view's label), every element and widget, any exception shown. A visit counts only
where the server ran that view; a control change only where the page's content (every element but the widgets
themselves) or the app's URL state (``attn_ui.url_state`` publishes the controls' values) differs from before; the
changes that left both as they were are counted, by control: a driver that silently does nothing shows up there
(``tests/test_classroom.py`` fails on it). A control may leave the open section's content as it was (Multi-head's
"Head to open" while the Split section is open: its URL state changes); the Cost view's "Memory budget (GiB)" changes
neither (it only bounds a sweep, and is not in the link).

Each student (seeded: ``--seed``) starts at a random moment in the first ``--spread`` seconds, opens the shared link
(``--link``, a view's address), then two other views by their sidebar links, and on each view changes ``--changes``
controls, read from the deltas: a slider, a select box and a text field where the view has one (a different kind on
each view; else another control), to a neighbouring value (a slider or number's next step), another option, or a
sentence of its own. Between actions it reads the page for ``--think`` seconds. The first ``--sweeps`` students
(default 1) visit the Cost view second and press "Measure on this server" there after their change: a sweep, timed
apart, and the others' changes while it ran are reported apart too. A window narrower than 1,600 px is
assumed (the app's window-size report then sends nothing, as in a 1440-px browser).

Alongside, ``--browsers`` real Chromium sessions (default 3) do the same in a browser: open the link, follow two
sidebar links, change a control on each view (``benchmarks.bench_interactions.Driver``), and check what a student
sees: the view's title and no exception box.

Before the students, alone on the server, each view is opened by 11 new sessions in turn and rerun in each: the
server's CPU time for a view's render in a new session, against a rerun's and Home's, tells what is done for every
session that could be done once for all (``shared_work``).

Reported, printed and in JSON: errors (exceptions shown, failed runs, views not run, tracebacks in the server's log;
target 0); seconds from a control change's ``BackMsg`` to its ``script_finished``,
p50 and p95 (target p95 < 2 s at 60 sessions on 1 CPU); the server's resident memory: fresh, after the warm-up, its
peak (VmHWM; target < 1.5 GB), and after the sessions closed and Streamlit's hold on a closed session for its
reconnection (``server.disconnectedSessionTTL``, ``--session-ttl``) ran out (target: within 100 MB of the warm-up);
memory per extra session; and with ``--ramp 10,20,40,80`` (each level a fresh server, protocol sessions only) how many
sessions the CPUs hold before p95 passes 2 s. The machine (CPU, cores, which the server had, torch, load average) is
recorded; other work on the machine slows the server too.

Run from the repository root: ``.venv/bin/python -m benchmarks.classroom --sessions 60 --cpus 1 --json out.json``
(``--cpus N``: the server gets the first N CPUs, this script and its browsers the others). Exit status 1 when a
target was missed or anything went wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.NumberInput_pb2 import NumberInput
from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # also runs as `python benchmarks/classroom.py`
    sys.path.insert(0, str(ROOT))

from attn_ui.measure import MEASURE  # noqa: E402
from attn_ui.page import COST, HOME, VIEWS, View  # noqa: E402
from benchmarks.bench_interactions import (  # noqa: E402
    PRESENTER,
    TEXT_OVERRIDES,
    VIEWPORT,
    Driver,
    describe,
    drivable,
    find_controls,
    machine,
    open_sidebar,
    other_text,
    session_sentence,
    stats,
    status_mb,
)
from benchmarks.load import SWEEP_WAIT_S, Server, healthy, logged_server, progress, tracebacks  # noqa: E402
from tests.browser_support import RUN_TIMEOUT_S, chromium, exception_texts, rerun, visit  # noqa: E402

VIEWS_PER_STUDENT = 3
KINDS_TRIED = ("slider", "selectbox", "text")  # one kind a view, in an order of the student's own
WIDGETS = ("checkbox", "radio", "selectbox", "slider", "number_input", "text_input", "text_area", "button_group", "button")
# Left out of a page's content: the widgets' own values (the change itself), a download button's file id (new every
# run) and the window-size component's state.
NOT_CONTENT = (*WIDGETS, "download_button", "bidi_component")
TITLE = "{} · Attention Explorer"  # the page title attn_ui.page.setup gives a view
P95_TARGET_S = 2.0
PEAK_TARGET_MB = 1500
SETTLE_TARGET_MB = 100
SETTLE_S = 5  # after the sessions close, and again after their hold for reconnection ran out
TTL_VARIABLE = "STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL"  # server.disconnectedSessionTTL, read by `streamlit run`
NO_BROWSER = SimpleNamespace(version="(no browser in this run)")  # for machine(), which records the browser's version
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- one client, as the frontend speaks


@dataclass(frozen=True)
class Widget:
    id: str
    kind: str  # the element's type: "slider", "selectbox", ...
    label: str
    element: object  # its proto message (Slider, Selectbox, ...)

    @property
    def group(self) -> str:
        """The kind a student looks for: a text area and a text input are both a text field."""
        return "text" if self.kind in ("text_input", "text_area") else self.kind


@dataclass
class Page:
    """What one run drew."""

    started: float  # time.monotonic() when its BackMsg was sent
    seconds: float  # from the BackMsg sent to its script_finished received
    page_hash: str  # the page the server ran
    title: str
    digest: str  # of every element but the widgets
    query: str  # the query string the app published: every control's value (attn_ui.url_state)
    widgets: dict[str, Widget]
    problems: list[str]  # exceptions shown, a run that did not finish well, a page not found, a cache miss


def held_value(widget: Widget) -> WidgetState | None:
    """The state the frontend holds for a widget it has just been sent without one: the server's value where it sets
    one (``set_value``), else the default; None where there is none (an empty select box)."""
    kind, element = widget.kind, widget.element
    state = WidgetState(id=widget.id)
    if kind == "checkbox":
        state.bool_value = element.value if element.set_value else element.default
    elif kind in ("radio", "selectbox"):
        if element.set_value and element.HasField("raw_value"):
            state.string_value = element.raw_value
        elif not element.set_value and element.HasField("default"):
            state.string_value = element.options[element.default]
        else:
            return None
    elif kind == "button_group":
        values = element.raw_values if element.set_value else [element.options[i].content for i in element.default]
        state.string_array_value.data.extend(values)
    elif kind == "slider" and element.options:  # a select slider: its options' labels
        values = element.raw_value if element.set_value else [element.options[int(i)] for i in element.default]
        state.string_array_value.data.extend(values)
    elif kind == "slider":
        state.double_array_value.data.extend(element.value if element.set_value else element.default)
    elif kind == "number_input":
        value = element.value if element.set_value else element.default
        if element.data_type == NumberInput.INT:  # as the frontend sends it
            state.int_value = int(value)
        else:
            state.double_value = value
    else:  # a text field
        state.string_value = element.value if element.set_value else element.default
    return state


def alternatives(widget: Widget, held: WidgetState, text: str) -> list[WidgetState]:
    """The states a student may change a widget to: a slider's or number's next step either way, another option of a
    choice, the other side of a toggle, ``text`` in a text field (a structured one: its own other value)."""
    kind, element = widget.kind, widget.element
    found = []

    def state(**value) -> None:
        found.append(WidgetState(id=widget.id, **value))

    if kind == "checkbox":
        state(bool_value=not held.bool_value)
    elif kind in ("radio", "selectbox"):
        for option in element.options:
            if option != held.string_value:
                state(string_value=option)
    elif kind == "button_group":
        for option in element.options:
            if [option.content] != list(held.string_array_value.data):
                state(string_array_value={"data": [option.content]})
    elif kind == "slider" and element.options:
        at = list(element.options).index(held.string_array_value.data[0])
        for step in (-1, 1):
            if 0 <= at + step < len(element.options):
                state(string_array_value={"data": [element.options[at + step]]})
    elif kind == "slider":
        value = held.double_array_value.data[0]
        for step in (-element.step, element.step):
            if element.min <= value + step <= element.max:
                state(double_array_value={"data": [value + step, *held.double_array_value.data[1:]]})
    elif kind == "number_input":
        integer = element.data_type == NumberInput.INT
        value = held.int_value if integer else held.double_value
        for step in (-element.step, element.step):
            new = value + step
            if (not element.has_min or new >= element.min) and (not element.has_max or new <= element.max):
                state(**({"int_value": int(new)} if integer else {"double_value": new}))
    elif text != held.string_value:
        state(string_value=text)
    return found


def address(view: View) -> str:
    """A view's address under the server: Home is the root."""
    return "" if view == HOME else view.url_path


class Client:
    """One browser tab on the app, at the protocol level: one websocket, one run at a time."""

    def __init__(self, base: str):
        self.url = base.replace("http://", "ws://") + "/_stcore/stream"
        self.socket = None
        self.pages: dict[str, str] = {}  # a page's address (url_pathname) -> its hash, from `navigation`
        self.page_hash = ""  # the page the last run ran
        self.query = ""  # the query string the app last published
        self.held: dict[str, WidgetState] = {}  # widget id -> its state, for the widgets of the last run
        self.cache: dict[str, list] = {}  # a cacheable message's hash -> [the message, the run it was last used in]
        self.runs = 0
        self.max_cache_age = 2  # runs; the server's value comes in `new_session`

    async def __aenter__(self) -> Client:
        # "streamlit" is the subprotocol the frontend asks for (its second and third entries, an XSRF token and a
        # session to resume, are left out: no login, and a new session). A browser sends no websocket pings: without
        # ping_interval=None a server too busy to answer one within 20 s would see this client hang up.
        self.socket = await websockets.connect(
            self.url, subprotocols=["streamlit"], max_size=None, open_timeout=60, ping_interval=None
        )
        return self

    async def __aexit__(self, *exc) -> None:
        await self.socket.close()

    async def open(self, path: str, query: str = "") -> Page:
        """Open an address of the app, as a new tab does: its path as the page's name, no hash yet."""
        return await self._run(ClientState(page_name=path, query_string=query))

    async def follow(self, view: View) -> Page:
        """Follow the sidebar's link to ``view``: the frontend drops the page's query string (the new page publishes
        its own)."""
        self.query = ""
        return await self._run(ClientState(page_script_hash=self.pages[address(view)]))

    async def change(self, state: WidgetState) -> Page:
        """Rerun the page with one widget's state changed, every other widget's as held."""
        self.held[state.id] = state
        return await self.rerun()

    async def rerun(self) -> Page:
        """Rerun the page with nothing changed."""
        return await self._run(self._client_state())

    async def press(self, button: Widget, timeout_s: float = RUN_TIMEOUT_S) -> Page:
        """Press a button: one rerun with its trigger set, every widget's state as held."""
        client_state = self._client_state()
        client_state.widget_states.widgets.append(WidgetState(id=button.id, trigger_value=True))
        return await self._run(client_state, timeout_s)

    def _client_state(self) -> ClientState:
        return ClientState(
            page_script_hash=self.page_hash,
            query_string=self.query,
            widget_states=WidgetStates(widgets=list(self.held.values())),
        )

    async def _run(self, client_state: ClientState, timeout_s: float = RUN_TIMEOUT_S) -> Page:
        client_state.cached_message_hashes.extend(self.cache)
        started = time.monotonic()
        await self.socket.send(BackMsg(rerun_script=client_state).SerializeToString())
        elements: dict[tuple, bytes] = {}
        widgets: dict[str, Widget] = {}
        problems: list[str] = []
        title = ""
        async with asyncio.timeout(timeout_s):
            while True:
                message = ForwardMsg.FromString(await self.socket.recv())
                kind = message.WhichOneof("type")
                if kind == "ref_hash":
                    message = self._cached(message, problems)
                    kind = message.WhichOneof("type") if message else None
                elif message.metadata.cacheable:
                    self.cache[message.hash] = [message, self.runs]
                if kind == "new_session":
                    self.max_cache_age = message.new_session.config.max_cached_message_age
                elif kind == "navigation":
                    self.pages = {page.url_pathname: page.page_script_hash for page in message.navigation.app_pages}
                    self.page_hash = message.navigation.page_script_hash
                elif kind == "page_info_changed":
                    self.query = message.page_info_changed.query_string
                elif kind == "page_config_changed":
                    title = message.page_config_changed.title
                elif kind == "page_not_found":
                    problems.append(f"page not found: {message.page_not_found.page_name}")
                elif kind == "delta":
                    self._draw(message, elements, widgets, problems)
                elif kind == "script_finished":
                    seconds = time.monotonic() - started
                    if message.script_finished != ForwardMsg.FINISHED_SUCCESSFULLY:
                        problems.append(f"run ended {ForwardMsg.ScriptFinishedStatus.Name(message.script_finished)}")
                    break
        self._after_run(widgets)
        digest = hashlib.sha1(repr(sorted(elements.items())).encode()).hexdigest()
        return Page(started, round(seconds, 3), self.page_hash, title, digest, self.query, widgets, problems)

    def _cached(self, reference: ForwardMsg, problems: list[str]) -> ForwardMsg | None:
        """The message a reference stands for, at the reference's place in the page."""
        entry = self.cache.get(reference.ref_hash)
        if entry is None:
            problems.append(f"cached message missing: {reference.ref_hash}")
            return None
        entry[1] = self.runs
        message = ForwardMsg()
        message.CopyFrom(entry[0])
        message.metadata.CopyFrom(reference.metadata)
        return message

    def _draw(self, message: ForwardMsg, elements: dict, widgets: dict, problems: list[str]) -> None:
        delta, path = message.delta, tuple(message.metadata.delta_path)
        if delta.WhichOneof("type") == "add_block":
            elements[path] = delta.add_block.SerializeToString(deterministic=True)
            return
        if delta.WhichOneof("type") != "new_element":
            return
        kind = delta.new_element.WhichOneof("type")
        element = getattr(delta.new_element, kind)
        if kind == "exception":
            problems.append(f"exception shown: {element.type}: {element.message[:200]}")
        if kind in WIDGETS:
            widget = Widget(element.id, kind, element.label, element)
            widgets[widget.id] = widget
            if kind != "button" and (element.set_value or widget.id not in self.held):  # a button holds no state
                state = held_value(widget)
                if state is not None:
                    self.held[widget.id] = state
        if kind not in NOT_CONTENT:
            elements[path] = kind.encode() + element.SerializeToString(deterministic=True)

    def _after_run(self, widgets: dict[str, Widget]) -> None:
        """As the frontend after a run: forget the widgets no longer on the page, and cached messages unused for
        longer than the server's age."""
        self.held = {key: state for key, state in self.held.items() if key in widgets}
        self.runs += 1
        self.cache = {key: entry for key, entry in self.cache.items() if self.runs - entry[1] <= self.max_cache_age}


# ---------------------------------------------------------------- the students


@dataclass(frozen=True)
class Plan:
    """What every student of a run does."""

    link: View  # the shared link's view
    query: str  # the shared link's query string
    changes: int  # control changes per view
    spread_s: float  # the students start within this many seconds
    think_s: tuple[float, float]  # seconds between two actions, uniform in this range
    seed: int
    sweeps: int = 0  # the first this many students press the Cost view's sweep

    def rng(self, student: str) -> random.Random:
        return random.Random(f"{self.seed}:{student}")

    def views(self, rng: random.Random, sweeps: bool = False) -> list[View]:
        """The shared link's view, then (for a sweeping student, the Cost view and) others in an order of the
        student's own."""
        first = [self.link] + ([COST] if sweeps and self.link != COST else [])
        return first + rng.sample([view for view in VIEWS if view not in first], VIEWS_PER_STUDENT - len(first))


@dataclass
class Action:
    what: str  # "open", "navigate", "change", "sweep"
    view: str
    seconds: float  # until script_finished (a browser's: until the page is idle after it)
    started: float  # seconds after the class began
    control: str = ""
    effect: str = ""  # a change's: "content" (the page's content differs), "address" (only the app's URL state), "none"
    problems: list[str] = field(default_factory=list)


@dataclass
class Student:
    number: int
    browser: bool = False
    actions: list[Action] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # what stopped the student, or could not be done

    @property
    def problems(self) -> list[str]:
        found = [f"{a.view} · {a.what} {a.control}".rstrip() + f": {p}" for a in self.actions for p in a.problems]
        return found + self.failures


class Roll:
    """How many students are connected now: protocol clients (in the event loop) and browsers (in threads)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    @contextmanager
    def present(self) -> Iterator[None]:
        with self._lock:
            self.count += 1
        try:
            yield
        finally:
            with self._lock:
                self.count -= 1


def visit_problems(view: View, page: Page, client: Client) -> list[str]:
    """What is wrong with a visit of ``view``: not the page the server ran, or not its title."""
    found = list(page.problems)
    if page.page_hash != client.pages.get(address(view)):
        found.append(f"the server ran page {page.page_hash}, not /{address(view)}'s {client.pages.get(address(view))}")
    if page.title != TITLE.format(view.label):
        found.append(f"title “{page.title}”")
    return found


LESSON_BUILDER = (
    "-_draft_"  # in the widget ids of the sidebar's lesson builder (attn_ui.lesson_builder): the lesson's, not the view's
)


def pick(page: Page, client: Client, kind: str, rng: random.Random, number: int) -> tuple[Widget, list[WidgetState]] | None:
    """A control of the page that student ``number`` would change (of ``kind`` if the page has one), with what it may
    become."""
    usable = []
    for widget in page.widgets.values():
        held = client.held.get(widget.id)
        if widget.element.disabled or widget.label == PRESENTER or held is None or LESSON_BUILDER in widget.id:
            continue
        text = student_text(widget.label, held.string_value, number) if widget.group == "text" else ""
        changes = alternatives(widget, held, text)
        if changes:
            usable.append((widget, changes))
    wanted = [found for found in usable if found[0].group == kind]
    return rng.choice(wanted or usable) if usable else None


def student_text(label: str, value: str, number: int) -> str:
    """What a student types: a structured field's other value, else the text with words of the student's own."""
    return other_text(label, value) if label in TEXT_OVERRIDES else session_sentence(value, number)


async def student(base: str, plan: Plan, result: Student, epoch: float, roll: Roll) -> None:
    """One student: arrives, opens the shared link, visits two more views, changes controls, leaves; a sweeping one
    visits the Cost view second and presses its sweep after the change (``epoch``: when the class began)."""
    rng = plan.rng(f"student {result.number}")
    await asyncio.sleep(rng.uniform(0, plan.spread_s))
    kinds = rng.sample(KINDS_TRIED, len(KINDS_TRIED))
    sweeps = result.number <= plan.sweeps

    def done(what: str, view: View, page: Page, control: str = "", effect: str = "", problems=()) -> None:
        problems = [*visit_problems(view, page, client), *problems]
        result.actions.append(Action(what, view.label, page.seconds, round(page.started - epoch, 2), control, effect, problems))

    try:
        async with Client(base) as client:
            with roll.present():
                for index, view in enumerate(plan.views(rng, sweeps)):
                    if index == 0:
                        page = await client.open(view.url_path, plan.query)
                    else:
                        page = await client.follow(view)
                    done("open" if index == 0 else "navigate", view, page)
                    for change in range(plan.changes):
                        await asyncio.sleep(rng.uniform(*plan.think_s))
                        chosen = pick(page, client, kinds[(index + change) % len(kinds)], rng, result.number)
                        if chosen is None:
                            result.failures.append(f"{view.label}: no control to change")
                            break
                        widget, states = chosen
                        before = page
                        page = await client.change(rng.choice(states))
                        effect = (
                            "content" if page.digest != before.digest else "address" if page.query != before.query else "none"
                        )
                        done("change", view, page, widget.label, effect)
                    if sweeps and view == COST:
                        await asyncio.sleep(rng.uniform(*plan.think_s))
                        button = next(widget for widget in page.widgets.values() if widget.label == MEASURE)
                        page = await client.press(button, SWEEP_WAIT_S)
                        done("sweep", view, page, MEASURE)
                    await asyncio.sleep(rng.uniform(*plan.think_s))
    except Exception as error:  # noqa: BLE001 - a load test reports every failure and goes on
        result.failures.append(describe(error))


def browser_student(base: str, plan: Plan, result: Student, epoch: float, roll: Roll) -> None:
    """A student in a real Chromium (in a thread of its own: playwright's sync API), seeded as the protocol students:
    the shared link, two sidebar links, a control changed on each view; the view's title and no exception box checked
    after every action; each action timed until its run has finished and the page is idle."""
    rng = plan.rng(f"browser {result.number}")
    time.sleep(rng.uniform(0, plan.spread_s))
    try:
        with chromium() as browser, roll.present():
            url = f"{base}/{plan.link.url_path}" + (f"?{plan.query}" if plan.query else "")
            began = time.monotonic()
            page = visit(browser, url, VIEWPORT, "light")
            try:
                for index, view in enumerate(plan.views(rng)):
                    if index:
                        time.sleep(rng.uniform(*plan.think_s))
                        link = page.locator(f"[data-testid='stSidebar'] a[href$='{view.url_path}']")
                        began = time.monotonic()
                        with rerun(page):
                            open_sidebar(page)
                            link.click()
                    result.actions.append(browser_action("open" if index == 0 else "navigate", view, page, began, epoch))
                    for _ in range(plan.changes):
                        time.sleep(rng.uniform(*plan.think_s))
                        controls = [c for c in find_controls(page) if drivable(c) and c.label != PRESENTER]
                        controls = [c for c in controls if c.testid != "stButton"]
                        if not controls:
                            result.failures.append(f"{view.label}: no control to change")
                            break
                        control = rng.choice(controls)
                        began = time.monotonic()
                        try:
                            with rerun(page):
                                Driver(page, control).act(0)
                        except Exception as error:  # noqa: BLE001 - the session goes on
                            result.failures.append(f"{view.label} · {control.name}: {describe(error)}")
                            continue
                        result.actions.append(browser_action("change", view, page, began, epoch, control.name))
            finally:
                page.context.close()
    except Exception as error:  # noqa: BLE001 - reported with the session's other failures
        result.failures.append(describe(error))


def browser_action(what: str, view: View, page, began: float, epoch: float, control: str = "") -> Action:
    """An action a browser student began at ``began`` (the class at ``epoch``) and has just done, with what the page
    shows wrong."""
    seconds, started = round(time.monotonic() - began, 3), round(began - epoch, 2)
    action = Action(what, view.label, seconds, started, control)
    if page.title() != TITLE.format(view.label):
        action.problems.append(f"title “{page.title()}”")
    action.problems += [f"exception shown: {text.splitlines()[0] if text else ''}" for text in exception_texts(page)]
    return action


# ---------------------------------------------------------------- the server


def memory_mb(pid: int, key: str = "VmRSS") -> float:
    """``status_mb``, read again where one of the server's threads ended while its threads were listed (Streamlit
    ends a thread with every script run)."""
    for _ in range(10):
        try:
            return status_mb(pid, key)
        except FileNotFoundError:
            continue
    return status_mb(pid, key)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S  # utime and stime, fields 14 and 15 of stat(5)


def pin(pid: int, cpus: list[int]) -> str:
    """Every thread of ``pid`` (and so every thread it starts) to ``cpus``, with taskset; the list as the kernel
    has it now."""
    listed = ",".join(map(str, cpus))
    subprocess.run(["taskset", "-a", "-p", "-c", listed, str(pid)], check=True, capture_output=True)
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return next(line.split(":", 1)[1].strip() for line in status if line.startswith("Cpus_allowed_list"))


@contextmanager
def session_ttl(seconds: int) -> Iterator[None]:
    """Servers started within the block keep a closed session for its reconnection ``seconds`` long."""
    before = os.environ.get(TTL_VARIABLE)
    os.environ[TTL_VARIABLE] = str(seconds)
    try:
        yield
    finally:
        if before is None:
            del os.environ[TTL_VARIABLE]
        else:
            os.environ[TTL_VARIABLE] = before


async def shared_work(base: str, pid: int, sessions: int = 10) -> dict:
    """Alone on the server, Home and then every view, each opened by its address: the server's CPU milliseconds for
    its first render ever (imports, the real model's weights), then, on average over ``sessions`` new sessions, for
    its first render in a session and for a rerun with nothing changed. What a view's render in a new session costs
    above a rerun, and above Home's (which computes nothing), is done again for every session, though the default view
    is the same for all: the work that could be shared. (CPU time is counted in 10-ms ticks: hence the average.)"""
    found = {}
    for view in (HOME, *VIEWS):
        new_session = rerun_s = 0.0
        for session in range(sessions + 1):
            async with Client(base) as client:
                before = cpu_seconds(pid)
                page = await client.open(address(view))
                opened = cpu_seconds(pid)
                await client.rerun()
                if visit_problems(view, page, client):
                    raise RuntimeError(f"warm-up, {view.label}: {visit_problems(view, page, client)}")
            if session == 0:
                first = opened - before
            else:
                new_session, rerun_s = new_session + opened - before, rerun_s + cpu_seconds(pid) - opened
        found[view.label] = {
            "first_ever_ms": round(1000 * first),
            "new_session_ms": round(1000 * new_session / sessions, 1),
            "rerun_ms": round(1000 * rerun_s / sessions, 1),
        }
    return found


async def census(pid: int, roll: Roll, epoch: float, samples: list[tuple], every_s: float = 0.5) -> None:
    """Until cancelled: the seconds since the class began, the students connected, the server's resident memory and
    the 1-minute load average."""
    while True:
        samples.append((round(time.monotonic() - epoch, 2), roll.count, memory_mb(pid), os.getloadavg()[0]))
        await asyncio.sleep(every_s)


async def the_class(server: Server, plan: Plan, students: list[Student], epoch: float, roll: Roll, samples: list) -> None:
    counting = asyncio.create_task(census(server.pid, roll, epoch, samples))
    try:
        await asyncio.gather(*(student(server.base, plan, result, epoch, roll) for result in students))
    finally:
        counting.cancel()


def mb_per_session(samples: list[tuple], sweeps: list[Action]) -> float | None:
    """The slope of the server's resident memory against the students connected, over the class's samples but those
    taken while a sweep ran or in the second after it (its buffers come and go with it); None where the count never
    changed."""
    kept = [sample for sample in samples if not any(s.started <= sample[0] <= s.started + s.seconds + 1 for s in sweeps)]
    counts, rss = [sample[1] for sample in kept], [sample[2] for sample in kept]
    return round(float(np.polyfit(counts, rss, 1)[0]), 2) if len(set(counts)) > 1 else None


def drive(server: Server, sessions: int, browsers: int, plan: Plan, settle_after_s: float | None) -> dict:
    """One class on a running server: the warm-up, ``sessions`` protocol students and ``browsers`` browser students
    at once, the server's memory and CPU throughout; with ``settle_after_s``, its memory once the sessions have
    closed and Streamlit's hold on them (that many seconds) has run out."""
    rss = {"fresh": memory_mb(server.pid)}
    warm_up = asyncio.run(shared_work(server.base, server.pid))
    rss["after the warm-up"] = memory_mb(server.pid)
    cpu_before, own_before, began = cpu_seconds(server.pid), cpu_seconds(os.getpid()), time.monotonic()
    students = [Student(number) for number in range(1, sessions + 1)]
    in_browsers = [Student(number, browser=True) for number in range(1, browsers + 1)]
    roll, samples = Roll(), []
    threads = [
        threading.Thread(target=browser_student, args=(server.base, plan, result, began, roll), daemon=True)
        for result in in_browsers
    ]
    for thread in threads:
        thread.start()
    asyncio.run(the_class(server, plan, students, began, roll, samples))
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - began
    cpu, own = cpu_seconds(server.pid) - cpu_before, cpu_seconds(os.getpid()) - own_before
    rss["largest while the class ran"] = max(sample[2] for sample in samples)
    time.sleep(SETTLE_S)
    rss["sessions closed, held for reconnection"] = memory_mb(server.pid)
    if settle_after_s is not None:
        time.sleep(settle_after_s)
        asyncio.run(knock(server.base))
        time.sleep(SETTLE_S)
        rss["sessions closed, hold ran out"] = memory_mb(server.pid)
    rss["peak (VmHWM)"] = memory_mb(server.pid, "VmHWM")
    return {
        "sessions": sessions,
        "browsers": browsers,
        "runs_planned": (sessions + browsers) * VIEWS_PER_STUDENT * (1 + plan.changes) + min(plan.sweeps, sessions),
        "seconds": round(seconds, 1),
        "server_cpu_s": round(cpu, 1),
        "server_cpu_share": round(cpu / seconds, 2),
        # this script's own (its clients, and playwright's side of the browsers): near 1, the clients were the limit
        "driver_cpu_share": round(own / seconds, 2),
        "load_average_max_1min": round(max(sample[3] for sample in samples), 2),
        "census": samples,  # (seconds, students connected, server RSS MB, load average) every half second of the class
        "rss_mb": {name: round(value, 1) for name, value in rss.items()},
        "warm_up": warm_up,
        "students": [asdict(result) for result in students],
        "browser_students": [asdict(result) for result in in_browsers],
        "server_healthy_after": healthy(server.base),
    }


async def knock(base: str) -> None:
    """Open and close one session: Streamlit drops the closed sessions whose hold ran out when it next stores one."""
    async with Client(base) as client:
        await client.open(address(HOME))


def summarize(level: dict, log_text: str) -> dict:
    students = [Student(**{**s, "actions": [Action(**a) for a in s["actions"]]}) for s in level["students"]]
    browsers = [Student(**{**s, "actions": [Action(**a) for a in s["actions"]]}) for s in level["browser_students"]]
    actions = [action for result in students for action in result.actions]
    changes = [action for action in actions if action.what == "change"]
    visits = [action for action in actions if action.what in ("open", "navigate")]
    sweeps = [action for action in actions if action.what == "sweep"]

    def during_a_sweep(action: Action) -> bool:
        return any(s.started < action.started + action.seconds and action.started < s.started + s.seconds for s in sweeps)

    server_tracebacks = tracebacks(log_text)
    problems = [f"student {s.number}: {p}" for s in students for p in s.problems]
    problems += [f"browser {s.number}: {p}" for s in browsers for p in s.problems]
    problems += [f"server log: {line}" for line in server_tracebacks]
    rss = level["rss_mb"]
    warm = rss["after the warm-up"]
    summary = {
        "errors": len(problems),
        "exceptions_shown": sum("exception shown" in problem for problem in problems),
        "runs_planned": level["runs_planned"],
        "runs_finished": len(actions) + sum(len(result.actions) for result in browsers),
        "changes": len(changes),
        "changes_by_effect": {effect: sum(a.effect == effect for a in changes) for effect in ("content", "address", "none")},
        "unchanged_by": dict(Counter(f"{a.view} · {a.control}" for a in changes if a.effect == "none")),
        "change_s": stats([action.seconds for action in changes]),
        "change_s_during_a_sweep": stats([action.seconds for action in changes if during_a_sweep(action)]),
        "sweep_s": stats([action.seconds for action in sweeps]),
        "visit_s": stats([action.seconds for action in visits]),
        "browser_action_s": stats([action.seconds for result in browsers for action in result.actions]),
        "server_tracebacks": len(server_tracebacks),
        "peak_mb": rss["peak (VmHWM)"],
        "mb_per_session": mb_per_session(level["census"], sweeps),
        "settled_mb_above_warm": round(rss["sessions closed, hold ran out"] - warm, 1)
        if "sessions closed, hold ran out" in rss
        else None,
        "problems": problems,
    }
    summary["p95_met"] = summary["change_s"]["p95"] is not None and summary["change_s"]["p95"] < P95_TARGET_S
    return summary


# ---------------------------------------------------------------- the run


def split_cpus(count: int) -> tuple[list[int], list[int]]:
    """The server's CPUs (the first ``count`` this process may use) and the others, for this script and its browsers."""
    usable = sorted(os.sched_getaffinity(0))
    return usable[:count], usable[count:]


def level(sessions: int, browsers: int, plan: Plan, cpus: list[int], log: Path, ttl_s: int, settle: bool) -> dict:
    """A fresh server pinned to ``cpus`` that holds a closed session ``ttl_s`` seconds, and one class on it; with
    ``settle``, its memory once that hold has run out."""
    progress(f"{sessions} protocol sessions and {browsers} browsers on CPUs {cpus}")
    with session_ttl(ttl_s), logged_server(log) as server:
        # Pinned once it answers, before the app's first run (`logged_server` takes no command prefix): every thread
        # it has, and every thread it starts from now on, runs on `cpus`.
        pinned = pin(server.pid, cpus)
        result = drive(server, sessions, browsers, plan, ttl_s if settle else None)
    result["server_cpus"] = pinned
    result["summary"] = summarize(result, log.read_text(errors="replace"))
    progress(f"{sessions} sessions: change p95 {result['summary']['change_s']['p95']} s, errors {result['summary']['errors']}")
    return result


def capacity(levels: list[dict]) -> dict:
    """The most sessions whose change p95 stayed under the target, and the fewest that passed it."""
    held = [lv["sessions"] for lv in levels if lv["summary"]["p95_met"]]
    passed = [lv["sessions"] for lv in levels if not lv["summary"]["p95_met"]]
    return {"held_p95_under_2s": max(held, default=None), "p95_over_2s_from": min(passed, default=None)}


def run(options: argparse.Namespace) -> dict:
    server_cpus, own_cpus = split_cpus(options.cpus)
    if own_cpus:  # this script, its clients and its browsers keep off the server's CPUs
        pin(os.getpid(), own_cpus)
    if options.browsers:
        with chromium() as probe:
            record = {"machine": machine(probe)}
    else:
        record = {"machine": machine(NO_BROWSER)}
    record["machine"] |= {"server_cpus": server_cpus, "client_cpus": own_cpus or server_cpus}
    link, _, query = options.link.partition("?")
    plan = Plan(
        next(view for view in VIEWS if view.url_path == link),
        query,
        options.changes,
        options.spread,
        options.think,
        options.seed,
        options.sweeps,
    )
    record["settings"] = asdict(plan) | {"link": options.link, "sessions": options.sessions, "browsers": options.browsers}
    record["settings"] |= {"session_ttl_s": options.session_ttl, "ramp": options.ramp, "server_log": str(options.log)}
    main = level(options.sessions, options.browsers, plan, server_cpus, options.log, options.session_ttl, settle=True)
    record["levels"] = [main]
    for sessions in sorted(set(options.ramp) - {options.sessions}):
        record["levels"].append(level(sessions, 0, plan, server_cpus, options.log, options.session_ttl, settle=False))
        if not record["levels"][-1]["summary"]["p95_met"]:
            break  # more sessions would only be slower
    record["levels"].sort(key=lambda lv: lv["sessions"])
    record["capacity"] = capacity(record["levels"])
    summary = main["summary"]
    record["targets"] = {
        "errors": summary["errors"] == 0,
        "p95_under_2s": summary["p95_met"],
        "peak_under_1.5GB": summary["peak_mb"] < PEAK_TARGET_MB,
        "back_within_100MB": summary["settled_mb_above_warm"] is not None and summary["settled_mb_above_warm"] < SETTLE_TARGET_MB,
    }
    record["ok"] = all(record["targets"].values())
    return record


def report(record: dict) -> str:
    m, s = record["machine"], record["settings"]
    main = next(lv for lv in record["levels"] if lv["sessions"] == s["sessions"] and lv["browsers"] == s["browsers"])
    summary, rss = main["summary"], main["rss_mb"]

    def seconds(figures: dict) -> str:
        return (
            ", ".join(f"{k} {figures[k]:.2f}" for k in ("p50", "p95", "max") if figures[k] is not None) + f" (n {figures['n']})"
        )

    lines = [
        "# A class on one container (benchmarks/classroom.py)",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB; Python {m['python']}, torch {m['torch']}, "
        f"streamlit {m['streamlit']}, Chromium {m['chromium']}; commit {m['commit']}; {m['date']}.",
        f"Server on CPU(s) {main['server_cpus']}; this script and its browsers on {m['client_cpus']}. Load average before: "
        f"{', '.join(map(str, m['load_average']))}; during the class up to {main['load_average_max_1min']} (1 min; other "
        "work on this machine counts too).",
        f"Class: {s['sessions']} protocol sessions and {s['browsers']} Chromium sessions, starting within {s['spread_s']:g} s; "
        f"each opens /{s['link']}, visits {VIEWS_PER_STUDENT - 1} more views by their sidebar links and changes "
        f"{s['changes']} control(s) on each, thinking {s['think_s'][0]:g}–{s['think_s'][1]:g} s between actions "
        f"(seed {s['seed']}); {s['sweeps']} of them press the Cost view's sweep. Took {main['seconds']:.0f} s; "
        f"the server used {main['server_cpu_s']:.0f} CPU seconds ({main['server_cpu_share']:.0%} of one CPU), this "
        f"script {main['driver_cpu_share']:.0%} of one.",
        "",
        "| measure | result | target |",
        "|---|---|---|",
        f"| errors | {summary['errors']} (exceptions shown {summary['exceptions_shown']}, server tracebacks "
        f"{summary['server_tracebacks']}) | 0 |",
        f"| runs finished | {summary['runs_finished']} of {summary['runs_planned']} planned | all |",
        "| control changes: the page's content redrawn, only the app's URL state changed, nothing changed | "
        + ", ".join(str(count) for count in summary["changes_by_effect"].values())
        + f" (of {summary['changes']}; unchanged: "
        + (", ".join(f"{control} ×{count}" for control, count in summary["unchanged_by"].items()) or "none")
        + ") | |",
        f"| control change → script_finished, s | {seconds(summary['change_s'])} | p95 < {P95_TARGET_S:g} |",
        f"| control change → script_finished while a sweep ran, s | {seconds(summary['change_s_during_a_sweep'])} | |",
        f"| sweep pressed → script_finished, s | {seconds(summary['sweep_s'])} | |",
        f"| view opened or followed → script_finished, s | {seconds(summary['visit_s'])} | |",
        f"| browser actions, until the page is idle, s | {seconds(summary['browser_action_s'])} | |",
        "| server RSS, MB | " + ", ".join(f"{name} {value:,.0f}" for name, value in rss.items()) + " | peak < 1,500 |",
        f"| RSS after the sessions closed, above the warm-up, MB | {summary['settled_mb_above_warm']} | < {SETTLE_TARGET_MB} |",
        f"| memory per extra session, MB | {summary['mb_per_session']} (slope of the server's RSS against the students "
        "connected, every 0.5 s of the class but while a sweep ran) | |",
        f"| server healthy after | {main['server_healthy_after']} | |",
    ]
    if len(record["levels"]) > 1:
        lines += [
            "",
            "| sessions | change p50 s | change p95 s | errors | largest RSS MB | MB per session | server CPU | driver CPU |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for lv in record["levels"]:
            change = lv["summary"]["change_s"]
            lines.append(
                f"| {lv['sessions']} | {change['p50'] or 0:.2f} | {change['p95'] or 0:.2f} | {lv['summary']['errors']} | "
                f"{lv['rss_mb']['largest while the class ran']:,.0f} | {lv['summary']['mb_per_session']} | "
                f"{lv['server_cpu_share']:.0%} | {lv['driver_cpu_share']:.0%} |"
            )
    c = record["capacity"]
    lines += [
        "",
        f"Sessions these CPU(s) hold with change p95 under {P95_TARGET_S:g} s: {c['held_p95_under_2s'] or 'none tried'}"
        + (f" (passed it at {c['p95_over_2s_from']})" if c["p95_over_2s_from"] else " (the most tried)"),
        "",
        "Each view alone on the server, server CPU ms: its first render ever; on average over 10 new sessions, its first "
        "render in a session and a rerun with nothing changed:",
    ]
    for view, cost in main["warm_up"].items():
        lines.append(f"- {view}: {cost['first_ever_ms']:.0f}; {cost['new_session_ms']:.1f}; {cost['rerun_ms']:.1f}")
    lines += ["", "Targets: " + ", ".join(f"{name} {'met' if met else 'MISSED'}" for name, met in record["targets"].items())]
    lines.append(f"Result: {'OK' if record['ok'] else 'PROBLEMS'}")
    if summary["problems"]:
        lines += ["", "Problems:", *[f"- {problem}" for problem in summary["problems"][:40]]]
        if len(summary["problems"]) > 40:
            lines.append(f"- … and {len(summary['problems']) - 40} more (see --json)")
    return "\n".join(lines)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=60, help="protocol sessions (students) at once (default 60)")
    parser.add_argument("--browsers", type=int, default=3, help="real Chromium sessions alongside (default 3)")
    parser.add_argument("--cpus", type=int, default=1, help="CPUs the server is pinned to (default 1)")
    parser.add_argument("--ramp", default="", help="more levels of protocol sessions, each on a fresh server, e.g. 10,20,40,80")
    parser.add_argument("--link", default="Pipeline", help="the shared link: a view's address, with a query (default Pipeline)")
    parser.add_argument("--changes", type=int, default=1, help="control changes per view (default 1)")
    parser.add_argument("--spread", type=float, default=60, help="the students start within this many seconds (default 60)")
    parser.add_argument("--think", default="2,8", help="seconds between a student's actions, from,to (default 2,8)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sweeps", type=int, default=1, help="students who press the Cost view's sweep (default 1)")
    parser.add_argument("--session-ttl", type=int, default=120, help="seconds Streamlit holds a closed session (default 120)")
    parser.add_argument("--log", type=Path, default=Path("/tmp/attn_classroom_server.log"), help="the server's log")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the record as JSON")
    options = parser.parse_args(argv)
    options.ramp = [int(n) for n in options.ramp.split(",") if n.strip()]
    options.think = tuple(float(n) for n in options.think.split(","))
    if options.link.partition("?")[0] not in [view.url_path for view in VIEWS]:
        parser.error(f"--link: one of {', '.join(view.url_path for view in VIEWS)}, with a query string if you like")
    if options.sessions < 1 or options.browsers < 0 or options.cpus < 1 or len(options.think) != 2:
        parser.error("--sessions and --cpus at least 1, --browsers at least 0, --think from,to")
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    record = run(options)
    print(report(record))
    if options.json:
        options.json.write_text(json.dumps(record, indent=1))
    return 0 if record["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
