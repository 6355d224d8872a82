"""What keeps each run of the app cheap on the server, checked by mechanism (the timings are in the benchmarks)."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest
import torch

IMPORT_EVERYTHING = """
import gc, importlib, pkgutil, torch
import attn_core, attn_ui
before = (gc.get_freeze_count(), torch.get_num_threads())
for package in (attn_core, attn_ui):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)
after = (gc.get_freeze_count(), torch.get_num_threads())
import attn_ui.page
attn_ui.page.tune_server()
attn_ui.page.freeze_loaded_modules()
print(before == after, gc.get_freeze_count() > 100_000, torch.get_num_threads())
"""


def test_importing_changes_nothing_process_wide_and_tune_server_does():
    """Importing every module of the engine and of the UI helpers leaves the garbage collector and torch's threads as
    they were; the server's settings are applied by named functions, which the pages' set-up calls."""
    result = subprocess.run([sys.executable, "-c", IMPORT_EVERYTHING], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["True", "True", "1"]


FREEZE_AS_MODULES_LOAD = """
import gc
from attn_ui.page import freeze_loaded_modules
from torch.nn.attention.flex_attention import create_block_mask

def tracked():
    gc.collect()
    return len(gc.get_objects())

freeze_loaded_modules()  # a page's first run
first = tracked()
create_block_mask(lambda b, h, q, k: q >= k, None, None, 64, 64, device="cpu", BLOCK_SIZE=16)  # imports torch._dynamo
loaded = tracked()
freeze_loaded_modules()  # the next run
frozen, freezes = tracked(), gc.get_freeze_count()
cycle = []
cycle.append(cycle)  # garbage made by a run: still collected
del cycle
collected = gc.collect()
freeze_loaded_modules()  # no module loaded since: nothing frozen
print(first < 20_000 < loaded, frozen < 20_000, collected >= 1, gc.get_freeze_count() == freezes)
"""


def test_the_loaded_modules_are_out_of_the_garbage_collectors_sight():
    """Streamlit collects garbage after every run, a full pass over every tracked object; the start of a run freezes
    what is loaded by then, so that the collector does not walk torch's functions."""
    from attn_ui.page import freeze_loaded_modules

    freeze_loaded_modules()
    assert gc.get_freeze_count() > 100_000
    assert not any(tracked is torch.nn.functional.softmax for tracked in gc.get_objects())


def test_modules_loaded_by_a_run_are_frozen_at_the_next_and_a_runs_garbage_is_still_collected():
    """The first FlexAttention block mask imports torch._dynamo and sympy (over 100,000 objects, 30-75 ms of every
    later run's collection): the next run's start freezes them. Garbage the runs make is collected as before, and a
    run that loaded no module freezes nothing."""
    result = subprocess.run([sys.executable, "-c", FREEZE_AS_MODULES_LOAD], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["True"] * 4


def test_charts_are_compiled_without_checking_the_schema(monkeypatch):
    """Altair checks an object against the JSON schema as it is made (its debug mode) or set (``.properties()``),
    which took most of a rerun: the builders compile their charts without those checks (tests/test_charts.py checks
    every spec instead). Altair still checks the parameters it gathers at the top of a layered or faceted chart (a
    signed scale's bound, the thumbnails' selection), small objects."""
    import altair as alt

    from attn_ui.charts import build
    from tests.test_charts import CHARTS

    checked = []
    monkeypatch.setattr(alt.utils.schemapi, "validate_jsonschema", lambda spec, schema, **_: checked.append(schema))
    build._compiled.cache_clear()  # every chart compiled anew, not taken from the cache
    for make in CHARTS.values():
        make()
    parameters = {f"#/definitions/{kind}" for kind in ("VariableParameter", "SelectionParameter", "TopLevelSelectionParameter")}
    assert checked and {schema.get("$ref") for schema in checked} <= parameters


MAPPED_BLOCKS = """
import ctypes, sys
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in FIELDS.split()]
libc.mallinfo2.restype = MallInfo2

def mapped(size):  # whether a block of this size, allocated now, gets a mapping of its own
    before = libc.mallinfo2().hblks
    block = libc.malloc(size)
    own = libc.mallinfo2().hblks > before
    libc.free(block)
    return own

if sys.argv[1] == "app":
    import attn_ui.page
    from attn_ui.malloc import sweep_allocations
    attn_ui.page.tune_server()
libc.free(libc.malloc(8 << 20))  # freeing a large block is what makes glibc raise its threshold
seen = [mapped(1 << 20)]
if sys.argv[1] == "app":
    with sweep_allocations():
        libc.free(libc.malloc(8 << 20))
        seen.append(mapped(1 << 20))
    seen.append(mapped(1 << 20))
print(seen)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc; other C libraries keep their own policy")
def test_the_views_give_large_blocks_back_and_a_sweep_keeps_them():
    """glibc raises its mmap threshold when a large block is freed; the views' short-lived buffers then left holes in
    the sessions' arenas, and the server's memory grew 5-7 MB a session. The views fix the threshold at 128 kB (a
    1 MB block is mapped and returned when freed); a sweep lets its large tensors come from the arenas again."""

    def run(mode: str) -> str:
        return subprocess.run([sys.executable, "-c", MAPPED_BLOCKS, mode], capture_output=True, text=True, check=True).stdout

    assert run("plain").strip() == "[False]"  # glibc's own policy, after one large block was freed
    assert run("app").strip() == "[True, False, True]"  # the views; in a sweep; after it


def test_the_views_run_on_one_thread_and_a_sweep_on_every_core(monkeypatch):
    """Small tensors on two threads waited on each other when the cores were busy (the real model's forward pass:
    560 ms against 11 ms on one thread); the Cost view's sweep measures with torch's own number of threads."""
    from attn_core.device import DEFAULT_THREADS
    from attn_ui import measure
    from attn_ui.page import VIEWS, tune_server
    from tests.conftest import assert_clean, open_view

    threads_in_sweep = []

    def recording_sweep(settings, timer=None):
        threads_in_sweep.append(torch.get_num_threads())
        return iter(())

    lock = measure.sweep_lock()  # a sweep left running by an earlier test (one that gave up waiting) ends first
    assert lock.acquire(timeout=measure.WAIT_S)
    lock.release()
    monkeypatch.setattr(measure, "sweep", recording_sweep)
    # The view's first run sets the server up as on a fresh server: earlier tests of this process may have changed
    # torch's threads for new threads (a direct call of train gives the main thread's number back).
    tune_server.cache_clear()
    cost = next(view for view in VIEWS if view.label == "Cost")
    at = open_view(cost.path)
    assert threads_of_a_new_thread() == 1  # each run of a script is a new thread
    at.button(key="run").click().run()
    assert_clean(at)
    assert threads_in_sweep == [DEFAULT_THREADS] and threads_of_a_new_thread() == 1


def threads_of_a_new_thread() -> int:
    """torch's number of threads as a thread started now sees it (one that has run torch code keeps its own)."""
    seen = []
    thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    return seen[0]


# The server's listening socket as Streamlit 1.67 binds it (socket.socket(family): protocol 0, so asyncio leaves
# Nagle's algorithm on), and one connection accepted before the views' set-up ran; after it, all three and a
# connection accepted after it.
NO_DELAY = """
import socket, sys
def no_delay(sock):
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
listener = socket.socket(socket.AF_INET)
listener.bind(("127.0.0.1", 0))
listener.listen()
early_client = socket.create_connection(listener.getsockname())
early, _ = listener.accept()
seen = [no_delay(listener), no_delay(early)]
if sys.argv[1] == "app":
    import attn_ui.page
    attn_ui.page.tune_server()
late_client = socket.create_connection(listener.getsockname())
late, _ = listener.accept()
seen += [no_delay(listener), no_delay(early), no_delay(late)]
early_client.sendall(b"still open")
print(seen, early.recv(10))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="Linux hands a listener's TCP_NODELAY to the connections it accepts")
def test_the_views_turn_nagles_algorithm_off_on_the_servers_sockets():
    """Without TCP_NODELAY every response after the first on a connection waited about 40 ms for the browser's
    acknowledgement of its headers: a first visit's 140 scripts over 6 connections, and the websocket's messages.
    The views' set-up turns it on for the listener, which hands it on, and for the connections already open, which
    stay usable (the set-up worked on duplicates of their descriptors)."""

    def run(mode: str) -> str:
        return subprocess.run([sys.executable, "-c", NO_DELAY, mode], capture_output=True, text=True, check=True).stdout

    assert run("plain").strip() == "[0, 0, 0, 0, 0] b'still open'"  # asyncio's default on a socket of protocol 0
    assert run("app").strip() == "[0, 0, 1, 1, 1] b'still open'"


def test_the_app_does_not_watch_its_sources():
    """With a watcher, each new session's first run walked every loaded module (thousands, with torch) for files to
    watch, on the server's event loop: about 0.15 s of every new tab's first render. The benchmarks ran without one."""
    config = tomllib.loads((Path(__file__).resolve().parent.parent / ".streamlit" / "config.toml").read_text())
    assert config["server"]["fileWatcherType"] == "none"


def test_viewers_see_the_app_not_the_developer_toolbar():
    """Streamlit's default ("auto") shows its Deploy button and developer menu to a browser on localhost, on a slide
    too; "viewer" hides them and keeps the main menu with its theme switch. Read as Streamlit reads it, from the
    project's .streamlit/config.toml."""
    read = "from streamlit import config; print(config.get_option('client.toolbarMode'))"
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-c", read], cwd=root, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "viewer"


def test_the_numbers_pages_are_compared_with_do_not_depend_on_the_thread_count():
    """The server computes at one thread (page.tune_server), a test's direct call at torch's default: the forward
    passes the AppTest tests compare with a page (toy multi-head attention, MiniLM's attention) agree at 1 and 2
    threads within half of those tests' 1e-6 (a training run does not, whence attn_core.training's fixed threads)."""
    from attn_core import MiniLM, embed_tokens, multi_head_attention, multi_head_projections, sinusoidal
    from attn_core.device import torch_threads
    from attn_core.examples import COREFERENCE_SENTENCES
    from attn_core.text import tokenize

    model, tokens = MiniLM.load(), tokenize(COREFERENCE_SENTENCES[0])
    x = embed_tokens(tokens, 32, 0) + sinusoidal(len(tokens), 32)  # (T, C)
    runs = []
    for threads in (1, 2):
        with torch_threads(threads):
            heads = multi_head_attention(x, *multi_head_projections(32, 0), 4).heads.weights  # (h, T, T)
            runs.append((heads, model.run_texts(list(COREFERENCE_SENTENCES[:2])).weights(0)))  # (L, H, T, T)
    for one, two in zip(*runs, strict=True):
        torch.testing.assert_close(one, two, atol=5e-7, rtol=0)


PRELOAD = """
import gc
from attn_ui import startup
passes = []
gc.callbacks.append(lambda phase, info: passes.append(info["generation"]) if phase == "stop" else None)
startup.preload()
print(passes == [], gc.isenabled(), gc.get_freeze_count() > 100_000)
"""


def test_the_servers_preload_runs_no_collection_and_freezes_what_it_loaded():
    """The views' libraries load with the collector off (each pass over the pile of new objects cost a sixth of the
    import) and end out of its sight; the collector is on again after."""
    result = subprocess.run([sys.executable, "-c", PRELOAD], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["True"] * 3


def test_the_server_imports_the_views_libraries_before_anyone_visits():
    """``streamlit run streamlit_app.py`` serves the ``st.App`` in it, whose start imports torch and pandas (attn_ui.startup)
    while no browser has connected: the first visitor's page does not wait for them."""
    from tests.browser_support import app_server

    libraries = ("libtorch_cpu.so", "/pandas/_libs/")
    with app_server() as server:
        deadline = time.monotonic() + 60
        while not all(library in Path(f"/proc/{server.pid}/maps").read_text() for library in libraries):
            assert time.monotonic() < deadline, f"the server has not loaded {libraries} within 60 s of its start"
            time.sleep(0.1)
