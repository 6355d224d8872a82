"""Measuring attention on this machine: wall time, peak memory, the matmul rate, SDPA's kernel, fitted slopes.

- Time: what ``torch.utils.benchmark.Timer.timeit`` does, without its two warm-up calls per sample and its
  switch to one thread (its default): ``timeit.Timer`` (garbage collector off) on a clock that synchronizes
  CUDA. One sample is the mean of ``number`` calls, ``number`` chosen so a sample lasts at least SAMPLE_S.
  ``seconds`` times one call the plain way (CUDA synchronized), for warm-ups.
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
import timeit
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.nn.attention import SDPBackend

from attn_core.device import resolve_device
from attn_core.tiled import release_kept

# Silences the profiler's start/stop lines. Kineto reads it when the first profile starts (checked with
# torch 2.13), so this is early enough although importing attn_core has already imported torch.
os.environ.setdefault("KINETO_LOG_LEVEL", "99")

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
BACKENDS = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash", SDPBackend.EFFICIENT_ATTENTION: "memory-efficient"}
MIB, GIB = 2**20, 2**30
MATMUL_SIZE = 1024  # the reference matmul: (n, n) @ (n, n), 2·n³ FLOPs
SAMPLE_S = 0.01  # shortest timed sample: short calls are repeated within one sample
NOISY_IQR = 0.2  # a point is noisy when its interquartile range passes this fraction of its median
RETRIES = 2  # re-measurements of a noisy point before it is marked noisy

SampleTimer = Callable[[Callable[[], object], int], float]  # (run, number of calls) -> seconds per call


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


def sdpa_backend(q: Tensor, k: Tensor, v: Tensor, causal: bool, mask: Tensor | None = None) -> SDPBackend:
    """The kernel scaled_dot_product_attention picks for these inputs: the dispatcher's own choice function."""
    return SDPBackend(torch._fused_sdp_choice(q, k, v, mask, 0.0, causal))


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


def synchronized_clock() -> float:
    """time.perf_counter once CUDA's queued work is done (the clock torch.utils.benchmark times with)."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


def benchmark_timer(run: Callable[[], object], number: int) -> float:
    """Seconds per call, the mean of ``number`` calls, with the garbage collector off."""
    return timeit.Timer(run, timer=synchronized_clock).timeit(number) / number


def calls_per_sample(one_call_s: float) -> int:
    """How many calls make one sample last SAMPLE_S, given one call's time."""
    return max(1, math.ceil(SAMPLE_S / max(one_call_s, 1e-9)))


@dataclass(frozen=True)
class Spread:
    """The samples of one point, in seconds per call."""

    min: float
    median: float
    iqr: float  # interquartile range

    @classmethod
    def of(cls, times: Sequence[float]) -> Spread:
        low, high = statistics.quantiles(times, n=4, method="inclusive")[::2] if len(times) > 1 else (times[0],) * 2
        return cls(min(times), statistics.median(times), high - low)

    @property
    def noisy(self) -> bool:
        """The interquartile range passes NOISY_IQR of the median."""
        return self.iqr > NOISY_IQR * self.median


@dataclass(frozen=True)
class Timed:
    """One run's samples after re-measuring."""

    spread: Spread
    attempts: int  # 1, plus one per re-measurement
    noisy: bool  # still noisy after the last attempt


def time_interleaved(
    runs: Mapping[Hashable, Callable[[], object]],
    numbers: Mapping[Hashable, int],
    repeats: int,
    timer: SampleTimer = benchmark_timer,
    reference: Hashable | None = None,
    deadline: float = math.inf,
) -> dict[Hashable, Timed]:
    """``repeats`` rounds in which every run takes one sample (``numbers[key]`` calls) in turn, so a slow spell
    of the machine hits all of them. A run whose spread is noisy is measured again, ``repeats`` fresh rounds
    interleaved with the other noisy runs and the ``reference`` run (whose new samples are added to its own), up
    to RETRIES times while the round fits before ``deadline`` (a time.perf_counter value); still noisy then, it
    is marked noisy."""
    samples = {key: [] for key in runs}
    attempts = dict.fromkeys(runs, 1)
    pending = list(runs)
    for attempt in range(RETRIES + 1):
        for _ in range(repeats):
            for key in pending:
                samples[key].append(timer(runs[key], numbers[key]))
        noisy = [key for key in runs if key != reference and Spread.of(samples[key]).noisy]
        if not noisy or attempt == RETRIES:
            break
        pending = noisy + ([reference] if reference is not None else [])
        needed = sum(statistics.median(samples[key]) * numbers[key] for key in pending) * repeats
        if time.perf_counter() + needed > deadline:
            break
        for key in noisy:
            samples[key], attempts[key] = [], attempts[key] + 1
    return {key: Timed(Spread.of(times), attempts[key], Spread.of(times).noisy) for key, times in samples.items()}


def peak_bytes(run: Callable[[], Tensor], device: torch.device) -> int:
    """Peak of what ``run`` allocates on top of what was allocated before it (see the module's docstring), with
    ``tiled_attention``'s buffers counted: it keeps them from one call to the next (attn_core.tiled.kept)."""
    release_kept()
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


@dataclass(frozen=True)
class SlopeFit:
    """A least-squares line through (log x, log y)."""

    slope: float  # NaN with fewer than two distinct x
    stderr: float  # the slope's standard error; NaN with fewer than three points (no residual to judge by)


def loglog_fit(xs: Sequence[float], ys: Sequence[float]) -> SlopeFit:
    """The log-log slope and its standard error, sqrt(Σ residual² / (n - 2) / Σ (log x - mean)²)."""
    pairs = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len({x for x, _ in pairs}) < 2:
        return SlopeFit(math.nan, math.nan)
    mean_x, mean_y = (statistics.fmean(column) for column in zip(*pairs, strict=True))
    spread_x = sum((x - mean_x) ** 2 for x, _ in pairs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in pairs) / spread_x
    if len(pairs) < 3:
        return SlopeFit(slope, math.nan)
    residuals = sum((y - mean_y - slope * (x - mean_x)) ** 2 for x, y in pairs)
    return SlopeFit(slope, math.sqrt(residuals / (len(pairs) - 2) / spread_x))
