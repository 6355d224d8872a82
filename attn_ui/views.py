"""The app's views: each one's page file, label, icon and one-line summary, in the sidebar's order."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True)
class View:
    path: str  # relative to streamlit_app.py
    label: str
    icon: str
    summary: str

    @functools.cached_property
    def url_path(self) -> str:
        """The page's address under the server, as Streamlit derives it: pages/1_Pipeline.py → /Pipeline."""
        return re.sub(r"^\d+_", "", PurePosixPath(self.path).stem)


HOME = View("streamlit_app.py", "Home", ":material/home:", "What this app is for.")
REAL_MODEL = View(
    "pages/6_Real_model.py",
    "Real model",
    ":material/psychology:",
    "A trained transformer (all-MiniLM-L6-v2) run by the same attention: every head of every layer, "
    "what “it” refers to, and how a word's vector changes with its context.",
)
MULTI_HEAD = View(
    "pages/4_Multi_head.py",
    "Multi-head",
    ":material/view_column:",
    "h heads side by side: each its own W_Q, W_K, W_V of size C × C/h, their patterns, how alike they are, "
    "and the concatenation and output projection W_O.",
)
COST = View(
    "pages/5_Cost.py",
    "Cost",
    ":material/speed:",
    "Time and memory against sequence length, measured live: naive attention, PyTorch's SDPA, and tiled "
    "attention with online softmax (the FlashAttention idea).",
)
TRAINING = View(
    "pages/7_Training.py",
    "Training",
    ":material/model_training:",
    "One head learns a task while you watch: its pattern step by step, its loss and weights, and what dividing by "
    "√d_k changes, measured on the same seed and batches.",
)
DECODING = View(
    "pages/9_Decoding.py",
    "Decoding",
    ":material/edit_note:",
    "What attention costs when a model writes: the KV cache, and MHA against GQA, MQA and MLA, in real models' bytes.",
)
POSITIONS = View(
    "pages/8_Positions.py",
    "Positions & geometry",
    ":material/scatter_plot:",
    "What attention cannot see without positions (shuffle the words), sinusoidal positions against RoPE, and one "
    "head's queries and keys as points of one map.",
)
PIPELINE = View(
    "pages/1_Pipeline.py",
    "Pipeline",
    ":material/account_tree:",
    "Step by step from words to context vectors: X, W_Q, W_K, W_V, Q, K, V, scores, softmax, weights @ V.",
)
SCALING = View(
    "pages/2_Scaling.py",
    "Scaling",
    ":material/thermostat:",
    "Why divide by √d_k: softmax temperature, the variance of q·k against d_k, and how large scores saturate softmax.",
)
MASKING = View(
    "pages/3_Masking.py",
    "Masking",
    ":material/visibility_off:",
    "Causal, padding and custom masks: what each query may see, padded batches, fully blocked rows, −∞ vs −1e9.",
)
VIEWS = (PIPELINE, SCALING, MASKING, MULTI_HEAD, COST, DECODING, REAL_MODEL, TRAINING, POSITIONS)  # the sidebar's order
