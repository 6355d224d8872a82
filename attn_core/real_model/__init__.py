"""A real pretrained transformer, all-MiniLM-L6-v2, run by attn_core's own attention."""

from attn_core.real_model.analysis import (
    BARELY_MOVES,
    Coreference,
    WordAcrossContexts,
    closest_heads,
    coreference,
    head_entropy,
    head_similarity,
    previous_token_share,
    visible_positions,
    word_across_contexts,
)
from attn_core.real_model.bert import MAX_TOKENS, N_HEADS, N_LAYERS, SPECIAL_TOKENS, WIDTH, BertConfig, Encoded, MiniLM, RealRun
from attn_core.real_model.files import INSTALL_HELP, MODEL_NAME, ModelIntegrityError, ModelUnavailableError

__all__ = [
    "BARELY_MOVES",
    "INSTALL_HELP",
    "MAX_TOKENS",
    "MODEL_NAME",
    "N_HEADS",
    "N_LAYERS",
    "SPECIAL_TOKENS",
    "WIDTH",
    "BertConfig",
    "Coreference",
    "Encoded",
    "MiniLM",
    "ModelIntegrityError",
    "ModelUnavailableError",
    "RealRun",
    "WordAcrossContexts",
    "closest_heads",
    "coreference",
    "head_entropy",
    "head_similarity",
    "previous_token_share",
    "visible_positions",
    "word_across_contexts",
]
