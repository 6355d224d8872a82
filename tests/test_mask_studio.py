"""The mask studio's model (attn_core.mask_studio): compositions of gallery masks, their link texts, and the
FlexAttention code that takes them away, run here and compared with the dense reference."""

from __future__ import annotations

import ast

import pytest
import torch

from attn_core.mask_mods import GALLERY, SCORE_MODS, dense, mod_weights
from attn_core.mask_studio import COMBINE, Composition, Term, flex_code, queries_and_keys

T, HEADS, D, SEED, BLOCK = 12, 4, 8, 3, 4


def weights_of_code(composition: Composition) -> torch.Tensor:
    """The weights the studio's code computes, run as a user would run it."""
    scope: dict = {}
    exec(flex_code(composition, T, HEADS, D, SEED, BLOCK), scope)  # noqa: S102 (our own generated code)
    return scope["weights"]


def shown_weights(composition: Composition) -> torch.Tensor:
    q, k = queries_and_keys(T, HEADS, D, SEED)
    return mod_weights(q, k, composition.mask_mod(), composition.score_mod())


@pytest.mark.parametrize("name", GALLERY)
def test_each_gallery_masks_code_gives_the_weights_shown(name):
    composition = Composition(Term(name))
    assert torch.allclose(weights_of_code(composition), shown_weights(composition), atol=1e-6)


@pytest.mark.parametrize("combine", COMBINE)
@pytest.mark.parametrize("score", [None, *SCORE_MODS, "alibi:heads=2", "head_temperature:temperatures=0.5"])
def test_compositions_and_score_mods_code_gives_the_weights_shown(combine, score):
    composition = Composition(
        Term("causal_documents", {"lengths": (5, 4)}),
        Term("shared_prefix", {"prefix": 3, "continuations": (2, 4)}),
        combine,
        Term.parse(score, SCORE_MODS) if score else None,  # fewer slopes or temperatures than heads: the last repeats
    )
    assert torch.allclose(weights_of_code(composition), shown_weights(composition), atol=1e-6)


def test_the_combinations_are_and_or_and_not():
    a, b = Term("sliding_window", {"window": 3}), Term("prefix_lm", {"prefix": 4})
    mask_a, mask_b = dense(GALLERY["sliding_window"](window=3), T), dense(GALLERY["prefix_lm"](prefix=4), T)
    expected = {"a": mask_a, "and": mask_a & mask_b, "or": mask_a | mask_b, "and_not": mask_a & ~mask_b, "not": ~mask_a}
    for combine, mask in expected.items():
        assert torch.equal(dense(Composition(a, b, combine).mask_mod(), T), mask), combine


@pytest.mark.parametrize("factories", [GALLERY, SCORE_MODS], ids=["masks", "score mods"])
def test_every_term_round_trips_through_its_link_text(factories):
    for name in factories:
        term = Term(name)
        text = term.format(factories)
        assert Term.parse(text, factories).arguments(factories) == term.arguments(factories), text
    assert Term.parse("documents:lengths=3-3-2", GALLERY).sizes == {"lengths": (3, 3, 2)}
    assert Term.parse("sliding_window:window=5", GALLERY).format(GALLERY) == "sliding_window:window=5"


@pytest.mark.parametrize(
    "text, message",
    [
        ("hexagon", "not one of"),
        ("sliding_window:width=3", "takes window"),
        ("sliding_window:window=x", "must be a number"),
        ("sliding_window:window=0", "between 1 and"),
        ("chunked:chunk=99999", "between 1 and"),
        ("documents:lengths=3--2", "must be a number"),
    ],
)
def test_a_bad_term_says_what_a_term_is(text, message):
    with pytest.raises(ValueError, match=message):
        Term.parse(text, GALLERY)


@pytest.mark.parametrize("score", [None, "alibi"])
def test_a_slides_brief_code_is_the_full_codes_masks_and_call(score):
    """A 1024 × 576 slide holds about 16 lines of code: the brief code keeps the masks, their combination and the
    call, each line as in the full file, which the view's bundle holds."""
    composition = Composition(
        Term("causal_documents", {"lengths": (5, 4)}),
        Term("sliding_window"),
        "and",
        Term.parse(score, SCORE_MODS) if score else None,
    )
    full, brief = (flex_code(composition, T, HEADS, D, SEED, BLOCK, brief=b).splitlines() for b in (False, True))
    ast.parse("\n".join(brief))  # Python still
    kept = [line for line in brief if line and not line.startswith(("#", "def segment"))]
    assert all(line in full for line in kept) and len(brief) <= 16, brief
    assert {
        "mask_mod = and_masks(mask_a, mask_b)",
        *[line for line in full if line.startswith(("block_mask", "weights"))],
    } <= set(kept)
    assert not [line for line in brief if line.startswith(("import", "from", "generator", "q, k", "values"))]
