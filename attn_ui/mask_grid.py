"""A mask the user edits: a grid of checkboxes, one row per query, one column per key, kept in the URL.

The grid's value lives in session state under ``GRID`` as text (``attn_ui.url_state.mask_to_text``), which is
also the view's ``grid`` URL parameter. The editor shows the grid it started from (``BASE``) plus the
edits made since, which the browser keeps sending; the grid is that sum. A reset button, another sentence
length or other labels start a new editor from the grid as it is.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
import torch
from torch import Tensor

from attn_core import causal_mask
from attn_ui.url_state import mask_from_text, mask_to_text

GRID = "grid"  # session-state key and URL parameter
BASE = "grid_base"  # session-state key: the grid the editor started from, and its labels
STARTS = {  # name: (button label, the (T, T) mask it starts from)
    "causal": ("Causal", causal_mask),
    "all": ("Allow all", lambda t: torch.ones(t, t, dtype=torch.bool)),
    "none": ("Block all", lambda t: torch.zeros(t, t, dtype=torch.bool)),
}


def current_mask(t: int) -> Tensor:
    """The (T, T) grid in session state, or the causal mask (with a notice) when it does not fit T tokens."""
    text = st.session_state.get(GRID, "")
    mask = mask_from_text(text) if text else None
    if mask is None or mask.shape[0] != t:
        if mask is not None:
            st.info(
                f"The mask grid was {mask.shape[0]} × {mask.shape[0]}; the sentences have {t} positions, "
                "so it starts again from causal."
            )
        mask = causal_mask(t)
        st.session_state[GRID] = mask_to_text(mask)
    return mask  # (T, T)


def editor_key(base: str, labels: list[str]) -> str:
    """The grid editor's widget key: one editor per starting grid and labels. Its edits accumulate relative to
    the grid it started from, so it must live on while the user edits; a new one starts from a new base."""
    return f"grid_editor_{base}_{'|'.join(labels)}"


def _start_from(start: str, t: int) -> None:
    st.session_state[GRID] = mask_to_text(STARTS[start][1](t))
    st.session_state.pop(BASE, None)


def mask_grid(labels: list[str]) -> Tensor:
    """Draw the grid (ticked = the query may attend to the key) with ``labels`` (distinct) on its rows and
    columns, and buttons that reset it; return it as a (T, T) boolean mask, edits included."""
    t = len(labels)
    current = mask_to_text(current_mask(t))
    if st.session_state.get(BASE, {}).get("labels") != labels:  # first drawn, reset, or the sentences changed
        st.session_state[BASE] = {"grid": current, "labels": labels}
    base = st.session_state[BASE]["grid"]
    with st.container(horizontal=True):
        for start, (label, _) in STARTS.items():
            st.button(label, key=f"grid_start_{start}", on_click=_start_from, args=(start, t))
    frame = pd.DataFrame(mask_from_text(base).numpy(), index=labels, columns=labels)
    edited = st.data_editor(frame, key=editor_key(base, labels), width="content")
    mask = torch.tensor(edited.to_numpy(dtype=bool))  # (T, T)
    st.session_state[GRID] = mask_to_text(mask)
    return mask
