"""``python -m benchmarks.cloud_check`` (``make cloud-check``): a rehearsal of a Streamlit Community Cloud deployment.

What Cloud does, done here:
1. a fresh environment from requirements.txt alone (no Makefile step, so no model package): ``uv pip install``, and
   ``pip install`` if uv fails;
2. the app started with the settings Cloud forces (runOnSave, fastReruns, no error details), pinned to one CPU;
3. every view opened in a real Chromium: no exception anywhere, and the Real model drawn from files downloaded from
   "the hub" on its first use.

Where this differs from Cloud, printed as it happens: PyTorch's page of CPU wheels and the Hugging Face hub are stand-ins
on 127.0.0.1 (benchmarks/stand_ins.py) when the real ones cannot be reached (this machine and CI reach PyPI only); the
stand-in page lists the local torch wheels (``PIP_FIND_LINKS``) and the stand-in hub serves the model files of this
checkout's own environment. Python is this one, where Cloud offers 3.12 by default.

Prints the installer used, the install's time and size, and the server's memory after the tour; exits 1 on a problem.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attn_core.real_model import files
from attn_ui.page import VIEWS
from benchmarks import stand_ins
from benchmarks.bench_interactions import status_mb
from tests.browser_support import ROOT, chromium, exception_texts, free_port, settle_layout, visit, wait_until_healthy

PYTORCH_HOST = "download.pytorch.org"
PYTORCH_PAGE = f"https://{PYTORCH_HOST}/whl/cpu/torch/"
HUB_HOST = "huggingface.co"
# Settings Community Cloud forces on every app, whatever .streamlit/config.toml says.
CLOUD_SETTINGS = ("--server.runOnSave=true", "--runner.fastReruns=true", "--client.showErrorDetails=false")
INSTALL_TIMEOUT_S = 900
HUB_PAUSE_S = 0.03  # after each MiB from the stand-in hub: the model's 90 MB take about 3 s, as over a real network
DOWNLOAD_MESSAGE = "downloads it from the Hugging Face hub"  # in the Real model's loading message (attn_ui/model.py)
# Notes in the page when the Real model's loading message shows, however briefly.
WATCH_DOWNLOAD_MESSAGE = f"""new MutationObserver(() => {{
    if (document.body && document.body.innerText.includes("{DOWNLOAD_MESSAGE}")) window.downloadMessageSeen = true;
}}).observe(document, {{subtree: true, childList: true, characterData: true}});"""


def reachable(host: str) -> bool:
    try:
        socket.create_connection((host, 443), timeout=3).close()
    except OSError:
        return False
    return True


def local_torch_wheels() -> list[Path]:
    folders = os.environ.get("PIP_FIND_LINKS", "").split()
    return sorted(wheel for folder in folders for wheel in Path(folder).glob("torch-*+cpu-*.whl"))


def install(environment: Path, requirements: Path) -> tuple[str, float]:
    """Install ``requirements`` into a new virtual environment, as Cloud does; the installer that succeeded and the seconds."""
    subprocess.run([sys.executable, "-m", "venv", environment], check=True)
    python = environment / "bin" / "python"
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    start = time.perf_counter()
    for installer, command in (
        ("uv", [uv, "pip", "install", "--no-cache", "--python", str(python), "-r", str(requirements)]),  # cold, as on Cloud
        ("pip", [str(python), "-m", "pip", "install", "-r", str(requirements)]),
    ):
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        if done.returncode == 0:
            return installer, time.perf_counter() - start
        print(f"{installer} failed:\n{done.stderr[-2000:]}", flush=True)
    raise SystemExit("neither uv nor pip could install requirements.txt")


def size_mb(folder: Path) -> float:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink()) / 1e6


def tour(base: str) -> list[str]:
    """Open every view in Chromium; the problems seen (none is a pass). The Real model must say that it downloads the
    model while it does, then draw its charts."""
    problems = []
    with chromium() as browser:
        for view in VIEWS:
            page = visit(browser, f"{base}/{view.url_path}", viewport=(1280, 720), init_script=WATCH_DOWNLOAD_MESSAGE)
            settle_layout(page, timeout_s=120)
            errors = page.locator("[data-testid='stAlertContentError']").all_inner_texts()
            charts = page.locator("[data-testid='stVegaLiteChart']").count()
            problems += [f"{view.label}: exception: {text}" for text in exception_texts(page)]
            problems += [f"{view.label}: error: {text[:300]}" for text in errors]
            if view.label == "Real model" and charts == 0:
                problems.append("Real model: no chart drawn, so no model")
            if view.label == "Real model" and not page.evaluate("() => window.downloadMessageSeen === true"):
                problems.append("Real model: no message while the model downloaded")
            print(f"  {view.label}: {charts} charts, {len(errors)} errors", flush=True)
            page.close()
    return problems


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="cloud-check-") as scratch:
        scratch = Path(scratch)
        requirements = (ROOT / "requirements.txt").read_text()
        with (
            stand_ins.serving(stand_ins.torch_page(local_torch_wheels())) as torch_base,
            stand_ins.serving(hub := stand_ins.hub(files.model_dir(), pause_s=HUB_PAUSE_S)) as hub_base,
        ):
            if not reachable(PYTORCH_HOST):
                print(f"{PYTORCH_HOST} cannot be reached: torch comes from a stand-in of {PYTORCH_PAGE} (local wheels)")
                requirements = requirements.replace(PYTORCH_PAGE, f"{torch_base}/whl/cpu/torch/")
            (scratch / "requirements.txt").write_text(requirements)
            installer, seconds = install(scratch / "env", scratch / "requirements.txt")
            size = size_mb(scratch / "env")
            print(f"installed by {installer} in {seconds:.0f} s: {size:.0f} MB", flush=True)

            env = {key: value for key, value in os.environ.items() if key not in (files.ENV_VAR, "HF_HUB_OFFLINE")}
            env["HF_HOME"] = str(scratch / "hf")  # an empty cache, as in a new container
            if not reachable(HUB_HOST):
                print(f"{HUB_HOST} cannot be reached: the model comes from a stand-in hub")
                env["HF_ENDPOINT"] = hub_base
            port = free_port()
            command = ["taskset", "-c", "0", str(scratch / "env" / "bin" / "python"), "-m", "streamlit", "run"]
            command += ["streamlit_app.py", "--server.headless=true", f"--server.port={port}", "--server.address=127.0.0.1"]
            server = subprocess.Popen([*command, *CLOUD_SETTINGS], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
            try:
                base = f"http://127.0.0.1:{port}"
                wait_until_healthy(base, server)
                started = status_mb(server.pid, "VmRSS")
                problems = tour(base)
                after = status_mb(server.pid, "VmRSS")
                weights = f"GET /{files.HUB_REPO}/resolve/{files.HUB_REVISION}/{files.WEIGHTS_FILE}"
                if "HF_ENDPOINT" in env and weights not in hub.requests:
                    problems.append("the Real model did not download its weights from the hub")
            finally:
                server.terminate()
                server.wait(timeout=30)
    print(f"server memory (RSS): {started:.0f} MB started, {after:.0f} MB after the tour of {len(VIEWS)} views")
    for problem in problems:
        print("PROBLEM:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
