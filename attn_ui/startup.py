"""The server's start: the views' libraries imported while the first visitor's browser loads the app.

``streamlit run streamlit_app.py`` finds the ``st.App`` there and serves it; its lifespan starts here. Streamlit runs no
page before a browser connects, and a page's first run would otherwise begin by importing torch, pandas and Altair
(seconds on a small machine) while the visitor waits. Imported in a thread from the server's start instead, they load
while the browser fetches and starts Streamlit's own scripts; a first run that begins meanwhile waits for the modules
it needs (Python's import locks) rather than importing them again. docs/performance.md has the figures.
"""

from __future__ import annotations

import gc
import importlib
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

# The home page's imports, which bring in every library the views use (attn_ui.page imports the engine and the charts).
# A run that needs one of these modules while this thread imports it waits for it (Python's import lock per module).
PRELOADED = ("attn_ui.lessons", "attn_ui.page")


def preload() -> None:
    """Import the views' libraries with the garbage collector off, and freeze what they made (as
    page.freeze_loaded_modules does for the modules a run loads): importing them makes 260,000 objects, over which the
    collector would run its passes again and again as they pile up, a sixth of the import's time, and a full pass
    over all of them once after it (docs/performance.md)."""
    gc.disable()
    try:
        for name in PRELOADED:
            importlib.import_module(name)
    finally:
        gc.freeze()
        gc.enable()


@asynccontextmanager
async def lifespan(_app) -> AsyncIterator[None]:
    threading.Thread(target=preload, name="preload", daemon=True).start()
    yield
