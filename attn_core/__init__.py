"""attn_core: the Attention Explorer engine (torch only, CPU or CUDA; never imports streamlit).

The names below are the engine's API: attention and its masks, the online-softmax and tiled kernels, multi-head
attention, positions, the toy weights, the step-by-step walk and the real model. What a single view computes lives in
that view's module (attn_core.masking, attn_core.scaling, attn_core.geometry, attn_core.sweep, ...), imported from there.
"""

from attn_core.accounting import attention_flops
from attn_core.attention import (
    AttentionSteps,
    attend,
    cross_attention,
    default_scale,
    entropy,
    masked_softmax,
    naive_attention,
    sdpa_difference,
    self_attention,
)
from attn_core.device import available_devices, resolve_device
from attn_core.heads import head_metrics, pattern_similarity
from attn_core.mask_mods import attend_mod
from attn_core.masks import (
    Mask,
    additive_mask,
    causal_mask,
    document_mask,
    global_local_mask,
    padding_mask,
    prefix_lm_mask,
    query_key_padding_mask,
    window_mask,
)
from attn_core.multihead import MultiHeadSteps, check_head_count, multi_head_attention, multi_head_projections
from attn_core.online_softmax import blockwise_attention
from attn_core.positions import rope, sinusoidal
from attn_core.real_model import MiniLM, ModelIntegrityError, ModelUnavailableError
from attn_core.text import tokenize
from attn_core.tiled import TileStats, tile_classes, tiled_attention
from attn_core.toy import embed_tokens, projection, qkv_projections
from attn_core.walkthrough import Walkthrough, build_walkthrough

__all__ = [
    "AttentionSteps",
    "Mask",
    "MiniLM",
    "ModelIntegrityError",
    "ModelUnavailableError",
    "MultiHeadSteps",
    "TileStats",
    "additive_mask",
    "Walkthrough",
    "attend",
    "attend_mod",
    "attention_flops",
    "available_devices",
    "blockwise_attention",
    "build_walkthrough",
    "causal_mask",
    "check_head_count",
    "cross_attention",
    "default_scale",
    "document_mask",
    "embed_tokens",
    "entropy",
    "global_local_mask",
    "head_metrics",
    "masked_softmax",
    "multi_head_attention",
    "multi_head_projections",
    "naive_attention",
    "padding_mask",
    "pattern_similarity",
    "prefix_lm_mask",
    "projection",
    "qkv_projections",
    "query_key_padding_mask",
    "resolve_device",
    "rope",
    "sdpa_difference",
    "self_attention",
    "sinusoidal",
    "tile_classes",
    "tiled_attention",
    "tokenize",
    "window_mask",
]
