"""Shared test helpers: AppTest runs that start from streamlit_app.py, and chart data readers."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

# The Training view refuses a pair of runs that its first steps show would take over its budget on this machine at
# this moment; beside the suite's other process, its browser and its server, the view's default run came to that on a
# slow host. A test about what a run draws or answers must not depend on the host's load: the tests, and the servers
# they start, run with no budget (read when attn_ui.training_runs is imported); the refusal's own test sets one.
os.environ["ATTN_TRAINING_BUDGET_S"] = "inf"

import pyarrow as pa
import pytest
import streamlit as st
import torch
from streamlit.components.v2 import manifest_scanner
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest, local_script_runner

from attn_core import tuning
from attn_core.tiled import UNTUNED

# Each AppTest scans every installed package's metadata for Streamlit components when it first runs (50 ms here, a
# thread per core), where a server scans once at its start: the tests' thousands of AppTests spent a quarter of their
# CPU time on it. The packages do not change while the tests run.
manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)

# Each AppTest compiles the pages it runs anew (a ScriptCache of its own: the source parsed, Streamlit's magic added,
# compiled), where a server compiles each once: 13% of the fuzz walks' CPU time. Compiled once per source here.
_compile_page = ScriptCache.get_bytecode


@functools.cache
def _compiled_page(path: str, source: bytes):
    return _compile_page(ScriptCache(), path)


ScriptCache.get_bytecode = lambda _, path: _compiled_page(os.path.abspath(path), Path(path).read_bytes())


def _wait_for_the_run(runner: local_script_runner.LocalScriptRunner, timeout: float = 3) -> None:
    """AppTest's wait for a run, without its poll: Streamlit's looks through all the run's events every millisecond,
    taking the GIL from the run each time (8% of the fuzz walks' CPU time). The run's thread ends with the run."""
    runner._script_thread.join(timeout)
    if runner._script_thread.is_alive():
        runner.request_stop()
        runner.join()
        raise RuntimeError(f"AppTest script run timed out after {timeout}(s)")


local_script_runner.require_widgets_deltas = _wait_for_the_run

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "streamlit_app.py")
TIMEOUT = 60  # seconds; the first run imports torch

# `make test` runs the tests in as many processes as the machine has cores (pytest-xdist): each process then computes,
# and has the servers it starts compute, on one torch thread, so that the processes share the cores rather than each
# spreading its torch work over all of them.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)

# The tiled kernel's blocks are tuned per machine and kept in a cache directory (attn_core.tuning). The tests, and the
# servers they start, use a fresh one holding tiled.UNTUNED as this machine's tuning: every test sees the same tiles
# whatever a developer's machine has tuned, and no Cost sweep stops to tune first.
os.environ["ATTN_CACHE_DIR"] = tempfile.mkdtemp(prefix="attn-cache-")
tuning.keep(UNTUNED, {"note": "written by tests/conftest.py"})


def pytest_unconfigure(config):
    """Each test process removes its cache directory when it ends."""
    shutil.rmtree(os.environ["ATTN_CACHE_DIR"], ignore_errors=True)


def pytest_collection_modifyitems(items):
    """The browser tests first. They mostly wait for a page while Chromium draws it, the others mostly compute:
    pytest-xdist's worksteal hands each process a contiguous share of this order (then lets it take what another has
    left), so one process starts on the browser tests while the other computes beside it."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/test_browser"))


@pytest.fixture(scope="session")
def server():
    """The browser tests' app server, one per test process and shared by their modules (starting one takes a second
    of CPU, and its first visit imports torch); a module whose tests need a server of their own (the lessons' walks)
    defines its own ``server``."""
    from tests.browser_support import running_app

    with running_app() as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for a module's tests, its pages used again (browser_support.Pages); one per module, as
    Playwright's synchronous API holds an event loop while it runs, which tests of the asyncio protocol client
    (tests/test_classroom.py) cannot share."""
    from tests.browser_support import Pages, chromium

    with chromium() as launched:
        yield Pages(launched)


@pytest.fixture(autouse=True)
def fresh_caches():
    """Caches outlive AppTest instances in one process; each test starts clean."""
    st.cache_data.clear()
    st.cache_resource.clear()


def open_view(page: str | None = None, **query: str) -> AppTest:
    """Run the app as a browser would: from streamlit_app.py, optionally opening ``page``
    (e.g. "pages/1_Pipeline.py") with URL query parameters, as a shared link does. A view opens on its "All
    sections" (``slide=all``), so that a test sees every section, unless ``query`` names a slide."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in ({"slide": "all"} | query if page is not None else query).items():
        at.query_params[key] = value
    if page is not None:
        at.switch_page(page)
    return at.run()


def assert_clean(at: AppTest) -> None:
    """No traceback reached the user."""
    assert not at.exception, [e.message for e in at.exception]


def chart_frames(at: AppTest) -> list[list[dict]]:
    """Per chart on the page, the rows of every dataset it draws."""
    charts = []
    for chart in at.get("vega_lite_chart"):
        rows = []
        for dataset in chart.proto.datasets:
            rows += pa.ipc.open_stream(dataset.data.data).read_all().to_pylist()
        charts.append(rows)
    return charts


def chart_headings(at: AppTest) -> list[str]:
    """Per chart on the page, its title and subtitle lines, one per line."""
    headings = []
    for chart in at.get("vega_lite_chart"):
        title = json.loads(chart.proto.spec).get("title", "")
        headings.append("\n".join([title["text"], *title.get("subtitle", [])]) if isinstance(title, dict) else title)
    return headings


def open_all(at: AppTest, kind: str, key: str | None = None) -> AppTest:
    """Open every lazy ``kind`` block ("expander" or "popover", made with a key and ``on_change="rerun"``), or the
    one with this key, as a click does: through its state; then rerun."""
    for block in at.get(kind):
        proto = block.proto.popover if kind == "popover" else block.proto
        block_key = proto.id.split("-", 2)[2] if proto.id else None  # ids read "$$ID-<hash>-<key>"
        if block_key and key in (None, block_key):
            at.session_state[block_key] = True
    return at.run()


def texts(at: AppTest, kind: str) -> list[str]:
    """The text of every element of one kind (e.g. "info", "warning", "code", "markdown")."""
    return [element.value for element in at.get(kind)]


def shown(markdown: str) -> str:
    """What a reader sees of Markdown text: its backslash escapes and invisible word joiners (inputs.escape_markdown's)
    taken off."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def heatmap_values(at, n_rows: int, n_cols: int) -> list[torch.Tensor]:
    """Every heatmap of the given size on the page, as a matrix (masked cells NaN)."""
    found = []
    for rows in chart_frames(at):
        if rows and "row" in rows[0] and len(rows) == n_rows * n_cols:
            matrix = torch.full((n_rows, n_cols), float("nan"), dtype=torch.float64)
            for cell in rows:
                if cell["value"] is not None:
                    matrix[cell["row"], cell["col"]] = cell["value"]
            found.append(matrix)
    return found
