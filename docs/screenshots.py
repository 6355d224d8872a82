"""The README's screenshots, taken from a fresh server in headless Chromium: `make screenshots`.

Also runs as `python -m docs.screenshots [FILE]` (one image) or `python docs/screenshots.py` from the repository root. It starts
its own app server in the background (stopped by its PID when done) and writes PNGs to docs/images/.
Needs Chromium at /usr/bin/chromium and the dev requirements (playwright).
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the project's packages importable
    sys.path.insert(0, str(ROOT))

from tests.browser_support import (  # noqa: E402
    SENTENCE,
    chromium,
    exception_texts,
    rerun,
    running_app,
    settle_layout,
    visit,
    wait_for_size_report,
)

IMAGES = ROOT / "docs" / "images"
WITH_SENTENCE = urlencode({"text": SENTENCE})
SHOTS = (  # file, address, window size, colour scheme, the heading to scroll to (None: the top)
    ("presenter-pipeline.png", "/Pipeline?present=on&slide=4", (1920, 1080), "light", None),
    ("presenter-pipeline-projector.png", f"/Pipeline?present=on&slide=4&{WITH_SENTENCE}", (1024, 576), "dark", None),
    ("dark-multi-head.png", f"/Multi_head?{WITH_SENTENCE}&slide=2", (1440, 900), "dark", "2 · Every head's attention"),
    ("light-pipeline.png", f"/Pipeline?{WITH_SENTENCE}&slide=4", (1920, 1080), "light", None),
    ("presenter-training.png", "/Training?present=on&slide=2", (1920, 1080), "light", None),
    ("presenter-positions.png", "/Positions?present=on&slide=4&map=real", (1920, 1080), "light", None),
    ("presenter-sinks.png", "/Real_model?present=on&slide=7", (1920, 1080), "dark", None),
    ("presenter-decoding.png", "/Decoding?present=on&slide=4", (1920, 1080), "light", None),
    (
        "presenter-exercise.png",
        "/Multi_head?present=on&slide=5&part=2&head=1&lesson=self-attention-in-one-lecture&lesson_step=13",
        (1024, 576),
        "light",
        None,
    ),
    ("presenter-studio.png", "/Masking?present=on&slide=7&studio_score=alibi&studio_t=16", (1920, 1080), "dark", None),
)
TRAINED = "/Training"  # its default settings are trained once, before the shots: a link to them then shows the run


def take(browser, url: str, path: Path, viewport: tuple[int, int], scheme: str, heading: str | None) -> None:
    """One screenshot of the window as a viewer sees it; refuses to save a page that shows a traceback."""
    page = visit(browser, url, viewport=viewport, color_scheme=scheme)
    try:
        if "present=on" in url:
            wait_for_size_report(page)  # a slide is drawn again once the window has reported its size
        settle_layout(page)
        if heading:
            page.get_by_role("heading", name=heading).evaluate("element => element.scrollIntoView()")
            settle_layout(page)
        if exception_texts(page):
            raise SystemExit(f"{url} shows an exception, no screenshot taken: {exception_texts(page)}")
        page.screenshot(path=str(path))
    finally:
        page.close()


def train(browser, url: str) -> None:
    """Press the Training view's Train button and wait for the run."""
    page = visit(browser, url)
    try:
        with rerun(page, timeout_s=180):
            page.get_by_role("button", name="Train").click()
    finally:
        page.close()


def main(only: str | None = None) -> None:
    """Every screenshot, or the one named ``only``."""
    IMAGES.mkdir(parents=True, exist_ok=True)
    with running_app() as base, chromium() as browser:
        train(browser, base + TRAINED)
        for name, address, viewport, scheme, heading in SHOTS:
            if only not in (None, name):
                continue
            take(browser, base + address, IMAGES / name, viewport, scheme, heading)
            print(f"wrote {(IMAGES / name).relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
