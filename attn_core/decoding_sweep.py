"""A decoding step measured: one attention layer of each layout (C = 512, 8 heads, GQA with 2 K/V heads) writes a few
tokens after prompts of 256 to 4,096 tokens, with its KV cache, without it (every earlier token's keys and values
computed again at each step), with a window of the last 512 keys and with 4 sinks + that window; and the reference
results of the same sweep, measured once on a named machine and shipped beside this module, which the Decoding view
draws at once (``python -m benchmarks.decoding --reference`` measures them anew).

With the cache a step reads the T keys and values so far (time ∝ T); without it, it projects the T earlier tokens
again first (a T × C by C × 2·G·d matmul, ∝ T from a larger start); with a window, it reads at most the window's keys
(flat once the window is full), and the cache's bytes stop growing there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from attn_core.decoding import KINDS, generate, kv_cache_bytes

# The layouts measured: each kind, and MLA with its up-projections absorbed (W_UK into the query, W_UV after the sum),
# as it is deployed: decompressed, every step makes every head's keys and values of the whole context again.
LAYOUTS = {kind: (kind, False) for kind in KINDS} | {"mla absorbed": ("mla", True)}  # name: (kind, absorbed)

MEASURED_LAYER = {"d_model": 512, "heads": 8, "kv_heads": 2}  # a few seconds on a laptop for the whole sweep
CONTEXTS = (256, 512, 1024, 2048, 4096)  # tokens before the measured steps
FIT_FROM = 1024  # the slopes are fitted from this context on: below, a step's fixed costs dominate
WINDOW, SINKS = 512, 4
STEPS = 8  # decoding steps measured after each prompt; a point's time is their median
REFERENCE_FILE = Path(__file__).with_name("decoding_reference.json")
REFERENCE_COMMAND = "python -m benchmarks.decoding --reference"


@dataclass(frozen=True)
class Variant:
    """How the layer keeps its keys and values: a cache or none, all of them or a window of the last ``window``
    after ``sinks`` first tokens."""

    name: str
    cache: bool = True
    window: int | None = None
    sinks: int = 0


VARIANTS = (
    Variant("with the cache"),
    Variant("without a cache", cache=False),
    Variant(f"window of {WINDOW}", window=WINDOW),
    Variant(f"{SINKS} sinks + window of {WINDOW}", window=WINDOW, sinks=SINKS),
)


@dataclass(frozen=True)
class DecodePoint:
    """One layout (a name of LAYOUTS) decoding after ``context`` tokens: a step's median time, and the cache's bytes
    after the last step, measured from its tensors and by the formula, with the largest error against causal attention
    recomputed."""

    layout: str
    variant: str  # a Variant's name
    context: int
    step_ms: float
    cache_bytes: int
    formula_bytes: int
    max_error: float


def measure_point(layout: str, variant: Variant, context: int, *, steps: int = STEPS, **layer) -> DecodePoint:
    """``generate`` ``steps`` tokens after ``context`` prompt tokens (``layer``: generate's d_model, heads, kv_heads)."""
    kind, absorbed = LAYOUTS[layout]
    keeps = {"cache": variant.cache, "window": variant.window, "sinks": variant.sinks}
    run = generate(kind, prompt=context, new_tokens=steps, absorbed=absorbed, **keeps, **layer)
    step_ms = 1000 * sorted(run.step_seconds)[len(run.step_seconds) // 2]
    kept = context + steps if variant.window is None else min(context + steps, variant.sinks + variant.window)
    return DecodePoint(
        layout, variant.name, context, step_ms, run.cache_bytes[-1], kv_cache_bytes(run.shape, kept), run.max_error
    )


def sweep_settings() -> Iterator[tuple[str, Variant, int]]:
    """Every point of the sweep: each layout, each variant, each context."""
    for layout in LAYOUTS:
        for variant in VARIANTS:
            for context in CONTEXTS:
                yield layout, variant, context


@dataclass(frozen=True)
class Reference:
    """The sweep measured once on a named machine."""

    machine: dict  # cpu, cores, torch_threads, torch, python, date, load_average, command
    points: tuple[DecodePoint, ...]


def reference_results(path: Path = REFERENCE_FILE) -> Reference:
    """The shipped reference results (``REFERENCE_COMMAND`` writes them)."""
    data = json.loads(path.read_text())
    return Reference(data["machine"], tuple(DecodePoint(**point) for point in data["points"]))


def write_reference(reference: Reference, path: Path = REFERENCE_FILE) -> None:
    data = {"machine": reference.machine, "layer": MEASURED_LAYER, "points": [asdict(point) for point in reference.points]}
    path.write_text(json.dumps(data, indent=1) + "\n")
