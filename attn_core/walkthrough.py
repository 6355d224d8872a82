"""From tokens to context vectors, every step kept: a toy head on a sentence or a worked example, or a real head."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attn_core import examples
from attn_core.attention import AttentionSteps, attend, cross_attention
from attn_core.positions import sinusoidal
from attn_core.real_model.bert import Encoded, MiniLM
from attn_core.text import tokenize
from attn_core.toy import embed_tokens, qkv_projections

# The examples build_walkthrough runs: "custom" is the user's sentence, the others are the sources' worked examples.
PRESETS = ("custom", "playing-outside", "cat-sat", "random-batch")

# Presets that fix the model width C and head size d_k (None: not used).
FIXED_SIZES = {
    "playing-outside": (None, 4),
    "random-batch": (examples.BATCH_D_MODEL, examples.BATCH_D_K),
}


@dataclass(frozen=True)
class Walkthrough:
    """Every matrix of the step-by-step walk, for a batch of B sentences."""

    query_tokens: list[list[str]]  # B lists of Tq tokens
    key_tokens: list[list[str]]  # B lists of Tk tokens (the same lists for self-attention)
    x: Tensor | None  # (B, Tq, C) embeddings; None when the example gives Q, K, V directly
    x_source: Tensor | None  # (B, Tk, C) embeddings of the key/value sentence (cross-attention only)
    w_q: Tensor | None  # (C, d_k)
    w_k: Tensor | None  # (C, d_k)
    w_v: Tensor | None  # (C, d_k)
    steps: AttentionSteps  # every tensor with a leading B
    b_q: Tensor | None = None  # (d_k,) biases, added after the projections (the real model has them)
    b_k: Tensor | None = None  # (d_k,)
    b_v: Tensor | None = None  # (d_k,)


def _embed(sentences: list[list[str]], d_model: int, seed: int, positional: bool, device: torch.device) -> Tensor:
    x = torch.stack([embed_tokens(tokens, d_model, seed, device) for tokens in sentences])  # (B, T, C)
    return x + sinusoidal(x.shape[1], d_model, device) if positional else x


def build_walkthrough(
    preset: str,
    tokens: list[str],
    d_model: int,
    d_k: int,
    seed: int = 0,
    scaled: bool = True,
    positional: bool = False,
    source_tokens: list[str] | None = None,
    device: torch.device | str = "cpu",
) -> Walkthrough:
    """Run one example through attention, keeping every step.

    Args:
        preset: a key of PRESETS; "custom" uses ``tokens``.
        tokens: the user's sentence, tokenized (used by "custom").
        d_model, d_k: model width C and head size (presets in FIXED_SIZES override them).
        seed: seeds the toy embeddings and projections.
        scaled: divide the scores by sqrt(d_k) (else scale 1).
        positional: add sinusoidal position encodings to the embeddings.
        source_tokens: for "custom", a second sentence that supplies the keys
            and values (cross-attention); None or empty for self-attention.
        device: where the tensors live.
    """
    scale = None if scaled else 1.0
    if preset == "playing-outside":
        q, k, v = (
            torch.tensor(rows, device=device).unsqueeze(0)  # (1, 2, 4)
            for rows in (examples.PLAYING_OUTSIDE_Q, examples.PLAYING_OUTSIDE_K, examples.PLAYING_OUTSIDE_V)
        )
        sentences = [list(examples.PLAYING_OUTSIDE_TOKENS)]
        return Walkthrough(sentences, sentences, None, None, None, None, None, attend(q, k, v, scale=scale))

    d_model, d_k = FIXED_SIZES.get(preset, (d_model, d_k))
    if preset == "random-batch":
        sentences = [tokenize(sentence) for sentence in examples.BATCH_SENTENCES]
    elif preset == "cat-sat":
        sentences = [tokenize(examples.CAT_SAT)]
    else:
        sentences = [tokens]
    key_sentences = [source_tokens] if preset == "custom" and source_tokens else sentences

    x = _embed(sentences, d_model, seed, positional, device)  # (B, Tq, C)
    x_source = None if key_sentences is sentences else _embed(key_sentences, d_model, seed, positional, device)
    w_q, w_k, w_v = qkv_projections(d_model, d_k, seed, device)
    steps = cross_attention(x, x if x_source is None else x_source, w_q, w_k, w_v, scale=scale)
    return Walkthrough(sentences, key_sentences, x, x_source, w_q, w_k, w_v, steps)


def build_real_walkthrough(model: MiniLM, encoded: Encoded, layer: int, head: int, scaled: bool = True) -> Walkthrough:
    """One head of the real model, step by step: X is what enters ``layer`` (the hidden states after
    the layer before it, or the embedding layer's output for layer 0), and Q = X W_Q + b_Q, K = X W_K + b_K,
    V = X W_V + b_V with that head's learned weights and biases.

    Args:
        model: the loaded MiniLM.
        encoded: the sentences as the model's word pieces (model.encode).
        layer, head: which head, counted from 0.
        scaled: divide the scores by sqrt(d_k), as the model does (else scale 1).
    """
    run = model.run(encoded)
    x = run.hidden_states[layer]  # (B, T, C)
    w_q, w_k, w_v, b_q, b_k, b_v = model.head_projections(layer, head)  # (C, d_k) and (d_k,)
    with torch.inference_mode():
        q, k, v = x @ w_q + b_q, x @ w_k + b_k, x @ w_v + b_v  # (B, T, d_k)
        steps = attend(q, k, v, mask=encoded.mask[:, None, :], scale=None if scaled else 1.0)  # mask (B, 1, T)
    return Walkthrough(encoded.tokens, encoded.tokens, x, None, w_q, w_k, w_v, steps, b_q, b_k, b_v)
