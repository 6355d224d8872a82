"""The least a Streamlit page with one chart costs: a title, a paragraph and a 6 x 6 heatmap, no app code.

``bench_interactions`` times its first render in a new tab beside the views', on the same machine in the same run:
what no change to the app can take away.
"""

import numpy as np
import pandas as pd
import streamlit as st

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
