"""Cost view: time and memory of attention against the sequence length T, measured live."""

import pandas as pd
import streamlit as st

from attn_core import available_devices, tuning
from attn_core.bench import REFERENCE_COMMAND, reference_results
from attn_core.masks import KINDS, MODEL_MASKS, Mask
from attn_core.online_softmax import WALK_SEED, online_softmax_walk, random_row
from attn_core.sweep import (
    DEFAULT_TIME_BUDGET,
    DEFAULT_WINDOW,
    SWEEP_MASKS,
    Settings,
    default_memory_budget,
)
from attn_core.timing import DTYPES, GIB, supported_dtypes
from attn_ui import page, url_state
from attn_ui.charts import LINE_HEIGHT, LINE_WIDTH, series_lines
from attn_ui.measure import (
    MEASURE,
    dense_ratios,
    fastest,
    keep_results,
    long_context_rows,
    methods,
    point_tables,
    result_curves,
    slope_rows,
    slope_summary,
    sweep_on_press,
    sweep_status,
    tiled_memory_note,
    walk_rows,
)
from attn_ui.slide import presenting
from attn_ui.steps import chart_block, row
from attn_ui.url_state import Param

T_MIN = 128
T_MAX_CHOICES = tuple(2**power for power in range(7, 21))  # 128 ... 1,048,576
DEFAULT_T_MAX = 1024  # a sweep of a few seconds on a laptop
D_HEAD_CHOICES = (8, 16, 32, 64, 128, 256)
MAX_HEADS = 32
MAX_DOCUMENTS, DEFAULT_PREFIX, MAX_GLOBAL, DEFAULT_GLOBAL = 64, 256, 1024, 16
LONG_CONTEXTS = {"8k": 8_192, "32k": 32_768, "128k": 131_072, "1M": 1_048_576}
PARAMS = url_state.Params(
    Param("T_max", DEFAULT_T_MAX, url_state.Nearest(T_MAX_CHOICES)),
    Param("heads", 8, url_state.Integer(1, MAX_HEADS)),
    Param("d_head", 64, url_state.Nearest(D_HEAD_CHOICES)),
    Param("mask", "none", url_state.Choice(SWEEP_MASKS)),
    Param("window", DEFAULT_WINDOW, url_state.Integer(1, max(T_MAX_CHOICES))),
    Param("documents", 4, url_state.Integer(1, MAX_DOCUMENTS)),
    Param("prefix", DEFAULT_PREFIX, url_state.Integer(0, max(T_MAX_CHOICES))),
    Param("global_tokens", DEFAULT_GLOBAL, url_state.Integer(0, MAX_GLOBAL)),
    Param("dtype", "float32", url_state.Choice(DTYPES)),
    Param("batch", 1, url_state.Integer(1, 16)),
    Param("repeats", 3, url_state.Integer(1, 20)),
    Param("time_budget", DEFAULT_TIME_BUDGET, url_state.Number(0.01, 300.0), url_state.format_number),
    Param("flex", False, url_state.on_off, url_state.format_on_off),
    Param("walk_t", 12, url_state.Integer(2, 32)),
    Param("walk_block", 4, url_state.Integer(1, 32)),
)


SLIDES = (
    page.Section("Measured", "Measured: time and memory against T"),
    page.Section("T × T", "One T × T matrix at long context"),
    page.Section("Online softmax", "Online softmax, one query row block by block", parts=2),
)

values = page.setup(page.COST, PARAMS)
slides = page.Slides(
    SLIDES,
    "Cost: time and memory against T",
    (
        "Attention compares every query with every key: for T tokens that is a T × T matrix of scores per head. "
        "Its **time** grows like T² whatever you do; its **memory** need not. Below, three ways to compute the same "
        "thing, measured on a reference machine and, on request, on this server: **naive** attention that "
        "materializes the T × T matrix, PyTorch's "
        "**SDPA** (`scaled_dot_product_attention`, a fused kernel) and attn_core's **tiled** attention, which "
        "walks through the keys block by block with an *online softmax* (the FlashAttention idea, in plain PyTorch); "
        "on request, a fourth: PyTorch's **FlexAttention**, compiled for the mask (*FlexAttention too*)."
    ),
)
with slides.controls:
    device = st.selectbox("Device", available_devices(), key="device") if len(available_devices()) > 1 else "cpu"
    PARAMS.dtype.selectbox("Element type", help="bfloat16 on the CPU, float16 on CUDA.")
    batch = PARAMS.batch.number_input("Batch B")
    PARAMS.heads.number_input("Heads H")
    # Menus, not sliders: Streamlit's slider is the heaviest control to draw, 0.1 s of a new tab's first render
    # with these two (interleaved loads, 12 pairs).
    PARAMS.d_head.selectbox("Head size d")
    kind = PARAMS.mask.radio("Mask", format_func=lambda kind: KINDS[kind].label, horizontal=True)
    if kind in ("window", "global"):
        PARAMS.window.number_input("Window w (keys per query)")
    if kind == "documents":
        PARAMS.documents.number_input("Documents K", help="K equal documents packed in the T tokens.")
    if kind == "prefix":
        PARAMS.prefix.number_input("Prefix P (tokens)", help="Seen both ways; at most T.")
    if kind == "global":
        PARAMS.global_tokens.number_input("Global tokens G", help="The first G tokens see and are seen by all.")
    PARAMS.T_max.selectbox("Longest T", format_func=lambda t: f"{t:,}")
    repeats = PARAMS.repeats.number_input("Repeats per point", help="Timed runs per method and length.")
    memory_gib = st.number_input(
        "Memory budget (GiB)",
        0.01,
        4096.0,
        round(default_memory_budget(device) / GIB, 2),
        key=f"memory_gib_{device}",
        help="Points whose estimated memory passes it are refused before the sweep.",
    )
    time_budget = PARAMS.time_budget.number_input("Time budget (s)")
    st.toggle(
        "FlexAttention too (compiled)",
        key="flex",
        help="PyTorch's FlexAttention, compiled by torch.compile on its first call of each mask and length (seconds "
        "to tens of seconds on a CPU, reported apart from its times).",
    )
    run_pressed = st.button(MEASURE, key="run", type="primary")

dtype = values.dtype
if dtype not in supported_dtypes(device):
    st.warning(
        f"{dtype} is not supported on {device} here ({', '.join(supported_dtypes(device))} are); measuring float32 instead."
    )
    dtype = "float32"
lengths = tuple(t for t in T_MAX_CHOICES if T_MIN <= t <= values.T_max)
sizes = {
    "window": (values.window,),
    "documents": (values.documents,),
    "prefix": (values.prefix,),
    "global": (values.window, values.global_tokens),
}
mask = Mask(kind, sizes.get(kind, ()))
settings = Settings(
    batch=batch,
    heads=values.heads,
    d_head=values.d_head,
    dtype=dtype,
    causal=kind == "causal",
    masks=("none", mask.format()) if kind in MODEL_MASKS else (mask.format(),),  # a model's mask beside no mask (dense)
    device=device,
    methods=methods(values.flex, device),
    lengths=lengths,
    repeats=repeats,
    memory_budget=max(1, int(memory_gib * GIB)),
    time_budget=time_budget,
    tiles=tuning.current(),
)

if slides.show(1):
    measured = sweep_on_press(settings, run_pressed)
    sweep_status(settings, measured)
    reference = reference_results()
    shown = [p for p in reference.points if Mask.parse(p.mask).kind == kind]
    sources = {"reference": shown} if shown else {}
    if measured is not None and measured.points:
        sources["this server"] = list(measured.points)
        if kind in MODEL_MASKS:
            st.markdown(dense_ratios(measured.points, mask.format()))
        if not presenting():  # a slide keeps its room for the charts
            st.markdown(fastest(list(measured.points)))
    if not sources:
        st.info(f"No reference results for this mask: press **{MEASURE}** to measure it here, beside no mask (dense).")
    else:
        keep_results(sources, reference, measured)
        with row(2, lines_below=len(sources)) as charts:  # the slopes under the charts (a heading, a line a source) for a lead
            options = {"x_title": "T", "log_x": True, "log_y": True}
            time_curves, memory_curves = result_curves(sources, "median_ms"), result_curves(sources, "peak_mib")
            chart_block(
                charts,
                LINE_WIDTH,
                LINE_HEIGHT,
                series_lines,
                time_curves,
                y_title="median ms",
                title="Time per call (log-log)",
                **options,
            )
            chart_block(
                charts,
                LINE_WIDTH,
                LINE_HEIGHT,
                series_lines,
                memory_curves,
                y_title="peak MiB",
                title="Peak memory (log-log)",
                **options,
            )
        st.markdown(slope_summary(sources))
        if not presenting():  # a slide shows the charts and their slopes; every point is in the view's bundle
            points = sources.get("this server") or sources["reference"]
            label = f"{'This server' if 'this server' in sources else 'Reference results'}: the fits and every point"
            # Made when opened: the slopes' table and three data grids of some 30 rows (14 columns in all). Their code (0.8 MB
            # for the data grid alone) took a new tab's first render 0.06-0.15 s longer (three runs of 12 interleaved loads).
            with st.expander(label, key="cost_points", on_change="rerun") as every_point:
                if every_point.open:
                    st.table(pd.DataFrame(slope_rows(sources)), hide_index=True)
                    point_tables(points)
            about = reference.machine
            st.caption(
                f"Reference: {about['cpu']}, {about['cores']} cores, {about['torch_threads']} torch threads, "
                f"torch {about['torch']}, {about['date']}, B=1, H=8, d=64, float32 (`{REFERENCE_COMMAND}` measures them anew)."
                + (f" This server: {measured.machine}." if "this server" in sources else "")
                + " Slopes are least-squares fits of log(value) on log(T) over the longer half of the lengths, where the T² "
                "term dominates the fixed overheads (± its standard error): 2 means ∝ T², 1 means ∝ T. A point whose noise "
                "(interquartile range) stays above 20% of its median after re-measuring is marked noisy and left out of the fit. "
                "FLOPs count the query-key pairs the mask lets through: 4·B·H·T²·d without a mask (Q Kᵀ and A V). "
                "% of matmul is GFLOP/s over matmul GFLOP/s (at most 100), the best rate at the same T of attention's two "
                "matmuls with the same shapes (Q Kᵀ, then scores V, without the softmax), timed in turn with the methods "
                "(interleaved), so both see the same load. Peak memory: what a call allocates on top of q, k, v."
            )

if slides.show(2):
    st.markdown(tiled_memory_note(settings, mask.label.lower(), kind != "none", min(LONG_CONTEXTS.values())))
    st.table(long_context_rows(settings, mask.format(), LONG_CONTEXTS), hide_index=True)

if slides.show(3):
    st.markdown(
        "Softmax needs the whole row's maximum (against overflow) and sum of exponentials. Online softmax keeps both "
        "**running**: a block that raises the maximum multiplies the sums so far by **exp(m_old − m_new)**, as if m_new "
        "had been used from the start."
    )
    left, right = st.columns(2)
    with left:
        t_walk = PARAMS.walk_t.slider("Keys T")
    url_state.keep_in("walk_block", range(1, t_walk + 1), min(values.walk_block, t_walk))
    block = right.slider("Block size", 1, t_walk, key="walk_block")
    walk = online_softmax_walk(*random_row(WALK_SEED, t_walk), block=block)
    if slides.part(1):
        st.latex(  # one update a line, so that it fits a 1024-px window
            r"\begin{aligned} m_{new} &= \max(m_{old}, \max_j s_j) \\"
            r" \ell &\leftarrow \ell\, e^{m_{old} - m_{new}} + \sum_j e^{s_j - m_{new}} \\"
            r" o &\leftarrow o\, e^{m_{old} - m_{new}} + \sum_j e^{s_j - m_{new}} v_j \end{aligned}"
        )
    if slides.part(2):
        st.table(walk_rows(walk), hide_index=True)
        st.metric("Largest |online − plain softmax| (weights and output)", f"{walk.difference:.1e}")
        if not presenting():  # left to the presenter's words: the slide has no room for it
            st.caption(
                f"A seeded random query of size 8 against {t_walk} keys; values of size 4; float64. The final output equals "
                "softmax(q·K / √8) V computed the plain way: the difference is rounding. The tiled attention above runs the same "
                "update on blocks of many queries and heads at once."
            )

page.publish(PARAMS)
