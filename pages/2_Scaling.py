"""Scaling view: why attention divides the scores by sqrt(d_k)."""

import math

import pandas as pd
import streamlit as st
import torch

from attn_core import entropy
from attn_core.examples import DEFAULT_SENTENCE, TEMPERATURE_LOGITS
from attn_core.scaling import (
    D_K_VALUES,
    SATURATION_SAMPLES,
    SCALE_STEPS,
    VARIANCE_SAMPLES,
    dot_product_variance,
    normalized_entropy,
    sentence_attention,
    softmax_at_scale,
    softmax_saturation,
)
from attn_ui import page, url_state
from attn_ui.charts import LINE_HEIGHT, LINE_WIDTH, MAX_WIDTH, lines
from attn_ui.inputs import tokens_from_text
from attn_ui.slide import presenting
from attn_ui.steps import METRIC_WIDTH, bar_block, chart_block, matrix_step, row
from attn_ui.url_state import Param

MAX_TOKENS = 32
PARAMS = url_state.Params(
    Param("text", DEFAULT_SENTENCE, url_state.text),
    page.SEED,
    Param("d_k", 64, url_state.Nearest(D_K_VALUES), url_state.format_number),
    Param("scale", 1.0, url_state.Nearest(SCALE_STEPS), url_state.format_number),
)


@st.cache_data(max_entries=16, show_spinner=False)
def monte_carlo(seed: int):
    return dot_product_variance(seed), softmax_saturation(seed)


SLIDES = (
    page.Section("Temperature", "Softmax temperature"),
    page.Section("Variance", "The variance of q·k grows with d_k"),
    page.Section("Saturation", "What large scores do to softmax"),
    page.Section("Your sentence", "Your sentence"),
)

values = page.setup(page.SCALING, PARAMS)
slides = page.Slides(
    SLIDES,
    "Scaling: why divide by √d_k?",
    (
        "Attention computes softmax(Q Kᵀ / √d_k). Softmax is sensitive to the *size* of its inputs: "
        "multiply them by a large number and it picks one key; by a small one and it spreads evenly. "
        "This view shows why the scores grow with the head size d_k, and what dividing by √d_k fixes."
    ),
)
controls = slides.controls

with controls:
    st.text_area("Sentence", key="text", help="Used in section 4. Words, punctuation and emoji each become a token.")
    page.SEED.number_input("Seed", help="Seeds the random vectors and the toy embeddings.")
    d_k = PARAMS.d_k.select_slider("Head size d_k")
    scale = PARAMS.scale.select_slider(
        "Scale s (inverse temperature)",
        format_func=url_state.format_number,
        help="Multiplies the logits of section 1 and the scaled scores of section 4. Temperature = 1/s.",
    )

variance, saturation = monte_carlo(values.seed)
d_k_axis = variance.d_k.numpy()

if slides.show(1):
    st.markdown(
        "The source's example: six logits x. At scale 1 the weights are **diffused**; multiplied by 100 "
        "they are **almost one-hot**. Move *Scale s* in the controls to see the whole range."
    )
    logits = torch.tensor(TEMPERATURE_LOGITS, dtype=torch.float64)
    labels = [f"{value:g}" for value in TEMPERATURE_LOGITS]
    distributions = {"scale 1": 1.0, "scale 100": 100.0, f"your scale s = {scale:g}": scale}
    weights = {name: softmax_at_scale(logits, factor) for name, factor in distributions.items()}
    entropies = {name: float(entropy(weight_row)) for name, weight_row in weights.items()}  # nats
    with row(len(weights), lines_below=3) as charts:  # the metrics under the charts
        for name, weight_row in weights.items():
            subtitle = (f"entropy {entropies[name]:.3f} nats",)
            bar_block(charts, weight_row, labels, value_title="weight", label_title="logit", title=name, subtitle=subtitle)
    if not presenting():  # a slide shows the charts alone (their tooltips give each weight)
        # Made when opened: st.table's code (0.8 MB) would be the last script a new tab waits for.
        with st.expander("Numbers", key="temperature_numbers", on_change="rerun") as numbers:
            if numbers.open:
                table = pd.DataFrame(
                    [[f"{value:.2f}" for value in logits] + [""]]
                    + [[f"{value:.2f}" for value in weights[name]] + [f"{entropies[name]:.3f}"] for name in distributions],
                    index=["logits x", *distributions],
                    columns=[*labels, "entropy (nats)"],
                )
                st.table(table)
    yours = f"your scale s = {scale:g}"
    left, right = st.columns(2)
    left.metric(f"Entropy of softmax({scale:g}·x)", f"{entropies[yours]:.3f} nats", help=f"At most log 6 = {math.log(6):.3f}.")
    right.metric("Normalized entropy (1 = uniform, 0 = one-hot)", f"{float(normalized_entropy(weights[yours])):.3f}")

if slides.show(2):
    st.markdown(
        "If q and k have independent entries of mean 0 and variance 1, "
        r"$q \cdot k = q_1 k_1 + \dots + q_{d_k} k_{d_k}$ sums d_k terms of variance 1: **Var(q·k) = d_k**, "
        "so scores grow like √d_k. Dividing by √d_k brings the variance back to **1** for every head size."
    )
    at_d_k = D_K_VALUES.index(d_k)
    with row(1, lines_below=1, aside=METRIC_WIDTH) as charts:  # the metrics beside the chart, the caption under it
        chart_block(
            charts,
            MAX_WIDTH,
            LINE_HEIGHT,
            lines,
            d_k_axis,
            {"q·k (unscaled)": variance.unscaled.numpy(), "q·k / √d_k": variance.scaled.numpy()},
            theory={"q·k (unscaled)": variance.theory_unscaled.numpy(), "q·k / √d_k": variance.theory_scaled.numpy()},
            x_title="d_k",
            y_title="variance",
            log_x=True,
            log_y=True,
            marker=d_k,
            title="Measured variance (points) against theory (dashed lines)",
        )
        with st.container(width=METRIC_WIDTH):
            st.metric(f"Var(q·k) at d_k = {d_k}", f"{float(variance.unscaled[at_d_k]):.2f}", help=f"Theory: {d_k}.")
            st.metric(f"Var(q·k / √{d_k})", f"{float(variance.scaled[at_d_k]):.3f}", help="Theory: 1.")
    st.caption(f"Monte Carlo with {VARIANCE_SAMPLES:,} random (q, k) pairs; each d_k uses their first d_k entries.")

if slides.show(3):
    st.markdown(
        f"One random query, {saturation.n_keys} random keys, {SATURATION_SAMPLES:,} times per d_k. Unscaled, softmax "
        "**saturates** as d_k grows: entropy → 0, largest weight → 1, its Jacobian (how far weights move with the "
        "scores) → 0, so **gradients vanish**. Scaled, all three stay put."
    )
    curves = {  # title: (field, y title no longer than a short plot is high: a longer one pushes the chart's title up)
        "Normalized entropy": ("normalized_entropy", "normalized entropy"),
        "Largest weight": ("max_weight", "largest weight"),
        "Norm of the softmax Jacobian": ("jacobian_norm", "Jacobian norm"),
    }
    with row(len(curves), lines_below=3) as charts:  # the formula under the charts
        for title, (field, y_title) in curves.items():
            measured = {
                "unscaled": getattr(saturation.unscaled, field).numpy(),
                "÷ √d_k": getattr(saturation.scaled, field).numpy(),
            }
            options = {"x_title": "d_k", "y_title": y_title, "log_x": True, "marker": d_k, "title": title}
            chart_block(charts, LINE_WIDTH, LINE_HEIGHT, lines, d_k_axis, measured, **options)
    st.latex(
        r"\frac{\partial\,\mathrm{softmax}(z)}{\partial z} = \operatorname{diag}(p) - p\,p^\top"
        r" \;\to\; 0 \text{ as } p \to \text{one-hot}"
    )

if slides.show(4):
    tokens = tokens_from_text(values.text, MAX_TOKENS, DEFAULT_SENTENCE)
    steps = sentence_attention(tokens, d_k, values.seed, scale)
    st.markdown(
        f"Toy embeddings projected to d_k = {d_k}, with the scores multiplied by s / √d_k = {scale:g} / {math.sqrt(d_k):g}. "
        f"Leaving out the ÷√d_k would be the same as s = {scale * math.sqrt(d_k):g} here."
    )
    if len(tokens) == 1:
        st.info("With one token there is only one key: its weight is 1 at any scale. Type a longer sentence to compare.")
    n = len(tokens)
    with row(2) as charts:
        matrix_step(
            charts,
            "Attention weights",
            rf"A = \operatorname{{softmax}}\!\left({scale:g} \cdot \frac{{Q K^\top}}{{\sqrt{{{d_k}}}}}\right)",
            steps.weights,
            tokens,
            tokens,
            kind="weights",
            row_title="query",
            col_title="key",
        )
        bar_block(
            charts,
            entropy(steps.weights),
            tokens,
            value_title="entropy (nats)",
            label_title="query",
            title="Entropy of each row",
            subtitle=(f"uniform over {n} keys: log {n} = {math.log(n):.3f} nats; one-hot: 0",),
        )

page.publish(PARAMS)
