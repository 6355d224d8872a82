"""The Streamlit side of a cost sweep: one sweep at a time per server, with a progress bar.

Timings taken while another session's sweep shares the cores would be wrong for both, so a lock
shared by every session (``st.cache_resource``) lets one sweep run; a second waits, saying so.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import streamlit as st
import torch

from attn_core.sweep import Point, Progress, Settings, Stopped, sweep

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
            st.error(f"Gave up after waiting {WAIT_S:g} s for the other sweep to finish. Press **Run sweep** to try again.")
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
