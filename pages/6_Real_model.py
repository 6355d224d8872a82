"""Real model view: a trained transformer (all-MiniLM-L6-v2), head by head, run by attn_core's attention."""

import math

import pandas as pd
import streamlit as st

from attn_core import closest_heads, coreference, entropy, head_entropy, head_similarity, visible_positions, word_across_contexts
from attn_core.examples import CONTEXT_SENTENCES, CONTEXT_WORD, COREFERENCE_SENTENCES, COREFERENCE_WORDS
from attn_core.real_model import BARELY_MOVES, MAX_TOKENS, MODEL_NAME, N_HEADS, N_LAYERS
from attn_ui import page, url_state
from attn_ui.charts import BAR_HEIGHT, bars, heatmap, heatmap_grid, labelled_lines, short_label
from attn_ui.inputs import MAX_CHARS, model_tokens
from attn_ui.model import load_model
from attn_ui.url_state import Param

GRID_TOKENS = 32  # the overview of all heads draws at most this many tokens
MAX_SENTENCES = 6  # sentences compared in the embeddings section
PARAMS = (
    Param("text", COREFERENCE_SENTENCES[0], url_state.text),
    Param("hide", False, url_state.on_off, url_state.format_on_off),
    Param("layer", 0, url_state.integer(0, N_LAYERS - 1)),
    Param("head", 0, url_state.integer(0, N_HEADS - 1)),
    Param("token", None, url_state.integer(0, MAX_TOKENS - 1)),
    Param("text2", COREFERENCE_SENTENCES[1], url_state.text),
    Param("coref", ", ".join(COREFERENCE_WORDS), url_state.text),
    Param("word", CONTEXT_WORD, url_state.text),
    Param("sentences", "\n".join(CONTEXT_SENTENCES), url_state.text),
)

page.setup(page.REAL_MODEL)
st.title("Real model: what a trained transformer attends to")
st.markdown(
    f"**{MODEL_NAME}** is a small BERT encoder, fine-tuned on over a billion sentence pairs to compare sentences: "
    "6 layers of 12 heads, each token a vector of 384 numbers, each head working on 32 of them. "
    "Every number below comes from its real weights, run through the same attention function as the other views "
    "and checked against Hugging Face `transformers`."
)
url_state.restore(PARAMS)
with st.sidebar:
    st.text_area("Sentence", key="text", help=f"Split into the model's word pieces; at most {MAX_TOKENS}.")
    hide = st.toggle("Hide [CLS] and [SEP] from the charts", key="hide")

model = load_model()
if model is None:
    url_state.publish(PARAMS)
    st.stop()

n_layers, n_heads = model.config.n_layers, model.config.n_heads
layer_names, head_names = [f"layer {i}" for i in range(n_layers)], [f"head {i}" for i in range(n_heads)]
encoded = model_tokens(model, st.session_state["text"], MAX_TOKENS, COREFERENCE_SENTENCES[0])
run = model.run(encoded)
tokens = encoded.tokens[0]
shown = visible_positions(tokens, hide)
labels = [tokens[i] for i in shown]
weights = run.weights(0)  # (L, H, T, T)
st.markdown(
    f"The model reads **{len(tokens)} word pieces**: `[CLS]` opens every input and `[SEP]` closes it; "
    "a word it does not know whole is split into pieces, the later ones marked `##`."
)
if hide:
    st.caption(
        "[CLS] and [SEP] are hidden from the charts, not from the model: it still attends to them "
        "(many heads park much of their attention there), so a row's visible weights may add up to less than 1."
    )

st.header("1 · Model view: every head of every layer")
grid = shown[:GRID_TOKENS]
if len(shown) > GRID_TOKENS:
    st.caption(f"This overview draws the first {GRID_TOKENS} tokens; the head view below shows all {len(shown)}.")
st.altair_chart(
    heatmap_grid(
        weights[:, :, grid][:, :, :, grid].numpy(),
        [tokens[i] for i in grid],
        [tokens[i] for i in grid],
        panel_rows=[str(i) for i in range(n_layers)],
        panel_cols=[str(i) for i in range(n_heads)],
    ),
    width="content",
)
st.caption("Each square is one head's attention weights: a row per query token, a column per key. Pick a head to open it.")

st.header("2 · Head view")
if st.session_state["token"] not in shown:
    pronoun = encoded.positions_of(0, COREFERENCE_WORDS[0])
    st.session_state["token"] = pronoun[0] if pronoun and pronoun[0] in shown else shown[-1]
columns = st.columns(3)
layer = columns[0].selectbox("Layer", range(n_layers), key="layer")
head = columns[1].selectbox("Head", range(n_heads), key="head")
token = columns[2].selectbox("Attention from token", shown, format_func=lambda i: f"{i}: {tokens[i]}", key="token")
head_weights = weights[layer, head]  # (T, T)
left, right = st.columns([3, 2])
with left:
    st.altair_chart(
        heatmap(head_weights[shown][:, shown].numpy(), labels, labels, title=f"Layer {layer}, head {head}", max_width=420),
        width="content",
    )
with right:
    st.altair_chart(
        bars(head_weights[token, shown].numpy(), labels, value_title="weight", title=f"Attention from “{tokens[token]}”"),
        height=BAR_HEIGHT,
    )
    entropies = head_entropy(run)  # (L, H)
    st.metric("This head's mean entropy", f"{float(entropies[layer, head]):.2f} nats")
    st.metric(f"Entropy of “{tokens[token]}”'s row", f"{float(entropy(head_weights[token])):.2f} nats")
    st.caption(
        f"Spreading evenly over all {len(tokens)} tokens would give {math.log(len(tokens)):.2f} nats; "
        "looking at one token only, 0. Across the model, head entropies run from "
        f"{float(entropies.min()):.2f} to {float(entropies.max()):.2f}."
    )
similarity = head_similarity(run, layer, head)  # (L, H)
st.altair_chart(
    heatmap(
        similarity.numpy(),
        layer_names,
        head_names,
        row_title="layer",
        col_title="head",
        title=f"Cosine similarity of each head's weights to layer {layer}, head {head}'s",
    ),
    width="content",
)
closest = closest_heads(similarity, layer, head)
st.markdown("Most similar heads: " + ", ".join(f"layer {i} head {j} ({float(similarity[i, j]):.2f})" for i, j in closest) + ".")

st.header("3 · Coreference: what does “it” refer to?")
st.markdown(
    "Two sentences that differ in one word. To understand them, “it” must be tied to the animal in one "
    "and to the street in the other. Does any head do that? Here is what the model actually does."
)
left, right = st.columns([2, 1])
left.text_input("Second sentence (the first is the sentence in the sidebar)", key="text2")
right.text_input("The pronoun, then two words it may refer to", key="coref")
words = [word.strip() for word in st.session_state["coref"].split(",")]
try:
    if len(words) != 3 or not all(words):
        raise ValueError("Write three words separated by commas, e.g. “it, animal, street”.")
    coref = coreference(model, [encoded.texts[0], st.session_state["text2"][:MAX_CHARS]], words[0], words[1:])
except ValueError as problem:
    st.info(str(problem))
else:
    pronoun, (first, second) = coref.pronoun, coref.candidates
    attention = coref.attention.mean(dim=(1, 2))  # (2, 2): sentence, candidate; averaged over every head
    moves = "barely moves" if abs(coref.average_change) < BARELY_MOVES else "moves"
    st.markdown(
        f"Averaged over all {n_layers * n_heads} heads, “{pronoun}” gives {float(attention[0, 0]):.3f} of its attention "
        f"to “{first}” and {float(attention[0, 1]):.3f} to “{second}” in sentence 1, and {float(attention[1, 0]):.3f} "
        f"and {float(attention[1, 1]):.3f} in sentence 2: the preference for “{first}” over “{second}” **{moves}** "
        f"({coref.average_change:+.3f}). "
        + ("The average hides the few heads that do change; here they are." if moves == "barely moves" else "")
    )
    rows = []
    for i, j in coref.top_heads(len(layer_names) * len(head_names)):
        (a1, b1), (a2, b2) = coref.attention[:, i, j].tolist()
        rows.append((i, j, a1, b1, a2, b2, float(coref.change[i, j])))
    names = ["layer", "head", f"→{first} (1)", f"→{second} (1)", f"→{first} (2)", f"→{second} (2)", "change"]
    table = pd.DataFrame(rows, columns=names)
    st.markdown(
        f"**The heads whose preference changes most.** “→{first} (1)” is the attention from “{pronoun}” to "
        f"“{first}” in sentence 1; “change” is how much (→{first} − →{second}) moves from sentence 1 to sentence 2."
    )
    st.dataframe(table.head(5).style.format(precision=3), hide_index=True)
    st.altair_chart(
        heatmap(
            coref.change.numpy(),
            layer_names,
            head_names,
            kind="signed",
            row_title="layer",
            col_title="head",
            title=f"Change of (→{first} − →{second}) from sentence 1 to sentence 2",
        ),
        width="content",
    )
    with st.expander(f"All {len(rows)} heads"):
        st.dataframe(table.style.format(precision=3), hide_index=True)

st.header("4 · Static vs contextual embeddings")
st.markdown(
    "A word2vec-style embedding gives a word one vector, whatever its sentence. A transformer starts the same "
    "way, with one row of its embedding table per word piece, and then mixes in the context layer by layer. "
    "Below, the cosine similarity of one word's vectors between sentences, at every stage: 1 means identical."
)
left, right = st.columns([1, 2])
left.text_input("Word", key="word")
right.text_area("Sentences, one per line", key="sentences")
sentences = [line.strip() for line in st.session_state["sentences"][:MAX_CHARS].splitlines() if line.strip()]
if len(sentences) > MAX_SENTENCES:
    st.warning(f"{len(sentences)} sentences given; this compares the first {MAX_SENTENCES}.")
try:
    contexts = word_across_contexts(model, sentences[:MAX_SENTENCES], st.session_state["word"])
except ValueError as problem:
    st.info(str(problem))
else:
    for missing in contexts.missing:
        st.info(f"“{contexts.word}” is not a word of “{short_label(missing)}”; that sentence is left out.")
    pair_names = [f"{short_label(contexts.sentences[i])} ↔ {short_label(contexts.sentences[j])}" for i, j in contexts.pairs]
    st.altair_chart(
        labelled_lines(
            contexts.similarity.numpy(),
            pair_names,
            contexts.stages,
            value_title="cosine similarity",
            point_title="stage",
            series_title="sentences",
            title=f"“{contexts.word}” in two sentences: how alike its vectors are",
        ),
        height=BAR_HEIGHT + 80,
    )
    st.caption(
        "“lookup” is the embedding table's row: the same in every sentence. The embedding layer adds the "
        "position, so it already differs a little; each layer then mixes in the neighbours."
    )

url_state.publish(PARAMS)
