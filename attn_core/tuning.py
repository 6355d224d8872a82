"""The tiled kernel's block sizes, measured on the machine that runs it and kept on disk.

Which (block_q, block_k) is fastest depends on the CPU's caches and cores, so blocks picked on one machine can be
slow on another (docs/performance.md has an example). ``tune`` times every candidate of CANDIDATES against SDPA at SHAPE, for no
mask and for a causal mask (the class of every masked call: causal, window, any boolean mask), the runs interleaved
so that a slow spell of the machine hits all of them, and keeps the candidate with the fastest call relative to
SDPA's. The result is written to the user's cache directory, keyed by the CPU model, the number of cores and torch's
version: another machine, or another torch, finds no entry and uses tiled.BLOCKS until it is tuned.
``python -m attn_core.bench --tune`` tunes again; the Cost view tunes before its first sweep on a new machine.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
from collections.abc import Callable
from pathlib import Path

import torch
from torch.nn.functional import scaled_dot_product_attention as sdpa

from attn_core.device import cpu_model
from attn_core.tiled import BLOCKS, tiled_attention
from attn_core.timing import time_interleaved

# (block_q, block_k) to try, by whether a mask is applied; the first is tiled.BLOCKS's.
CANDIDATES = {
    False: (BLOCKS[False], (512, 512), (512, 256), (256, 256), (2048, 256)),
    True: (BLOCKS[True], (1024, 256), (2048, 128), (512, 128), (512, 256)),
}
SHAPE = (1, 8, 4096, 64)  # (B, H, T, d), float32: the shape of the Cost view's targets; about 10 s in all
ROUNDS = 3
CACHE_FILE = "tiled-blocks.json"

Blocks = dict[bool, tuple[int, int]]  # by "masked": (block_q, block_k)


def machine_key() -> str:
    """What a tuning is valid for: the CPU model, the number of cores and torch's version."""
    return f"{cpu_model()} | {os.cpu_count()} cores | torch {torch.__version__}"


def cache_path() -> Path:
    """The tuning's file: in $ATTN_CACHE_DIR if set (the tests set it), else in the user's cache directory
    ($XDG_CACHE_HOME, else ~/.cache) under attention-explorer/."""
    user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attention-explorer"
    return Path(os.environ.get("ATTN_CACHE_DIR") or user_cache) / CACHE_FILE


@functools.cache
def tuned() -> Blocks | None:
    """The blocks tuned on this machine, or None if it has not been tuned (or its file is unreadable)."""
    try:
        entry = json.loads(cache_path().read_text()).get(machine_key())
        return {False: tuple(entry["blocks"]["none"]), True: tuple(entry["blocks"]["masked"])}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def tune(progress: Callable[[float, str], None] | None = None) -> Blocks:
    """Time every candidate against SDPA on this machine, keep the fastest on disk, and return them.
    ``progress(done, text)`` is told the share done (0 to 1) before each mask class."""
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(*SHAPE, generator=generator) for _ in range(3))  # (B, H, T, d)
    chosen, ratios = {}, {}
    for step, masked in enumerate((False, True)):
        if progress is not None:
            progress(step / 2, f"Tuning the tiled kernel's blocks for this CPU, {'masked' if masked else 'no mask'}…")
        runs: dict[object, Callable[[], object]] = {"sdpa": functools.partial(sdpa, q, k, v, is_causal=masked)}
        for block_q, block_k in CANDIDATES[masked]:
            runs[block_q, block_k] = functools.partial(tiled_attention, q, k, v, causal=masked, block_q=block_q, block_k=block_k)
        timed = time_interleaved(runs, dict.fromkeys(runs, 1), ROUNDS, reference="sdpa")
        sdpa_s = timed.pop("sdpa").spread.min
        ratios[masked] = {f"{bq}x{bk}": round(result.spread.min / sdpa_s, 3) for (bq, bk), result in timed.items()}
        chosen[masked] = min(timed, key=lambda blocks: timed[blocks].spread.min)
        if not masked:  # kept at once: masked attention joins whole tiles as wide as the no-mask block (tiled.whole_tile_keys)
            keep({False: chosen[False], True: (tuned() or BLOCKS)[True]})
    keep(chosen, {"ratio_to_sdpa": {"none": ratios[False], "masked": ratios[True]}, "shape": SHAPE})
    return chosen


def keep(blocks: Blocks, about: dict | None = None) -> None:
    """Write ``blocks`` as this machine's tuning (with ``about`` it: how they were measured), beside other machines'."""
    path = cache_path()
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        entries = {}
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    entries[machine_key()] = {"blocks": {"none": blocks[False], "masked": blocks[True]}, "date": date, **(about or {})}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entries, indent=1) + "\n")
    tuned.cache_clear()
