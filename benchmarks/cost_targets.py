"""The Cost view's performance targets, measured on this machine with the sweep the view runs.

CPU, B=1, 8 heads, head size 64, float32, T = 1024, 2048, 4096, 8192 (naive up to 4096: at 8192 its
two 2 GiB score matrices pass the 3 GiB budget and the sweep refuses it). Targets:
- tiled output equals naive within 1e-5 (with and without the causal mask);
- tiled peak memory grows about linearly: log-log slope ≤ 1.1 from T=1024 to 8192, and at most 2x SDPA's;
- tiled time at T=4096 at most 1.5x SDPA's;
- naive time grows like T²: log-log slope 2.0 ± 0.2 for T ≥ 1024.

Run from the repository root: ``.venv/bin/python -m benchmarks.cost_targets``. Prints each measurement,
its target and PASS/FAIL; exits with 1 if any target fails.
"""

from __future__ import annotations

import sys

import torch

from attn_core.bench import format_table
from attn_core.sweep import Point, Settings, Skipped, Stopped, describe, sweep
from attn_core.tiled import naive_attention, tiled_attention
from attn_core.timing import GIB, loglog_slope

SETTINGS = Settings(lengths=(1024, 2048, 4096, 8192), repeats=7, memory_budget=3 * GIB, time_budget=900)
TIME_AT = 4096


def check(name: str, value: float, target: str, passed: bool) -> bool:
    print(f"{'PASS' if passed else 'FAIL'}  {name}: {value:.3g}  (target {target})")
    return passed


def largest_difference(causal: bool, t: int = 1024) -> float:
    q, k, v = (torch.randn(SETTINGS.shape(t), generator=torch.Generator().manual_seed(seed)) for seed in range(3))
    with torch.inference_mode():
        return float((tiled_attention(q, k, v, causal=causal) - naive_attention(q, k, v, causal=causal)).abs().max())


def main() -> int:
    print(describe(SETTINGS))
    points: list[Point] = []
    for event in sweep(SETTINGS):
        if isinstance(event, Point):
            points.append(event)
        elif isinstance(event, Skipped | Stopped):
            print(event.message)
    print(format_table(points))
    at = {(p.method, p.T): p for p in points}
    tiled = [p for p in points if p.method == "tiled"]
    naive = [p for p in points if p.method == "naive"]
    results = []
    for causal in (False, True):
        difference = largest_difference(causal)
        results.append(
            check(f"tiled vs naive, largest |difference|{' (causal)' * causal}", difference, "≤ 1e-5", difference <= 1e-5)
        )
    memory_slope = loglog_slope([p.T for p in tiled], [p.peak_mib for p in tiled])
    results.append(check("tiled peak memory, log-log slope over T=1024..8192", memory_slope, "≤ 1.1", memory_slope <= 1.1))
    memory_ratio = max(p.peak_mib / at["sdpa", p.T].peak_mib for p in tiled)
    results.append(check("tiled peak memory / SDPA's, largest over T", memory_ratio, "≤ 2", memory_ratio <= 2))
    time_ratio = at["tiled", TIME_AT].median_ms / at["sdpa", TIME_AT].median_ms
    results.append(check(f"tiled time / SDPA's at T={TIME_AT:,}", time_ratio, "≤ 1.5", time_ratio <= 1.5))
    naive_slope = loglog_slope([p.T for p in naive], [p.median_ms for p in naive])
    results.append(
        check(
            f"naive time, log-log slope over T={naive[0].T:,}..{naive[-1].T:,}",
            naive_slope,
            "2.0 ± 0.2",
            abs(naive_slope - 2) <= 0.2,
        )
    )
    print(f"{sum(results)} of {len(results)} targets met")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
