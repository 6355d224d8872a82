"""Decoding view: what attention costs when a model writes — the KV cache, and MHA against GQA, MQA and MLA."""

import numpy as np
import pandas as pd
import streamlit as st
import torch

from attn_core import attend, causal_mask
from attn_core.decoding import MODELS, cache_outgrows_weights, kv_cache_bytes, layouts
from attn_core.examples import CAT_SAT
from attn_core.sweep import DEFAULT_TIME_BUDGET
from attn_core.toy import embed_tokens, qkv_projections
from attn_ui import page, slide, url_state
from attn_ui.charts import LINE_HEIGHT, MAX_WIDTH, lines
from attn_ui.decoding_view import LAYOUT_NAMES, head_groups_block, measured_section
from attn_ui.inputs import escape_markdown, tokens_from_text
from attn_ui.play import current_step, step_controls
from attn_ui.steps import bar_block, chart_block, feature_labels, matrix_step, row, table
from attn_ui.url_state import Param

MAX_TOKENS = 24
TOY_WIDTH, TOY_HEAD = 16, 8  # the step-by-step section's embeddings and head
WIDTHS = (256, 512, 1024, 2048, 4096)
HEAD_COUNTS = (4, 8, 16, 32, 64)
CONTEXTS = tuple(2**k for k in range(10, 18))  # 1k to 128k tokens
SHOWN_CONTEXTS = (8192, 32768, 131072)
GIB = 2**30
PARAMS = url_state.Params(
    Param("text", CAT_SAT + " because it was warm", url_state.text),
    page.SEED,
    Param("step", 1, url_state.Integer(1, MAX_TOKENS)),
    Param("d_model", 512, url_state.Nearest(WIDTHS), url_state.format_number),
    Param("heads", 8, url_state.Nearest(HEAD_COUNTS), url_state.format_number),
    Param("kv_heads", 2, url_state.Integer(1, max(HEAD_COUNTS))),
    Param("batch", 1, url_state.Integer(1, 256)),
    Param("time_budget", DEFAULT_TIME_BUDGET, url_state.Number(1.0, 300.0), url_state.format_number),
)
SLIDES = (
    page.Section("Generation", "Generation: each new token is one query against the cache", parts=2),  # A and K; K and V
    page.Section("Layouts", "MHA, GQA, MQA and MLA at the same width", parts=2),  # the table; who reads what, the bytes
    page.Section("Real models", "The KV caches of real models", parts=2),  # the chart, then the table
    page.Section("Measured", "A step's time and the cache's bytes, measured", parts=3),  # cache or not; windows; bytes
)


values = page.setup(page.DECODING, PARAMS)
slides = page.Slides(
    SLIDES,
    "Decoding: what attention costs when a model writes",
    (
        "A model writes one token at a time. Each new token's query attends to the keys and values of every token "
        "so far, which a **KV cache** keeps so that they are not computed again: the causal mask, read row by row. "
        "At long context the cache, not the T × T matrix, is what fills a GPU's memory; that is why today's models "
        "share keys and values between heads (GQA, MQA) or compress them (MLA)."
    ),
)
with slides.controls:
    st.text_area("Sentence", key="text", help=f"The tokens written one by one in section 1; at most {MAX_TOKENS}.")
    page.SEED.number_input("Seed", help="Seeds the toy embeddings and weights of section 1.")
    PARAMS.d_model.select_slider("Model width C (section 2)", format_func="{:,}".format)
    heads = PARAMS.heads.select_slider("Query heads H", format_func="{:,}".format)
    kv_heads = PARAMS.kv_heads.number_input("GQA's K/V heads G", help="Heads share a K/V head in groups of H / G.")
    batch = PARAMS.batch.number_input("Sequences in a batch (section 3)")
    time_budget = PARAMS.time_budget.number_input("Time budget (s, section 4)", help="A press of Measure stops after it.")

if slides.show(1):
    tokens = tokens_from_text(values.text, MAX_TOKENS, CAT_SAT)
    t = len(tokens)
    step = current_step(t)
    keys = "the one key" if step == 1 else f"the {step} keys"
    lead = f"Step {step}, “{tokens[step - 1]}”: its query is row {step}, against {keys} of the cache."
    step_controls(t, label="Generation step", help="The token being written.", lead=escape_markdown(lead))
    x = embed_tokens(tokens, TOY_WIDTH, values.seed)  # (T, C)
    w_q, w_k, w_v = qkv_projections(TOY_WIDTH, TOY_HEAD, values.seed)
    steps = attend(x @ w_q, x @ w_k, x @ w_v, mask=causal_mask(t))  # (T, T) weights, each row the cache at its step
    # The weights and both caches; on a slide two a part (the weights and K, then K and V): a 16-word sentence's three
    # do not fit a projector side by side.
    shown = [name for name, parts in (("A", (1,)), ("K", (1, 2)), ("V", (2,))) if any(map(slides.part, parts))]
    with row(len(shown)) as charts:  # on a slide, two lines of lead beside the step's slider
        if "A" in shown:
            weights = steps.weights.masked_fill(~causal_mask(t), float("-inf"))  # not yet written: shown as masked
            matrix_step(
                charts,
                "Attention weights, causal",
                r"A = \operatorname{softmax}(Q K^\top / \sqrt{d_k}), \; j \le i",
                weights,
                tokens,
                tokens,
                kind="weights",
                row_title="query",
                col_title="key",
                highlight=step - 1,
            )
        not_written = torch.arange(t)[:, None] >= step  # (T, 1): the tokens after this step
        for name, entries in (("K", steps.k), ("V", steps.v)):
            if name in shown:
                matrix_step(
                    charts,
                    f"{name} cache after step {step}",
                    rf"{name}_{{1..t}} = X_{{1..t}} W_{name}",
                    entries.masked_fill(not_written, float("-inf")),
                    tokens,
                    feature_labels(TOY_HEAD),
                    shape=(step, TOY_HEAD),
                    row_title="token",
                    col_title="feature",
                    highlight=step - 1,
                )
    if not slide.presenting():
        st.caption(
            "Each step appends one row to both caches and reads them whole. Without a cache, every step would compute "
            "the keys and values of all earlier tokens again: a step then costs as much as the whole prefix."
        )

if slides.show(2):
    d_model = values.d_model
    problem = None if d_model % heads == 0 else f"{heads} heads do not divide C = {d_model}."
    if problem is None and heads % kv_heads:
        divisors = [g for g in range(1, heads + 1) if heads % g == 0]
        problem = f"GQA's {kv_heads} K/V heads do not divide {heads} heads: try {', '.join(map(str, divisors))}."
    if problem:
        st.warning(problem)
    else:
        found = layouts(d_model, heads, kv_heads)
        rows = [
            {
                "layout": LAYOUT_NAMES[layout.kind],
                "query heads": layout.heads,
                "cached per token": f"latent {layout.latent} + key {layout.cached_values - layout.latent}"
                if layout.latent
                else f"{layout.kv_heads} K/V heads × 2 × {d_model // heads}",
                "values a token": f"{layout.cached_values:,}",  # every number with its thousands separated
                "bytes a token (bf16)": f"{2 * layout.cached_values:,}",
                "parameters": f"{layout.parameters:,}",
            }
            for layout in found
        ]
        slide.lead(
            f"One attention layer of width C = {d_model} with {heads} query heads, laid out four ways. The cache keeps, "
            "per token and layer, the keys and values of each K/V head, or MLA's latent and shared key part.",
            f"C = {d_model}, {heads} query heads: what each layout caches per token and layer.",
        )
        if slides.part(1):
            table(pd.DataFrame(rows).set_index("layout"), lines_above=1)
        if slides.part(2):
            with row(2, lines_above=1) as charts:
                head_groups_block(charts, found, heads)
                bytes_per_token = np.array([2.0 * layout.cached_values for layout in found])
                bar_block(
                    charts,
                    torch.tensor(bytes_per_token),
                    [LAYOUT_NAMES[layout.kind] for layout in found],
                    value_title="bytes a token (bf16)",
                    label_title="layout",
                    title="KV cache per token and layer",
                )

if slides.show(3):
    slide.lead(
        f"The cache of real models, in bf16, for {batch} sequence{'s' if batch > 1 else ''} of each length, beside the "
        "model's weights (dashed): where the cache outgrows the model. Past the context a model was trained to read (the "
        "table's last column), the lengths show what its layout would cache.",
        f"KV cache in bf16 for a batch of {batch}; dashed: the model's weights.",
    )
    shown = [key for key in MODELS if key != "deepseek-v2-mha"] + ["deepseek-v2-mha"]
    rows = []
    for key in shown:
        model = MODELS[key]
        per_token = kv_cache_bytes(model.shape, 1)
        rows.append(
            {
                "model": model.name,
                "KiB a token": f"{per_token / 1024:,.1f}",
                **{f"{n // 1024}k tokens (GiB)": f"{per_token * n * batch / GIB:,.1f}" for n in SHOWN_CONTEXTS},
                "weights (GiB)": f"{2 * model.parameters / GIB:,.1f}",
                "cache > weights from": f"{cache_outgrows_weights(model, batch):,} tokens",
                "context read (tokens)": f"{model.context:,}",
            }
        )
    cache = {MODELS[key].name: np.array([kv_cache_bytes(MODELS[key].shape, n) * batch / GIB for n in CONTEXTS]) for key in shown}
    weights = {MODELS[key].name: np.full(len(CONTEXTS), 2 * MODELS[key].parameters / GIB) for key in shown}
    if slides.part(1):
        with row(1, lines_above=1) as charts:
            chart_block(
                charts,
                MAX_WIDTH,
                LINE_HEIGHT,
                lines,
                np.array(CONTEXTS, dtype=float),
                cache,
                theory=weights,
                x_title="tokens a sequence",
                y_title="GiB",
                log_x=True,
                log_y=True,
                title=f"KV cache of {batch} sequence{'s' if batch > 1 else ''} against its length",
            )
    if slides.part(2):
        table(pd.DataFrame(rows).set_index("model"), lines_above=1)
    if not slide.presenting():
        st.caption(" · ".join(f"{MODELS[key].name}: {MODELS[key].source}" for key in shown))


if slides.show(4):
    measured_section(slides, time_budget)

page.publish(PARAMS)
