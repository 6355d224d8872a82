"""What attention costs, counted: its floating-point operations, and the bytes each method allocates.

The Cost view and ``attn_core.sweep`` report measured times and peaks beside these counts (GFLOP/s, the memory budget
a sweep checks before it runs a length).
"""

from __future__ import annotations

import math

import torch

from attn_core.tiled import UNTUNED, TilePlan


def visible_pairs(t: int, causal: bool = False, window: int | None = None) -> float:
    """How many (query, key) pairs a T × T mask lets through: T², T²/2 for causal (the FLOP convention),
    Σ min(i + 1, w) for a window of w keys."""
    if window is not None:
        w = min(window, t)
        return w * t - w * (w - 1) / 2
    return t * t / 2 if causal else float(t * t)


def attention_flops(batch: int, heads: int, t: int, d_head: int, causal: bool = False, window: int | None = None) -> float:
    """Floating-point operations of the two matmuls, Q Kᵀ and A V: 2 · 2·T²·d per head, 4·B·H·T²·d.

    Causal attention needs only the lower triangle: half of it; a window of w keys about w·T pairs.
    """
    return 4.0 * batch * heads * d_head * visible_pairs(t, causal, window)


def score_matrix_bytes(batch: int, heads: int, t: int, dtype: torch.dtype) -> int:
    """Bytes of one (B, H, T, T) score matrix: B·H·T²·bytes per element."""
    return batch * heads * t * t * dtype.itemsize


def naive_working_bytes(
    batch: int, heads: int, t: int, d_head: int, dtype: torch.dtype, causal: bool = False, matrices: int = 2
) -> int:
    """What ``naive_attention`` allocates on top of its inputs, at most: the output, ``matrices`` live
    (B, H, T, T) matrices (the scores and their softmax) and, if causal (or windowed), the boolean mask and
    one more T × T boolean it is made from (2 · T² bytes)."""
    output = batch * heads * t * d_head * dtype.itemsize
    return output + matrices * score_matrix_bytes(batch, heads, t, dtype) + causal * 2 * t * t


def tiled_working_bytes(
    batch: int,
    heads: int,
    t: int,
    d_head: int,
    dtype: torch.dtype,
    causal: bool = False,
    mask: bool = False,
    plan: TilePlan = UNTUNED,
) -> int:
    """What ``tiled_attention`` with ``plan`` allocates on top of its inputs, at most (``causal``: under a causal or
    window mask; ``mask``: under a (T, T) boolean mask): the output; for a chunk of heads (Tiles.sizes) the scaled
    (block_q, d) queries, the float32 running state (a max, a sum and a (block_q, d) output), the scores of one
    product (a (block_q, block_k) tile of the chunk's heads, or whole tiles joined for fewer heads), a few per-row
    temporaries and a float32 (block_q, d) product (for a part of the rows);
    with a mask, its tile as booleans and as -inf / 0 floats (a (T, T) boolean mask's tile is shared by every head
    of the chunk; the next tile's is made while the last one's is held); for other dtypes than float32 a product's
    scores in that dtype and its values in float32. Nothing but the output grows with T, except a boolean mask's
    classification (TileClasses, made first): three T × T booleans, padded to whole tiles."""
    chunk, n, block = plan.tiles(causal).sizes(batch * heads, t, t)
    scores = plan.scratch_size(causal, chunk, n, block, plan.whole_tile_keys(t))  # one product's float32 scores
    converted = dtype != torch.float32  # scores and values are converted to float32 product by product
    per_row = d_head * (dtype.itemsize + 2 * 4) + 8 * 4
    output = batch * heads * t * d_head * dtype.itemsize
    mask_tiles = 2 if mask else 1  # (n, bk) tiles: two of a boolean mask, or one of the causal or window mask
    working = output + chunk * n * per_row + scores * (4 + converted * dtype.itemsize) + causal * mask_tiles * n * block * 5
    working += converted * (scores // n) * d_head * 4
    classes = 3 * (math.ceil(t / n) * n) * (math.ceil(t / block) * block) if mask else 0
    return max(working, classes)
