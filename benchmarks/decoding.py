"""``python -m benchmarks.decoding``: what one decoding step of one attention layer costs against the context, with the
KV cache and without it, for each layout (attn_core.decoding.generate), and how long 128 new tokens take.

For each context length T, a layer decodes ``--steps`` tokens after a T-token prompt; a step's time is the median of
those steps, each setting ``--repeats`` times, settings interleaved, min and median of the medians reported. The
log-log slope of the step time against T is fitted over the lengths from 1,024 on (below, fixed costs dominate).
With the cache a step reads T keys and values; without it, it first projects the T earlier tokens to keys and values
again, a matmul of T × C by C × 2·G·d, so it grows with T from a larger start. MLA decompressed makes every head's
keys and values from the cached latent at each step; absorbed, it attends over the latent itself. Targets: every
layout's 128 tokens after a 128-token prompt (d_model 512) in under 1 s; with the cache, far less time a step.

``--reference`` measures the Decoding view's sweep instead (attn_core.decoding_sweep: each layout with the cache,
without it, with a window and with sinks + window), ``--repeats`` rounds interleaved, each point's median of the
rounds, and writes it with the machine to attn_core/decoding_reference.json, which the view draws at once.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from attn_core.bench import machine
from attn_core.decoding import KINDS, generate
from attn_core.decoding_sweep import (
    LAYOUTS,
    MEASURED_LAYER,
    REFERENCE_COMMAND,
    REFERENCE_FILE,
    Reference,
    measure_point,
    sweep_settings,
    write_reference,
)
from attn_core.device import cpu_model

CONTEXTS = (256, 512, 1024, 2048, 4096)
FIT_FROM = 1024


def step_ms(layout: str, context: int, steps: int, cache: bool) -> float:
    """The median time of one decoding step after ``context`` tokens, in milliseconds."""
    kind, absorbed = LAYOUTS[layout]
    run = generate(kind, prompt=context, new_tokens=steps, cache=cache, absorbed=absorbed)
    return 1000 * statistics.median(run.step_seconds)


def measure_reference(repeats: int) -> None:
    """The view's sweep, ``repeats`` rounds interleaved, each point the median of its rounds, into REFERENCE_FILE."""
    about = {**machine(), "command": REFERENCE_COMMAND}
    settings = list(sweep_settings())
    rounds = []
    for done in range(repeats):
        rounds.append([measure_point(layout, variant, context, **MEASURED_LAYER) for layout, variant, context in settings])
        print(f"round {done + 1} of {repeats}", flush=True)
    points = tuple(
        min(measured, key=lambda point: abs(point.step_ms - statistics.median(p.step_ms for p in measured)))
        for measured in zip(*rounds, strict=True)
    )
    write_reference(Reference(about, points))
    print(f"wrote {len(points)} points to {REFERENCE_FILE}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.decoding")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--contexts", type=int, nargs="+", default=list(CONTEXTS))
    parser.add_argument("--reference", action="store_true", help="measure the Decoding view's reference results")
    args = parser.parse_args(argv)
    if args.reference:
        measure_reference(args.repeats)
        return
    print(f"{cpu_model()}, torch {torch.__version__}, {torch.get_num_threads()} threads; one layer, d_model 512, 8 heads")
    print("\n128 new tokens after a 128-token prompt (target < 1 s):\n\n| layout | s (min of 3) |\n|---|---:|")
    for kind in KINDS:
        seconds = []
        for _ in range(3):
            start = time.perf_counter()
            generate(kind)
            seconds.append(time.perf_counter() - start)
        print(f"| {kind} | {min(seconds):.3f} |")
    settings = [(layout, cache) for layout in LAYOUTS for cache in (True, False)]
    times = {(setting, t): [] for setting in settings for t in args.contexts}
    for _ in range(args.repeats):
        for t in args.contexts:
            for kind, cache in settings:
                times[(kind, cache), t].append(step_ms(kind, t, args.steps, cache))
    header = " | ".join(f"T = {t:,}" for t in args.contexts)
    print(f"\nMilliseconds per decoding step, min / median:\n\n| layout | cache | {header} | slope |")
    print("|---|---|" + "---:|" * (len(args.contexts) + 1))
    for kind, cache in settings:
        cells = [f"{min(times[(kind, cache), t]):.2f} / {statistics.median(times[(kind, cache), t]):.2f}" for t in args.contexts]
        fitted = [t for t in args.contexts if t >= FIT_FROM]
        medians = [statistics.median(times[(kind, cache), t]) for t in fitted]
        slope = np.polyfit(np.log(fitted), np.log(medians), 1)[0] if len(fitted) > 1 else float("nan")
        print(f"| {kind} | {'yes' if cache else 'no'} | {' | '.join(cells)} | {slope:.2f} |")


if __name__ == "__main__":
    main()
