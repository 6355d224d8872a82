"""attn_core.tuning: the tiled kernel's blocks, measured once per machine and torch version and kept on disk."""

from __future__ import annotations

import json

import pytest

from attn_core import tuning
from attn_core.tiled import BLOCKS, block_sizes


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """A cache directory with no tuning in it; the test's own, restored afterwards."""
    monkeypatch.setenv("ATTN_CACHE_DIR", str(tmp_path))
    tuning.tuned.cache_clear()
    yield tmp_path
    tuning.tuned.cache_clear()


def test_tuning_is_written_once_then_read_and_used_by_block_sizes(empty_cache, monkeypatch):
    monkeypatch.setattr(tuning, "SHAPE", (1, 2, 256, 16))  # a quick measurement of the real candidates
    monkeypatch.setattr(tuning, "CANDIDATES", {False: ((128, 64), (64, 64)), True: ((64, 32), (32, 32))})
    assert tuning.tuned() is None and block_sizes(8, 4096, 4096)[1:] == BLOCKS[False]
    chosen = tuning.tune()
    entry = json.loads(tuning.cache_path().read_text())[tuning.machine_key()]
    assert entry["blocks"] == {"none": list(chosen[False]), "masked": list(chosen[True])}
    assert set(entry["ratio_to_sdpa"]["none"]) == {"128x64", "64x64"}
    written = tuning.cache_path().stat().st_mtime_ns

    def no_measuring(*args, **kwargs):
        raise AssertionError("measured again")

    monkeypatch.setattr(tuning, "time_interleaved", no_measuring)
    tuning.tuned.cache_clear()  # a new process: it reads the file, and measures nothing
    assert tuning.tuned() == chosen and tuning.cache_path().stat().st_mtime_ns == written
    assert block_sizes(8, 4096, 4096)[1:] == chosen[False] and block_sizes(8, 4096, 4096, causal=True)[1:] == chosen[True]


@pytest.mark.parametrize("other", ["Intel Xeon | 2 cores | torch 2.13.0+cpu", "AMD EPYC | 2 cores | torch 2.14.0+cpu"])
def test_a_tuning_from_another_cpu_or_torch_is_not_used(empty_cache, monkeypatch, other):
    tuning.keep({False: (64, 32), True: (32, 32)})
    assert tuning.tuned() == {False: (64, 32), True: (32, 32)}
    monkeypatch.setattr(tuning, "machine_key", lambda: other)
    tuning.tuned.cache_clear()
    assert tuning.tuned() is None and block_sizes(8, 4096, 4096)[1:] == BLOCKS[False]


def test_an_unreadable_cache_file_means_not_tuned(empty_cache):
    tuning.cache_path().write_text("{not json")
    assert tuning.tuned() is None
