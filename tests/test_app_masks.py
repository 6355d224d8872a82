"""The masks of today's models in the app, run by AppTest from streamlit_app.py: the Masking view's masks and their
tile maps, the Cost view measuring them against dense, and links that keep their parameters."""

from __future__ import annotations

import itertools

import pytest
import torch

from attn_core import document_mask, tokenize
from attn_core.bench import REFERENCE_SETTINGS, reference_results
from attn_core.examples import MASKING_SENTENCES
from attn_core.masking import BATCH_MASKS, CUSTOM
from attn_core.masks import KINDS, Mask
from attn_core.sweep import SWEEP_MASKS, Settings
from attn_core.timing import format_bytes
from attn_ui import mask_tiles, measure
from tests.conftest import assert_clean, chart_frames, chart_headings, heatmap_values, open_view, texts

COST = "pages/5_Cost.py"
METHODS = ("naive", "sdpa", "tiled")


# --- Cost ------------------------------------------------------------------------------------


def test_cost_measures_a_document_mask_against_dense_on_request():
    at = open_view(COST, mask="documents", documents="4", T_max="128", repeats="1", heads="2")
    assert_clean(at)
    assert at.radio(key="mask").value == "documents" and at.number_input(key="documents").value == 4
    drawn = {row["series"] for rows in chart_frames(at) if rows and "median ms" in rows[0] for row in rows}
    assert drawn == {f"{method} (reference)" for method in METHODS}  # the shipped documents:4 results; nothing measured
    at.button(key="run").click().run()
    assert_clean(at)
    points = at.session_state["cost_sweep"].points
    assert sorted((p.method, p.mask, p.T) for p in points) == sorted(
        (method, mask, 128) for method in METHODS for mask in ("none", "documents:4")
    )
    assert all(p.max_diff < 1e-5 for p in points)  # each against SDPA under the same mask
    time_rows = next(rows for rows in chart_frames(at) if rows and "median ms" in rows[0])
    measured = {f"{method} {mask}" for method in METHODS for mask in ("none", "documents:4")}
    assert {row["series"] for row in time_rows} == measured | drawn  # beside the reference
    medians = {(p.method, p.mask): p.median_ms for p in points}
    share = float(document_mask([32] * 4, 128).sum()) / 128**2
    against = next(text for text in texts(at, "markdown") if text.startswith("**Against dense**"))
    assert f"at T = 128 (documents:4 lets {share:.0%} of the query-key pairs through)" in against
    for method in METHODS:
        assert f"{method} {medians[method, 'documents:4'] / medians[method, 'none']:.2f}×" in against
    assert measure.dense_ratios(list(points), "documents:4") == against


def test_cost_link_keeps_the_model_mask_parameters_and_reports_bad_ones():
    at = open_view(COST, mask="global", window="64", global_tokens="8")
    assert_clean(at)
    assert (at.number_input(key="window").value, at.number_input(key="global_tokens").value) == (64, 8)
    settings = Settings(masks=("none", "global:64:8"))  # the view's defaults otherwise
    long_contexts = next(df.value for df in at.table if "tiled needs ≈" in df.value.columns)
    for text, tiled in zip(long_contexts["T"], long_contexts["tiled needs ≈"], strict=True):
        t = int(text.replace(",", ""))  # the mask's own estimate: its T × T classification grows like T²
        assert tiled == format_bytes(settings.input_bytes(t) + settings.working_bytes("tiled", t, mask="global:64:8"))
    at.number_input(key="window").set_value(32).run()
    assert (at.query_params["mask"], at.query_params["window"], at.query_params["global_tokens"]) == ("global", "32", "8")
    at = open_view(COST, mask="prefix", prefix="-5", documents="zero")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert "prefix = “\\-5”" in warning and "documents = “zero”" in warning
    assert at.radio(key="mask").value == "prefix" and at.number_input(key="prefix").value == 256


# --- Masking ---------------------------------------------------------------------------------

MASKING = "pages/3_Masking.py"
T = max(len(tokenize(sentence)) for sentence in MASKING_SENTENCES.split("|"))  # the default batch's padded length
LINK = {"documents": "2,3", "prefix": "4", "global_window": "2", "n_global": "1", "tile_t": "128", "tile_block": "16"}


def by_definition(kind: str, t: int, documents: list[int], prefix: int, window: int, n_global: int) -> torch.Tensor:
    """(t, t) boolean: each mask written out from its definition, query i and key j; the tokens after the documents
    are one more document (a packed row has no padding)."""
    document = [d for d, n in enumerate(documents) for _ in range(n)] + [len(documents)] * (t - sum(documents))
    rules = {
        "documents": lambda i, j: document[i] == document[j] and j <= i,
        "prefix": lambda i, j: j <= i or (i < prefix and j < prefix),
        "global": lambda i, j: i - window < j <= i or i < n_global or j < n_global,
    }
    return torch.tensor([[rules[kind](i, j) for j in range(t)] for i in range(t)])


def scaled_by_definition(kind: str, t: int) -> torch.Tensor:
    """LINK's mask at the tile map's length: each size times tile_t / T, the documents by their ends."""
    scale = int(LINK["tile_t"]) / T
    ends = [round(end * scale) for end in (2, 5)]
    documents = [ends[0], ends[1] - ends[0]]
    return by_definition(kind, t, documents, round(4 * scale), max(1, round(2 * scale)), round(1 * scale))


def tile_classes_by_definition(mask: torch.Tensor, size: int) -> dict[tuple[int, int], str]:
    t = mask.shape[0]
    found = {}
    for q_block, q_start in enumerate(range(0, t, size)):
        for k_block, k_start in enumerate(range(0, t, size)):
            tile = mask[q_start : q_start + size, k_start : k_start + size]
            found[q_block, k_block] = "full" if tile.all() else "partial" if tile.any() else "skipped"
    return found


def tile_map_classes(at) -> dict[tuple[int, int], str]:
    rows = next(rows for rows in chart_frames(at) if rows and "class" in rows[0])
    return {(row["q_block"], row["k_block"]): row["class"] for row in rows}


@pytest.mark.parametrize("kind", ["documents", "prefix", "global"])
def test_masking_shows_each_model_mask_and_its_tile_map(kind):
    at = open_view(MASKING, slide="6", model_mask=kind, **LINK)
    assert_clean(at)
    expected = by_definition(kind, T, [2, 3], 4, 2, 1)
    assert [torch.equal(matrix.bool(), expected) for matrix in heatmap_values(at, T, T)] == [True]
    lead = next(text for text in texts(at, "markdown") if text.startswith("**"))
    assert lead.startswith(f"**{KINDS[kind].label}**")
    t, size = int(LINK["tile_t"]), int(LINK["tile_block"])
    classes = tile_classes_by_definition(scaled_by_definition(kind, t), size)
    assert tile_map_classes(at) == classes
    counted = {name: sum(value == name for value in classes.values()) for name in ("skipped", "full", "partial")}
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Tiles skipped (%)"] == f"{100 * counted['skipped'] / len(classes):.0f}"
    # the kernel computes, of each tile not skipped, its rows that see some key; it masks those where one does not see all
    mask, computed, masked = scaled_by_definition(kind, t), 0, 0
    for q_block, k_block in (block for block, name in classes.items() if name != "skipped"):
        tile = mask[q_block * size : (q_block + 1) * size, k_block * size : (k_block + 1) * size]
        seeing = tile[tile.any(dim=1)]
        computed, masked = computed + seeing.numel(), masked + (not seeing.all())
    assert metrics["Pairs not computed (%)"] == f"{100 - 100 * computed / t**2:.0f}"
    assert metrics["Tiles that need the mask"] == f"{masked} of {len(classes) - counted['skipped']}"
    assert masked <= counted["partial"]
    caption = next(text for text in texts(at, "caption") if "tiles;" in text)
    assert caption.startswith(f"{counted['skipped']} skipped, {counted['full']} full and {counted['partial']} partial")
    assert (kind in mask_tiles.STEPPED) == any(slider.key == "step" for slider in at.slider)  # causal: generation steps


def test_document_lengths_short_of_the_sentence_leave_no_row_empty():
    """Sixteen words and the default lengths 3, 3: the ten tokens after them are one more document, each seeing the
    tokens before it in that document, not rows that see nothing."""
    sentence = "the quick brown fox jumps over a lazy dog while my friend reads an old book"
    at = open_view(MASKING, slide="6", text=sentence)
    assert_clean(at)
    (shown,) = heatmap_values(at, 16, 16)
    assert torch.equal(shown.bool(), document_mask([3, 3, 10], 16)) and shown.bool().any(dim=1).all()
    assert any("documents of 3, 3, 10 tokens" in heading for heading in chart_headings(at))


def test_the_generation_step_outlines_its_query_in_a_model_mask():
    at = open_view(MASKING, slide="6", model_mask="prefix")
    at.slider(key="step").set_value(5).run()
    assert_clean(at)
    rows = next(rows for rows in chart_frames(at) if rows and "highlight" in rows[0])
    assert {row["row"] for row in rows if row["highlight"]} == {4}
    assert at.query_params["step"] == "5"


def test_a_masking_link_with_model_mask_parameters_reproduces_the_view():
    at = open_view(MASKING, slide="6", model_mask="global")
    at.slider(key="global_window").set_value(4).run()
    at.slider(key="n_global").set_value(2).run()
    at.selectbox(key="tile_t").set_value(512).run()
    assert_clean(at)
    link = {key: at.query_params[key] for key in ("model_mask", "global_window", "n_global", "tile_t", "slide")}
    assert link == {"model_mask": "global", "global_window": "4", "n_global": "2", "tile_t": "512", "slide": "6"}
    again = open_view(MASKING, **link)
    assert_clean(again)
    assert [torch.equal(matrix.bool(), by_definition("global", T, [], 0, 4, 2)) for matrix in heatmap_values(again, T, T)] == [
        True
    ]
    assert tile_map_classes(again) == tile_map_classes(at) and len(tile_map_classes(again)) == (512 // 32) ** 2


def test_bad_model_mask_values_in_a_link_are_reported_and_replaced():
    at = open_view(MASKING, slide="6", model_mask="sparse", documents="0,2", prefix="99", tile_block="5")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    for problem in ("model_mask = “sparse”", "documents = “0,2”", "prefix = “99”", "tile_block = “5”"):
        assert problem in warning
    assert at.session_state["model_mask"] == "documents" and at.text_input(key="documents").value == "3,3"
    assert [torch.equal(m.bool(), by_definition("documents", T, [3, 3], 0, 1, 0)) for m in heatmap_values(at, T, T)] == [True]
    # Documents longer than the batch are cut to it, and a tile too small for a long T becomes the smallest that fits.
    at = open_view(MASKING, slide="6", documents="5,9", tile_t="1024", tile_block="8")
    assert_clean(at)
    assert [torch.equal(m.bool(), by_definition("documents", T, [5, T - 5], 0, 1, 0)) for m in heatmap_values(at, T, T)] == [True]
    assert at.selectbox(key="tile_block").value == 1024 // mask_tiles.MAX_TILES


def test_document_lengths_typed_wrong_are_reported_and_replaced():
    at = open_view(MASKING, slide="6")
    at.text_input(key="documents").input("3, x").run()
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    assert "documents = “3, x”" in warning and "whole numbers" in warning  # said, with the reason
    assert at.text_input(key="documents").value == "3,3"  # and the default drawn
    at.text_input(key="documents").input("2,4").run()
    assert_clean(at)
    assert not [text for text in texts(at, "warning") if "not used as given" in text]  # gone once a value is understood
    assert [torch.equal(m.bool(), by_definition("documents", T, [2, 4], 0, 1, 0)) for m in heatmap_values(at, T, T)] == [True]


# --- every view's masks through their link text ----------------------------------------------


def offered_masks() -> list[Mask]:
    """Every mask a view offers: the Cost view's, each kind of its menu with its sizes at their bounds and defaults, and
    its reference results'; the Masking view's batch masks (windows of 1 to 16 keys), its masks of today's models on 1
    to 16 tokens (document lengths, prefixes, windows, global tokens) and their tile maps' at each of the map's lengths."""
    cost = [Mask(kind) for kind in ("none", "causal")]
    cost += [Mask("window", (w,)) for w in (1, 256, 2**20)] + [Mask("documents", (k,)) for k in (1, 4, 64)]
    cost += [Mask("prefix", (p,)) for p in (0, 256, 2**20)] + [Mask("global", (w, g)) for w in (1, 256) for g in (0, 16, 1024)]
    cost += [Mask.parse(point.mask) for point in reference_results().points]
    cost += [Mask.parse(text, SWEEP_MASKS) for text in REFERENCE_SETTINGS.masks]
    batch = [Mask(kind, (w,) if kind == "window" else ()) for kind in BATCH_MASKS if kind != CUSTOM for w in range(1, 17)]
    models, tile_maps = [], []
    for t in range(1, 17):
        on_tokens = [Mask.packed(lengths, t) for n in (1, 2, 3) for lengths in itertools.product((1, 3, 16), repeat=n)]
        on_tokens += [Mask("prefix", (p,)) for p in range(t + 1)]
        on_tokens += [Mask("global", (w, g)) for w in range(1, t + 1) for g in (0, t)]
        models += on_tokens
        tile_maps += [mask_tiles.scaled(mask, t, tile_t) for mask in on_tokens for tile_t in mask_tiles.TILE_LENGTHS[::2]]
    return cost + batch + models + tile_maps


def test_every_mask_a_view_offers_round_trips_through_its_link_text():
    masks = offered_masks()
    assert {mask.kind for mask in masks} == set(KINDS)
    for mask in masks:
        assert Mask.parse(mask.format()) == mask, mask
