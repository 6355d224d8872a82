"""Masking view: what causal, padding and custom masks let each query see, the masks of today's models, and a mask
studio in FlexAttention's terms."""

import pandas as pd
import streamlit as st

from attn_core import padding_mask
from attn_core.examples import MASKING_SENTENCES
from attn_core.masking import (
    BATCH_MASKS,
    CUSTOM,
    PAD,
    difference_from_alone,
    masked_batch_attention,
    pad_batch,
)
from attn_core.masks import KINDS, MODEL_MASKS, Mask
from attn_ui import mask_studio_view, mask_tiles, page, url_state
from attn_ui.charts import MAX_WIDTH
from attn_ui.export import unique_labels
from attn_ui.inputs import SENTENCE_SEPARATOR, escape_markdown, sentences_from_text
from attn_ui.mask_grid import GRID, current_mask, mask_grid
from attn_ui.masking_sections import conventions_section, empty_row_section
from attn_ui.play import current_step, step_controls
from attn_ui.steps import as_text, bar_block, dataframe, matrix_step, note_slot, row, score_steps, table
from attn_ui.url_state import Param

MAX_SENTENCES = 4
MAX_TOKENS = 16  # per sentence
FAR_LONGER = 3  # a sentence this many times longer than another one gets a notice
DEFAULT_WINDOW = 3  # keys a query sees under the window masks: itself and the two before it
PARAMS = url_state.Params(
    Param("text", MASKING_SENTENCES, url_state.text),
    Param("mask", "causal", url_state.Choice(BATCH_MASKS)),
    Param("step", 1, url_state.Integer(1, MAX_TOKENS)),
    Param("window", DEFAULT_WINDOW, url_state.Integer(1, MAX_TOKENS)),
    Param(GRID, "", url_state.mask_grid(MAX_TOKENS)),
    Param("model_mask", "documents", url_state.Choice(MODEL_MASKS)),
    Param("documents", "3,3", url_state.lengths(mask_tiles.MAX_DOCUMENTS, MAX_TOKENS), typed=True),
    Param("prefix", 3, url_state.Integer(0, MAX_TOKENS)),
    Param("global_window", DEFAULT_WINDOW, url_state.Integer(1, MAX_TOKENS)),
    Param("n_global", 1, url_state.Integer(0, MAX_TOKENS)),
    Param("tile_t", 256, url_state.Nearest(mask_tiles.TILE_LENGTHS)),
    Param("tile_block", 32, url_state.Nearest(mask_tiles.TILE_BLOCKS)),
    page.SEED,
    *mask_studio_view.PARAMS,
)
SLIDES = (
    page.Section("Padding", "The batch, padded", parts=2),
    page.Section("Generation", "Generation step by step", parts=2),
    page.Section("Padded vs alone", "Padded or alone: the same outputs"),
    page.Section("Empty rows", "A row that sees nothing: NaN, 0 or uniform?"),
    page.Section("Bool vs additive", "Two conventions: boolean or additive"),
    page.Section("Model masks", "Masks of today's models", parts=2),
    page.Section("Studio", "A mask studio in FlexAttention's terms", parts=3),  # the matrices, the blocks, the code
)

values = page.setup(page.MASKING, PARAMS)
slides = page.Slides(
    SLIDES,
    "Masking: what each query may see",
    (
        "A mask decides which keys each query may attend to. Masked scores are set to −∞ before softmax, "
        "so their weights come out exactly 0. A **causal** (look-ahead) mask hides the future while a model "
        "generates text; a **padding** mask hides the [PAD] tokens that fill up the shorter sentences of a batch."
    ),
)
with slides.controls:
    st.text_area(
        f"Sentences, separated by {SENTENCE_SEPARATOR}",
        key="text",
        help=f"2 to {MAX_SENTENCES} sentences of different lengths make a padded batch; up to {MAX_TOKENS} tokens each.",
    )
    labels = {kind: "Custom grid" if kind == CUSTOM else KINDS[kind].label for kind in BATCH_MASKS}
    kind = PARAMS.mask.radio("Mask", format_func=labels.get)
    if kind == "window":
        PARAMS.window.slider("Window w", help="Keys each query sees: itself and the w − 1 before it.")

sentences = sentences_from_text(values.text, MAX_SENTENCES, MAX_TOKENS, MASKING_SENTENCES)
tokens, lengths = pad_batch(sentences)
n_sentences, t = len(tokens), len(tokens[0])
positions = [str(i) for i in range(t)]  # from 0, as j in the padding mask's formula and every token index
names = [f"sentence {b + 1}" for b in range(n_sentences)]
grid_labels = unique_labels(tokens[0])
step = current_step(t)
custom = current_mask(t) if kind == CUSTOM else None

if slides.show(1):
    if n_sentences == 1:
        st.info(f"One sentence: nothing to pad. Type 2 to {MAX_SENTENCES} sentences separated by “{SENTENCE_SEPARATOR}”.")
    elif max(lengths) >= FAR_LONGER * min(lengths):
        shortest = lengths.index(min(lengths))
        st.warning(
            f"One sentence is far longer than another ({max(lengths)} against {min(lengths)} tokens): sentence "
            f"{shortest + 1} is mostly {PAD}, which costs compute and memory for nothing. Real systems batch "
            "sentences of similar length together."
        )
    if slides.part(1):
        # A column per sentence, so that a long sentence's tokens fill rows, not a table wider than a projector's window.
        table(as_text(pd.DataFrame(tokens, index=names, columns=positions).T))
    if slides.part(2):
        with row(1, lines_below=3) as charts:  # the sentence on what the mask does, under it
            matrix_step(
                charts,
                "Key padding mask",
                r"M^{pad}_{b j} = [\,j < \text{length}_b\,]",
                padding_mask(lengths, t)[:, 0].double(),
                names,
                positions,
                kind="mask",
                row_title="sentence",
                col_title="position",
            )
        if kind in ("padding", "both"):
            st.markdown(
                f"Every query ignores the {PAD} keys, and a {PAD} query sees nothing at all: its row is fully blocked, "
                "so attn_core gives it weights 0 and context 0 (section 4)."
            )
        elif kind == "window":
            w = values.window
            st.markdown(
                f"A **sliding-window** (local) mask is causal and also forgets: each query sees only the last w = {w} keys, "
                f"itself included, and none of the {PAD}s. A row costs w dot products instead of up to T, so attention's "
                "cost grows linearly in T (Longformer, Mistral); the Cost view measures it."
            )
        elif kind == "causal":
            st.markdown(
                f"A causal mask alone never lets a real token see the {PAD}s after it, but each {PAD} query still "
                "attends to the tokens before it: its output is junk that later layers must ignore."
            )
        if kind == CUSTOM:
            st.subheader("Your mask")
            st.markdown(
                "Tick a cell to let that query (row) attend to that key (column). One grid applies to every sentence "
                "of the batch, as PyTorch broadcasts a (T, T) mask; rows and columns are named by sentence 1's tokens. "
                "Untick a whole row to block a query completely. The grid is kept in the page's link."
            )
            custom = mask_grid(grid_labels)

sizes = (values.window,) if kind == "window" else ()
batch = masked_batch_attention(sentences, custom if kind == CUSTOM else Mask(kind, sizes))
steps = batch.steps
mask = batch.mask.expand_as(steps.weights)  # (B, T, T)
empty = steps.empty_rows  # (B, T)
# A note on rows that see no key, which comes and goes with the mask, where the batch is shown under the sidebar's
# mask: not above the model masks and the studio, which make masks of their own.
on_the_batch = slides.current in (page.ALL_SECTIONS, 1, 2, 3, 4, 5)
with note_slot():
    if on_the_batch and empty.all():
        st.warning("This mask blocks every key for every query: all weights and context vectors are 0, nothing is attended.")
    elif on_the_batch and empty.any():
        n_empty = int(empty.sum())
        st.info(
            f"{n_empty} query {'row sees' if n_empty == 1 else 'rows see'} no key at all. attn_core gives "
            f"{'it' if n_empty == 1 else 'them'} weights 0 and context 0 instead of the NaN a naive softmax would give "
            "(section 4)."
        )

if slides.show(2):
    lead = "At step t, token t may only look at what is already written; the highlighted row is its query."
    step_controls(t, lead=lead if slides.part(1) else "")
    query = step - 1
    b, tab = slides.tabs("Sentence", [f"Sentence {b + 1}" for b in range(n_sentences)], "sentence_tab")
    with tab:  # only the open sentence's charts are drawn
        sentence = tokens[b]
        if slides.part(1):
            with row(2) as charts:  # on a slide, two lines of lead beside the step's slider
                scale_text = rf"\frac{{1}}{{\sqrt{{{steps.q.shape[-1]}}}}}"
                score_steps(
                    charts,
                    steps,
                    b,
                    sentence,
                    sentence,
                    scale_text,
                    slice(1, 3),
                    masked=True,
                    highlight=query,
                    max_width=MAX_WIDTH,
                )
        if slides.part(2):
            visible = [key for key, allowed in zip(sentence, mask[b, query].tolist(), strict=True) if allowed]
            seen = ", ".join(visible) if visible else "no key at all: its weights and context are 0"
            st.markdown(escape_markdown(f"Step {step}: “{sentence[query]}” may see {len(visible)} of {t} keys: {seen}."))
            with row(1, lines_above=4) as charts:  # the step's slider, then its keys as a line of lead
                bar_block(
                    charts,
                    steps.weights[b, query],
                    sentence,
                    value_title="weight",
                    title="Weights of this step's query",  # the same at every step: only the bars' data change
                )

if slides.show(3):
    if kind == CUSTOM:
        st.info("A custom mask has no unpadded counterpart to compare with: choose a causal or padding mask.")
    else:
        st.markdown(
            "Each sentence, run on its own without padding, must give its real tokens the same context vectors "
            "as in the padded batch: the mask makes the [PAD]s invisible."
        )
        check = pd.DataFrame(
            {"real tokens": lengths, PAD: [t - n for n in lengths], "largest |difference|": difference_from_alone(batch)},
            index=names,
        )
        dataframe(check.style.format({"largest |difference|": "{:.1e}"}))

if slides.show(4):
    empty_row_section(steps, mask, empty, tokens, step)

if slides.show(5):
    conventions_section(steps, mask, tokens)

if slides.show(6):
    with slides.section_controls():
        model_mask = mask_tiles.controls(PARAMS, t)
    if slides.part(1):
        stepped = step if model_mask.kind in mask_tiles.STEPPED else None
        mask_tiles.mask_on_tokens(model_mask, grid_labels, stepped, step_slider=slides.current == 6)
    if slides.part(2):
        mask_tiles.tile_map_row(model_mask, t, values.tile_t, values.tile_block)

if slides.show(7):
    mask_studio_view.studio_section(slides, values, PARAMS)

page.publish(PARAMS)
