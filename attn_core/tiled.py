"""Attention without the T x T matrix: tiled attention with an online softmax (the FlashAttention idea).

Naive attention builds every score of every query against every key, a (T, T) matrix per head,
so its memory grows like T². Softmax only needs, per query row, the largest score (for stability)
and the sum of exponentials, and both can be kept *running*: process the keys block by block,
remember the running max m, the running sum l and the running (unnormalized) output o, and when a
new block raises the max from m_old to m_new, rescale l and o by exp(m_old - m_new). Queries are
processed in blocks too, so the temporaries are (block_q, block_k) per head whatever T is.

Conventions follow ``torch.nn.functional.scaled_dot_product_attention``: a boolean mask is True
where a query may attend to a key; ``causal`` lets query i see keys 0..i (top-left aligned).
Rows with no visible key give 0, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from attn_core.attention import default_scale

BLOCK_Q = 256  # default query rows per tile
BLOCK_K = 256  # default keys per tile
SCORE_TILE_BYTES = 2 * 2**20  # a tile's float32 scores for all the heads of one chunk: 8 heads x 256 x 256
NEG_INF = float("-inf")
LOG2_E = 1 / math.log(2)  # exp(x) = 2^(x · log2 e); exp2 is the faster of the two on CPUs


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


def block_sizes(rows: int, t_q: int, t_k: int) -> tuple[int, int, int]:
    """(heads per chunk, block_q, block_k) for ``rows`` = B·H heads: 256 × 256 tiles (shorter when T is), and
    as many heads at once as keep a tile's float32 scores within SCORE_TILE_BYTES, so a tile stays in cache
    whatever B·H is. Measured on the 2-core machine (2 threads, float32, d=64, fastest of 7 interleaved calls):
    at B=16, H=8, T=1024 one chunk of all 128 heads took 2.33x SDPA's time, chunks of 8 heads 1.18x; at B=4,
    H=8, T=4096 both about 1.18x; at B=1, H=8 there is one chunk either way."""
    block_q, block_k = min(t_q, BLOCK_Q), min(t_k, BLOCK_K)
    return max(1, min(rows, SCORE_TILE_BYTES // (4 * block_q * block_k))), block_q, block_k


def tiled_working_bytes(batch: int, heads: int, t: int, d_head: int, dtype: torch.dtype) -> int:
    """What ``tiled_attention`` allocates on top of its inputs, at most: the output; per tile of a chunk of
    heads a scaled (block_q, d) query block, the float32 output accumulator, one (block_q, block_k) block of
    float32 scores (first in the input dtype, and the value block in float32, when that is not float32) and the
    block's mask. Nothing but the output grows with T."""
    chunk, n, block = block_sizes(batch * heads, t, t)
    converted = dtype != torch.float32  # scores and values are converted to float32 block by block
    per_row = d_head * (dtype.itemsize + 4) + block * (4 + converted * dtype.itemsize) + 16
    output = batch * heads * t * d_head * dtype.itemsize
    return output + chunk * n * per_row + converted * chunk * block * d_head * 4 + n * block * 9


def hidden_keys(queries: range, keys: range, window: int | None = None, device: torch.device | None = None) -> Tensor:
    """(len(queries), len(keys)) boolean, True where the causal mask (``window`` None) or the sliding window of
    ``window`` keys hides key j from query i: j > i, or j <= i - window."""
    query = torch.arange(queries.start, queries.stop, device=device).unsqueeze(1)  # (n, 1)
    key = torch.arange(keys.start, keys.stop, device=device)  # (bk,)
    hidden = key > query  # (n, bk)
    if window is not None:
        hidden |= key <= query - window
    return hidden


def naive_attention(
    q: Tensor, k: Tensor, v: Tensor, *, causal: bool = False, mask: Tensor | None = None, window: int | None = None
) -> Tensor:
    """softmax(Q Kᵀ · scale) V with plain torch ops, materializing every (T_q, T_k) matrix.

    q: (B, H, Tq, d); k: (B, H, Tk, d); v: (B, H, Tk, d_v); mask: bool, broadcastable to (B, H, Tq, Tk);
    window: each query i sees keys i - window < j <= i only (a causal mask of ``window`` keys).
    A row that sees no key gives 0 (as SDPA and tiled_attention do), not the NaN of softmax over only -inf.
    """
    t_q, t_k = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) * default_scale(q.shape[-1])  # (B, H, Tq, Tk)
    if window is not None:
        scores = scores.masked_fill(hidden_keys(range(t_q), range(t_k), window, q.device), NEG_INF)  # (B, H, Tq, Tk)
    elif causal:
        above = torch.ones(t_q, t_k, dtype=torch.bool, device=q.device).triu(1)  # (Tq, Tk) True = future key
        scores = scores.masked_fill(above, NEG_INF)  # (B, H, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, NEG_INF)  # (B, H, Tq, Tk)
    weights = torch.softmax(scores, dim=-1)  # (B, H, Tq, Tk); NaN rows where nothing is visible
    if mask is not None or window is not None:
        weights = weights.nan_to_num_(0.0)
    return weights @ v  # (B, H, Tq, d_v)


@dataclass
class RunningSoftmax:
    """Per query row: the running max m, the running sum l of exp(score - m) and the running
    unnormalized output o = Σ exp(score - m) · v over the keys folded in so far.

    Scores are kept in base 2 (multiplied by log2 e, folded into the query scale): 2^x is faster
    than e^x on CPUs and 2^(x · log2 e) = e^x, so m is log2 e times the natural running max.
    """

    max: Tensor  # (R, n, 1)
    sum: Tensor  # (R, n, 1)
    out: Tensor  # (R, n, d_v)

    @classmethod
    def empty(cls, heads: int, n: int, d_v: int, dtype: torch.dtype, device: torch.device) -> RunningSoftmax:
        """No key seen yet, for ``n`` query rows of each of ``heads`` (B·H) heads."""
        return cls(
            torch.full((heads, n, 1), NEG_INF, dtype=dtype, device=device),
            torch.zeros((heads, n, 1), dtype=dtype, device=device),
            torch.zeros((heads, n, d_v), dtype=dtype, device=device),
        )

    def update(self, q_block: Tensor, k_block: Tensor, v_block: Tensor, *hidden: Tensor) -> Tensor:
        """Fold in one block of keys and return the rescale factor exp(m_old - m_new), (R, n, 1).

        q_block: (R, n, d), already multiplied by scale · log2 e; k_block: (R, bk, d); v_block: (R, bk, d_v);
        hidden: bool masks broadcastable to (R, n, bk), True where the key is masked. R = B·H rows of heads.
        """
        scores = torch.bmm(q_block, k_block.transpose(1, 2)).to(self.max.dtype)  # (R, n, bk) base-2 scores
        for masked in hidden:
            scores.masked_fill_(masked, NEG_INF)
        new_max = torch.maximum(self.max, scores.amax(dim=-1, keepdim=True))  # (R, n, 1)
        # Rows with no visible key yet keep m = -inf; shifting them by the lowest finite number instead
        # gives 2^(-inf) = 0 for their scores and their rescale factor, never NaN.
        shift = new_max.clamp_min(torch.finfo(new_max.dtype).min)  # (R, n, 1)
        rescale = (self.max - shift).exp2_()  # (R, n, 1); 0 the first time a row sees a key
        probs = scores.sub_(shift).exp2_()  # (R, n, bk) exp(score - m_new), in place
        self.sum.mul_(rescale).add_(probs.sum(dim=-1, keepdim=True))  # (R, n, 1)
        self.out.mul_(rescale).baddbmm_(probs, v_block.to(probs.dtype))  # (R, n, d_v)
        self.max = new_max
        return rescale

    def result(self, out: Tensor | None = None) -> Tensor:
        """o / l, the softmax-weighted values; 0 for rows that saw no key. (R, n, d_v), written to ``out`` if given."""
        return torch.div(self.out, self.sum.masked_fill(self.sum == 0, 1.0), out=out)


@dataclass
class TileStats:
    """What one ``tiled_attention`` call did, tile by tile (a tile: a chunk of heads × a query block × a key
    block of the full grid); pass one as ``stats`` to have it counted."""

    tiles: int = 0  # tiles in the full grid: chunks × query blocks × key blocks
    computed: int = 0  # tiles whose scores were computed
    masked: int = 0  # of those, tiles that needed a mask (on the diagonal, a window's edge, a padding end)

    @property
    def skipped(self) -> int:
        """Tiles the masks hide entirely: never computed."""
        return self.tiles - self.computed


def visible_keys(queries: range, t_k: int, causal: bool, window: int | None, length: int) -> range:
    """The keys that some query of ``queries`` may see: up to the last query (causal, window), from the first
    query's window start (window), before the real ``length``; every other key block is skipped."""
    stop = min(length, queries.stop) if causal or window is not None else min(length, t_k)
    start = max(0, queries.start - window + 1) if window is not None else 0
    return range(start, max(start, stop))


def tiled_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    causal: bool = False,
    mask: Tensor | None = None,
    window: int | None = None,
    key_lengths: Sequence[int] | None = None,
    block_q: int | None = None,
    block_k: int | None = None,
    stats: TileStats | None = None,
) -> Tensor:
    """softmax(Q Kᵀ / √d) V computed block by block with an online softmax; never the (Tq, Tk) matrix.

    q: (B, H, Tq, d); k: (B, H, Tk, d); v: (B, H, Tk, d_v); mask: bool, broadcastable to (B, H, Tq, Tk),
    True where the query may attend; window: query i sees keys i - window < j <= i only; key_lengths: B real
    lengths, the keys after them are padding. Key blocks hidden entirely are skipped: above the diagonal
    (causal, window), before a window, after every real length of the chunk, or all False in ``mask``.
    Blocks default to ``block_sizes``. Statistics are kept in float32 (float64 for float64 inputs); the output
    has q's dtype; a row that sees no key gives 0.
    """
    *lead, t_q, d = q.shape
    t_k, d_v = k.shape[-2], v.shape[-1]
    q3, k3, v3 = (x.reshape(-1, *x.shape[-2:]) for x in (q, k, v))  # (B·H, T, d): views of contiguous inputs
    rows = q3.shape[0]
    chunk, default_q, default_k = block_sizes(rows, t_q, t_k)
    block_q, block_k = block_q or default_q, block_k or default_k
    if mask is not None:
        mask = mask.to(device=q.device, dtype=torch.bool).expand(*lead, t_q, t_k)  # a view, no copy
    if key_lengths is not None and len(key_lengths) != lead[0]:
        raise ValueError(f"key_lengths needs one length per batch element: {lead[0]}, not {len(key_lengths)}")
    per_head = [t_k] * rows if key_lengths is None else [min(n, t_k) for n in key_lengths for _ in range(rows // lead[0])]
    lengths = torch.tensor(per_head, device=q.device)  # (B·H,) real keys of each head
    stats = TileStats() if stats is None else stats
    stats_dtype = torch.promote_types(q.dtype, torch.float32)
    out = q3.new_empty((rows, t_q, d_v))  # (B·H, Tq, d_v)
    for r in range(0, rows, chunk):
        heads = slice(r, min(rows, r + chunk))
        shortest, longest = min(per_head[heads]), max(per_head[heads])
        for q_start in range(0, t_q, block_q):
            queries = range(q_start, min(t_q, q_start + block_q))
            q_block = q3[heads, q_start : queries.stop] * (default_scale(d) * LOG2_E)  # (c, bq, d)
            state = RunningSoftmax.empty(q_block.shape[0], len(queries), d_v, stats_dtype, q.device)
            keys = visible_keys(queries, t_k, causal, window, longest)
            stats.tiles += -(-t_k // block_k)
            for k_start in range(keys.start, keys.stop, block_k):
                block = range(k_start, min(keys.stop, k_start + block_k))
                hidden = []
                diagonal = (causal or window is not None) and block.stop - 1 > queries.start
                if diagonal or (window is not None and block.start <= queries.stop - 1 - window):
                    hidden.append(hidden_keys(queries, block, window, q.device))  # (bq, bk)
                if block.stop > shortest:  # some head's padding starts in this block
                    hidden.append(torch.arange(block.start, block.stop, device=q.device) >= lengths[heads, None, None])
                if mask is not None:
                    visible = mask[..., queries.start : queries.stop, block.start : block.stop]  # (B, H, bq, bk)
                    visible = visible.reshape(rows, len(queries), len(block))[heads]  # (c, bq, bk)
                    if not visible.any():
                        continue
                    hidden.append(~visible)
                stats.computed += 1
                stats.masked += bool(hidden)
                state.update(q_block, k3[heads, block.start : block.stop], v3[heads, block.start : block.stop], *hidden)
            state.result(out=out[heads, q_start : queries.stop])
    return out.reshape(*lead, t_q, d_v)


@dataclass(frozen=True)
class BlockStep:
    """One block of keys folded into one query row."""

    keys: range  # the block's key positions
    block_max: float  # the largest score in the block
    running_max: float  # m after this block
    rescale: float  # exp(m_old - m_new): what the earlier sum and output were multiplied by
    running_sum: float  # l after this block, Σ exp(score - m) over the keys so far
    running_output: Tensor  # (d_v,) o / l: the answer if the row ended here


@dataclass(frozen=True)
class OnlineSoftmaxWalk:
    """One query row processed block by block, next to the plain softmax."""

    scores: Tensor  # (T,) the row's scaled scores q·k / √d
    steps: list[BlockStep]
    weights: Tensor  # (T,) exp(score - m) / l with the final m and l
    output: Tensor  # (d_v,) the online result
    softmax_weights: Tensor  # (T,) torch.softmax(scores)
    softmax_output: Tensor  # (d_v,) torch.softmax(scores) @ V

    @property
    def difference(self) -> float:
        """Largest |online - plain softmax| over the weights and the output."""
        return max(
            float((self.weights - self.softmax_weights).abs().max()), float((self.output - self.softmax_output).abs().max())
        )


def random_row(seed: int, t: int, d_head: int = 8, d_v: int = 4) -> tuple[Tensor, Tensor, Tensor]:
    """A seeded query q (d_head,), keys K (t, d_head) and values V (t, d_v), float64, N(0, 1) entries."""
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*shape, generator=generator, dtype=torch.float64) for shape in ((d_head,), (t, d_head), (t, d_v)))


def online_softmax_walk(q: Tensor, k: Tensor, v: Tensor, block: int) -> OnlineSoftmaxWalk:
    """One query q (d,) against keys k (T, d) and values v (T, d_v), ``block`` keys at a time, with the
    same update as ``tiled_attention``; the state is recorded after every block."""
    q, k, v = q.double(), k.double(), v.double()
    scale = default_scale(q.shape[-1])
    q_row = (q * (scale * LOG2_E)).reshape(1, 1, -1)  # (1, 1, d): one head, one query row
    scores = k @ q * scale  # (T,) for display and the plain softmax
    state = RunningSoftmax.empty(1, 1, v.shape[-1], torch.float64, q.device)
    steps = []
    for start in range(0, len(scores), block):
        keys = range(start, min(len(scores), start + block))
        rescale = state.update(q_row, k[None, start : keys.stop], v[None, start : keys.stop])
        block_max = float(scores[start : keys.stop].max())
        running_max = float(state.max) / LOG2_E
        steps.append(BlockStep(keys, block_max, running_max, float(rescale), float(state.sum), state.result().flatten()))
    weights = (scores * LOG2_E - state.max.flatten()).exp2() / state.sum.flatten()  # (T,)
    softmax_weights = torch.softmax(scores, dim=-1)  # (T,)
    return OnlineSoftmaxWalk(scores, steps, weights, state.result().flatten(), softmax_weights, softmax_weights @ v)
