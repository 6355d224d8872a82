"""The Masking view's studio: two masks of the gallery combined (and, or, and not, not), a score modification on top;
the mask, the scores and the weights of one head, the tiles a block-sparse kernel skips beside what FlexAttention's
create_block_mask reports, and the FlexAttention code that reproduces the weights (a copy box, and the bundle)."""

from __future__ import annotations

import streamlit as st
from torch.nn.attention.flex_attention import create_block_mask

from attn_core.mask_mods import GALLERY, SCORE_MODS, dense, mod_scores, softmax_seen
from attn_core.mask_studio import COMBINE, COMBINE_LABELS, Composition, Term, defaults, flex_code, queries_and_keys, text_of
from attn_core.masks import block_kinds
from attn_ui import downloads, page, slide, url_state
from attn_ui.inputs import escape_markdown
from attn_ui.mask_tiles import tile_map_block, tile_names
from attn_ui.steps import METRIC_WIDTH, matrix_step, note_slot, row
from attn_ui.url_state import Param

HEADS, HEAD_SIZE = 4, 8  # the studio's toy queries and keys: 4 heads (ALiBi's slopes and temperatures differ by head)
MAX_T = 48
NO_SCORE_MOD = "none"
PARAMS = (
    Param("studio_a", "causal_documents", url_state.Choice(tuple(GALLERY))),
    Param("studio_a_sizes", "", url_state.text),
    Param("studio_combine", "and", url_state.Choice(tuple(COMBINE))),  # packed documents, each with a sliding window
    Param("studio_b", "sliding_window", url_state.Choice(tuple(GALLERY))),
    Param("studio_b_sizes", "", url_state.text),
    Param("studio_score", NO_SCORE_MOD, url_state.Choice((NO_SCORE_MOD, *SCORE_MODS))),
    Param("studio_score_sizes", "", url_state.text),
    Param("studio_t", 12, url_state.Integer(2, MAX_T)),
    Param("studio_block", 4, url_state.Integer(1, MAX_T)),
    Param("studio_head", 0, url_state.Integer(0, HEADS - 1)),
)


def sizes_text(term: Term, factories: dict) -> str:
    """A term's sizes as the studio's text box shows them: "window=3, dilation=2"."""
    return ", ".join(f"{key}={text_of(value)}" for key, value in term.arguments(factories).items())


def read_term(name: str, sizes: str, factories: dict, what: str) -> Term:
    """The term of a name and its sizes' text ("window=3, dilation=2"; empty: the defaults); where the sizes are not
    the mask's, a warning naming them, and the defaults."""
    try:
        return Term.parse(":".join([name, *(part.strip() for part in sizes.split(",") if part.strip())]), factories)
    except ValueError as error:
        st.warning(f"{what}: {escape_markdown(str(error))}. Its defaults are used: {sizes_text(Term(name), factories)}.")
        return Term(name)


def term_controls(params: url_state.Params, key: str, label: str, factories: dict) -> None:
    """A term's name (choosing another resets its sizes to its defaults) and its sizes' text, where it has sizes."""
    sizes_key = f"{key}_sizes"
    getattr(params, key).selectbox(label, on_change=st.session_state.__setitem__, args=(sizes_key, ""))
    name = st.session_state[key]
    if name in factories and defaults(factories[name]):
        if not st.session_state.get(sizes_key):
            st.session_state[sizes_key] = sizes_text(Term(name), factories)
        st.text_input(f"{label}: sizes", key=sizes_key, help="Keyword arguments of its factory; 3-3-2 for a tuple.")


def controls(params: url_state.Params) -> None:
    """The studio's controls (the section's own: on a slide, in the controls' popover)."""
    term_controls(params, "studio_a", "Mask A", GALLERY)
    params.studio_combine.segmented_control("Combine", format_func=COMBINE_LABELS.get, required=True)
    if st.session_state["studio_combine"] not in ("a", "not"):
        term_controls(params, "studio_b", "Mask B", GALLERY)
    term_controls(params, "studio_score", "Score modification", SCORE_MODS)
    with st.container(horizontal=True):
        params.studio_t.number_input("Length T")
        params.studio_block.number_input("Block size", help="Tokens a side of a tile of the block mask.")
        params.studio_head.number_input("Head", help=f"One of the {HEADS} heads of the toy queries and keys.")
        params.seed.number_input("Seed", help="Seeds the toy queries and keys.")


def composition(values: url_state.Values) -> Composition:
    a = read_term(values.studio_a, values.studio_a_sizes, GALLERY, "Mask A")
    b = None if values.studio_combine in ("a", "not") else read_term(values.studio_b, values.studio_b_sizes, GALLERY, "Mask B")
    score = None
    if values.studio_score != NO_SCORE_MOD:
        score = read_term(values.studio_score, values.studio_score_sizes, SCORE_MODS, "Score modification")
    return Composition(a, b, values.studio_combine, score)


def describe(found: Composition) -> str:
    """The composition as a line: "sliding_window:window=3 or prefix_lm:prefix=3, then alibi:heads=8"."""
    a = found.a.format(GALLERY)
    if found.combine in ("a", "not"):
        shown = a if found.combine == "a" else f"not {a}"
    else:
        shown = f"{a} {COMBINE_LABELS[found.combine][2:-2]} {found.b.format(GALLERY)}"
    return shown + (f", then {found.score.format(SCORE_MODS)}" if found.score else "")


def studio_section(slides: page.Slides, values: url_state.Values, params: url_state.Params) -> None:
    """Section 7: the studio (``values.seed`` seeds its queries and keys)."""
    seed = values.seed
    with slides.section_controls():
        controls(params)
    with note_slot():  # a warning about a term's sizes
        found = composition(values)
    t, size, head = values.studio_t, min(values.studio_block, values.studio_t), values.studio_head
    slide.lead(
        "Compose a mask as FlexAttention does, from mask_mods combined with and, or and not, and a score_mod applied to "
        f"the scaled scores before it: here {describe(found)}, at T = {t}, on seeded toy queries and keys "
        f"({HEADS} heads of {HEAD_SIZE}). Below: what a block-sparse kernel does with it, and the code.",
        describe(found),
    )
    q, k = queries_and_keys(t, HEADS, HEAD_SIZE, seed)  # (1, H, T, d) each
    mask_mod, score_mod = found.mask_mod(), found.score_mod()
    positions = [str(i) for i in range(t)]
    if slides.part(1):
        scores = mod_scores(q, k, mask_mod, score_mod)  # (1, H, T, T), -inf where masked
        weights = softmax_seen(scores)[0, head]  # (T, T)
        mask = dense(mask_mod, t, heads=HEADS)[0, head]  # (T, T)
        with row(3) as charts:
            axes = {"row_title": "query", "col_title": "key"}
            matrix_step(charts, "Mask", "M = mask_mod(b, h, i, j)", mask, positions, positions, kind="mask", **axes)
            formula = r"S = \mathrm{score\_mod}(Q K^\top / \sqrt{d})"
            matrix_step(charts, f"Scores, head {head}", formula, scores[0, head], positions, positions, kind="signed", **axes)
            formula = r"A = \operatorname{softmax}(S)"
            matrix_step(charts, f"Weights, head {head}", formula, weights, positions, positions, kind="weights", **axes)
    if slides.part(2):
        blocks_row(mask_mod, t, size)
    code = flex_code(found, t, HEADS, HEAD_SIZE, seed, size)
    downloads.keep_code("flex_attention_studio", code)
    if slides.part(3):
        room = slide.on_slide(slide.room(1, lines_above=1))
        if room is None:
            st.code(code, language="python")
        else:  # what a slide has room for (the masks and the call), as high as the slide holds, scrolled within it
            brief = flex_code(found, t, HEADS, HEAD_SIZE, seed, size, brief=True)
            st.code(brief, language="python", height=room.height, wrap_lines=True)


def blocks_row(mask_mod, t: int, size: int) -> None:
    """The tiles of the mask in ``size`` × ``size`` blocks, and the shares of empty, partial and full tiles beside
    those of FlexAttention's create_block_mask."""
    kinds = block_kinds(mask_mod, t, size)  # (query blocks, key blocks)
    empty, partial, full = kinds.flatten().bincount(minlength=3).tolist()  # TILE_SKIPPED, TILE_PARTIAL, TILE_FULL
    flex = create_block_mask(mask_mod, 1, 1, t, t, device="cpu", BLOCK_SIZE=size)
    flex_partial, flex_full = int(flex.kv_num_blocks.sum()), int(flex.full_kv_num_blocks.sum())
    tiles = kinds.numel()
    flex_counts = {"empty": tiles - flex_partial - flex_full, "partial": flex_partial, "full": flex_full}
    with row(1, aside=METRIC_WIDTH) as charts:
        tile_map_block(charts, tile_names(kinds), size, t, f"T = {t}, {size} × {size} blocks")
        with st.container(width=METRIC_WIDTH):
            for name, ours in (("empty", empty), ("partial", partial), ("full", full)):
                help_text = f"{ours} of {tiles}; FlexAttention's create_block_mask: {flex_counts[name]}"
                st.metric(f"Blocks {name} (%)", f"{100 * ours / tiles:.0f}", help=help_text)
    if slide.presenting():  # a slide shows the tile map and its metrics, whose help has FlexAttention's counts
        return
    agree = "the same" if (empty, partial, full) == tuple(flex_counts.values()) else "otherwise"
    st.caption(
        f"FlexAttention's create_block_mask counts {agree}: {flex_counts['empty']} empty, {flex_partial} partial and "
        f"{flex_full} full of {tiles} blocks. A compiled flex_attention skips the empty ones and applies no mask to the full."
    )
