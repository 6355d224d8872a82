"""Benchmark of the real model (all-MiniLM-L6-v2) on this machine.

Measures what the README promises:
- loading (locate the files, check the SHA-256, read the weights and tokenizer) once torch is imported;
- one forward pass over 32 tokens, keeping every layer's hidden states and every head's steps, with
  torch's default number of threads and with one (steadier when other processes share the cores);
- the resident memory of a real Streamlit server after a browser opened the Real model view
  (headless Chromium through Playwright; without them, a Python process that imported streamlit
  and torch and ran the model stands in, and the report says so).

Run from the repository root: ``python -m benchmarks.real_model`` (or ``make bench``).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
STAND_IN = (
    "import resource, streamlit, torch\n"
    "from attn_core import MiniLM\n"
    "MiniLM.load().run_texts(['The animal didn\\'t cross the street because it was too tired'])\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
)


def load_seconds(repeats: int = 5) -> list[float]:
    """Seconds to load the model: the first time with the import of attn_core (tokenizers, safetensors), then again."""
    start = time.perf_counter()
    from attn_core import MiniLM

    times = []
    for _ in range(repeats):
        MiniLM.load()
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
    return times


def forward_milliseconds(model, n_tokens: int = 32, repeats: int = 30) -> float:
    encoded = model.encode(["word " * (n_tokens - 2)])  # n_tokens pieces with [CLS] and [SEP]
    assert encoded.ids.shape == (1, n_tokens)
    model.run(encoded)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.run(encoded)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def rss_megabytes(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def server_megabytes() -> float:
    """RSS of a Streamlit server after a headless browser ran the Real model view."""
    from playwright.sync_api import sync_playwright

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.headless=true"]
    server = subprocess.Popen(
        [*command, f"--server.port={port}", "--server.address=127.0.0.1"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(60):
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--headless=new", "--no-sandbox"])
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/Real_model")
            page.wait_for_selector("[data-testid='stVegaLiteChart']", timeout=120_000)
            page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=120_000)
            megabytes = rss_megabytes(server.pid)
            browser.close()
        return megabytes
    finally:
        server.terminate()
        server.wait(timeout=30)


def stand_in_megabytes() -> float:
    result = subprocess.run([sys.executable, "-c", STAND_IN], cwd=ROOT, capture_output=True, text=True, check=True)
    return float(result.stdout.strip())


def main() -> None:
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs")
    loads = load_seconds()
    first, again = loads[0], statistics.median(loads[1:])
    print(f"load after import torch: first {first:.3f} s (import of attn_core included), then {again:.3f} s (target < 1 s)")
    from attn_core import MiniLM

    model = MiniLM.load()
    for threads in sorted({torch.get_num_threads(), 1}, reverse=True):
        torch.set_num_threads(threads)
        milliseconds = forward_milliseconds(model)
        print(f"forward pass, 32 tokens, every step kept, {threads} thread(s): median {milliseconds:.1f} ms (target < 100 ms)")
    if Path(CHROMIUM).exists():
        print(f"Streamlit server RSS after the Real model view ran: {server_megabytes():.0f} MB (target < 500 MB)")
    else:
        print(f"No browser here: peak RSS of a process with streamlit + torch + the model: {stand_in_megabytes():.0f} MB")


if __name__ == "__main__":
    main()
