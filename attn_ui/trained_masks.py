"""The Real model view's masks on the trained model: a padded batch with and without its mask, a causal mask it never
saw, and where its heads park their attention (and what hiding that key changes), drawn from attn_core's measurements."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from attn_core.real_model import SINKS
from attn_core.real_model.mask_effects import Change, PaddingCheck
from attn_ui import slide
from attn_ui.steps import METRIC_WIDTH, Row, as_text, heatmap_block, row

TABLE_ASIDE = 380  # pixels of a table of a few sentences beside a row's grid
SINK_TITLES = {"[CLS]": "Weight on [CLS]", "[SEP]": "Weight on [SEP]", "punctuation": "Weight on punctuation"}


def head_grid(charts: Row, values, layer_names: list[str], head_names: list[str], title: str, kind: str = "weights") -> None:
    """A layers × heads heatmap of one number per head."""
    heatmap_block(charts, values.numpy(), layer_names, head_names, kind=kind, row_title="layer", col_title="head", title=title)


def padding_blocks(check: PaddingCheck, layer_names: list[str], head_names: list[str], layer: int, head: int) -> None:
    """With the mask, the batch's largest difference from each sentence alone; without it, how far each padded
    sentence's embedding moves and the weight each head puts on [PAD] keys; on a scrolling page, the open ``layer``'s
    ``head`` on the most padded sentence, its [PAD] columns named."""
    if not slide.presenting():  # on a slide, the metric beside the grid says it
        st.markdown(
            "With the padding mask, each sentence's embedding in the padded batch is the one it has alone, to rounding. "
            "Without it, every token also attends to the [PAD] keys:"
        )
    moved = pd.DataFrame(
        {
            "pieces": [len(tokens) for tokens in check.tokens],
            "[PAD] added": check.pads,
            "cosine, no mask vs alone": [round(float(c), 4) for c in check.unmasked_cosine],
        },
        index=[f"sentence {b + 1}" for b in range(len(check.tokens))],
    )
    with row(1, lines_above=1, aside=TABLE_ASIDE) as charts:  # on a slide, a line of lead
        head_grid(charts, check.pad_weight, layer_names, head_names, "Weight on [PAD] keys, without the mask")
        with st.container(width=TABLE_ASIDE):
            st.metric(
                "Largest difference, padded with the mask vs alone",
                f"{check.masked_difference:.1e}",
                help="Over every entry of every sentence's embedding: rounding.",
            )
            st.table(moved)
    if not slide.presenting():
        b = max(range(len(check.pads)), key=check.pads.__getitem__)  # the most padded sentence
        keys = check.tokens[b] + ["[PAD]"] * check.pads[b]
        weights = check.unmasked.attention[layer].weights[b, head, : len(check.tokens[b])]  # (its tokens, T)
        with row(1) as charts:
            heatmap_block(
                charts,
                weights.numpy(),
                check.tokens[b],
                keys,
                title=f"Layer {layer}, head {head} on sentence {b + 1} without the mask",
                subtitle=(f"{float(weights[:, len(check.tokens[b]) :].sum(dim=-1).mean()):.0%} of its weight on the [PAD] keys",),
            )


def change_blocks(change: Change, names: list[str], layer_names: list[str], head_names: list[str], title: str) -> None:
    """A change's effect: each sentence's embedding against as trained, and each head's rows."""
    cosine = pd.DataFrame({"cosine with as trained": [round(float(c), 4) for c in change.cosine]}, index=names)
    with row(1, lines_above=1, aside=TABLE_ASIDE) as charts:  # on a slide, a line of lead
        head_grid(charts, change.head_change, layer_names, head_names, title)
        with st.container(width=TABLE_ASIDE):
            st.table(as_text(cosine))  # the sentences, cut, as row labels


def hidden_key_blocks(change: Change, token: str, heads: str, layer_names: list[str], head_names: list[str]) -> None:
    """What hiding ``token``'s key from ``heads`` (named) did: the embeddings' cosine with as trained, each head."""
    with row(1, lines_above=1, aside=METRIC_WIDTH) as charts:  # on a slide, a line of lead
        head_grid(charts, change.head_change, layer_names, head_names, f"{token} hidden from {heads}: weights moved")
        with st.container(width=METRIC_WIDTH):
            why = "Each sentence's embedding with the key hidden against as trained: 1 is unchanged."
            st.metric("Mean cosine", f"{float(change.cosine.mean()):.4f}", help=why)
            st.metric("Lowest cosine", f"{float(change.cosine.min()):.4f}", help=why)


def sink_blocks(shares: dict, layer_names: list[str], head_names: list[str]) -> None:
    """For each kind of sink, the share of each head's attention on it, as a layers × heads grid; on a slide [CLS] and
    [SEP] only, large enough to read (three grids of 6 × 12 side by side leave a full-HD slide half empty)."""
    kinds = SINKS[:2] if slide.presenting() else SINKS
    with row(len(kinds), lines_above=1) as charts:
        for kind in kinds:
            head_grid(charts, shares[kind], layer_names, head_names, SINK_TITLES[kind])
