"""Masking view: what causal, padding and custom masks let each query see."""

import numpy as np
import pandas as pd
import streamlit as st

from attn_core import (
    LARGE_NEGATIVE,
    MASK_KINDS,
    PAD,
    additive_mask,
    compare_fills,
    difference_from_alone,
    masked_batch_attention,
    pad_batch,
    padding_mask,
    weights_with_additive_mask,
)
from attn_core.examples import MASKING_SENTENCES
from attn_ui import page, url_state
from attn_ui.charts import BAR_HEIGHT, bars, heatmap
from attn_ui.inputs import SENTENCE_SEPARATOR, sentences_from_text
from attn_ui.mask_grid import mask_grid
from attn_ui.steps import matrix_step, numbers_table, unique_labels
from attn_ui.url_state import Param

MAX_SENTENCES = 4
MAX_TOKENS = 16  # per sentence
FAR_LONGER = 3  # a sentence this many times longer than another one gets a notice
MASK_LABELS = {"causal": "Causal (look-ahead)", "padding": "Padding", "both": "Causal and padding", "custom": "Custom grid"}
PARAMS = (
    Param("text", MASKING_SENTENCES, url_state.text),
    Param("mask", "causal", url_state.choice(MASK_KINDS)),
    Param("step", 1, url_state.integer(1, MAX_TOKENS)),
)

page.setup(page.VIEWS[2])
st.title("Masking: what each query may see")
st.markdown(
    "A mask decides which keys each query may attend to. Masked scores are set to −∞ before softmax, "
    "so their weights come out exactly 0. A **causal** (look-ahead) mask hides the future while a model "
    "generates text; a **padding** mask hides the [PAD] tokens that fill up the shorter sentences of a batch."
)
url_state.restore(PARAMS)

with st.sidebar:
    st.text_area(
        f"Sentences, separated by {SENTENCE_SEPARATOR}",
        key="text",
        help=f"2 to {MAX_SENTENCES} sentences of different lengths make a padded batch; up to {MAX_TOKENS} tokens each.",
    )
    kind = st.radio("Mask", MASK_KINDS, format_func=MASK_LABELS.get, key="mask")

sentences = sentences_from_text(st.session_state["text"], MAX_SENTENCES, MAX_TOKENS, MASKING_SENTENCES)
tokens, lengths = pad_batch(sentences)
n_sentences, t = len(tokens), len(tokens[0])
with st.sidebar:
    st.session_state["step"] = min(st.session_state["step"], t)
    if t > 1:
        step = st.slider("Generation step t", 1, t, key="step", help="Which tokens the t-th token may see.")
    else:
        step = 1
        st.caption("One position only: nothing to step through.")

st.header("1 · The batch, padded")
if n_sentences == 1:
    st.info(f"One sentence: nothing to pad. Type 2 to {MAX_SENTENCES} sentences separated by “{SENTENCE_SEPARATOR}”.")
elif max(lengths) >= FAR_LONGER * min(lengths):
    shortest = lengths.index(min(lengths))
    st.warning(
        f"One sentence is far longer than another ({max(lengths)} against {min(lengths)} tokens): sentence "
        f"{shortest + 1} is mostly {PAD}, which costs compute and memory for nothing. Real systems batch "
        "sentences of similar length together."
    )
positions = [str(i + 1) for i in range(t)]
names = [f"sentence {b + 1}" for b in range(n_sentences)]
st.dataframe(pd.DataFrame(tokens, index=names, columns=positions))
st.altair_chart(
    heatmap(
        padding_mask(lengths, t)[:, 0].double().numpy(),
        names,
        positions,
        row_title="sentence",
        col_title="position",
        title="Key padding mask (1 = real token, 0 = [PAD])",
    ),
    width="content",
)
if kind in ("padding", "both"):
    st.markdown(
        f"Every query ignores the {PAD} keys, and a {PAD} query sees nothing at all: its row is fully blocked, "
        "so attn_core gives it weights 0 and context 0 (section 4)."
    )
elif kind == "causal":
    st.markdown(
        f"A causal mask alone never lets a real token see the {PAD}s after it, but each {PAD} query still "
        "attends to the tokens before it: its output is junk that later layers must ignore."
    )

custom = None
if kind == "custom":
    st.subheader("Your mask")
    st.markdown(
        "Tick a cell to let that query (row) attend to that key (column). One grid applies to every sentence "
        "of the batch, as PyTorch broadcasts a (T, T) mask. Untick a whole row to block a query completely."
    )
    custom = mask_grid(unique_labels(tokens[0]) if n_sentences == 1 else positions)

batch = masked_batch_attention(sentences, kind, custom)
steps = batch.steps
mask = batch.mask.expand_as(steps.weights)  # (B, T, T)
empty = steps.empty_rows  # (B, T)
if empty.all():
    st.warning("This mask blocks every key for every query: all weights and context vectors are 0, nothing is attended.")
elif empty.any():
    n_empty = int(empty.sum())
    st.info(
        f"{n_empty} query {'row sees' if n_empty == 1 else 'rows see'} no key at all. attn_core gives "
        f"{'it' if n_empty == 1 else 'them'} weights 0 and context 0 instead of the NaN a naive softmax would give (section 4)."
    )

st.header("2 · Scores, weights and generation step by step")
for b, tab in enumerate(st.tabs([f"Sentence {b + 1}" for b in range(n_sentences)])):
    with tab:
        row = tokens[b]
        left, right = st.columns(2)
        with left:
            matrix_step(
                "Scaled scores, masked",
                r"S' = \frac{Q K^\top}{\sqrt{d_k}}, \; -\infty \text{ where masked}",
                steps.scaled[b],
                row,
                row,
                shape=tuple(steps.scaled.shape),
                row_title="query",
                col_title="key",
                max_width=400,
            )
        with right:
            matrix_step(
                "Attention weights",
                r"A = \operatorname{softmax}_{\text{keys}}(S')",
                steps.weights[b],
                row,
                row,
                shape=tuple(steps.weights.shape),
                kind="weights",
                row_title="query",
                col_title="key",
                max_width=400,
            )
        query = step - 1
        visible = [key for key, allowed in zip(row, mask[b, query].tolist(), strict=True) if allowed]
        seen = ", ".join(visible) if visible else "no key at all: its weights and context are 0"
        st.markdown(f"**Step {step}:** “{row[query]}” may see {len(visible)} of {t} keys: {seen}.")
        st.altair_chart(
            bars(steps.weights[b, query].numpy(), row, value_title="weight", title=f"Weights of “{row[query]}” at step {step}"),
            height=BAR_HEIGHT,
        )

if kind != "custom":
    st.header("3 · Padded or alone: the same outputs")
    st.markdown(
        "Each sentence, run on its own without padding, must give its real tokens the same context vectors "
        "as in the padded batch: the mask makes the [PAD]s invisible."
    )
    check = pd.DataFrame(
        {"real tokens": lengths, PAD: [t - n for n in lengths], "largest |difference|": difference_from_alone(batch)},
        index=names,
    )
    st.dataframe(check.style.format({"largest |difference|": "{:.1e}"}))

st.header("4 · A row that sees nothing: NaN, 0 or uniform?")
b, query = empty.nonzero()[0].tolist() if empty.any() else (0, step - 1)
row = tokens[b]
large_negative = f"{LARGE_NEGATIVE:.0e}".replace("e+0", "e")  # -1e9
fills = compare_fills(steps.scores[b, query] * steps.scale, mask[b, query])
state = "is fully blocked" if empty[b, query] else "still sees a key; block a whole row to see the difference"
st.markdown(f"Query “{row[query]}” of sentence {b + 1} {state}. Three ways to apply its mask before softmax:")
fill_rows = {
    "naive softmax, masked = −∞": fills.naive,
    "attn_core masked_softmax": fills.attn_core,
    f"naive softmax, masked = {large_negative}": fills.large_negative,
}
st.table(numbers_table(np.stack([weights.cpu().numpy() for weights in fill_rows.values()]), list(fill_rows), row))
st.markdown(
    "Over a row of only −∞, softmax divides 0 by 0: **NaN**, which then spreads through every later layer. "
    f"Filling with {large_negative} avoids the NaN but silently gives a **uniform** row over keys the query "
    "must not see (and in float16, −1e9 overflows to −∞ anyway). attn_core returns **0** weights and a 0 context, "
    "and this app says when it happens. In a row that still sees a key, all three agree."
)

st.header("5 · Two conventions: boolean or additive")
st.markdown(
    "PyTorch accepts a **boolean** mask (True = may attend) or an **additive** one (0 = may attend, −∞ = "
    "blocked) that is added to the scores. Both give the same weights. Sentence 1's masks:"
)
additive = additive_mask(mask)  # (B, T, T)
additive_weights = weights_with_additive_mask(steps, additive)
left, right = st.columns(2)
shared = {"row_labels": tokens[0], "col_labels": tokens[0], "row_title": "query", "col_title": "key", "max_width": 400}
with left:
    matrix_step("Boolean mask (1 = True)", r"M_{ij} \in \{0, 1\}", mask[0].double(), kind="weights", **shared)
with right:
    matrix_step("Additive mask", r"M_{ij} \in \{-\infty, 0\}", additive[0], **shared)
st.metric(
    "Largest difference between the two conventions' weights (whole batch)",
    f"{float((steps.weights - additive_weights).abs().max()):.1e}",
)

url_state.publish(PARAMS)
