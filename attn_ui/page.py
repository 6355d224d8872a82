"""Page set-up shared by every view: title, layout and the sidebar's map of views."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

import streamlit as st


@dataclass(frozen=True)
class View:
    path: str  # relative to streamlit_app.py
    label: str
    icon: str
    summary: str

    @property
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
VIEWS = (
    View(
        "pages/1_Pipeline.py",
        "Pipeline",
        ":material/account_tree:",
        "Step by step from words to context vectors: X, W_Q, W_K, W_V, Q, K, V, scores, softmax, weights @ V.",
    ),
    View(
        "pages/2_Scaling.py",
        "Scaling",
        ":material/thermostat:",
        "Why divide by √d_k: softmax temperature, the variance of q·k against d_k, and how large scores saturate softmax.",
    ),
    View(
        "pages/3_Masking.py",
        "Masking",
        ":material/visibility_off:",
        "Causal, padding and custom masks: what each query may see, padded batches, fully blocked rows, −∞ vs −1e9.",
    ),
    MULTI_HEAD,
    COST,
    REAL_MODEL,
)


def setup(view: View) -> None:
    """Call first on every page: page config and the sidebar navigation."""
    st.set_page_config(page_title=f"{view.label} · Attention Explorer", page_icon=view.icon, layout="wide")
    with st.sidebar:
        st.markdown("**Attention Explorer**")
        for item in (HOME, *VIEWS):
            st.page_link(item.path, label=item.label, icon=item.icon)
        st.divider()
