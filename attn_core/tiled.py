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
from dataclasses import dataclass

import torch
from torch import Tensor

from attn_core.attention import default_scale

# Tuned on a 2-core CPU (B=1, 8 heads, head size 64, float32, T = 1k to 8k): see benchmarks/cost_targets.py.
BLOCK_Q = 256
BLOCK_K = 256
NEG_INF = float("-inf")
LOG2_E = 1 / math.log(2)  # exp(x) = 2^(x · log2 e); exp2 is the faster of the two on CPUs


def attention_flops(batch: int, heads: int, t: int, d_head: int, causal: bool = False) -> float:
    """Floating-point operations of the two matmuls, Q Kᵀ and A V: 2 · 2·T²·d per head, 4·B·H·T²·d.

    Causal attention needs only the lower triangle: half of it.
    """
    flops = 4.0 * batch * heads * t * t * d_head
    return flops / 2 if causal else flops


def score_matrix_bytes(batch: int, heads: int, t: int, dtype: torch.dtype) -> int:
    """Bytes of one (B, H, T, T) score matrix: B·H·T²·bytes per element."""
    return batch * heads * t * t * dtype.itemsize


def naive_working_bytes(
    batch: int, heads: int, t: int, d_head: int, dtype: torch.dtype, causal: bool = False, matrices: int = 2
) -> int:
    """What ``naive_attention`` allocates on top of its inputs, at most: the output, ``matrices`` live
    (B, H, T, T) matrices (the scores and their softmax) and, if causal, the mask and its ones (2 · T² bytes)."""
    output = batch * heads * t * d_head * dtype.itemsize
    return output + matrices * score_matrix_bytes(batch, heads, t, dtype) + causal * 2 * t * t


def tiled_working_bytes(batch: int, heads: int, t: int, d_head: int, dtype: torch.dtype) -> int:
    """What ``tiled_attention`` allocates on top of its inputs, at most: the output; per block a scaled
    (block_q, d) query block, the float32 output accumulator, one (block_q, block_k) block of float32 scores
    (first in the input dtype, and the value block in float32, when that is not float32) and the block's
    causal mask. Nothing but the output grows with T."""
    rows, n, block = batch * heads, min(t, BLOCK_Q), min(t, BLOCK_K)
    converted = dtype != torch.float32  # scores and values are converted to float32 block by block
    per_row = d_head * (dtype.itemsize + 4) + block * (4 + converted * dtype.itemsize) + 16
    return rows * t * d_head * dtype.itemsize + rows * n * per_row + converted * rows * block * d_head * 4 + n * block * 9


def naive_attention(q: Tensor, k: Tensor, v: Tensor, *, causal: bool = False, mask: Tensor | None = None) -> Tensor:
    """softmax(Q Kᵀ · scale) V with plain torch ops, materializing every (T_q, T_k) matrix.

    q: (B, H, Tq, d); k: (B, H, Tk, d); v: (B, H, Tk, d_v); mask: bool, broadcastable to (B, H, Tq, Tk).
    A row that sees no key is NaN here (softmax of all -inf), as in most plain implementations.
    """
    t_q, t_k = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) * default_scale(q.shape[-1])  # (B, H, Tq, Tk)
    if causal:
        above = torch.ones(t_q, t_k, dtype=torch.bool, device=q.device).triu(1)  # (Tq, Tk) True = future key
        scores = scores.masked_fill(above, NEG_INF)  # (B, H, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, NEG_INF)  # (B, H, Tq, Tk)
    return torch.softmax(scores, dim=-1) @ v  # (B, H, Tq, d_v)


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


def tiled_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    causal: bool = False,
    mask: Tensor | None = None,
    block_q: int = BLOCK_Q,
    block_k: int = BLOCK_K,
) -> Tensor:
    """softmax(Q Kᵀ / √d) V computed block by block with an online softmax; never the (Tq, Tk) matrix.

    q: (B, H, Tq, d); k: (B, H, Tk, d); v: (B, H, Tk, d_v); mask: bool, broadcastable to (B, H, Tq, Tk),
    True where the query may attend. With ``causal``, key blocks entirely above the diagonal are skipped.
    Statistics are kept in float32 (float64 for float64 inputs); the output has q's dtype.
    """
    *lead, t_q, d = q.shape
    t_k, d_v = k.shape[-2], v.shape[-1]
    q3, k3, v3 = (x.reshape(-1, *x.shape[-2:]) for x in (q, k, v))  # (B·H, T, d): views of contiguous inputs
    if mask is not None:
        mask = mask.to(device=q.device, dtype=torch.bool).expand(*lead, t_q, t_k)  # a view, no copy
    stats_dtype = torch.promote_types(q.dtype, torch.float32)
    out = q3.new_empty((q3.shape[0], t_q, d_v))  # (B·H, Tq, d_v)
    for q_start in range(0, t_q, block_q):
        q_end = min(t_q, q_start + block_q)
        q_block = q3[:, q_start:q_end] * (default_scale(d) * LOG2_E)  # (B·H, bq, d)
        state = RunningSoftmax.empty(q3.shape[0], q_end - q_start, d_v, stats_dtype, q.device)
        k_stop = min(t_k, q_end) if causal else t_k  # causal: later keys are invisible to every query here
        for k_start in range(0, k_stop, block_k):
            k_end = min(k_stop, k_start + block_k)
            hidden = []
            if causal and k_end - 1 > q_start:  # the block crosses the diagonal
                query = torch.arange(q_start, q_end, device=q.device).unsqueeze(1)  # (bq, 1)
                hidden.append(torch.arange(k_start, k_end, device=q.device) > query)  # (bq, bk)
            if mask is not None:
                hidden.append(~mask[..., q_start:q_end, k_start:k_end].reshape(-1, q_end - q_start, k_end - k_start))
            state.update(q_block, k3[:, k_start:k_end], v3[:, k_start:k_end], *hidden)
        state.result(out=out[:, q_start:q_end])
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
