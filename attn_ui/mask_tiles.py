"""The Masking view's masks of today's models: each on the batch's T positions, and its tile map at a longer length.

The masks are attn_core.masks.Masks (MODEL_MASKS). The tile map shows the same mask at a longer length T, each of its
sizes scaled in proportion, cut into block × block tiles classified by ``attn_core.tile_classes`` as
``tiled_attention(q, k, v, mask=M)`` classifies them: skipped, full or partial.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

import streamlit as st
import torch
from torch import Tensor

from attn_core import TileStats, tile_classes, tiled_attention
from attn_core.masks import KINDS, MODEL_MASKS, Mask, between, document_lengths
from attn_core.tiled import TILE_FULL, TILE_PARTIAL, TILE_SKIPPED
from attn_ui import slide, url_state
from attn_ui.charts import TILE_CLASSES, TILE_MAP_SIDE, heatmap_frame, tile_map
from attn_ui.draw import draw
from attn_ui.inputs import escape_markdown
from attn_ui.play import step_controls
from attn_ui.steps import METRIC_WIDTH, Row, block, matrix_step, row

STEPPED = ("documents", "prefix")  # causal once past the prompt: a generation step applies
ABOUT = {  # (the lead, shown on a slide too; the rest, left to the presenter's words)
    "documents": (
        "**Packed documents**: several documents packed in one row of T tokens, none padding, each seeing only itself.",
        "Pretraining packs documents this way, and the block-diagonal causal mask keeps them from seeing each other: "
        "Llama 3's report says it masks attention between the documents of a sequence; FlashAttention's "
        "variable-length kernels (`flash_attn_varlen_func`) and FlexAttention's document masks do the same without a "
        "T × T mask. Tokens after the last document are padding and see nothing.",
    ),
    "prefix": (
        "**Prefix LM**: the first P tokens (a prompt) see each other both ways; the rest are generated causally.",
        "Each token after the prefix sees the whole prefix and the tokens before it. T5's study compared this prefix "
        "LM with encoder–decoders and causal decoders, UL2 trains with prefix-LM objectives, and PaliGemma attends to "
        "its image and prompt this way.",
    ),
    "global": (
        "**Global + local**: a sliding window of w keys, plus G global tokens that see, and are seen by, every token.",
        "The window is causal here, as in a decoder; Longformer's and BigBird's reach both ways. Longformer makes "
        "[CLS] and question tokens global, ETC and BigBird have global tokens of their own (BigBird adds random "
        "links). The cost grows like T·(w + G), not T². Mistral 7B and Gemma 2's local layers use the window alone "
        "(the sidebar's window mask).",
    ),
}
MAX_DOCUMENTS = 8
TILE_LENGTHS = (64, 128, 256, 512, 1024)  # the tile map's T
TILE_BLOCKS = (8, 16, 32, 64, 128)  # tokens a side of a tile
MAX_TILES = 32  # tiles a side of a tile map at most
TILE_MAP_FRAME = heatmap_frame(["0"], 1)  # pixels of a tile map's height besides its plot: as a heatmap's, numbered axes


def scaled(mask: Mask, t_from: int, t: int) -> Mask:
    """The same mask at length ``t``: each size times t / t_from, the documents by their ends, each size at least its
    least value (a window of 1 key)."""
    scale = t / t_from
    if mask.kind == "documents":
        ends = accumulate(document_lengths(mask.sizes, t_from))
        return Mask.packed(between([round(end * scale) for end in ends]), t)
    least = KINDS[mask.kind].sizes.values()
    return Mask(mask.kind, tuple(max(low, round(size * scale)) for size, low in zip(mask.sizes, least, strict=True)))


def describe(mask: Mask, t: int) -> str:
    """Its sizes in words, on ``t`` tokens."""
    if mask.kind == "documents":
        return "documents of " + ", ".join(map(str, document_lengths(mask.sizes, t))) + " tokens"
    if mask.kind == "prefix":
        return f"a prefix of P = {mask.sizes[0]}"
    window, n_global = mask.sizes
    return f"a window of w = {window} and G = {n_global} global tokens"


@dataclass(frozen=True)
class TileCounts:
    """What tiled attention computes of a mask cut into tiles."""

    tiles: int
    skipped: int  # hidden whole: never computed
    full: int  # visible whole: computed without the mask
    partial: int  # partly visible
    masked: int  # tiles the kernel masks: partial ones whose computed rows do not all see every key
    computed_pairs: int  # query-key pairs the kernel computes: each tile's rows that see some key × its keys
    visible_pairs: int  # pairs the mask lets through
    pairs: int  # T²


def tile_counts(mask: Tensor, size: int) -> tuple[list[list[str]], TileCounts]:
    """The class of each tile (TILE_CLASSES' names) of a (T, T) mask in ``size`` × ``size`` tiles, and their counts:
    the work is what tiled_attention itself counts, run on one head of one feature under the mask."""
    t = mask.shape[-1]
    classes = tile_classes(mask, size, size)  # (q blocks, k blocks)
    counted = {kind: int((classes == kind).sum()) for kind in (TILE_SKIPPED, TILE_FULL, TILE_PARTIAL)}
    work = TileStats()
    one_head = torch.zeros(1, 1, t, 1)  # (B, H, T, d): the tiles' bookkeeping does not depend on the values
    tiled_attention(one_head, one_head, one_head, mask=mask, block_q=size, block_k=size, stats=work)
    counts = TileCounts(
        classes.numel(),
        counted[TILE_SKIPPED],
        counted[TILE_FULL],
        counted[TILE_PARTIAL],
        work.masked,
        work.pairs,
        int(mask.sum()),
        t * t,
    )
    return tile_names(classes), counts


def tile_names(classes: Tensor) -> list[list[str]]:
    """A grid of TILE_SKIPPED, TILE_FULL and TILE_PARTIAL as the tile map names them (TILE_CLASSES)."""
    names = {TILE_SKIPPED: TILE_CLASSES[0], TILE_FULL: TILE_CLASSES[1], TILE_PARTIAL: TILE_CLASSES[2]}
    return [[names[value] for value in line] for line in classes.tolist()]


def controls(params: url_state.Params, t: int) -> Mask:
    """Draw the section's controls (where the caller is drawing), those of the view's ``params`` named below, and
    return the mask on ``t`` tokens."""
    label = {kind: KINDS[kind].label for kind in MODEL_MASKS}
    kind = params.model_mask.segmented_control("Model's mask", format_func=label.get, required=True)
    mask = mask_controls(kind, t)
    tile_t = params.tile_t.selectbox("Tile map's length T", format_func=lambda n: f"{n:,}")
    blocks = [size for size in TILE_BLOCKS if tile_t // size <= MAX_TILES]  # the link's sizes that fit MAX_TILES
    url_state.keep_in("tile_block", blocks, max(blocks[0], min(st.session_state["tile_block"], blocks[-1])))
    st.selectbox("Tile size", blocks, key="tile_block", format_func=lambda n: f"{n} × {n}", help="block_q = block_k")
    return mask


def mask_controls(kind: str, t: int) -> Mask:
    """Draw the sizes' controls of a ``kind`` of mask and return it on ``t`` tokens. Its sliders are bounded by the
    sentence's T, not by the link's bounds, so a value is kept within the new T first."""
    if kind == "documents":
        lengths = st.text_input(
            "Document lengths",
            key="documents",
            help=f"Tokens of each document packed in the row, e.g. 3, 4 (at most {MAX_DOCUMENTS}); cut to the T tokens, "
            "and the tokens after them packed as one more document.",
        )
        return Mask.packed(url_state.whole_numbers(lengths), t)  # checked by the Param: from 1
    if kind == "prefix":
        url_state.keep_in("prefix", range(t + 1), min(st.session_state["prefix"], t))
        return Mask(kind, (st.slider("Prefix P", 0, t, key="prefix", help="Tokens seen both ways: a prompt."),))
    url_state.keep_in("global_window", range(1, t + 1), min(st.session_state["global_window"], t))
    window = st.slider("Window w", 1, t, key="global_window", help="Keys each query sees: itself and the w − 1 before it.")
    url_state.keep_in("n_global", range(t + 1), min(st.session_state["n_global"], t))
    n_global = st.slider("Global tokens G", 0, t, key="n_global", help="The first G tokens see, and are seen by, every token.")
    return Mask(kind, (window, n_global))


def mask_on_tokens(mask: Mask, tokens: list[str], step: int | None, step_slider: bool) -> None:
    """The mask on the batch's positions (sentence 1's tokens), with the generation step's query outlined where
    ``step`` is given, and its slider where ``step_slider`` (another section may have drawn it)."""
    lead, details = ABOUT[mask.kind]
    text = lead if slide.presenting() else f"{lead} {details}"
    if step is not None and step_slider:
        step_controls(len(tokens), lead=text)  # on a slide, the text beside the slider
    else:
        st.markdown(text)
    with row(1) as charts:
        matrix_step(
            charts,
            f"{mask.label}: {describe(mask, len(tokens))}",
            mask.formula,
            mask.boolean(len(tokens)).double(),
            tokens,
            tokens,
            kind="mask",
            row_title="query",
            col_title="key",
            highlight=None if step is None else step - 1,
        )


def tile_map_block(charts: Row, classes: list[list[str]], size: int, t: int, title: str) -> None:
    """The tile map of ``classes`` (``size`` × ``size`` tiles of T = ``t``) in a block of ``charts``: on a slide, the
    largest square its room holds."""
    room = slide.on_slide(charts.room)
    side = TILE_MAP_SIDE if room is None else max(120, min(room.width, room.height - TILE_MAP_FRAME))
    with block(side + 80):
        draw(tile_map, classes, size, size, t, side=side, title=title)


def tile_map_row(mask: Mask, t_from: int, t: int, size: int) -> TileCounts:
    """The mask at length ``t`` (its sizes scaled from ``t_from`` tokens) in ``size`` × ``size`` tiles: the tile map,
    and beside it the share of the work saved."""
    longer = scaled(mask, t_from, t)
    classes, counts = tile_counts(longer.boolean(t), size)
    at_scale = escape_markdown(f"The same mask at T = {t:,}, each size × {t / t_from:.3g} ({describe(longer, t)}), ")
    st.markdown(
        at_scale
        + f"in {size} × {size} tiles."
        + (
            ""
            if slide.presenting()
            else " Tiled attention skips a tile the mask hides whole, computes one it leaves whole without the mask, "
            "and reads the mask only for the partial ones (FlexAttention's block mask)."
        )
    )
    with row(1, aside=METRIC_WIDTH) as charts:
        tile_map_block(charts, classes, size, t, f"{mask.kind} mask, T = {t:,}, {size} × {size} tiles")
        with st.container(width=METRIC_WIDTH):
            skipped = 100 * counts.skipped / counts.tiles
            st.metric("Tiles skipped (%)", f"{skipped:.0f}", help=f"{counts.skipped} of {counts.tiles} tiles")
            st.metric(
                "Pairs not computed (%)",
                f"{100 - 100 * counts.computed_pairs / counts.pairs:.0f}",
                help=f"{counts.pairs - counts.computed_pairs:,} of the T² = {counts.pairs:,} query-key pairs",
            )
            st.metric(
                "Tiles that need the mask",
                f"{counts.masked} of {counts.tiles - counts.skipped}",
                help="Tiles computed whose rows (those that see some of the tile's keys) do not all see every key. A partial "
                "tile needs none where its rows that see a key see them all: the kernel computes those rows only.",
            )
    if slide.presenting():  # a slide shows the tile map and its metrics
        return counts
    st.caption(
        f"{counts.skipped} skipped, {counts.full} full and {counts.partial} partial of {counts.tiles} tiles; "
        f"{counts.computed_pairs:,} of {counts.pairs:,} pairs computed, {counts.visible_pairs:,} of them visible."
    )
    return counts
