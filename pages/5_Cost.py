"""Cost view: time and memory of attention against the sequence length T, measured live."""

import math

import pandas as pd
import streamlit as st

from attn_core import available_devices
from attn_core.sweep import DEFAULT_TIME_BUDGET, TABLE_COLUMNS, Settings, default_memory_budget, describe, plan, slopes
from attn_core.tiled import BLOCK_K, BLOCK_Q, online_softmax_walk, random_row, score_matrix_bytes
from attn_core.timing import DTYPES, GIB, format_bytes, supported_dtypes
from attn_ui import page, url_state
from attn_ui.charts import LINE_HEIGHT, LINE_WIDTH, series_lines
from attn_ui.measure import Measured, run_sweep
from attn_ui.steps import chart_block, row
from attn_ui.url_state import Param

T_MIN = 128
T_MAX_CHOICES = tuple(2**power for power in range(7, 21))  # 128 ... 1,048,576
DEFAULT_T_MAX = 1024  # a sweep of a few seconds on a laptop
D_HEAD_CHOICES = (8, 16, 32, 64, 128, 256)
MAX_HEADS = 32
LONG_CONTEXTS = {"8k": 8_192, "32k": 32_768, "128k": 131_072, "1M": 1_048_576}
NUMBER_FORMATS = {"median ms": "%.2f", "noise (IQR %)": "%.1f", "GFLOP/s": "%.1f", "% of matmul": "%.0f", "peak MiB": "%.2f"}
PARAMS = (
    Param("T_max", DEFAULT_T_MAX, url_state.nearest(T_MAX_CHOICES)),
    Param("heads", 8, url_state.integer(1, MAX_HEADS)),
    Param("d_head", 64, url_state.nearest(D_HEAD_CHOICES)),
    Param("causal", False, url_state.on_off, url_state.format_on_off),
    Param("dtype", "float32", url_state.choice(DTYPES)),
)


def slope_text(slope: float) -> str:
    """A fitted slope, or why there is none (a method refused at every length but one has nothing to fit)."""
    return "— (one length only)" if math.isnan(slope) else f"{slope:.2f}"


SLIDES = (
    "Measured: time and memory against T",
    "One T × T matrix at long context",
    "Online softmax, one query row block by block",
)

page.setup(page.COST, PARAMS)
slides = page.Slides(
    SLIDES,
    "Cost: time and memory against T",
    (
        "Attention compares every query with every key: for T tokens that is a T × T matrix of scores per head. "
        "Its **time** grows like T² whatever you do; its **memory** need not. Below, three ways to compute the same "
        "thing run live on this server: **naive** attention that materializes the T × T matrix, PyTorch's "
        "**SDPA** (`scaled_dot_product_attention`, a fused kernel) and attn_core's **tiled** attention, which "
        "walks through the keys block by block with an *online softmax* (the FlashAttention idea, in plain PyTorch)."
    ),
)
with slides.controls:
    device = st.selectbox("Device", available_devices(), key="device") if len(available_devices()) > 1 else "cpu"
    st.selectbox("Element type", list(DTYPES), key="dtype", help="bfloat16 on the CPU, float16 on CUDA.")
    batch = st.number_input("Batch B", 1, 16, 1, key="batch")
    st.number_input("Heads H", 1, MAX_HEADS, key="heads")
    st.select_slider("Head size d", D_HEAD_CHOICES, key="d_head")
    st.toggle("Causal (each query sees only earlier keys)", key="causal")
    st.select_slider("Longest T", T_MAX_CHOICES, key="T_max", format_func=lambda t: f"{t:,}")
    repeats = st.number_input("Repeats per point", 1, 20, 3, key="repeats", help="Timed runs per method and length.")
    memory_gib = st.number_input(
        "Memory budget (GiB)",
        0.01,
        4096.0,
        round(default_memory_budget(device) / GIB, 2),
        key=f"memory_gib_{device}",
        help="Points whose estimated memory passes it are refused before the sweep.",
    )
    time_budget = st.number_input("Time budget (s)", 0.01, 300.0, DEFAULT_TIME_BUDGET, key="time_budget")
    run_pressed = st.button("Run sweep", key="run", type="primary")

dtype = st.session_state["dtype"]
if dtype not in supported_dtypes(device):
    st.warning(
        f"{dtype} is not supported on {device} here ({', '.join(supported_dtypes(device))} are); measuring float32 instead."
    )
    dtype = "float32"
lengths = tuple(t for t in T_MAX_CHOICES if T_MIN <= t <= st.session_state["T_max"])
settings = Settings(
    batch=batch,
    heads=st.session_state["heads"],
    d_head=st.session_state["d_head"],
    dtype=dtype,
    causal=st.session_state["causal"],
    device=device,
    lengths=lengths,
    repeats=repeats,
    memory_budget=max(1, int(memory_gib * GIB)),
    time_budget=time_budget,
)

if slides.show(1):
    _, refused = plan(settings)
    if refused:
        st.warning(
            "Refused before running, they would not fit the memory budget:\n\n- " + "\n- ".join(s.message for s in refused)
        )
    measured: Measured | None = st.session_state.get("cost_sweep")
    if run_pressed:  # only when asked: changing a control never starts a sweep
        measured = run_sweep(settings) or measured
        st.session_state["cost_sweep"] = measured
    if measured is None:
        st.info(
            f"Press **Run sweep** to measure T = {lengths[0]:,} … {lengths[-1]:,} on this server. "
            f"It stops by itself after the {time_budget:g} s time budget."
        )
    elif measured.settings != settings:
        st.info(
            "The results below were measured with other settings (their caption says which). "
            f"Press **Run sweep** to measure T = {lengths[0]:,} … {lengths[-1]:,} with these."
        )
    if measured is not None and measured.stopped:
        st.warning(measured.stopped + (" The points measured so far are shown." if measured.points else ""))
    elif measured is not None and not measured.points:
        st.info("Nothing to measure: every point was refused. Raise the memory budget or lower T.")
    if measured is not None and measured.points:
        fits = slopes(measured.points)
        by_method = {method: [p for p in measured.points if p.method == method] for method in fits}
        names = {m: f"{m} · slope {fits[m][0]:.2f}" if not math.isnan(fits[m][0]) else m for m in fits}
        with row():
            curves = {names[m]: ([p.T for p in rows], [p.median_ms for p in rows]) for m, rows in by_method.items()}
            options = {"x_title": "T", "log_x": True, "log_y": True}
            chart_block(
                LINE_WIDTH, LINE_HEIGHT, series_lines, curves, y_title="median ms", title="Time per call (log-log)", **options
            )
            curves = {m: ([p.T for p in rows], [p.peak_mib for p in rows]) for m, rows in by_method.items()}
            chart_block(
                LINE_WIDTH, LINE_HEIGHT, series_lines, curves, y_title="peak MiB", title="Peak memory (log-log)", **options
            )
        table = pd.DataFrame([{column: getattr(p, name) for column, (name, _) in TABLE_COLUMNS.items()} for p in measured.points])
        config = {column: st.column_config.NumberColumn(format=text) for column, text in NUMBER_FORMATS.items()}
        st.dataframe(table, hide_index=True, column_config=config)
        if len({p.T for p in measured.points}) < 2:
            st.caption("A slope needs at least two lengths: raise *Longest T* to see how time and memory grow.")
        else:
            rows = [
                {
                    "method": m,
                    "slope of time": slope_text(fit[0]),
                    "slope of peak memory": slope_text(fit[1]),
                    "fitted on T": f"{pts[0].T:,} … {pts[-1].T:,}",
                }
                for (m, fit), pts in zip(fits.items(), by_method.values(), strict=True)
            ]
            st.dataframe(pd.DataFrame(rows), hide_index=True)
        st.caption(
            f"{describe(measured.settings)}. Slopes are least-squares fits of log(value) on log(T): 2 means ∝ T², 1 means ∝ T. "
            f"FLOPs = 4·B·H·T²·d (two matmuls, Q Kᵀ and A V){', halved for causal' if measured.settings.causal else ''}; "
            "% of matmul compares GFLOP/s with one 1024 × 1024 × 1024 matmul measured here once. Each point: one warm-up, "
            "then the methods run in turn for every repeat (interleaved); median shown, noise = interquartile range. "
            "Peak memory comes from a separate run: what the call allocates on top of q, k, v, read from the profiler's "
            "allocator events on the CPU (torch.cuda.max_memory_allocated on CUDA). SDPA's backend is the dispatcher's "
            "own choice for these inputs, confirmed by running it alone. Small T is dominated by fixed overheads, so its "
            "slopes start lower."
        )

if slides.show(2):
    st.markdown(
        f"For B = {settings.batch}, H = {settings.heads}, {settings.dtype}: the score matrix alone is B·H·T²·bytes. "
        f"The tiled version's extra memory is its output plus one {BLOCK_Q} × {BLOCK_K} block of scores per head."
    )
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "context": name,
                    "T": f"{t:,}",
                    "one T × T score matrix": format_bytes(
                        score_matrix_bytes(settings.batch, settings.heads, t, settings.torch_dtype)
                    ),
                    "naive needs ≈": format_bytes(settings.input_bytes(t) + settings.working_bytes("naive", t)),
                    "tiled needs ≈": format_bytes(settings.input_bytes(t) + settings.working_bytes("tiled", t)),
                }
                for name, t in LONG_CONTEXTS.items()
            ]
        ),
        hide_index=True,
    )

if slides.show(3):
    st.markdown(
        "Softmax needs each row's maximum (to keep exp from overflowing) and the sum of its exponentials, which seems "
        "to need the whole row first. The online softmax keeps both **running**: after each block of keys, the new "
        "maximum m_new; if it grew, everything summed so far is multiplied by **exp(m_old − m_new)**, which is exactly "
        "what it would have been with m_new from the start."
    )
    left, right = st.columns(2)
    t_walk = left.slider("Keys T", 2, 32, 12, key="walk_t")
    block = right.slider("Block size", 1, t_walk, min(4, t_walk), key="walk_block")
    walk = online_softmax_walk(*random_row(0, t_walk), block=block)
    st.latex(
        r"m_{new} = \max(m_{old}, \max_j s_j),\quad \ell \leftarrow \ell\, e^{m_{old} - m_{new}} + \sum_j e^{s_j - m_{new}},"
        r"\quad o \leftarrow o\, e^{m_{old} - m_{new}} + \sum_j e^{s_j - m_{new}} v_j"
    )
    st.dataframe(
        pd.DataFrame(
            [
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
        ),
        hide_index=True,
    )
    st.metric("Largest |online − plain softmax| (weights and output)", f"{walk.difference:.1e}")
    st.caption(
        f"A seeded random query of size 8 against {t_walk} keys; values of size 4; float64. The final output equals "
        "softmax(q·K / √8) V computed the plain way: the difference is rounding. The tiled attention above runs the same "
        "update on blocks of many queries and heads at once."
    )

page.publish(PARAMS)
