"""A mask the user edits: a grid of checkboxes, one row per query, one column per key, kept in the URL.

The grid's value lives in session state under ``GRID`` as text (``attn_core.mask_to_text``), which is
also the view's ``grid`` URL parameter. The editor is keyed by the text it starts from: once its edits
are written to that text, the next run shows a fresh editor of the edited grid.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
import torch
from torch import Tensor

from attn_core import causal_mask, mask_from_text, mask_to_text

GRID = "grid"  # session-state key and URL parameter
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


def editor_key(grid: str) -> str:
    """The grid editor's widget key while it shows ``grid`` (text as ``mask_to_text`` writes it): a new editor
    for every new grid, so that edits already applied are not applied again."""
    return f"grid_editor_{grid}"


def _start_from(start: str, t: int) -> None:
    st.session_state[GRID] = mask_to_text(STARTS[start][1](t))


def mask_grid(labels: list[str]) -> Tensor:
    """Draw the grid (ticked = the query may attend to the key) with ``labels`` (distinct) on its rows and
    columns, and buttons that reset it; return it as a (T, T) boolean mask, edits included."""
    t = len(labels)
    mask = current_mask(t)
    with st.container(horizontal=True):
        for start, (label, _) in STARTS.items():
            st.button(label, key=f"grid_start_{start}", on_click=_start_from, args=(start, t))
    frame = pd.DataFrame(mask.numpy(), index=labels, columns=labels)
    edited = st.data_editor(frame, key=editor_key(st.session_state[GRID]), width="content")
    mask = torch.tensor(edited.to_numpy(dtype=bool))  # (T, T)
    st.session_state[GRID] = mask_to_text(mask)
    return mask
