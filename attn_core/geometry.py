"""What self-attention sees of order, and where its queries meet its keys.

- **Order blindness.** Without positions, attention is permutation-equivariant: shuffling the tokens shuffles the
  outputs the same way, A(P X) = P A(X), so a sentence is a set to it. Adding positions to X breaks that.
- **Two kinds of position** (``attn_core.positions``): sinusoidal encodings added to X, against RoPE rotating q and k,
  under which the score of a word pair depends on its distance m − n only.
- **The query-key map** of AttentionViz (Yeh et al., 2023): queries and keys as points of one 2-D map, after a
  translation and a scaling that leave every attention weight as it was.
- **Static to contextual**: one word's vector in several sentences, stage by stage, in one 2-D map.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attn_core.attention import AttentionSteps, default_scale, masked_softmax, self_attention
from attn_core.positions import rope, sinusoidal
from attn_core.real_model import MiniLM, RealRun


def shuffled_order(t: int, seed: int) -> Tensor:
    """order (T,), slot i of the shuffled sentence holding token order[i]: seed 0 keeps the sentence as it is, any
    other a seeded permutation that moves at least one token (where T > 1)."""
    if seed == 0:
        return torch.arange(t)
    order = torch.randperm(t, generator=torch.Generator().manual_seed(seed))  # (T,)
    return order.roll(1) if t > 1 and torch.equal(order, torch.arange(t)) else order


@dataclass(frozen=True)
class OrderCheck:
    """Attention on a sentence and on its shuffle, and how far the shuffle's outputs are from the shuffled outputs."""

    order: Tensor  # (T,) slot i of the shuffle holds token order[i]
    original: AttentionSteps  # on X (+ P): weights (T, T), context (T, d_v)
    shuffled: AttentionSteps  # on X[order] (+ P): the positions stay with the slots, not with the tokens
    difference: float  # max |shuffled.context − original.context[order]|
    weights_difference: float  # max |shuffled.weights − original.weights[order][:, order]|


def order_check(x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, order: Tensor, positions: bool = False) -> OrderCheck:
    """max |A(P X + E) − P A(X + E)|, P the permutation ``order``, E = sinusoidal(T, C) with ``positions``, else 0.

    x: (T, C) word embeddings; w_q, w_k: (C, d_k); w_v: (C, d_v). ~0 (rounding) without positions: each token's
    output follows it wherever it goes. With them a token's position changes with its slot, and so does its output."""
    t, c = x.shape
    encoding = sinusoidal(t, c, x.device) if positions else torch.zeros_like(x)  # (T, C)
    original = self_attention(x + encoding, w_q, w_k, w_v)  # weights (T, T), context (T, d_v)
    shuffled = self_attention(x[order] + encoding, w_q, w_k, w_v)
    difference = (shuffled.context - original.context[order]).abs().max()
    weights_difference = (shuffled.weights - original.weights[order][:, order]).abs().max()
    return OrderCheck(order, original, shuffled, float(difference), float(weights_difference))


POSITION_KINDS = ("sinusoidal", "rope")


def position_scores(x_query: Tensor, x_key: Tensor, w_q: Tensor, w_k: Tensor, t: int, kind: str) -> Tensor:
    """S[m, n], the score of one query word at position m against one key word at position n, (T, T):

        sinusoidal: S[m, n] = ((x_a + P_m) W_Q) · ((x_b + P_n) W_K)
        rope:       S[m, n] = R_m(x_a W_Q) · R_n(x_b W_K)

    x_query, x_key: (C,) the two words' embeddings; w_q, w_k: (C, d_k). Under RoPE every diagonal m − n = δ is
    constant; under sinusoidal encodings it is not."""
    positions = torch.arange(t, device=x_query.device)
    if kind == "sinusoidal":
        encoding = sinusoidal(t, x_query.shape[-1], x_query.device)  # (T, C)
        q, k = (x_query + encoding) @ w_q, (x_key + encoding) @ w_k  # (T, d_k) each: the word at every position
    elif kind == "rope":
        q = rope((x_query @ w_q).expand(t, -1), positions)  # (T, d_k)
        k = rope((x_key @ w_k).expand(t, -1), positions)  # (T, d_k)
    else:
        raise ValueError(f"kind must be one of {POSITION_KINDS}")
    return q @ k.T  # (T, T)


@dataclass(frozen=True)
class ByDistance:
    """A score grid's diagonals: for each distance δ = m − n, the mean, lowest and highest score along it."""

    distances: Tensor  # (2T − 1,) from −(T − 1) to T − 1
    mean: Tensor  # (2T − 1,)
    low: Tensor  # (2T − 1,)
    high: Tensor  # (2T − 1,)

    @property
    def spread(self) -> float:
        """max over δ of (highest − lowest): 0 (rounding) when the score depends on the distance only."""
        return float((self.high - self.low).max())


def by_distance(scores: Tensor) -> ByDistance:
    """mean, min and max of S[m, n] over the pairs with m − n = δ, for every δ; scores (T, T)."""
    t = scores.shape[0]
    distances = torch.arange(-(t - 1), t)
    diagonals = [scores.diagonal(offset=-int(delta)) for delta in distances]  # offset −δ holds S[n + δ, n]
    stats = [torch.stack([d.mean(), d.min(), d.max()]) for d in diagonals]
    mean, low, high = torch.stack(stats).T  # (2T − 1,) each
    return ByDistance(distances, mean, low, high)


def rotation_similarity(d: int, distances: Tensor, base: float = 10000.0) -> Tensor:
    """cos(q, R_δ q) averaged over random q = (2/d) Σ_i cos(δ θ_i), θ_i = base^(-2i/d), for each distance δ:
    how much a vector still points its own way after RoPE turns it by δ positions; it falls off with δ."""
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    return torch.cos(distances.to(torch.float64)[:, None] * theta).mean(dim=-1)  # (len(distances),)


@dataclass(frozen=True)
class PairRotation:
    """One 2-D pair of features (2i, 2i+1) of a vector, as RoPE turns it at positions 0, 1, 2 ..."""

    pair: int  # i
    theta: float  # θ_i = base^(-2i/d), radians per position
    points: Tensor  # (positions, 2): the pair at position m, turned by m·θ_i


def pair_rotation(vector: Tensor, pair: int, positions: int, base: float = 10000.0) -> PairRotation:
    """(x_2i cos mθ_i − x_2i+1 sin mθ_i, x_2i sin mθ_i + x_2i+1 cos mθ_i) for m = 0 .. positions − 1: pair i of
    ``rope(vector, m)``; vector (d,), d even."""
    d = vector.shape[-1]
    if not 0 <= pair < d // 2:
        raise ValueError(f"a vector of {d} features has pairs 0 to {d // 2 - 1}, not {pair}")
    rotated = rope(vector.expand(positions, -1), torch.arange(positions), base)  # (positions, d)
    return PairRotation(pair, base ** (-2 * pair / d), rotated[:, 2 * pair : 2 * pair + 2])


def pca_2d(points: Tensor) -> tuple[Tensor, Tensor]:
    """Y = (X − mean X) V₂, V₂ the two leading right singular vectors of the centred X: the 2-D projection that keeps
    the most variance, and the share of the variance each axis keeps. points (N, D) -> ((N, 2), (2,)). Each axis's
    sign is fixed (its largest loading positive) so that the same points always give the same picture."""
    centred = points.double() - points.double().mean(dim=0)  # (N, D)
    _, singular, vh = torch.linalg.svd(centred, full_matrices=False)  # vh (min(N, D), D)
    axes = vh[:2]  # (2, D)
    signs = torch.sign(axes.gather(1, axes.abs().argmax(dim=1, keepdim=True)))  # (2, 1)
    axes = axes * signs
    variance = singular**2
    explained = variance[:2] / variance.sum().clamp_min(1e-30)  # (2,)
    projected = centred @ axes.T  # (N, 2)
    if projected.shape[1] < 2:  # one feature: a second axis of zeros
        projected = torch.cat([projected, torch.zeros_like(projected)], dim=1)
        explained = torch.cat([explained, torch.zeros(1, dtype=explained.dtype)])
    return projected, explained


def normalise_queries_keys(q: Tensor, k: Tensor) -> tuple[Tensor, Tensor, float]:
    """AttentionViz's normalisation: K' = K − mean(K) + mean(Q), then c·Q and K'/c with
    c = sqrt(mean‖K'‖ / mean‖Q‖), so that both have the same mean norm. q (Tq, d), k (Tk, d) -> (Tq, d), (Tk, d), c.

    Neither step changes a weight: the translation adds q·(mean Q − mean K) to every score of q's row, which softmax
    ignores, and (c q)·(k'/c) = q·k'."""
    translated = k - k.mean(dim=0) + q.mean(dim=0)  # (Tk, d)
    c = float((translated.norm(dim=-1).mean() / q.norm(dim=-1).mean().clamp_min(1e-30)).sqrt())
    return q * c, translated / c, c


@dataclass(frozen=True)
class QueryKeyMap:
    """A head's queries and keys in one 2-D map, with each query's strongest keys."""

    q: Tensor  # (T, d) normalised queries
    k: Tensor  # (T, d) normalised keys
    c: float  # the queries' scale (the keys' is 1/c)
    points: Tensor  # (2T, 2): the queries, then the keys
    explained: Tensor  # (2,) share of the variance of [Q; K] each axis keeps
    weights: Tensor  # (T, T) the head's attention weights
    strongest: Tensor  # (T, top) each query's strongest keys, strongest first
    nearest: Tensor  # (T,) each query's nearest key in the map

    @property
    def agreement(self) -> float:
        """The share of queries whose nearest key in the map is their strongest key."""
        return float((self.nearest == self.strongest[:, 0]).double().mean())


def query_key_map(q: Tensor, k: Tensor, weights: Tensor, top: int = 2) -> QueryKeyMap:
    """points = PCA₂([c Q; (K − mean K + mean Q)/c]) (see ``normalise_queries_keys``); strongest = the ``top``
    largest weights of each row; nearest = argmin_j ‖point(q_i) − point(k_j)‖. q, k (T, d); weights (T, T)."""
    t = q.shape[0]
    q_normal, k_normal, c = normalise_queries_keys(q, k)
    points, explained = pca_2d(torch.cat([q_normal, k_normal]))  # (2T, 2)
    strongest = weights.topk(min(top, t), dim=-1).indices  # (T, top)
    nearest = torch.cdist(points[:t], points[t:]).argmin(dim=-1)  # (T,)
    return QueryKeyMap(q_normal, k_normal, c, points, explained, weights, strongest, nearest)


def weights_from(q: Tensor, k: Tensor, scale: float | None = None) -> Tensor:
    """softmax(Q Kᵀ · scale) (T, T), scale 1/√d_k by default: attention weights recomputed from any Q, K."""
    scale = default_scale(q.shape[-1]) if scale is None else scale
    return masked_softmax(q @ k.T * scale)  # (T, T)


def head_queries_keys(run: RealRun, layer: int, head: int, b: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    """Q_h, K_h (T, d) and A_h = softmax(Q_h K_hᵀ / √d) (T, T) of head h of a layer of a MiniLM forward pass, on
    sentence b's real tokens (no padding)."""
    t = len(run.encoded.tokens[b])
    steps = run.attention[layer]  # q, k (B, H, T_max, d); weights (B, H, T_max, T_max)
    return steps.q[b, head, :t], steps.k[b, head, :t], steps.weights[b, head, :t, :t]


@dataclass(frozen=True)
class WordPaths:
    """One word's vector in several sentences at every stage of the model, in one 2-D map."""

    word: str
    sentences: list[str]  # those that contain the word
    stages: list[str]  # "lookup", "embedding layer", "layer 0" ...
    points: Tensor  # (sentences, stages, 2)
    explained: Tensor  # (2,) share of the variance each axis keeps


def word_paths(model: MiniLM, sentences: list[str], word: str) -> WordPaths:
    """PCA₂ over every (sentence, stage) vector of ``word``: the embedding table's row, then each layer's output (a
    word of several pieces is the mean of their vectors). Raises ValueError when fewer than two sentences have it."""
    run = model.run_texts(sentences)
    found = [b for b in range(len(sentences)) if run.encoded.positions_of(b, word)]
    if len(found) < 2:
        raise ValueError(f"“{word}” must appear in at least two of the sentences to compare; it is in {len(found)}.")
    stages = (run.word_vectors, *run.hidden_states)  # each (B, T, C)
    vectors = torch.stack(
        [torch.stack([stage[b, run.encoded.positions_of(b, word)].mean(dim=0) for stage in stages]) for b in found]
    )  # (sentences, stages, C)
    n, s, c = vectors.shape
    points, explained = pca_2d(vectors.reshape(n * s, c))  # (n·s, 2)
    names = ["lookup", "embedding layer", *(f"layer {i}" for i in range(model.config.n_layers))]
    return WordPaths(word, [sentences[b] for b in found], names, points.reshape(n, s, 2), explained)
