"""Temperature inside a trained model: what dividing some heads' scores by τ does to their weights and, downstream,
to the sentence embeddings the model exists to make.

A head's weights at temperature τ are softmax(Q Kᵀ / (√d · τ)): τ = 1 as trained, τ = 1/√d drops the 1/√d factor,
τ > 1 flattens the rows towards uniform, τ < 1 sharpens them towards one key. The embeddings are measured on sentences
in pairs that say the same thing (paraphrases) and sentences about something else: a good embedding keeps each
sentence's nearest other sentence its pair, and pairs closer than the rest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from attn_core.attention import entropy
from attn_core.real_model.bert import MiniLM, RealRun, Temperature, sentence_embeddings

SCOPES = ("all", "layer", "head")  # which heads a temperature changes: every head, the open layer's, the open head
SWEEP_TAUS = tuple(10 ** (step / 8) for step in range(-8, 9))  # τ from 0.1 to 10, 8 steps a decade, 1 among them


def heads_in(scope: str, layer: int, head: int, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """The (layer, head) pairs a ``scope`` of SCOPES names, given the open ``layer`` and ``head``."""
    if scope == "all":
        return [(i, h) for i in range(n_layers) for h in range(n_heads)]
    if scope == "layer":
        return [(layer, h) for h in range(n_heads)]
    if scope == "head":
        return [(layer, head)]
    raise ValueError(f"scope must be one of {', '.join(SCOPES)}")


def temperature_of(heads: Sequence[tuple[int, int]], tau: float) -> Temperature:
    """τ for the named heads, 1 for the others, as MiniLM.run takes it."""
    return dict.fromkeys(heads, tau)


def mean_entropy(run: RealRun, heads: Sequence[tuple[int, int]]) -> float:
    """The mean entropy, in nats, of the named heads' attention rows, over every real query of the run."""
    real = run.encoded.mask  # (B, T)
    rows = [entropy(run.attention[layer].weights[:, head])[real] for layer, head in heads]  # (real queries,) each
    return float(torch.cat(rows).mean())


@dataclass(frozen=True)
class EmbeddingQuality:
    """How well the sentence embeddings of a run tell paraphrases from the rest, and how spread its changed heads are."""

    tau: float
    nearest_is_pair: float  # share of the paired sentences whose most similar other sentence is their pair
    pair_cosine: float  # mean cosine similarity of the paraphrase pairs
    other_cosine: float  # mean cosine similarity of every other two sentences
    entropy: float  # mean entropy of the changed heads' rows, nats


def embedding_quality(embeddings: Tensor, n_pairs: int) -> tuple[float, float, float]:
    """(nearest_is_pair, pair_cosine, other_cosine) of (N, C) normalised ``embeddings`` whose first 2·n_pairs rows are
    the pairs, each next to its pair (0 with 1, 2 with 3, ...), and the rest other sentences."""
    cosine = embeddings @ embeddings.T  # (N, N)
    n = cosine.shape[0]
    pair_of = torch.arange(2 * n_pairs) ^ 1  # 0 ↔ 1, 2 ↔ 3, ...
    others = cosine - 2 * torch.eye(n)  # a sentence is not its own nearest
    nearest = others[: 2 * n_pairs].argmax(dim=-1)  # (2·n_pairs,)
    is_pair = torch.zeros(n, n, dtype=torch.bool)
    is_pair[torch.arange(2 * n_pairs), pair_of] = True
    upper = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)
    return (
        float((nearest == pair_of).float().mean()),
        float(cosine[is_pair & upper].mean()),
        float(cosine[~is_pair & upper].mean()),
    )


def measure(
    model: MiniLM, pairs: Sequence[tuple[str, str]], others: Sequence[str], heads: Sequence[tuple[int, int]], tau: float
) -> EmbeddingQuality:
    """The embeddings' quality and the heads' entropy with the named heads at temperature ``tau``."""
    texts = [sentence for pair in pairs for sentence in pair] + list(others)
    run = model.run_texts(texts, temperature=temperature_of(heads, tau))
    return EmbeddingQuality(tau, *embedding_quality(sentence_embeddings(run), len(pairs)), mean_entropy(run, heads))


def sweep_taus(head_size: int) -> tuple[float, ...]:
    """SWEEP_TAUS (1, as trained, among them) with 1 / √d (no 1/√d factor) in place of the one nearest it, in order."""
    unscaled = 1 / math.sqrt(head_size)
    nearest = min((tau for tau in SWEEP_TAUS if tau != 1.0), key=lambda tau: abs(math.log(tau / unscaled)))
    return tuple(sorted({*SWEEP_TAUS, unscaled} - {nearest}))
