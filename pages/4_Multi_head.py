"""Multi-head view: h heads side by side, each attending in its own C/h-wide slice, then mixed by W_O."""

import math

import pandas as pd
import streamlit as st
import torch

from attn_core import (
    check_head_count,
    embed_tokens,
    head_metrics,
    multi_head_attention,
    multi_head_projections,
    pattern_similarity,
    sinusoidal,
)
from attn_core.examples import COREFERENCE_SENTENCES
from attn_core.heads import pairs_by_similarity
from attn_core.multihead import MAX_HEADS, nearest_head_counts, torch_mha_difference
from attn_ui import callbacks, page, slide, url_state
from attn_ui.inputs import tokens_from_text
from attn_ui.steps import feature_labels, grid_block, heatmap_block, matrix_step, projection_steps, row, score_steps, table
from attn_ui.url_state import Param

MAX_TOKENS = 32
MAX_WIDTH = 256
SIMILAR = 0.95  # heads whose patterns are at least this similar are called redundant
PARAMS = url_state.Params(
    Param("text", COREFERENCE_SENTENCES[0], url_state.text),
    Param("d_model", 32, url_state.Integer(1, MAX_WIDTH)),
    Param("heads", 4, url_state.Integer(1, MAX_HEADS)),
    Param("head", 0, url_state.Integer(0, MAX_HEADS - 1)),
    page.SEED,
)


@callbacks.needing("head")  # this view's: Cost and Decoding, whose "heads" a late click would set, have none
def use_heads(count: int) -> None:
    st.session_state["heads"] = count


SLIDES = (
    page.Section("Split", "Splitting the width into heads"),
    page.Section("Heads", "Every head's attention"),
    page.Section("Slices", "One head: its slices of W_Q, W_K and W_V"),
    page.Section("Q, K, V", "One head: its queries, keys and values"),
    page.Section("Scores", "One head: scores, weights and context", parts=2),
    page.Section("Concat", "Concatenate, then project", parts=2),
    page.Section("Compare", "How the heads differ", parts=2),
    page.Section("1 vs h", "One head of size C, or h heads of size C/h?", parts=2),
    page.Section("Check", "Check against PyTorch"),
)

values = page.setup(page.MULTI_HEAD, PARAMS)
slides = page.Slides(
    SLIDES,
    "Multi-head attention: several heads, side by side",
    (
        "One attention head mixes the tokens in one way. A transformer runs **h heads in parallel**: each projects the "
        "tokens to its own queries, keys and values of size C/h, attends on its own, and the h results are concatenated "
        "and mixed by one more matrix, W_O. Each head can then track a different relation between the words."
    ),
)
with slides.controls:
    st.text_area("Sentence", key="text", help="Words, punctuation and emoji each become a token.")
    d_model = PARAMS.d_model.number_input("Model width C")
    asked_heads = PARAMS.heads.number_input("Heads h", help="Must divide C: each head gets C/h features.")
    n_heads = nearest_head_counts(d_model, asked_heads)[0]
    url_state.keep_index("head", n_heads, min(values.head, n_heads - 1), f"there are {n_heads} heads")
    head = st.selectbox("Head to open", range(n_heads), key="head")
    page.SEED.number_input("Seed", help="Seeds the toy embeddings and W_Q, W_K, W_V, W_O.")

if n_heads != asked_heads:
    try:
        check_head_count(d_model, asked_heads)
    except ValueError as problem:
        st.warning(f"{problem} This view shows h = {n_heads} until you choose.")
    with st.container(horizontal=True):
        for valid in nearest_head_counts(d_model, asked_heads):
            st.button(f"Use {valid} heads", on_click=use_heads, args=(valid,), key=f"use_{valid}")

tokens = tokens_from_text(values.text, MAX_TOKENS, COREFERENCE_SENTENCES[0])
seed = values.seed
x = embed_tokens(tokens, d_model, seed) + sinusoidal(len(tokens), d_model)  # (T, C)
w_q, w_k, w_v, w_o = multi_head_projections(d_model, seed)  # each (C, C)
steps = multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads)  # weights (h, T, T), output (T, C)
d_head = d_model // n_heads
head_names = [f"head {i}" for i in range(n_heads)]
n_parameters = sum(w.numel() for w in (w_q, w_k, w_v, w_o))
t = len(tokens)
columns = slice(head * d_head, (head + 1) * d_head)  # head's features in W_Q, W_K, W_V and in Concat
features = feature_labels(d_model)
metrics = head_metrics(steps.heads.weights)  # each (h,)

if slides.show(1):
    slide.lead(
        f"X holds one row of C = {d_model} numbers per token (toy word embeddings plus position encodings). "
        f"With h = {n_heads} heads, each head *i* has its own W_Q^i, W_K^i, W_V^i of size C × C/h = {d_model} × {d_head}. "
        f"Side by side they form one C × C matrix per role, so the attention block has 4C² = {n_parameters:,} parameters "
        "(with W_O) whatever h is: more heads means more, smaller heads, not more weights.",
        f"Each of the h = {n_heads} heads has its own W_Q^i, W_K^i, W_V^i of C × C/h = {d_model} × {d_head}: with W_O, "
        f"4C² = {n_parameters:,} parameters whatever h is.",
    )
    shapes = [
        ("X", "token embeddings + positions", (t, d_model)),
        ("W_Q^i, W_K^i, W_V^i", f"per head, {n_heads} of each", (d_model, d_head)),
        ("Q^i, K^i, V^i", "X W^i, per head", (t, d_head)),
        ("A^i", "softmax(Q^i K^iᵀ / √(C/h)), per head", (t, t)),
        ("Z^i", "A^i V^i, per head", (t, d_head)),
        ("Concat(Z^1 … Z^h)", "the heads side by side", (t, d_model)),
        ("W_O", "mixes the heads", (d_model, d_model)),
        ("output", "Concat · W_O", (t, d_model)),
    ]
    table(pd.DataFrame(shapes, columns=["tensor", "what", "shape"]).astype(str), hide_index=True)

if slides.show(2):
    with row(1, lines_below=1) as charts:
        grid_block(charts, steps.heads.weights.numpy(), tokens, tokens, panel_names=head_names)  # (h, T, T): a panel per head
    st.caption(
        "Each square is one head's attention weights: a row per query token, a column per key. Hover a cell for its value."
    )

if slides.show(3, f"Head {head}: its slices of W_Q, W_K and W_V"):
    st.markdown(f"Head {head} uses columns {columns.start} to {columns.stop - 1} of W_Q, W_K, W_V ({d_model} × {d_head} each).")
    projection_steps((w_q[:, columns], w_k[:, columns], w_v[:, columns]), features, features[columns], head)

if slides.show(4, f"Head {head}: its queries, keys and values"):
    st.markdown(f"Each token's row of X times head {head}'s slices gives its query, key and value, of size C/h = {d_head}.")
    with row(3) as charts:
        for name, tensor in zip(("Q", "K", "V"), (steps.heads.q, steps.heads.k, steps.heads.v), strict=True):
            formula = f"{name}^{{{head}}} = X W_{name}^{{{head}}}"
            matrix_step(
                charts, f"{name} of head {head}", formula, tensor[head], tokens, feature_labels(d_head), shape=tuple(tensor.shape)
            )

if slides.show(5, f"Head {head}: scores, weights and context"):
    scale_text = rf"\frac{{1}}{{\sqrt{{{d_head}}}}}"
    # Two token-by-token matrices a slide, under a one-line lead: three do not fit a 1024-px window.
    if slides.part(1):
        st.markdown(f"Head {head}'s queries and keys give its scores, scaled by 1/√(C/h) = 1/√{d_head}.")
        with row(2, lines_above=1) as charts:
            score_steps(charts, steps.heads, head, tokens, tokens, scale_text, shown=slice(0, 2))
    if slides.part(2):
        st.markdown("Softmax turns each row of scaled scores into weights, which mix the head's values into its context Z.")
        with row(2, lines_above=1) as charts:
            score_steps(charts, steps.heads, head, tokens, tokens, scale_text, shown=slice(2, 3))
            matrix_step(
                charts,
                f"Z, head {head}'s context",
                rf"Z^{{{head}}} = A^{{{head}}} V^{{{head}}}",
                steps.heads.context[head],
                tokens,
                feature_labels(d_head),
                shape=tuple(steps.heads.context.shape),
            )

if slides.show(6):
    st.markdown(
        f"The {n_heads} context matrices of shape ({t}, {d_head}) are put side by side into one ({t}, {d_model}) matrix: "
        f"head {head}'s are columns {columns.start} to {columns.stop - 1}. W_O then mixes the heads' features."
    )
    with row(2 if slides.part(1) else 1) as charts:  # on a slide, Concat and W_O, then the output: three do not fit 1024 px
        if slides.part(1):
            concat = r"\operatorname{Concat}(Z^0, \dots, Z^{h-1}) \in \mathbb{R}^{T \times C}"
            matrix_step(charts, "Concat", concat, steps.concat, tokens, features)
            matrix_step(
                charts,
                "W_O",
                r"W_O \in \mathbb{R}^{C \times C}",
                w_o,
                features,
                features,
                row_title="input feature",
                col_title="output feature",
            )
        if slides.part(2):
            matrix_step(charts, "Output", r"\operatorname{Concat}(\dots)\, W_O", steps.output, tokens, features)

if slides.show(7):
    if slides.part(1):
        per_head = pd.DataFrame({"head": range(n_heads)} | {name: column.numpy() for name, column in metrics.columns().items()})
        st.table(per_head.style.format(precision=3), hide_index=True)
        st.caption(
            "Means over the query tokens. Entropy: 0 = each token attends to one key, "
            f"log T = {math.log(t):.2f} = attends to all equally. "
            "Mean distance: how far, in tokens, a head looks on average. Largest weight: each row's largest weight, averaged."
        )
    if slides.part(2):
        similarity = pattern_similarity(steps.heads.weights)  # (h, h)
        with row(1, lines_below=3) as charts:  # the redundant heads and a caption under it
            heatmap_block(
                charts,
                similarity.numpy(),
                head_names,
                head_names,
                row_title="head",
                col_title="other head",
                title="Similarity of the heads' patterns (cosine)",
            )
        with st.container():
            pairs = pairs_by_similarity(similarity)  # most alike first
            redundant = [(i, j, alike) for i, j, alike in pairs if alike >= SIMILAR]
            if redundant:
                listed = ", ".join(f"heads {i} and {j} ({alike:.2f})" for i, j, alike in redundant)
                st.markdown(f"**Redundant heads** (similarity ≥ {SIMILAR}): {listed}. They attend almost alike.")
            elif pairs:
                i, j, alike = pairs[0]
                st.markdown(f"No two heads are near-duplicates: the most alike are heads {i} and {j} ({alike:.2f}).")
            st.caption("1 = the same proportions on every query and key; trained models often have a few redundant heads.")

if slides.show(8):
    one_head = multi_head_attention(x, w_q, w_k, w_v, w_o, 1)  # the same four matrices, used as a single head
    one_metrics = head_metrics(one_head.heads.weights)  # each (1,)
    like_one = pattern_similarity(torch.cat([one_head.heads.weights, steps.heads.weights]))[0, 1:]  # (h,)
    if slides.part(1):
        with row() as charts:
            heatmap_block(charts, one_head.heads.weights[0].numpy(), tokens, tokens, title=f"One head of size {d_model}")
    if slides.part(2):
        st.markdown(
            f"The same W_Q, W_K, W_V and W_O ({n_parameters:,} parameters) used as **one head** of size {d_model}: "
            f"its scores sum over all {d_model} features, where each of the {n_heads} heads sums over its own {d_head}. "
            "One head has to compromise between relations; h heads can each keep one."
        )
        comparison = pd.DataFrame(
            {
                "heads": ["1 head", f"{n_heads} heads"],
                "head size": [d_model, d_head],
                "parameters": [f"{n_parameters:,}"] * 2,  # as the text above writes it
                "attention maps": [1, n_heads],
                "entropy (nats)": [
                    f"{float(one_metrics.entropy[0]):.3f}",
                    f"{metrics.entropy.min():.3f} to {metrics.entropy.max():.3f}",
                ],
            }
        ).astype(str)
        st.table(comparison, hide_index=True)
        most_alike = int(like_one.argmax())
        st.caption(f"Of the {n_heads} heads, head {most_alike} is most like the single head (similarity {like_one.max():.2f}).")

if slides.show(9):
    difference = torch_mha_difference(x, w_q, w_k, w_v, w_o, steps)
    st.metric("Largest difference from torch.nn.MultiheadAttention", f"{difference:.1e}")
    st.caption(
        f"`torch.nn.MultiheadAttention({d_model}, {n_heads}, bias=False, batch_first=True)` loaded with "
        "in_proj_weight = cat([W_Q, W_K, W_V], dim=1)ᵀ and out_proj.weight = W_Oᵀ, run on the same X, in float32: "
        "differences around 1e-7 are rounding."
    )

page.publish(PARAMS)
