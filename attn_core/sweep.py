"""Attention's cost measured for growing T: naive, PyTorch's SDPA and attn_core's tiled attention.

One sweep generator serves the Cost view and ``python -m attn_core.bench``:

- Per length T, each method runs once to warm up (and to compare its output with SDPA's, run inside
  sdpa_kernel(its chosen backend), which raises if that kernel could not run), then ``repeats`` rounds in
  which every method runs in turn (interleaved: a slow spell of the machine hits all methods alike).
  Reported: the median, and the interquartile range as a percentage of it (the noise).
- Peak memory: one more run per method, apart from the timed ones (profiling slows a run down); see timing.py.
- Before running, each point's memory is estimated (inputs + what the method allocates) and points over
  the memory budget are refused. The sweep stops before a length whose predicted time (the last length's
  times the growth of T²) would pass the time budget.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

from attn_core.device import available_devices, resolve_device
from attn_core.tiled import (
    attention_flops,
    naive_attention,
    naive_working_bytes,
    score_matrix_bytes,
    tiled_attention,
    tiled_working_bytes,
)
from attn_core.timing import (
    DTYPES,
    GIB,
    MIB,
    backend_name,
    format_bytes,
    iqr_pct,
    loglog_slope,
    matmul_gflops,
    peak_bytes,
    sdpa_backend,
    seconds,
    supported_dtypes,
)

METHODS = ("naive", "sdpa", "tiled")
CPU_MEMORY_BUDGET = 2 * GIB
CUDA_BUDGET_FRACTION = 0.5  # of the GPU memory free when the sweep is set up
DEFAULT_TIME_BUDGET = 20.0  # seconds
DEFAULT_LENGTHS = (256, 512, 1024, 2048)
CUDA_SCRATCH = 8 * MIB  # allowance for the workspace of SDPA's CUDA kernels


def default_memory_budget(device: str) -> int:
    return int(torch.cuda.mem_get_info()[0] * CUDA_BUDGET_FRACTION) if device == "cuda" else CPU_MEMORY_BUDGET


@dataclass(frozen=True)
class Settings:
    """One sweep: the inputs' shape (B, H, T, d) and type, where to run, how long and how much memory."""

    batch: int = 1
    heads: int = 8
    d_head: int = 64
    dtype: str = "float32"
    causal: bool = False
    device: str = "cpu"
    lengths: tuple[int, ...] = DEFAULT_LENGTHS
    repeats: int = 5
    methods: tuple[str, ...] = METHODS
    memory_budget: int = 0  # bytes; 0: default_memory_budget(device)
    time_budget: float = DEFAULT_TIME_BUDGET  # seconds

    def __post_init__(self):
        devices, dtypes = available_devices(), supported_dtypes(self.device)
        if self.device not in devices:
            raise ValueError(f"device {self.device} is not available here; choose one of {', '.join(devices)}")
        if self.dtype not in dtypes:
            raise ValueError(f"{self.dtype} is not supported on {self.device}; choose one of {', '.join(dtypes)}")
        if min(self.batch, self.heads, self.d_head, self.repeats, *self.lengths) < 1:
            raise ValueError("batch, heads, head size, repeats and every length must be at least 1")
        if not self.methods or not set(self.methods) <= set(METHODS):
            raise ValueError(f"methods must be some of {', '.join(METHODS)}")
        if self.time_budget <= 0 or self.memory_budget < 0:
            raise ValueError("the time budget must be positive and the memory budget not negative")
        if not self.memory_budget:
            object.__setattr__(self, "memory_budget", default_memory_budget(self.device))

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    def shape(self, t: int) -> tuple[int, int, int, int]:
        return (self.batch, self.heads, t, self.d_head)  # (B, H, T, d)

    def input_bytes(self, t: int) -> int:
        """q, k and v together."""
        return 3 * math.prod(self.shape(t)) * self.torch_dtype.itemsize

    def working_bytes(self, method: str, t: int, backend: SDPBackend | None = None) -> int:
        """Estimated bytes one call allocates on top of its inputs, output included (SDPA: that of ``backend``)."""
        sizes = (self.batch, self.heads, t, self.d_head, self.torch_dtype)
        if method == "naive" or (method == "sdpa" and backend == SDPBackend.MATH):
            matrices = 2 if method == "naive" else 3  # math also keeps a scaled copy
            return naive_working_bytes(*sizes, self.causal, matrices=matrices)
        if method == "tiled":
            return tiled_working_bytes(*sizes)
        # Fused kernels: the output, a float32 log-sum-exp per row, and scratch. The CPU flash kernel gives each
        # thread a float32 tile of up to 256 queries × 512 keys and a 256 × d output (and a reduced copy of the tile).
        scratch = CUDA_SCRATCH if self.device == "cuda" else torch.get_num_threads() * 256 * (512 + self.d_head + 2) * 6
        return math.prod(self.shape(t)) * self.torch_dtype.itemsize + self.batch * self.heads * t * 4 + scratch


@dataclass(frozen=True)
class Point:
    """One method measured at one length T."""

    method: str
    T: int
    backend: str  # SDPA's kernel; "" for the others
    median_ms: float
    iqr_pct: float  # interquartile range of the repeats, % of the median
    gflops: float  # attention_flops / median time
    matmul_pct: float  # GFLOP/s as a percentage of the measured matmul rate
    peak_mib: float  # measured, on top of the inputs
    estimate_mib: float  # Settings.working_bytes, what the memory budget was checked with
    matrix_mib: float  # one (B, H, T, T) score matrix
    max_diff: float  # largest |output - SDPA's output|


@dataclass(frozen=True)
class Skipped:
    """A point refused before the sweep: it would not fit the memory budget."""

    method: str
    T: int
    needed: int  # bytes: inputs + working bytes
    budget: int

    @property
    def message(self) -> str:
        needs = f"T={self.T:,} {self.method} needs ≈ {format_bytes(self.needed)}"
        return f"{needs}, over the {format_bytes(self.budget)} budget; skipped"


@dataclass(frozen=True)
class Progress:
    done: float  # fraction of the planned work (weighted by T²) finished
    text: str


@dataclass(frozen=True)
class Stopped:
    """The sweep ended early; the points measured so far stand."""

    message: str


def plan(settings: Settings) -> tuple[dict[int, list[str]], list[Skipped]]:
    """The methods to run at each length, and the points refused for memory."""
    runs, skipped = {}, []
    for t in sorted(set(settings.lengths)):
        stand_in = torch.empty(1, 1, 1, settings.d_head, dtype=settings.torch_dtype, device=settings.device)
        stand_in = stand_in.expand(*settings.shape(t))  # (B, H, T, d) without the memory
        backend = sdpa_backend(stand_in, stand_in, stand_in, settings.causal)
        runs[t] = []
        for method in settings.methods:
            needed = settings.input_bytes(t) + settings.working_bytes(method, t, backend)
            if needed > settings.memory_budget:
                skipped.append(Skipped(method, t, needed, settings.memory_budget))
            else:
                runs[t].append(method)
    return runs, skipped


def runner(method: str, q: Tensor, k: Tensor, v: Tensor, causal: bool) -> Callable[[], Tensor]:
    if method == "naive":
        return lambda: naive_attention(q, k, v, causal=causal)
    if method == "sdpa":
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return lambda: tiled_attention(q, k, v, causal=causal)


@torch.inference_mode()
def measure_length(settings: Settings, t: int, methods: Sequence[str], matmul_rate: float) -> list[Point]:
    """Warm-up, interleaved timed rounds, then one memory run per method, at one length."""
    device = resolve_device(settings.device)
    generator = torch.Generator(device).manual_seed(t)
    q, k, v = (torch.randn(settings.shape(t), generator=generator, dtype=settings.torch_dtype, device=device) for _ in range(3))
    backend = sdpa_backend(q, k, v, settings.causal)
    with sdpa_kernel(backend):  # raises if the named backend could not run these inputs
        reference = F.scaled_dot_product_attention(q, k, v, is_causal=settings.causal)  # (B, H, T, d)
    runs = {method: runner(method, q, k, v, settings.causal) for method in methods}
    max_diff = {method: float((run() - reference).abs().max()) for method, run in runs.items()}  # the warm-up
    del reference
    times = {method: [] for method in methods}
    for _ in range(settings.repeats):
        for method, run in runs.items():
            times[method].append(seconds(run, device))
    flops = attention_flops(settings.batch, settings.heads, t, settings.d_head, settings.causal)
    points = []
    for method, run in runs.items():
        rate = flops / statistics.median(times[method]) / 1e9
        points.append(
            Point(
                method,
                t,
                backend_name(backend, settings.device) if method == "sdpa" else "",
                1000 * statistics.median(times[method]),
                iqr_pct(times[method]),
                rate,
                100 * rate / matmul_rate,
                peak_bytes(run, device) / MIB,
                settings.working_bytes(method, t, backend) / MIB,
                score_matrix_bytes(settings.batch, settings.heads, t, settings.torch_dtype) / MIB,
                max_diff[method],
            )
        )
    return points


def sweep(settings: Settings) -> Iterator[Skipped | Progress | Point | Stopped]:
    """The refused points first, then per length its progress and its points; Stopped if time runs out."""
    runs, skipped = plan(settings)
    yield from skipped
    work = {t: t * t * len(methods) for t, methods in runs.items() if methods}
    total, done, last = sum(work.values()) or 1, 0, []
    start = time.perf_counter()
    matmul_rate = matmul_gflops(settings.device, settings.dtype)
    for t in work:
        elapsed = time.perf_counter() - start
        # Every method's time grows like T²: the last length's runs (warm-up, repeats, memory), scaled.
        predicted = sum(p.median_ms / 1000 * (settings.repeats + 2) for p in last) * (t / last[0].T) ** 2 if last else 0
        if last and elapsed + predicted > settings.time_budget:
            yield Stopped(
                f"Stopped by the {settings.time_budget:g} s time budget before T={t:,}: {elapsed:.1f} s used, and "
                f"T={t:,} would take about {predicted:.1f} s more (time grows like T²)."
            )
            return
        yield Progress(done / total, f"Measuring T={t:,}: {', '.join(runs[t])}…")
        last = measure_length(settings, t, runs[t], matmul_rate)
        yield from last
        done += work[t]
    yield Progress(1.0, f"Done in {time.perf_counter() - start:.1f} s.")


def slopes(points: Sequence[Point]) -> dict[str, tuple[float, float]]:
    """Per method, the fitted log-log slopes of time and of peak memory against T."""
    by_method = {point.method: [p for p in points if p.method == point.method] for point in points}
    return {
        method: (
            loglog_slope([p.T for p in rows], [p.median_ms for p in rows]),
            loglog_slope([p.T for p in rows], [p.peak_mib for p in rows]),
        )
        for method, rows in by_method.items()
    }


TABLE_COLUMNS = {  # column: (Point field, format)
    "method": ("method", "{}"),
    "backend": ("backend", "{}"),
    "T": ("T", "{:,}"),
    "median ms": ("median_ms", "{:.2f}"),
    "noise (IQR %)": ("iqr_pct", "{:.1f}"),
    "GFLOP/s": ("gflops", "{:.1f}"),
    "% of matmul": ("matmul_pct", "{:.0f}"),
    "peak MiB": ("peak_mib", "{:.2f}"),
    "T×T matrix MiB": ("matrix_mib", "{:.2f}"),
    "max |Δ| vs SDPA": ("max_diff", "{:.1e}"),
}


def table_row(point: Point) -> dict[str, str]:
    """A point as the tables print it."""
    return {column: text.format(getattr(point, name)) for column, (name, text) in TABLE_COLUMNS.items()}


def describe(settings: Settings) -> str:
    """One line naming the machine and the settings, for a table's heading."""
    return (
        f"{settings.device}, {torch.get_num_threads()} threads, {settings.dtype}, B={settings.batch}, H={settings.heads}, "
        f"d={settings.d_head}, causal {'on' if settings.causal else 'off'}, {settings.repeats} repeats; "
        f"matmul {matmul_gflops(settings.device, settings.dtype):.1f} GFLOP/s"
    )
