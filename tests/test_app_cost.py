"""The Cost view, run by AppTest from streamlit_app.py: a small live sweep, links, refusals, budgets, the lock."""

from __future__ import annotations

import itertools
import threading

import pytest
import torch

from attn_core import sweep as sweeps
from attn_core.device import DEFAULT_THREADS
from attn_core.sweep import Settings, plan
from attn_core.tiled import online_softmax_walk, random_row
from attn_core.timing import GIB, supported_dtypes
from attn_ui import measure
from attn_ui.measure import MEASURE
from tests.conftest import assert_clean, chart_frames, open_all, open_view, texts

COST = "pages/5_Cost.py"
METHODS = ("naive", "sdpa", "tiled")


def time_chart(at) -> list[dict]:
    return next(rows for rows in chart_frames(at) if rows and "median ms" in rows[0])


def memory_chart(at) -> list[dict]:
    return next(rows for rows in chart_frames(at) if rows and "peak MiB" in rows[0])


def points_table(at):
    """Every point's row, from the table made when its expander opens."""
    if not any("median ms" in df.value.columns for df in at.dataframe):
        open_all(at, "expander", "cost_points")
    return next(df.value for df in at.dataframe if "median ms" in df.value.columns)


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
    """The Cost view opened with ``query``, after pressing the measure button (a sweep never starts by itself)."""
    at = open_view(COST, **query)
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
    assert slope_summary(at, "reference") == {  # reference_results.json, fitted over T = 1,024 … 4,096
        "naive": ("1.93", "1.98"),
        "sdpa": ("1.97", "0.78"),
        "tiled": ("1.91", "0.29"),
    }
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
    for row in table.itertuples(index=False):
        assert drawn[row.method, row.T] == pytest.approx(row[3])  # the chart draws the table's medians
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


def test_extrapolation_and_walkthrough():
    at = open_view(COST)
    assert_clean(at)
    extrapolation = next(df.value for df in at.table if "one T × T score matrix" in df.value.columns)
    assert extrapolation["T"].tolist() == ["8,192", "32,768", "131,072", "1,048,576"]
    assert extrapolation["one T × T score matrix"].tolist() == ["2.0 GiB", "32.0 GiB", "512.0 GiB", "32.0 TiB"]
    walk_table = next(df.value for df in at.table if "running max m" in df.value.columns)
    walk = online_softmax_walk(*random_row(0, 12), block=4)
    assert walk_table["keys"].tolist() == ["0–3", "4–7", "8–11"]
    assert walk_table["rescale exp(m_old − m_new)"].tolist() == pytest.approx([s.rescale for s in walk.steps])
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
