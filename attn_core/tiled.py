"""Attention without the T x T matrix, fast on a CPU: ``attn_core.online_softmax.blockwise_attention`` tuned.

Naive attention builds every score of every query against every key, a (T, T) matrix per head, so its memory
grows like T². The online softmax (read it in ``attn_core.online_softmax``) needs only a (block_q, block_k) tile
at a time. This kernel runs the same loop, with what makes it as fast as PyTorch's own on a CPU:

- the heads go in chunks (``Tiles.sizes``), so that each matmul is large, into one flat scratch buffer;
- exponents are in base 2 (2^x is faster than e^x), the factor log2 e folded into the query scale;
- tiles that a mask hides entirely are skipped, tiles it leaves wholly visible are not masked (``KeyMasks``) and
  are joined into wider products, a tile computes only the queries that see some of its keys, and under the causal
  mask (or a window) each block's diagonal goes in strips of rows masked only where they cross it (``key_blocks``);
- its tiles' sizes (a ``TilePlan``) are those measured fastest on this machine by ``attn_core.tuning``, which the callers
  pass in: the kernel reads no file;
- its working buffers are kept per thread between calls (``kept``), not made anew as fresh pages each call.

Conventions follow ``torch.nn.functional.scaled_dot_product_attention``: a boolean mask is True
where a query may attend to a key; ``causal`` lets query i see keys 0..i (top-left aligned).
Rows with no visible key give 0, never NaN.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from attn_core.attention import default_scale
from attn_core.masks import TILE_FULL, TILE_PARTIAL, TILE_SKIPPED, hidden_keys

NEG_INF = float("-inf")
LOG2_E = 1 / math.log(2)  # exp(x) = 2^(x · log2 e); exp2 is the faster of the two on CPUs
_KEPT = threading.local()  # each thread's working buffers: kept()


@dataclass(frozen=True)
class Tiles:
    """How big a tile is: ``block_q`` queries × ``block_k`` keys, and at most ``tile_bytes`` of float32 scores in one
    product, the heads of a chunk together (heads go in chunks so that each matmul is large; a CPU with a smaller cache
    is faster with fewer at once)."""

    block_q: int
    block_k: int
    tile_bytes: int

    @property
    def label(self) -> str:
        return f"{self.block_q}x{self.block_k}, {self.tile_bytes / 2**20:g} MiB"

    def sizes(self, rows: int, t_q: int, t_k: int) -> tuple[int, int, int]:
        """(heads per chunk, block_q, block_k) for ``rows`` = B·H heads: the blocks, shorter when T is, and as many heads
        at once as keep a tile's float32 scores within tile_bytes."""
        block_q, block_k = min(t_q, self.block_q), min(t_k, self.block_k)
        return max(1, min(rows, self.tile_bytes // (4 * block_q * block_k))), block_q, block_k


@dataclass(frozen=True)
class TilePlan:
    """The tiles of attention without a mask (``dense``) and under one (``masked``: causal, a window, any boolean mask).
    Which are fastest depends on the CPU's caches and cores (docs/performance.md): ``attn_core.tuning`` measures this
    machine's, and the callers pass them in."""

    dense: Tiles = Tiles(1024, 512, 8 * 2**20)
    masked: Tiles = Tiles(1024, 128, 8 * 2**20)

    def tiles(self, masked: bool) -> Tiles:
        return self.masked if masked else self.dense

    def whole_tile_keys(self, t_k: int) -> int:
        """Keys of one product where the tiles are whole (every query of the block sees every key): the dense block_k,
        tuned for dense work, which is fastest in wider tiles than masked work."""
        return min(t_k, self.dense.block_k)

    def scratch_size(self, masked: bool, chunk: int, block_q: int, block_k: int, whole_k: int) -> int:
        """Floats of ``tiled_attention``'s scores scratch: a (block_q, block_k) tile for each of ``chunk`` heads, or
        whole tiles joined into (block_q, whole_k) for as many of them as the tiles' tile_bytes holds (at least one)."""
        whole_heads = max(1, min(chunk, self.tiles(masked).tile_bytes // (4 * block_q * whole_k)))
        return max(chunk * block_q * block_k, whole_heads * block_q * whole_k)


UNTUNED = TilePlan()  # the plan of a machine attn_core.tuning has not measured


def kept(name: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> Tensor:
    """This thread's buffer ``name`` as a ``shape`` tensor (contents left from its last use), kept between calls and
    made larger when too small. A new buffer of megabytes is new memory, each 4 KiB page of it zeroed by the system
    when first written: for ``tiled_attention``, thousands of page faults a call (docs/performance.md). Calls in
    torch.inference_mode have buffers of their own: a tensor made there cannot be written in place outside it."""
    buffers = vars(_KEPT).setdefault("buffers", {})
    size = math.prod(shape)
    key = (name, dtype, device, torch.is_inference_mode_enabled())
    buffer = buffers.get(key)
    if buffer is None or buffer.numel() < size:
        buffer = buffers[key] = torch.empty(size, dtype=dtype, device=device)
    return buffer[:size].view(shape)


def release_kept() -> None:
    """Let go of this thread's kept buffers: the next call makes them again (and a measure of its memory counts them)."""
    vars(_KEPT).pop("buffers", None)


@dataclass
class RunningSoftmax:
    """``attn_core.online_softmax.Running`` for a chunk of heads, updated in place: per query row the running max m,
    the running sum l of exp(score - m) and the running unnormalized output o = Σ exp(score - m) · v.

    Scores are in base 2 (multiplied by log2 e, folded into the query scale): 2^x is faster than e^x on CPUs and
    2^(x · log2 e) = e^x, so m is log2 e times the natural running max. As there, m starts at the lowest finite
    number, so a row with every key hidden so far never meets NaN.
    """

    max: Tensor  # (R, n, 1)
    sum: Tensor  # (R, n, 1)
    out: Tensor  # (R, n, d_v)

    @classmethod
    def kept(cls, heads: int, n: int, d_v: int, dtype: torch.dtype, device: torch.device) -> RunningSoftmax:
        """Room for ``n`` query rows of each of ``heads`` (B·H) heads in this thread's kept buffers (``kept``):
        restart it before use."""
        return cls(*(kept(name, (heads, n, size), dtype, device) for name, size in (("max", 1), ("sum", 1), ("out", d_v))))

    def restart(self) -> RunningSoftmax:
        """Forget every key."""
        self.max.fill_(torch.finfo(self.max.dtype).min)
        self.sum.zero_()
        self.out.zero_()
        return self

    def part(self, heads: slice, rows: slice) -> RunningSoftmax:
        """The state of some heads' query rows, as views: updating it updates this state."""
        return RunningSoftmax(self.max[heads, rows], self.sum[heads, rows], self.out[heads, rows])

    def update(self, scores: Tensor, v_block: Tensor) -> Tensor:
        """Fold in one block of keys and return the rescale factor exp(m_old - m_new), (R, n, 1).

        scores: (R, n, bk) base-2 scores q·k · scale · log2 e, -inf where masked, overwritten with exp(score - m_new);
        v_block: (R, bk, d_v) in the scores' dtype. R = B·H rows of heads.
        """
        new_max = torch.maximum(self.max, scores.amax(dim=-1, keepdim=True))  # (R, n, 1)
        rescale = (self.max - new_max).exp2_()  # (R, n, 1)
        self.max.copy_(new_max)
        probs = scores.sub_(new_max).exp2_()  # (R, n, bk) exp(score - m_new), in place
        self.sum.mul_(rescale).add_(probs.sum(dim=-1, keepdim=True))  # (R, n, 1)
        if self.out.is_contiguous():
            self.out.mul_(rescale).baddbmm_(probs, v_block)  # (R, n, d_v)
        else:  # some rows of a larger state: baddbmm_ into it would go head by head
            self.out.mul_(rescale).add_(torch.bmm(probs, v_block))  # (R, n, d_v)
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
    pairs: int = 0  # query-key pairs of the tiles computed: the rows each computes × its keys (per chunk of heads)

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


def seeing_rows(queries: range, keys: range, window: int | None) -> range:
    """The queries that may see some key of ``keys``, keys before the queries' own (every query sees those under the
    causal mask): all but, under a window of w keys, those from the last key + w on, which the window has passed.
    A tile computes only these rows."""
    stop = queries.stop if window is None else min(queries.stop, keys.stop - 1 + window)
    return range(queries.start, max(queries.start, stop))


def hidden_box(queries: range, keys: range, window: int | None) -> tuple[range, range] | None:
    """The rows and keys of the smallest part of ``queries`` × ``keys`` holding every pair that the causal mask
    (``window`` None) or a window of ``window`` keys hides: key j after query i (j > i), and under a window key j
    before i's window (j <= i - window); None where it hides none. Only that part of a tile needs a mask."""
    first, last = queries.start, queries.stop - 1
    after = range(first, min(last + 1, keys.stop - 1)), range(max(keys.start, first + 1), keys.stop)  # j > i
    boxes = [after]
    if window is not None:  # j <= i - window
        boxes.append((range(max(first, keys.start + window), last + 1), range(keys.start, min(keys.stop, last + 1 - window))))
    boxes = [(rows, cols) for rows, cols in boxes if rows and cols]
    if not boxes:
        return None
    rows, cols = zip(*boxes, strict=True)
    return span(rows), span(cols)


def span(parts: Sequence[range]) -> range:
    """From the first start to the last stop of ``parts``."""
    return range(min(part.start for part in parts), max(part.stop for part in parts))


def hiding(hidden: Tensor) -> Tensor:
    """-inf where ``hidden`` is True, else 0: added to a tile's scores, it masks them (for a chunk of heads, adding
    this once-made tile is faster than masked_fill_ with the mask broadcast over the heads)."""
    return torch.where(hidden, NEG_INF, 0.0)


class TileClasses:
    """A boolean mask's (block_q × block_k) tiles, classified once for every head together (FlexAttention's block
    mask): hidden (nothing visible), full (everything visible) or partial, so that a tile needs no look at the mask
    unless it is partial; and each tile's rows that see some key of it, the only ones it computes."""

    def __init__(self, mask: Tensor, t_q: int, t_k: int, block_q: int, block_k: int):
        shared = mask.expand(*mask.shape[:-2], t_q, t_k).reshape(-1, t_q, t_k)  # (heads it names, Tq, Tk): 1 for (Tq, Tk)
        somewhere, everywhere = (shared[0], shared[0]) if len(shared) == 1 else (shared.any(0), shared.all(0))  # (Tq, Tk)
        pad = (0, -t_k % block_k, 0, -t_q % block_q)  # the last blocks' missing cells: hidden for "any", seen for "all"
        if any(pad):
            somewhere, everywhere = F.pad(somewhere, pad, value=False), F.pad(everywhere, pad, value=True)  # (Tq', Tk')
        shape = (somewhere.shape[0] // block_q, block_q, somewhere.shape[1] // block_k, block_k)
        # As bytes (0 / 1), a tile row's largest and smallest are any and all, three times faster than on booleans.
        seeing = somewhere.view(torch.uint8).reshape(shape).amax(3).permute(0, 2, 1).bool()  # (q blocks, k blocks, block_q)
        self.any = seeing.any(2).tolist()  # [q block][k block]: some row of the tile sees a key
        self.all = everywhere.view(torch.uint8).reshape(shape).amin(3).amin(1).bool().tolist()  # every row sees every key
        self.first_row = seeing.int().argmax(2).tolist()  # [q block][k block]: the tile's first row that sees a key
        self.stop_row = (block_q - seeing.flip(2).int().argmax(2)).tolist()  # one past its last
        self.block_q, self.block_k = block_q, block_k

    def tile(self, queries: range, keys: range) -> tuple[int, int] | None:
        """(query block, key block) of the one tile that holds ``queries`` × ``keys``; None where they straddle two."""
        q_block, k_block = queries.start // self.block_q, keys.start // self.block_k
        if (queries.stop - 1) // self.block_q != q_block or (keys.stop - 1) // self.block_k != k_block:
            return None
        return q_block, k_block

    def rows(self, queries: range, keys: range) -> range:
        """The rows of ``queries`` that some head lets see some key of ``keys``: a packed document's first queries
        see nothing of its later key blocks, as under a causal mask. All of them where the ranges straddle tiles."""
        if (tile := self.tile(queries, keys)) is None:
            return queries
        q_block, k_block = tile
        offset = q_block * self.block_q
        start = max(queries.start, offset + self.first_row[q_block][k_block])
        return range(start, max(start, min(queries.stop, offset + self.stop_row[q_block][k_block])))

    def seen(self, queries: range, keys: range) -> bool | None:
        """False where no head sees any of ``queries`` × ``keys``, True where every head sees all of it, None where
        the mask must be read (a partial tile, or ranges that straddle two tiles of the grid)."""
        if (tile := self.tile(queries, keys)) is None:
            return None
        q_block, k_block = tile
        if not self.any[q_block][k_block]:
            return False
        return True if self.all[q_block][k_block] else None


def tile_classes(mask: Tensor, block_q: int, block_k: int) -> Tensor:
    """(⌈Tq / block_q⌉, ⌈Tk / block_k⌉) int: how ``tiled_attention(..., mask=mask)`` with these blocks treats each
    tile of a (..., Tq, Tk) boolean mask (True = may attend, shared by every head): TILE_SKIPPED where it hides every
    entry, TILE_FULL where it hides none (computed without the mask), TILE_PARTIAL where the mask is applied."""
    tiles = TileClasses(mask, *mask.shape[-2:], block_q, block_k)
    seen, whole = torch.tensor(tiles.any), torch.tensor(tiles.all)  # (q blocks, k blocks) each
    return torch.where(whole, TILE_FULL, torch.where(seen, TILE_PARTIAL, TILE_SKIPPED))


@functools.lru_cache(maxsize=16)
def diagonal_bias(offset: int, rows: int, keys: int, window: int | None, device: torch.device) -> Tensor:
    """hiding(hidden_keys(...)) for ``rows`` queries from 0 and ``keys`` keys from ``offset``: the causal (or window)
    mask depends only on j - i, so every strip of a call crossing the diagonal the same way shares one, made once."""
    return hiding(hidden_keys(range(rows), range(offset, offset + keys), window, device))  # (rows, keys)


Bias = tuple[slice, slice, Tensor]  # -inf / 0 added to a tile's scores: the tile's rows and keys it covers, and itself
ALL = slice(None)


@dataclass(frozen=True)
class TileMask:
    """What the masks do to one tile of scores: hide all of it ("skip": it is not computed), none of it ("whole":
    computed as it is) or some of it ("masked": its ``biases`` added to its scores)."""

    kind: str  # "skip", "whole" or "masked"
    biases: tuple[Bias, ...] = ()


SKIP, WHOLE = TileMask("skip"), TileMask("whole")


def within(part: range, whole: range) -> slice:
    """Where ``part`` lies in ``whole``, as a slice of it."""
    return slice(part.start - whole.start, part.stop - whole.start)


@dataclass(frozen=True)
class KeyMasks:
    """What hides keys from queries in ``tiled_attention``, turned into -inf / 0 tiles to add to scores."""

    causal: bool
    window: int | None
    lengths: list[int]  # B·H: the real keys of each head, the rest padding
    real: Tensor  # (B·H,) the same lengths
    mask: Tensor | None  # bool, True where a query may attend: (Tq, Tk) where every head shares it, else (B, H, Tq, Tk)
    tiles: TileClasses | None  # the mask's tiles classified once, for all heads; None without a mask

    def tile(self, queries: range, keys: range, heads: slice) -> TileMask:
        """What the masks do to the scores of ``heads`` × ``queries`` × ``keys``: SKIP where they hide everything, WHOLE
        where nothing, else "masked" with the -inf / 0 tiles to add, each with the rows and keys it covers. The causal
        (or window) mask's covers only the part of the tile it hides pairs in (hidden_box)."""
        biases = []
        box = hidden_box(queries, keys, self.window) if self.causal or self.window is not None else None
        if box is not None:
            rows, cols = box
            bias = diagonal_bias(cols.start - rows.start, len(rows), len(cols), self.window, self.real.device)  # (m, bk')
            biases.append((within(rows, queries), within(cols, keys), bias))
        if keys.stop > min(self.lengths[heads]):  # some head's padding starts in this block
            real = self.real[heads, None, None]  # (c, 1, 1)
            biases.append((ALL, ALL, hiding(torch.arange(keys.start, keys.stop, device=real.device) >= real)))  # (c, 1, bk)
        seen = None if self.mask is None else self.tiles.seen(queries, keys)
        if seen is False:  # a tile the mask hides from every head
            return SKIP
        if self.mask is not None and seen is None:  # a partial tile: its part of the mask is read
            visible = self.mask[..., queries.start : queries.stop, keys.start : keys.stop]  # (n, bk) or (B, H, n, bk)
            if visible.dim() > 2:  # a mask of its own for each head
                visible = visible.reshape(-1, len(queries), len(keys))[heads]  # (c, n, bk)
            if not visible.any():
                return SKIP
            if not visible.all():  # a tile the mask leaves wholly visible needs no bias
                biases.append((ALL, ALL, hiding(~visible)))
        return TileMask("masked", tuple(biases)) if biases else WHOLE


Product = tuple[range, range, TileMask]  # keys, the rows that see some of them, what the masks do to them


def key_blocks(
    queries: range, keys: range, block_k: int, whole_k: int, masks: KeyMasks, heads: slice, stats: TileStats
) -> Iterator[Product]:
    """The products a block of queries computes of ``keys``, the keys some of them see, its tiles of ``block_k`` keys
    counted in ``stats``: tiles (whole ones joined) up to the block's own keys, and these, under the causal mask or a
    window (the diagonal), in strips of rows."""
    diagonal = masks.causal or masks.window is not None
    own = range(max(keys.start, queries.start), keys.stop) if diagonal else range(keys.stop, keys.stop)
    yield from tiles_joined(queries, range(keys.start, own.start), block_k, whole_k, masks, heads, stats)
    if own:
        yield from diagonal_strips(queries, own, block_k, masks, heads, stats)


def tiles_joined(
    queries: range, keys: range, block_k: int, whole_k: int, masks: KeyMasks, heads: slice, stats: TileStats
) -> Iterator[Product]:
    """Each tile of ``block_k`` keys that is not hidden entirely, with only its rows that see a key (seeing_rows,
    TileClasses.rows); consecutive whole tiles (every row sees every key: below the causal diagonal, inside a window,
    between a mask's edges) joined into one product of up to ``whole_k`` keys, as dense work is fastest in wide
    products."""
    joined = None  # whole tiles not computed yet
    for k_start in range(keys.start, keys.stop, block_k):
        block = range(k_start, min(keys.stop, k_start + block_k))
        seen = seeing_rows(queries, block, masks.window)
        if masks.tiles is not None:
            seen = masks.tiles.rows(seen, block)
        tile = masks.tile(seen, block, heads) if seen else SKIP
        if tile is SKIP:  # no query of the block sees a key of this one
            continue
        stats.computed += 1
        stats.masked += tile.kind == "masked"
        stats.pairs += len(seen) * len(block)
        whole = tile is WHOLE and seen == queries
        if joined and (not whole or joined.stop != block.start or len(joined) + len(block) > whole_k):
            yield joined, queries, WHOLE
            joined = None
        if whole:
            joined = block if joined is None else range(joined.start, block.stop)
        else:
            yield block, seen, tile
    if joined:
        yield joined, queries, WHOLE


def diagonal_strips(
    queries: range, own: range, block_k: int, masks: KeyMasks, heads: slice, stats: TileStats
) -> Iterator[Product]:
    """The block's ``own`` keys under the causal mask or a window, in strips of ``block_k`` rows: each strip reads the
    keys it sees in one product, masked only where it crosses the diagonal (hidden_box). Its tiles read this way,
    a row of them at once, cost less than a column of them at once, each reading the rows below it."""
    stats.computed += math.ceil(len(own) / block_k)  # the diagonal's tiles: each holds a key seen by its own query,
    stats.masked += math.ceil(len(own) / block_k)  # and one hidden from a query before it
    for r_start in range(queries.start, queries.stop, block_k):
        strip = range(r_start, min(queries.stop, r_start + block_k))
        first = own.start if masks.window is None else max(own.start, strip.start - masks.window + 1)
        seen_keys = range(first, max(first, min(own.stop, strip.stop)))  # keys some row of the strip sees
        tile = masks.tile(strip, seen_keys, heads) if seen_keys else SKIP
        if tile is not SKIP:
            stats.pairs += len(strip) * len(seen_keys)
            yield seen_keys, strip, tile


def block_scores(q_block: Tensor, k_block: Tensor, scratch: Tensor) -> Tensor:
    """q_block (R, n, d) @ k_block (R, bk, d)ᵀ: (R, n, bk) scores in the start of the flat ``scratch``, in its dtype
    (float32 for float16 and bfloat16 inputs, whose product is made in their own dtype first)."""
    shape = (q_block.shape[0], q_block.shape[1], k_block.shape[1])
    scores = scratch[: math.prod(shape)].view(shape)  # (R, n, bk), contiguous
    if q_block.dtype == scratch.dtype:
        return torch.bmm(q_block, k_block.transpose(1, 2), out=scores)
    return scores.copy_(torch.bmm(q_block, k_block.transpose(1, 2)))


def tiled_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    causal: bool = False,
    mask: Tensor | None = None,
    window: int | None = None,
    key_lengths: Sequence[int] | None = None,
    plan: TilePlan = UNTUNED,
    block_q: int | None = None,
    block_k: int | None = None,
    stats: TileStats | None = None,
) -> Tensor:
    """softmax(Q Kᵀ / √d) V computed block by block with an online softmax; never the (Tq, Tk) matrix.

    q: (B, H, Tq, d); k: (B, H, Tk, d); v: (B, H, Tk, d_v); mask: bool, broadcastable to (B, H, Tq, Tk),
    True where the query may attend; window: query i sees keys i - window < j <= i only; key_lengths: B real
    lengths, the keys after them are padding. Key blocks hidden entirely are skipped: above the diagonal
    (causal, window), before a window, after every real length of the chunk, or all False in ``mask``; the rest
    are computed as ``key_blocks`` lays them out (whole tiles joined, the diagonal in strips of block_k rows).
    The tiles are ``plan``'s (this machine's: ``attn_core.tuning``), ``block_q`` and ``block_k`` where given; hidden
    scores get -inf added (KeyMasks). Statistics are kept in float32 (float64 for float64 inputs); the output has q's
    dtype; a row that sees no key gives 0.
    """
    *lead, t_q, d = q.shape
    t_k, d_v = k.shape[-2], v.shape[-1]
    q3, k3, v3 = (x.reshape(-1, *x.shape[-2:]) for x in (q, k, v))  # (B·H, T, d): views of contiguous inputs
    rows = q3.shape[0]
    masked = causal or window is not None or mask is not None
    chunk, default_q, default_k = plan.tiles(masked).sizes(rows, t_q, t_k)
    block_q, block_k = block_q or default_q, block_k or default_k
    if key_lengths is not None and len(key_lengths) != lead[0]:
        raise ValueError(f"key_lengths needs one length per batch element: {lead[0]}, not {len(key_lengths)}")
    per_head = [t_k] * rows if key_lengths is None else [min(n, t_k) for n in key_lengths for _ in range(rows // lead[0])]
    tiles = None
    if mask is not None:
        mask = mask.to(device=q.device, dtype=torch.bool)
        tiles = TileClasses(mask, t_q, t_k, block_q, block_k)  # the mask as given: a (T, T) one is classified once
        shared = all(size == 1 for size in mask.shape[:-2])  # one mask for every head: its tiles are read once
        mask = mask.reshape(mask.shape[-2:]).expand(t_q, t_k) if shared else mask.expand(*lead, t_q, t_k)  # views, no copy
    masks = KeyMasks(causal, window, per_head, torch.tensor(per_head, device=q.device), mask, tiles)
    stats = TileStats() if stats is None else stats
    stats_dtype = torch.promote_types(q.dtype, torch.float32)
    out = q3.new_empty((rows, t_q, d_v))  # (B·H, Tq, d_v)
    # This thread's buffers (kept), used by every block of queries in turn (a last, smaller one uses a part):
    scaled = kept("scaled", (chunk, block_q, d), q3.dtype, q.device)  # the block's queries times scale · log2 e
    running = RunningSoftmax.kept(chunk, block_q, d_v, stats_dtype, q.device)
    whole_k = max(block_k, plan.whole_tile_keys(t_k))  # keys of a product of whole tiles
    scratch_floats = plan.scratch_size(masked, chunk, block_q, block_k, whole_k)
    scratch = kept("scratch", (scratch_floats,), stats_dtype, q.device)  # products' scores
    for r in range(0, rows, chunk):
        heads = slice(r, min(rows, r + chunk))
        for q_start in range(0, t_q, block_q):
            queries = range(q_start, min(t_q, q_start + block_q))
            block_rows = (slice(0, heads.stop - heads.start), slice(0, len(queries)))
            q_block = torch.mul(q3[heads, q_start : queries.stop], default_scale(d) * LOG2_E, out=scaled[block_rows])
            state = running.part(*block_rows).restart()  # (c, bq) rows: nothing seen yet
            keys = visible_keys(queries, t_k, causal, window, max(per_head[heads]))
            stats.tiles += math.ceil(t_k / block_k)
            for block, seen, tile in key_blocks(queries, keys, block_k, whole_k, masks, heads, stats):
                part = within(seen, queries)  # the product's rows in the block of queries
                # Heads whose scores the scratch holds: every head of the chunk but for joined whole tiles (no bias).
                together = max(1, len(scratch) // (len(seen) * len(block)))
                for turn in range(0, heads.stop - heads.start, together):
                    some = slice(turn, min(heads.stop - heads.start, turn + together))  # of the chunk's heads
                    those = slice(heads.start + some.start, heads.start + some.stop)  # of all B·H heads
                    scores = block_scores(q_block[some, part], k3[those, block.start : block.stop], scratch)  # (c, n, bk)
                    for bias_rows, bias_keys, bias in tile.biases:
                        scores[:, bias_rows, bias_keys].add_(bias)
                    state.part(some, part).update(scores, v3[those, block.start : block.stop].to(stats_dtype))
            state.result(out=out[heads, q_start : queries.stop])
    return out.reshape(*lead, t_q, d_v)
