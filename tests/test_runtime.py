"""What keeps each run of the app cheap on the server, checked by mechanism (the timings are in the benchmarks)."""

from __future__ import annotations

import gc
import subprocess
import sys

import torch


def test_the_loaded_modules_are_out_of_the_garbage_collectors_sight():
    """Streamlit collects garbage after every run; a full pass over torch's objects took 95 ms of each redraw.
    Importing the page module freezes what is loaded by then: the collector no longer tracks torch's functions."""
    import attn_ui.page  # noqa: F401  (freezes on import)

    assert gc.get_freeze_count() > 100_000
    assert not any(tracked is torch.nn.functional.softmax for tracked in gc.get_objects())


def test_the_app_does_not_import_altair():
    """Charts are plain Vega-Lite specs; importing Altair took half a second of the server's start."""
    imports = "import sys, attn_ui.page, attn_ui.steps, attn_ui.measure, attn_ui.model; print('altair' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", imports], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
