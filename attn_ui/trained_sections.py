"""The Real model view's sections on a trained model changed: a temperature inside it (5), padding and causal masks
(6), and where its heads park their attention (7). Each draws its controls, asks attn_core through the cached calls of
attn_ui.model, and draws; the page calls them with what it has computed (the model, the sentence's run)."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from attn_core.examples import CONTEXT_SENTENCES, COREFERENCE_SENTENCES, PADDED_SENTENCES, PARAPHRASE_PAIRS, UNRELATED_SENTENCES
from attn_core.real_model import MAX_TOKENS, N_HEADS, WIDTH, MiniLM, RealRun
from attn_core.real_model.temperature import embedding_quality, heads_in, mean_entropy, sweep_taus
from attn_ui import page, slide, url_state
from attn_ui.charts import LINE_HEIGHT, LINE_WIDTH, SENTENCE_LABEL, lines, short_label
from attn_ui.inputs import MAX_CHARS, escape_markdown
from attn_ui.model import (
    cached_change,
    cached_embeddings,
    cached_padding_check,
    cached_quality,
    cached_sink_shares,
    forward_at,
    sink_summary,
    sweep_summary,
)
from attn_ui.steps import chart_block, heatmap_block, note_slot, row
from attn_ui.trained_masks import change_blocks, hidden_key_blocks, padding_blocks, sink_blocks


def layer_and_head_names(model: MiniLM) -> tuple[list[str], list[str]]:
    """The names of the model's layers and heads on the axes of a layers × heads grid."""
    return [f"layer {i}" for i in range(model.config.n_layers)], [f"head {i}" for i in range(model.config.n_heads)]


UNSCALED = 1 / math.sqrt(WIDTH // N_HEADS)  # the temperature that drops the 1/√d factor
TAUS = sweep_taus(WIDTH // N_HEADS)
TAU_TICKS = (0.1, 0.3, 1.0, 3.0, 10.0)  # labelled on the sweep's τ axis
SCOPE_LABELS = {"all": "every head", "layer": "this layer's heads", "head": "this head"}
SINK_TOKENS = {"cls": "[CLS]", "sep": "[SEP]"}  # a link's name for each special token whose key can be hidden
# The sentences whose attention on special tokens and punctuation is averaged, beside the user's.
SINK_CORPUS = (
    *(sentence for pair in PARAPHRASE_PAIRS for sentence in pair),
    *UNRELATED_SENTENCES,
    *CONTEXT_SENTENCES,
    COREFERENCE_SENTENCES[1],
)
MAX_PADDED = 4  # sentences in the padded batch
MAX_COMPARED = 16  # sentences the temperature sweep embeds
SWEPT = "_tau_sweeps"  # session state: the choices of heads whose temperature sweep this session has measured


def tau_label(tau: float) -> str:
    """A temperature as its control and charts name it, the two that matter by what they are."""
    if tau == UNSCALED:
        return f"{tau:.2g} (no 1/√d)"
    return "1 (as trained)" if tau == 1.0 else f"{tau:.2g}"


def padded_texts(where: DeltaGenerator, values) -> tuple[str, ...]:
    """The padded batch's sentences, from their box (drawn in ``where``): 2 to MAX_PADDED non-empty lines, each cut
    to MAX_CHARS; the example's where fewer are given, and a note where some are left out."""
    where.text_area("Sentences of different lengths, one per line", key="padded", height=120)
    note = note_slot()
    lines = [line.strip()[:MAX_CHARS] for line in values.padded.splitlines() if line.strip()]
    if len(lines) < 2:
        note.info("Write two sentences or more, one per line; the example batch is shown.")
        return PADDED_SENTENCES
    if len(lines) > MAX_PADDED:
        note.info(f"The batch holds the first {MAX_PADDED} sentences.")
    return tuple(lines[:MAX_PADDED])


def compared_sentences(where: DeltaGenerator, values) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """The sentences the temperature sweep embeds, from their box (drawn in ``where``): a line "a | b" is a pair that
    says the same thing, any other line a sentence on its own; at most MAX_COMPARED sentences. The built-in set where
    fewer than two pairs are given."""
    where.text_area(
        "Sentences compared: a pair per line as “a | b”, other sentences alone",
        key="pairs",
        height=160,
        help="Pairs of sentences that mean the same, and sentences that do not, embedded at each temperature.",
    )
    note = note_slot()
    pairs, others = [], []
    for line in (line.strip()[:MAX_CHARS] for line in values.pairs.splitlines()):
        sides = [side.strip() for side in line.split("|")]
        if len(sides) == 2 and all(sides):
            pairs.append((sides[0], sides[1]))
        elif line and "|" not in line:
            others.append(line)
    if len(pairs) < 2:
        note.info("Write two pairs or more, one per line as “a | b”; the built-in sentences are compared.")
        return PARAPHRASE_PAIRS, UNRELATED_SENTENCES
    pairs = pairs[: MAX_COMPARED // 2]
    return tuple(pairs), tuple(others[: MAX_COMPARED - 2 * len(pairs)])


def sentence_names(texts: tuple[str, ...]) -> list[str]:
    return [short_label(text, SENTENCE_LABEL) for text in texts]


def temperature_section(
    slides: page.Slides, params: url_state.Params, values, model: MiniLM, run: RealRun, shown: list[int], labels: list[str]
) -> None:
    """Section 5: the open head at a temperature beside as trained, the sweep over τ, the cosines at τ."""
    encoded, tokens = run.encoded, run.encoded.tokens[0]
    n_layers, n_heads = model.config.n_layers, model.config.n_heads
    slide.lead(
        "Every head of this model divides its scores by √d = 5.66 before the softmax, as it was trained. Here the scores "
        "of the heads you choose are divided by a temperature τ as well: softmax(Q Kᵀ / (√d · τ)). τ = 1 is the model as "
        "trained; τ = 0.18 = 1/√d drops the 1/√d factor, as the Scaling view does on random weights; a larger τ flattens "
        "the rows towards uniform, a smaller one sharpens them towards one key.",
        "",  # on a slide, the chart's title says it: its height goes to the tokens
    )
    with slides.section_controls(), st.container(horizontal=True, vertical_alignment="bottom"):
        scope = params.tau_heads.segmented_control("Heads changed", format_func=SCOPE_LABELS.get, required=True)
        tau = params.tau.select_slider("Temperature τ (log scale)", format_func=tau_label, width=420)
    changed = tuple(heads_in(scope, values.layer, values.head, n_layers, n_heads))
    where = f"layer {values.layer}, head {values.head}"
    if slides.part(1):
        hot = run if tau == 1.0 else forward_at(model, tuple(encoded.texts), MAX_TOKENS, changed, tau)
        # On a slide the head at τ alone, its entropy as trained beside its own: two heatmaps of a 16-word sentence do
        # not fit a 1024 × 576 window, and the slide before (section 1) shows the head as trained.
        trained_spread = mean_entropy(run, [(values.layer, values.head)])
        shown_runs = [(hot, tau)] if slide.presenting() else [(run, 1.0), (hot, tau)]
        with row(len(shown_runs), lines_above=0) as charts:
            for at, at_tau in shown_runs:
                head_weights = at.weights(0)[values.layer, values.head]  # (T, T)
                spread = f"mean entropy of its rows {mean_entropy(at, [(values.layer, values.head)]):.2f} nats"
                if slide.presenting():
                    spread += f" ({trained_spread:.2f} as trained)"
                heatmap_block(
                    charts,
                    head_weights[shown][:, shown].numpy(),
                    labels,
                    labels,
                    title=f"softmax(Q Kᵀ / (√d · τ)) at τ = {tau_label(at_tau)}",
                    subtitle=(f"{where}: {spread}",),
                )
        if not slide.presenting():
            st.caption(
                f"{SCOPE_LABELS[scope].capitalize()} at τ. Spreading evenly over the {len(tokens)} tokens would be "
                f"{math.log(len(tokens)):.2f} nats; looking at one token only, 0."
            )
    if slides.part(2) or slides.part(3):
        pairs, others = compared_sentences(slides.section_controls(), values)
    if slides.part(2):
        sweep_key = (scope, *(changed[0] if scope != "all" else ()), pairs, others)
        swept = st.session_state.setdefault(SWEPT, set())
        # The request is kept by the button's callback, not its value: a rerun the browser asks for meanwhile (a report
        # of its size) stops this run, and the next one goes on from the temperatures measured (each is cached).
        if sweep_key not in swept:
            st.button(
                f"Measure the embeddings at {len(TAUS)} temperatures", key="tau_sweep", on_click=swept.add, args=(sweep_key,)
            )
            st.caption(
                f"{len(pairs)} pairs of sentences that say the same thing in other words, and "
                f"{len(others)} others, embedded at each τ: "
                "does each sentence's most similar other sentence stay its pair, and do pairs stay closer than the rest?"
            )
        else:
            progress = st.progress(0.0, text="Running the model on the sentences at each temperature")
            for done, point in enumerate(TAUS, 1):
                cached_quality(model, pairs, others, changed, point)
                progress.progress(done / len(TAUS), text=f"τ = {point:.2g}: {done} of {len(TAUS)}")
            progress.empty()
            quality = [cached_quality(model, pairs, others, changed, point) for point in TAUS]
            with row(2, lines_above=1, lines_below=3) as charts:  # the summary under the charts
                embeddings = {
                    "paraphrase pairs": [q.pair_cosine for q in quality],
                    "two other sentences": [q.other_cosine for q in quality],
                    "nearest is its pair": [q.nearest_is_pair for q in quality],
                }
                title = f"Sentence embeddings, {SCOPE_LABELS[scope]} at τ"
                for series, y_title, chart_title in (
                    (embeddings, "cosine similarity, share", title),
                    ({"changed heads": [q.entropy for q in quality]}, "mean entropy (nats)", "How spread their rows are"),
                ):
                    options = {"x_title": "temperature τ", "y_title": y_title, "log_x": True, "x_ticks": TAU_TICKS}
                    options |= {"marker": tau, "title": chart_title}
                    chart_block(charts, LINE_WIDTH, LINE_HEIGHT, lines, np.array(TAUS), series, **options)
            st.caption(sweep_summary(quality, UNSCALED))

    if slides.part(3):
        texts = tuple(sentence for pair in pairs for sentence in pair) + others
        names = [short_label(text, SENTENCE_LABEL) for text in texts]
        shown_taus = [tau] if slide.presenting() or tau == 1.0 else [1.0, tau]  # on a page, beside as trained
        with row(len(shown_taus), lines_above=0) as charts:
            for point in shown_taus:
                embedded = cached_embeddings(model, texts, changed, point)  # (N, C)
                quality = embedding_quality(embedded, len(pairs))
                heatmap_block(
                    charts,
                    (embedded @ embedded.T).numpy(),
                    names,
                    names,
                    kind="signed",
                    row_title="sentence",
                    col_title="sentence",
                    title=f"Cosine of the embeddings at τ = {tau_label(point)}",
                    subtitle=(f"{quality[0]:.0%} have their pair nearest; pairs {quality[1]:.2f}, others {quality[2]:.2f}",),
                )


def padding_section(
    slides: page.Slides, params: url_state.Params, values, model: MiniLM, run: RealRun, shown: list[int], labels: list[str]
) -> None:
    """Section 6: a padded batch with and without its mask, and a causal mask."""
    layer_names, head_names = layer_and_head_names(model)
    if slides.part(1):
        slide.lead(
            "A batch holds sentences of different lengths, so the shorter ones are padded with [PAD] tokens to the longest. "
            "The padding mask hides those keys from every query: each sentence then comes out exactly as run alone. "
            "Without it, every token also attends to the [PAD] keys, which the model never saw in training.",
            "Padded into one batch: with the padding mask, each sentence is as if alone; without it, they attend to [PAD].",
        )
    texts = padded_texts(slides.section_controls(), values)
    if slides.part(1):
        padding_blocks(cached_padding_check(model, texts), layer_names, head_names, values.layer, values.head)
    if slides.part(2):
        slide.lead(
            "This model reads both ways: every token sees the whole sentence. A causal mask, as a decoder uses, lets token "
            "i see tokens 0 … i only. The model was never trained so: how far do its sentence embeddings move, and which "
            "heads change most?",
            "A causal mask on a model trained to read both ways: how far the embeddings move, which heads change.",
        )
        change = cached_change(model, texts, True, "[SEP]", ())
        change_blocks(change, sentence_names(texts), layer_names, head_names, "Causal mask: weights moved")


def sinks_section(
    slides: page.Slides, params: url_state.Params, values, model: MiniLM, run: RealRun, shown: list[int], labels: list[str]
) -> None:
    """Section 7: the attention on [CLS], [SEP] and punctuation, and a special token's key hidden."""
    encoded = run.encoded
    n_layers, n_heads = model.config.n_layers, model.config.n_heads
    layer_names, head_names = layer_and_head_names(model)
    if slides.part(1):
        slide.lead(
            f"Many heads of BERT park their attention on a special token when they have nothing to do (Clark et al., 2019, "
            f"found more than half of BERT-base's middle layers' attention on [SEP]). Here, the share of each head's "
            f"attention on [CLS], on [SEP] and on punctuation, averaged over every real token of "
            f"{len(SINK_CORPUS)} built-in sentences and yours.",
            "The share of each head's attention on [CLS] and on [SEP].",
        )
        corpus = (*SINK_CORPUS, encoded.texts[0])
        shares = cached_sink_shares(model, corpus)
        sink_blocks(shares, layer_names, head_names)
        if not slide.presenting():
            st.caption(escape_markdown(sink_summary(shares)))
    if slides.part(2):
        slide.lead(
            "Is a head parked on a special token doing nothing? Hide that token's key from it (its weight goes to the "
            "other keys, in proportion) and see how far the sentence embeddings move.",
            "Hide a special token's key from the heads: how far the embeddings move.",
        )
        with slides.section_controls(), st.container(horizontal=True):
            token = params.sink.segmented_control("Key hidden", format_func=SINK_TOKENS.get, required=True)
            scope = params.sink_heads.segmented_control("From", format_func=SCOPE_LABELS.get, required=True)
        hidden_from = tuple(heads_in(scope, values.layer, values.head, n_layers, n_heads))
        corpus = (*SINK_CORPUS, encoded.texts[0])
        change = cached_change(model, corpus, False, SINK_TOKENS[token], hidden_from)
        heads = {
            "all": "every head",
            "layer": f"layer {values.layer}'s heads",
            "head": f"layer {values.layer}, head {values.head}",
        }
        hidden_key_blocks(change, SINK_TOKENS[token], heads[scope], layer_names, head_names)
