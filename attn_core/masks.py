"""Every attention mask of attn_core, in one place.

A boolean mask is True where a query may attend to a key (PyTorch's convention, that of
``scaled_dot_product_attention``) and broadcasts over leading (batch, head) dimensions. Attention applies it by
setting the hidden scores to -inf before softmax (``attn_core.attention.attend``); a row with nothing visible
gets weights 0 (``masked_softmax``). The additive form of a mask holds 0 where it is True and -inf elsewhere.
"""

from __future__ import annotations

import torch
from torch import Tensor

Device = torch.device | str | None


def causal_mask(t: int, device: Device = None) -> Tensor:
    """M[i, j] = (j <= i): the (t, t) look-ahead mask; each token sees itself and the tokens before it."""
    return torch.ones(t, t, dtype=torch.bool, device=device).tril()


def hidden_keys(queries: range, keys: range, window: int | None = None, device: Device = None) -> Tensor:
    """H[i, j] = (j > i) or (j <= i - window): True where the causal mask (``window`` None) or the sliding window of
    ``window`` keys hides key j from query i; (len(queries), len(keys)), for any block of the (T, T) grid."""
    query = torch.arange(queries.start, queries.stop, device=device).unsqueeze(1)  # (n, 1)
    key = torch.arange(keys.start, keys.stop, device=device)  # (bk,)
    hidden = key > query  # (n, bk)
    if window is not None:
        hidden |= key <= query - window
    return hidden


def window_mask(t: int, window: int, t_k: int | None = None, device: Device = None) -> Tensor:
    """M[i, j] = (i - window < j <= i): the (t, t_k) sliding-window (local) mask; query i sees its last ``window``
    keys up to itself (``t_k`` defaults to t). ``window`` >= t is the causal mask."""
    if window < 1:
        raise ValueError("the window must be at least 1 key")
    return ~hidden_keys(range(t), range(t if t_k is None else t_k), window, device)  # (t, t_k)


def padding_mask(lengths: list[int] | Tensor, t: int, device: Device = None) -> Tensor:
    """M[b, 0, j] = (j < lengths[b]): the (B, 1, t) key-padding mask; every query sees the real keys only."""
    lengths = torch.as_tensor(lengths, device=device).reshape(-1, 1)  # (B, 1)
    positions = torch.arange(t, device=lengths.device)  # (t,)
    return (positions < lengths).unsqueeze(1)  # (B, 1, t)


def query_key_padding_mask(lengths: list[int], t: int) -> Tensor:
    """M[b, i, j] = (i < lengths[b]) and (j < lengths[b]): (B, t, t), True where both the query and the key are real
    tokens; a [PAD] query sees nothing."""
    real = padding_mask(lengths, t)  # (B, 1, t): real keys
    return real & real.transpose(-2, -1)  # (B, t, t)


def document_mask(lengths: list[int], t: int) -> Tensor:
    """M[i, j] = (doc(i) = doc(j)) and (j <= i): (t, t), several documents packed into one row of ``t`` tokens, each
    seeing only itself, causally.

    Document d holds ``lengths[d]`` consecutive tokens; tokens after the last document (padding) see nothing.
    Packing saves the padding of a batch; the mask keeps the documents from reading each other.
    """
    if min(lengths, default=1) < 1 or sum(lengths) > t:
        raise ValueError(f"document lengths must be at least 1 and add up to at most {t}, not {lengths}")
    document = torch.repeat_interleave(torch.arange(len(lengths) + 1), torch.tensor([*lengths, t - sum(lengths)]))  # (t,)
    same = document[:, None] == document[None, :]  # (t, t)
    real = document < len(lengths)  # (t,): not the padding after the documents
    return same & real[:, None] & causal_mask(t)  # (t, t)


def prefix_lm_mask(prefix: int, t: int) -> Tensor:
    """M[i, j] = (j <= i) or (i < prefix and j < prefix): (t, t), the first ``prefix`` tokens (a prompt, an image's
    patches) see each other both ways; the rest see everything before them, causally (a prefix language model, as
    in T5's and PaliGemma's decoders)."""
    if not 0 <= prefix <= t:
        raise ValueError(f"the prefix must be between 0 and {t} tokens, not {prefix}")
    in_prefix = torch.arange(t) < prefix  # (t,)
    return causal_mask(t) | (in_prefix[:, None] & in_prefix[None, :])  # (t, t)


def global_local_mask(t: int, window: int, n_global: int) -> Tensor:
    """M[i, j] = (i - window < j <= i) or i < n_global or j < n_global: (t, t), a causal sliding window of ``window``
    keys, plus ``n_global`` first tokens that every token sees and that see every token (Longformer's and BigBird's
    global tokens; StreamingLLM's attention sinks are the causal half of this)."""
    if not 0 <= n_global <= t:
        raise ValueError(f"the global tokens must be between 0 and {t}, not {n_global}")
    is_global = torch.arange(t) < n_global  # (t,)
    return window_mask(t, window) | is_global[None, :] | is_global[:, None]  # (t, t)


def additive_mask(mask: Tensor) -> Tensor:
    """A[i, j] = 0 where M[i, j], -inf elsewhere: the additive form of a boolean mask, added to the scores."""
    return torch.zeros(mask.shape, device=mask.device).masked_fill(~mask, float("-inf"))
