"""Measuring attention on this machine: wall time, peak memory, the matmul rate, SDPA's kernel, fitted slopes.

- Time: on CUDA each run is bracketed by torch.cuda.synchronize, so it counts from an idle GPU to a finished one.
- Peak memory: CUDA: torch.cuda.max_memory_allocated after reset_peak_memory_stats, minus what was allocated
  before. CPU: torch's profiler with profile_memory=True records every allocation and free of the CPU allocator
  ([memory] events); their running total in time order peaks at the call's peak. Both count what the call
  allocates on top of what existed before it, its output included.
- SDPA's backend: the dispatcher's own choice (torch._fused_sdp_choice, which scaled_dot_product_attention
  calls to pick its kernel).
"""

from __future__ import annotations

import functools
import math
import os
import statistics
import time
from collections.abc import Callable, Sequence

import torch
from torch import Tensor
from torch.nn.attention import SDPBackend

from attn_core.device import resolve_device

# Silences the profiler's start/stop lines. Kineto reads it when the first profile starts (checked with
# torch 2.13), so this is early enough although importing attn_core has already imported torch.
os.environ.setdefault("KINETO_LOG_LEVEL", "99")

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
BACKENDS = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash", SDPBackend.EFFICIENT_ATTENTION: "memory-efficient"}
MIB, GIB = 2**20, 2**30
MATMUL_SIZE = 1024  # the reference matmul: (n, n) @ (n, n), 2·n³ FLOPs


def supported_dtypes(device: str) -> tuple[str, ...]:
    """Element types with fast matmuls on ``device``: float16 (and bfloat16 where supported) on CUDA; bfloat16 on
    CPUs whose oneDNN has bfloat16 kernels (AVX-512 or AMX). Elsewhere they run about 100x slower than float32."""
    if device == "cuda":
        return ("float32", "float16") + (("bfloat16",) if torch.cuda.is_bf16_supported() else ())
    return ("float32", "bfloat16") if torch.ops.mkldnn._is_mkldnn_bf16_supported() else ("float32",)


def format_bytes(n: float) -> str:
    """17179869184 → "16.0 GiB"; 1536 → "1.5 KiB"."""
    for power, unit in ((4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        if n >= 1024**power:
            return f"{n / 1024**power:.1f} {unit}"
    return f"{n:.0f} B"


def sdpa_backend(q: Tensor, k: Tensor, v: Tensor, causal: bool) -> SDPBackend:
    """The kernel scaled_dot_product_attention picks for these inputs: the dispatcher's own choice function."""
    return SDPBackend(torch._fused_sdp_choice(q, k, v, None, 0.0, causal))


def backend_name(backend: SDPBackend, device: str) -> str:
    name = BACKENDS.get(backend, backend.name.lower().replace("_attention", ""))
    return f"{name} ({device.upper()})" if device == "cpu" else name


def seconds(run: Callable[[], Tensor], device: torch.device) -> float:
    """Wall time of one run; on CUDA, from an idle GPU to a finished one."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    run()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def peak_bytes(run: Callable[[], Tensor], device: torch.device) -> int:
    """Peak of what ``run`` allocates on top of what was allocated before it (see the module's docstring)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        run()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    with torch.autograd.profiler.profile(use_cpu=True, profile_memory=True) as profile:
        run()
    changes = sorted(
        (event.start_ns(), event.nbytes()) for event in profile.kineto_results.events() if event.name() == "[memory]"
    )
    running = peak = 0
    for _, change in changes:
        running += change
        peak = max(peak, running)
    return peak


@functools.lru_cache(maxsize=8)
@torch.inference_mode()
def matmul_gflops(device: str, dtype: str, repeats: int = 10) -> float:
    """This machine's rate on a (1024, 1024) @ (1024, 1024) matmul in GFLOP/s, measured once: the fastest of
    ``repeats`` runs, the rate when nothing else gets in the way."""
    where = resolve_device(device)
    a, b = (torch.randn(MATMUL_SIZE, MATMUL_SIZE, dtype=DTYPES[dtype], device=where) for _ in range(2))
    seconds(lambda: a @ b, where)
    return 2 * MATMUL_SIZE**3 / min(seconds(lambda: a @ b, where) for _ in range(repeats)) / 1e9


def iqr_pct(times: Sequence[float]) -> float:
    if len(times) < 2:
        return 0.0
    low, _, high = statistics.quantiles(times, n=4, method="inclusive")
    return 100 * (high - low) / statistics.median(times)


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log y against log x: 2 for y ∝ x², 1 for y ∝ x; NaN with fewer than two x."""
    pairs = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len({x for x, _ in pairs}) < 2:
        return math.nan
    mean_x, mean_y = (statistics.fmean(column) for column in zip(*pairs, strict=True))
    return sum((x - mean_x) * (y - mean_y) for x, y in pairs) / sum((x - mean_x) ** 2 for x, _ in pairs)
