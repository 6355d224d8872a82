"""The server's start: the views' libraries imported while the first visitor's browser loads the app.

``streamlit run streamlit_app.py`` finds the ``st.App`` there and serves it; its lifespan starts here. Streamlit runs no
page before a browser connects, and a page's first run would otherwise begin by importing torch, pandas and Altair
(2 to 2.5 s on a 2-core machine) while the visitor waits. Imported in a thread from the server's start instead, they
load while the browser fetches and starts the app's own scripts (about a second); a first run that begins meanwhile
waits for the modules it needs (Python's import locks) rather than importing them again.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

# What every page imports first, in the order the home page does: a run that begins meanwhile waits on the same modules
# in the same order (two threads importing in different orders could each hold a module the other needs).
PRELOADED = ("attn_ui.lessons", "attn_ui.page")


def preload() -> None:
    for name in PRELOADED:
        importlib.import_module(name)


@asynccontextmanager
async def lifespan(_app) -> AsyncIterator[None]:
    threading.Thread(target=preload, name="preload", daemon=True).start()
    yield
