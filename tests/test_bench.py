"""The sweep shared by the Cost view and its command line, ``python -m attn_core.bench``."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import torch

from attn_core.bench import REFERENCE_COMMAND, REFERENCE_FILE, REFERENCE_SETTINGS, main, reference_results
from attn_core.masks import Mask
from attn_core.sweep import (
    DEFAULT_METHODS,
    SWEEP_MASKS,
    TABLE_COLUMNS,
    Point,
    Progress,
    Settings,
    Skipped,
    Stopped,
    fits,
    method_arguments,
    sweep,
)
from attn_core.timing import (
    GIB,
    NOISY_IQR,
    RETRIES,
    Spread,
    format_bytes,
    loglog_fit,
    supported_dtypes,
    time_interleaved,
)
from tests.conftest import ROOT


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "attn_core.bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


RECORD_FIELDS = ("method", "mask", "T", "min_ms", "median_ms", "iqr_ms", "gflops", "pct_of_matmul", "noisy", "peak_mib")


def test_json_has_a_record_per_method_and_length():
    done = bench("--json", "--T", "64", "128", "--repeats", "2")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted((r["method"], r["T"]) for r in records) == sorted((m, t) for m in DEFAULT_METHODS for t in (64, 128))
    for record in records:
        assert set(RECORD_FIELDS) <= set(record) and record["mask"] == "none"
        assert 0 < record["min_ms"] <= record["median_ms"] and record["iqr_ms"] >= 0 and record["peak_mib"] > 0
        assert isinstance(record["noisy"], bool) and 0 < record["pct_of_matmul"] <= 100
        assert record["max_diff"] < 1e-5
        assert (record["batch"], record["heads"], record["d_head"], record["dtype"]) == (1, 8, 64, "float32")
        assert record["device"] == "cpu" and record["repeats"] == 2 and not record["causal"]
        assert record["gflops"] == pytest.approx(4 * 8 * record["T"] ** 2 * 64 / (record["median_ms"] / 1000) / 1e9)
        assert record["pct_of_matmul"] == pytest.approx(min(100, 100 * record["gflops"] / record["matmul_gflops"]))
    sdpa = [r for r in records if r["method"] == "sdpa"]
    assert all(r["backend"] in ("flash (CPU)", "math (CPU)") for r in sdpa)
    naive_128 = next(r for r in records if r["method"] == "naive" and r["T"] == 128)
    assert naive_128["matrix_mib"] == 8 * 128 * 128 * 4 / 2**20
    assert naive_128["peak_mib"] >= 2 * naive_128["matrix_mib"]  # scores and softmax live at once


def test_masks_flag_runs_every_method_under_each_mask():
    done = bench("--json", "--T", "64", "--repeats", "1", "--masks", "none", "causal", "window:16", "--methods", "sdpa", "tiled")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["method"], r["mask"]) for r in records] == [
        (method, mask) for method in ("sdpa", "tiled") for mask in ("none", "causal", "window:16")
    ]
    assert all(r["max_diff"] < 1e-5 for r in records)  # each against SDPA under the same mask
    by_mask = {r["mask"]: r for r in records if r["method"] == "tiled"}
    flops = {mask: r["gflops"] * r["median_ms"] / 1000 * 1e9 for mask, r in by_mask.items()}
    assert flops["causal"] == pytest.approx(flops["none"] / 2)
    assert flops["window:16"] == pytest.approx(flops["none"] * (16 * 64 - 16 * 15 / 2) / 64**2)
    assert {r["causal"] for r in records if r["mask"] != "none"} == {True}


def test_mask_specs():
    assert method_arguments(Mask.parse("none")) == (False, None) and method_arguments(Mask.parse("causal")) == (True, None)
    assert method_arguments(Mask.parse("window:256")) == (True, 256)
    for bad in ("window", "window:0", "window:-3", "sliding:4", "Causal"):
        with pytest.raises(ValueError, match="none, causal, window:W"):
            Mask.parse(bad, SWEEP_MASKS)
    assert Settings(causal=True).masks == ("causal",) and Settings().masks == ("none",)


class FakeTimer:
    """Seconds per call: the first ``noisy`` samples of each run in ``runs`` (None: every run) alternate 1 and
    3 ms, every other sample is 2 ms. Counts the samples per run."""

    def __init__(self, runs, noisy: int):
        self.runs, self.noisy = runs, noisy
        self.left, self.samples = {}, {}

    def __call__(self, run, number: int) -> float:
        self.samples[run] = self.samples.get(run, 0) + 1
        if self.runs is None or run in self.runs:
            self.left.setdefault(run, self.noisy)
        if self.left.get(run):
            self.left[run] -= 1
            return 0.001 if self.left[run] % 2 else 0.003
        return 0.002


def fake_runs():
    return {name: (lambda: None) for name in ("sdpa", "tiled", "matmul")}


def test_a_noisy_run_is_measured_again_and_then_marked():
    runs = fake_runs()
    timer = FakeTimer([runs["tiled"]], noisy=10**6)
    timed = time_interleaved(runs, dict.fromkeys(runs, 1), 4, timer, reference="matmul")
    assert [timer.samples[runs[name]] for name in runs] == [4, 4 * (1 + RETRIES), 4 * (1 + RETRIES)]
    assert timed["tiled"].noisy and timed["tiled"].attempts == 1 + RETRIES and not timed["sdpa"].noisy
    assert timed["tiled"].spread.iqr > NOISY_IQR * timed["tiled"].spread.median
    assert len(timer.samples) == 3 and timed["matmul"].attempts == 1  # the reference's samples add up


def test_a_run_noisy_once_is_kept_from_its_clean_measurement():
    runs = fake_runs()
    timer = FakeTimer([runs["tiled"]], noisy=4)  # the first round only
    timed = time_interleaved(runs, dict.fromkeys(runs, 1), 4, timer, reference="matmul")
    assert [timer.samples[runs[name]] for name in runs] == [4, 8, 8]
    assert not timed["tiled"].noisy and timed["tiled"].attempts == 2
    assert timed["tiled"].spread == Spread(0.002, 0.002, 0.0)  # the noisy samples were dropped
    calm = FakeTimer([], noisy=0)
    time_interleaved(runs, dict.fromkeys(runs, 1), 4, calm, reference="matmul")
    assert list(calm.samples.values()) == [4, 4, 4]


def test_no_time_left_no_measuring_again():
    runs = fake_runs()
    timer = FakeTimer([runs["tiled"]], noisy=10**6)
    timed = time_interleaved(runs, dict.fromkeys(runs, 1), 4, timer, reference="matmul", deadline=0.0)
    assert list(timer.samples.values()) == [4, 4, 4] and timed["tiled"].noisy


def test_the_sweep_marks_points_that_stay_noisy():
    timer = FakeTimer(None, noisy=10**6)  # every run noisy
    points = [e for e in sweep(Settings(lengths=(32,), repeats=3, methods=("naive", "tiled")), timer) if isinstance(e, Point)]
    assert [(p.method, p.noisy) for p in points] == [("naive", True), ("tiled", True)]
    assert sorted(timer.samples.values()) == [3 * (1 + RETRIES)] * 3  # naive, tiled and the matmul reference
    assert all(p.iqr_ms > NOISY_IQR * p.median_ms and p.min_ms == pytest.approx(1.0) for p in points)


def test_spread():
    spread = Spread.of([0.004, 0.001, 0.002, 0.003, 0.005])
    assert (spread.min, spread.median, spread.iqr) == (0.001, 0.003, pytest.approx(0.002))
    assert spread.noisy and not Spread.of([1.0, 1.1, 1.05]).noisy
    assert Spread.of([0.5]) == Spread(0.5, 0.5, 0.0)


def test_percent_of_matmul_never_passes_100_in_a_sweep():
    events = sweep(Settings(lengths=(64, 128, 256), repeats=3, masks=("none", "causal"), time_budget=300))
    points = [e for e in events if isinstance(e, Point)]
    assert len(points) == 3 * 3 * 2
    assert all(0 < p.pct_of_matmul <= 100 for p in points)
    for t in (64, 128, 256):
        assert len({p.matmul_gflops for p in points if p.T == t}) == 1  # one reference per length


def test_fits_use_the_longer_half_and_skip_noisy_points():
    def point(t, ms, noisy=False):
        return Point("naive", "none", t, "", ms, ms, 0, noisy, 0, 0, 0, t / 10, 0, 0, 0)

    points = [point(t, 99.0 if t == 128 else t * t / 1e3) for t in (128, 256, 512, 1024, 2048, 4096)]
    points[-1] = point(4096, 1e9, noisy=True)
    fit = fits(points)["naive", "none"]
    assert fit.lengths == (1024, 2048) and fit.noisy == (4096,)
    assert fit.time.slope == pytest.approx(2.0) and math.isnan(fit.time.stderr)  # two points: no residual
    assert fit.memory.slope == pytest.approx(1.0)
    three = loglog_fit([1, 2, 4], [1, 4.4, 16])
    assert three.slope == pytest.approx(2.0, abs=0.05) and 0 < three.stderr < 0.2
    lone = fits([point(512, 1.0, noisy=True), point(1024, 4.0)])["naive", "none"]
    assert math.isnan(lone.time.slope) and lone.noisy == (512,)  # too noisy for a slope


def test_reference_results_load_with_their_machine():
    reference = reference_results()
    assert {"cpu", "cores", "torch_threads", "torch", "date", "command"} <= set(reference.machine)
    assert reference.machine["command"] == REFERENCE_COMMAND and REFERENCE_FILE.name == "reference_results.json"
    assert (reference.settings["batch"], reference.settings["heads"], reference.settings["d_head"]) == (1, 8, 64)
    runs = {(p.method, p.mask) for p in reference.points}
    assert {("naive", "none"), ("sdpa", "none"), ("tiled", "none"), ("tiled", "causal")} <= runs
    assert any(p.method == "tiled" and p.mask.startswith("window:") for p in reference.points)
    # every mask of the Cost view's menu, by every method: the view draws a reference for each
    assert {(p.method, p.mask) for p in reference.points} == {
        (m, mask) for m in DEFAULT_METHODS for mask in REFERENCE_SETTINGS.masks
    }
    assert {p.T for p in reference.points} == {128, 256, 512, 1024, 2048, 4096}
    assert all(p.median_ms >= p.min_ms > 0 and 0 < p.pct_of_matmul <= 100 for p in reference.points)


def test_flags_reach_the_sweep():
    dtype = supported_dtypes("cpu")[-1]  # bfloat16 where this CPU has fast bfloat16 kernels
    done = bench("--json", "--T", "32", "--batch", "2", "--heads", "2", "--d-head", "16", "--dtype", dtype, "--causal")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(records) == 3
    assert {(r["batch"], r["heads"], r["d_head"], r["dtype"], r["causal"]) for r in records} == {(2, 2, 16, dtype, True)}


def test_table_without_json():
    done = bench("--T", "64", "128", "--repeats", "2", "--methods", "naive", "tiled")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("cpu, ") and "threads" in lines[0] and "GFLOP/s" in lines[0]
    assert lines[1] == "FLOPs = 4·B·H·T²·d"
    assert lines[2].split() == " ".join(TABLE_COLUMNS).split()
    rows = [line.split() for line in lines[3:7]]
    assert [(row[0], row[1], row[3]) for row in rows] == [
        ("naive", "64", "none"),
        ("tiled", "64", "none"),
        ("naive", "128", "none"),
        ("tiled", "128", "none"),
    ]
    assert lines[7].startswith("naive (none): log-log slope of time") and "over T=" in lines[7]
    assert lines[8].startswith("tiled (none): log-log slope of time")


def test_refused_points_are_reported_and_the_rest_measured():
    done = bench("--json", "--T", "64", "4096", "--repeats", "1", "--memory-gib", "0.02")
    assert done.returncode == 0, done.stderr
    assert {json.loads(line)["T"] for line in done.stdout.splitlines()} == {64}
    # 1.0 GiB of naive's own and 72 MiB for the matmul reference (64 MiB of scores, an 8 MiB output)
    assert "T=4,096 naive needs ≈ 1.1 GiB, over the 20.5 MiB budget; skipped" in done.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--T", "0"], "at least 1"),
        (["--T", "abc"], "invalid int value"),
        (["--dtype", "int8"], "invalid choice"),
        (["--dtype", "float16"], "float16 is not supported on cpu"),
        (["--device", "tpu"], "device tpu is not available"),
        (["--repeats", "0"], "at least 1"),
        (["--time-budget", "0"], "time budget must be positive"),
    ],
)
def test_bad_arguments(args, message, capsys):
    with pytest.raises(SystemExit) as exit_status:
        main(args)
    assert exit_status.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_arguments_from_the_shell():
    done = bench("--dtype", "float16")
    assert done.returncode == 2
    assert f"float16 is not supported on cpu; choose one of {', '.join(supported_dtypes('cpu'))}" in done.stderr
    assert "Traceback" not in done.stderr


def test_sweep_events_in_order():
    events = list(sweep(Settings(lengths=(32, 64), repeats=1, memory_budget=GIB)))
    assert isinstance(events[0], Progress) and events[0].done == 0
    points = [e for e in events if isinstance(e, Point)]
    assert [(p.method, p.T) for p in points] == [(m, t) for t in (32, 64) for m in DEFAULT_METHODS]
    assert isinstance(events[-1], Progress) and events[-1].done == 1
    assert not any(isinstance(e, Stopped | Skipped) for e in events)


def test_time_budget_stops_the_sweep_with_what_it_has():
    events = list(sweep(Settings(lengths=(64, 128, 256), repeats=1, time_budget=1e-6)))
    points = [e for e in events if isinstance(e, Point)]
    assert {p.T for p in points} == {64}  # the first length always runs
    stop = events[-1]
    assert isinstance(stop, Stopped)
    assert stop.message.startswith("Stopped by the 1e-06 s time budget before T=128")


def test_settings_refuse_unsupported_dtypes():
    fast_bfloat16 = torch.ops.mkldnn._is_mkldnn_bf16_supported()
    assert supported_dtypes("cpu") == (("float32", "bfloat16") if fast_bfloat16 else ("float32",))
    with pytest.raises(ValueError, match="float16 is not supported on cpu; choose one of float32"):
        Settings(dtype="float16")
    assert Settings().memory_budget == 2 * GIB


def test_slopes():
    assert loglog_fit([1, 2, 4, 8], [3, 12, 48, 192]).slope == pytest.approx(2.0)
    assert loglog_fit([1024, 2048], [5.0, 10.0]).slope == pytest.approx(1.0)
    assert math.isnan(loglog_fit([64], [1.0]).slope)
    points = [Point("tiled", "none", t, "", t * t / 1e3, 0, 0, False, 0, 0, 0, t / 10, 0, 0, 0) for t in (256, 512, 1024)]
    fit = fits(points)["tiled", "none"]
    assert (fit.time.slope, fit.memory.slope) == (pytest.approx(2.0), pytest.approx(1.0))


def test_format_bytes():
    assert format_bytes(16 * GIB) == "16.0 GiB"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(12) == "12 B"
    assert format_bytes(3 * 2**40) == "3.0 TiB"


def test_flexattention_compiled_is_a_fourth_method_with_its_compile_time_apart():
    """Under no mask, causal and a model's mask (packed documents), compiled FlexAttention gives SDPA's output; its
    first call, which compiles, is reported apart from the timed ones."""
    settings = Settings(lengths=(200,), repeats=1, methods=("sdpa", "flex"), masks=("none", "causal", "documents:3"))
    events = list(sweep(settings))
    points = [event for event in events if isinstance(event, Point)]
    assert any(isinstance(event, Progress) and "flex compiles its kernel for each mask first" in event.text for event in events)
    flex_points = {point.mask: point for point in points if point.method == "flex"}
    assert set(flex_points) == {"none", "causal", "documents:3"}
    for point in flex_points.values():
        assert point.max_diff < 1e-5 and point.median_ms > 0
        assert point.compile_s > 0.1 > point.median_ms / 1000  # compiling takes far longer than a call
    assert all(point.compile_s == 0 for point in points if point.method == "sdpa")
    assert settings.working_bytes("flex", 200, mask="causal") < settings.working_bytes("naive", 200, mask="causal")


def test_flexattention_is_refused_with_its_reason_where_it_cannot_compile(monkeypatch):
    from attn_core import flex

    monkeypatch.setattr(flex, "unavailable", lambda device: "torch.compile needs a C++ compiler (g++ or clang++)")
    with pytest.raises(ValueError, match="flex is unavailable: torch.compile needs a C\\+\\+ compiler"):
        Settings(methods=("sdpa", "flex"))
    assert Settings().methods == ("naive", "sdpa", "tiled")  # the default does not compile
