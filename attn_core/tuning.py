"""The tiled kernel's tiles (a ``TilePlan``), measured on the machine that runs it and kept on disk.

Which (block_q, block_k), and how many bytes of scores one product holds, are fastest depends on the CPU's caches and
cores, so tiles picked on one machine can be slow on another (docs/performance.md has examples). ``tune`` times every
candidate of CANDIDATES against SDPA at SHAPE, for no mask and for a causal mask (the class of every masked call:
causal, window, any boolean mask), the runs interleaved so that a slow spell of the machine hits all of them, and
keeps the fastest candidate, or where others are as fast within the measurement's own noise, the one of them whose
products hold the fewest bytes (``choose``). The result is written to the user's cache directory, keyed by the CPU
model and its caches (one model name comes with different ones), the number of cores and torch's version: another
machine, or another torch, finds no entry and uses tiled.UNTUNED until it is tuned. The kernel reads no file: its
callers (the sweep, the Cost view, the benchmarks) pass ``current()`` in. ``python -m attn_core.bench --tune`` tunes
again; the Cost view tunes before its first sweep on a new machine.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import os
from collections.abc import Callable
from pathlib import Path

import torch
from torch.nn.functional import scaled_dot_product_attention as sdpa

from attn_core.device import cpu_caches, cpu_model
from attn_core.tiled import UNTUNED, TilePlan, Tiles, tiled_attention
from attn_core.timing import MIB, Spread, time_interleaved

# Tiles to try, without a mask (False) and under one (True); the first are UNTUNED's. A product of 8 MiB of scores
# (tile_bytes) is fast where the last-level cache holds it; some sizes are also tried at 2 MiB, for smaller caches.
CANDIDATES = {
    False: (UNTUNED.dense, *(Tiles(q, k, 8 * MIB) for q, k in ((512, 512), (512, 256), (256, 256), (2048, 256))),
            *(Tiles(q, k, 2 * MIB) for q, k in ((1024, 512), (512, 512), (1024, 256)))),
    True: (UNTUNED.masked, *(Tiles(q, k, 8 * MIB) for q, k in ((1024, 256), (2048, 128), (512, 128), (512, 256))),
           *(Tiles(q, k, 2 * MIB) for q, k in ((1024, 128), (1024, 256), (2048, 128)))),
}  # fmt: skip
SHAPE = (1, 8, 4096, 64)  # (B, H, T, d), float32: the shape of the Cost view's targets; about 15 s in all
ROUNDS = 3
CACHE_FILE = "tiled-blocks.json"


def machine_key() -> str:
    """What a tuning is valid for: the CPU model and its caches, the number of cores and torch's version."""
    caches = cpu_caches()
    return f"{cpu_model()}{f' ({caches})' if caches else ''} | {os.cpu_count()} cores | torch {torch.__version__}"


def cache_path() -> Path:
    """The tuning's file: in $ATTN_CACHE_DIR if set (the tests set it), else in the user's cache directory
    ($XDG_CACHE_HOME, else ~/.cache) under attention-explorer/."""
    user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attention-explorer"
    return Path(os.environ.get("ATTN_CACHE_DIR") or user_cache) / CACHE_FILE


@functools.cache
def tuned() -> TilePlan | None:
    """The plan tuned on this machine, or None if it has not been tuned (or its file is unreadable, or older than
    plans: it is then tuned again)."""
    try:
        plan = json.loads(cache_path().read_text())[machine_key()]["plan"]
        return TilePlan(Tiles(**plan["dense"]), Tiles(**plan["masked"]))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def current() -> TilePlan:
    """The plan to pass to ``tiled_attention`` on this machine: its tuned one, else UNTUNED."""
    return tuned() or UNTUNED


def tune(progress: Callable[[float, str], None] | None = None) -> TilePlan:
    """Time every candidate against SDPA on this machine, keep those ``choose`` picks on disk, and return them.
    ``progress(done, text)`` is told the share done (0 to 1) before each mask class. Masked candidates are timed
    with the dense tiles chosen first: masked attention joins whole tiles as wide as the dense block_k."""
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(*SHAPE, generator=generator) for _ in range(3))  # (B, H, T, d)
    chosen, fastest, typical = UNTUNED, {}, {}  # each candidate's fastest and median call over SDPA's
    for step, masked in enumerate((False, True)):
        kind = "masked" if masked else "dense"
        if progress is not None:
            progress(step / 2, f"Tuning the tiled kernel's blocks for this CPU, {'masked' if masked else 'no mask'}…")
        runs: dict[object, Callable[[], object]] = {"sdpa": functools.partial(sdpa, q, k, v, is_causal=masked)}
        for tiles in CANDIDATES[masked]:
            plan = dataclasses.replace(chosen, **{kind: tiles})
            runs[tiles] = functools.partial(tiled_attention, q, k, v, causal=masked, plan=plan)
        timed = time_interleaved(runs, dict.fromkeys(runs, 1), ROUNDS, reference="sdpa")
        sdpa_spread = timed.pop("sdpa").spread
        fastest[kind] = {tiles.label: round(result.spread.min / sdpa_spread.min, 3) for tiles, result in timed.items()}
        typical[kind] = {tiles.label: round(result.spread.median / sdpa_spread.median, 3) for tiles, result in timed.items()}
        chosen = dataclasses.replace(chosen, **{kind: choose({tiles: result.spread for tiles, result in timed.items()})})
    keep(chosen, {"ratio_to_sdpa": fastest, "median_ratio_to_sdpa": typical, "shape": SHAPE})
    return chosen


def choose(spreads: dict[Tiles, Spread]) -> Tiles:
    """The tiles to keep: the candidate with the fastest call, unless others are as fast within the noise (their
    fastest call beats its median call), and then of those the one whose products hold the fewest bytes of scores.
    Where the machine's cache is shared, its other tenants change how much of it a call gets from one minute to the
    next, and larger products lose the most when they get less (docs/performance.md, *A third AMD EPYC*): between
    candidates the tuning cannot tell apart, the smaller is the one that stays fast."""
    fastest = min(spreads, key=lambda tiles: spreads[tiles].min)
    ties = [tiles for tiles, spread in spreads.items() if spread.min <= spreads[fastest].median]
    return min(ties, key=lambda tiles: (tiles.tile_bytes, spreads[tiles].min))


def keep(plan: TilePlan, about: dict | None = None) -> None:
    """Write ``plan`` as this machine's tuning (with ``about`` it: how it was measured), beside other machines'."""
    path = cache_path()
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        entries = {}
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    entries[machine_key()] = {"plan": dataclasses.asdict(plan), "date": date, **(about or {})}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entries, indent=1) + "\n")
    tuned.cache_clear()
