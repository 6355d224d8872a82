"""attn_core.tuning: the tiled kernel's tiles, measured once per machine and torch version and kept on disk."""

from __future__ import annotations

import dataclasses
import json

import pytest

from attn_core import tuning
from attn_core.tiled import UNTUNED, TilePlan, Tiles


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """A cache directory with no tuning in it; the test's own, restored afterwards."""
    monkeypatch.setenv("ATTN_CACHE_DIR", str(tmp_path))
    tuning.tuned.cache_clear()
    yield tmp_path
    tuning.tuned.cache_clear()


def test_tuning_is_written_once_then_read_as_the_current_plan(empty_cache, monkeypatch):
    monkeypatch.setattr(tuning, "SHAPE", (1, 2, 256, 16))  # a quick measurement of the real candidates
    candidates = {False: (Tiles(128, 64, 2**20), Tiles(64, 64, 2**14)), True: (Tiles(64, 32, 2**20), Tiles(32, 32, 2**20))}
    monkeypatch.setattr(tuning, "CANDIDATES", candidates)
    assert tuning.tuned() is None and tuning.current() == UNTUNED
    chosen = tuning.tune()
    assert chosen.dense in candidates[False] and chosen.masked in candidates[True]
    entry = json.loads(tuning.cache_path().read_text())[tuning.machine_key()]
    assert entry["plan"] == dataclasses.asdict(chosen)
    assert set(entry["ratio_to_sdpa"]["dense"]) == {"128x64, 1 MiB", "64x64, 0.015625 MiB"}
    written = tuning.cache_path().stat().st_mtime_ns

    def no_measuring(*args, **kwargs):
        raise AssertionError("measured again")

    monkeypatch.setattr(tuning, "time_interleaved", no_measuring)
    tuning.tuned.cache_clear()  # a new process: it reads the file, and measures nothing
    assert tuning.tuned() == chosen == tuning.current() and tuning.cache_path().stat().st_mtime_ns == written


@pytest.mark.parametrize("other", ["Intel Xeon | 2 cores | torch 2.13.0+cpu", "AMD EPYC | 2 cores | torch 2.14.0+cpu"])
def test_a_tuning_from_another_cpu_or_torch_is_not_used(empty_cache, monkeypatch, other):
    plan = TilePlan(Tiles(64, 32, 2**20), Tiles(32, 32, 2**20))
    tuning.keep(plan)
    assert tuning.tuned() == plan
    monkeypatch.setattr(tuning, "machine_key", lambda: other)
    tuning.tuned.cache_clear()
    assert tuning.tuned() is None and tuning.current() == UNTUNED


def test_an_unreadable_cache_file_means_not_tuned(empty_cache):
    tuning.cache_path().write_text("{not json")
    assert tuning.tuned() is None


def test_a_tuning_of_blocks_only_is_measured_again(empty_cache):
    """A file written before plans held their tile_bytes ("blocks" only) is not read as a plan: the machine tunes again."""
    entry = {"blocks": {"none": [512, 512], "masked": [1024, 128]}, "date": "2026-11-27 08:00 UTC"}
    tuning.cache_path().write_text(json.dumps({tuning.machine_key(): entry}))
    assert tuning.tuned() is None
