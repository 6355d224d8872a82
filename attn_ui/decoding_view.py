"""The Decoding view's drawing of which K/V head each query head reads, and its measured section: one attention layer
of each layout decoding with and without its KV cache, with a window and with sinks + a window (the shipped reference
results until its button measures them on this server; the points cached per server)."""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from attn_core.decoding import Layout, kv_head_read
from attn_core.decoding_sweep import (
    CONTEXTS,
    FIT_FROM,
    LAYOUTS,
    MEASURED_LAYER,
    REFERENCE_COMMAND,
    STEPS,
    VARIANTS,
    DecodePoint,
    Variant,
    measure_point,
    reference_results,
    sweep_settings,
)
from attn_core.timing import loglog_fit
from attn_ui import page, slide
from attn_ui.charts import LINE_HEIGHT, LINE_WIDTH, MAX_WIDTH, head_groups, lines
from attn_ui.draw import draw
from attn_ui.malloc import sweep_allocations
from attn_ui.measure import MEASURE, sweep_turn
from attn_ui.steps import Row, block, chart_block, row

LAYOUT_NAMES = {"mha": "MHA", "gqa": "GQA", "mqa": "MQA", "mla": "MLA", "mla absorbed": "MLA absorbed"}
# Session state: a press of Measure not yet carried out. Kept by the button's callback and dropped once the sweep has
# run (to its end or to its time budget): a rerun the browser asks for meanwhile stops the measuring run, and the next
# goes on from the points measured (each is cached). What it measured: MEASURED_POINTS, and why it stopped: STOPPED.
PRESSED, MEASURED_POINTS, STOPPED = "_decoding_pressed", "_decoding_points", "_decoding_stopped"
HEAD_AXIS_ROOM = 60  # pixels left of the query heads' cells: the layouts' names
CACHED, UNCACHED, WINDOWED, SINKS_AND_WINDOW = VARIANTS
# The measured section's parts: the two variants each one charts side by side, and what it charts of them.
PARTS = {
    1: ((CACHED, UNCACHED), "step_ms"),
    2: ((WINDOWED, SINKS_AND_WINDOW), "step_ms"),
    3: ((CACHED, SINKS_AND_WINDOW), "cache_bytes"),
}


def head_groups_block(row: Row, found: list[Layout], heads: int) -> None:
    """A row of cells a layout, one a query head, coloured by the K/V head it reads (MLA's: the latent), in a block of
    ``row``."""
    reads = {
        LAYOUT_NAMES[layout.kind]: ["latent"] * heads
        if layout.latent
        else [str(kv_head_read(h, heads, layout.kv_heads)) for h in range(heads)]
        for layout in found
    }
    room = slide.on_slide(row.room)
    width = MAX_WIDTH if room is None else min(MAX_WIDTH, room.width)
    with block(width):
        draw(head_groups, reads, plot_width=width - HEAD_AXIS_ROOM, title="The K/V head each query head reads")


def by_layout(points: tuple[DecodePoint, ...], variant: Variant, field: str) -> dict[str, np.ndarray]:
    """One ``field`` of the points of ``variant``, a series a layout in the order of the contexts."""
    return {
        LAYOUT_NAMES[layout]: np.array([getattr(p, field) for p in points if p.layout == layout and p.variant == variant.name])
        for layout in LAYOUTS
    }


@st.cache_resource(max_entries=len(LAYOUTS) * len(VARIANTS) * len(CONTEXTS), show_spinner=False)  # one sweep
def measured_point(layout: str, variant_name: str, context: int) -> DecodePoint:
    """``attn_core.decoding_sweep.measure_point``, once per server and setting: a measurement shown again at once."""
    variant = next(variant for variant in VARIANTS if variant.name == variant_name)
    return measure_point(layout, variant, context, **MEASURED_LAYER)


def measure_here(time_budget: float) -> None:
    """The sweep on this server, its shortest contexts first, with a progress bar, until its end or ``time_budget``
    seconds: the points into MEASURED_POINTS, and where the budget stopped it into STOPPED (a press goes on from
    there: the points measured are cached)."""
    settings = sorted(sweep_settings(), key=lambda setting: setting[2])  # every layout and variant at each context
    with sweep_turn() as turn:
        if not turn:
            return
        progress = st.progress(0.0, text="Decoding")
        points, stopped, start = [], None, time.perf_counter()
        with sweep_allocations():
            for done, (layout, variant, context) in enumerate(settings):
                if time.perf_counter() - start > time_budget:
                    stopped = f"Stopped by the {time_budget:g} s budget at T = {context:,}: press **{MEASURE}** to go on."
                    break
                progress.progress(done / len(settings), text=f"{LAYOUT_NAMES[layout]} {variant.name}, T = {context:,}")
                points.append(measured_point(layout, variant.name, context))
        progress.empty()
    st.session_state[MEASURED_POINTS], st.session_state[STOPPED] = tuple(points), stopped
    st.session_state[PRESSED] = False


def slopes(points: tuple[DecodePoint, ...], variant: Variant, contexts: list[int]) -> str:
    """Each layout's log-log slope of a step's time against the context (``contexts``), from FIT_FROM tokens on."""
    fitted = [i for i, t in enumerate(contexts) if t >= FIT_FROM]
    x = [contexts[i] for i in fitted]
    times = by_layout(points, variant, "step_ms")
    return ", ".join(f"{name} {loglog_fit(x, series[fitted]).slope:.2f}" for name, series in times.items())


def measured_section(slides: page.Slides, time_budget: float) -> None:
    """Section 4: a decoding step's time and the cache's bytes, shipped reference results until its button measures
    them here (for at most ``time_budget`` seconds a press)."""
    width, heads, kv_heads = MEASURED_LAYER.values()
    if st.session_state.get(PRESSED):
        measure_here(time_budget)
    measured = st.session_state.get(MEASURED_POINTS)
    reference = reference_results()
    where = "measured on this server" if measured else "reference results, measured on another machine"
    slide.lead(
        f"One layer (C = {width}, {heads} heads, GQA with {kv_heads} K/V heads) decodes {STEPS} tokens after prompts of "
        f"{CONTEXTS[0]:,} to {CONTEXTS[-1]:,} tokens, each layout with its cache, without it (every earlier token's keys "
        f"and values computed again at each step), with a window of the last {WINDOWED.window} keys, and with "
        f"{SINKS_AND_WINDOW.sinks} sinks (the first tokens, kept) + that window: {where}.",
        f"A decoding step, and the cache's bytes, against the context: {where}.",
    )
    with slides.section_controls():  # on a slide, in the controls' popover: the slide's room goes to its charts
        if st.session_state.get(STOPPED):
            st.info(st.session_state[STOPPED])
        if not measured or st.session_state.get(STOPPED):
            st.button(MEASURE, key="measure_decoding", on_click=st.session_state.__setitem__, args=(PRESSED, True))
    points = measured or reference.points
    per_context = len(LAYOUTS) * len(VARIANTS)
    contexts = [t for t in CONTEXTS if sum(p.context == t for p in points) == per_context]  # a stopped sweep's: fewer
    points = tuple(p for p in points if p.context in contexts)
    x = np.array(contexts, dtype=float)
    for number, (variants, field) in PARTS.items():
        if not slides.part(number) or not contexts:
            continue
        with row(2, lines_above=1, lines_below=2) as charts:  # the slopes or the check under the charts
            for variant in variants:
                series = by_layout(points, variant, field)
                if field == "step_ms":
                    options = {"x_title": "tokens before", "y_title": "ms a step", "title": f"A step, {variant.name}"}
                else:
                    formula = {name: n / 2**20 for name, n in by_layout(points, variant, "formula_bytes").items()}
                    series = {name: n / 2**20 for name, n in series.items()}
                    title = f"Cache bytes, {'every token kept' if variant.window is None else variant.name}"
                    options = {"x_title": "tokens written", "y_title": "MiB", "theory": formula, "title": title}
                at = x if field == "step_ms" else x + STEPS  # the bytes after the last step
                chart_block(charts, LINE_WIDTH, LINE_HEIGHT, lines, at, series, log_x=True, log_y=True, **options)
        if field == "step_ms" and sum(t >= FIT_FROM for t in contexts) < 2:
            st.caption(f"Slopes are fitted from T = {FIT_FROM:,} on, on two lengths at least: measure on to see them.")
        elif field == "step_ms":
            st.caption(
                f"Log-log slopes from T = {FIT_FROM:,} on: "
                + "; ".join(f"{variant.name}: {slopes(points, variant, contexts)}" for variant in variants)
                + ". 1 means ∝ T, 0 a constant time."
            )
        else:
            equal = all(p.cache_bytes == p.formula_bytes for p in points if p.variant in {v.name for v in variants})
            worst = max(p.max_error for p in points)
            st.caption(
                f"Bytes measured from the cache's tensors (points) {'equal' if equal else 'differ from'} the formula's (dashed) "
                "at every point; largest |error| of an "
                f"output against causal attention recomputed: {worst:.1e}."
            )
    if not measured and not slide.presenting():
        about = reference.machine
        st.caption(
            f"Reference results: {about['cpu']}, {about['cores']} cores, torch {about['torch']}, {about['date']} "
            f"(`{REFERENCE_COMMAND}` measures them anew)."
        )
