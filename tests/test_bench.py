"""The sweep shared by the Cost view and its command line, ``python -m attn_core.bench``."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import torch

from attn_core.bench import main
from attn_core.sweep import METHODS, TABLE_COLUMNS, Point, Progress, Settings, Skipped, Stopped, slopes, sweep
from attn_core.timing import GIB, format_bytes, loglog_slope, supported_dtypes
from tests.conftest import ROOT


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "attn_core.bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_json_has_a_record_per_method_and_length():
    done = bench("--json", "--T", "64", "128", "--repeats", "2")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted((r["method"], r["T"]) for r in records) == sorted((m, t) for m in METHODS for t in (64, 128))
    for record in records:
        assert record["median_ms"] > 0 and record["peak_mib"] > 0
        assert record["max_diff"] < 1e-5
        assert (record["batch"], record["heads"], record["d_head"], record["dtype"]) == (1, 8, 64, "float32")
        assert record["device"] == "cpu" and record["repeats"] == 2 and not record["causal"]
        assert record["gflops"] == pytest.approx(4 * 8 * record["T"] ** 2 * 64 / (record["median_ms"] / 1000) / 1e9)
    sdpa = [r for r in records if r["method"] == "sdpa"]
    assert all(r["backend"] in ("flash (CPU)", "math (CPU)") for r in sdpa)
    naive_128 = next(r for r in records if r["method"] == "naive" and r["T"] == 128)
    assert naive_128["matrix_mib"] == 8 * 128 * 128 * 4 / 2**20
    assert naive_128["peak_mib"] >= 2 * naive_128["matrix_mib"]  # scores and softmax live at once


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
    assert [(row[0], row[1]) for row in rows] == [("naive", "64"), ("tiled", "64"), ("naive", "128"), ("tiled", "128")]
    assert lines[7].startswith("naive: log-log slope of time") and lines[8].startswith("tiled: log-log slope of time")


def test_refused_points_are_reported_and_the_rest_measured():
    done = bench("--json", "--T", "64", "4096", "--repeats", "1", "--memory-gib", "0.02")
    assert done.returncode == 0, done.stderr
    assert {json.loads(line)["T"] for line in done.stdout.splitlines()} == {64}
    assert "T=4,096 naive needs ≈ 1.0 GiB, over the 20.5 MiB budget; skipped" in done.stderr


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
    assert [(p.method, p.T) for p in points] == [(m, t) for t in (32, 64) for m in METHODS]
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
    assert loglog_slope([1, 2, 4, 8], [3, 12, 48, 192]) == pytest.approx(2.0)
    assert loglog_slope([1024, 2048], [5.0, 10.0]) == pytest.approx(1.0)
    assert math.isnan(loglog_slope([64], [1.0]))
    points = [Point("tiled", t, "", t * t / 1e3, 0, 0, 0, t / 10, 0, 0, 0) for t in (256, 512, 1024)]
    assert slopes(points)["tiled"] == (pytest.approx(2.0), pytest.approx(1.0))


def test_format_bytes():
    assert format_bytes(16 * GIB) == "16.0 GiB"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(12) == "12 B"
    assert format_bytes(3 * 2**40) == "3.0 TiB"
