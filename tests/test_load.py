"""The load script's bookkeeping (benchmarks/load.py), without a server or a browser: what it counts as a traceback
or a page error, which console errors it sets aside, the tours, and when a run counts as clean. The run itself
(10 browsers) is too slow for the suite; its result goes in the README."""

from __future__ import annotations

from attn_ui.page import COST, VIEWS
from benchmarks import load

BASE = "http://127.0.0.1:8501"
LOG = """  You can now view your Streamlit app in your browser.
2026-11-24 00:01:02.345 Uncaught app execution
Traceback (most recent call last):
  File "/x/streamlit/runtime/scriptrunner/exec_code.py", line 129, in exec_func_with_error_handling
    result = func()
  File "/x/pages/1_Pipeline.py", line 225, in <module>
    query = st.selectbox("Query token", range(len(queries)), key="query")
TypeError: '>=' not supported between instances of 'str' and 'int'
2026-11-24 00:01:03.000 Another line
"""


RICH_LOG = """\x1b[31m────────── \x1b[0mTraceback (most recent call last)\x1b[31m ──────────╮\x1b[0m
  /x/.venv/lib/python3.11/site-packages/streamlit/runtime/scriptrunner/exec_co
  de.py:136 in exec_func_with_error_handling

  /x/pages/3_Masking.py:61 in <module>

  ❱  61 │   kind = st.radio("Mask", MASK_KINDS, format_func=MASK_LABELS.get, key="mask")

  /x/.venv/lib/python3.11/site-packages/streamlit/elements/widgets/radio.py:563 in _radio
────────────────────────────────────────────────────────────╯
\x1b[1;91mTypeError: \x1b[0mbad argument type for built-in operation
"""


def test_a_traceback_in_the_server_log_is_counted_with_its_place_in_the_app_and_its_exception():
    (plain,) = load.tracebacks(LOG)
    assert plain == "/x/pages/1_Pipeline.py:225 in <module> | TypeError: '>=' not supported between instances of 'str' and 'int'"
    (rich,) = load.tracebacks(RICH_LOG)
    assert rich == "/x/pages/3_Masking.py:61 in <module> | TypeError: bad argument type for built-in operation"
    assert load.tracebacks(LOG + RICH_LOG) == [plain, rich]
    assert load.tracebacks("  You can now view your Streamlit app in your browser.\n") == []


def test_only_offline_resources_and_streamlits_base_path_probe_are_set_aside():
    failed = "Failed to load resource: "
    assert "fonts.gstatic.com" in load.ignored(failed + "net::ERR_NAME_NOT_RESOLVED", "https://fonts.gstatic.com/a.svg", BASE)
    probe = failed + "the server responded with a status of 404 (Not Found)"
    assert load.ignored(probe, f"{BASE}/Cost/_stcore/health", BASE)
    assert load.ignored(probe, f"{BASE}/Cost/_stcore/host-config", BASE)
    assert load.ignored(probe, f"{BASE}/_stcore/health", BASE) is None  # the server's own health check failing counts
    assert load.ignored(probe, f"{BASE}/static/js/main.js", BASE) is None
    assert load.ignored("Uncaught TypeError: x is undefined", f"{BASE}/static/js/main.js", BASE) is None


def test_every_session_tours_every_view_once_and_the_sweepers_start_at_cost():
    for number in range(1, 11):
        for role in ("tour", "sweep", "contender"):
            views = load.tour(number, role)
            assert sorted(view.label for view in views) == sorted(view.label for view in VIEWS)
            assert role == "tour" or views[0] == COST
    assert len({load.tour(number, "tour")[0] for number in range(1, len(VIEWS) + 1)}) == len(VIEWS)  # spread over the views


def session(number: int, role: str, **changes) -> dict:
    result = {
        "number": number,
        "role": role,
        "actions": 20,
        "answered": {view.label: True for view in VIEWS},
        "exceptions": [],
        "console_errors": [],
        "failures": [],
        "sweep": {},
        "seconds": 60.0,
        "ignored": {"resource from another host (fonts.gstatic.com)": 3},
        "action_s": [1.0, 2.0],
        "log": [],
    }
    return result | changes


LOCK_SEEN = {
    "pressed": True,
    "finished": True,
    "message_while_first_ran": True,
    "message": load.LOCK_WAITING + "…",
    "message_after_s": 1.0,
    "waited_caption": "Waited 3.0 s for the other sweep.",
    "gave_up": False,
    "charts": 2,
}


def record(*sessions: dict, tracebacks: tuple[str, ...] = ()) -> dict:
    result = {
        "machine": {
            "cpu": "CPU",
            "cores": 2,
            "memory_gb": 8,
            "python": "3",
            "torch": "2",
            "streamlit": "1.67.0",
            "chromium": "1",
            "commit": "abc",
            "date": "today",
            "load_average": [1.0, 1.0, 1.0],
        },
        "settings": {
            "sessions": len(sessions),
            "changes_per_view": 2,
            "rounds": 1,
            "sweep_t_max": 512,
            "views": [view.label for view in VIEWS],
        },
        "rounds": [list(sessions)],
        "seconds": 100.0,
        "rss_mb": {"before": 50.0, "after round 1": 500.0},
        "load_average": {"start": [1.0], "during_max_1min": 9.0, "end": [2.0]},
        "server_healthy_after": True,
        "server_tracebacks": list(tracebacks),
    }
    result["summary"] = load.summarize(result)
    return result


def test_a_clean_run_with_the_lock_held_is_ok_and_reported():
    clean = record(
        session(1, "sweep", sweep={"pressed": True, "finished": True, "seconds": 10.0, "charts": 2}),
        session(2, "contender", sweep=LOCK_SEEN),
        session(3, "tour"),
    )
    summary = clean["summary"]
    assert summary["ok"] and summary["lock_held"] and summary["every_view_answered"]
    assert summary["sessions"] == 3 and summary["actions"] == 60 and summary["sweeps"] == 2
    assert summary["console_errors_ignored"] == {"resource from another host (fonts.gstatic.com)": 9}
    text = load.report(clean)
    assert "| sessions | 3 |" in text and "| actions | 60 |" in text and "Result: OK" in text
    assert "yes: session 1's sweep ran 10.0 s" in text and "Waited 3.0 s for the other sweep." in text


def test_any_error_traceback_unanswered_view_or_missing_lock_message_fails_the_run():
    sweeper = session(1, "sweep", sweep={"pressed": True, "finished": True, "seconds": 10.0})
    contender = session(2, "contender", sweep=LOCK_SEEN)
    bad = {
        "exception": session(3, "tour", exceptions=["Pipeline · Seed: TypeError"]),
        "console": session(3, "tour", console_errors=["page error: x"]),
        "failure": session(3, "tour", failures=["Cost · Heads H: TimeoutError"]),
        "unanswered": session(3, "tour", answered={view.label: view != COST for view in VIEWS}),
    }
    for name, third in bad.items():
        result = record(sweeper, contender, third)
        assert not result["summary"]["ok"], name
        assert "Result: PROBLEMS" in load.report(result)
    assert not record(sweeper, contender, session(3, "tour"), tracebacks=("File x | TypeError",))["summary"]["ok"]
    no_message = session(2, "contender", sweep=LOCK_SEEN | {"message_while_first_ran": False})
    assert record(sweeper, no_message)["summary"]["lock_held"] is False
    assert not record(sweeper, no_message)["summary"]["ok"]


def test_the_default_run_is_ten_sessions():
    options = load.parse([])
    assert (options.sessions, options.rounds) == (10, 1) and options.changes >= 1
