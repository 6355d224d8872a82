"""How long the Scaling, Masking and Multi-head views take: the Monte Carlo alone, and whole reruns (of the view as
it opens, on its first section, and of its "All sections" tab).

Run: .venv/bin/python benchmarks/bench_views.py   (or `make bench`)
Target: a rerun of each view with default settings well under 1 s once its caches are warm.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from attn_core.scaling import dot_product_variance, softmax_saturation  # noqa: E402

VIEWS = ("pages/2_Scaling.py", "pages/3_Masking.py", "pages/4_Multi_head.py")
RERUNS = 5


def seconds(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    print(f"Monte Carlo, cold: variance {seconds(dot_product_variance):.3f} s, saturation {seconds(softmax_saturation):.3f} s")
    for view in VIEWS:
        for slide in ("1", "all"):  # the view as it opens (its first section), and its "All sections" tab
            at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
            at.query_params["slide"] = slide
            at.switch_page(view)
            first = seconds(at.run)  # imports torch, fills the caches
            reruns = [seconds(at.run) for _ in range(RERUNS)]
            assert not at.exception, [e.message for e in at.exception]
            print(
                f"{view}, slide={slide}: first run {first:.2f} s, "
                f"rerun median {statistics.median(reruns):.3f} s (max {max(reruns):.3f} s)"
            )


if __name__ == "__main__":
    main()
