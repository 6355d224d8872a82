"""The Real model view's sections on what the model's attention and vectors say about words: coreference (3), and
one word's vectors across sentences (4). Each draws its controls, asks attn_core through the cached calls of
attn_ui.model, and draws."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from attn_core.examples import COREFERENCE_SENTENCES, COREFERENCE_WORDS
from attn_core.real_model import Encoded, MiniLM
from attn_ui import callbacks, page, slide, url_state
from attn_ui.charts import SENTENCE_LABEL, label_around, short_label
from attn_ui.inputs import MAX_CHARS, escape_markdown, word_and_sentences
from attn_ui.model import cached_coreference, cached_word_across_contexts, embedding_stage_note
from attn_ui.steps import dataframe, heatmap_block, labelled_lines_block, row

MAX_SENTENCES = 6  # sentences compared in the embeddings section


@callbacks.needing("coref")  # on another view, it would set that view's sentence
def use_coreference_example() -> None:
    """Coreference's example: two sentences that differ in one word, and the words it compares."""
    st.session_state.update(text=COREFERENCE_SENTENCES[0], text2=COREFERENCE_SENTENCES[1], coref=", ".join(COREFERENCE_WORDS))


def coreference_section(
    slides: page.Slides, values: url_state.Values, model: MiniLM, encoded: Encoded, axes: tuple[list[str], list[str]]
) -> None:
    """Section 3: how each head's attention from a pronoun to two words changes between two sentences."""
    layer_names, head_names = axes  # the heatmap's rows and columns
    if slides.part(1):
        st.markdown(
            "Two sentences that differ in one word. To understand them, “it” must be tied to the animal in one "
            "and to the street in the other. Does any head do that? Here is what the model actually does."
        )
    with slides.section_controls():
        left, right = st.columns([2, 1])
        left.text_input("Second sentence (the first is the sentence in the controls)", key="text2")
        right.text_input("The pronoun, then two words it may refer to", key="coref")
    words = [word.strip() for word in values.coref.split(",")]
    try:
        if len(words) != 3 or not all(words):
            raise ValueError("Write three words separated by commas, e.g. “it, animal, street”.")
        coref = cached_coreference(model, (encoded.texts[0], values.text2[:MAX_CHARS]), words[0], tuple(words[1:]))
    except ValueError as problem:
        st.info(escape_markdown(str(problem)))
        st.button("Use the example pair", key=f"coreference_example_{slides.open_part}", on_click=use_coreference_example)
    else:
        pronoun, first, second = (escape_markdown(word) for word in (coref.pronoun, *coref.candidates))
        hidden = " The average hides the few heads that do change; here they are." if coref.barely_moves else ""
        if slides.part(2):  # on a slide, the lead of the heatmap
            st.markdown(escape_markdown(coref.summary()) + hidden)
        names = ["layer", "head", f"→{first} (1)", f"→{second} (1)", f"→{first} (2)", f"→{second} (2)", "change"]
        table = pd.DataFrame(coref.head_rows(), columns=names)
        if slides.part(1):
            st.markdown(
                f"**The heads whose preference changes most.** “→{first} (1)” is the attention from “{pronoun}” to "
                f"“{first}” in sentence 1; “change” is how much (→{first} − →{second}) moves from sentence 1 to sentence 2."
            )
            dataframe(table.head(5).style.format(precision=3), hide_index=True)
        if slides.part(2):
            title = f"Change of (→{coref.candidates[0]} − →{coref.candidates[1]}), sentence 1 to 2"
            with row(1, lines_above=3) as charts:  # the summary's three lines
                heatmap_block(
                    charts,
                    coref.change.numpy(),
                    layer_names,
                    head_names,
                    kind="signed",
                    row_title="layer",
                    col_title="head",
                    title=title,
                )
        if not slide.presenting():  # 72 rows are no slide's matter
            with st.expander(f"All {len(table)} heads"):
                st.dataframe(table.style.format(precision=3), hide_index=True)


def embeddings_section(slides: page.Slides, values: url_state.Values, model: MiniLM) -> None:
    """Section 4: one word's vectors in several sentences, compared at every stage of the model."""
    if slides.part(1):
        st.markdown(
            "A word2vec-style embedding gives a word one vector, whatever its sentence. A transformer starts the same "
            "way, with one row of its embedding table per word piece, and then mixes in the context layer by layer. "
            "Below, the cosine similarity of one word's vectors between sentences, at every stage: 1 means identical."
        )
    sentences = word_and_sentences(slides.section_controls(), values, MAX_SENTENCES)
    try:
        contexts = cached_word_across_contexts(model, sentences, values.word)
    except ValueError as problem:
        st.info(escape_markdown(str(problem)))
    else:
        for missing in contexts.missing if slides.part(1) else ():  # said with the sentences, on a slide
            st.info(
                escape_markdown(f"“{contexts.word}” is not a word of “{short_label(missing, SENTENCE_LABEL)}”;")
                + " that sentence is left out."
            )
        names = [label_around(sentence, contexts.word) for sentence in contexts.sentences]  # each keeps the word
        pair_names = [f"{names[i]} ↔ {names[j]}" for i, j in contexts.pairs]
        if slides.part(2):  # on a slide, alone, as high as the slide allows
            with row(lines_above=0) as charts:
                labelled_lines_block(
                    charts,
                    contexts.similarity.numpy(),
                    pair_names,
                    [stage.replace("embedding layer", "embedding") for stage in contexts.stages],  # whole, not cut to 14
                    value_title="cosine similarity",
                    point_title="stage",
                    series_title="sentences",
                    title=f"“{contexts.word}” in two sentences: how alike its vectors are",
                )
        if slides.part(1):  # on a slide, under the introduction: what to look for in the chart
            st.caption(escape_markdown(embedding_stage_note(contexts)))
