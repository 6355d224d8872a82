"""Many viewers at once (issue 15, point 3): concurrent real-browser sessions against one server of this checkout.

Starts the app server in the background (under ``timeout``, its log kept in a file), then runs N sessions at the same
time (default 10), each in a thread of its own with its own playwright and headless Chromium (playwright's sync API is
one instance per thread). Every session opens the Home page, then tours every view (the first by its URL, the others by
the sidebar's links, as a user would), and on each view types a sentence of its own into the first text control and
changes a few other controls chosen at random (seeded by the session's number; Masking's Play is switched on, left to
run 3 s, then off). The tours start at different views so that the views are busy at the same time.

Meanwhile session 1 presses the Cost view's "Measure on this server" with small settings (Longest T from
``--sweep-t-max``), and as soon as its progress bar shows, session 2 presses it too: the server runs one sweep at a time
(``attn_ui.measure``), so session 2 must show the lock's message while session 1's sweep runs, then run its own.

Counted: sessions, actions (navigations, text commits, control changes, sweep presses), page errors (Streamlit exception
elements, console errors, uncaught page errors; two kinds of console error that are not the app's are counted apart, see
``ignored``), actions that could not be done (each with a screenshot), tracebacks in the server's log, which
views answered in every session (drawn with a title and no exception), the lock's behaviour, the server's resident
memory (VmRSS, /proc) before the sessions, sampled every second during them, after them and after their tabs closed,
its peak (VmHWM), and the load average.

Run from the repository root: ``.venv/bin/python -m benchmarks.load`` (``--sessions``, ``--changes``, ``--rounds``,
``--sweep-t-max``, ``--log PATH`` for the server's log, ``--json [PATH]``; every action of every session, with its
time, is in the JSON record). The exit status is 1 when anything went wrong (errors, tracebacks, a view that did not answer, a
lock that did not hold), 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # also runs as `python benchmarks/load.py`
    sys.path.insert(0, str(ROOT))

from attn_ui.measure import WAIT_S as LOCK_WAIT_S  # noqa: E402
from attn_ui.page import COST, VIEWS, View  # noqa: E402
from benchmarks.bench_interactions import (  # noqa: E402
    INSTRUMENT,
    PRESENTER,
    RUN_SWEEP,
    TEXTS,
    VIEWPORT,
    WAIT_S,
    Driver,
    describe,
    drivable,
    find_controls,
    locate,
    machine,
    open_sidebar,
    process_tree,
    session_sentence,
    settled,
    stats,
    status_mb,
)
from tests.browser_support import (  # noqa: E402
    EXCEPTION,
    chromium,
    exception_texts,
    free_port,
    rerun,
    server_command,
    visit,
    wait_until_healthy,
)

# The lock's messages, as attn_ui.measure writes them.
LOCK_WAITING = "Another sweep is running on this server"
LOCK_WAITED = "for the other sweep."  # "Waited 3.2 s for the other sweep."
LOCK_GAVE_UP = "Gave up after waiting"
PROGRESS = "[data-testid='stProgress']"
SWEEP_WAIT_S = 2 * LOCK_WAIT_S + 60  # the contender's run: the other sweep, then its own
TRACEBACK = "Traceback (most recent call last)"
SELF_RUNNING = ("Play",)  # toggles that rerun the app on a timer (Masking's Play): switched on, then off
PLAY_S = 3  # how long Play runs before it is switched off
SERVER_LIMIT_S = 3600  # the server's `timeout`: it never outlives a stuck run of this script by long


# ---------------------------------------------------------------- the server


@dataclass(frozen=True)
class Server:
    base: str
    pid: int  # the streamlit process (a child of `timeout`)
    log: Path


@contextmanager
def logged_server(log: Path, limit_s: int = SERVER_LIMIT_S) -> Iterator[Server]:
    """A fresh server of streamlit_app.py in the background, under ``timeout``, its output in ``log``; stopped by PID."""
    port = free_port()
    command = ["timeout", "-k", "10", str(limit_s), *server_command(port), "--browser.gatherUsageStats=false"]
    command.append("--logger.enableRich=false")  # plain tracebacks in the log
    with log.open("w") as output:
        environment = os.environ | {"PYTHONUNBUFFERED": "1"}  # the whole log is there when the server is stopped
        process = subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, env=environment)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(base, process)
        children = process_tree(process.pid)[1:]
        yield Server(base, children[0] if children else process.pid, log)
    finally:
        process.terminate()  # timeout passes SIGTERM on to streamlit
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)


def healthy(base: str) -> bool:
    try:
        return urllib.request.urlopen(f"{base}/_stcore/health", timeout=10).read() == b"ok"
    except OSError:
        return False


def rss_mb(pid: int) -> float:
    return status_mb(pid, "VmRSS")


ANSI = re.compile(r"\x1b\[[0-9;]*m")
FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)|(\S+\.py):(\d+) in (\S+)')  # plain, or rich's layout


def tracebacks(log_text: str) -> list[str]:
    """Each traceback in a server log, in one line: its last frame in the app's own code (else its last frame) and
    its exception. Reads Python's plain tracebacks and rich's boxed ones (``logger.enableRich``)."""
    found = []
    lines = [ANSI.sub("", line) for line in log_text.splitlines()]
    for at, line in enumerate(lines):
        if TRACEBACK not in line:
            continue
        frames = []
        for following in lines[at + 1 :]:
            if TRACEBACK in following:
                break
            if following.strip() and not following[0].isspace() and following[0] not in "─╭╰│":
                app_frames = [frame for frame in frames if "site-packages" not in frame]
                found.append(f"{(app_frames or frames or [''])[-1]} | {following.strip()}")
                break
            if match := FRAME.search(following):
                path, number, name = (match[1], match[2], match[3]) if match[1] else (match[4], match[5], match[6])
                frames.append(f"{path}:{number} in {name}")
    return found


class Sampler(threading.Thread):
    """The server's RSS and the 1-minute load average, every ``period_s`` seconds, until stopped."""

    def __init__(self, pid: int, period_s: float = 1.0):
        super().__init__(daemon=True)
        self.pid, self.period_s = pid, period_s
        self.rss: list[float] = []
        self.load: list[float] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                self.rss.append(rss_mb(self.pid))
            except (OSError, ValueError):
                pass
            self.load.append(os.getloadavg()[0])
            self.stopped.wait(self.period_s)

    def stop(self) -> None:
        self.stopped.set()
        self.join()


# ---------------------------------------------------------------- one session


@dataclass
class SessionResult:
    number: int  # 1-based
    role: str  # "tour", "sweep" (presses the measure button) or "contender" (presses it while the other sweep runs)
    actions: int = 0
    answered: dict[str, bool] = field(default_factory=dict)  # view label -> drawn with a title and no exception
    exceptions: list[str] = field(default_factory=list)  # "view · action: first line of the exception box"
    console_errors: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # actions that could not be done
    sweep: dict = field(default_factory=dict)
    seconds: float = 0.0
    ignored: dict[str, int] = field(default_factory=dict)  # console errors that are not the app's: reason -> count
    action_s: list[float] = field(default_factory=list)  # seconds per action done, until the page was idle and drawn
    log: list[str] = field(default_factory=list)  # every action, in order, with its time

    @property
    def errors(self) -> int:
        return len(self.exceptions) + len(self.console_errors)


def ignored(text: str, url: str, base: str) -> str | None:
    """Why a console error is not the app's, or None. Two kinds are expected on every page here: resources from
    other hosts (Streamlit loads the sidebar's Material icons from fonts.gstatic.com; this machine may be offline),
    and Streamlit's own probe for a base path (on a view's URL it first asks ``/<view>/_stcore/health`` and
    ``/<view>/_stcore/host-config``, which are 404, then the server's root)."""
    if not text.startswith("Failed to load resource"):
        return None
    if url and not url.startswith(base + "/"):
        return f"resource from another host ({urlsplit(url).hostname})"
    if re.fullmatch(re.escape(base) + r"/[^/]+/_stcore/(health|host-config)", url) and "404" in text:
        return "Streamlit's base-path probe (404 on /<view>/_stcore/…)"
    return None


class SweepRace:
    """Where the sweeping session and the contender meet: both on the Cost view, then the sweep's progress bar shown."""

    def __init__(self) -> None:
        self.ready = threading.Barrier(2, timeout=3 * WAIT_S)
        self.sweeping = threading.Event()  # the sweeper's progress bar is shown
        self.swept = threading.Event()  # the sweeper's run is over
        self.started = self.ended = 0.0  # monotonic times of those two events


def usable(page, control) -> bool:
    """Drivable, and its own field enabled: ``find_controls`` judges a widget by its first input, button or slider,
    which is the help tooltip's button when it has help text, so a disabled control with help text (the Pipeline's
    fixed "Model width C" with real weights or a preset) looks enabled there."""
    if not drivable(control):
        return False
    field = locate(page, control).locator("input, textarea, [role='slider']").first
    return field.count() == 0 or field.is_enabled()


def tour(number: int, role: str) -> list[View]:
    """Every view once, starting at Cost for the two sweeping sessions and spread over the views for the others."""
    first = VIEWS.index(COST) if role != "tour" else number % len(VIEWS)
    return list(VIEWS[first:] + VIEWS[:first])


@dataclass(frozen=True)
class Plan:
    """What every session of a run does, and where."""

    base: str  # the server's URL
    changes: int  # control changes per view, besides the text
    sweep_t_max: int  # the sweep's Longest T
    shots: Path | None  # where screenshots of failed actions go


class Session:
    def __init__(self, browser, plan: Plan, result: SessionResult, race: SweepRace):
        self.browser, self.base, self.result, self.race = browser, plan.base, result, race
        self.changes, self.sweep_t_max, self.shots = plan.changes, plan.sweep_t_max, plan.shots
        self.rng = random.Random(result.number)
        self.page = None

    # ---- bookkeeping

    def check(self, where: str) -> None:
        """Record any exception box the page shows after an action."""
        for text in exception_texts(self.page):
            self.result.exceptions.append(f"{where}: {text.splitlines()[0] if text else '(empty)'}")

    def act(self, where: str, action, timeout_s: float = WAIT_S) -> bool:
        """One action that reruns the app; counted and timed, its failure recorded with a screenshot (the session
        goes on)."""
        self.result.actions += 1
        began = time.monotonic()
        try:
            with rerun(self.page, timeout_s=timeout_s):
                action()
            settled(self.page, need_run=False)
        except Exception as error:  # noqa: BLE001 - a load test reports every failure and goes on
            self.result.log.append(f"{time.strftime('%H:%M:%S')} {where}: FAILED after {time.monotonic() - began:.1f} s")
            self.result.failures.append(f"{where}: {describe(error)}{self.screenshot()}")
            return False
        seconds = time.monotonic() - began
        self.result.action_s.append(round(seconds, 2))
        self.result.log.append(f"{time.strftime('%H:%M:%S')} {where}: {seconds:.1f} s")
        self.check(where)
        return True

    def screenshot(self) -> str:
        if self.shots is None:
            return ""
        path = self.shots / f"session{self.result.number}_failure{len(self.result.failures) + 1}.png"
        try:
            self.page.screenshot(path=path, full_page=True)
        except Exception:  # noqa: BLE001 - a screenshot is a bonus
            return ""
        return f" (screenshot {path})"

    def listen(self) -> None:
        def console(message) -> None:
            if message.type != "error":
                return
            url = (message.location or {}).get("url", "")
            reason = ignored(message.text, url, self.base)
            if reason:
                self.result.ignored[reason] = self.result.ignored.get(reason, 0) + 1
            else:
                self.result.console_errors.append(f"console: {message.text[:300]} ({url[:200]})")

        self.page.on("console", console)
        self.page.on("pageerror", lambda error: self.result.console_errors.append(f"page error: {str(error)[:300]}"))

    # ---- the tour

    def run(self) -> None:
        self.page = visit(self.browser, self.base, VIEWPORT, "light", init_script=INSTRUMENT)  # Home
        self.page.set_default_timeout(30_000)
        self.result.actions += 1
        self.listen()
        self.check("Home")
        for number, view in enumerate(tour(self.result.number, self.result.role)):
            if number == 0:
                query = f"?T_max={self.sweep_t_max}" if self.result.role != "tour" else ""
                url = f"{self.base}/{view.url_path}{query}"
                arrived = self.act(f"{view.label} · open by URL", lambda url=url: self.page.goto(url))
            else:
                link = self.page.locator(f"[data-testid='stSidebar'] a[href$='{view.url_path}']")

                def follow(link=link) -> None:
                    open_sidebar(self.page)
                    link.click()

                arrived = self.act(f"{view.label} · sidebar link", follow)
            self.result.answered[view.label] = (
                arrived
                and self.page.url.split("?")[0].endswith(f"/{view.url_path}")
                and self.page.locator("h1").count() >= 1
                and self.page.locator(EXCEPTION).count() == 0
            )
            if not arrived:
                continue
            if view == COST and self.result.role != "tour":
                self.race_sweep()
            self.type_sentence(view)
            self.change_controls(view)

    def type_sentence(self, view: View) -> None:
        text = next((c for c in find_controls(self.page) if c.testid in TEXTS and usable(self.page, c)), None)
        if text is None:
            return
        box = locate(self.page, text).locator("textarea, input").first

        def commit() -> None:
            if text.sidebar:
                open_sidebar(self.page)
            box.fill(session_sentence(box.input_value(), self.result.number))
            box.press("Control+Enter" if text.testid == "stTextArea" else "Enter")

        self.act(f"{view.label} · {text.name} (typed)", commit)

    def change_controls(self, view: View) -> None:
        changed: set[str] = set()
        for _ in range(self.changes):  # found again after each change, which may disable or hide others
            others = [
                control
                for control in find_controls(self.page)
                if control.testid not in TEXTS + ("stButton",)
                and control.label != PRESENTER
                and control.name not in changed
                and usable(self.page, control)
            ]
            if not others:
                return
            control = self.rng.choice(others)
            changed.add(control.name)
            if control.label in SELF_RUNNING:
                self.play(view, control)
            else:
                self.act(f"{view.label} · {control.name}", lambda control=control: Driver(self.page, control).act(0))

    def play(self, view: View, control) -> None:
        """Switch a self-running toggle on, let it run a while, then off (unless it stopped by itself)."""
        switch = locate(self.page, control).locator("input")

        def on_then_off() -> None:
            Driver(self.page, control).act(0)
            self.page.wait_for_timeout(PLAY_S * 1000)
            if switch.is_checked():
                Driver(self.page, control).act(0)

        self.act(f"{view.label} · {control.name} (on, {PLAY_S:g} s, off)", on_then_off)
        if switch.is_checked():  # it stopped by itself just as it was switched off, and so started again
            self.act(f"{view.label} · {control.name} (off again)", lambda: Driver(self.page, control).act(0))

    # ---- the sweep and its lock

    def sweep_button(self):
        open_sidebar(self.page)
        return self.page.locator("[data-testid='stSidebar']").get_by_role("button", name=RUN_SWEEP, exact=True)

    def race_sweep(self) -> None:
        race, sweep = self.race, self.result.sweep
        try:
            race.ready.wait()
        except threading.BrokenBarrierError:
            sweep["error"] = "the other sweeping session never reached the Cost view"
            return
        if self.result.role == "sweep":
            self.press_first(race, sweep)
        else:
            self.press_second(race, sweep)

    def press_first(self, race: SweepRace, sweep: dict) -> None:
        def press() -> None:
            self.sweep_button().click()
            self.page.wait_for_selector(PROGRESS, timeout=WAIT_S * 1000)
            race.started = time.monotonic()
            race.sweeping.set()

        start = time.monotonic()
        try:
            done = self.act("Cost · measure (first)", press, timeout_s=SWEEP_WAIT_S)
        finally:
            race.ended = time.monotonic()
            race.swept.set()
            race.sweeping.set()  # never leave the contender waiting
        text = self.page.inner_text("[data-testid='stMain']") if done else ""
        sweep.update(
            pressed=True,
            finished=done,
            seconds=round(race.ended - start, 1),
            waited_for_another=LOCK_WAITING in text,
            charts=self.page.locator("[data-testid='stVegaLiteChart']").count() if done else 0,
        )

    def press_second(self, race: SweepRace, sweep: dict) -> None:
        if not race.sweeping.wait(timeout=3 * WAIT_S) or race.swept.is_set():
            sweep["error"] = "the first sweep was over (or never shown) before this session could press"
            return
        observed: dict = {}

        def press() -> None:
            pressed_at = time.monotonic()
            self.sweep_button().click()
            message = self.page.get_by_text(LOCK_WAITING)
            message.wait_for(timeout=WAIT_S * 1000)
            observed.update(
                message_while_first_ran=not race.swept.is_set(),
                message_after_s=round(time.monotonic() - pressed_at, 1),
                message=message.first.inner_text().strip(),
            )

        done = self.act("Cost · measure (second, while the first runs)", press, timeout_s=SWEEP_WAIT_S)
        text = self.page.inner_text("[data-testid='stMain']") if done else ""
        waited = next((line.strip() for line in text.splitlines() if LOCK_WAITED in line), None)
        sweep.update(
            pressed=True,
            finished=done,
            **observed,
            waited_caption=waited,
            gave_up=LOCK_GAVE_UP in text,
            charts=self.page.locator("[data-testid='stVegaLiteChart']").count() if done else 0,
        )


def run_session(plan: Plan, result: SessionResult, race: SweepRace, start: threading.Barrier) -> None:
    """One session in its own thread: its own playwright and Chromium, a tour of every view, its result filled in."""
    began = time.monotonic()
    try:
        with chromium() as browser:
            start.wait()  # every browser launched: the tours begin together
            session = Session(browser, plan, result, race)
            try:
                session.run()
            finally:
                if session.page is not None:
                    session.page.context.close()
    except Exception as error:  # noqa: BLE001 - reported with the session's other failures
        result.failures.append(f"session: {describe(error)}")
        if result.role != "tour":  # the other sweeping session must not wait for this one
            race.ready.abort()
            race.swept.set()
            race.sweeping.set()
    finally:
        result.seconds = round(time.monotonic() - began, 1)
        problems = result.errors + len(result.failures)
        progress(
            f"session {result.number} ({result.role}): {result.actions} actions, {problems} problems, {result.seconds:.0f} s"
        )


def one_round(plan: Plan, sessions: int) -> list[SessionResult]:
    race = SweepRace()
    start = threading.Barrier(sessions, timeout=300)
    results = [
        SessionResult(n, "sweep" if n == 1 else "contender" if n == 2 and sessions > 1 else "tour")
        for n in range(1, sessions + 1)
    ]
    if sessions == 1:  # nothing to race: the only session tours without sweeping
        results[0].role = "tour"
    threads = [
        threading.Thread(
            target=run_session,
            args=(plan, result, race, start),
            name=f"session {result.number}",
            daemon=True,
        )
        for result in results
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


# ---------------------------------------------------------------- the run


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(sessions: int, changes: int, rounds: int, sweep_t_max: int, log: Path) -> dict:
    with chromium() as probe:
        record = {"machine": machine(probe)}
    record["settings"] = {
        "sessions": sessions,
        "changes_per_view": changes,
        "rounds": rounds,
        "sweep_t_max": sweep_t_max,
        "views": [view.label for view in VIEWS],
        "server_log": str(log),
        "failure_screenshots": str(log.parent / "load_failures"),
    }
    shots = log.parent / "load_failures"
    shots.mkdir(parents=True, exist_ok=True)
    with logged_server(log) as server:
        rss = {"before": rss_mb(server.pid)}
        sampler = Sampler(server.pid)
        sampler.start()
        started = time.monotonic()
        record["rounds"] = []
        for number in range(1, rounds + 1):
            progress(f"round {number} of {rounds}: {sessions} sessions")
            results = one_round(Plan(server.base, changes, sweep_t_max, shots), sessions)
            rss[f"after round {number}"] = rss_mb(server.pid)
            record["rounds"].append([asdict(result) | {"errors": result.errors} for result in results])
        record["seconds"] = round(time.monotonic() - started, 1)
        time.sleep(5)  # the closed tabs' sessions are let go
        rss["after, tabs closed 5 s"] = rss_mb(server.pid)
        sampler.stop()
        rss["largest sampled"] = max(sampler.rss, default=0.0)
        rss["peak (VmHWM)"] = status_mb(server.pid, "VmHWM")
        record["rss_mb"] = rss
        record["load_average"] = {
            "start": record["machine"]["load_average"],
            "during_max_1min": round(max(sampler.load, default=0.0), 2),
            "end": [round(value, 2) for value in os.getloadavg()],
        }
        record["server_healthy_after"] = healthy(server.base)
    record["server_tracebacks"] = tracebacks(log.read_text(errors="replace"))
    record["summary"] = summarize(record)
    return record


def summarize(record: dict) -> dict:
    results = [result for round_ in record["rounds"] for result in round_]
    views = record["settings"]["views"]
    sweeps = [result["sweep"] for result in results if result["role"] in ("sweep", "contender")]
    first = next((r["sweep"] for r in results if r["role"] == "sweep"), {})
    second = next((r["sweep"] for r in results if r["role"] == "contender"), {})
    lock_held = (
        bool(
            second.get("message_while_first_ran")
            and second.get("waited_caption")
            and second.get("finished")
            and first.get("finished")
        )
        if second
        else None
    )
    summary = {
        "sessions": len(results),
        "actions": sum(r["actions"] for r in results),
        "action_s": stats([seconds for r in results for seconds in r["action_s"]]),
        "exception_elements": sum(len(r["exceptions"]) for r in results),
        "console_errors": sum(len(r["console_errors"]) for r in results),
        "console_errors_ignored": {
            reason: sum(r["ignored"].get(reason, 0) for r in results)
            for reason in sorted({k for r in results for k in r["ignored"]})
        },
        "failed_actions": sum(len(r["failures"]) for r in results),
        "server_tracebacks": len(record["server_tracebacks"]),
        "views_answered": {view: sum(bool(r["answered"].get(view)) for r in results) for view in views},
        "every_view_answered": all(r["answered"].get(view) for r in results for view in views),
        "sweeps": len([s for s in sweeps if s.get("pressed")]),
        "lock_held": lock_held,
        "server_healthy_after": record["server_healthy_after"],
    }
    summary["ok"] = (
        summary["exception_elements"] == summary["console_errors"] == summary["failed_actions"] == 0
        and summary["server_tracebacks"] == 0
        and summary["every_view_answered"]
        and lock_held is not False
        and summary["server_healthy_after"]
    )
    return summary


def report(record: dict) -> str:
    m, s, summary, rss = record["machine"], record["settings"], record["summary"], record["rss_mb"]
    results = [result for round_ in record["rounds"] for result in round_]
    lines = [
        "# Many viewers at once (benchmarks/load.py)",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB; Python {m['python']}, torch {m['torch']}, "
        f"streamlit {m['streamlit']}, Chromium {m['chromium']}; commit {m['commit'] or '(not a git checkout)'}; {m['date']}.",
        f"Load average (1 min): {record['load_average']['start'][0]} at start, up to "
        f"{record['load_average']['during_max_1min']} during the run, {record['load_average']['end'][0]} at the end.",
        f"Settings: {s['sessions']} concurrent sessions × {s['rounds']} round(s), each touring {len(s['views'])} views "
        f"({', '.join(s['views'])}), a typed sentence and {s['changes_per_view']} control changes per view; "
        f"sweep with Longest T = {s['sweep_t_max']:,}. Took {record['seconds']:.0f} s.",
        "",
        "| measure | result |",
        "|---|---|",
        f"| sessions | {summary['sessions']} |",
        f"| actions | {summary['actions']} |",
        "| seconds per action, until the page is idle and drawn | "
        + ", ".join(f"{k} {summary['action_s'][k]:.1f}" for k in ("p50", "p95", "max") if summary["action_s"][k] is not None)
        + " |",
        f"| exception elements in pages | {summary['exception_elements']} |",
        f"| console / page errors | {summary['console_errors']} |",
        "| console errors not the app's (not counted) | "
        + ("; ".join(f"{reason}: {count}" for reason, count in summary["console_errors_ignored"].items()) or "none")
        + " |",
        f"| actions that could not be done | {summary['failed_actions']} |",
        f"| tracebacks in the server log | {summary['server_tracebacks']} |",
        "| views answered (sessions) | "
        + ", ".join(f"{view} {count}/{summary['sessions']}" for view, count in summary["views_answered"].items())
        + " |",
        f"| sweep lock held | {lock_line(results)} |",
        "| server RSS (MB) | " + ", ".join(f"{name} {value:,.0f}" for name, value in rss.items()) + " |",
        f"| server healthy after | {summary['server_healthy_after']} |",
        "",
        f"Result: {'OK' if summary['ok'] else 'PROBLEMS'}",
    ]
    problems = []
    for result in results:
        tag = f"session {result['number']} ({result['role']})"
        problems += [f"{tag}: {line}" for line in result["exceptions"] + result["console_errors"] + result["failures"]]
        if result["sweep"].get("error"):
            problems.append(f"{tag}: sweep: {result['sweep']['error']}")
    problems += [f"server log: {line}" for line in record["server_tracebacks"]]
    if problems:
        lines += ["", "Problems:", *[f"- {problem}" for problem in problems[:60]]]
        if len(problems) > 60:
            lines.append(f"- … and {len(problems) - 60} more (see --json)")
    return "\n".join(lines)


def lock_line(results: list[dict]) -> str:
    first = next((r["sweep"] for r in results if r["role"] == "sweep"), None)
    second = next((r["sweep"] for r in results if r["role"] == "contender"), None)
    if not second:
        return "— (no second session to race)"
    if second.get("error") or not second.get("pressed"):
        return f"not tested: {second.get('error', 'the second session did not press')}"
    held = "yes" if second.get("message_while_first_ran") and second.get("waited_caption") else "NO"
    return (
        f"{held}: session 1's sweep ran {first.get('seconds', '?')} s; session 2 pressed while it ran and was shown "
        f"“{second.get('message', '(no message)')}” after {second.get('message_after_s', '?')} s, then "
        f"“{second.get('waited_caption') or '(no caption)'}” and ran its own"
        + (" (gave up waiting)" if second.get("gave_up") else "")
        + f"; charts drawn: {first.get('charts', 0)} and {second.get('charts', 0)}"
    )


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10, help="concurrent browser sessions (default 10)")
    parser.add_argument("--changes", type=int, default=2, help="control changes per view and session, besides the text")
    parser.add_argument("--rounds", type=int, default=1, help="run the sessions this many times in turn (memory growth)")
    parser.add_argument("--sweep-t-max", type=int, default=512, help="the sweep's Longest T (a URL value of the Cost view)")
    parser.add_argument("--log", type=Path, default=Path("/tmp/attn_load_server.log"), help="where the server's log goes")
    parser.add_argument(
        "--json", nargs="?", const="-", metavar="PATH", help="also write the record as JSON (to PATH, or to stdout)"
    )
    options = parser.parse_args(argv)
    if options.sessions < 1 or options.rounds < 1 or options.changes < 0:
        parser.error("--sessions and --rounds must be at least 1, --changes at least 0")
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    record = run(options.sessions, options.changes, options.rounds, options.sweep_t_max, options.log)
    print(report(record))
    if options.json == "-":
        print(json.dumps(record, indent=1))
    elif options.json:
        options.json = Path(options.json)
        options.json.write_text(json.dumps(record, indent=1))
    return 0 if record["summary"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
