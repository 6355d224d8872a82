"""Attention block by block with an online softmax: FlashAttention's Algorithm 1, written plainly in base e.

Softmax needs, per query row, the largest score m (so that exp does not overflow) and the sum l of exp(s - m).
Both can be kept *running* over blocks of keys: when a block raises the max from m to m', the sum and the
unnormalized output so far are multiplied by exp(m - m'), as if m' had been used from the start. Queries are taken
a block at a time too, so no (Tq, Tk) matrix is ever held: only a (block_q, block_k) tile of scores.

``blockwise_attention`` is the algorithm to read, and ``online_softmax_walk`` steps through it for one query row
(the Cost view's walkthrough). ``attn_core.tiled.tiled_attention`` is the same loop tuned for speed: many heads at
once, exponents in base 2, tiles a mask hides skipped. All three equal ``attend`` (tests/test_tiled.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attn_core.attention import default_scale


@dataclass(frozen=True)
class Running:
    """What a row of queries keeps of the keys folded in so far: m, l and o of each query."""

    max: Tensor  # (..., n, 1) m = the largest score so far
    sum: Tensor  # (..., n, 1) l = Σ_j exp(s_j - m)
    out: Tensor  # (..., n, d_v) o = Σ_j exp(s_j - m) v_j

    @classmethod
    def start(cls, lead: tuple[int, ...], n: int, d_v: int, dtype: torch.dtype, device: torch.device) -> Running:
        """No key seen yet. m starts at the lowest finite number, not -inf: a block hiding every key of a row then
        gives exp(m - m') = exp(0) = 1 and exp(-inf - m') = 0, never exp(-inf + inf) = NaN."""
        lowest = torch.full((*lead, n, 1), torch.finfo(dtype).min, dtype=dtype, device=device)
        return cls(lowest, torch.zeros_like(lowest), torch.zeros(*lead, n, d_v, dtype=dtype, device=device))

    def fold_in(self, scores: Tensor, v_block: Tensor) -> tuple[Running, Tensor]:
        """The state after one block of keys, and the rescale exp(m - m'): scores (..., n, bk), -inf where hidden;
        v_block (..., bk, d_v)."""
        new_max = torch.maximum(self.max, scores.amax(dim=-1, keepdim=True))  # 2. m' = max(m, max_j s_j)  (..., n, 1)
        rescale = torch.exp(self.max - new_max)  # 3. exp(m - m'): how much the sums so far shrink
        weights = torch.exp(scores - new_max)  # 4. p_j = exp(s_j - m'), 0 where hidden  (..., n, bk)
        new_sum = rescale * self.sum + weights.sum(dim=-1, keepdim=True)  # 5. l' = exp(m - m') l + Σ_j p_j
        new_out = rescale * self.out + weights @ v_block  # 6. o' = exp(m - m') o + Σ_j p_j v_j  (..., n, d_v)
        return Running(new_max, new_sum, new_out), rescale

    def result(self) -> Tensor:
        """7. o / l, the softmax-weighted values (..., n, d_v); 0 for a row that saw no key (l = 0)."""
        return self.out / self.sum.masked_fill(self.sum == 0, 1.0)


def blockwise_attention(
    q: Tensor, k: Tensor, v: Tensor, block_q: int, block_k: int, mask: Tensor | None = None, scale: float | None = None
) -> Tensor:
    """softmax(Q Kᵀ · scale) V, ``block_q`` queries against ``block_k`` keys at a time, with an online softmax.

    q: (..., Tq, d); k: (..., Tk, d); v: (..., Tk, d_v); mask: bool, broadcastable to (..., Tq, Tk), True where a
    query may attend; scale: 1/√d by default. A query that sees no key gets 0, as in ``attend``.
    """
    *lead, t_q, d = q.shape
    t_k = k.shape[-2]
    scale = default_scale(d) if scale is None else scale
    if mask is not None:
        mask = mask.expand(*lead, t_q, t_k)  # (..., Tq, Tk), a view
    rows = []
    for i in range(0, t_q, block_q):  # 1. for each block of queries Q_i: start with nothing seen
        state = Running.start(tuple(lead), min(block_q, t_q - i), v.shape[-1], q.dtype, q.device)
        for j in range(0, t_k, block_k):  # for each block of keys K_j, V_j:
            scores = q[..., i : i + block_q, :] @ k[..., j : j + block_k, :].transpose(-2, -1) * scale  # S = Q_i K_jᵀ
            if mask is not None:
                scores = scores.masked_fill(~mask[..., i : i + block_q, j : j + block_k], float("-inf"))  # (..., n, bk)
            state, _ = state.fold_in(scores, v[..., j : j + block_k, :])  # steps 2 to 6
        rows.append(state.result())  # 7. O_i = o / l  (..., n, d_v)
    return torch.cat(rows, dim=-2)  # (..., Tq, d_v)


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
        """max |online - plain softmax| over the weights and the output."""
        return max(
            float((self.weights - self.softmax_weights).abs().max()), float((self.output - self.softmax_output).abs().max())
        )


# The Cost view's walk: a query row whose maximum score rises in the second and in the third block of 4 of its first
# 12 keys (by 0.69 and 0.95), so that both later blocks rescale what came before (by 0.50 and 0.39).
WALK_SEED = 51


def random_row(seed: int, t: int, d_head: int = 8, d_v: int = 4) -> tuple[Tensor, Tensor, Tensor]:
    """q ~ N(0, I) (d_head,), K (t, d_head), V (t, d_v): a seeded query row, float64."""
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*shape, generator=generator, dtype=torch.float64) for shape in ((d_head,), (t, d_head), (t, d_v)))


def online_softmax_walk(q: Tensor, k: Tensor, v: Tensor, block: int) -> OnlineSoftmaxWalk:
    """softmax(K q / √d)ᵀ V for one query q (d,) against keys k (T, d) and values v (T, d_v), ``block`` keys at a
    time with ``Running.fold_in``; the state is recorded after every block."""
    q, k, v = q.double(), k.double(), v.double()
    scores = k @ q * default_scale(q.shape[-1])  # (T,)
    state = Running.start((), 1, v.shape[-1], torch.float64, q.device)
    steps = []
    for start in range(0, len(scores), block):
        keys = range(start, min(len(scores), start + block))
        state, rescale = state.fold_in(scores[None, start : keys.stop], v[start : keys.stop])  # one row: (1, bk)
        block_max = float(scores[start : keys.stop].max())
        steps.append(BlockStep(keys, block_max, float(state.max), float(rescale), float(state.sum), state.result()[0]))
    weights = torch.exp(scores - state.max[0]) / state.sum[0]  # (T,)
    softmax_weights = torch.softmax(scores, dim=-1)  # (T,)
    return OnlineSoftmaxWalk(scores, steps, weights, state.result()[0], softmax_weights, softmax_weights @ v)
