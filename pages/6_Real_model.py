"""Real model view: a trained transformer (all-MiniLM-L6-v2), head by head, run by attn_core's attention."""

import math
from contextlib import nullcontext

import streamlit as st

from attn_core import entropy
from attn_core.examples import (
    CONTEXT_SENTENCES,
    CONTEXT_WORD,
    COREFERENCE_SENTENCES,
    COREFERENCE_WORDS,
    PADDED_SENTENCES,
    PARAPHRASE_PAIRS,
    UNRELATED_SENTENCES,
)
from attn_core.real_model import (
    MAX_TOKENS,
    MODEL_NAME,
    N_HEADS,
    N_LAYERS,
    closest_heads,
    head_entropy,
    head_similarity,
    previous_token_share,
    renormalised,
    visible_positions,
)
from attn_core.real_model.temperature import SCOPES
from attn_core.text import last_word
from attn_ui import page, slide, url_state
from attn_ui.charts import PICKED_HEAD, head_thumbnails
from attn_ui.draw import draw, selected
from attn_ui.inputs import escape_markdown, model_tokens
from attn_ui.model import (
    forward,
    load_model,
)
from attn_ui.steps import bar_block, heatmap_block, note_slot, row, thumbnails_size
from attn_ui.trained_sections import SINK_TOKENS, TAUS, padding_section, sinks_section, temperature_section
from attn_ui.url_state import Param
from attn_ui.word_sections import coreference_section, embeddings_section

GRID_TOKENS = 32  # the overview of all heads draws at most this many tokens
DEFAULT_LAYER, DEFAULT_HEAD = 0, 2  # a previous-token head: the clearest pattern of the model
PARAMS = url_state.Params(
    Param("text", COREFERENCE_SENTENCES[0], url_state.text),
    Param("hide", False, url_state.on_off, url_state.format_on_off),
    Param("layer", DEFAULT_LAYER, url_state.Integer(0, N_LAYERS - 1)),
    Param("head", DEFAULT_HEAD, url_state.Integer(0, N_HEADS - 1)),
    Param("token", None, url_state.Integer(0, MAX_TOKENS - 1)),
    Param("text2", COREFERENCE_SENTENCES[1], url_state.text),
    Param("coref", ", ".join(COREFERENCE_WORDS), url_state.text),
    Param("word", CONTEXT_WORD, url_state.text),
    Param("sentences", "\n".join(CONTEXT_SENTENCES), url_state.text),
    Param("tau", 1.0, url_state.Nearest(TAUS), url_state.format_number),
    Param("tau_heads", "all", url_state.Choice(SCOPES)),
    Param("pairs", "\n".join([*(" | ".join(pair) for pair in PARAPHRASE_PAIRS), *UNRELATED_SENTENCES]), url_state.text),
    Param("padded", "\n".join(PADDED_SENTENCES), url_state.text),
    Param("sink", "cls", url_state.Choice(SINK_TOKENS)),
    Param("sink_heads", "all", url_state.Choice(SCOPES)),
)


THUMBNAILS = "thumbnails"  # the key of the model view's chart
SIMILARITY = "Every head's similarity to this one"


def open_picked_head() -> None:
    """A click on a thumbnail: its layer and head in the head view, which opens unless every section is on screen."""
    picked = selected(THUMBNAILS, PICKED_HEAD)
    if picked:
        st.session_state.update(layer=picked[0]["layer"], head=picked[0]["head"])
        page.bring_into_view(1)


SLIDES = (
    page.Section("One head", "Head view", parts=4),  # on slides: its heatmap, its bars, its numbers, its similar heads
    page.Section("All heads", "Model view: every head of every layer"),
    page.Section("Coreference", "Coreference: what does “it” refer to?", parts=2),  # the table, then the heatmap
    page.Section("Embeddings", "Static vs contextual embeddings", parts=2),  # the text, then the chart
    page.Section("Temperature", "Temperature inside the trained model", parts=3),  # the head, the sweep, the cosines
    page.Section("Padding", "Padding and causal masks on the trained model", parts=2),
    page.Section("Sinks", "Where the attention parks", parts=2),  # the shares, then a key hidden
)

values = page.setup(page.REAL_MODEL, PARAMS)
slides = page.Slides(
    SLIDES,
    "Real model: what a trained transformer attends to",
    (
        f"**{MODEL_NAME}** is a small BERT encoder, fine-tuned on over a billion sentence pairs to compare sentences: "
        "6 layers of 12 heads, each token a vector of 384 numbers, each head working on 32 of them. "
        "Every number below comes from its real weights, run through the same attention function as the other views "
        "and checked against Hugging Face `transformers`."
    ),
)
with slides.controls:
    st.text_area("Sentence", key="text", help=f"Split into the model's word pieces; at most {MAX_TOKENS}.")
    hide = st.toggle("Hide [CLS] and [SEP] from the charts", key="hide")

model = load_model()
if model is None:
    page.publish(PARAMS)
    st.stop()

n_layers, n_heads = model.config.n_layers, model.config.n_heads
layer_names, head_names = [f"layer {i}" for i in range(n_layers)], [f"head {i}" for i in range(n_heads)]
encoded = model_tokens(model, values.text, MAX_TOKENS, COREFERENCE_SENTENCES[0])
run = forward(model, tuple(encoded.texts), MAX_TOKENS)
tokens = encoded.tokens[0]
shown = visible_positions(tokens, hide)
labels = [tokens[i] for i in shown]
weights = run.weights(0)  # (L, H, T, T)
with slides.section_controls():  # on a slide, with the sentence in the Controls: the charts take the screen
    st.markdown(
        f"The model reads **{len(tokens)} word pieces**: `[CLS]` opens every input and `[SEP]` closes it; "
        "a word it does not know whole is split into pieces, the later ones marked `##`."
    )
    if hide:
        st.caption(
            "[CLS] and [SEP] are hidden from the charts, not from the model: it still attends to them (many heads park "
            "much of their attention there). Each row is renormalised over the tokens shown, as exBERT does: a display "
            "choice, not what the model computes."
        )

if slides.show(1):
    pronoun = encoded.positions_of(0, COREFERENCE_WORDS[0])
    url_state.keep_in("token", shown, pronoun[0] if pronoun and pronoun[0] in shown else shown[last_word(labels)])
    with slides.section_controls(), st.container(horizontal=True):
        layer = PARAMS.layer.selectbox("Layer", width=160)
        head = PARAMS.head.selectbox("Head", width=160)
        token = st.selectbox("Attention from token", shown, format_func=lambda i: f"{i}: {tokens[i]}", key="token", width=280)
    head_weights = weights[layer, head]  # (T, T)
    drawn = renormalised(head_weights, shown) if hide else head_weights[shown][:, shown]  # (S, S): the rows shown
    about_the_head = note_slot()  # a caption on the default head, which comes and goes with the head
    if slides.part(3) and (layer, head) == (DEFAULT_LAYER, DEFAULT_HEAD):  # on a slide, with the head's numbers
        share = previous_token_share(run, layer, head)
        about_the_head.caption(
            f"This view opens on layer {layer}, head {head}, a **previous-token head**: on this sentence it gives each "
            f"token's predecessor {share:.0%} of its attention on average, a clean line just below the diagonal. "
            "It is the easiest pattern to see; most other heads spread their attention or park it on [CLS] and [SEP]."
        )
    # On a slide the note on the sentence is in Controls, and the heatmap and the bars each have a slide: 15 tokens
    # side by side do not fit a 1024 × 576 window.
    if slides.part(1) or slides.part(2):
        with row(1 if slide.presenting() else 2, lines_above=0) as charts:
            if slides.part(1):
                heatmap_block(charts, drawn.numpy(), labels, labels, title=f"Layer {layer}, head {head}")
            if slides.part(2):
                bar_block(
                    charts, drawn[shown.index(token)], labels, value_title="weight", title=f"Attention from “{tokens[token]}”"
                )
    if slides.part(3):
        with st.container(horizontal=True, gap="large"):
            entropies = head_entropy(run)  # (L, H)
            st.metric("This head's mean entropy", f"{float(entropies[layer, head]):.2f} nats", width="content")
            row_entropy = float(entropy(head_weights[token]))
            st.metric(f"Entropy of “{escape_markdown(tokens[token])}”'s row", f"{row_entropy:.2f} nats", width="content")
        st.caption(
            f"Spreading evenly over all {len(tokens)} tokens would give {math.log(len(tokens)):.2f} nats; "
            "looking at one token only, 0. Across the model, head entropies run from "
            f"{float(entropies.min()):.2f} to {float(entropies.max()):.2f}."
        )
    similarity = head_similarity(run, layer, head)  # (L, H)
    closest = ", ".join(f"layer {i} head {j} ({float(similarity[i, j]):.2f})" for i, j in closest_heads(similarity, layer, head))
    if slides.part(4):
        st.markdown(f"Most similar heads: {closest}.")
        # Made when opened: a third chart on the view's first section, 0.07-0.16 s of a new tab's first render (12
        # loads). On a slide of its own, drawn at once.
        opened, title = slide.presenting(), f"Similarity to layer {layer}, head {head} (cosine)"
        with nullcontext() if opened else st.expander(SIMILARITY, key="similarity", on_change="rerun") as every_head:
            if opened or every_head.open:
                with row() as charts:
                    heatmap_block(
                        charts, similarity.numpy(), layer_names, head_names, row_title="layer", col_title="head", title=title
                    )

if slides.show(2):
    grid = shown[:GRID_TOKENS]
    if len(shown) > GRID_TOKENS:
        st.caption(f"This overview draws the first {GRID_TOKENS} tokens; the head view (section 1) shows all {len(shown)}.")
    thumbnails = (renormalised(weights, grid) if hide else weights[:, :, grid][:, :, :, grid]).numpy()  # (L, H, G, G)
    with row(1, lines_below=2 + (len(shown) > GRID_TOKENS), lines_above=0) as charts:  # the captions
        size = thumbnails_size(charts.room, n_layers)
        draw(head_thumbnails, thumbnails, [tokens[i] for i in grid], key=THUMBNAILS, on_select=open_picked_head, **size)
    st.caption(
        "Each square is one head's attention weights: a row per query token, a column per key. Hover a square for "
        "its strongest weight; click it to open it in the head view (section 1)."
    )

if slides.show(3):
    coreference_section(slides, values, model, encoded, (layer_names, head_names))
if slides.show(4):
    embeddings_section(slides, values, model)

trained = (slides, PARAMS, values, model, run, shown, labels)  # what sections 5 to 7 draw from (attn_ui.trained_sections)
if slides.show(5):
    temperature_section(*trained)
if slides.show(6):
    padding_section(*trained)
if slides.show(7):
    sinks_section(*trained)

page.publish(PARAMS)
