"""Real-browser helpers shared by the browser tests and docs/screenshots.py: a fresh app server, Chromium, page waits.

Test modules call ``skip_without_browser()`` first; their ``server`` and ``browser`` fixtures are tests/conftest.py's.
Waits follow the app's WebSocket: a run is over when its ``script_finished`` message has arrived and the page
says "notRunning" (a fast rerun may never show "running" in the page, so the page alone cannot tell).
"""

from __future__ import annotations

import functools
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
EXCEPTION = "[data-testid='stException']"
SENTENCE = "the quick brown fox jumps over a lazy dog while my friend reads an old book"  # 16 distinct words
RUN_TIMEOUT_S = 90  # the first run of a view on a fresh server imports torch (and may load the real model)
SERVER_START_S = 60
# page -> the starts ("new_session") and ends ("script_finished") of its script runs and the reruns the page asked
# for ("rerun_script": a control's change, the window's report of its size), in order: a run stopped for a rerun (the
# report arriving while the first run still computes) starts and never ends.
_runs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def skip_without_browser() -> None:
    """Skip the calling test module when Chromium or playwright is missing; with REQUIRE_BROWSER=1 (CI), fail instead."""
    if not CHROMIUM.exists():
        if os.environ.get("REQUIRE_BROWSER") == "1":
            raise RuntimeError(f"REQUIRE_BROWSER=1 but {CHROMIUM} is missing: apt-get install -y chromium")
        pytest.skip(f"no browser at {CHROMIUM}", allow_module_level=True)
    pytest.importorskip("playwright.sync_api")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_healthy(base: str, process: subprocess.Popen, poll_s: float = 0.05) -> None:
    """Ask for the server's health every ``poll_s`` (a refused connection costs nothing) until it answers."""
    deadline = time.monotonic() + SERVER_START_S
    while True:
        try:
            if urllib.request.urlopen(f"{base}/_stcore/health", timeout=2).read() == b"ok":
                return
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"the app server exited with code {process.returncode}") from None
            if time.monotonic() > deadline:
                raise
            time.sleep(poll_s)


@dataclass(frozen=True)
class AppServer:
    base: str  # e.g. http://127.0.0.1:PORT
    pid: int


@contextmanager
def running_app() -> Iterator[str]:
    """A fresh server for streamlit_app.py on a free port, in the background; yields its base URL, then stops it by PID."""
    with app_server() as started:
        yield started.base


def server_command(port: int, script: str = "streamlit_app.py", module: str = "streamlit") -> list[str]:
    """The command that serves ``script`` (the app) on ``port`` of this machine only, headless; ``module``: what
    runs it, Streamlit or a wrapper that takes Streamlit's arguments (``benchmarks.heap_probe``)."""
    return [
        sys.executable,
        "-m",
        module,
        "run",
        script,
        "--server.headless=true",
        f"--server.port={port}",
        "--server.address=127.0.0.1",
        "--server.fileWatcherType=none",  # edits to the sources while tests run must not rerun the pages
    ]


@contextmanager
def app_server(script: str = "streamlit_app.py", module: str = "streamlit") -> Iterator[AppServer]:
    """As ``running_app``, yielding the server's URL and process id (for its memory); ``script``: what it serves,
    from the repository root; ``module``: as in ``server_command``."""
    port = free_port()
    command = server_command(port, script, module)
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(base, process)
        yield AppServer(base, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)


@contextmanager
def chromium() -> Iterator:
    """Headless Chromium from /usr/bin (playwright's own browser download does not work here)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def _record_runs(page, websocket) -> None:
    def on_received(payload) -> None:
        kind = ForwardMsg.FromString(payload).WhichOneof("type") if isinstance(payload, bytes) else None
        if kind in ("script_finished", "new_session"):
            _runs[page].append(kind)

    def on_sent(payload) -> None:
        if isinstance(payload, bytes) and BackMsg.FromString(payload).WhichOneof("type") == "rerun_script":
            _runs[page].append("rerun_script")

    websocket.on("framereceived", on_received)
    websocket.on("framesent", on_sent)


def run_events(page) -> list[str]:
    """What the page's socket has carried so far, in order: "new_session" (a run began), "script_finished" (one
    ended, or stopped for a rerun) and "rerun_script" (the page asked for a run)."""
    return list(_runs[page])


def asked_while_running(page) -> int:
    """How many runs the page asked for while one was still running (a report of the window's size sent before the
    page had drawn a run whole: attn_ui.slide)."""
    count, running = 0, False
    for kind in _runs[page]:
        running = kind == "new_session" or (running and kind != "script_finished")
        count += kind == "rerun_script" and running
    return count


def finished_runs(page) -> int:
    """How many script runs (full or fragment) the app has reported finished to this page."""
    return _runs[page].count("script_finished")


def wait_for_runs(page, more_than: int, timeout_s: float = RUN_TIMEOUT_S) -> None:
    """Wait until the app has finished more than ``more_than`` runs for this page and the page is idle."""
    deadline = time.monotonic() + timeout_s
    while finished_runs(page) <= more_than:
        if time.monotonic() > deadline:
            raise AssertionError(f"no script run finished within {timeout_s} s (page {page.url})")
        page.wait_for_timeout(50)  # lets playwright deliver WebSocket events
    page.wait_for_selector(IDLE, timeout=timeout_s * 1000)


def wait_for_size_report(page, timeout_s: float = RUN_TIMEOUT_S) -> None:
    """After the app's first run: wait until the run that follows the window's report of its size has finished. A
    slide reports once its first run has ended; a wide scrolling page may report while its first run still computes
    (a view's first visit fills its caches), and that run then stops for the new one, unfinished."""
    deadline = time.monotonic() + timeout_s
    while not (_runs[page].count("new_session") >= 2 and _runs[page][-1] == "script_finished"):
        if time.monotonic() > deadline:
            raise AssertionError(f"no run after the window's size report finished within {timeout_s} s (page {page.url})")
        page.wait_for_timeout(50)  # lets playwright deliver WebSocket events
    page.wait_for_selector(IDLE, timeout=timeout_s * 1000)


@contextmanager
def rerun(page, timeout_s: float = RUN_TIMEOUT_S) -> Iterator[None]:
    """Around an action that reruns the app: on leaving the block, wait for that rerun to finish."""
    before = finished_runs(page)
    yield
    wait_for_runs(page, before, timeout_s)


def visit(browser, url: str, viewport: tuple[int, int] = (1400, 900), color_scheme: str = "light", init_script: str = ""):
    """A page at ``url`` with the given window size and colour-scheme preference, after the app's first run
    (``init_script``: JavaScript run in the page before the app's own, on a browser that opens a new page each time:
    not ``Pages``, whose pages are used again)."""
    width, height = viewport
    page = browser.new_page(viewport={"width": width, "height": height}, color_scheme=color_scheme)
    if page in _runs:  # one that Pages hands out again: its scripts and listener are in place
        if init_script:
            raise ValueError("a page used again keeps the scripts of its earlier visits: open a new one for init_script")
    else:
        page.add_init_script(LAST_CHANGE)
        page.on("websocket", lambda websocket: _record_runs(page, websocket))
        if init_script:
            page.add_init_script(init_script)
    _runs[page] = []
    page.goto(url)
    wait_for_runs(page, 0)
    return page


class Pages:
    """The tests' browser: its pages are used again. Opening a page costs Chromium about 2 s of CPU, loading the app
    in a page already open under 1 s, and the browser tests load it a few hundred times. ``new_page`` hands out an
    idle page of that window size and colour scheme, or a new one; closing a page puts it back: its storage cleared,
    the app left for about:blank (which ends the app's session on the server, as closing does), the mouse in the
    corner, and its window size, colour scheme and default timeout as they were when it was opened."""

    def __init__(self, browser):
        self.browser = browser
        self.idle: dict[tuple[int, int, str], list] = {}

    def new_page(self, viewport: dict, color_scheme: str):
        kind = (viewport["width"], viewport["height"], color_scheme)
        if self.idle.get(kind):
            return self.idle[kind].pop()
        page = self.browser.new_page(viewport=viewport, color_scheme=color_scheme)
        page.close = functools.partial(self._put_back, page, kind, page.close)
        return page

    def _put_back(self, page, kind: tuple[int, int, str], close, **_) -> None:
        from playwright.sync_api import Error

        width, height, color_scheme = kind
        try:
            if page.url.startswith("http"):
                page.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
            page.goto("about:blank")
            page.mouse.move(0, 0)  # where no chart's tooltip would open on the next app's first drawing
            page.set_viewport_size({"width": width, "height": height})
            page.emulate_media(color_scheme=color_scheme)
            page.set_default_timeout(30_000)  # Playwright's own
        except Error:  # a page that cannot be reset is not used again
            close()
            return
        self.idle.setdefault(kind, []).append(page)


# The time of the page's last change to its elements (a node, an attribute or a text), kept from its first moment
# (settle_layout's ``acted_s_ago``).
LAST_CHANGE = """
window.lastChange = performance.now();
new MutationObserver(() => { window.lastChange = performance.now(); })
    .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
"""


def settle_layout(page, timeout_s: float = 20, quiet_ms: int = 250, acted_s_ago: float = 0.0) -> None:
    """Wait until the page's elements and charts stop changing: every element's code loaded (Streamlit shows a
    skeleton where an element waits for its script, which a busy machine may take longer than ``quiet_ms`` to fetch
    and run), every chart on display drawn, the app idle and no change to the page's elements (a node, an attribute
    or a text) for ``quiet_ms``, and every chart's box the same in every check 50 ms apart. The browser keeps adding
    elements for a moment after the app's run has finished, and Vega redraws width-filling charts asynchronously
    after a resize; a slide's report of its size and notes (attn_ui.slide) may be due, and the run it brings with it.
    The changes are those ``visit``'s LAST_CHANGE records. The quiet counts from now, or, on a page
    whose last action (a key, a resize, a theme) was ``acted_s_ago`` seconds ago, from then or its last change,
    whichever came later: a page left alone while another was waited for has settled."""
    settled = """([quietMs, timeoutMs, idleSelector, actedAgoMs]) => new Promise(done => {
        const shown = selector => [...document.querySelectorAll(selector)]
            .filter(element => element.getClientRects().length > 0);  // not those in a hidden tab
        const charts = () => shown("[data-testid='stVegaLiteChart']");
        const boxes = () => JSON.stringify(charts().map(chart => chart.firstElementChild?.getBoundingClientRect() ?? null));
        let changed = Math.max(window.lastChange, performance.now() - actedAgoMs), quietBoxes = null, checks = 0;
        const started = performance.now();
        const check = () => requestAnimationFrame(() => {
            const now = performance.now();
            let quiet = false;
            try {
                const current = boxes();
                const drawn = shown("[data-testid='stSkeleton']").length === 0
                    && charts().every(chart => chart.querySelector("svg, canvas"));
                const idle = document.querySelector(idleSelector) !== null;  // a run may be on its way
                changed = Math.max(changed, window.lastChange);
                if ((checks++ > 0 && current !== quietBoxes) || !idle) changed = now;
                quietBoxes = current;
                const reportDue = window.attentionExplorerSizeReportDue === true;  // attn_ui.slide: a rerun to come
                quiet = checks > 1 && drawn && !reportDue && now - changed >= quietMs;
            } catch (error) {  // an element went while it was measured: not settled yet
                changed = now;
            }
            if (quiet || now - started > timeoutMs) return done(quiet);
            setTimeout(check, 50);
        });
        check();
    })"""
    if not page.evaluate(settled, [quiet_ms, timeout_s * 1000, IDLE, acted_s_ago * 1000]):
        raise AssertionError(f"charts still moving or undrawn after {timeout_s} s (page {page.url})")


def settle_runs(page, timeout_s: float = RUN_TIMEOUT_S, acted_s_ago: float = 0.0) -> None:
    """Wait until every rerun the page has asked for has finished and the page has settled (settle_layout, with its
    ``acted_s_ago``). A new page's window-size report reruns it once more after its first run (when the size changes
    what it draws), and a slide is laid out for that report; the report is sent 150 ms after the page's content last
    changed size, within settle_layout's quiet 250 ms, so a page settled with no asked-for rerun unfinished asks for
    none."""
    deadline = time.monotonic() + timeout_s
    while True:
        while _rerun_pending(page):
            if time.monotonic() > deadline:
                raise AssertionError(f"a rerun the page asked for did not finish within {timeout_s} s (page {page.url})")
            page.wait_for_timeout(50)  # lets playwright deliver WebSocket events
        page.wait_for_selector(IDLE, timeout=timeout_s * 1000)
        settle_layout(page, acted_s_ago=acted_s_ago)
        if not _rerun_pending(page):
            return


def _rerun_pending(page) -> bool:
    """Whether a rerun the page asked for has not finished yet: no run finished since the last one asked for."""
    events = _runs[page]
    asked = max((i for i, kind in enumerate(events) if kind == "rerun_script"), default=-1)
    return "script_finished" not in events[asked + 1 :]


def rgba(colour: str) -> tuple[float, ...]:
    """A CSS rgb()/rgba() colour as (r, g, b, alpha), channels 0..255."""
    numbers = [float(n) for n in re.findall(r"[\d.]+", colour)]
    return tuple(numbers[:3]) + ((numbers[3] if len(numbers) > 3 else 1.0),)


def luminance(colour: tuple[float, ...]) -> float:
    """WCAG relative luminance of an opaque colour."""
    linear = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in colour[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(text: tuple[float, ...], opacity: float, background: tuple[float, ...]) -> float:
    """WCAG contrast ratio of text (blended with the background by its opacity) against the background."""
    alpha = text[3] * opacity
    blended = tuple(alpha * t + (1 - alpha) * b for t, b in zip(text[:3], background[:3], strict=True))
    lighter, darker = sorted((luminance(blended), luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def exception_texts(page) -> list[str]:
    """The text of every exception box the app shows (empty when none)."""
    return [text[:600] for text in page.locator(EXCEPTION).all_inner_texts()]


def choose(page, label: str, option: str) -> None:
    """Pick an option of a select box and wait for the rerun it causes. Streamlit 1.67's select box is a combobox
    whose list a click does not always open; the keyboard does, and a key pressed while the page is still drawing
    may be lost, or the list may close again before the option is clicked (a redraw of the box): the list is opened
    again, and the option clicked, until the click lands."""
    from playwright.sync_api import Error

    box = page.get_by_role("combobox", name=label, exact=True)
    wanted = page.get_by_role("option", name=option, exact=True)
    with rerun(page):
        for attempt in range(1, 4):
            box.press("ArrowDown")
            try:
                wanted.wait_for(timeout=3_000 * attempt)
                wanted.click(timeout=3_000)
                return
            except Error:
                if attempt == 3:
                    raise
                box.press("Escape")
