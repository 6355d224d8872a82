"""Attention when a model writes: one token at a time, each new query against the keys and values of every token so
far, which a KV cache keeps so that they are not computed again.

    prefill:        the prompt's P tokens attend causally at once; their keys and values fill the cache
    decode step t:  k_t, v_t appended to the cache; q_t · K[:t+1]ᵀ → softmax → · V[:t+1]     # one query row: row t of
                                                                                              # the causal mask
The cache, not the T × T matrix, is what fills a GPU's memory at long context. Its layouts (per layer and token):

    MHA  H query heads, H K/V heads              2 · H · d values
    GQA  H query heads share G K/V heads          2 · G · d          (Llama 3, Mistral)
    MQA  one K/V head for all                     2 · d
    MLA  a latent c = x W_DKV of width r, and a   r + d_R            (DeepSeek-V2: keys and values are decompressed
         shared key part of width d_R                                 from c, or W_UK, W_UV absorbed into q and out)

``generate`` runs one attention layer of each layout on seeded toy weights and checks every output against causal
attention recomputed over the whole sequence by ``scaled_dot_product_attention``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from attn_core.masks import causal_mask, sink_window_mask, window_mask
from attn_core.multihead import merge_heads, split_heads

KINDS = ("mha", "gqa", "mqa", "mla")
ROWS_AT_ONCE = 512  # query rows attended at once by the prefill and the check (by_rows)


@dataclass(frozen=True)
class ModelShape:
    """What a model's KV cache holds per token: ``layers`` × (``kv_heads`` × (``head_dim`` keys + ``v_head_dim``
    values)), or with MLA ``layers`` × (``latent`` + ``rope_dim``), each value ``bytes_per_value`` bytes."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    v_head_dim: int | None = None  # None: head_dim
    latent: int | None = None  # MLA: the compressed K/V width cached instead of the heads
    rope_dim: int = 0  # MLA: the decoupled (RoPE) key width cached beside the latent
    bytes_per_value: int = 2  # bf16 / fp16


def kv_cache_bytes(shape: ModelShape, tokens: int) -> int:
    """Bytes a KV cache of ``shape`` holds for ``tokens`` tokens (one sequence)."""
    if shape.latent is not None:
        per_layer = shape.latent + shape.rope_dim
    else:
        per_layer = shape.kv_heads * (shape.head_dim + (shape.v_head_dim or shape.head_dim))
    return shape.layers * per_layer * shape.bytes_per_value * tokens


@dataclass(frozen=True)
class Model:
    """A real model's attention shape, its parameter count, the context it was trained to read (tokens) and where the
    numbers come from."""

    name: str
    shape: ModelShape
    parameters: float
    context: int
    source: str


# The KV caches of real models (bf16). DeepSeek-V2's "uncompressed" is the same attention with its 128 heads' keys
# (128 + 64 wide) and values (128) cached per head, as MHA would: what MLA saves.
MODELS = {
    "gpt2": Model(
        "GPT-2 small",
        ModelShape(12, 12, 12, 64),
        124e6,
        1024,
        "Radford et al. (2019), config.json of openai-community/gpt2 (n_positions 1,024)",
    ),
    "llama3-8b": Model(
        "Llama 3 8B",
        ModelShape(32, 32, 8, 128),
        8.03e9,
        8192,
        "Meta Llama 3 8B config.json: 32 layers, 8 KV heads, 8,192 positions (Llama 3.1 8B: the same shape, 128k)",
    ),
    "mistral-7b": Model("Mistral 7B", ModelShape(32, 32, 8, 128), 7.24e9, 8192, "Jiang et al. (2023), Mistral 7B, Table 1"),
    "llama3-70b": Model(
        "Llama 3 70B", ModelShape(80, 64, 8, 128), 70.6e9, 8192, "Meta Llama 3 70B config.json: 80 layers, 8 KV heads"
    ),
    "deepseek-v2": Model(
        "DeepSeek-V2 (MLA)",
        ModelShape(60, 128, 128, 192, v_head_dim=128, latent=512, rope_dim=64),
        236e9,
        131_072,
        "DeepSeek-AI (2024), DeepSeek-V2, §2.1: d_c = 512, d_h^R = 64, 60 layers, 128 heads; a 128K context",
    ),
    "deepseek-v2-mha": Model(
        "DeepSeek-V2 uncompressed",
        ModelShape(60, 128, 128, 192, v_head_dim=128),
        236e9,
        131_072,
        "the same heads cached per head: 128 × (192 + 128) values a layer",
    ),
}


@dataclass(frozen=True)
class DecodeRun:
    """One attention layer writing ``new_tokens`` tokens after a prompt."""

    kind: str
    shape: ModelShape  # this layer's cache (layers = 1), as kv_cache_bytes takes it
    outputs: Tensor  # (T, C): every position's attention output, prompt and new tokens
    cache_bytes: list[int]  # after the prefill and after each decoding step, from the cache's own tensors
    step_seconds: list[float]  # each decoding step
    max_error: float  # largest |output - recomputed causal attention over the whole sequence|


@dataclass(frozen=True)
class Layer:
    """One attention layer's toy weights. MHA, GQA, MQA: W_Q (C, H·d), W_K and W_V (C, G·d), W_O (H·d, C). MLA:
    W_Q (C, H·(d + d_R)), W_DKV (C, r), W_UK and W_UV (r, H·d), W_KR (C, d_R), W_O (H·d, C)."""

    kind: str
    heads: int
    kv_heads: int
    head_dim: int
    weights: dict[str, Tensor]
    latent: int | None = None
    rope_dim: int = 0

    @property
    def scale(self) -> float:
        return 1 / math.sqrt(self.head_dim + self.rope_dim)


def make_layer(kind: str, d_model: int, heads: int, kv_heads: int | None, latent: int | None, seed: int, dtype, device) -> Layer:
    """Seeded weights of one attention layer of ``kind`` (GQA's kv_heads default to heads / 4, MLA's latent to d_model
    / 4 with a shared key part of head_dim / 2). On ``device`` "meta" the weights are shapes only, drawn from nothing."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    if d_model % heads:
        raise ValueError(f"{heads} heads do not divide d_model = {d_model}")
    d = d_model // heads
    groups = {"mha": heads, "gqa": kv_heads or max(1, heads // 4), "mqa": 1, "mla": heads}[kind]
    if heads % groups:
        raise ValueError(f"{groups} K/V heads do not divide {heads} heads")
    generator = torch.Generator().manual_seed(seed)

    def weight(rows: int, cols: int) -> Tensor:
        if torch.device(device).type == "meta":
            return torch.empty(rows, cols, dtype=dtype, device="meta")
        return (torch.randn(rows, cols, generator=generator) / math.sqrt(rows)).to(dtype=dtype, device=device)

    if kind != "mla":
        names = {"W_Q": heads * d, "W_K": groups * d, "W_V": groups * d}
        weights = {name: weight(d_model, cols) for name, cols in names.items()} | {"W_O": weight(heads * d, d_model)}
        return Layer(kind, heads, groups, d, weights)
    latent = latent or d_model // 4
    rope_dim = max(1, d // 2)
    weights = {
        "W_Q": weight(d_model, heads * (d + rope_dim)),
        "W_DKV": weight(d_model, latent),
        "W_UK": weight(latent, heads * d),
        "W_UV": weight(latent, heads * d),
        "W_KR": weight(d_model, rope_dim),
        "W_O": weight(heads * d, d_model),
    }
    return Layer(kind, heads, groups, d, weights, latent, rope_dim)


def cache_shape(layer: Layer, bytes_per_value: int) -> ModelShape:
    latent = layer.latent if layer.kind == "mla" else None
    return ModelShape(1, layer.heads, layer.kv_heads, layer.head_dim, None, latent, layer.rope_dim, bytes_per_value)


def cached(layer: Layer, x: Tensor) -> tuple[Tensor, ...]:
    """What the cache keeps of tokens ``x`` (n, C): K and V (G, n, d) each, or MLA's latent (n, r) and key part (n, d_R)."""
    w = layer.weights
    if layer.kind == "mla":
        return x @ w["W_DKV"], x @ w["W_KR"]  # (n, r), (n, d_R)
    return split_heads(x @ w["W_K"], layer.kv_heads), split_heads(x @ w["W_V"], layer.kv_heads)  # (G, n, d) each


def queries(layer: Layer, x: Tensor) -> Tensor:
    """(H, n, d) queries of tokens ``x`` (n, C); MLA's are (H, n, d + d_R): the part against the decompressed keys,
    then the part against the shared key."""
    return split_heads(x @ layer.weights["W_Q"], layer.heads)


def decompressed(layer: Layer, latent: Tensor, key_part: Tensor) -> tuple[Tensor, Tensor]:
    """MLA's keys (H, n, d + d_R) and values (H, n, d) from the cached latent (n, r) and shared key part (n, d_R)."""
    n, h = latent.shape[0], layer.heads
    k = split_heads(latent @ layer.weights["W_UK"], h)  # (H, n, d)
    v = split_heads(latent @ layer.weights["W_UV"], h)  # (H, n, d)
    return torch.cat([k, key_part.expand(h, n, -1)], dim=-1), v


def attend_cache(layer: Layer, q: Tensor, cache: tuple[Tensor, ...], mask: Tensor | None, absorbed: bool = False) -> Tensor:
    """softmax(q Kᵀ · scale, hidden keys -inf) V over the cache, for queries ``q`` (H, n, ·) and ``mask`` (n, t) of the
    keys in the cache (None: every key in it, as for a decoding step); the heads' outputs (n, C) through W_O."""
    if layer.kind != "mla":
        context = grouped_attention(q, *cache, mask, layer.scale)  # (H, n, d)
    elif not absorbed:
        k, v = decompressed(layer, *cache)
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=layer.scale)  # (H, n, d)
    else:
        context = absorbed_attention(layer, q, *cache, mask)
    return merge_heads(context) @ layer.weights["W_O"]  # (n, C)


def grouped_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float) -> Tensor:
    """(H, n, d): the H query heads (H, n, d) in G groups, each group's H/G heads against its one K/V head (G, t, d):
    head h reads K/V head kv_head_read(h, H, G) = h // (H/G), as ``enable_gqa`` does. The group's queries are stacked
    as rows of one attention call, so each K/V head is read once for its whole group, not copied H/G times; ``mask``
    (n, t) repeats per row."""
    h, n, d = q.shape
    g = k.shape[0]
    stacked = q.reshape(g, h // g * n, d)  # (G, H/G · n, d): the group's heads one under another
    rows = None if mask is None else mask.repeat(h // g, 1)  # (H/G · n, t)
    context = F.scaled_dot_product_attention(stacked, k, v, attn_mask=rows, scale=scale)
    return context.reshape(h, n, -1)  # (H, n, d)


def absorbed_attention(layer: Layer, q: Tensor, latent: Tensor, key_part: Tensor, mask: Tensor | None) -> Tensor:
    """MLA with W_UK absorbed into the query and W_UV applied after the weighted sum: the scores
    q_h · (c W_UK,h)ᵀ = (q_h W_UK,hᵀ) · cᵀ and the context Σ w (c W_UV,h) = (Σ w c) W_UV,h, so attention runs over the
    latent itself and no head's keys or values are ever made. (H, n, d)."""
    h, d, r = layer.heads, layer.head_dim, layer.latent
    q_heads, q_shared = q[..., :d], q[..., d:]  # (H, n, d), (H, n, d_R)
    w_uk = layer.weights["W_UK"].view(r, h, d).permute(1, 2, 0)  # (H, d, r)
    scores = (q_heads @ w_uk) @ latent.T + q_shared @ key_part.T  # (H, n, t)
    scaled = scores * layer.scale if mask is None else (scores * layer.scale).masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scaled, dim=-1)  # (H, n, t)
    w_uv = layer.weights["W_UV"].view(r, h, d).transpose(0, 1)  # (H, r, d)
    return (weights @ latent) @ w_uv  # (H, n, r) @ (H, r, d) -> (H, n, d)


def visible(t: int, window: int | None, sinks: int) -> Tensor:
    """The (t, t) mask decoding follows: causal, or a causal window of ``window`` keys with ``sinks`` first tokens."""
    if window is None:
        return causal_mask(t)
    return sink_window_mask(t, window, sinks) if sinks else window_mask(t, window)


def kept_positions(t: int, window: int | None, sinks: int) -> list[int]:
    """The positions a cache keeps once t tokens are in: all, or the first ``sinks`` and the last ``window``."""
    if window is None or t <= sinks + window:
        return list(range(t))
    return [*range(sinks), *range(t - window, t)]


def slot(position: int, window: int | None, sinks: int) -> int:
    """Where a cache of ``window`` keys after ``sinks`` sink tokens keeps ``position``: a ring, each token in the slot
    of the one that has just left the window. Attention does not depend on the order of its keys (this layer has no
    positions), so a ring needs no moving."""
    if window is None or position < sinks + window:
        return position
    return sinks + (position - sinks) % window


def generate(
    kind: str,
    *,
    d_model: int = 512,
    heads: int = 8,
    kv_heads: int | None = None,
    latent: int | None = None,
    prompt: int = 128,
    new_tokens: int = 128,
    window: int | None = None,
    sinks: int = 0,
    cache: bool = True,
    absorbed: bool = False,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device: str = "cpu",
) -> DecodeRun:
    """Prefill ``prompt`` seeded toy tokens, then decode ``new_tokens`` more one at a time through one attention layer
    of ``kind``. ``cache=False`` computes every earlier token's keys and values again at each step (what the cache
    saves); ``window`` keeps only the last ``window`` tokens in the cache (a ring: its bytes stop growing), and
    ``sinks`` the first ``sinks`` as well (StreamingLLM); ``absorbed``: MLA's up-projections absorbed into the query
    and the output. Every output is compared with causal attention over the whole sequence."""
    layer = make_layer(kind, d_model, heads, kv_heads, latent, seed, dtype, device)
    total = prompt + new_tokens
    x = torch.randn(total, d_model, generator=torch.Generator().manual_seed(seed + 1)).to(dtype=dtype, device=device)  # (T, C)
    mask = visible(total, window, sinks).to(device)  # (T, T)
    capacity = total if window is None else min(total, sinks + window)
    with torch.inference_mode():
        entries = cached(layer, x[:prompt])
        q = queries(layer, x[:prompt])  # (H, P, ·)
        seen = mask[:prompt, :prompt]  # (P, P)
        outputs = [by_rows(lambda rows: attend_cache(layer, q[:, rows], entries, seen[rows], absorbed), prompt)]
        # The cache: buffers of its capacity, filled in place; after the prefill, the prompt's tokens it keeps.
        buffers = tuple(torch.empty(*part.shape[:-2], capacity, part.shape[-1], dtype=dtype, device=device) for part in entries)
        kept = kept_positions(prompt, window, sinks)
        slots = [slot(position, window, sinks) for position in kept]
        for buffer, part in zip(buffers, entries, strict=True):
            buffer[..., slots, :] = part[..., kept, :]
        filled = len(kept)
        cache_bytes, step_seconds = [sum(buffer[..., :filled, :].nbytes for buffer in buffers)], []
        for t in range(prompt, total):
            start = time.perf_counter()
            if cache:  # the new token's keys and values into its slot; the cache then holds the keys row t sees
                for buffer, part in zip(buffers, cached(layer, x[t : t + 1]), strict=True):
                    buffer[..., slot(t, window, sinks), :] = part[..., 0, :]
                filled = min(t + 1, capacity)
                store = tuple(buffer[..., :filled, :] for buffer in buffers)
            else:  # every earlier token's keys and values computed again, those row t sees kept
                store = tuple(part[..., kept_positions(t + 1, window, sinks), :] for part in cached(layer, x[: t + 1]))
            outputs.append(attend_cache(layer, queries(layer, x[t : t + 1]), store, None, absorbed))
            if device != "cpu":
                torch.cuda.synchronize()
            step_seconds.append(time.perf_counter() - start)
            cache_bytes.append(sum(part.nbytes for part in store))
        produced = torch.cat(outputs)  # (T, C)
        expected = full_recompute(layer, x, mask)
    shape = cache_shape(layer, torch.tensor([], dtype=dtype).element_size())
    return DecodeRun(kind, shape, produced, cache_bytes, step_seconds, float((produced - expected).abs().max()))


def full_recompute(layer: Layer, x: Tensor, mask: Tensor) -> Tensor:
    """(T, C): every position's output from attention over the whole sequence at once under ``mask`` (T, T), by
    ``scaled_dot_product_attention`` (with ``enable_gqa`` for GQA and MQA; MLA's keys and values decompressed)."""
    q = queries(layer, x)  # (H, T, ·)
    if layer.kind == "mla":
        k, v = decompressed(layer, *cached(layer, x))
    else:
        k, v = cached(layer, x)
    options = {"scale": layer.scale, "enable_gqa": layer.kind != "mla"}
    context = by_rows(lambda rows: F.scaled_dot_product_attention(q[:, rows], k, v, attn_mask=mask[rows], **options), x.shape[0])
    return merge_heads(context) @ layer.weights["W_O"]  # (T, C)


def by_rows(attend: Callable[[slice], Tensor], n: int) -> Tensor:
    """``attend(rows)`` for each block of ROWS_AT_ONCE of the ``n`` query rows, joined along the rows (dim -2 of
    (H, rows, d), dim 0 of (rows, C)): each row's softmax is its own, so attention by blocks of rows is attention, and
    its scores take (H, ROWS_AT_ONCE, T) at a time, not (H, T, T) (8 × 4,096² floats: 512 MiB, twice)."""
    blocks = [attend(slice(start, start + ROWS_AT_ONCE)) for start in range(0, n, ROWS_AT_ONCE)]
    return torch.cat(blocks, dim=0 if blocks[0].dim() == 2 else -2)


@dataclass(frozen=True)
class Layout:
    """One layout of an attention layer at a width: what it caches per token and what it costs in weights."""

    kind: str
    heads: int
    kv_heads: int  # K/V heads (MLA: none, its latent is cached instead)
    latent: int | None
    cached_values: int  # values cached per token and layer
    parameters: int  # the layer's weights


def layouts(d_model: int, heads: int, kv_heads: int) -> list[Layout]:
    """MHA, GQA with ``kv_heads``, MQA and MLA at the same width, as ``generate`` builds them, counted on the weights'
    shapes: drawing them takes up to a second at the widest C, on every redraw of the table."""
    found = []
    for kind in KINDS:
        layer = make_layer(kind, d_model, heads, kv_heads, None, 0, torch.float32, "meta")
        values = kv_cache_bytes(cache_shape(layer, 1), 1)
        parameters = sum(weight.numel() for weight in layer.weights.values())
        kv = 0 if kind == "mla" else layer.kv_heads
        found.append(Layout(kind, heads, kv, layer.latent, values, parameters))
    return found


def kv_head_read(head: int, heads: int, kv_heads: int) -> int:
    """The K/V head query head ``head`` of ``heads`` reads when they share ``kv_heads``: heads in groups of
    heads / kv_heads, in order, as ``enable_gqa`` and ``grouped_attention`` pair them."""
    return head // (heads // kv_heads)


def cache_outgrows_weights(model: Model, batch: int) -> int:
    """The context, in tokens a sequence, from which a batch of ``batch`` sequences' KV cache (bf16) holds more bytes
    than the model's weights (bf16)."""
    return math.ceil(2 * model.parameters / (kv_cache_bytes(model.shape, 1) * batch))
