"""A mask the user edits: a grid of checkboxes, one row per query, one column per key."""

from __future__ import annotations

import pandas as pd
import streamlit as st
import torch
from torch import Tensor

from attn_core import causal_mask

STARTS = {"causal": "Causal", "all": "Everything allowed", "none": "Everything blocked"}


def grid_key(start: str) -> str:
    """The data editor's widget key for a grid started from ``start`` (a key of STARTS)."""
    return f"grid_{start}"


def mask_grid(labels: list[str]) -> Tensor:
    """Draw the grid (ticked = the query may attend to the key) and return it as a (T, T) boolean mask.

    ``labels`` name the T positions and must be distinct. Choosing another start resets the grid.
    """
    t = len(labels)
    start = st.radio("Start the grid from", list(STARTS), format_func=STARTS.get, horizontal=True, key="grid_start")
    initial = {
        "causal": causal_mask(t),
        "all": torch.ones(t, t, dtype=torch.bool),
        "none": torch.zeros(t, t, dtype=torch.bool),
    }[start]
    frame = pd.DataFrame(initial.numpy(), index=labels, columns=labels)
    edited = st.data_editor(frame, key=grid_key(start), width="content")
    return torch.tensor(edited.to_numpy(dtype=bool))  # (T, T)
