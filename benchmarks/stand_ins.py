"""Stand-ins, on 127.0.0.1, for the two servers a Streamlit Community Cloud deployment downloads from: the Hugging Face
hub (the real model's files) and PyTorch's page of CPU torch wheels. Tests and ``make cloud-check`` use them, so that
nothing reaches the internet, and count the requests they answer.
"""

from __future__ import annotations

import hashlib
import http.server
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from attn_core.real_model import files

MIB = 2**20


class Answers(http.server.BaseHTTPRequestHandler):
    """Serves ``found(path)``: a file, HTML text, or None for 404; records every request as "METHOD path"."""

    requests: list[str]
    pause_s = 0.0  # seconds after each MiB sent: a slow network, so that a download's progress message can be seen

    def found(self, path: str) -> Path | str | None:
        raise NotImplementedError

    def headers_for(self, path: str) -> dict[str, str]:
        return {}

    def _answer(self, with_body: bool) -> None:
        self.requests.append(f"{self.command} {self.path}")
        found = self.found(self.path)
        body = b"" if found is None else found.encode() if isinstance(found, str) else found.read_bytes()
        self.send_response(404 if found is None else 200)
        for name, value in ({} if found is None else self.headers_for(self.path)).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for start in range(0, len(body) if with_body else 0, MIB):
            self.wfile.write(body[start : start + MIB])
            time.sleep(self.pause_s)

    def do_HEAD(self):  # noqa: N802 (the name http.server calls)
        self._answer(with_body=False)

    def do_GET(self):  # noqa: N802
        self._answer(with_body=True)

    def log_message(self, *args):
        pass


def hub(model_folder: Path, pause_s: float = 0.0) -> type[Answers]:
    """The two requests hf_hub_download makes per file of the pinned revision: HEAD for its metadata, GET for its bytes
    (``pause_s`` after each MiB)."""
    pattern = rf"/{files.HUB_REPO}/resolve/{files.HUB_REVISION}/([\w.]+)"

    class Hub(Answers):
        requests = []

        def found(self, path: str) -> Path | None:
            match = re.fullmatch(pattern, path)
            return model_folder / match[1] if match and match[1] in files.REQUIRED_FILES else None

        def headers_for(self, path: str) -> dict[str, str]:
            etag = hashlib.sha256(self.found(path).read_bytes()).hexdigest()
            return {"X-Repo-Commit": files.HUB_REVISION, "ETag": f'"{etag}"'}

    Hub.pause_s = pause_s
    return Hub


def torch_page(wheels: list[Path]) -> type[Answers]:
    """PyTorch's CPU torch page (``/whl/cpu/torch/``, a list of links) and the wheels it links to, from local files."""
    by_name = {wheel.name: wheel for wheel in wheels}

    class TorchPage(Answers):
        requests = []

        def found(self, path: str) -> Path | str | None:
            if path.rstrip("/") == "/whl/cpu/torch":
                links = "".join(f'<a href="/whl/cpu/{quote(name)}">{name}</a><br/>\n' for name in by_name)
                return f"<!DOCTYPE html>\n<html><body><h1>Links for torch</h1>\n{links}</body></html>\n"
            name = path.removeprefix("/whl/cpu/").replace("%2B", "+")
            return by_name.get(name)

    return TorchPage


@contextmanager
def serving(handler: type[Answers]) -> Iterator[str]:
    """Serve ``handler`` on a free port of 127.0.0.1 in a thread; yields its base URL, then stops it."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
