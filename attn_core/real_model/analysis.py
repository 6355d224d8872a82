"""What the Real model view reads out of a forward pass: head summaries, coreference, word vectors across contexts."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import torch
import torch.nn.functional as F
from torch import Tensor

from attn_core.attention import entropy
from attn_core.heads import pattern_similarity
from attn_core.real_model.bert import SPECIAL_TOKENS, Encoded, MiniLM, RealRun

BARELY_MOVES = 0.05  # a change of attention weight smaller than this is "barely moves"


def visible_positions(tokens: list[str], hide_special: bool) -> list[int]:
    """Positions to draw: all, or all but [CLS] and [SEP]."""
    return [i for i, token in enumerate(tokens) if not (hide_special and token in SPECIAL_TOKENS)]


def renormalised(weights: Tensor, shown: list[int]) -> Tensor:
    """(..., S, S): the weights of the ``shown`` queries over the ``shown`` keys, each row divided by its sum over
    them, as exBERT draws a head with [CLS] and [SEP] hidden. A display choice: the model's rows sum to 1 over every
    key, the hidden ones included. A row with no weight on the shown keys stays 0."""
    kept = weights[..., shown, :][..., shown]  # (..., S, S)
    return kept / kept.sum(dim=-1, keepdim=True).clamp(min=torch.finfo(kept.dtype).tiny)


def head_entropy(run: RealRun, b: int = 0) -> Tensor:
    """(L, H) mean entropy, in nats, of each head's attention rows over sentence b's real tokens."""
    return entropy(run.weights(b)).mean(dim=-1)


def head_similarity(run: RealRun, layer: int, head: int, b: int = 0) -> Tensor:
    """(L, H) cosine similarity between one head's weights matrix and every head's (1 for the head itself)."""
    weights = run.weights(b)  # (L, H, T, T)
    n_layers, n_heads = weights.shape[:2]
    every_pair = pattern_similarity(weights.flatten(end_dim=1))  # (L*H, L*H)
    return every_pair[layer * n_heads + head].reshape(n_layers, n_heads)


def previous_token_share(run: RealRun, layer: int, head: int, b: int = 0) -> float:
    """The mean weight one head gives each token's predecessor (from the second token on): near 1 for a
    "previous-token" head, whose weights form a clean line just below the diagonal."""
    weights = run.weights(b)[layer, head]  # (T, T)
    return float(weights.diagonal(offset=-1).mean())


SINKS = ("[CLS]", "[SEP]", "punctuation")  # the keys where BERT's heads park attention (Clark et al., 2019)


def sink_keys(encoded: Encoded) -> dict[str, Tensor]:
    """For each kind of SINKS, which keys of the batch are of that kind: (B, T) bool each; [PAD] keys are of none."""

    def kind_of(token: str) -> str | None:
        if token in SPECIAL_TOKENS:
            return token
        return "punctuation" if all(unicodedata.category(c).startswith("P") for c in token) else None

    b, t = encoded.ids.shape
    keys = {kind: torch.zeros(b, t, dtype=torch.bool) for kind in SINKS}
    for row, tokens in enumerate(encoded.tokens):
        for position, token in enumerate(tokens):
            if (kind := kind_of(token)) is not None:
                keys[kind][row, position] = True
    return keys


def sink_shares(run: RealRun) -> dict[str, Tensor]:
    """For each kind of SINKS, the share of each head's attention that lands on keys of that kind: its weight on them
    summed over the keys, averaged over every real query of every sentence of the run. (L, H) each."""
    weights = torch.stack([steps.weights for steps in run.attention])  # (L, B, H, T, T)
    real = run.encoded.mask.to(weights.dtype)  # (B, T): the queries averaged over
    shares = {}
    for kind, keys in sink_keys(run.encoded).items():
        on_kind = (weights * keys[None, :, None, None, :]).sum(dim=-1)  # (L, B, H, T): each query's weight on them
        shares[kind] = (on_kind * real[None, :, None, :]).sum(dim=(1, 3)) / real.sum()  # (L, H)
    return shares


def closest_heads(similarity: Tensor, layer: int, head: int, n: int = 3) -> list[tuple[int, int]]:
    """(layer, head) of the n heads most similar to the given one (itself left out), from head_similarity."""
    order = similarity.flatten().argsort(descending=True).tolist()
    n_heads = similarity.shape[1]
    return [divmod(i, n_heads) for i in order if i != layer * n_heads + head][:n]


def _positions(encoded: Encoded, b: int, word: str) -> list[int]:
    positions = encoded.positions_of(b, word)
    if not positions:
        raise ValueError(f"“{word}” is not a word of sentence {b + 1} (“{_excerpt(encoded.texts[b])}”).")
    return positions


def _excerpt(text: str, limit: int = 80) -> str:
    """The text, or where it is longer than ``limit``, its start up to a whole word followed by "…": ``limit``
    characters at most (a first word longer than that is cut)."""
    if len(text) <= limit:
        return text
    space = text.rfind(" ", 0, limit)  # the last one that leaves room for "…", even right after a whole word
    return (text[:space].rstrip() if space > 0 else text[: limit - 1]) + "…"


@dataclass(frozen=True)
class Coreference:
    """How much a pronoun attends to each of two candidate words, in two sentences, for every head."""

    texts: tuple[str, str]
    pronoun: str
    candidates: tuple[str, str]
    attention: Tensor  # (2, L, H, 2): sentence, layer, head, candidate -> weight from the pronoun to the candidate

    @property
    def preference(self) -> Tensor:
        """(2, L, H) attention to the first candidate minus attention to the second, per sentence."""
        return self.attention[..., 0] - self.attention[..., 1]

    @property
    def change(self) -> Tensor:
        """(L, H) how much the preference moves from the first sentence to the second."""
        return self.preference[1] - self.preference[0]

    @property
    def average_change(self) -> float:
        """The change of the preference averaged over every head of every layer."""
        return float(self.change.mean())

    @property
    def barely_moves(self) -> bool:
        return abs(self.average_change) < BARELY_MOVES

    def summary(self) -> str:
        """What the average head does, in one sentence (plain text)."""
        (a1, b1), (a2, b2) = self.attention.mean(dim=(1, 2)).tolist()  # (sentence, candidate), averaged over heads
        (first, second), n_heads = self.candidates, self.change.numel()
        return (
            f"Averaged over all {n_heads} heads, “{self.pronoun}” gives {a1:.3f} of its attention to “{first}” and "
            f"{b1:.3f} to “{second}” in sentence 1, and {a2:.3f} and {b2:.3f} in sentence 2: the preference for "
            f"“{first}” over “{second}” {'barely moves' if self.barely_moves else 'moves'} ({self.average_change:+.3f})."
        )

    def top_heads(self, n: int = 5) -> list[tuple[int, int]]:
        """(layer, head) of the n heads whose preference changes most, largest first."""
        order = self.change.abs().flatten().argsort(descending=True)[:n]
        n_heads = self.change.shape[1]
        return [divmod(int(i), n_heads) for i in order]

    def head_rows(self) -> list[tuple[int, int, float, float, float, float, float]]:
        """Every head, most changed first: (layer, head, its attention to each candidate in sentence 1, then in
        sentence 2, the change of its preference)."""
        rows = []
        for i, j in self.top_heads(self.change.numel()):
            (a1, b1), (a2, b2) = self.attention[:, i, j].tolist()  # (sentence, candidate)
            rows.append((i, j, a1, b1, a2, b2, float(self.change[i, j])))
        return rows


def coreference(model: MiniLM, texts: Sequence[str], pronoun: str, candidates: Sequence[str]) -> Coreference:
    """Attention from ``pronoun`` to each candidate (summed over its word pieces; a pronoun of several
    pieces is the mean of their rows) in two sentences. Raises ValueError naming a missing word."""
    run = model.run_texts(texts)
    per_sentence = []
    for b in range(2):
        rows = _positions(run.encoded, b, pronoun)
        weights = run.weights(b)[:, :, rows].mean(dim=2)  # (L, H, T): the pronoun's attention
        targets = [weights[..., _positions(run.encoded, b, word)].sum(dim=-1) for word in candidates]  # 2 x (L, H)
        per_sentence.append(torch.stack(targets, dim=-1))  # (L, H, 2)
    return Coreference(tuple(texts), pronoun, tuple(candidates), torch.stack(per_sentence))


@dataclass(frozen=True)
class WordAcrossContexts:
    """One word's vectors in several sentences, compared at every stage of the model."""

    word: str
    sentences: list[str]  # the sentences that contain the word
    stages: list[str]  # "lookup", "embedding layer", "layer 0", ...
    pairs: list[tuple[int, int]]  # indices into sentences
    similarity: Tensor  # (pairs, stages) cosine similarity of the word's vectors
    missing: list[str]  # the sentences without the word


def word_across_contexts(model: MiniLM, sentences: Sequence[str], word: str) -> WordAcrossContexts:
    """Cosine similarity of ``word``'s vectors between every two sentences, from the embedding table's
    row (the same in every sentence, like word2vec) through every layer. A word of several pieces is
    the mean of their vectors. Raises ValueError when fewer than two sentences contain the word."""
    if len(sentences) < 2:
        raise ValueError("Write at least two sentences to compare, one per line.")
    run = model.run_texts(sentences)
    found = [b for b in range(len(sentences)) if run.encoded.positions_of(b, word)]
    if len(found) < 2:
        raise ValueError(f"“{word}” must appear in at least two of the sentences to compare; it is in {len(found)}.")
    vectors = torch.stack(
        [
            torch.stack([stage[b, run.encoded.positions_of(b, word)].mean(dim=0) for b in found])  # (sentences, C)
            for stage in (run.word_vectors, *run.hidden_states)  # each (B, T, C)
        ]
    )  # (stages, sentences, C)
    pairs = list(combinations(range(len(found)), 2))
    similarity = torch.stack([F.cosine_similarity(vectors[:, i], vectors[:, j], dim=-1) for i, j in pairs])  # (pairs, stages)
    stages = ["lookup", "embedding layer", *(f"layer {i}" for i in range(model.config.n_layers))]
    missing = [text for b, text in enumerate(sentences) if b not in found]
    return WordAcrossContexts(word, [sentences[b] for b in found], stages, pairs, similarity, missing)
