"""attn_core: the Attention Explorer engine (torch only, CPU or CUDA; never imports streamlit)."""

from attn_core.attention import (
    AttentionSteps,
    attend,
    causal_mask,
    cross_attention,
    default_scale,
    entropy,
    masked_softmax,
    padding_mask,
    sdpa_difference,
    self_attention,
)
from attn_core.device import available_devices, resolve_device
from attn_core.real_model import (
    Coreference,
    MiniLM,
    ModelIntegrityError,
    ModelUnavailableError,
    RealRun,
    WordAcrossContexts,
    closest_heads,
    coreference,
    head_entropy,
    head_similarity,
    visible_positions,
    word_across_contexts,
)
from attn_core.text import tokenize
from attn_core.toy import embed_tokens, positional_encoding, projection, qkv_projections
from attn_core.walkthrough import FIXED_SIZES, PRESETS, Walkthrough, build_real_walkthrough, build_walkthrough

__all__ = [
    "FIXED_SIZES",
    "PRESETS",
    "AttentionSteps",
    "Coreference",
    "MiniLM",
    "ModelIntegrityError",
    "ModelUnavailableError",
    "RealRun",
    "Walkthrough",
    "WordAcrossContexts",
    "closest_heads",
    "attend",
    "available_devices",
    "build_real_walkthrough",
    "build_walkthrough",
    "causal_mask",
    "coreference",
    "cross_attention",
    "default_scale",
    "embed_tokens",
    "entropy",
    "head_entropy",
    "head_similarity",
    "masked_softmax",
    "padding_mask",
    "positional_encoding",
    "projection",
    "qkv_projections",
    "resolve_device",
    "sdpa_difference",
    "self_attention",
    "tokenize",
    "visible_positions",
    "word_across_contexts",
]
