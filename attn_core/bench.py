"""``python -m attn_core.bench``: the Cost view's measurements from the command line.

Prints a table (``--json``: one record per point with method, mask, T, min_ms, median_ms, iqr_ms, gflops,
pct_of_matmul, noisy, peak_mib and more); ``--T 256 512 1024`` chooses the lengths, ``--masks none causal
window:256`` the masks. ``python -m attn_core.bench --reference`` measures the reference results the Cost view
draws at once (REFERENCE_SETTINGS) and writes them, with the machine, to ``attn_core/reference_results.json``;
``--tune`` measures the tiled kernel's block sizes on this machine again (attn_core.tuning).
See ``python -m attn_core.bench --help``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch

from attn_core.device import available_devices, cpu_caches, cpu_model
from attn_core.masks import Mask
from attn_core.sweep import (
    DEFAULT_LENGTHS,
    DEFAULT_METHODS,
    DEFAULT_TIME_BUDGET,
    DEFAULT_WINDOW,
    MASK_FORMS,
    METHODS,
    TABLE_COLUMNS,
    Point,
    Settings,
    Skipped,
    Stopped,
    describe,
    fits,
    sweep,
    table_row,
)
from attn_core.timing import DTYPES, GIB
from attn_core.tuning import cache_path, current, machine_key, tune

REFERENCE_FILE = Path(__file__).with_name("reference_results.json")
REFERENCE_COMMAND = "python -m attn_core.bench --reference"
# The Cost view's default shape (B=1, H=8, d=64, float32) from T=128 to 4,096, every method under each mask of its
# menu with the view's default sizes.
REFERENCE_SETTINGS = Settings(
    lengths=tuple(2**p for p in range(7, 13)),
    repeats=5,
    masks=tuple(
        Mask(kind, sizes).format()
        for kind, sizes in (
            ("none", ()),
            ("causal", ()),
            ("window", (DEFAULT_WINDOW,)),
            ("documents", (4,)),
            ("prefix", (256,)),
            ("global", (DEFAULT_WINDOW, 16)),
        )
    ),
    time_budget=3600.0,
)


def format_table(points: Sequence[Point]) -> str:
    """The points as aligned text columns."""
    rows = [list(TABLE_COLUMNS)] + [list(table_row(point).values()) for point in points]
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS))]
    return "\n".join("  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows)


def record(point: Point, settings: Settings) -> dict:
    """A point as a JSON record, with the settings it was measured with."""
    context = {key: getattr(settings, key) for key in ("batch", "heads", "d_head", "dtype", "device", "repeats")}
    return {**asdict(point), **context, "causal": point.mask != "none", "threads": torch.get_num_threads()}


def machine() -> dict:
    """The machine a measurement runs on, as the benchmarks record it."""
    return {
        "cpu": cpu_model(),
        "caches": cpu_caches(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average": [round(load, 2) for load in os.getloadavg()],  # 1, 5 and 15 minutes, before measuring
    }


@dataclass(frozen=True)
class Reference:
    """Results measured once on a named machine and shipped with attn_core."""

    machine: dict  # cpu, cores, torch_threads, torch, python, date, load_average, command
    settings: dict  # batch, heads, d_head, dtype, device, repeats, lengths, masks
    points: tuple[Point, ...]


def reference_results(path: Path = REFERENCE_FILE) -> Reference:
    """The shipped reference results (``REFERENCE_COMMAND`` writes them)."""
    data = json.loads(path.read_text())
    names = {field.name for field in fields(Point)}
    points = tuple(Point(**{key: value for key, value in row.items() if key in names}) for row in data["records"])
    return Reference(data["machine"], data["settings"], points)


def measure_reference(path: Path = REFERENCE_FILE) -> None:
    """Measure REFERENCE_SETTINGS here and write them with the machine to ``path``."""
    settings, about = dataclasses.replace(REFERENCE_SETTINGS, tiles=current()), {**machine(), "command": REFERENCE_COMMAND}
    print(describe(settings), file=sys.stderr)
    records = []
    for event in sweep(settings):
        if isinstance(event, Point):
            records.append(record(event, settings))
            print(format_table([event]).splitlines()[1], file=sys.stderr, flush=True)
        elif isinstance(event, Skipped | Stopped):
            print(event.message, file=sys.stderr)
    names = ("batch", "heads", "d_head", "dtype", "device", "repeats", "lengths", "masks")
    data = {"machine": about, "settings": {key: getattr(settings, key) for key in names}, "records": records}
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {len(records)} records to {path}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attn_core.bench", description="Time and memory of attention for growing T.")
    parser.add_argument("--T", type=int, nargs="+", default=list(DEFAULT_LENGTHS), help="sequence lengths")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--d-head", type=int, default=64)
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32")
    parser.add_argument("--causal", action="store_true", help="the same as --masks causal")
    parser.add_argument("--masks", nargs="+", default=[], help=f"masks to run each method under: {MASK_FORMS}")
    parser.add_argument("--device", default="cpu", help=f"one of {', '.join(available_devices())}")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(DEFAULT_METHODS))
    parser.add_argument("--memory-gib", type=float, default=0.0, help="memory budget; default 2 GiB on CPU, half the free GPU's")
    parser.add_argument("--time-budget", type=float, default=DEFAULT_TIME_BUDGET, help="seconds")
    parser.add_argument("--json", action="store_true", help="print one JSON record per point")
    parser.add_argument("--reference", action="store_true", help=f"measure the reference results into {REFERENCE_FILE.name}")
    parser.add_argument("--tune", action="store_true", help="measure the tiled kernel's block sizes on this machine again")
    args = parser.parse_args(argv)
    if args.tune:
        plan = tune(progress=lambda done, text: print(text, file=sys.stderr, flush=True))
        print(f"tuned for {machine_key()}: no mask {plan.dense.label}, masked {plan.masked.label}; kept in {cache_path()}")
        return 0
    if args.reference:
        measure_reference()
        return 0
    try:
        settings = Settings(
            args.batch, args.heads, args.d_head, args.dtype, args.causal, args.device, tuple(args.T), args.repeats,
            tuple(args.methods), int(args.memory_gib * GIB), args.time_budget, tuple(args.masks), current(),
        )  # fmt: skip
    except ValueError as problem:
        parser.error(str(problem))
    points = []
    for event in sweep(settings):
        if isinstance(event, Point):
            points.append(event)
            if args.json:
                print(json.dumps(record(event, settings)), flush=True)
        elif isinstance(event, Skipped | Stopped):
            print(event.message, file=sys.stderr)
    if not args.json and points:
        print(describe(settings), "FLOPs = 4·B·H·T²·d" + (" / 2 (causal)" if settings.causal else ""), sep="\n")
        print(format_table(points))
        for (method, mask), fit in fits(points).items():
            print(
                f"{method} ({mask}): log-log slope of time {fit.time.slope:.2f} ± {fit.time.stderr:.2f} "
                f"over T={', '.join(f'{t:,}' for t in fit.lengths) or '—'}"
                + (f" (noisy, left out: {', '.join(f'{t:,}' for t in fit.noisy)})" if fit.noisy else "")
                + f", of peak memory {fit.memory.slope:.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
