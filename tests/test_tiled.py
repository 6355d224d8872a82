"""Tiled attention with online softmax, the naive reference, the walkthrough, and the cost arithmetic."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from attn_core import tiled
from attn_core.accounting import attention_flops, score_matrix_bytes, tiled_working_bytes
from attn_core.attention import attend, naive_attention
from attn_core.masks import causal_mask, document_mask, hidden_keys, padding_mask, window_mask
from attn_core.online_softmax import blockwise_attention, online_softmax_walk, random_row
from attn_core.sweep import MATMUL_SCRATCH, Settings, Skipped, matmul_reference, plan, runner
from attn_core.tiled import UNTUNED, TilePlan, TileStats, tiled_attention
from attn_core.timing import GIB, MIB, peak_bytes, sdpa_backend
from attn_ui.malloc import sweep_allocations


def qkv(t: int, dtype=torch.float64, batch: int = 2, heads: int = 3, d: int = 16, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(batch, heads, t, d, generator=generator, dtype=dtype) for _ in range(3))  # (B, H, T, d)


DEFAULT_BLOCKS = (UNTUNED.dense.block_q, UNTUNED.dense.block_k)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("t, block_q, block_k", [(100, 32, 24), (7, 32, 32), (64, 16, 16), (300, *DEFAULT_BLOCKS)])
def test_tiled_equals_naive_and_sdpa(dtype, causal, t, block_q, block_k):
    """Blocks that do and do not divide T, T below one block, the default blocks."""
    q, k, v = qkv(t, dtype)
    tiled = tiled_attention(q, k, v, causal=causal, block_q=block_q, block_k=block_k)
    sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert tiled.shape == sdpa.shape and tiled.dtype == dtype
    assert torch.allclose(tiled, naive_attention(q, k, v, causal=causal), atol=1e-5, rtol=0)
    assert torch.allclose(tiled, sdpa, atol=1e-5, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_key_padding_mask(dtype):
    q, k, v = qkv(50, dtype)
    mask = padding_mask([50, 23], 50).unsqueeze(1)  # (B, 1, 1, T): the second sequence has 23 real tokens
    tiled = tiled_attention(q, k, v, mask=mask, block_q=16, block_k=8)
    assert torch.allclose(tiled, naive_attention(q, k, v, mask=mask), atol=1e-5, rtol=0)
    assert torch.allclose(tiled, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-5, rtol=0)
    # Padded keys have no influence: the second sequence alone gives the same rows.
    alone = tiled_attention(q[1:, :, :, :], k[1:, :, :23], v[1:, :, :23], block_q=16, block_k=8)
    assert torch.allclose(tiled[1:], alone, atol=1e-5, rtol=0)


def test_padding_and_causal_together():
    q, k, v = qkv(40)
    mask = padding_mask([40, 30], 40).unsqueeze(1)  # (B, 1, 1, T)
    both = mask & torch.ones(40, 40, dtype=torch.bool).tril()
    tiled = tiled_attention(q, k, v, causal=True, mask=mask, block_q=8, block_k=16)
    assert torch.allclose(tiled, F.scaled_dot_product_attention(q, k, v, attn_mask=both), atol=1e-10, rtol=0)


def test_fully_blocked_row_gives_zero_not_nan():
    q, k, v = qkv(20)
    mask = torch.ones(20, 20, dtype=torch.bool)
    mask[3] = False  # query 3 may see no key
    mask[11, :] = False
    tiled = tiled_attention(q, k, v, mask=mask, block_q=8, block_k=4)
    assert not tiled.isnan().any()
    assert tiled[:, :, 3].eq(0).all() and tiled[:, :, 11].eq(0).all()
    naive = naive_attention(q, k, v, mask=mask)
    assert naive[:, :, 3].eq(0).all() and naive[:, :, 11].eq(0).all()  # not the NaN of softmax over only -inf
    assert torch.allclose(tiled, naive, atol=1e-10)
    assert torch.allclose(tiled, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-10)


@pytest.mark.parametrize("t, block_q, block_k", [(20, 8, 4), (13, 5, 13), (9, 16, 3)])
def test_blockwise_attention_the_algorithm_to_read_equals_attend_and_the_kernel(t, block_q, block_k):
    """The plain online-softmax loop, under a mask with rows that see nothing, with blocks that do and do not
    divide T: equal to attend (the steps kept), to the tuned kernel and to SDPA."""
    q, k, v = qkv(t)
    mask = torch.rand(t, t, generator=torch.Generator().manual_seed(t)) < 0.6  # (T, T)
    mask[2] = False  # query 2 sees no key
    blockwise = blockwise_attention(q, k, v, block_q, block_k, mask=mask)
    assert blockwise[:, :, 2].eq(0).all()
    assert torch.allclose(blockwise, attend(q, k, v, mask=mask).context, atol=1e-12, rtol=0)
    assert torch.allclose(blockwise, tiled_attention(q, k, v, mask=mask, block_q=block_q, block_k=block_k), atol=1e-12)
    assert torch.allclose(blockwise, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-12)
    assert torch.allclose(blockwise_attention(q, k, v, block_q, block_k), attend(q, k, v).context, atol=1e-12)


def test_window_mask_shape():
    assert window_mask(5, 2).int().tolist() == [
        [1, 0, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [0, 1, 1, 0, 0],
        [0, 0, 1, 1, 0],
        [0, 0, 0, 1, 1],
    ]
    assert torch.equal(window_mask(6, 6), causal_mask(6)) and torch.equal(window_mask(6, 100), causal_mask(6))
    with pytest.raises(ValueError, match="at least 1"):
        window_mask(4, 0)


def padded(lengths: list[int], t: int = 70) -> Tensor:
    return padding_mask(lengths, t).unsqueeze(1)  # (B, 1, 1, T)


MASKS = {  # name: (tiled_attention's keywords, the same as a boolean mask for T = 70, broadcastable to (B, H, T, T))
    "window": (dict(window=9), window_mask(70, 9)),
    "causal": (dict(causal=True), causal_mask(70)),
    "padding": (dict(key_lengths=[70, 23]), padded([70, 23])),
    "window and padding": (dict(window=30, key_lengths=[5, 70]), window_mask(70, 30) & padded([5, 70])),
    "causal and padding": (dict(causal=True, key_lengths=[70, 0]), causal_mask(70) & padded([70, 0])),
}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("blocks", [(16, 8), (32, 24), (None, None)])
@pytest.mark.parametrize("name", list(MASKS))
def test_masks_equal_naive_and_sdpa(name, blocks, dtype):
    """Masks given as tiled_attention's arguments: it equals naive and SDPA given the same boolean mask, and
    both give 0 on rows that see nothing (every key of a sequence of length 0; a query whose window holds only
    padding)."""
    keywords, mask = MASKS[name]
    q, k, v = qkv(70, dtype)
    tiled = tiled_attention(q, k, v, block_q=blocks[0], block_k=blocks[1], **keywords)
    naive = naive_attention(q, k, v, mask=mask)
    sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.allclose(tiled, naive, atol=1e-5, rtol=0) and torch.allclose(tiled, sdpa, atol=1e-5, rtol=0)
    empty = ~mask.expand(2, 3, 70, 70).any(dim=-1)  # (B, H, T): rows that see no key
    assert tiled[empty].eq(0).all() and naive[empty].eq(0).all()
    if "window" in keywords or "causal" in keywords:
        plain = {key: value for key, value in keywords.items() if key != "key_lengths"}
        assert torch.allclose(
            naive_attention(q, k, v, mask=mask if "key_lengths" in keywords else None, **plain), naive, atol=1e-12
        )
    if name in ("window and padding", "causal and padding"):
        assert empty.any()


def test_a_mask_tensor_with_window_and_empty_rows():
    q, k, v = qkv(50)
    custom = torch.rand(50, 50, generator=torch.Generator().manual_seed(2)) < 0.5
    custom[7] = False
    stats = TileStats()
    tiled = tiled_attention(q, k, v, window=12, mask=custom, block_q=8, block_k=8, stats=stats)
    both = custom & window_mask(50, 12)
    assert torch.allclose(tiled, naive_attention(q, k, v, window=12, mask=custom), atol=1e-10)
    assert torch.allclose(tiled, F.scaled_dot_product_attention(q, k, v, attn_mask=both), atol=1e-10)
    assert tiled[:, :, 7].eq(0).all()


def test_window_skips_every_hidden_key_block():
    """A window of 64 keys over blocks of 64: each query block reads its own key block and the one before."""
    q, k, v = qkv(1024, torch.float32, batch=1, heads=2)
    stats = TileStats()
    tiled_attention(q, k, v, window=64, block_q=64, block_k=64, stats=stats)
    query_blocks = 1024 // 64
    assert stats.computed == 2 * query_blocks - 1 and stats.tiles == query_blocks * query_blocks
    assert stats.skipped == stats.tiles - stats.computed
    twice = TileStats()
    tiled_attention(*qkv(2048, torch.float32, batch=1, heads=2), window=64, block_q=64, block_k=64, stats=twice)
    assert twice.computed == 2 * (2 * query_blocks) - 1  # linear in T
    causal = TileStats()
    tiled_attention(q, k, v, causal=True, block_q=64, block_k=64, stats=causal)
    assert causal.computed == query_blocks * (query_blocks + 1) // 2 and causal.masked == query_blocks
    full = TileStats()
    tiled_attention(q, k, v, block_q=64, block_k=64, stats=full)
    assert full.computed == full.tiles == query_blocks**2 and full.masked == 0


def test_padding_skips_key_blocks_past_every_real_length():
    q, k, v = qkv(256, torch.float32, batch=2, heads=2)
    stats = TileStats()
    tiled_attention(q, k, v, key_lengths=[64, 100], block_q=64, block_k=32, stats=stats)
    # Both batch elements in one chunk of 4 heads: keys up to 100, 4 blocks of 32, per query block.
    assert stats.computed == 4 * 4 and stats.masked == 4 * 2  # blocks 64-95 and 96-99 cross a real length
    mask_stats = TileStats()
    mask = padding_mask([64, 64], 256).unsqueeze(1)  # (B, 1, 1, T)
    tiled_attention(q, k, v, mask=mask, block_q=64, block_k=32, stats=mask_stats)
    assert mask_stats.computed == 4 * 2  # a boolean mask's all-False blocks are skipped too
    with pytest.raises(ValueError, match="one length per batch element"):
        tiled_attention(q, k, v, key_lengths=[3])


def test_causal_skips_key_blocks_above_the_diagonal():
    """Changing keys that only later queries see cannot change earlier rows."""
    q, k, v = qkv(64)
    changed_k, changed_v = k.clone(), v.clone()
    changed_k[:, :, 40:] = 1e6
    changed_v[:, :, 40:] = float("nan")  # would poison any row that read them
    tiled = tiled_attention(q, changed_k, changed_v, causal=True, block_q=8, block_k=8)
    assert torch.allclose(tiled[:, :, :40], tiled_attention(q, k, v, causal=True)[:, :, :40], atol=1e-12)


@pytest.mark.parametrize("window", [None, 1, 5, 40])
def test_hidden_box_is_the_smallest_rectangle_around_every_hidden_pair(window):
    """Only that part of a tile gets the mask added, so it must hold every pair the mask hides, and no more rows or
    keys than those pairs span."""
    generator = torch.Generator().manual_seed(0)
    for _ in range(300):
        q_start, k_start = (int(x) for x in torch.randint(0, 60, (2,), generator=generator))
        queries = range(q_start, q_start + int(torch.randint(1, 30, (1,), generator=generator)))
        keys = range(k_start, k_start + int(torch.randint(1, 30, (1,), generator=generator)))
        hidden = hidden_keys(queries, keys, window)  # (n, bk)
        rows, cols = hidden.any(1).nonzero().flatten(), hidden.any(0).nonzero().flatten()
        expected = (
            None
            if not hidden.any()
            else (
                range(queries.start + rows.min().item(), queries.start + rows.max().item() + 1),
                range(keys.start + cols.min().item(), keys.start + cols.max().item() + 1),
            )
        )
        assert tiled.hidden_box(queries, keys, window) == expected


LONG_MASKS = {  # name: (tiled_attention's keywords, the same as a boolean mask broadcastable to (2, 4, 2048, 2048))
    "causal": (dict(causal=True), causal_mask(2048)),
    "window of 1,200": (dict(window=1200), window_mask(2048, 1200)),
    "causal and padding": (dict(causal=True, key_lengths=[2048, 1500]), causal_mask(2048) & padded([2048, 1500], 2048)),
    "documents": (dict(mask=document_mask([700, 1000, 348], 2048)), document_mask([700, 1000, 348], 2048)),
}


@pytest.mark.parametrize("name", list(LONG_MASKS))
def test_heads_in_chunks_whole_tiles_joined_and_diagonal_strips(name):
    """The default blocks at T = 2,048 under a mask, with tiles of at most 2 heads' scores (a plan's tile_bytes made
    small): 8 heads go in 4 chunks; whole tiles are joined into products of 512 keys (the no-mask block_k) computed one
    head at a time; the diagonal goes in strips of block_k rows. Each equals SDPA with the same mask."""
    block_q, block_k = UNTUNED.masked.block_q, UNTUNED.masked.block_k
    plan = TilePlan(masked=dataclasses.replace(UNTUNED.masked, tile_bytes=2 * 4 * block_q * block_k))
    assert plan.masked.sizes(8, 2048, 2048)[0] == 2 and plan.whole_tile_keys(2048) == UNTUNED.dense.block_k > block_k
    keywords, mask = LONG_MASKS[name]
    q, k, v = qkv(2048, torch.float32, heads=4)
    stats = TileStats()
    tiled_output = tiled_attention(q, k, v, stats=stats, plan=plan, **keywords)
    assert torch.allclose(tiled_output, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-5, rtol=0)
    assert stats.computed < stats.tiles  # tiles hidden entirely were skipped


def test_each_thread_keeps_its_own_buffers_between_calls():
    """A second call in a thread works in the first one's buffers; calls in two threads at once each in their own, so
    a class served by one app (a thread per session) gets the right numbers."""
    inputs = [qkv(300, torch.float32, seed=seed) for seed in range(2)]
    expected = [F.scaled_dot_product_attention(q, k, v, is_causal=True) for q, k, v in inputs]
    results, addresses = ([[], []] for _ in range(2))
    together = threading.Barrier(2)

    def calls(seed: int) -> None:
        together.wait()
        for _ in range(4):
            results[seed].append(tiled_attention(*inputs[seed], causal=True))
            addresses[seed].append(tiled.kept("scratch", (1,), torch.float32, torch.device("cpu")).data_ptr())
        together.wait()  # both alive to the end: a thread's buffers go with it, and the other's could take their place

    threads = [threading.Thread(target=calls, args=(seed,)) for seed in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for outputs, want in zip(results, expected, strict=True):
        assert len(outputs) == 4
        for output in outputs:
            torch.testing.assert_close(output, want, atol=1e-5, rtol=1e-5)
    assert [len(set(seen)) for seen in addresses] == [1, 1]  # one buffer a thread, kept between its calls
    assert addresses[0][0] != addresses[1][0]


def test_a_sweep_lets_go_of_the_tiled_kernels_buffers():
    """The Cost view's sweep runs with malloc's large threshold, then gives what it freed back to the system: the
    kernel's kept buffers are let go of first, so that they are among what goes back."""
    q, k, v = qkv(256, torch.float32)

    def scratch_bytes() -> int:
        return tiled.kept("scratch", (1,), torch.float32, torch.device("cpu")).untyped_storage().nbytes()

    with sweep_allocations():
        tiled_attention(q, k, v)
        assert scratch_bytes() > 4  # the call's scratch, kept
    assert scratch_bytes() == 4  # made anew for this one float


def test_calls_in_and_out_of_inference_mode_in_one_thread():
    """A buffer made in torch.inference_mode cannot be written in place outside it: each mode keeps its own."""
    q, k, v = qkv(200, torch.float32)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    for inference in (True, False, True, False):
        with torch.inference_mode(inference):
            torch.testing.assert_close(tiled_attention(q, k, v, causal=True), expected, atol=1e-5, rtol=1e-5)


def test_bfloat16_keeps_float32_statistics():
    q, k, v = qkv(128, torch.bfloat16)
    tiled = tiled_attention(q, k, v, block_q=32, block_k=32)
    assert tiled.dtype == torch.bfloat16
    exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double())
    assert (tiled.double() - exact).abs().max() < 0.02


def test_walkthrough_ends_equal_to_softmax():
    q, k, v = random_row(seed=3, t=12)
    walk = online_softmax_walk(q, k, v, block=4)
    assert [step.keys for step in walk.steps] == [range(0, 4), range(4, 8), range(8, 12)]
    scores = k @ q / 8**0.5
    assert torch.allclose(walk.scores, scores)
    running_max = float("-inf")
    for step in walk.steps:
        block = scores[step.keys.start : step.keys.stop]
        assert step.block_max == pytest.approx(float(block.max()))
        new_max = max(running_max, step.block_max)
        assert step.running_max == pytest.approx(new_max)
        assert step.rescale == pytest.approx(torch.tensor(running_max - new_max).exp().item())
        seen = scores[: step.keys.stop]
        assert step.running_sum == pytest.approx(float((seen - new_max).exp().sum()))
        partial = torch.softmax(seen, dim=-1) @ v[: step.keys.stop]  # the answer had the row ended here
        assert torch.allclose(step.running_output, partial, atol=1e-12)
        running_max = new_max
    assert walk.steps[0].rescale == 0.0  # nothing before the first block
    assert walk.difference < 1e-12
    assert torch.allclose(walk.output, torch.softmax(scores, dim=-1) @ v, atol=1e-12)
    assert torch.allclose(walk.weights, torch.softmax(scores, dim=-1), atol=1e-12)


@pytest.mark.parametrize("block", [1, 5, 12, 20])
def test_walkthrough_any_block_size(block):
    walk = online_softmax_walk(*random_row(seed=0, t=12), block=block)
    assert len(walk.steps) == -(-12 // block)
    assert walk.difference < 1e-12


def test_flop_formula():
    assert attention_flops(1, 8, 1024, 64) == 4 * 8 * 1024**2 * 64
    assert attention_flops(2, 4, 100, 32, causal=True) == 4 * 2 * 4 * 100**2 * 32 / 2


def test_score_matrix_bytes():
    assert score_matrix_bytes(1, 1, 65_536, torch.float32) == 16 * GIB
    assert score_matrix_bytes(2, 8, 1024, torch.bfloat16) == 2 * 8 * 1024**2 * 2


def test_memory_budget_refuses_a_point_over_it_and_accepts_one_below():
    settings = Settings(lengths=(1024, 65_536), memory_budget=2 * GIB)
    runs, skipped = plan(settings)
    assert runs[1024] == ["naive", "sdpa", "tiled"]
    assert "naive" not in runs[65_536]
    refusal = next(s for s in skipped if s.method == "naive")
    assert refusal == Skipped("naive", 65_536, refusal.needed, 2 * GIB)
    rows = 8 * 65_536 * 64 * 4  # bytes of one of q, k, v, output
    matrices = 2 * score_matrix_bytes(1, 8, 65_536, torch.float32)  # scores and softmax: 128 GiB each
    reference = MATMUL_SCRATCH + rows  # the matmul reference's block of scores and its output
    assert refusal.needed == 4 * rows + matrices + reference
    assert refusal.message == "T=65,536 naive needs ≈ 256.7 GiB, over the 2.0 GiB budget; skipped"
    causal = plan(Settings(lengths=(65_536,), causal=True))[1][0]
    assert causal.needed == refusal.needed + 2 * 65_536**2  # the causal mask and the ones it is made from
    # A budget just above a point's estimate accepts it; just below refuses it.
    naive = settings.working_bytes("naive", 1024, sdpa_backend(*qkv(8), False))
    needed = settings.input_bytes(1024) + settings.matmul_bytes(1024) + naive
    assert plan(Settings(lengths=(1024,), memory_budget=needed))[0][1024][0] == "naive"
    assert "naive" not in plan(Settings(lengths=(1024,), memory_budget=needed - 1))[0][1024]


@pytest.mark.parametrize("t", [1024, 8192])
def test_memory_budget_counts_the_matmul_reference(t):
    """The matmul reference's buffers (made once, up to MATMUL_SCRATCH of scores and the output) live through every
    run at its T: its estimate covers what it allocates, and a point fits only with it counted."""
    settings = Settings(lengths=(t,), methods=("tiled",))
    q, k, v = (torch.randn(settings.shape(t)) for _ in range(3))
    measured = peak_bytes(lambda: matmul_reference(q, k, v)(), torch.device("cpu"))
    assert measured <= settings.matmul_bytes(t) < measured + MIB
    assert settings.matmul_bytes(t) >= (MATMUL_SCRATCH if t == 8192 else 8 * t * t * 4)
    needed = settings.input_bytes(t) + settings.matmul_bytes(t) + settings.working_bytes("tiled", t)
    assert plan(Settings(lengths=(t,), methods=("tiled",), memory_budget=needed))[0][t] == ["tiled"]
    runs, skipped = plan(Settings(lengths=(t,), methods=("tiled",), memory_budget=needed - 1))
    assert runs[t] == [] and skipped == [Skipped("tiled", t, needed, needed - 1)]


@pytest.mark.parametrize("method", ["naive", "sdpa", "tiled"])
def test_memory_estimate_covers_the_measured_peak(method):
    settings = Settings(lengths=(512,))
    q, k, v = (torch.randn(settings.shape(512)) for _ in range(3))
    measured = peak_bytes(runner(method, q, k, v, False), torch.device("cpu"))
    estimate = settings.working_bytes(method, 512, sdpa_backend(q, k, v, False))
    output = q.numel() * 4
    assert output <= measured <= estimate < 1.5 * measured + 2 * MIB  # an upper bound, and a close one


def test_peak_memory_tells_naive_from_tiled():
    q, k, v = (torch.randn(1, 8, 1024, 64) for _ in range(3))
    cpu = torch.device("cpu")
    naive = peak_bytes(runner("naive", q, k, v, False), cpu)
    tiled = peak_bytes(runner("tiled", q, k, v, False), cpu)
    matrix = score_matrix_bytes(1, 8, 1024, torch.float32)
    assert naive >= 2 * matrix  # two (8, 1024, 1024) matrices at once
    assert tiled < matrix / 2  # its output and one tile of scores: 4 heads × 1024 queries × 512 keys


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("t", [100, 1000, 2048])
def test_tiled_memory_estimate_by_dtype_and_length(dtype, t, causal):
    """The estimate covers the blocks chosen for each mask, a last shorter block of queries (T = 1000) and a last
    shorter chunk of heads (B·H = 6)."""
    for batch, heads in ((1, 8), (2, 3)):
        q, k, v = (torch.randn(batch, heads, t, 64, dtype=dtype) for _ in range(3))
        measured = peak_bytes(runner("tiled", q, k, v, causal), torch.device("cpu"))
        assert measured <= tiled_working_bytes(batch, heads, t, 64, dtype, causal) < 1.5 * measured


def test_the_kernel_reads_no_file_its_plan_is_passed_in():
    """tiled.py imports neither the tuning (which reads a file) nor the timing: the callers pass a TilePlan, and a
    smaller tile_bytes puts fewer heads in one product, with the same numbers."""
    imported = subprocess.run(
        [sys.executable, "-c", "import sys, attn_core.tiled; print(sorted(m for m in sys.modules if m.startswith('attn_core')))"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "attn_core.tuning" not in imported and "attn_core.timing" not in imported and "attn_core.tiled" in imported
    q, k, v = qkv(512, torch.float32, heads=8)
    one_head = TilePlan(dense=tiled.Tiles(256, 128, 4 * 256 * 128))  # one head's (256, 128) scores a product
    assert one_head.dense.sizes(16, 512, 512) == (1, 256, 128) and UNTUNED.dense.sizes(16, 512, 512) == (8, 512, 512)
    assert torch.allclose(tiled_attention(q, k, v, plan=one_head), F.scaled_dot_product_attention(q, k, v), atol=1e-5)
