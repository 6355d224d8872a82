"""Pipeline view: step by step from token embeddings to context vectors."""

import streamlit as st

from attn_core import available_devices, sdpa_difference
from attn_core.examples import DEFAULT_SENTENCE
from attn_core.real_model import MODEL_NAME, N_HEADS, N_LAYERS, WIDTH
from attn_core.text import last_word
from attn_core.walkthrough import FIXED_SIZES, PRESETS, build_real_walkthrough, build_walkthrough
from attn_ui import page, url_state
from attn_ui.inputs import fixed_size, model_tokens, tokens_from_text
from attn_ui.model import load_model
from attn_ui.steps import feature_labels, matrix_step, one_query_blocks, projection_steps, row, score_steps
from attn_ui.url_state import Param

MAX_TOKENS = 32
SKIPPED = "The “Playing Outside” example of the source gives each word's q, k and v vectors directly, so the {} skipped."
PRESET_LABELS = {
    "custom": "Your sentence",
    "playing-outside": "Playing Outside (q, k, v given, d_k = 4)",
    "cat-sat": "The cat sat on the mat",
    "random-batch": "Batch of 6 sentences (B=6, T=8, C=32, d=16)",
}
WEIGHTS = {"toy": "Toy (seeded random)", "minilm": f"{MODEL_NAME}, one trained head"}
PARAMS = url_state.Params(
    Param("weights", "toy", url_state.Choice(WEIGHTS)),
    Param("layer", 0, url_state.Integer(0, N_LAYERS - 1)),
    Param("head", 0, url_state.Integer(0, N_HEADS - 1)),
    Param("preset", "custom", url_state.Choice(PRESETS)),
    Param("text", DEFAULT_SENTENCE, url_state.text),
    Param("source", "", url_state.text),
    Param("d_model", 16, url_state.Integer(2, 256)),
    Param("d_k", 8, url_state.Integer(1, 128)),
    page.SEED,
    Param("scale", True, url_state.on_off, url_state.format_on_off),
    Param("pos", False, url_state.on_off, url_state.format_on_off),
    Param("batch", 0, url_state.Integer(0, 5)),
    Param("query", None, url_state.Integer(0, MAX_TOKENS - 1)),
    Param("device", "cpu", url_state.Choice(available_devices())),
)

SLIDES = (
    page.Section("Embeddings", "Token embeddings"),
    page.Section("Projections", "Projections to queries, keys and values"),
    page.Section("Q, K, V", "Queries, keys and values"),
    page.Section("Scores", "Scores, scaling and softmax", parts=2),
    page.Section("Context", "Context vectors"),
    page.Section("One query", "One query token"),
    page.Section("Check", "Correctness"),
)

values = page.setup(page.PIPELINE, PARAMS)
slides = page.Slides(
    SLIDES,
    "Pipeline: from words to context vectors",
    (
        "Self-attention turns each token's embedding into a **context vector** that mixes in the tokens "
        "it finds relevant. Each token plays three roles: a **query** (what am I looking for?), "
        "a **key** (what do I offer?) and a **value** (what do I pass on?). Follow the numbers below."
    ),
)


with slides.controls:
    real = PARAMS.weights.radio("Weights", format_func=WEIGHTS.get) == "minilm"
    if real:
        left, right = st.columns(2)
        with left:
            layer = PARAMS.layer.selectbox("Layer")
        with right:
            head = PARAMS.head.selectbox("Head")
    preset = PARAMS.preset.selectbox("Example", format_func=PRESET_LABELS.get, disabled=real)
    custom = preset == "custom" or real
    st.text_area("Sentence", key="text", disabled=not custom, help="Words, punctuation and emoji each become a token.")
    st.text_input(
        "Keys and values from another sentence",
        key="source",
        disabled=not custom or real,
        placeholder="empty: self-attention",
        help="Cross-attention, as in an encoder-decoder: queries come from the sentence above, keys and values from this one.",
    )
    if real:
        fixed_size("Model width C", WIDTH, f"{MODEL_NAME}'s width.")
        fixed_size("Head size d_k", WIDTH // N_HEADS, f"{MODEL_NAME}'s head size: C / {N_HEADS} heads.")
    elif preset in FIXED_SIZES:
        fixed_width, fixed_head = FIXED_SIZES[preset]
        fixed_size("Model width C", fixed_width, "This example gives q, k and v directly: no embeddings, no C.")
        fixed_size("Head size d_k", fixed_head, "Fixed by this example.")
    else:
        PARAMS.d_model.number_input("Model width C")
        PARAMS.d_k.number_input("Head size d_k")
    page.SEED.number_input("Seed", disabled=preset == "playing-outside" or real)
    scaled = st.toggle("Divide scores by √d_k", key="scale")
    st.toggle("Add position encodings to X", key="pos", disabled=preset == "playing-outside" or real)
    if len(available_devices()) > 1:
        PARAMS.device.selectbox("Device", help="Where the tensors live and the engine runs.")

model = load_model() if real else None
if real and model is None:
    st.info("The toy weights are shown instead.")
if model is not None:
    encoded = model_tokens(model, values.text, MAX_TOKENS, DEFAULT_SENTENCE)
    walk = build_real_walkthrough(model, encoded, layer, head, scaled=scaled)
else:
    tokens = tokens_from_text(values.text, MAX_TOKENS, DEFAULT_SENTENCE) if custom else []
    source_tokens = tokens_from_text(values.source, MAX_TOKENS) if custom else []
    walk = build_walkthrough(
        preset,
        tokens,
        values.d_model,
        values.d_k,
        seed=values.seed,
        scaled=scaled,
        positional=values.pos,
        source_tokens=source_tokens,
        device=values.device,
    )
steps = walk.steps
n_sentences = len(walk.query_tokens)
if n_sentences > 1:
    sentence_names = [" ".join(tokens) for tokens in walk.query_tokens]
    url_state.keep_in("batch", range(n_sentences), 0)
    st.selectbox(
        f"The batch holds B = {n_sentences} sentences; every step runs on all of them at once. Show sentence",
        range(n_sentences),
        format_func=lambda b: f"{b}: {sentence_names[b]}",
        key="batch",
    )
b = min(values.batch, n_sentences - 1)
queries, keys = walk.query_tokens[b], walk.key_tokens[b]
cross = walk.x_source is not None
d_k = steps.q.shape[-1]
scale_text = rf"\frac{{1}}{{\sqrt{{{d_k}}}}}" if scaled else r"1 \;\text{(unscaled)}"

if slides.show(1):
    if walk.x is None:
        st.info(SKIPPED.format("embedding and projection steps are"))
    elif model is not None:
        layer_input = (
            "the embedding layer's output (word piece + position embeddings, normalized)"
            if layer == 0
            else f"layer {layer - 1}'s output"
        )
        st.markdown(f"X is what enters layer {layer} of {MODEL_NAME}: {layer_input}.")
    else:
        st.markdown(
            "Each token is looked up in an embedding table: a word always gets the same row (like word2vec). "
            + (
                "Position encodings are added, so equal words at different places differ."
                if values.pos
                else "Nothing says *where* it stands: a repeated word gets identical rows (see *Position encodings*)."
            )
        )
    if walk.x is not None:
        with row(2 if cross else 1) as charts:
            matrix_step(
                charts,
                "X, the token embeddings" if model is None else f"X, the hidden states entering layer {layer}",
                r"X \in \mathbb{R}^{T \times C}",
                walk.x[b],
                queries,
                feature_labels(walk.x.shape[-1]),
                shape=tuple(walk.x.shape),
            )
            if cross:
                matrix_step(
                    charts,
                    "X_src, the other sentence's embeddings",
                    r"X_{src} \in \mathbb{R}^{T_k \times C}",
                    walk.x_source[b],
                    keys,
                    feature_labels(walk.x_source.shape[-1]),
                    shape=tuple(walk.x_source.shape),
                )

if slides.show(2):
    if walk.x is None:
        st.info(SKIPPED.format("projection step is"))
    else:
        projections = (walk.w_q, walk.w_k, walk.w_v), feature_labels(walk.x.shape[-1]), feature_labels(d_k)
        st.markdown(
            "Three learned matrices project every embedding to a query, a key and a value of size d_k."
            + (
                f" Here they are head {head}'s slices of the layer's learned projections, each with a bias vector b "
                "added to every row. The other heads use other slices."
                if model is not None
                else ""
            )
        )
        if model is None:
            projection_steps(*projections)
        else:  # three matrices of 12,288 cells: drawn on demand, so that switching to the model answers at once
            label = f"W_Q, W_K and W_V: {walk.x.shape[-1]} × {d_k} each"
            with st.expander(label, key="real_projections", on_change="rerun") as opened:
                if opened.open:
                    projection_steps(*projections)

if slides.show(3):
    source_name = "X_{src}" if cross else "X"
    with row(3) as charts:
        for name, tensor, labels in zip(("Q", "K", "V"), (steps.q, steps.k, steps.v), (queries, keys, keys), strict=True):
            if walk.x is None:
                formula = rf"{name}\ \text{{(given)}}"
            else:
                bias = rf" + b_{name}" if walk.b_q is not None else ""
                formula = rf"{name} = {'X' if name == 'Q' else source_name}\,W_{name}{bias}"
            matrix_step(charts, name, formula, tensor[b], labels, feature_labels(tensor.shape[-1]), shape=tuple(tensor.shape))

if slides.show(4):
    # Two token-by-token matrices a slide, under a one-line lead: three of 16 tokens do not fit a 1024-px window.
    if slides.part(1):
        st.markdown("Every query is compared with every key by a dot product. Large scores mean a good match.")
        with row(2, lines_above=1) as charts:
            score_steps(charts, steps, b, queries, keys, scale_text, shown=slice(0, 2))
    if slides.part(2):
        st.markdown("Softmax turns each query's row of scaled scores into weights that sum to 1.")
        with row(1, lines_above=1) as charts:
            score_steps(charts, steps, b, queries, keys, scale_text, shown=slice(2, 3))

if slides.show(5):
    st.markdown("Each context vector is the weighted sum of the value vectors, with that query's row of A as weights.")
    with row() as charts:
        matrix_step(
            charts,
            "Context",
            r"Z = A V",
            steps.context[b],
            queries,
            feature_labels(steps.context.shape[-1]),
            shape=tuple(steps.context.shape),
        )

if slides.show(6):
    url_state.keep_index("query", len(queries), last_word(queries), f"the sentence has {len(queries)} tokens")
    with slides.section_controls():
        query = st.selectbox("Query token", range(len(queries)), format_func=lambda i: f"{i}: {queries[i]}", key="query")
    one_query_blocks(queries[query], keys, steps.scaled[b, query], steps.weights[b, query], steps.context[b, query])

if slides.show(7):
    row_sums = steps.weights.sum(dim=-1)
    left, right = st.columns(2)
    left.metric("Largest |row sum − 1| of the weights", f"{float((row_sums - 1).abs().max()):.1e}")
    sdpa = "The context vectors against torch.nn.functional.scaled_dot_product_attention on the same q, k, v, mask and scale."
    right.metric("Largest difference from torch's SDPA", f"{sdpa_difference(steps):.1e}", help=sdpa)
    st.caption(
        "Both on every sentence of the batch, in float32. PyTorch's fused kernel computes the same "
        "formula in a different order, so differences around 1e-7 are rounding."
    )

page.publish(PARAMS)
