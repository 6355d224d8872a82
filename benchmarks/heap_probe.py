"""The app's server with a probe of its heap, for the memory sessions of ``benchmarks/bench_interactions.py``.

``python -m benchmarks.heap_probe run streamlit_app.py [streamlit's options]`` serves the app as ``streamlit run``
does; on SIGUSR1 the server writes what it holds to ``report_path(pid)``: the bytes glibc's malloc has handed out
and not got back (``in_use_mb``, its arenas' and its own mappings'), the free bytes its arenas keep (``free_mb``),
and what Python's own allocator, which malloc does not see, has handed out to small objects: its blocks
(``python_blocks``) and their bytes (``python_mb``); ``kept_mb`` is what the two allocators have handed out
together: what the process keeps, leaving out the free space between the blocks.

Resident memory alone cannot tell a server that keeps more (a leak, a cache without a bound) from an allocator whose
arenas, one per thread up to 8 a core, hold more free space between their blocks; these figures can.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import sys
import tempfile
import time
from pathlib import Path

MALLINFO2_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
MB = 2**20


class MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (malloc.h, glibc 2.33 and later)."""

    _fields_ = [(name, ctypes.c_size_t) for name in MALLINFO2_FIELDS]


def report_path(pid: int) -> Path:
    return Path(tempfile.gettempdir()) / f"attn-explorer-heap-{pid}.json"


def python_allocated_mb() -> float | None:
    """The bytes in the blocks Python's small-object allocator has handed out, as ``sys._debugmallocstats`` prints
    them (to the process's standard error, redirected to a file for the moment)."""
    with tempfile.TemporaryFile() as stats:
        sys.stderr.flush()
        stderr = os.dup(2)
        try:
            os.dup2(stats.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(stderr, 2)
            os.close(stderr)
        stats.seek(0)
        found = re.search(rb"# bytes in allocated blocks *= *([\d,]+)", stats.read())
    return int(found[1].replace(b",", b"")) / MB if found else None


def heap() -> dict:
    """This process's heap now; without glibc (or before 2.33) only Python's figures."""
    figures = {"python_blocks": sys.getallocatedblocks(), "python_mb": python_allocated_mb()}
    mallinfo2 = getattr(ctypes.CDLL(None), "mallinfo2", None) if sys.platform == "linux" else None
    if mallinfo2 is not None:
        mallinfo2.restype = MallInfo2
        info = mallinfo2()
        figures |= {"in_use_mb": (info.uordblks + info.hblkhd) / MB, "free_mb": info.fordblks / MB}
        if figures["python_mb"] is not None:
            figures["kept_mb"] = figures["in_use_mb"] + figures["python_mb"]  # what both allocators have handed out
    return figures


def _report(signum: int, frame: object) -> None:
    """SIGUSR1's handler: the report, written whole (a reader never sees half of it)."""
    path = report_path(os.getpid())
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(heap()))
    partial.replace(path)


def read(pid: int, timeout_s: float = 10) -> dict | None:
    """The heap of the server ``pid`` started by this module (None if it does not answer in time)."""
    path = report_path(pid)
    path.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)
    figures = json.loads(path.read_text())
    path.unlink()
    return figures


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _report)
    from streamlit.web import cli

    sys.argv[0] = "streamlit"
    sys.exit(cli.main())
