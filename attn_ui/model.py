"""The real model (all-MiniLM-L6-v2), loaded once per server process and shared by every session.

Nothing a session does changes it: the engine only reads its weights and runs under
``torch.inference_mode()``.
"""

from __future__ import annotations

import streamlit as st

from attn_core import MiniLM, ModelIntegrityError, ModelUnavailableError
from attn_core.real_model import MODEL_NAME


@st.cache_resource(show_spinner=f"Loading {MODEL_NAME}…")
def _load() -> MiniLM | str:
    """The model, or the reason it could not be loaded. The reason is cached too: a failed hub
    download takes about 20 s of retries, which must not repeat on every rerun."""
    try:
        return MiniLM.load()
    except (ModelUnavailableError, ModelIntegrityError) as problem:
        return str(problem)


def load_model() -> MiniLM | None:
    """The shared model, or None after telling the user why it is missing and how to install it."""
    loaded = _load()
    if isinstance(loaded, MiniLM):
        return loaded
    st.error(loaded)
    if st.button("Try loading the model again"):
        _load.clear()
        st.rerun()
    return None
