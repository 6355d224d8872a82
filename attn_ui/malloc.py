"""glibc malloc's mmap threshold: fixed while the views run, so that the server's memory does not creep; glibc's
largest while a Cost sweep times torch.

glibc raises its threshold (up to 32 MB) each time a large block is freed. From then on the views' large, short-lived
buffers (a chart's Arrow bytes, its pickle in a cache, a message to the browser) come from the arenas of the threads
that run the sessions, and leave holes there that later allocations only partly fill: in the memory sessions of
``benchmarks/bench_interactions.py`` the server's resident memory grew 5-7 MB a session while the memory in use stayed
flat. With a fixed 128 kB threshold every larger block gets a mapping of its own, returned to the system when freed.
(MALLOC_ARENA_MAX=2 in the environment does as well, but a process cannot set it for itself; malloc_trim freed
almost nothing.) A sweep's tensors of several MB (each call's output, SDPA's own buffers; the tiled kernel keeps its
working buffers) would each cost fresh pages at that threshold (docs/performance.md), so a sweep runs with the largest.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from attn_core.tiled import release_kept

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)
VIEWS_THRESHOLD = 128 * 1024  # bytes: glibc's own starting value, which a set threshold keeps glibc from raising
SWEEP_THRESHOLD = 32 * 1024 * 1024  # bytes: glibc's largest on 64-bit systems

_libc = ctypes.CDLL(None) if sys.platform == "linux" else None
_mallopt, _malloc_trim = (getattr(_libc, name, None) for name in ("mallopt", "malloc_trim"))  # None: not glibc


def set_mmap_threshold(size: int) -> bool:
    """From now on blocks of ``size`` bytes or more get a mapping of their own, and free memory of more than twice
    that at the top of a heap goes back to the system (glibc's own ratio); False where there is no glibc."""
    return _mallopt is not None and _mallopt(M_MMAP_THRESHOLD, size) == 1 and _mallopt(M_TRIM_THRESHOLD, 2 * size) == 1


@contextmanager
def sweep_allocations() -> Iterator[None]:
    """Inside the block (a sweep) large blocks come from malloc's arenas and stay there for reuse; after it, the
    views' threshold again, and what the sweep freed (the tiled kernel's kept buffers too) goes back to the system
    rather than into the views' buffers."""
    set_mmap_threshold(SWEEP_THRESHOLD)
    try:
        yield
    finally:
        release_kept()
        set_mmap_threshold(VIEWS_THRESHOLD)
        if _malloc_trim is not None:
            _malloc_trim(0)
