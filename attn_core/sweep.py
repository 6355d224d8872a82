"""Attention's cost measured for growing T: naive, PyTorch's SDPA and attn_core's tiled attention.

One sweep generator serves the Cost view and ``python -m attn_core.bench``:

- Each run is a method under a mask (attn_core.masks.Mask, written as its link text): "none", "causal", "window:W"
  (each query sees its last W keys), applied by each method's own ``causal`` and ``window`` arguments, or a mask of
  today's models, built as a (T, T) boolean at each length and given as it is to every method (naive and tiled as
  ``mask=``, SDPA as ``attn_mask=``): "documents:K" (K equal documents packed in the sequence, each causal),
  "prefix:P" (a prefix LM: the first P tokens see each other both ways, the rest causally) or "global:W:G" (a
  sliding window of W keys plus G global first tokens).
- Per length T, each run goes once to warm up (and to compare its output with SDPA's under the same mask, whose
  kernel is the dispatcher's own choice, see timing.sdpa_backend; not forced with sdpa_kernel, which sets
  process-wide flags: another session's SDPA call at that moment would find no kernel); that call's time sets
  how many calls make one timed sample. Then ``repeats`` rounds in which every run and a matmul reference take
  a sample in turn (interleaved: a slow spell of the machine hits all of them); see timing.time_interleaved
  for the re-measuring of noisy points.
- The matmul reference does attention's two matmuls, Q Kᵀ and then (scores) V, with the same shapes (over
  blocks of queries when the T × T scores would pass MATMUL_SCRATCH). Its best rate at this T (from its
  fastest sample) is what "% of matmul" divides by: a point's rate from its median over that best rate,
  capped at 100 (a slow spell that hit only the reference's samples could otherwise push it past 100).
- Peak memory: one more run per method, apart from the timed ones (profiling slows a run down); see timing.py.
- Before running, each point's memory is estimated (inputs + the matmul reference's buffers, which live through
  every run at that T + what the method allocates) and points over the memory budget are refused. The sweep
  stops before a length whose predicted time (predicted_seconds, from the last length's times and the growth of
  T²) would pass the time budget; its progress events carry that prediction for the lengths left.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import SDPBackend

from attn_core import flex
from attn_core.accounting import attention_flops, naive_working_bytes, score_matrix_bytes, tiled_working_bytes, visible_pairs
from attn_core.attention import naive_attention
from attn_core.device import DEFAULT_THREADS, available_devices, resolve_device
from attn_core.masks import MODEL_MASKS, Mask, forms, window_mask
from attn_core.tiled import UNTUNED, TilePlan, tiled_attention
from attn_core.timing import (
    DTYPES,
    GIB,
    MATMUL_SIZE,
    MIB,
    SAMPLE_S,
    SampleTimer,
    SlopeFit,
    backend_name,
    benchmark_timer,
    calls_per_sample,
    format_bytes,
    loglog_fit,
    matmul_gflops,
    peak_bytes,
    sdpa_backend,
    seconds,
    supported_dtypes,
    time_interleaved,
)

METHODS = ("naive", "sdpa", "tiled", "flex")
DEFAULT_METHODS = METHODS[:3]  # FlexAttention on request: its first call of each mask and shape compiles (attn_core.flex)
MATMUL = "matmul"  # the reference run's name
CPU_MEMORY_BUDGET = 2 * GIB
CUDA_BUDGET_FRACTION = 0.5  # of the GPU memory free when the sweep is set up
DEFAULT_TIME_BUDGET = 20.0  # seconds
DEFAULT_LENGTHS = (256, 512, 1024, 2048)
DEFAULT_WINDOW = 256  # keys per query of the Cost view's window mask: one key block of the tiled attention
CUDA_SCRATCH = 8 * MIB  # allowance for the workspace of SDPA's CUDA kernels
MATMUL_SCRATCH = 64 * MIB  # the matmul reference's largest block of scores
BLOCK_MASK_BYTES_PER_PAIR = 11  # what FlexAttention's create_block_mask takes to make a block mask: 10.0 measured


def default_memory_budget(device: str) -> int:
    return int(torch.cuda.mem_get_info()[0] * CUDA_BUDGET_FRACTION) if device == "cuda" else CPU_MEMORY_BUDGET


SWEEP_MASKS = ("none", "causal", "window", *MODEL_MASKS)  # the masks a sweep runs under (a padded batch's have no batch)
MASK_FORMS = forms(SWEEP_MASKS)
SDPA_OWN = ("none", "causal")  # the masks SDPA applies itself (is_causal); it is given the others as a boolean attn_mask


def method_arguments(mask: Mask) -> tuple[bool, int | None]:
    """The ``causal`` and ``window`` arguments every method applies ``mask`` with: (True, W) for window:W, (True, None)
    for causal; (False, None) for none, and for a model's mask, which each method is given as its boolean (given_mask)."""
    return mask.kind in ("causal", "window"), mask.sizes[0] if mask.kind == "window" else None


def given_mask(mask: Mask, t: int, device: torch.device | str | None = None) -> Tensor | None:
    """The (T, T) boolean every method is given: a model's mask at length ``t``; None for none, causal and window."""
    return mask.boolean(t, device=device) if mask.kind in MODEL_MASKS else None


def sdpa_mask(mask: Mask, t: int, device: torch.device | str | None = None) -> Tensor | None:
    """What SDPA gets as ``attn_mask``: the (T, T) boolean of a window (SDPA has no window argument) or of a model's
    mask; None for none and causal (``is_causal``)."""
    return None if mask.kind in SDPA_OWN else mask.boolean(t, device=device)


def mask_pairs(mask: Mask, t: int) -> float:
    """The (query, key) pairs ``mask`` lets through at length ``t``, which FLOPs count: ``visible_pairs`` (T²/2 for
    causal), or a model's mask's True entries."""
    given = given_mask(mask, t)
    return visible_pairs(t, *method_arguments(mask)) if given is None else float(given.sum())


@dataclass(frozen=True)
class Settings:
    """One sweep: the inputs' shape (B, H, T, d) and type, the masks, where to run, how long and how much memory."""

    batch: int = 1
    heads: int = 8
    d_head: int = 64
    dtype: str = "float32"
    causal: bool = False
    device: str = "cpu"
    lengths: tuple[int, ...] = DEFAULT_LENGTHS
    repeats: int = 5
    methods: tuple[str, ...] = DEFAULT_METHODS
    memory_budget: int = 0  # bytes; 0: default_memory_budget(device)
    time_budget: float = DEFAULT_TIME_BUDGET  # seconds
    masks: tuple[str, ...] = ()  # Masks' link texts, every method runs under each; (): ("causal",) or ("none",) by ``causal``
    tiles: TilePlan = UNTUNED  # the tiled kernel's: this machine's (attn_core.tuning.current())

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
        if "flex" in self.methods and flex.unavailable(self.device):
            raise ValueError(f"flex is unavailable: {flex.unavailable(self.device)}")
        if self.time_budget <= 0 or self.memory_budget < 0:
            raise ValueError("the time budget must be positive and the memory budget not negative")
        for text in self.masks:
            Mask.parse(text, SWEEP_MASKS)
        if not self.masks:
            object.__setattr__(self, "masks", ("causal",) if self.causal else ("none",))
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

    def matmul_bytes(self, t: int) -> int:
        """The matmul reference's buffers at length ``t`` (see matmul_reference): a block of scores and the output."""
        rows = self.batch * self.heads
        scores = rows * matmul_block(rows, t, t, self.torch_dtype.itemsize) * t
        return (scores + rows * t * self.d_head) * self.torch_dtype.itemsize

    def working_bytes(self, method: str, t: int, backend: SDPBackend | None = None, mask: str | None = None) -> int:
        """Estimated bytes one call allocates on top of its inputs, output included (SDPA: that of ``backend``),
        under ``mask`` (default: the first of ``masks``). A (T, T) boolean mask made for the run is counted too
        (SDPA's window, a model's mask), and the float copy SDPA makes of a boolean mask (T² elements)."""
        applied = Mask.parse(mask or self.masks[0])
        model = applied.kind in MODEL_MASKS  # every method gets a (T, T) boolean mask
        causal, _ = method_arguments(applied)
        sdpa_masked = applied.kind not in SDPA_OWN  # SDPA gets a (T, T) boolean mask
        sizes = (self.batch, self.heads, t, self.d_head, self.torch_dtype)
        sdpa_copy = (method == "sdpa" and sdpa_masked) * t * t * self.torch_dtype.itemsize
        if method == "naive" or (method == "sdpa" and backend == SDPBackend.MATH):
            matrices = 2 if method == "naive" else 3  # math also keeps a scaled copy
            return naive_working_bytes(*sizes, causal or model, matrices=matrices) + sdpa_copy
        if method == "tiled":
            return tiled_working_bytes(*sizes, causal or model, mask=model, plan=self.tiles) + model * t * t
        # Fused kernels: the output and a float32 log-sum-exp per row. FlexAttention's CPU kernel held three outputs'
        # worth at its peak (measured: B = 1 and 2, H = 8 and 16, T = 256 to 4,096); before its calls, making its block
        # mask (create_block_mask, which evaluates the mask_mod at every pair) took 10 bytes a (query, key) pair.
        output = math.prod(self.shape(t)) * self.torch_dtype.itemsize + self.batch * self.heads * t * 4
        if method == "flex":
            return max(3 * output + (CUDA_SCRATCH if self.device == "cuda" else MIB), BLOCK_MASK_BYTES_PER_PAIR * t * t)
        # SDPA's CPU flash kernel gives each thread a float32 tile of up to 256 queries × 512 keys and a 256 × d output
        # (and a reduced copy of the tile).
        scratch = CUDA_SCRATCH if self.device == "cuda" else DEFAULT_THREADS * 256 * (512 + self.d_head + 2) * 6
        return output + scratch + sdpa_masked * t * t + sdpa_copy


@dataclass(frozen=True)
class Point:
    """One method under one mask measured at one length T."""

    method: str
    mask: str  # its Mask's link text: "none", "causal", "window:W", "documents:K", "prefix:P" or "global:W:G"
    T: int
    backend: str  # SDPA's kernel; "" for the others
    median_ms: float
    min_ms: float
    iqr_ms: float  # interquartile range of the samples
    noisy: bool  # the IQR stayed above 20% of the median after re-measuring: not fitted
    gflops: float  # attention_flops (of the pairs the mask lets through) / median time
    pct_of_matmul: float  # gflops as a percentage of matmul_gflops, at most 100
    matmul_gflops: float  # the best rate of the same-shape matmuls at this T, in this sweep
    peak_mib: float  # measured, on top of the inputs
    estimate_mib: float  # Settings.working_bytes, what the memory budget was checked with
    matrix_mib: float  # one (B, H, T, T) score matrix
    max_diff: float  # largest |output - SDPA's output| under the same mask
    compile_s: float = 0.0  # FlexAttention: its first call (which compiles) less a later one; 0 for the others

    @property
    def iqr_pct(self) -> float:
        """The interquartile range, % of the median."""
        return 100 * self.iqr_ms / self.median_ms


@dataclass(frozen=True)
class Skipped:
    """A point refused before the sweep: it would not fit the memory budget."""

    method: str
    T: int
    needed: int  # bytes: inputs + the matmul reference's buffers + working bytes
    budget: int
    mask: str = "none"

    @property
    def message(self) -> str:
        under = "" if self.mask in ("none", "causal") else f" ({self.mask})"
        needs = f"T={self.T:,} {self.method}{under} needs ≈ {format_bytes(self.needed)}"
        return f"{needs}, over the {format_bytes(self.budget)} budget; skipped"


@dataclass(frozen=True)
class Progress:
    done: float  # fraction of the planned work (weighted by T²) finished
    text: str


@dataclass(frozen=True)
class Stopped:
    """The sweep ended early; the points measured so far stand."""

    message: str


def plan_runs(settings: Settings) -> tuple[dict[int, list[tuple[str, str]]], list[Skipped]]:
    """The (method, mask) runs at each length, and the points refused for memory."""
    runs, skipped = {}, []
    for t in sorted(set(settings.lengths)):
        stand_in = torch.empty(1, 1, 1, settings.d_head, dtype=settings.torch_dtype, device=settings.device)
        stand_in = stand_in.expand(*settings.shape(t))  # (B, H, T, d) without the memory
        runs[t] = []
        for method in settings.methods:
            for mask in settings.masks:
                kind = Mask.parse(mask).kind
                masked = kind not in SDPA_OWN  # SDPA is given a (T, T) boolean mask
                given = torch.ones(1, 1, dtype=torch.bool, device=settings.device).expand(t, t) if masked else None
                backend = sdpa_backend(stand_in, stand_in, stand_in, kind == "causal", given)
                needed = settings.input_bytes(t) + settings.matmul_bytes(t) + settings.working_bytes(method, t, backend, mask)
                if needed > settings.memory_budget:
                    skipped.append(Skipped(method, t, needed, settings.memory_budget, mask))
                else:
                    runs[t].append((method, mask))
    return runs, skipped


def plan(settings: Settings) -> tuple[dict[int, list[str]], list[Skipped]]:
    """The methods to run at each length (once per mask), and the points refused for memory."""
    runs, skipped = plan_runs(settings)
    return {t: [method for method, _ in pairs] for t, pairs in runs.items()}, skipped


def runner(
    method: str, q: Tensor, k: Tensor, v: Tensor, causal: bool = False, window: int | None = None,
    mask: Tensor | None = None, tiles: TilePlan = UNTUNED,
) -> Callable[[], Tensor]:  # fmt: skip
    """One call of ``method`` on q, k, v (B, H, T, d) under the causal mask, a window or a (T, T) boolean ``mask``
    (a model's); SDPA gets a window as a prepared (T, T) boolean mask; the tiled kernel cuts its work by ``tiles``."""
    if method == "naive":
        return lambda: naive_attention(q, k, v, causal=causal, window=window, mask=mask)
    if method == "sdpa":
        if window is not None:
            mask = window_mask(q.shape[-2], window, k.shape[-2], q.device)  # (Tq, Tk)
        return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and mask is None)
    if method == "tiled":
        return lambda: tiled_attention(q, k, v, causal=causal, window=window, mask=mask, plan=tiles)
    raise ValueError(f"{method} runs under a Mask (attn_core.flex.runner), not a boolean one")


def matmul_block(rows: int, t_q: int, t_k: int, itemsize: int) -> int:
    """Queries per block of the matmul reference: all ``t_q`` unless their (rows, t_q, t_k) scores pass MATMUL_SCRATCH."""
    return max(1, min(t_q, MATMUL_SCRATCH // (rows * t_k * itemsize)))


def matmul_reference(q: Tensor, k: Tensor, v: Tensor) -> Callable[[], Tensor]:
    """Attention's two matmuls without the softmax, Q Kᵀ then (scores) V per head, into buffers made once
    (Settings.matmul_bytes); over blocks of queries when the (B·H, T, T) scores would pass MATMUL_SCRATCH."""
    q3, k3, v3 = (x.reshape(-1, *x.shape[-2:]) for x in (q, k, v))  # (B·H, T, d)
    rows, t_q, t_k = q3.shape[0], q3.shape[1], k3.shape[1]
    block = matmul_block(rows, t_q, t_k, q.element_size())
    scores = q3.new_empty(rows, block, t_k)  # (B·H, block, Tk)
    out = q3.new_empty(rows, t_q, v3.shape[-1])  # (B·H, Tq, d_v)
    keys = k3.transpose(1, 2)  # (B·H, d, Tk)

    def run() -> Tensor:
        for start in range(0, t_q, block):
            n = min(block, t_q - start)
            torch.bmm(q3[:, start : start + n], keys, out=scores[:, :n])
            torch.bmm(scores[:, :n], v3, out=out[:, start : start + n])
        return out

    return run


@torch.inference_mode()
def measure_length(
    settings: Settings,
    t: int,
    runs: Sequence[tuple[str, str]],
    timer: SampleTimer = benchmark_timer,
    deadline: float = math.inf,
) -> list[Point]:
    """Warm-up, interleaved timed rounds with the matmul reference (noisy runs re-measured before
    ``deadline``), then one memory run per run, at one length."""
    device = resolve_device(settings.device)
    generator = torch.Generator(device).manual_seed(t)
    q, k, v = (torch.randn(settings.shape(t), generator=generator, dtype=settings.torch_dtype, device=device) for _ in range(3))
    applied = {mask: Mask.parse(mask) for _, mask in runs}
    models = {mask: given_mask(applied[mask], t, device) for mask in applied}  # (T, T) each, or None: made once a mask
    calls = {
        (method, mask): flex.runner(q, k, v, applied[mask])
        if method == "flex"
        else runner(method, q, k, v, *method_arguments(applied[mask]), models[mask], settings.tiles)
        for method, mask in runs
    }
    calls[MATMUL, "none"] = matmul_reference(q, k, v)
    backends, max_diff, warm_up, compile_s = {}, {}, {}, {}
    for mask in applied:
        allowed = sdpa_mask(applied[mask], t, device)  # (T, T) or None
        is_causal = applied[mask].kind == "causal"
        backends[mask] = sdpa_backend(q, k, v, is_causal, allowed)
        reference = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, is_causal=is_causal)
        for method, run_mask in runs:
            if run_mask == mask:  # the warm-up: its time (float() waits for CUDA) sets the calls per sample
                started = time.perf_counter()
                max_diff[method, mask] = float((calls[method, mask]() - reference).abs().max())
                warm_up[method, mask] = time.perf_counter() - started
                if method == "flex":  # that call compiled: the next one is the kernel's time
                    first, warm_up[method, mask] = warm_up[method, mask], seconds(calls[method, mask], device)
                    compile_s[method, mask] = max(0.0, first - warm_up[method, mask])
        del reference, allowed
    warm_up[MATMUL, "none"] = seconds(calls[MATMUL, "none"], device)
    numbers = {key: calls_per_sample(warm_up[key]) for key in calls}
    timed = time_interleaved(calls, numbers, settings.repeats, timer, (MATMUL, "none"), deadline)
    full = attention_flops(settings.batch, settings.heads, t, settings.d_head)
    matmul_rate = full / timed[MATMUL, "none"].spread.min / 1e9
    points = []
    for method, mask in runs:
        spread = timed[method, mask].spread
        rate = full * mask_pairs(applied[mask], t) / (t * t) / spread.median / 1e9  # FLOPs of the pairs the mask lets through
        points.append(
            Point(
                method,
                mask,
                t,
                backend_name(backends[mask], settings.device) if method == "sdpa" else "",
                1000 * spread.median,
                1000 * spread.min,
                1000 * spread.iqr,
                timed[method, mask].noisy,
                rate,
                100 * min(1.0, rate / matmul_rate),
                matmul_rate,
                peak_bytes(calls[method, mask], device) / MIB,
                settings.working_bytes(method, t, backends[mask], mask) / MIB,
                score_matrix_bytes(settings.batch, settings.heads, t, settings.torch_dtype) / MIB,
                max_diff[method, mask],
                compile_s.get((method, mask), 0.0),
            )
        )
    return points


def predicted_seconds(settings: Settings, points: Sequence[Point], t: int) -> float:
    """Seconds to measure length ``t`` from ``points``, those of one shorter length: every call's time grows
    like T² (the matmul reference's too); each run makes ``repeats`` samples of at least SAMPLE_S, a warm-up
    call and a memory call."""
    full = attention_flops(settings.batch, settings.heads, points[0].T, settings.d_head)
    calls = [p.median_ms / 1000 for p in points] + [full / points[0].matmul_gflops / 1e9]
    growth = (t / points[0].T) ** 2
    return sum(settings.repeats * max(SAMPLE_S, call * growth) + 2 * call * growth for call in calls)


def sweep(settings: Settings, timer: SampleTimer = benchmark_timer) -> Iterator[Skipped | Progress | Point | Stopped]:
    """The refused points first, then per length its progress and its points; Stopped if time runs out.

    ``timer`` takes one timed sample (see timing.SampleTimer); tests pass a fake one."""
    runs, skipped = plan_runs(settings)
    yield from skipped
    work = {t: t * t * len(pairs) for t, pairs in runs.items() if pairs}
    total, done = sum(work.values()) or 1, 0
    start = time.perf_counter()
    last: list[Point] = []  # the points of the last length
    overhead = 0.0  # seconds per length the model below leaves out (profiler, setup), from the last length
    for t in work:
        elapsed = time.perf_counter() - start
        left = {u: predicted_seconds(settings, last, u) + overhead for u in work if u >= t} if last else {}
        if last and elapsed + left[t] > settings.time_budget:
            yield Stopped(
                f"Stopped by the {settings.time_budget:g} s time budget before T={t:,}: {elapsed:.1f} s used, and "
                f"T={t:,} would take about {left[t]:.1f} s more (time grows like T²)."
            )
            return
        estimate = f" (about {sum(left.values()):.0f} s left)" if last else ""
        names = ", ".join(dict.fromkeys(method for method, _ in runs[t]))
        compiling = " (flex compiles its kernel for each mask first: seconds each)" if "flex" in names else ""
        yield Progress(done / total, f"Measuring T={t:,}: {names}…{compiling}{estimate}")
        begun = time.perf_counter()
        last = measure_length(settings, t, runs[t], timer, start + settings.time_budget)
        overhead = max(0.0, time.perf_counter() - begun - predicted_seconds(settings, last, t))
        yield from last
        done += work[t]
    yield Progress(1.0, f"Done in {time.perf_counter() - start:.1f} s.")


@dataclass(frozen=True)
class Fit:
    """A run's log-log slopes over the longer half of its lengths (at least two), where the T² term dominates
    the fixed overheads; noisy points are left out of the time slope."""

    time: SlopeFit  # of the median time; NaN when fewer than two clean lengths are left: too noisy for a slope
    memory: SlopeFit  # of the peak memory
    lengths: tuple[int, ...]  # the T the time slope was fitted on
    noisy: tuple[int, ...]  # the T of that half left out as noisy


def fits(points: Sequence[Point]) -> dict[tuple[str, str], Fit]:
    """Per (method, mask), the slopes of time and peak memory against T (see Fit)."""
    runs = {
        (p.method, p.mask): sorted((q for q in points if (q.method, q.mask) == (p.method, p.mask)), key=lambda q: q.T)
        for p in points
    }
    found = {}
    for key, rows in runs.items():
        longer = rows[min(len(rows) // 2, max(0, len(rows) - 2)) :]
        clean = [p for p in longer if not p.noisy]
        found[key] = Fit(
            loglog_fit([p.T for p in clean], [p.median_ms for p in clean]),
            loglog_fit([p.T for p in longer], [p.peak_mib for p in longer]),
            tuple(p.T for p in clean),
            tuple(p.T for p in longer if p.noisy),
        )
    return found


TABLE_COLUMNS = {  # column: (Point field, format)
    "method": ("method", "{}"),
    "backend": ("backend", "{}"),
    "T": ("T", "{:,}"),
    "median ms": ("median_ms", "{:.2f}"),
    "mask": ("mask", "{}"),
    "min ms": ("min_ms", "{:.2f}"),
    "noise (IQR %)": ("iqr_pct", "{:.1f}"),
    "noisy": ("noisy", "{}"),
    "GFLOP/s": ("gflops", "{:.1f}"),
    "matmul GFLOP/s": ("matmul_gflops", "{:.1f}"),  # what "% of matmul" divides by
    "% of matmul": ("pct_of_matmul", "{:.0f}"),
    "peak MiB": ("peak_mib", "{:.2f}"),
    "T×T matrix MiB": ("matrix_mib", "{:.2f}"),
    "max |Δ| vs SDPA": ("max_diff", "{:.1e}"),
}


def table_row(point: Point) -> dict[str, str]:
    """A point as the tables print it."""
    return {column: text.format(getattr(point, name)) for column, (name, text) in TABLE_COLUMNS.items()}


def describe_settings(settings: Settings) -> str:
    """One line naming the device, its threads and the settings (the Cost view's caption of a sweep, whose
    matmul rates are those of its points: Point.matmul_gflops)."""
    masks = "" if settings.masks == (("causal",) if settings.causal else ("none",)) else f", masks {', '.join(settings.masks)}"
    return (
        f"{settings.device}, {torch.get_num_threads()} threads, {settings.dtype}, B={settings.batch}, H={settings.heads}, "
        f"d={settings.d_head}, causal {'on' if settings.causal else 'off'}{masks}, {settings.repeats} repeats"
    )


def describe(settings: Settings) -> str:
    """describe_settings and this machine's rate on one square matmul (timing.matmul_gflops), for the command
    line's heading."""
    square = f"{MATMUL_SIZE} × {MATMUL_SIZE} matmul {matmul_gflops(settings.device, settings.dtype):.1f} GFLOP/s"
    return f"{describe_settings(settings)}; {square}"
