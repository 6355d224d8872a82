"""Widget callbacks that may run after their view has gone.

When the view changes, page.setup deletes the view's session-state keys, but Streamlit keeps the callbacks of the
view's widgets until a run ends without them. A browser message sent before the new view arrived (a click, a toggle,
the window's size report) can therefore still run one, with the keys it reads deleted. Such a callback does nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import streamlit as st


def needing(*keys: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorate a callback that reads ``keys`` of the session state: it runs only while they are all there."""

    def guard(callback: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(callback)
        def guarded(*args, **kwargs) -> None:
            if all(key in st.session_state for key in keys):
                callback(*args, **kwargs)

        return guarded

    return guard
