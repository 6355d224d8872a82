"""The Decoding view's measured section: one attention layer decoding on this server, with and without its KV cache,
each layout; the points cached per server, measured on the section's button only."""

from __future__ import annotations

import numpy as np
import streamlit as st

from attn_core.decoding import KINDS, DecodePoint, measure_point
from attn_core.timing import loglog_fit
from attn_ui import page, slide
from attn_ui.charts import LINE_HEIGHT, LINE_WIDTH, MAX_WIDTH, lines
from attn_ui.steps import chart_block, row

LAYOUT_NAMES = {"mha": "MHA", "gqa": "GQA", "mqa": "MQA", "mla": "MLA"}
MEASURED_CONTEXTS = (256, 512, 1024, 2048, 4096)  # tokens before the measured steps
MEASURED_LAYER = (512, 8, 2)  # C, heads, GQA's K/V heads of the measured layer: a few seconds on a laptop, whatever the controls
# Session state: this session has asked to measure. Kept by the button's callback, not its value: a rerun the browser
# asks for meanwhile stops the measuring run, and the next one goes on from the points measured (each is cached).
MEASURED = "_decoding_measured"


def by_layout(points: list[DecodePoint], cache: bool, field: str) -> dict[str, np.ndarray]:
    """One ``field`` of the measured points with or without the cache, a series a layout in the order of the contexts."""
    return {
        LAYOUT_NAMES[kind]: np.array([getattr(p, field) for p in points if p.kind == kind and p.cache == cache]) for kind in KINDS
    }


@st.cache_resource(max_entries=len(KINDS) * 2 * len(MEASURED_CONTEXTS), show_spinner=False)  # one sweep
def measured_point(kind: str, cache: bool, context: int, d_model: int, heads: int, kv_heads: int) -> DecodePoint:
    """``attn_core.decoding.measure_point``, once per server and setting: a measurement shown again at once."""
    return measure_point(kind, cache, context, d_model=d_model, heads=heads, kv_heads=kv_heads)


def measured_section(slides: page.Slides) -> None:
    """Section 4: a decoding step's time and the cache's bytes, measured when its button is pressed."""
    width, n_heads, n_kv = MEASURED_LAYER
    slide.lead(
        f"One layer (C = {width}, {n_heads} heads, GQA with {n_kv} K/V heads) decodes 4 tokens after "
        f"prompts of {MEASURED_CONTEXTS[0]:,} to {MEASURED_CONTEXTS[-1]:,} tokens, each layout with its cache and without "
        "it (every earlier token's keys and values computed again at each step). Measured here, on its button only.",
        "A decoding step measured here, with the cache and without; the cache's bytes beside the formula.",
    )
    if not st.session_state.get(MEASURED):
        st.button("Measure on this server", key="measure_decoding", on_click=st.session_state.__setitem__, args=(MEASURED, True))
    else:
        runs = [(kind, cache, t) for kind in KINDS for cache in (True, False) for t in MEASURED_CONTEXTS]
        progress = st.progress(0.0, text="Decoding")
        points = []
        for done, (kind, cache, t) in enumerate(runs, 1):
            points.append(measured_point(kind, cache, t, *MEASURED_LAYER))
            progress.progress(done / len(runs), text=f"{LAYOUT_NAMES[kind]}, T = {t:,}: {done} of {len(runs)}")
        progress.empty()
        x = np.array(MEASURED_CONTEXTS, dtype=float)
        if slides.part(1):
            with row(2, lines_above=1, lines_below=2) as charts:  # the slopes under the charts
                for cache, name in ((True, "with the cache"), (False, "without it")):
                    options = {"x_title": "tokens before", "y_title": "ms a step", "log_x": True, "log_y": True}
                    step_ms = by_layout(points, cache, "step_ms")
                    chart_block(charts, LINE_WIDTH, LINE_HEIGHT, lines, x, step_ms, title=f"A step {name}", **options)
            fitted = {cache: by_layout(points, cache, "step_ms") for cache in (True, False)}
            slopes = ", ".join(
                f"{name} {loglog_fit(x[2:], with_cache[2:]).slope:.2f} ({loglog_fit(x[2:], fitted[False][name][2:]).slope:.2f})"
                for name, with_cache in fitted[True].items()
            )
            st.caption(
                f"Log-log slopes from T = 1,024 on, with the cache (without): {slopes}. MLA here makes every head's keys "
                "and values from its latent at each step; with W_UK and W_UV absorbed it runs as fast as GQA."
            )
        if slides.part(2):
            with row(1, lines_above=1) as charts:
                mib = {name: n / 2**20 for name, n in by_layout(points, True, "cache_bytes").items()}
                formula = {name: n / 2**20 for name, n in by_layout(points, True, "formula_bytes").items()}
                options = {"x_title": "tokens in the cache", "y_title": "MiB", "log_x": True, "log_y": True, "theory": formula}
                title = "Cache bytes measured (points) and by the formula (dashed)"
                chart_block(charts, MAX_WIDTH, LINE_HEIGHT, lines, x + 4, mib, title=title, **options)
