"""The Streamlit side of a cost sweep: one sweep at a time per server, with a progress bar; and the curves and
slopes of measured points (this server's and the shipped reference results) as the Cost view draws them.

Timings taken while another session's sweep shares the cores would be wrong for both, so a lock
shared by every session (``st.cache_resource``) lets one sweep run; a second waits, saying so.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import streamlit as st
import torch

from attn_core.sweep import Point, Progress, Settings, Stopped, fits, sweep

MEASURE = "Measure on this server"  # the button that starts a sweep
WAIT_S = 120.0  # longest wait for another session's sweep (its time budget, plus its last length's overrun)


@st.cache_resource
def sweep_lock() -> threading.Lock:
    """The server's one lock for sweeps."""
    return threading.Lock()


@dataclass(frozen=True)
class Measured:
    """What one sweep measured, and for which settings."""

    settings: Settings
    points: tuple[Point, ...]
    stopped: str | None  # why it ended early, or None


def run_sweep(settings: Settings) -> Measured | None:
    """Run ``settings``' sweep with a progress bar, after any other session's sweep; None if that wait timed out."""
    lock = sweep_lock()
    if not lock.acquire(blocking=False):
        st.info("Another sweep is running on this server; this one waits for it, so the two do not share the cores…")
        start = time.perf_counter()
        if not lock.acquire(timeout=WAIT_S):
            st.error(f"Gave up after waiting {WAIT_S:g} s for the other sweep to finish. Press **{MEASURE}** to try again.")
            return None
        st.caption(f"Waited {time.perf_counter() - start:.1f} s for the other sweep.")
    bar = st.progress(0.0, text="Planning…")
    points, stopped = [], None
    try:
        for event in sweep(settings):
            if isinstance(event, Progress):
                bar.progress(event.done, text=event.text)
            elif isinstance(event, Point):
                points.append(event)
            elif isinstance(event, Stopped):
                stopped = event.message
    except (MemoryError, torch.OutOfMemoryError) as error:  # the estimate fell short, or others use the memory
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        stopped = f"Stopped: the machine ran out of memory ({first_line}). Lower the memory budget or the longest T."
    finally:
        lock.release()
    bar.empty()
    return Measured(settings, tuple(points), stopped)


def _runs(sources: dict[str, list[Point]]) -> dict[tuple[str, str, str], list[Point]]:
    """(source, method, mask) -> its points by T."""
    runs: dict[tuple[str, str, str], list[Point]] = {}
    for source, points in sources.items():
        for point in sorted(points, key=lambda p: p.T):
            runs.setdefault((source, point.method, point.mask), []).append(point)
    return runs


def _name(source: str, method: str, mask: str, masks: set[str]) -> str:
    """A curve's name: the method, its mask where a source has several, and "(reference)" for shipped results."""
    under = f" {mask}" if len(masks) > 1 else ""
    return f"{method}{under}" + (" (reference)" if source == "reference" else "")


def result_curves(sources: dict[str, list[Point]], field: str) -> dict[str, tuple[list[int], list[float]]]:
    """One curve of ``field`` (a Point field) against T per source, method and mask."""
    masks = {source: {p.mask for p in points} for source, points in sources.items()}
    return {
        _name(source, method, mask, masks[source]): ([p.T for p in rows], [getattr(p, field) for p in rows])
        for (source, method, mask), rows in _runs(sources).items()
    }


def _slope(fit) -> str:
    return "—" if math.isnan(fit.slope) else f"{fit.slope:.2f}" + ("" if math.isnan(fit.stderr) else f" ± {fit.stderr:.2f}")


def slope_rows(sources: dict[str, list[Point]]) -> list[dict[str, str]]:
    """The fitted slopes of every run of every source, and what they were fitted on, as table rows."""
    rows = []
    for source, points in sources.items():
        for (method, mask), fit in fits(points).items():
            lengths = f"{fit.lengths[0]:,} … {fit.lengths[-1]:,}" if len(fit.lengths) > 1 else "too few clean lengths"
            rows.append(
                {
                    "results": source,
                    "method": method,
                    "mask": mask,
                    "slope of time": _slope(fit.time),
                    "slope of peak memory": _slope(fit.memory),
                    "fitted on T": lengths,
                    "left out (noisy)": ", ".join(f"{t:,}" for t in fit.noisy) or "none",
                }
            )
    return rows
