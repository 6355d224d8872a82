"""attn_core.tuning: the tiled kernel's tiles, measured once per machine and torch version and kept on disk."""

from __future__ import annotations

import dataclasses
import json

import pytest

from attn_core import tuning
from attn_core.device import cpu_caches
from attn_core.tiled import UNTUNED, TilePlan, Tiles
from attn_core.timing import MIB, Spread, Timed


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


def test_a_tuning_from_a_cpu_of_the_same_name_with_other_caches_is_not_used(empty_cache, monkeypatch):
    """Two clouds' "AMD EPYC"s, one with an L3 of 32 MiB and one of 8 MiB: tiles fast on one were slow on the other."""
    monkeypatch.setattr(tuning, "cpu_model", lambda: "AMD EPYC")
    monkeypatch.setattr(tuning, "cpu_caches", lambda: "L2 1 MiB, L3 32 MiB")
    plan = TilePlan(Tiles(64, 32, 2**20), Tiles(32, 32, 2**20))
    tuning.keep(plan)
    assert tuning.tuned() == plan and "AMD EPYC (L2 1 MiB, L3 32 MiB) | " in tuning.machine_key()
    monkeypatch.setattr(tuning, "cpu_caches", lambda: "L2 512 KiB, L3 8 MiB")
    tuning.tuned.cache_clear()
    assert tuning.tuned() is None and tuning.current() == UNTUNED


def sysfs_caches(root, caches: list[tuple[str, str, str]]):
    """A folder laid out as Linux's /sys/devices/system/cpu/cpu0/cache: index0, index1 ..., each with its level, type
    and size."""
    for number, values in enumerate(caches):
        index = root / f"index{number}"
        index.mkdir(parents=True)
        for name, value in zip(("level", "type", "size"), values, strict=True):
            (index / name).write_text(value + "\n")
    return root


def test_the_caches_are_read_from_level_2_up_as_linux_lists_them(tmp_path):
    zen4 = [("1", "Data", "32K"), ("1", "Instruction", "32K"), ("2", "Unified", "1024K"), ("3", "Unified", "32768K")]
    assert cpu_caches(sysfs_caches(tmp_path / "zen4", zen4)) == "L2 1 MiB, L3 32 MiB"
    small = [("1", "Data", "48K"), ("2", "Unified", "1280K"), ("3", "Unified", "8192K")]
    assert cpu_caches(sysfs_caches(tmp_path / "small", small)) == "L2 1280 KiB, L3 8 MiB"
    assert cpu_caches(tmp_path / "none") == ""  # not Linux, or no such folder: the key without caches


def test_an_unreadable_cache_file_means_not_tuned(empty_cache):
    tuning.cache_path().write_text("{not json")
    assert tuning.tuned() is None


def test_a_tuning_of_blocks_only_is_measured_again(empty_cache):
    """A file written before plans held their tile_bytes ("blocks" only) is not read as a plan: the machine tunes again."""
    entry = {"blocks": {"none": [512, 512], "masked": [1024, 128]}, "date": "2026-11-27 08:00 UTC"}
    tuning.cache_path().write_text(json.dumps({tuning.machine_key(): entry}))
    assert tuning.tuned() is None


LARGE, SMALL, SMALL_SLOW = Tiles(1024, 512, 8 * MIB), Tiles(1024, 256, 2 * MIB), Tiles(256, 256, 2 * MIB)


def spread(fastest: float, median: float) -> Spread:
    return Spread(fastest, median, median - fastest)


def test_the_fastest_candidate_is_kept_where_no_other_is_as_fast_within_the_noise():
    assert tuning.choose({LARGE: spread(1.00, 1.01), SMALL: spread(1.02, 1.03), SMALL_SLOW: spread(1.2, 1.3)}) == LARGE
    assert tuning.choose({SMALL: spread(1.00, 1.01), LARGE: spread(1.005, 1.02)}) == SMALL


def test_of_the_candidates_as_fast_within_the_noise_the_one_with_the_smallest_products_is_kept():
    """The largest products fastest in the tuning by less than its own spread: the smaller ones are kept."""
    spreads = {LARGE: spread(1.00, 1.05), SMALL: spread(1.013, 1.04), SMALL_SLOW: spread(1.06, 1.07)}
    assert tuning.choose(spreads) == SMALL
    faster_alike = Tiles(512, 512, 2 * MIB)  # as small: the faster of the two
    assert tuning.choose(spreads | {faster_alike: spread(1.01, 1.02)}) == faster_alike


def test_tune_keeps_the_chosen_candidates(empty_cache, monkeypatch):
    """With the measurements given (SDPA 1 s a call), tune keeps what choose picks, for no mask and under a mask."""
    candidates = {False: (LARGE, SMALL), True: (Tiles(1024, 128, 8 * MIB), Tiles(1024, 128, 2 * MIB))}
    monkeypatch.setattr(tuning, "CANDIDATES", candidates)
    measured = {"sdpa": spread(1.0, 1.0)} | {tiles: spread(1.00, 1.10) for tiles in (LARGE, candidates[True][0])}
    measured |= {tiles: spread(1.05, 1.06) for tiles in (SMALL, candidates[True][1])}

    def timed(runs, numbers, repeats, reference=None):
        assert reference == "sdpa" and set(runs) == {"sdpa", *candidates[runs["sdpa"].keywords["is_causal"]]}
        return {key: Timed(measured[key], 1, False) for key in runs}

    monkeypatch.setattr(tuning, "time_interleaved", timed)
    assert tuning.tune() == TilePlan(SMALL, candidates[True][1]) == tuning.current()
    entry = json.loads(tuning.cache_path().read_text())[tuning.machine_key()]
    assert entry["ratio_to_sdpa"]["dense"] == {LARGE.label: 1.0, SMALL.label: 1.05}
    assert entry["median_ratio_to_sdpa"]["dense"] == {LARGE.label: 1.1, SMALL.label: 1.06}
