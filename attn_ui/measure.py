"""The Streamlit side of a cost sweep: one sweep at a time per server, with a progress bar; and the curves and
slopes of measured points (this server's and the shipped reference results) as the Cost view draws them.

Timings taken while another session's sweep shares the cores would be wrong for both, so a lock
shared by every session (``st.cache_resource``) lets one sweep run; a second waits, saying so. Leaving the
page (or rerunning it) stops a sweep within about a second: see SweepProgress.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace

import pandas as pd
import streamlit as st
import torch
from pandas.io.formats.style import Styler

from attn_core import flex
from attn_core.accounting import score_matrix_bytes
from attn_core.bench import Reference
from attn_core.device import DEFAULT_THREADS, torch_threads
from attn_core.masks import MODEL_MASKS, Mask
from attn_core.online_softmax import OnlineSoftmaxWalk
from attn_core.sweep import (
    DEFAULT_METHODS,
    TABLE_COLUMNS,
    Point,
    Progress,
    Settings,
    Stopped,
    describe_settings,
    fits,
    mask_pairs,
    plan,
    sweep,
)
from attn_core.timing import benchmark_timer, format_bytes
from attn_core.tuning import tune, tuned
from attn_ui import downloads
from attn_ui.malloc import sweep_allocations
from attn_ui.slide import presenting

# Every point's columns (sweep.TABLE_COLUMNS) in three tables of a few columns each, so that each fits the main
# column of a 1024-px window with the sidebar open (528 px inside the expander).
POINT_TABLES = {
    "Time": ("method", "T", "mask", "median ms", "min ms", "noise (IQR %)", "noisy"),
    "Rate": ("method", "T", "backend", "GFLOP/s", "matmul GFLOP/s", "% of matmul"),
    "Memory and error": ("method", "T", "peak MiB", "T×T matrix MiB", "max |Δ| vs SDPA"),
}
NUMBER_FORMATS = {
    "median ms": "%.2f",
    "min ms": "%.2f",
    "noise (IQR %)": "%.1f",
    "GFLOP/s": "%.1f",
    "matmul GFLOP/s": "%.1f",
    "% of matmul": "%.0f",
    "peak MiB": "%.2f",
    "T×T matrix MiB": "%.2f",
    "max |Δ| vs SDPA": "%.1e",
}

MEASURE = "Measure on this server"  # the button that starts a sweep
LAST_SWEEP = "cost_sweep"  # session state: the session's last Measured
WAIT_S = 120.0  # longest wait for another session's sweep (its time budget, plus its last length's overrun)
REDRAW_S = 0.5  # while a sweep runs, its progress bar is sent again after this long (see SweepProgress)


@st.cache_resource
def sweep_lock() -> threading.Lock:
    """The server's one lock for sweeps."""
    return threading.Lock()


class SweepProgress:
    """A sweep's progress bar. Streamlit stops a script (the user left the page, or reran it) only inside an st
    call, and a sweep draws its bar once per length, which can last minutes; ``timer``, the sweep's sample timer,
    sends the bar again (at most every REDRAW_S) before each timed sample, so a sweep stops within a sample."""

    def __init__(self) -> None:
        self.bar = st.progress(0.0, text="Planning…")
        self.done, self.text, self.drawn = 0.0, "Planning…", time.perf_counter()

    def show(self, done: float, text: str) -> None:
        self.bar.progress(done, text=text)
        self.done, self.text, self.drawn = done, text, time.perf_counter()

    def timer(self, run: Callable[[], object], number: int) -> float:
        if time.perf_counter() - self.drawn > REDRAW_S:
            self.show(self.done, self.text)  # raises Streamlit's StopException if the user has left
        return benchmark_timer(run, number)


@dataclass(frozen=True)
class Measured:
    """What one sweep measured, and for which settings."""

    settings: Settings
    points: tuple[Point, ...]
    stopped: str | None  # why it ended early, or None
    machine: str  # the settings and the machine's threads as the sweep ran: ``sweep.describe_settings``


@contextmanager
def sweep_turn() -> Iterator[bool]:
    """This session's turn to measure: the server's sweep lock, after any other session's sweep (saying so), held
    with torch on every core (the views run on one thread, attn_ui.page). Yields False, holding nothing, where that
    wait timed out."""
    lock = sweep_lock()
    if not lock.acquire(blocking=False):
        st.info("Another sweep is running on this server; this one waits for it, so the two do not share the cores…")
        start = time.perf_counter()
        if not lock.acquire(timeout=WAIT_S):
            st.error(f"Gave up after waiting {WAIT_S:g} s for the other sweep to finish. Press **{MEASURE}** to try again.")
            yield False
            return
        st.caption(f"Waited {time.perf_counter() - start:.1f} s for the other sweep.")
    try:
        with torch_threads(DEFAULT_THREADS):
            yield True
    finally:
        lock.release()


def run_sweep(settings: Settings) -> Measured | None:
    """Run ``settings``' sweep with a progress bar, after any other session's sweep; None if that wait timed out."""
    with sweep_turn() as turn:
        if not turn:
            return None
        progress = SweepProgress()
        points, stopped, machine = [], None, ""
        try:
            with sweep_allocations():  # the largest mmap threshold for a sweep's large tensors
                if settings.device == "cpu" and "tiled" in settings.methods and tuned() is None:
                    # once per machine and torch version: the tiled kernel's tiles for this CPU
                    settings = replace(settings, tiles=tune(progress.show))
                machine = describe_settings(settings)
                for event in sweep(settings, progress.timer):
                    if isinstance(event, Progress):
                        progress.show(event.done, event.text)
                    elif isinstance(event, Point):
                        points.append(event)
                    elif isinstance(event, Stopped):
                        stopped = event.message
        except (MemoryError, torch.OutOfMemoryError) as error:  # the estimate fell short, or others use the memory
            first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
            stopped = f"Stopped: the machine ran out of memory ({first_line}). Lower the memory budget or the longest T."
    progress.bar.empty()
    return Measured(settings, tuple(points), stopped, machine)


def methods(flex_wanted: bool, device: str) -> tuple[str, ...]:
    """The methods a sweep runs: the default three, and FlexAttention where it is wanted and can compile here (a
    warning says why where it cannot)."""
    missing = flex.unavailable(device) if flex_wanted else None
    if missing:
        st.warning(f"FlexAttention is unavailable on this server: {missing}. The other methods are measured.")
    return DEFAULT_METHODS + (("flex",) if flex_wanted and not missing else ())


def sweep_status(settings: Settings, measured: Measured | None) -> None:
    """Above the charts: the points refused for memory, what the curves are (the reference's, or this server's with
    other settings), and how the last sweep ended where it stopped early or measured nothing."""
    _, refused = plan(settings)
    if refused:
        st.warning(
            "Refused before running, they would not fit the memory budget:\n\n- " + "\n- ".join(s.message for s in refused)
        )
    lengths = f"T = {settings.lengths[0]:,} … {settings.lengths[-1]:,}"
    if measured is None:
        if not presenting():  # on a slide, the legend says "reference" and the controls hold the button
            st.info(
                f"The curves are **reference results** measured on another machine (below). Press **{MEASURE}** to "
                f"measure {lengths} here; it stops by itself after the {settings.time_budget:g} s budget."
            )
    elif measured.settings != settings:
        st.info(
            "This server's results below were measured with other settings (their caption says which). "
            f"Press **{MEASURE}** to measure {lengths} with these."
        )
    if measured is not None and measured.stopped:
        st.warning(measured.stopped + (" The points measured so far are shown." if measured.points else ""))
    elif measured is not None and not measured.points:
        st.info("Nothing to measure: every point was refused. Raise the memory budget or lower T.")


def sweep_on_press(settings: Settings, pressed: bool) -> Measured | None:
    """This session's last sweep, and a new one of ``settings`` where its button was ``pressed`` (only then: changing
    a control never starts a sweep)."""
    measured = st.session_state.get(LAST_SWEEP)
    if pressed:
        measured = run_sweep(settings) or measured
        st.session_state[LAST_SWEEP] = measured
    return measured


def _runs(sources: dict[str, list[Point]]) -> dict[tuple[str, str, str], list[Point]]:
    """(source, method, mask) -> its points by T."""
    runs: dict[tuple[str, str, str], list[Point]] = {}
    for source, points in sources.items():
        for point in sorted(points, key=lambda p: p.T):
            runs.setdefault((source, point.method, point.mask), []).append(point)
    return runs


def _run_label(method: str, mask: str, masks: set[str]) -> str:
    """A run of one source: its method, and its mask where the source has several."""
    return f"{method} {mask}" if len(masks) > 1 else method


def _name(source: str, method: str, mask: str, masks: set[str]) -> str:
    """A curve's name: its run's label, and "(reference)" for shipped results."""
    return _run_label(method, mask, masks) + (" (reference)" if source == "reference" else "")


def result_curves(sources: dict[str, list[Point]], field: str) -> dict[str, tuple[list[int], list[float]]]:
    """One curve of ``field`` (a Point field) against T per source, method and mask."""
    masks = {source: {p.mask for p in points} for source, points in sources.items()}
    return {
        _name(source, method, mask, masks[source]): ([p.T for p in rows], [getattr(p, field) for p in rows])
        for (source, method, mask), rows in _runs(sources).items()
    }


def _slope_value(fit) -> str:
    return "—" if math.isnan(fit.slope) else f"{fit.slope:.2f}"


def _slope(fit) -> str:
    return _slope_value(fit) + ("" if math.isnan(fit.slope) or math.isnan(fit.stderr) else f" ± {fit.stderr:.2f}")


def slope_summary(sources: dict[str, list[Point]]) -> str:
    """The fitted slopes in a line a source, to read beside the charts (the table of ``slope_rows`` says more):
    e.g. "reference: time naive 1.93, sdpa 1.97, tiled 1.91; peak memory naive 1.98, sdpa 0.78, tiled 0.29"."""
    lines, unfitted = [], False
    for source, points in sources.items():
        masks, found = {p.mask for p in points}, fits(points)
        unfitted |= any(math.isnan(fit.time.slope) or math.isnan(fit.memory.slope) for fit in found.values())
        time, memory = (
            ", ".join(f"{_run_label(*run, masks)} {_slope_value(getattr(fit, of))}" for run, fit in found.items())
            for of in ("time", "memory")
        )
        lines.append(f"- {source}: time {time}; peak memory {memory}")
    unfitted_note = "\n\n— : too few lengths clean enough to fit a slope (the table below says which)." if unfitted else ""
    return "**Slopes** of the log-log curves (2 means ∝ T², 1 means ∝ T):\n" + "\n".join(lines) + unfitted_note


def slope_rows(sources: dict[str, list[Point]]) -> list[dict[str, str]]:
    """The fitted slopes of every run of every source, and what they were fitted on, as table rows."""
    rows = []
    for source, points in sources.items():
        for (method, mask), fit in fits(points).items():
            lengths = f"{fit.lengths[0]:,} … {fit.lengths[-1]:,}" if len(fit.lengths) > 1 else "too few clean lengths"
            rows.append(
                {
                    "results": source,
                    "method": method,
                    "mask": mask,
                    "slope of time": _slope(fit.time),
                    "slope of peak memory": _slope(fit.memory),
                    "fitted on T": lengths,
                    "left out (noisy)": ", ".join(f"{t:,}" for t in fit.noisy) or "none",
                }
            )
    return rows


def tiled_memory_note(settings: Settings, mask_name: str, masked: bool, t: int) -> str:
    """What the score matrix and the tiled kernel's memory are made of, for ``settings`` at length ``t``: its blocks
    (``settings.tiles``) and workspace (``tiled_working_bytes`` less the output), which are the same at every long T, but
    for a model's mask, whose classification into tiles takes T × T booleans."""
    rows = settings.batch * settings.heads
    tiles = settings.tiles.tiles(masked)
    heads_at_once, block_q, block_k = tiles.sizes(rows, t, t)
    output_bytes = math.prod(settings.shape(t)) * settings.torch_dtype.itemsize
    model = Mask.parse(settings.masks[-1]).kind in MODEL_MASKS
    workspace = settings.working_bytes("tiled", t, mask=settings.masks[-1]) - output_bytes
    return (
        f"For B = {settings.batch}, H = {settings.heads}, d = {settings.d_head}, {settings.dtype}, mask: {mask_name}. "
        "The score matrix alone is B·H·T²·bytes. The tiled version's extra memory is its output (B·H·T·d) plus a "
        f"workspace{'' if model else ' that does not grow with T'}: the B·H = {rows} heads go "
        + ("all at once" if heads_at_once == rows else f"{heads_at_once} at a time")
        + f", each with a {block_q} × {block_k} tile of float32 scores "
        f"({format_bytes(4 * heads_at_once * block_q * block_k)} together, at most {format_bytes(tiles.tile_bytes)}) "
        f"and its {block_q} queries scaled, with their running max, sum and output"
        + ("; the mask's tile as booleans and as floats added to the scores" if masked else "")
        + (f"; each tile's scores in {settings.dtype} and its values in float32" if settings.dtype != "float32" else "")
        + (
            "; and, growing like T², the model's T × T boolean mask, classified tile by tile before the run (three "
            "T × T booleans, more than the rest at long T)"
            if model
            else ""
        )
        + f": {format_bytes(workspace)} in all{f' at T = {t:,}' if model else ''}."
    )


def dense_ratios(points: list[Point], spec: str) -> str:
    """Each method's time under the mask ``spec`` over its time without a mask (dense), at the longest T measured
    under both, and the share of query-key pairs the mask lets through there."""
    medians = {(p.method, p.mask, p.T): p.median_ms for p in points}
    both = [t for method, mask, t in medians if mask == spec and (method, "none", t) in medians]
    if not both:
        return "Nothing measured both with and without the mask yet: no ratio to dense."
    t = max(both)
    ratios = ", ".join(
        f"{method} {medians[method, spec, t] / medians[method, 'none', t]:.2f}×"
        for method, mask, at in medians
        if mask == spec and at == t and (method, "none", t) in medians
    )
    share = mask_pairs(Mask.parse(spec), t) / (t * t)
    return (
        f"**Against dense**, at T = {t:,} ({spec} lets {share:.0%} of the query-key pairs through): {ratios} the time "
        "without a mask. Tiled skips the tiles the mask hides; naive, and SDPA given a boolean mask (it skips blocks for "
        "is_causal only), compute every pair and then mask."
    )


def fastest(points: list[Point]) -> str:
    """Which method was fastest at each length under each mask measured (lengths in a row with the same winner
    joined), and FlexAttention's compile times, apart from its timed calls."""
    lines = []
    for mask in dict.fromkeys(point.mask for point in points):
        best: dict[int, Point] = {}
        for point in points:
            if point.mask == mask and (point.T not in best or point.median_ms < best[point.T].median_ms):
                best[point.T] = point
        spans: list[list[int]] = []
        for t in sorted(best):
            if spans and best[spans[-1][0]].method == best[t].method:
                spans[-1].append(t)
            else:
                spans.append([t])
        said = "; ".join(f"**{best[span[0]].method}** at T = {_lengths(span)}" for span in spans)
        lines.append(f"Fastest here{f' under {mask}' if len(best) and mask != 'none' else ''}: {said}.")
    compiled = [point for point in points if point.method == "flex"]
    if compiled:
        times = ", ".join(f"{point.compile_s:.1f} s (T = {point.T:,}, {point.mask})" for point in compiled)
        lines.append(f"FlexAttention compiled on the first call of each mask and length, not counted in its times: {times}.")
    return "\n\n".join(lines)


def _lengths(lengths: list[int]) -> str:
    return f"{lengths[0]:,}" if len(lengths) == 1 else f"{lengths[0]:,} … {lengths[-1]:,}"


def keep_results(sources: dict[str, list[Point]], reference: Reference, measured: Measured | None) -> None:
    """Every point drawn, for the view's bundle (Results.csv), with the settings and the machine each source was
    measured with."""
    settings = {"reference": {**reference.settings, "machine": reference.machine}}
    if "this server" in sources:
        settings["this server"] = {**asdict(measured.settings), "machine": measured.machine}
    rows = [{"source": source, **asdict(point)} for source, drawn in sources.items() for point in drawn]
    downloads.keep_table("Results", pd.DataFrame(rows), settings)


def point_tables(points: list[Point]) -> None:
    """Every point's numbers, in the three tables of POINT_TABLES, each with its columns' formats."""
    config = {column: st.column_config.NumberColumn(format=text) for column, text in NUMBER_FORMATS.items()}
    for title, columns in POINT_TABLES.items():
        st.markdown(f"**{title}**")
        table = pd.DataFrame([{column: getattr(point, TABLE_COLUMNS[column][0]) for column in columns} for point in points])
        st.dataframe(table, hide_index=True, column_config=config)


def long_context_rows(settings: Settings, mask: str, contexts: dict[str, int]) -> pd.DataFrame:
    """Per long context: one T × T score matrix's size and what naive and tiled attention need under ``mask``."""
    rows = []
    for name, t in contexts.items():
        score_matrix = score_matrix_bytes(settings.batch, settings.heads, t, settings.torch_dtype)
        needs = {method: settings.input_bytes(t) + settings.working_bytes(method, t, mask=mask) for method in ("naive", "tiled")}
        rows.append(
            {
                "context": name,
                "T": f"{t:,}",
                "one T × T score matrix": format_bytes(score_matrix),
                "naive needs ≈": format_bytes(needs["naive"]),
                "tiled needs ≈": format_bytes(needs["tiled"]),
            }
        )
    return pd.DataFrame(rows)


def walk_rows(walk: OnlineSoftmaxWalk) -> Styler:
    """The online softmax's state after each block of keys, one row a block."""
    rows = [
        {
            "block": i,
            "keys": f"{step.keys.start}–{step.keys.stop - 1}",
            "block max": step.block_max,
            "running max m": step.running_max,
            "rescale exp(m_old − m_new)": step.rescale,
            "running sum ℓ": step.running_sum,
            "running output o / ℓ": ", ".join(f"{x:.4f}" for x in step.running_output.tolist()),
        }
        for i, step in enumerate(walk.steps)
    ]
    return pd.DataFrame(rows).style.format(precision=4)
