"""Positions & geometry view: what self-attention cannot see without positions, and where its queries meet its keys."""

import streamlit as st
import torch

from attn_core import default_scale, embed_tokens, qkv_projections
from attn_core.examples import CAT_SAT, CONTEXT_SENTENCES, CONTEXT_WORD
from attn_core.geometry import (
    POSITION_KINDS,
    by_distance,
    head_queries_keys,
    order_check,
    pair_rotation,
    position_scores,
    query_key_map,
    shuffled_order,
    weights_from,
)
from attn_core.real_model import MAX_TOKENS as MODEL_TOKENS
from attn_core.real_model import N_HEADS, N_LAYERS
from attn_ui import page, slide, url_state
from attn_ui.charts import label_around
from attn_ui.geometry_view import cached_word_paths as word_paths
from attn_ui.geometry_view import (
    check_line,
    check_metrics,
    cosines_block,
    distance_charts,
    map_block,
    order_blocks,
    paths_block,
    position_grids,
    rotation_block,
    shuffle,
)
from attn_ui.inputs import escape_markdown, model_tokens, tokens_from_text, word_and_sentences
from attn_ui.model import cached_word_across_contexts, forward, load_model
from attn_ui.url_state import Param

MAX_TOKENS = 24  # tokens of the toy sentence: a 24 × 24 grid of positions still labels every one
D_MODEL = 32  # C of the toy embeddings
D_K_VALUES = (2, 4, 8, 16, 32)  # even: RoPE turns pairs of features
MAX_POSITION = 24  # the rotation's step-through goes this far
MAX_SENTENCES = 4  # sentences of the "bank" map
MAP_SOURCES = {"toy": "Toy weights", "real": "MiniLM head"}
PARAMS = url_state.Params(
    Param("text", CAT_SAT, url_state.text),
    page.SEED,
    Param("d_k", 8, url_state.Nearest(D_K_VALUES), url_state.format_number),
    Param("shuffle", 1, url_state.Integer(0, 2**31 - 1)),  # 0: the original order
    Param("positions", False, url_state.on_off, url_state.format_on_off),
    Param("query", 1, url_state.Integer(0, MAX_TOKENS - 1)),
    Param("key", 0, url_state.Integer(0, MAX_TOKENS - 1)),
    Param("pair", 0, url_state.Integer(0, max(D_K_VALUES) // 2 - 1)),
    Param("m", 3, url_state.Integer(0, MAX_POSITION)),
    Param("map", "toy", url_state.Choice(MAP_SOURCES)),
    Param("scaled", True, url_state.on_off, url_state.format_on_off),
    Param("layer", 0, url_state.Integer(0, N_LAYERS - 1)),
    Param("head", 2, url_state.Integer(0, N_HEADS - 1)),
    Param("top", 2, url_state.Integer(1, 5)),
    Param("word", CONTEXT_WORD, url_state.text),
    Param("sentences", "\n".join(CONTEXT_SENTENCES[:2]), url_state.text),
)
SLIDES = (
    page.Section("Order", "Order blindness: shuffle the words", parts=2),  # the weights, then the context vectors
    page.Section("Two positions", "Sinusoidal positions against RoPE", parts=2),  # the grids, then the distance curves
    page.Section("Rotation", "RoPE, one pair of features at a time"),
    page.Section("Query-key map", "Where queries meet keys"),
    page.Section("Bank", "Static to contextual: one word through the layers", parts=2),  # the map, then the cosines
)

TITLE = "Positions & geometry: what attention cannot see, and where queries meet keys"
INTRO = (
    "Self-attention compares every token with every other by content alone: without positions it treats a "
    "sentence as a **set**. This view shows that, two ways of putting positions in (added sinusoids and rotary "
    "embeddings), and the attention of one head as a picture: its queries and keys as points of one map."
)

values = page.setup(page.POSITIONS, PARAMS)
slides = page.Slides(SLIDES, TITLE, INTRO)
with slides.controls:
    st.text_area("Sentence", key="text", help=f"Words, punctuation and emoji each become a token; at most {MAX_TOKENS}.")
    page.SEED.number_input("Seed", help="Seeds the toy embeddings and W_Q, W_K, W_V.")
    d_k = PARAMS.d_k.select_slider("Head size d_k", help="Even: RoPE turns pairs of features.")

tokens = tokens_from_text(values.text, MAX_TOKENS, CAT_SAT)
t, seed = len(tokens), values.seed
x = embed_tokens(tokens, D_MODEL, seed)  # (T, C)
w_q, w_k, w_v = qkv_projections(D_MODEL, d_k, seed)  # (C, d_k) each
labels = [f"{i}: {token}" for i, token in enumerate(tokens)]
# The real model, loaded once per run where a section on screen uses it (its absence said once, above the sections).
uses_model = slides.current in (5, page.ALL_SECTIONS) or (slides.current == 4 and values.map == "real")
model = load_model() if uses_model else None
query = url_state.keep_in("query", range(t), min(1, t - 1))  # the word pair of sections 2 and 3
key = url_state.keep_in("key", range(t), 0)

if slides.show(1):
    slide.lead(
        "Shuffle the words: without positions every token keeps its own query, key and value, so its row of weights "
        "and its context vector move with it, unchanged. **A(P X) = P A(X)**: attention is permutation-equivariant. "
        "Add sinusoidal positions to X and a token's vector depends on its slot: the outputs change."
    )
    with slides.section_controls(), st.container(horizontal=True, vertical_alignment="center"):
        st.button("Shuffle", icon=":material/shuffle:", key="shuffle_button", on_click=shuffle, args=(t,), type="primary")
        st.button("Original order", key="unshuffle", on_click=st.session_state.update, kwargs={"shuffle": 0})
        st.toggle("Add sinusoidal positions to X", key="positions")
    order = shuffled_order(t, values.shuffle)
    checks = {positions: order_check(x, w_q, w_k, w_v, order, positions) for positions in (False, True)}
    check = checks[values.positions]
    moved = " ".join(tokens[i] for i in order.tolist())
    unmoved = " (the original order: press *Shuffle*)" if torch.equal(order, torch.arange(t)) else ""
    shuffled = f"Shuffled: **{escape_markdown(moved)}**{unmoved}"
    above = slide.presenting()  # on a slide, the check is the second line above the charts; elsewhere it follows them
    st.markdown(f"{shuffled}  \n{check_line(checks)}" if above else shuffled)
    if slides.part(1):
        order_blocks(check, tokens, "weights")
    if slides.part(2):
        order_blocks(check, tokens, "context")
    if not above:
        check_metrics(checks)

if slides.show(2):
    if slides.part(1):
        slide.lead(
            f"One query word and one key word, placed at every pair of positions (m, n) of a {t}-token sentence. "
            "**Sinusoidal** encodings are added to X before W_Q and W_K: the score depends on m and n. **RoPE** turns "
            "q by m·θ and k by n·θ: it depends on m − n only, so each diagonal of its grid is one colour.",
            "Under RoPE the score depends on m − n only: each diagonal is one colour.",
        )
    with slides.section_controls(), st.container(horizontal=True):
        st.selectbox("Query word", range(t), format_func=labels.__getitem__, key="query", width=220)
        st.selectbox("Key word", range(t), format_func=labels.__getitem__, key="key", width=220)
    grids = {kind: position_scores(x[query], x[key], w_q, w_k, t, kind) for kind in POSITION_KINDS}  # (T, T) each
    distance = {kind: by_distance(grid) for kind, grid in grids.items()}
    if slides.part(1):
        position_grids(grids, tokens[query], tokens[key])
    if slides.part(2):
        distance_charts(distance, d_k)
        st.caption(
            f"Along each diagonal m − n = δ the sinusoidal scores spread by up to {distance['sinusoidal'].spread:.3f}; "
            f"RoPE's by {distance['rope'].spread:.1e} (rounding). Right: how much a vector still points its own way, on "
            "average, once RoPE has turned it by δ positions. With few pairs it swings back and forth; with many (d_k = 128) "
            "it falls off steadily: far apart, a query and a key tend to score less."
        )

if slides.show(3):
    slide.lead(
        "RoPE splits q into pairs of features (2i, 2i+1) and turns pair i by the angle m·θ_i at position m, "
        "θ_i = 10000^(−2i/d_k): the first pairs turn fast, the last ones slowly. A turn keeps the vector's length.",
        "Pair i of q turns by m·θ_i at position m, θ_i = 10000^(−2i/d_k).",
    )
    with slides.section_controls(), st.container(horizontal=True):
        pair_index = url_state.keep_in("pair", range(d_k // 2), 0)
        st.selectbox("Pair i", range(d_k // 2), key="pair", width=120)
        if slides.current != page.ALL_SECTIONS:  # otherwise section 2's choice
            st.selectbox("Query word", range(t), format_func=labels.__getitem__, key="query", width=220)
        PARAMS.m.slider("Position m")
    rotation = pair_rotation(x[query] @ w_q, pair_index, MAX_POSITION + 1)
    rotation_block(rotation, values.m)

if slides.show(4):
    slide.lead(
        "After AttentionViz (Yeh et al., 2023): the keys are moved so that their mean is the queries' mean, and queries "
        "scaled by c, keys by 1/c, so that both have the same mean length. **Neither changes a weight** (softmax ignores "
        "a constant added to a row; c·q · k/c = q · k). A PCA then draws all of them in one plane.",
        "Queries and keys, moved and scaled without changing a weight, in one plane.",
    )
    with slides.section_controls(), st.container(horizontal=True, vertical_alignment="bottom"):
        source = PARAMS.map.segmented_control("Queries and keys of", format_func=MAP_SOURCES.get, required=True)
        if source == "toy":
            st.toggle("Divide the scores by √d_k", key="scaled")
        else:
            PARAMS.layer.selectbox("Layer", width=110)
            PARAMS.head.selectbox("Head", width=110)
        PARAMS.top.slider("Lines per query (its strongest keys)", width=260)
    found = None
    if source == "toy":
        q, k = x @ w_q, x @ w_k  # (T, d_k) each
        scale = default_scale(d_k) if values.scaled else 1.0
        found = query_key_map(q, k, weights_from(q, k, scale), values.top)
        map_tokens = tokens
        title = f"Toy head, d_k = {d_k}, " + ("softmax(QKᵀ/√d_k)" if values.scaled else "softmax(QKᵀ), unscaled")
    elif model is not None:
        encoded = model_tokens(model, values.text, MODEL_TOKENS, CAT_SAT)
        run = forward(model, tuple(encoded.texts), MODEL_TOKENS)
        layer, head = values.layer, values.head
        q, k, weights = head_queries_keys(run, layer, head)
        found = query_key_map(q, k, weights, values.top)
        map_tokens, title = encoded.tokens[0], f"MiniLM, layer {layer}, head {head}"
    if found is not None:
        map_block(found, map_tokens, title)
        slide.lead(
            "The map keeps which queries and keys lie close in the two directions where they differ most "
            f"({float(found.explained.sum()):.0%} of their variance here); it loses the rest of the {q.shape[-1]} "
            "dimensions, and a dot product is not a distance: nearness in the plane is a hint, the weights decide."
        )

if slides.show(5):
    if slides.part(1):
        slide.lead(
            "A word starts as one row of the embedding table, the same in every sentence; each layer mixes in its "
            "neighbours. Below, the word's vector in each sentence at every stage, in one map: the paths start at the "
            "same point and part as the context sinks in.",
            "One row of the embedding table, then each layer mixes in the context.",
        )
    chosen = word_and_sentences(slides.section_controls(), values, MAX_SENTENCES)
    if model is not None:
        try:
            paths = word_paths(model, chosen, values.word)
            contexts = cached_word_across_contexts(model, chosen, values.word)
        except ValueError as problem:
            st.info(escape_markdown(str(problem)))
        else:
            names = [label_around(sentence, paths.word) for sentence in paths.sentences]  # each keeps the word
            if slides.part(1):
                paths_block(paths, names)
            if slides.part(2):
                cosines_block(contexts, names)
                st.page_link(
                    page.REAL_MODEL.path,
                    label="The same cosines in the Real model view",
                    icon=page.REAL_MODEL.icon,
                    query_params={"slide": "4", "word": values.word, "sentences": "\n".join(chosen)},
                )

page.publish(PARAMS)
