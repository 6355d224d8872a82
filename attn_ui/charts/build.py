"""A chart's Vega-Lite spec: an Altair chart compiled once per layout, its data attached as DataFrames.

Altair's checks of each object against the JSON schema (as it is made, as ``.properties()`` sets it, in ``to_dict()``)
would be most of a rerun: the charts are compiled without them, and the tests validate every builder's output against
the schema instead (tests/test_charts.py).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import altair as alt
import pandas as pd
import pyarrow as pa

LAYOUTS_KEPT = 256  # compiled specs kept, without their data: about 10 kB a heatmap of a 32-token sentence
CELLS = alt.NamedData("cells")  # every chart's data: the named dataset "cells", a DataFrame until it is sent
alt.utils.schemapi.disable_debug_mode()  # Altair's checks as each object is made (above)


def about(description: str, title: str | alt.Title) -> dict:
    """A chart's top-level properties besides its view: its data, the named dataset "cells", a description (for a
    screen reader) and its title. Given to the chart's constructor: ``.properties()`` would check each against the
    schema."""
    return {"data": CELLS, "description": description, "title": title}


def compile_chart(chart: Callable[..., alt.TopLevelMixin], datasets: dict[str, pd.DataFrame], **layout: Any) -> dict:
    """The Vega-Lite spec of ``chart(**layout)``, an Altair chart with the app's theme; its data ``datasets``, a
    DataFrame per name its layers draw from (the dataset "cells"; several where layers draw different rows, as a map's).

    A spec depends on the values only through its data: it is compiled once per layout (labels, titles, sizes; a map's
    domain, which its points set), and new values (a seed, a toggle) reuse it. The data is attached as DataFrames,
    which ``attn_ui.draw`` sends to the browser as Arrow (Altair would write them out as a dict per row, and Streamlit
    would convert them back to a table: most of a rerun); ``inline_data`` writes them out as the JSON rows Vega-Lite
    itself reads."""
    return {**copy.deepcopy(_compiled(chart, **layout)), "datasets": datasets}


@functools.lru_cache(maxsize=LAYOUTS_KEPT)
def _compiled(chart: Callable[..., alt.TopLevelMixin], **layout: Any) -> dict:
    return chart(**layout).to_dict(validate=False)


def inline_data(spec: dict) -> dict:
    """A copy of the spec with every dataset a list of rows (JSON), as Vega-Lite reads it: for an image renderer,
    a file, a test."""
    datasets = {
        name: pa.Table.from_pandas(data, preserve_index=False).to_pylist() if isinstance(data, pd.DataFrame) else data
        for name, data in spec.get("datasets", {}).items()
    }
    return {**spec, "datasets": datasets} if datasets else spec
