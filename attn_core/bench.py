"""``python -m attn_core.bench``: the Cost view's measurements from the command line.

Prints a table (``--json``: one record per point with method, T, median_ms, peak_mib and more);
``--T 256 512 1024`` chooses the lengths. See ``python -m attn_core.bench --help``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict

import torch

from attn_core.device import available_devices
from attn_core.sweep import (
    DEFAULT_LENGTHS,
    DEFAULT_TIME_BUDGET,
    METHODS,
    TABLE_COLUMNS,
    Point,
    Settings,
    Skipped,
    Stopped,
    describe,
    slopes,
    sweep,
    table_row,
)
from attn_core.timing import (
    DTYPES,
    GIB,
)


def format_table(points: Sequence[Point]) -> str:
    """The points as aligned text columns."""
    rows = [list(TABLE_COLUMNS)] + [list(table_row(point).values()) for point in points]
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS))]
    return "\n".join("  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attn_core.bench", description="Time and memory of attention for growing T.")
    parser.add_argument("--T", type=int, nargs="+", default=list(DEFAULT_LENGTHS), help="sequence lengths")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--d-head", type=int, default=64)
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--device", default="cpu", help=f"one of {', '.join(available_devices())}")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--memory-gib", type=float, default=0.0, help="memory budget; default 2 GiB on CPU, half the free GPU's")
    parser.add_argument("--time-budget", type=float, default=DEFAULT_TIME_BUDGET, help="seconds")
    parser.add_argument("--json", action="store_true", help="print one JSON record per point")
    args = parser.parse_args(argv)
    try:
        settings = Settings(
            args.batch, args.heads, args.d_head, args.dtype, args.causal, args.device, tuple(args.T), args.repeats,
            tuple(args.methods), int(args.memory_gib * GIB), args.time_budget,
        )  # fmt: skip
    except ValueError as problem:
        parser.error(str(problem))
    context = {key: getattr(settings, key) for key in ("batch", "heads", "d_head", "dtype", "causal", "device", "repeats")}
    points = []
    for event in sweep(settings):
        if isinstance(event, Point):
            points.append(event)
            if args.json:
                print(json.dumps({**asdict(event), **context, "threads": torch.get_num_threads()}), flush=True)
        elif isinstance(event, Skipped | Stopped):
            print(event.message, file=sys.stderr)
    if not args.json and points:
        print(
            describe(settings),
            "FLOPs = 4·B·H·T²·d" + (" / 2 (causal)" if settings.causal else ""),
            format_table(points),
            sep="\n",
        )
        for method, (time_slope, memory_slope) in slopes(points).items():
            print(f"{method}: log-log slope of time {time_slope:.2f}, of peak memory {memory_slope:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
