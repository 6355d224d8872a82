"""The least a page with one chart costs in a multipage Streamlit app: a title, a paragraph, a 6 x 6 heatmap and the
seed of its values, no app code but the server's sockets set and its modules frozen for the garbage collector as the
views do (any app can), as the app's root page (/) and as a second page at its own address (/chart).

``bench_interactions`` times the first render of both in a new tab beside the views', and the redraw after a change
of the seed (new values in the same chart, as most of the views' controls bring) beside the views' redraws, on the
same machine in the same run: what no change to the app can take away, and how fast the machine was. A view's link is
a page's own address, and there Streamlit's frontend first looks for the server under that path
(/chart/_stcore/health), fails, and tries the root 100 ms later (streamlit/streamlit#7074).
"""

import gc

import numpy as np
import pandas as pd
import streamlit as st

from attn_ui import tcp

tcp.no_delay_on_tcp_sockets()


@st.cache_resource
def freeze_loaded_modules() -> None:
    """What the views do (attn_ui.page.freeze_loaded_modules), once here, as this page loads no modules later: Streamlit
    collects garbage after every run (its runner.postScriptGC), a full pass over every object the collector tracks,
    and without the freeze that pass over numpy's, pandas' and Streamlit's objects is most of this page's redraw."""
    gc.freeze()


def one_chart() -> None:
    freeze_loaded_modules()
    st.title("One chart")
    st.markdown("A 6 × 6 heatmap.")
    seed = st.number_input("Seed", 0, 1000, 0)
    rows, cols = np.indices((6, 6)).reshape(2, -1)  # (36,) each
    cells = pd.DataFrame({"row": rows, "col": cols, "value": np.random.default_rng(seed).random(36)})
    st.vega_lite_chart(
        cells,
        {
            "mark": "rect",
            "encoding": {
                "x": {"field": "col", "type": "ordinal"},
                "y": {"field": "row", "type": "ordinal"},
                "color": {"field": "value", "type": "quantitative"},
            },
        },
    )


pages = [st.Page(one_chart, title="One chart", default=True), st.Page(one_chart, title="Chart", url_path="chart")]
st.navigation(pages, position="hidden").run()
