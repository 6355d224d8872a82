"""The Cost view, run by AppTest from streamlit_app.py: a small live sweep, links, refusals, budgets, the lock."""

from __future__ import annotations

import itertools
import json
import re
import threading

import pandas as pd
import pytest
import torch

from attn_core import sweep as sweeps
from attn_core import tuning
from attn_core.accounting import tiled_working_bytes
from attn_core.bench import reference_results
from attn_core.device import DEFAULT_THREADS
from attn_core.online_softmax import WALK_SEED, online_softmax_walk, random_row
from attn_core.sweep import TABLE_COLUMNS, Settings, plan
from attn_core.tiled import UNTUNED, TilePlan, Tiles
from attn_core.timing import GIB, format_bytes, supported_dtypes
from attn_ui import measure
from attn_ui.measure import LAST_SWEEP, MEASURE
from tests.conftest import assert_clean, chart_frames, open_all, open_view, texts

COST = "pages/5_Cost.py"
METHODS = ("naive", "sdpa", "tiled")
# A data grid's width as Streamlit 1.67 draws it in Chromium: px per character of a column's longest text (header
# or cell) and px per column. Fitted to the widths Chromium gave the Cost view's tables of points (content width;
# 397-953 px), which it overestimates by 2-7%.
GRID_PX_PER_CHAR, GRID_PX_PER_COLUMN = 6.5, 22
POINTS_COLUMN_PX = 528  # inside the expander of every point, in a 1024 × 576 window with the sidebar open (Chromium)


def time_chart(at) -> list[dict]:
    return next(rows for rows in chart_frames(at) if rows and "median ms" in rows[0])


def memory_chart(at) -> list[dict]:
    return next(rows for rows in chart_frames(at) if rows and "peak MiB" in rows[0])


def point_tables(at) -> list:
    """The data grids of every point (time; rate; memory and error), made when their expander opens."""
    if not any("median ms" in df.value.columns for df in at.dataframe):
        open_all(at, "expander", "cost_points")
    return [df for df in at.dataframe if "method" in df.value.columns]


def points_table(at) -> pd.DataFrame:
    """Every point's row: the columns of its tables side by side."""
    first, *others = (df.value for df in point_tables(at))
    for other in others:
        assert other[["method", "T"]].equals(first[["method", "T"]])  # the same points in the same order
    return pd.concat([first, *(other.drop(columns=["method", "T"]) for other in others)], axis=1)


def grid_width(df) -> float:
    """The estimated width in px of a data grid (see GRID_PX_PER_CHAR), its cells written with their number formats."""
    configs = json.loads(df.proto.columns)
    formats = {column: config["type_config"]["format"] for column, config in configs.items() if "type_config" in config}
    width = 0.0
    for column in df.value.columns:
        cells = [formats[column] % value if column in formats else str(value) for value in df.value[column]]
        width += GRID_PX_PER_CHAR * max(len(column), *map(len, cells)) + GRID_PX_PER_COLUMN
    return width


def slopes_table(at):
    """The slopes' table, made when the expander of every point opens."""
    if not any("slope of time" in table.value.columns for table in at.table):
        open_all(at, "expander", "cost_points")
    return next(table.value for table in at.table if "slope of time" in table.value.columns)


def slope_summary(at, source: str) -> dict[str, tuple[str, str]]:
    """The slopes of time and of peak memory of each method, from the line of ``source`` under the charts."""
    line = next(line for text in texts(at, "markdown") for line in text.splitlines() if line.startswith(f"- {source}: "))
    time, memory = line.removeprefix(f"- {source}: time ").split("; peak memory ")
    slopes = [dict(entry.rsplit(" ", 1) for entry in part.split(", ")) for part in (time, memory)]
    return {method: (slopes[0][method], slopes[1][method]) for method in slopes[0]}


def assert_summary_matches_table(at, source: str) -> None:
    """The slopes under the charts are those of the table, without their error."""
    summary = slope_summary(at, source)
    rows = slopes_table(at)
    rows = rows[rows["results"] == source]
    assert list(summary) == rows["method"].tolist()
    for method, time, memory in zip(rows["method"], rows["slope of time"], rows["slope of peak memory"], strict=True):
        assert summary[method] == (time.split(" ± ")[0], memory.split(" ± ")[0])


def lengths_by_method(rows: list[dict], source: str = "this server") -> dict[str, list[int]]:
    """The lengths of each method's curve, of this server's results or of the reference's."""
    found: dict[str, list[int]] = {}
    for row in rows:
        if row["series"].endswith(" (reference)") == (source == "reference"):
            found.setdefault(row["series"].split(" ")[0], []).append(int(row["T"]))
    return found


def swept_view(**query: str):
    """The Cost view opened with ``query``, after pressing the measure button (a sweep never starts by itself). Its
    time budget is the most a link may set (300 s), not the view's 20 s, unless ``query`` sets one: the sweep's
    points must not depend on how busy the host is (FlexAttention's compile at T = 128, timed beside the suite's
    other processes, once made T = 256 look over the 20 s); the budget's own test sets it."""
    at = open_view(COST, **{"time_budget": "300"} | query)
    assert not lengths_by_method(time_chart(at))  # the reference results only
    return at.button(key="run").click().run()


def test_the_view_opens_with_the_reference_results_and_measures_nothing():
    at = open_view(COST)
    assert_clean(at)
    reference = [128, 256, 512, 1024, 2048, 4096]
    assert lengths_by_method(time_chart(at), "reference") == {method: reference for method in METHODS}
    assert not lengths_by_method(time_chart(at)) and at.button(key="run").label == MEASURE
    assert any("reference results" in message for message in texts(at, "info"))
    assert not any("median ms" in df.value.columns for df in at.dataframe)  # made when its expander opens
    assert not any("slope of time" in table.value.columns for table in at.table)
    fitted = sweeps.fits(reference_results().points)  # reference_results.json, fitted over T = 1,024 … 4,096
    assert slope_summary(at, "reference") == {
        method: (f"{fitted[method, 'none'].time.slope:.2f}", f"{fitted[method, 'none'].memory.slope:.2f}") for method in METHODS
    }
    assert 1.8 < fitted["naive", "none"].time.slope < 2.1 and fitted["tiled", "none"].memory.slope < 0.5  # T², and ~T
    assert len(points_table(at)) == 3 * len(reference)
    caption = " ".join(texts(at, "caption"))
    assert "Reference: " in caption and "python -m attn_core.bench --reference" in caption
    slopes = slopes_table(at)
    assert set(slopes["results"]) == {"reference"} and slopes["method"].tolist() == list(METHODS)
    assert_summary_matches_table(at, "reference")


def test_a_slope_too_noisy_to_fit_is_a_dash_and_the_line_says_why():
    def point(method, t, noisy=False):
        return sweeps.Point(method, "none", t, "", t * t / 1e3, 0, 0, noisy, 0, 0, 0, t / 10, 0, 0, 0)

    clean = [point("tiled", t) for t in (256, 512, 1024)]
    assert "too few lengths" not in measure.slope_summary({"this server": clean})
    summary = measure.slope_summary({"this server": [point("naive", 512, noisy=True), point("naive", 1024), *clean]})
    assert "- this server: time naive —, tiled 2.00; peak memory naive 1.00, tiled 1.00" in summary
    assert "— : too few lengths clean enough to fit a slope" in summary


def test_sliding_window_from_a_link_is_measured_and_drawn_with_its_reference():
    at = swept_view(mask="window", window="256", T_max="512")
    assert_clean(at)
    assert at.radio(key="mask").value == "window" and at.number_input(key="window").value == 256
    assert lengths_by_method(time_chart(at)) == {method: [128, 256, 512] for method in METHODS}
    assert set(points_table(at)["mask"]) == {"window:256"}
    assert lengths_by_method(time_chart(at), "reference")["tiled"] == [128, 256, 512, 1024, 2048, 4096]
    assert "masks window:256" in " ".join(texts(at, "caption"))


def test_defaults_run_a_small_sweep_and_draw_it():
    at = swept_view()
    assert_clean(at)
    lengths = [128, 256, 512, 1024]
    assert lengths_by_method(time_chart(at)) == {method: lengths for method in METHODS}
    assert lengths_by_method(memory_chart(at)) == {method: lengths for method in METHODS}
    table = points_table(at)
    assert list(zip(table["method"], table["T"], strict=True)) == [(m, t) for t in lengths for m in METHODS]
    drawn = {(row["series"].split(" ")[0], int(row["T"])): row["median ms"] for row in time_chart(at)}
    for method, t, median in zip(table["method"], table["T"], table["median ms"], strict=True):
        assert drawn[method, t] == pytest.approx(median)  # the chart draws the table's medians
    assert (table["median ms"] > 0).all() and (table["max |Δ| vs SDPA"] < 1e-5).all()
    assert set(table[table["method"] == "sdpa"]["backend"]) <= {"flash (CPU)", "math (CPU)"}
    assert table["T×T matrix MiB"].tolist() == [8 * t * t * 4 / 2**20 for t in lengths for _ in METHODS]
    naive = table[table["method"] == "naive"]
    assert (naive["peak MiB"] >= 2 * naive["T×T matrix MiB"]).all()  # naive holds two T x T matrices
    slopes = slopes_table(at)
    measured = slopes[slopes["results"] == "this server"]
    assert measured["method"].tolist() == list(METHODS)  # fitted over the longer half: 512 and 1,024, unless noisy
    assert set(measured["fitted on T"]) <= {"512 … 1,024", "too few clean lengths"}
    assert_summary_matches_table(at, "this server")
    assert_summary_matches_table(at, "reference")
    caption = " ".join(texts(at, "caption"))
    assert "threads" in caption and "4·B·H·T²·d" in caption and "matmul" in caption


@pytest.mark.parametrize("mask", ["none", "window"])  # "window:256" makes the widest mask column
def test_tables_of_points_fit_a_1024_px_window(mask):
    """A table wider than its column scrolls sideways, its last columns off screen: the points' 14 columns in one
    table did, at 1024 × 576 with the sidebar open. Each table fits; together they have every column."""
    at = open_view(COST, mask=mask)
    assert_clean(at)
    tables = point_tables(at)
    assert {column for df in tables for column in df.value.columns} == set(TABLE_COLUMNS)
    for df in tables:
        assert grid_width(df) <= POINTS_COLUMN_PX, f"{list(df.value.columns)}: {grid_width(df):.0f} px"


def test_percent_of_matmul_is_each_rows_rate_over_its_matmul_rate(monkeypatch):
    """Each row shows the matmul rate its "% of matmul" divides by, and the page shows no other matmul rate (such
    as one of a square matmul, timing.matmul_gflops, here a recognizable 4321)."""
    monkeypatch.setattr(sweeps, "matmul_gflops", lambda device, dtype: 4321.0)
    at = open_view(COST)
    reference = points_table(at)
    at.button(key="run").click().run()
    assert_clean(at)
    measured = points_table(at)
    assert len(reference) == 18 and len(measured) == 12
    for table in (reference, measured):
        assert (table["matmul GFLOP/s"] > 0).all()
        expected = (100 * table["GFLOP/s"] / table["matmul GFLOP/s"]).clip(upper=100)
        assert table["% of matmul"].tolist() == pytest.approx(expected.tolist())
    shown = " ".join(texts(at, "caption") + texts(at, "markdown") + texts(at, "info"))
    assert "matmul GFLOP/s" in shown and "4321" not in shown


TILED_SENTENCE = re.compile(
    r"the B·H = (?P<rows>\d+) heads go (?:all at once|(?P<chunk>\d+) at a time), each with a (?P<block_q>\d+) × "
    r"(?P<block_k>\d+) tile of float32 scores \((?P<tiles>[\d.]+ \w+) together, at most (?P<limit>[\d.]+ \w+)\)"
    r".*: (?P<workspace>[\d.]+ \w+) in all\."
)


@pytest.mark.parametrize("query, masked", [({"batch": "4"}, False), ({"mask": "causal", "heads": "32"}, True)])
def test_tiled_memory_sentence_agrees_with_tiled_working_bytes(query, masked):
    """The T × T section says what the tiled attention holds besides its output: heads per chunk, each one's tile,
    and the workspace in all, the same at every T of its table."""
    at = open_view(COST, **query)
    assert_clean(at)
    sentence = next(text for text in texts(at, "markdown") if "The tiled version's extra memory" in text)
    stated = TILED_SENTENCE.search(sentence)
    assert stated, sentence
    batch, heads, d_head = int(query.get("batch", 1)), int(query.get("heads", 8)), 64
    rows = batch * heads
    chunk, block_q, block_k = int(stated["chunk"] or rows), int(stated["block_q"]), int(stated["block_k"])
    assert int(stated["rows"]) == rows
    assert stated["tiles"] == format_bytes(4 * chunk * block_q * block_k)
    assert stated["limit"] == format_bytes(UNTUNED.tiles(masked).tile_bytes)
    extrapolation = next(df.value for df in at.table if "one T × T score matrix" in df.value.columns)
    for t in (int(text.replace(",", "")) for text in extrapolation["T"]):
        assert UNTUNED.tiles(masked).sizes(rows, t, t) == (chunk, block_q, block_k)
        output = rows * t * d_head * 4
        assert format_bytes(tiled_working_bytes(batch, heads, t, d_head, torch.float32, masked) - output) == stated["workspace"]


def test_extrapolation_and_walkthrough():
    at = open_view(COST)
    assert_clean(at)
    extrapolation = next(df.value for df in at.table if "one T × T score matrix" in df.value.columns)
    assert extrapolation["T"].tolist() == ["8,192", "32,768", "131,072", "1,048,576"]
    assert extrapolation["one T × T score matrix"].tolist() == ["2.0 GiB", "32.0 GiB", "512.0 GiB", "32.0 TiB"]
    walk_table = next(df.value for df in at.table if "running max m" in df.value.columns)
    walk = online_softmax_walk(*random_row(WALK_SEED, 12), block=4)
    assert walk_table["keys"].tolist() == ["0–3", "4–7", "8–11"]
    assert walk_table["rescale exp(m_old − m_new)"].tolist() == pytest.approx([s.rescale for s in walk.steps])
    # What the walk is there to show: both later blocks raise the maximum and rescale the sums so far.
    assert all(rescale < 0.6 for rescale in walk_table["rescale exp(m_old − m_new)"].tolist()[1:])
    assert walk_table["running sum ℓ"].tolist() == pytest.approx([s.running_sum for s in walk.steps])
    assert float(next(m.value for m in at.metric if m.label.startswith("Largest |online"))) < 1e-12
    at.slider(key="walk_block").set_value(5).run()
    assert next(df.value for df in at.table if "running max m" in df.value.columns)["keys"].tolist() == [
        "0–4",
        "5–9",
        "10–11",
    ]


def test_link_sets_the_controls_and_the_sweep():
    at = swept_view(T_max="512", heads="2", d_head="16", mask="causal", dtype="float32")
    assert_clean(at)
    assert at.selectbox(key="T_max").value == 512
    assert at.number_input(key="heads").value == 2
    assert at.selectbox(key="d_head").value == 16
    assert at.radio(key="mask").value == "causal"
    assert at.selectbox(key="dtype").value == "float32"
    assert lengths_by_method(time_chart(at)) == {method: [128, 256, 512] for method in METHODS}
    assert points_table(at)["T×T matrix MiB"].tolist()[:3] == [2 * 128 * 128 * 4 / 2**20] * 3  # B·H·T²·4 with H = 2
    caption = " ".join(texts(at, "caption"))
    assert "H=2, d=16, causal on" in caption and "the mask lets through" in caption


def test_controls_are_written_to_the_url_and_never_start_a_sweep():
    at = swept_view(T_max="256")
    before = points_table(at)
    at.number_input(key="heads").set_value(4)
    at.radio(key="mask").set_value("causal")
    at.selectbox(key="T_max").set_value(512).run()
    assert_clean(at)
    assert at.query_params["heads"] == "4" and at.query_params["mask"] == "causal" and at.query_params["T_max"] == "512"
    assert points_table(at).equals(before)  # the last sweep's results, untouched
    assert any("measured with other settings" in message for message in texts(at, "info"))
    at.button(key="run").click().run()
    assert lengths_by_method(time_chart(at)) == {method: [128, 256, 512] for method in METHODS}


def test_huge_T_with_a_small_budget_is_refused_with_the_number():
    at = open_view(COST, T_max="1048576")
    at.number_input(key="memory_gib_cpu").set_value(0.01).run()
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert "T=1,048,576 naive needs ≈ 64.0 TiB, over the 10.2 MiB budget; skipped" in warning
    assert "T=1,048,576 tiled needs ≈" in warning
    assert any(f"Press **{MEASURE}**" in message for message in texts(at, "info"))  # sweeps wait for the button
    assert not lengths_by_method(time_chart(at))
    at.button(key="run").click().run()
    assert_clean(at)
    measured = lengths_by_method(time_chart(at))
    assert measured["naive"] == [128, 256] and measured["tiled"] == [128, 256]  # T=512: the matmul reference alone needs 9 MiB
    lengths = tuple(2**p for p in range(7, 21))
    runs, refused = plan(Settings(lengths=lengths, memory_budget=int(0.01 * GIB)))  # SDPA's scratch depends on threads
    assert measured["sdpa"] == [t for t in lengths if "sdpa" in runs[t]]
    assert len(refused) == 3 * 14 - sum(len(measured[method]) for method in METHODS)


def test_time_budget_stops_the_sweep_and_keeps_what_it_has():
    at = open_view(COST)
    at.number_input(key="time_budget").set_value(0.01)
    at.button(key="run").click().run()
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert "Stopped by the 0.01 s time budget before T=256" in warning and "measured so far are shown" in warning
    assert lengths_by_method(time_chart(at)) == {method: [128] for method in METHODS}
    assert len(points_table(at)) == 3


def test_bad_link_values_warn_and_use_defaults():
    at = open_view(COST, T_max="banana", heads="0", d_head="-3", mask="maybe", dtype="int8")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    for problem in ("T_max = “banana”", "heads = “0”", "d_head = “\\-3”", "mask = “maybe”", "dtype = “int8”"):
        assert problem in warning
    assert at.selectbox(key="T_max").value == 1024 and at.number_input(key="heads").value == 8
    at.button(key="run").click().run()
    assert lengths_by_method(time_chart(at))["tiled"] == [128, 256, 512, 1024]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_dtype_unsupported_on_the_device_says_so(dtype):
    """float16 is never offered on the CPU; bfloat16 only where the CPU has fast bfloat16 kernels."""
    at = swept_view(dtype=dtype, T_max="256")
    assert_clean(at)
    caption = " ".join(texts(at, "caption"))
    if dtype in supported_dtypes("cpu"):
        assert f"cpu, {DEFAULT_THREADS} threads, {dtype}," in caption  # a sweep runs on every core
    else:
        warning = f"{dtype} is not supported on cpu here ({', '.join(supported_dtypes('cpu'))}"
        assert any(message.startswith(warning) and "measuring float32 instead" in message for message in texts(at, "warning"))
        assert "threads, float32," in caption
    assert len(points_table(at)) == 6


def test_a_second_sweep_waits_for_the_first():
    lock = measure.sweep_lock()
    lock.acquire()
    threading.Timer(1.0, lock.release).start()  # the other session's sweep ends after a second
    at = swept_view(T_max="256")
    assert_clean(at)
    assert any("Another sweep is running" in message for message in texts(at, "info"))
    assert any(caption.startswith("Waited ") for caption in texts(at, "caption"))
    assert lengths_by_method(time_chart(at)) == {method: [128, 256] for method in METHODS}
    assert not lock.locked()


def test_waiting_too_long_gives_up_with_a_message(monkeypatch):
    monkeypatch.setattr(measure, "WAIT_S", 0.2)
    lock = measure.sweep_lock()
    lock.acquire()
    try:
        at = swept_view(T_max="256")
    finally:
        lock.release()
    assert_clean(at)
    assert any("Gave up after waiting 0.2 s" in message for message in texts(at, "error"))
    assert not lengths_by_method(time_chart(at))


def test_running_out_of_memory_stops_with_a_message(monkeypatch):
    def sweep_that_runs_out(settings, timer):
        yield from itertools.islice(sweeps.sweep(settings, timer), 4)  # the first length's progress and points
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(measure, "sweep", sweep_that_runs_out)
    at = swept_view(T_max="256")
    assert_clean(at)
    assert any("ran out of memory (CUDA out of memory. Tried to allocate 2.00 GiB)" in w for w in texts(at, "warning"))
    assert lengths_by_method(time_chart(at)) == {method: [128] for method in METHODS}
    assert not measure.sweep_lock().locked()


def test_every_control_is_in_the_link():
    at = open_view(COST, batch="2", repeats="1", time_budget="5", walk_t="8", walk_block="3", mask="window", window="64")
    assert_clean(at)
    assert [at.number_input(key=key).value for key in ("batch", "repeats", "time_budget", "window")] == [2, 1, 5.0, 64]
    assert at.slider(key="walk_t").value == 8 and at.slider(key="walk_block").value == 3
    walk_table = next(df.value for df in at.table if "running max m" in df.value.columns)
    assert walk_table["keys"].tolist() == ["0–2", "3–5", "6–7"]
    at.slider(key="walk_t").set_value(2).run()  # the block (3) no longer fits: it becomes the whole row
    assert_clean(at)
    assert at.slider(key="walk_block").value == 2 and at.query_params["walk_t"] == "2"
    at.number_input(key="time_budget").set_value(7.5).run()
    assert at.query_params["time_budget"] == "7.5" and at.query_params["batch"] == "2"


def test_the_first_sweep_on_a_machine_tunes_the_tiled_blocks_once(tmp_path, monkeypatch):
    """No tuning kept for this machine: the first sweep measures the tiled kernel's blocks (attn_core.tuning) before
    its own points, showing its progress; the next sweep finds them kept and goes straight to its points."""
    monkeypatch.setenv("ATTN_CACHE_DIR", str(tmp_path))
    tuning.tuned.cache_clear()
    tunings = []

    def quick_tune(progress):
        tunings.append(progress)
        tuning.keep(TilePlan(Tiles(64, 64, 2**20), Tiles(32, 32, 2**20)))
        return tuning.tuned()

    monkeypatch.setattr(measure, "tune", quick_tune)
    try:
        at = swept_view(T_max="256")
        assert_clean(at)
        assert len(tunings) == 1 and lengths_by_method(time_chart(at))  # then the sweep drew its points
        at.button(key="run").click().run()
        assert_clean(at)
        assert len(tunings) == 1
    finally:
        tuning.tuned.cache_clear()


def test_flexattention_is_measured_as_a_fourth_method_and_the_page_says_which_was_fastest():
    at = swept_view(flex="on", T_max="256", mask="causal", repeats="1")
    assert_clean(at)
    assert lengths_by_method(time_chart(at)) == {method: [128, 256] for method in (*METHODS, "flex")}
    measured = at.session_state[LAST_SWEEP].points
    assert all(p.max_diff < 1e-5 and p.compile_s > 0 for p in measured if p.method == "flex")
    said = " ".join(texts(at, "markdown"))
    assert "FlexAttention compiled on the first call of each mask and length, not counted in its times: " in said
    fastest_at_256 = min((p for p in measured if p.T == 256), key=lambda p: p.median_ms).method
    assert "Fastest here under causal: " in said and f"**{fastest_at_256}** at T = " in said


def test_flexattention_where_it_cannot_compile_says_why_and_the_rest_is_measured(monkeypatch):
    from attn_core import flex

    monkeypatch.setattr(flex, "unavailable", lambda device: "torch.compile needs a C++ compiler (g++ or clang++)")
    at = swept_view(flex="on", T_max="256", repeats="1")
    assert_clean(at)
    assert any("FlexAttention is unavailable on this server: torch.compile needs a C++" in text for text in texts(at, "warning"))
    assert lengths_by_method(time_chart(at)) == {method: [128, 256] for method in METHODS}
