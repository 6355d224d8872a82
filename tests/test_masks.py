"""attn_core.masks: the masks of today's models against their definitions, and attention under each; the Mask object
(kind, sizes, boolean mask, label, formula, link text) against the builders."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from attn_core import (
    causal_mask,
    document_mask,
    flex,
    global_local_mask,
    prefix_lm_mask,
    query_key_padding_mask,
    tile_classes,
    window_mask,
)
from attn_core.masks import KINDS, MODEL_MASKS, Mask
from attn_core.sweep import (
    DEFAULT_METHODS,
    METHODS,
    SWEEP_MASKS,
    Settings,
    given_mask,
    mask_pairs,
    measure_length,
    runner,
    sdpa_mask,
)
from attn_core.tiled import TILE_FULL, TILE_PARTIAL, TILE_SKIPPED, TileClasses, TileStats, tiled_attention
from attn_core.timing import MIB, peak_bytes, sdpa_backend

MODEL_FORMS = r"documents:K, prefix:P,? (or )?global:W:G"  # the forms of the masks of today's models: more may follow
EVERY_FORM = rf"^a mask is none, causal, padding, both, window:W, {MODEL_FORMS}.* \(W ≥ 1, K ≥ 1, P ≥ 0, G ≥ 0.*\), not"


def by_definition(t: int, may_attend) -> torch.Tensor:
    return torch.tensor([[bool(may_attend(i, j)) for j in range(t)] for i in range(t)])


def test_document_mask_keeps_each_packed_document_to_itself_causally():
    lengths, t = [3, 1, 4], 10
    starts = [0, 3, 4]
    document = [d for d, n in enumerate(lengths) for _ in range(n)] + [None] * (t - sum(lengths))
    expected = by_definition(t, lambda i, j: document[i] is not None and document[i] == document[j] and j <= i)
    assert torch.equal(document_mask(lengths, t), expected)
    assert all(document_mask(lengths, t)[start, start] for start in starts)  # a document's first token sees itself
    with pytest.raises(ValueError, match="add up to at most 10"):
        document_mask([6, 5], t)


def test_prefix_lm_mask_is_bidirectional_in_the_prefix_and_causal_after():
    t, prefix = 7, 3
    expected = by_definition(t, lambda i, j: j <= i or (i < prefix and j < prefix))
    assert torch.equal(prefix_lm_mask(prefix, t), expected)
    assert torch.equal(prefix_lm_mask(0, t), torch.ones(t, t, dtype=torch.bool).tril())


def test_global_local_mask_adds_global_tokens_to_a_sliding_window():
    t, window, n_global = 9, 3, 2
    expected = by_definition(t, lambda i, j: i - window < j <= i or i < n_global or j < n_global)
    assert torch.equal(global_local_mask(t, window, n_global), expected)


@pytest.mark.parametrize(
    "mask",
    [document_mask([40, 24, 64], 130), prefix_lm_mask(50, 130), global_local_mask(130, 32, 4)],
    ids=["document", "prefix_lm", "global_local"],
)
def test_tiled_attention_under_each_mask_matches_sdpa(mask):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 130, 16, dtype=torch.float64) for _ in range(3))  # (B, H, T, d)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).nan_to_num()  # SDPA: NaN on a fully masked row
    assert torch.allclose(tiled_attention(q, k, v, mask=mask, block_q=32, block_k=32), expected, atol=1e-12)


def test_tiles_a_mask_hides_are_skipped_and_those_it_leaves_whole_are_not_masked():
    """4 packed documents of 64 tokens in 32 × 32 tiles: each document has 2 diagonal tiles (masked, causal) and one
    below them that it sees whole; the other 52 of the 64 tiles lie between documents and are never computed."""
    q, k, v = (torch.randn(1, 1, 256, 8) for _ in range(3))  # (B, H, T, d)
    stats = TileStats()
    tiled_attention(q, k, v, mask=document_mask([64] * 4, 256), block_q=32, block_k=32, stats=stats)
    assert (stats.tiles, stats.computed, stats.masked, stats.skipped) == (64, 12, 8, 52)


@pytest.mark.parametrize("shape", [(70, 90), (2, 1, 70, 90), (2, 1, 1, 90)], ids=["shared", "per_batch", "key_padding"])
def test_tile_classes_follow_the_mask_over_every_head(shape):
    """Each tile of the grid is hidden (no head sees any of it), full (every head sees all of it) or partial, the last,
    shorter blocks included, for a mask of any broadcastable shape."""
    mask = torch.ones(shape, dtype=torch.bool)
    mask[..., -1, 85:] = False  # the last row (or every row, for a key-padding mask) loses its last keys: partial tiles
    mask[..., -22:, :32] = False  # the last 22 rows (or all) see none of the first keys: hidden tiles
    mask.view(-1)[0] = False  # one head's first cell: a tile partial for all heads together
    classes = TileClasses(mask, 70, 90, 16, 32)
    every = mask.expand(*shape[:-2], 70, 90).reshape(-1, 70, 90)  # (heads it names, Tq, Tk)
    for q_block, q_start in enumerate(range(0, 70, 16)):
        for k_block, k_start in enumerate(range(0, 90, 32)):
            tile = every[:, q_start : q_start + 16, k_start : k_start + 32]
            assert classes.any[q_block][k_block] == bool(tile.any())
            assert classes.all[q_block][k_block] == bool(tile.all())
            expected = False if not tile.any() else True if tile.all() else None
            assert classes.seen(range(q_start, min(70, q_start + 16)), range(k_start, min(90, k_start + 32))) == expected
    assert classes.seen(range(8, 24), range(0, 32)) is None  # rows from two tiles: the mask is read
    assert {None, True, False} <= {
        classes.seen(range(q, min(70, q + 16)), range(k, min(90, k + 32))) for q in range(0, 70, 16) for k in range(0, 90, 32)
    }  # every class occurs


@pytest.mark.parametrize(
    "mask",
    [document_mask([40, 24, 64], 130), prefix_lm_mask(50, 130), global_local_mask(130, 20, 3)],
    ids=["document", "prefix_lm", "global_local"],
)
def test_tile_classes_are_what_tiled_attention_does(mask):
    """Each tile is skipped where the mask hides all of it, full where it hides none, partial otherwise (the last,
    shorter blocks included); tiled_attention with the same blocks computes the tiles not skipped, each on its rows
    that see some key, and masks those where one of these rows does not see every key."""
    block_q, block_k = 32, 16
    classes = tile_classes(mask, block_q, block_k)
    assert classes.shape == (5, 9)  # ⌈130 / 32⌉ × ⌈130 / 16⌉
    masked = 0
    for q_block, q_start in enumerate(range(0, 130, block_q)):
        for k_block, k_start in enumerate(range(0, 130, block_k)):
            tile = mask[q_start : q_start + block_q, k_start : k_start + block_k]
            expected = TILE_FULL if tile.all() else TILE_PARTIAL if tile.any() else TILE_SKIPPED
            assert classes[q_block, k_block] == expected
            seeing = tile[tile.any(dim=1)]  # the rows the kernel computes
            masked += expected == TILE_PARTIAL and not seeing.all()
    q, k, v = (torch.randn(1, 1, 130, 8) for _ in range(3))  # (B, H, T, d): one head, so a tile is one grid cell
    stats = TileStats()
    tiled_attention(q, k, v, mask=mask, block_q=block_q, block_k=block_k, stats=stats)
    counts = {kind: int((classes == kind).sum()) for kind in (TILE_SKIPPED, TILE_PARTIAL, TILE_FULL)}
    assert (stats.tiles, stats.skipped, stats.masked) == (classes.numel(), counts[TILE_SKIPPED], masked)


def test_model_mask_specs_build_their_masks_at_each_length():
    """A "documents:K" mask splits T into K lengths at most one apart; P and G are cut to T; the pairs counted for FLOPs are
    the mask's True entries."""
    assert torch.equal(given_mask(Mask.parse("documents:3"), 10), document_mask([4, 3, 3], 10))
    assert torch.equal(given_mask(Mask.parse("documents:16"), 8), document_mask([1] * 8, 8))  # K cut to T
    assert torch.equal(given_mask(Mask.parse("prefix:4"), 10), prefix_lm_mask(4, 10))
    assert torch.equal(given_mask(Mask.parse("prefix:99"), 10), prefix_lm_mask(10, 10))
    assert torch.equal(given_mask(Mask.parse("global:3:2"), 10), global_local_mask(10, 3, 2))
    assert torch.equal(sdpa_mask(Mask.parse("global:3:2"), 10), global_local_mask(10, 3, 2))
    assert torch.equal(sdpa_mask(Mask.parse("window:3"), 10), window_mask(10, 3))
    assert given_mask(Mask.parse("window:3"), 10) is None and sdpa_mask(Mask.parse("causal"), 10) is None
    assert mask_pairs(Mask.parse("documents:2"), 10) == 2 * (5 * 6 / 2) and mask_pairs(Mask.parse("causal"), 10) == 50
    assert Mask.parse("prefix:0") == Mask("prefix", (0,)) and Mask.parse("global:8:0").sizes == (8, 0)
    for bad in ("documents", "documents:0", "documents:x", "prefix:-1", "prefix:2:3", "global:4", "global:0:2", "global:4:²"):
        with pytest.raises(ValueError, match=MODEL_FORMS):
            Mask.parse(bad, SWEEP_MASKS)
    with pytest.raises(ValueError):
        Settings(masks=("documents:0",))
    with pytest.raises(ValueError, match="none, causal, window:W, " + MODEL_FORMS):
        Settings(masks=("padding",))  # a padded batch's mask: a sweep has no batch lengths


def test_a_sweep_runs_every_method_under_a_model_mask_against_sdpa():
    """Each method is given the same boolean mask, its output compared with SDPA's under it; GFLOP/s count the pairs
    the mask lets through."""
    settings = Settings(lengths=(64,), repeats=1, masks=("documents:4", "global:8:2"))
    runs = [(method, mask) for method in METHODS for mask in settings.masks]
    points = measure_length(settings, 64, runs, timer=lambda run, number: 0.002 * number)
    assert [(p.method, p.mask) for p in points] == runs
    for point in points:
        assert point.max_diff < 1e-5
        pairs = float(Mask.parse(point.mask).boolean(64).sum())
        assert point.gflops == pytest.approx(4 * 8 * 64 * pairs / (point.median_ms / 1000) / 1e9)


@pytest.mark.parametrize("t", [512, 2048])
@pytest.mark.parametrize("method", DEFAULT_METHODS)
def test_memory_estimate_under_a_model_mask_covers_the_measured_peak(method, t):
    """With a boolean mask: naive negates it, SDPA makes a float copy of it, tiled classifies its tiles (three T × T
    booleans, which pass its tiles' memory at long T) and masks a tile of every head of a chunk."""
    settings = Settings(lengths=(t,), masks=("documents:4",))
    q, k, v = (torch.randn(settings.shape(t)) for _ in range(3))
    documents = Mask.parse("documents:4").boolean(t)  # (T, T)
    call = runner(method, q, k, v, mask=documents)
    measured = peak_bytes(call, torch.device("cpu"))
    estimate = settings.working_bytes(method, t, sdpa_backend(q, k, v, False, documents))
    assert measured <= estimate < 1.5 * measured + 2 * MIB  # an upper bound, and a close one


@pytest.mark.parametrize("t", [512, 2048])
def test_flexattentions_memory_estimate_covers_its_block_mask_and_its_calls(t):
    """Making the block mask evaluates the mask_mod at every pair (T² of temporaries); a call holds a few outputs."""
    settings = Settings(lengths=(t,), masks=("documents:4",), methods=("flex",))
    q, k, v = (torch.randn(settings.shape(t)) for _ in range(3))
    made = peak_bytes(lambda: flex.runner(q, k, v, Mask.parse("documents:4")), torch.device("cpu"))
    call = flex.runner(q, k, v, Mask.parse("documents:4"))
    measured = max(made, peak_bytes(call, torch.device("cpu")))
    estimate = settings.working_bytes("flex", t)
    assert measured <= estimate < 1.5 * measured + 2 * MIB  # an upper bound, and a close one


def test_flexattention_past_the_kernels_kept_compiles_anew_and_never_runs_uncompiled():
    """Dynamo keeps a number of compiled kernels for flex_attention (flex.RECOMPILES), one per mask and shape; past it,
    it would run flex_attention uncompiled for the rest of the process, every head's T × T scores in memory (a whole
    test suite in one process came to it). Here it keeps one: a second length still runs compiled, and right."""
    flex.compiled()  # sets the number kept, which the test then lowers
    documents = Mask.parse("documents:4")
    with torch._dynamo.config.patch(recompile_limit=1):
        for t in (64, 256):
            q, k, v = (torch.randn(1, 8, t, 64) for _ in range(3))
            call = flex.runner(q, k, v, documents)
            out = call()  # the first call compiles
            assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v, attn_mask=documents.boolean(t)), atol=1e-5)
        compiled_peak = peak_bytes(call, torch.device("cpu"))
    blocks = create_block_mask(documents.mask_mod(t), None, None, t, t)
    uncompiled = peak_bytes(lambda: flex_attention(q, k, v, block_mask=blocks), torch.device("cpu"))
    assert uncompiled > 8 * t * t * 4  # every head's scores: what a call past the limit would hold
    assert compiled_peak < uncompiled / 3


# --- the Mask object ---------------------------------------------------------------------------

EXAMPLES = {  # kind: a mask of that kind with sizes, and its link text
    "none": (Mask("none"), "none"),
    "causal": (Mask("causal"), "causal"),
    "padding": (Mask("padding"), "padding"),
    "both": (Mask("both"), "both"),
    "window": (Mask("window", (3,)), "window:3"),
    "documents": (Mask("documents", (4,)), "documents:4"),
    "prefix": (Mask("prefix", (0,)), "prefix:0"),
    "global": (Mask("global", (256, 16)), "global:256:16"),
}


def test_every_kind_has_an_example():
    assert set(EXAMPLES) == set(KINDS) and set(MODEL_MASKS) <= set(KINDS)


@pytest.mark.parametrize("kind", list(EXAMPLES))
def test_a_mask_round_trips_through_its_link_text(kind):
    mask, text = EXAMPLES[kind]
    assert mask.format() == text and Mask.parse(text) == mask and Mask.parse(mask.format()) == mask
    assert mask.label == KINDS[kind].label and mask.formula.startswith("M_{")


def test_documents_take_k_equal_documents_or_their_lengths():
    """documents:K is K equal documents at every length; documents:L1:L2:… documents of those lengths, cut to T, the
    tokens after them one more document; packed lengths that leave one document are documents:1."""
    assert Mask.parse("documents:3:3:10") == Mask("documents", (3, 3, 10))
    assert Mask("documents", (3, 3, 10)).format() == "documents:3:3:10"
    assert torch.equal(Mask("documents", (3, 3)).boolean(16), document_mask([3, 3, 10], 16))
    assert torch.equal(Mask("documents", (5, 9)).boolean(7), document_mask([5, 2], 7))
    assert Mask.packed([3, 3], 16) == Mask("documents", (3, 3, 10)) and Mask.packed([3, 3], 6) == Mask("documents", (3, 3))
    assert Mask.packed([20], 16) == Mask("documents", (1,)) and Mask.packed([5, 9], 4) == Mask("documents", (1,))


@pytest.mark.parametrize(
    "text",
    ["", "None", "sideways", "window", "window:0", "window:-3", "window:3:4", "window:٣", "documents:3:0", "prefix:",
     "global:4", "global:0:2", "causal:1", "padding:3", "custom"],
)  # fmt: skip
def test_bad_link_text_is_refused_naming_every_form(text):
    with pytest.raises(ValueError, match=EVERY_FORM):
        Mask.parse(text)


def test_a_mask_of_a_kind_or_sizes_it_does_not_have_is_refused():
    for kind, sizes in (("sideways", ()), ("window", ()), ("window", (0,)), ("prefix", (1, 2)), ("causal", (3,))):
        with pytest.raises(ValueError, match="is not a mask"):
            Mask(kind, sizes)


def test_kinds_a_caller_does_not_take_are_refused_naming_those_it_does():
    assert Mask.parse("window:4", ("none", "window")) == Mask("window", (4,))
    with pytest.raises(ValueError, match=r"a mask is none or window:W \(W ≥ 1\), not 'causal'"):
        Mask.parse("causal", ("none", "window"))


@pytest.mark.parametrize("t", [1, 5, 9])
def test_each_boolean_mask_is_its_builder(t):
    lengths = [t, max(1, t - 2), 1]  # a padded batch's real lengths
    padding = query_key_padding_mask(lengths, t)  # (B, t, t)
    assert torch.equal(Mask("none").boolean(t), torch.ones(t, t, dtype=torch.bool))
    assert torch.equal(Mask("causal").boolean(t), causal_mask(t))
    assert torch.equal(Mask("causal").boolean(t, lengths), causal_mask(t))  # causal alone leaves the [PAD]s seen
    assert torch.equal(Mask("padding").boolean(t, lengths), padding)
    assert torch.equal(Mask("both").boolean(t, lengths), padding & causal_mask(t))
    assert torch.equal(Mask("window", (2,)).boolean(t), window_mask(t, 2))
    assert torch.equal(Mask("window", (2,)).boolean(t, lengths), padding & window_mask(t, 2))
    assert torch.equal(Mask("documents", (2,)).boolean(t), document_mask([(t + 1) // 2, t // 2][: min(2, t)], t))
    assert torch.equal(Mask("prefix", (3,)).boolean(t), prefix_lm_mask(min(3, t), t))
    assert torch.equal(Mask("global", (2, 1)).boolean(t), global_local_mask(t, 2, 1))
    assert Mask("prefix", (3,)).boolean(t, device="cpu").device == torch.device("cpu")
