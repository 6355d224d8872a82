"""Take a view with you: each matrix as CSV and ``.npy`` and its chart as PNG and SVG where it is shown, the view's
link, and the whole view as one zip (``attn_ui.export`` builds the files).

Every run of a view records what it draws (``keep_matrix``, ``keep_chart``, ``keep_table``, ``keep_code``) in the session's
``Shown``; the "Download this view" button zips that record when it is clicked, so it holds exactly what is on
screen. Files are built on click only (``st.download_button`` with a callable, on its own thread, without a rerun).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from attn_ui import export
from attn_ui.url_state import Param

SHOWN = "_shown"  # session-state key
SHARE_LINK = "_share_link"  # session-state key: the link's popover is open
Recipe = tuple[Callable[..., Any], tuple, dict]  # a chart builder of attn_ui.charts, its arguments and options
IMAGES = (  # a chart's images: label, renderer, file extension, MIME type
    ("PNG image, slide size", export.chart_png, "png", "image/png"),
    ("SVG image", export.chart_svg, "svg", "image/svg+xml"),
)


@dataclass
class Shown:
    """What a view's last run drew: its query (every parameter, defaults included), matrices, chart specs and tables
    (each with the settings its rows were made with)."""

    view: str
    query: dict[str, str] = field(default_factory=dict)
    changed: dict[str, str] = field(default_factory=dict)  # the parameters away from their defaults: the view's link
    matrices: dict[str, tuple[np.ndarray, list[str], list[str]]] = field(default_factory=dict)
    charts: dict[str, Recipe] = field(default_factory=dict)
    tables: dict[str, tuple[pd.DataFrame, dict[str, Any]]] = field(default_factory=dict)
    code: dict[str, str] = field(default_factory=dict)  # Python files: their name and text
    written: set[tuple[str, str]] = field(default_factory=set)  # (kind, name) of everything recorded

    def name(self, wanted: str, kind: str) -> str:
        """``wanted``, or ``wanted (2)``, ``wanted (3)`` ... where a ``kind`` ("matrix", "chart", "table") of that name
        is recorded already. A matrix and its chart, recorded in turn, get the same name."""
        found, n = wanted, 1
        while (kind, found) in self.written:
            n += 1
            found = f"{wanted} ({n})"
        self.written.add((kind, found))
        return found

    def chart(self, name: str) -> dict:
        """The Vega-Lite spec of the chart recorded as ``name``, built again from its recipe."""
        builder, args, options = self.charts[name]
        return builder(*args, **options)

    def image(self, name: str, render: Callable[[dict], bytes | str]) -> bytes | str:
        """The chart recorded as ``name``, rendered (titled with its name where it has no title of its own)."""
        spec = self.chart(name)
        return render(spec if spec.get("title") else export.titled(spec, name))

    def bundle(self) -> bytes:
        charts = {name: self.chart(name) for name in self.charts}
        tables = {name: table for name, (table, _) in self.tables.items()}
        settings = {name: settings for name, (_, settings) in self.tables.items()}
        versions = export.installed_versions()
        return export.view_bundle(self.view, self.query, self.matrices, tables, charts, versions, settings, self.code)


def begin(url_path: str) -> None:
    """At the top of a run of a view: a fresh record of what it draws."""
    st.session_state[SHOWN] = Shown(url_path)


def share(params: tuple[Param, ...]) -> None:
    """At the end of a run, in the sidebar: the link that opens the view as it is now, ready to copy (in a popover),
    and the "Download this view" button."""
    shown: Shown = st.session_state[SHOWN]
    values = {param.key: st.session_state.get(param.key, param.default) for param in params}
    shown.query = {param.key: param.format(values[param.key]) for param in params}
    shown.changed = changed = {param.key: shown.query[param.key] for param in params if values[param.key] != param.default}
    base = (st.context.url or "").removesuffix(f"/{shown.view}")  # the server's address, where the browser says it
    with st.sidebar:
        st.divider()
        st.markdown("**Share and export**")
        # Made when opened: st.code's highlighter took a quarter of a second of every new tab's first render.
        with st.popover("Link to this view", icon=":material/link:", key=SHARE_LINK, on_change="rerun") as link:
            if link.open:
                st.code(base + export.view_link(shown.view, changed), language=None, wrap_lines=True)
        st.download_button(
            "Download this view",
            data=shown.bundle,
            file_name=f"attention-explorer-{shown.view.lower()}.zip",
            mime="application/zip",
            on_click="ignore",
            icon=":material/folder_zip:",
            help="A zip: params.json (this view's settings), every matrix as .npy and CSV, every chart as PNG and SVG, "
            "every table as CSV.",
        )


def keep_chart(name: str, builder: Callable[..., Any], args: tuple, options: dict) -> str:
    """Record a drawn chart for the view's bundle (a name already taken gets a number): its recipe, not its spec,
    whose data (a dict per cell) would take megabytes per session. Returns the name it is recorded under."""
    shown: Shown | None = st.session_state.get(SHOWN)
    if shown is None:
        return name
    recorded = shown.name(name, "chart")
    shown.charts[recorded] = (builder, args, options)
    return recorded


def keep_table(name: str, table: pd.DataFrame, settings: dict[str, Any]) -> None:
    """Record a table for the view's bundle, as ``<name>.csv``, with the settings its rows were made with (written to
    params.json under "table settings")."""
    shown: Shown | None = st.session_state.get(SHOWN)
    if shown is not None:
        shown.tables[shown.name(name, "table")] = (table, settings)


def keep_code(name: str, text: str) -> None:
    """Record Python code for the view's bundle, as ``<name>.py``."""
    shown: Shown | None = st.session_state.get(SHOWN)
    if shown is not None:
        shown.code[shown.name(name, "code")] = text


def keep_matrix(name: str, values: np.ndarray, row_labels: list[str], col_labels: list[str]) -> str:
    """Record a matrix for the view's bundle; returns the name it is recorded under (one of several matrices with
    the same title gets a number)."""
    shown: Shown | None = st.session_state.get(SHOWN)
    if shown is not None:
        name = shown.name(name, "matrix")
        shown.matrices[name] = (values, row_labels, col_labels)
    return name


def download_menu(name: str, values: np.ndarray, row_labels: list[str], col_labels: list[str]) -> None:
    """A small popover that offers a matrix recorded as ``name``: as CSV and .npy, and its chart (recorded under the
    same name) as a slide-size PNG and an SVG.

    The popover's buttons are made only while it is open (a rerun opens it): four buttons per matrix would be 44
    widgets of every rerun on the Pipeline view."""
    shown: Shown | None = st.session_state.get(SHOWN)
    with st.popover("Download", icon=":material/download:", key=f"download menu {name}", on_change="rerun") as menu:
        if menu.open:
            matrix_buttons(name, values, row_labels, col_labels, shown)


def matrix_buttons(name: str, values: np.ndarray, row_labels: list[str], col_labels: list[str], shown: Shown | None) -> None:
    """A matrix's download buttons; its chart's too where it is recorded in ``shown``."""
    stem = export.file_stem(name)
    st.download_button(
        key=f"download {name} csv",
        label="CSV, with token labels",
        data=lambda: export.matrix_csv(values, row_labels, col_labels),
        file_name=f"{stem}.csv",
        mime="text/csv",
        on_click="ignore",
    )
    st.download_button(
        key=f"download {name} npy",
        label=f".npy, exact {values.dtype}",
        data=lambda: export.matrix_npy(values),
        file_name=f"{stem}.npy",
        mime="application/octet-stream",
        on_click="ignore",
    )
    if shown is not None:
        for label, render, extension, mime in IMAGES:
            st.download_button(
                key=f"download {name} {extension}",
                label=label,
                data=lambda render=render: shown.image(name, render),
                file_name=f"{stem}.{extension}",
                mime=mime,
                on_click="ignore",
            )
