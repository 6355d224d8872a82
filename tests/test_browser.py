"""The app in a real browser: a fresh server, deep links, charts drawn at a readable size.

Needs Chromium at /usr/bin/chromium (`apt-get install chromium`). Without it these tests are
skipped locally; CI sets REQUIRE_BROWSER=1 so that a missing browser fails instead.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from attn_ui.page import VIEWS
from tests.conftest import ROOT

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

if not CHROMIUM.exists():
    if os.environ.get("REQUIRE_BROWSER") == "1":
        raise RuntimeError(f"REQUIRE_BROWSER=1 but {CHROMIUM} is missing: apt-get install -y chromium")
    pytest.skip(f"no browser at {CHROMIUM}", allow_module_level=True)

sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "streamlit_app.py",
        "--server.headless=true",
        f"--server.port={port}",
        "--server.address=127.0.0.1",
    ]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if urllib.request.urlopen(f"{base}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def visit(browser, url: str):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(url)
    # Before its first run the app is also "notRunning": wait for the title the run draws, then for the run's end.
    page.wait_for_selector("h1", timeout=90_000)
    page.wait_for_selector(IDLE, timeout=90_000)
    return page


def test_home_page_links_to_every_view(server, browser):
    page = visit(browser, server)
    assert page.locator("[data-testid='stException']").count() == 0
    for view in VIEWS:  # links can be drawn a moment after the run ends on a cold server: wait for each
        page.wait_for_selector(f"a[href$='{view.url_path}']", state="attached", timeout=30_000)


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.label)
def test_each_view_renders_without_exception(server, browser, view):
    page = visit(browser, f"{server}/{view.url_path}")
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator("h1").count() >= 1


def test_shared_pipeline_link_shows_the_example(server, browser):
    page = visit(browser, f"{server}/Pipeline?preset=playing-outside&query=0")
    assert page.locator("[data-testid='stException']").count() == 0
    page.get_by_text("0.51·v(Playing) + 0.49·v(Outside) = [0.3357, 0.6014, 0.1438, 0.5453]").wait_for(timeout=30_000)
    cells = page.locator("[data-testid='stVegaLiteChart'] g.mark-rect path")
    cells.first.wait_for(timeout=30_000)
    # Heatmap cells are drawn at a readable size (Streamlit's theme once collapsed them to a line).
    for index in range(cells.count()):
        box = cells.nth(index).bounding_box()
        assert box and box["height"] >= 10 and box["width"] >= 10, box
    assert "preset=playing-outside" in page.url


def test_changing_a_control_updates_the_url(server, browser):
    page = visit(browser, f"{server}/Pipeline")
    page.locator("label").filter(has_text="Divide scores by √d_k").click()
    page.wait_for_selector(IDLE, timeout=60_000)
    page.wait_for_function("() => window.location.search.includes('scale=off')", timeout=10_000)
    assert page.locator("[data-testid='stException']").count() == 0
