"""The Masking view's sections on masking conventions: a row that sees nothing, filled three ways (4), and the
boolean against the additive mask (5)."""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch
from torch import Tensor

from attn_core import AttentionSteps, additive_mask
from attn_core.masking import LARGE_NEGATIVE, compare_fills, weights_with_additive_mask
from attn_ui import slide
from attn_ui.inputs import escape_markdown
from attn_ui.steps import METRIC_WIDTH, matrix_step, numbers_table, row, table


def empty_row_section(steps: AttentionSteps, mask: Tensor, empty: Tensor, tokens: list[list[str]], step: int) -> None:
    """Section 4: the first query that sees no key, its weights under three fills; where no query is blocked whole, the
    step's query with every key blocked, so that the three differ."""
    blocked = bool(empty.any())
    b, query = empty.nonzero()[0].tolist() if blocked else (0, step - 1)
    sentence = tokens[b]
    large_negative = f"{LARGE_NEGATIVE:.0e}".replace("e+0", "e")  # -1e9
    row_mask = mask[b, query] if blocked else torch.zeros_like(mask[b, query])  # (T,) True = may attend
    fills = compare_fills(steps.scores[b, query] * steps.scale, row_mask)
    state = "is fully blocked" if blocked else "sees a key under this mask; here every key is blocked"
    st.markdown(escape_markdown(f"Query “{sentence[query]}” of sentence {b + 1} {state}, masked three ways:"))
    short = slide.presenting()  # a slide's narrower columns: their names in short, the text under them says more
    fill_rows = {
        "softmax, −∞" if short else "naive softmax, masked = −∞": fills.naive,
        "attn_core" if short else "attn_core masked_softmax": fills.attn_core,
        f"softmax, {large_negative}" if short else f"naive softmax, masked = {large_negative}": fills.large_negative,
    }
    columns = np.stack([weights.cpu().numpy() for weights in fill_rows.values()]).T  # (T, 3)
    table(numbers_table(columns, sentence, list(fill_rows)), lines_above=1, lines_below=4)
    st.markdown(
        "Over a row of only −∞, softmax divides 0 by 0: **NaN**, which spreads through every later layer. "
        f"Filling with {large_negative} avoids the NaN but gives a **uniform** row over keys the query must not see "
        "(in float16, −1e9 is −∞ anyway). attn_core returns **0** weights and a 0 context. In a row that still sees "
        "a key, all three agree."
    )


def conventions_section(steps: AttentionSteps, mask: Tensor, tokens: list[list[str]]) -> None:
    """Section 5: sentence 1's boolean and additive masks, and how far apart their weights are over the batch."""
    additive = additive_mask(mask)  # (B, T, T)
    difference = f"{float((steps.weights - weights_with_additive_mask(steps, additive)).abs().max()):.1e}"
    metric = not slide.presenting()  # on a slide the charts take the width, and the lead says the difference
    st.markdown(
        "PyTorch accepts a **boolean** mask (True = may attend) or an **additive** one (0 = may attend, −∞ = "
        "blocked) that is added to the scores. Both give the same weights"
        + (". Sentence 1's masks:" if metric else f" (largest difference {difference}). Sentence 1's masks:")
    )
    shared = {"row_labels": tokens[0], "col_labels": tokens[0], "row_title": "query", "col_title": "key"}
    with row(2, aside=METRIC_WIDTH if metric else 0) as charts:  # the metric beside them
        matrix_step(charts, "Boolean mask", r"M_{ij} \in \{\text{False}, \text{True}\}", mask[0].double(), kind="mask", **shared)
        matrix_step(charts, "Additive mask", r"M_{ij} \in \{-\infty, 0\}", additive[0], kind="additive", **shared)
        if metric:
            st.metric(
                "Largest difference",
                difference,
                help="Between the weights of the two conventions, over the whole batch.",
                width=METRIC_WIDTH,
            )
