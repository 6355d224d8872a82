"""The least a page with one chart costs in a multipage Streamlit app: a title, a paragraph and a 6 x 6 heatmap, no
app code but the server's sockets set as the views set them (``attn_ui.tcp``: any app can), as the app's root page (/)
and as a second page at its own address (/chart).

``bench_interactions`` times the first render of both in a new tab beside the views', on the same machine in the same
run: what no change to the app can take away. A view's link is a page's own address, and there Streamlit's frontend
first looks for the server under that path (/chart/_stcore/health), fails, and tries the root 100 ms later
(streamlit/streamlit#7074).
"""

import numpy as np
import pandas as pd
import streamlit as st

from attn_ui import tcp

tcp.no_delay_on_tcp_sockets()


def one_chart() -> None:
    st.title("One chart")
    st.markdown("A 6 × 6 heatmap.")
    rows, cols = np.indices((6, 6)).reshape(2, -1)  # (36,) each
    cells = pd.DataFrame({"row": rows, "col": cols, "value": np.random.default_rng(0).random(36)})
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
