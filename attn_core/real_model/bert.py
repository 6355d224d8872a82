"""all-MiniLM-L6-v2, a 6-layer BERT encoder, run with attn_core's own attention.

The weights are read with ``safetensors`` and the text is split into word pieces with
``tokenizers``; the forward pass is written out here, step by step, as in BERT:

    X = LayerNorm(word + position + token type embeddings)
    for each layer:   Q, K, V = X W + b, split into heads            # (B, H, T, d)
                      A = attend(Q, K, V, padding mask)              # softmax(Q K^T / (sqrt(d) · τ)) V, τ = 1
                      X = LayerNorm(X + concat(A) W_O + b_O)
                      X = LayerNorm(X + GELU(X W_1 + b_1) W_2 + b_2)
    embedding = normalise(mean of the last X over the real tokens)   # the sentence's, as all-MiniLM-L6-v2 defines it

What the model was trained with can be changed, to see what it does: a temperature τ per head (τ = 1/√d drops the
1/√d factor; τ > 1 flattens the weights), no padding mask (every token attends to a batch's [PAD] keys too), a causal
mask this bidirectional encoder never saw, and a special token's key ([CLS] or [SEP]) hidden from chosen heads.

The model object is shared by every user of a server: nothing here changes it after loading.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from tokenizers import Tokenizer
from torch import Tensor

from attn_core.attention import AttentionSteps, attend
from attn_core.multihead import merge_heads, split_heads
from attn_core.real_model.files import WEIGHTS_FILE, check_weights, model_dir

MAX_TOKENS = 128  # word pieces per sentence, [CLS] and [SEP] included
N_LAYERS, N_HEADS, WIDTH = 6, 12, 384  # the model's shape, for controls drawn before it is loaded (config.json has the same)
SPECIAL_TOKENS = ("[CLS]", "[SEP]")
# A temperature for every head, or one for some heads by (layer, head), the others keeping τ = 1.
Temperature = float | Mapping[tuple[int, int], float]


@dataclass(frozen=True)
class BertConfig:
    n_layers: int
    n_heads: int
    width: int  # C, the hidden size
    layer_norm_eps: float

    @property
    def head_size(self) -> int:
        return self.width // self.n_heads


@dataclass(frozen=True)
class Encoded:
    """A batch of sentences as the model's word pieces, padded to the longest one."""

    texts: list[str]
    tokens: list[list[str]]  # B lists of word pieces, [CLS] and [SEP] included, no padding
    ids: Tensor  # (B, T) int64; 0 ([PAD]) after a sentence's end
    mask: Tensor  # (B, T) bool, True for real tokens
    words: list[list[int | None]]  # per piece, the index of the word it comes from (None for [CLS], [SEP])
    offsets: list[list[tuple[int, int]]]  # per piece, its (start, end) characters in the text
    full_lengths: list[int]  # pieces before cutting to the limit

    def was_cut(self, b: int) -> bool:
        return self.full_lengths[b] > len(self.tokens[b])

    def positions_of(self, b: int, word: str) -> list[int]:
        """Positions of the pieces of the first word of sentence b that reads ``word`` (case-insensitive)."""
        pieces: dict[int, list[int]] = {}
        for position, word_index in enumerate(self.words[b]):
            if word_index is not None:
                pieces.setdefault(word_index, []).append(position)
        for positions in pieces.values():
            start, end = self.offsets[b][positions[0]][0], self.offsets[b][positions[-1]][1]
            if self.texts[b][start:end].casefold() == word.strip().casefold():
                return positions
        return []


@dataclass(frozen=True)
class RealRun:
    """Every intermediate result of one forward pass."""

    encoded: Encoded
    word_vectors: Tensor  # (B, T, C) rows of the word embedding table: one vector per word piece, whatever its context
    hidden_states: tuple[Tensor, ...]  # L + 1 tensors (B, T, C): the embedding layer's output, then each layer's
    attention: tuple[AttentionSteps, ...]  # one per layer; q, k, v, context (B, H, T, d), scores, weights (B, H, T, T)

    def weights(self, b: int) -> Tensor:
        """(L, H, T, T) attention weights of sentence b, its real tokens only."""
        t = len(self.encoded.tokens[b])
        return torch.stack([steps.weights[b, :, :t, :t] for steps in self.attention])


class MiniLM:
    """The loaded model: configuration, read-only weights and tokenizer."""

    def __init__(self, folder: Path, config: BertConfig, weights: Mapping[str, Tensor], tokenizer: Tokenizer):
        self.folder = folder
        self.config = config
        self.weights = MappingProxyType(dict(weights))
        self.tokenizer = tokenizer

    @classmethod
    def load(cls, folder: Path | None = None) -> MiniLM:
        """Load from ``folder`` or the first available source (see files.model_dir), checking the weights' SHA-256.

        Raises ModelUnavailableError or ModelIntegrityError with a message for people.
        """
        folder = model_dir() if folder is None else Path(folder)
        check_weights(folder / WEIGHTS_FILE)
        raw = json.loads((folder / "config.json").read_text())
        config = BertConfig(raw["num_hidden_layers"], raw["num_attention_heads"], raw["hidden_size"], raw["layer_norm_eps"])
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.no_padding()  # padding and cutting are done in encode(), so the shared tokenizer never changes
        tokenizer.no_truncation()
        return cls(folder, config, load_file(folder / WEIGHTS_FILE), tokenizer)

    def encode(self, texts: Sequence[str], max_tokens: int = MAX_TOKENS) -> Encoded:
        """Word pieces of each text between [CLS] and [SEP], cut to ``max_tokens`` pieces (>= 2)."""
        tokens, ids, words, offsets, full_lengths = [], [], [], [], []
        for encoding in self.tokenizer.encode_batch(list(texts)):
            n = len(encoding.ids)
            keep = range(n) if n <= max_tokens else [*range(max_tokens - 1), n - 1]  # a cut keeps the final [SEP]
            tokens.append([encoding.tokens[i] for i in keep])
            ids.append([encoding.ids[i] for i in keep])
            words.append([encoding.word_ids[i] for i in keep])
            offsets.append([encoding.offsets[i] for i in keep])
            full_lengths.append(n)
        t = max(len(row) for row in ids)
        id_tensor = torch.tensor([row + [0] * (t - len(row)) for row in ids], dtype=torch.long)  # (B, T)
        mask = torch.tensor([[True] * len(row) + [False] * (t - len(row)) for row in ids])  # (B, T)
        return Encoded(list(texts), tokens, id_tensor, mask, words, offsets, full_lengths)

    def _linear(self, x: Tensor, name: str) -> Tensor:
        return F.linear(x, self.weights[name + ".weight"], self.weights[name + ".bias"])  # x W^T + b

    def _layer_norm(self, x: Tensor, name: str) -> Tensor:
        w = self.weights
        return F.layer_norm(x, (self.config.width,), w[name + ".weight"], w[name + ".bias"], self.config.layer_norm_eps)

    def _layer(self, x: Tensor, mask: Tensor | None, scale: float | Tensor, i: int) -> tuple[Tensor, AttentionSteps]:
        prefix = f"encoder.layer.{i}."
        q, k, v = (  # (B, H, T, d) each
            split_heads(self._linear(x, prefix + "attention.self." + name), self.config.n_heads)
            for name in ("query", "key", "value")
        )
        steps = attend(q, k, v, mask=mask, scale=scale)  # every tensor (B, H, T, ·)
        concat = merge_heads(steps.context)  # (B, T, C): the heads side by side
        x = self._layer_norm(x + self._linear(concat, prefix + "attention.output.dense"), prefix + "attention.output.LayerNorm")
        hidden = F.gelu(self._linear(x, prefix + "intermediate.dense"))  # (B, T, 4C), exact (erf) GELU
        x = self._layer_norm(x + self._linear(hidden, prefix + "output.dense"), prefix + "output.LayerNorm")
        return x, steps

    def scales(self, temperature: Temperature, layer: int) -> float | Tensor:
        """The factor a ``layer``'s scores are multiplied by, 1 / (√d_head · τ): one number where every head has the
        same τ, else one a head, (H, 1, 1)."""
        base = self.config.head_size**-0.5
        if not isinstance(temperature, Mapping):
            return base / temperature
        per_head = [temperature.get((layer, head), 1.0) for head in range(self.config.n_heads)]
        return base / torch.tensor(per_head, dtype=torch.float32)[:, None, None]  # (H, 1, 1)

    def masks(
        self, encoded: Encoded, padding_mask: bool, causal: bool, hide_token: str, hide_in: Collection[tuple[int, int]]
    ) -> list[Tensor | None]:
        """Each layer's boolean mask, True where a query may attend to a key, broadcastable to (B, H, T, T); None where
        every query sees every key."""
        b, t = encoded.ids.shape
        mask = encoded.mask[:, None, None, :] if padding_mask else torch.ones(b, 1, 1, t, dtype=torch.bool)  # (B, 1, 1, T)
        if causal:
            mask = mask & torch.ones(t, t, dtype=torch.bool).tril()  # (B, 1, T, T): query i sees keys j <= i
        hidden_keys = encoded.ids == self.tokenizer.token_to_id(hide_token)  # (B, T)
        layers: list[Tensor | None] = []
        for layer in range(self.config.n_layers):
            heads = [head for head in range(self.config.n_heads) if (layer, head) in hide_in]
            if heads:
                hidden = torch.zeros(self.config.n_heads, dtype=torch.bool)
                hidden[heads] = True
                layers.append(mask & ~(hidden[None, :, None, None] & hidden_keys[:, None, None, :]))  # (B, H, ·, T)
            else:
                layers.append(None if not padding_mask and not causal else mask)
        return layers

    def run(
        self,
        encoded: Encoded,
        *,
        temperature: Temperature = 1.0,
        padding_mask: bool = True,
        causal: bool = False,
        hide_token: str = "[SEP]",
        hide_in: Collection[tuple[int, int]] = (),
    ) -> RealRun:
        """The forward pass, keeping every layer's hidden states and every head's attention steps. As trained by
        default; ``temperature``: τ for every head, or for the (layer, head) pairs named; ``padding_mask=False``: every
        token attends to the batch's [PAD] keys too; ``causal``: query i sees keys j <= i only; ``hide_in``: the
        (layer, head) pairs in which no query sees the key of ``hide_token`` ([SEP] or [CLS])."""
        w = self.weights
        masks = self.masks(encoded, padding_mask, causal, hide_token, set(hide_in))
        with torch.inference_mode():
            t = encoded.ids.shape[1]
            word_vectors = F.embedding(encoded.ids, w["embeddings.word_embeddings.weight"])  # (B, T, C)
            position = w["embeddings.position_embeddings.weight"][:t]  # (T, C)
            token_type = w["embeddings.token_type_embeddings.weight"][0]  # (C,): every token is in segment 0
            x = self._layer_norm(word_vectors + position + token_type, "embeddings.LayerNorm")  # (B, T, C)
            hidden_states, attention = [x], []
            for i in range(self.config.n_layers):
                x, steps = self._layer(x, masks[i], self.scales(temperature, i), i)
                hidden_states.append(x)
                attention.append(steps)
        return RealRun(encoded, word_vectors, tuple(hidden_states), tuple(attention))

    def run_texts(self, texts: Sequence[str], max_tokens: int = MAX_TOKENS, **changes) -> RealRun:
        """``run`` on ``texts`` encoded; ``changes``: run's keywords (temperature, padding_mask, causal, hide_token, hide_in)."""
        return self.run(self.encode(texts, max_tokens), **changes)

    def embed(self, texts: Sequence[str], max_tokens: int = MAX_TOKENS, **changes) -> Tensor:
        """(B, C) sentence embeddings as all-MiniLM-L6-v2 defines them: the last layer's vectors averaged over each
        sentence's real tokens ([CLS] and [SEP] included, [PAD] not), then L2-normalised; ``changes`` as in run_texts."""
        return sentence_embeddings(self.run_texts(texts, max_tokens, **changes))

    def head_projections(self, layer: int, head: int) -> tuple[Tensor, ...]:
        """W_Q, W_K, W_V (C, d) and b_Q, b_K, b_V (d,) of one head, for ``X @ W + b``."""
        rows = slice(head * self.config.head_size, (head + 1) * self.config.head_size)
        names = [f"encoder.layer.{layer}.attention.self.{name}" for name in ("query", "key", "value")]
        matrices = tuple(self.weights[name + ".weight"][rows].T for name in names)  # (C, d) each
        biases = tuple(self.weights[name + ".bias"][rows] for name in names)  # (d,) each
        return matrices + biases


def sentence_embeddings(run: RealRun) -> Tensor:
    """(B, C): each sentence's mean last-layer vector over its real tokens, L2-normalised (MiniLM.embed)."""
    real = run.encoded.mask[:, :, None].to(run.hidden_states[-1].dtype)  # (B, T, 1)
    mean = (run.hidden_states[-1] * real).sum(dim=1) / real.sum(dim=1)  # (B, C)
    return F.normalize(mean, dim=-1)
