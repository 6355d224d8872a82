"""The Masking view's mask studio (section 7), run by AppTest from streamlit_app.py: a composition opened by a link,
its weights and block counts, bad values, a sequence of changes, and its FlexAttention code run in a fresh
interpreter against the page's weights."""

from __future__ import annotations

import json
import subprocess
import sys

import torch

from attn_core.mask_mods import GALLERY, SCORE_MODS
from attn_core.mask_studio import Composition, Term
from attn_core.masks import block_counts
from tests.conftest import assert_clean, heatmap_values, open_view, shown, texts

MASKING = "pages/3_Masking.py"
LINK = {
    "slide": "7",
    "studio_a": "causal_documents",
    "studio_a_sizes": "lengths=6-5",
    "studio_combine": "or",
    "studio_b": "sink_window",
    "studio_b_sizes": "window=2, sinks=1",
    "studio_score": "alibi",
    "studio_t": "13",
    "studio_block": "4",
    "studio_head": "1",
    "seed": "5",
}


def page_weights(at) -> torch.Tensor:
    """The studio's weights heatmap (13 × 13; the mask and scores heatmaps have cells NaN or categories)."""
    matrices = [
        m for m in heatmap_values(at, 13, 13) if not m.isnan().any() and torch.allclose(m.sum(1), torch.ones(13, dtype=m.dtype))
    ]
    assert len(matrices) == 1
    return matrices[0]


def test_a_link_opens_its_composition_and_the_code_reproduces_its_weights_in_a_fresh_interpreter():
    at = open_view(MASKING, **LINK)
    assert_clean(at)
    composition = Composition(
        Term("causal_documents", {"lengths": (6, 5)}), Term("sink_window", {"window": 2, "sinks": 1}), "or", Term("alibi")
    )
    empty, partial, full = block_counts(composition.mask_mod(), 13, 4)
    metrics = {metric.label: metric.value for metric in at.metric}
    assert metrics["Blocks empty (%)"] == f"{100 * empty / 16:.0f}" and metrics["Blocks full (%)"] == f"{100 * full / 16:.0f}"
    assert any("create_block_mask counts the same" in text for text in texts(at, "caption"))
    code = at.code[0].value
    script = code + "\nimport json\nprint(json.dumps(weights[0, 1].tolist()))\n"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    from_code = torch.tensor(json.loads(run.stdout.strip().splitlines()[-1]), dtype=torch.float64)
    assert torch.allclose(from_code, page_weights(at), atol=1e-5)  # head 1, as the page shows it
    assert at.session_state["_shown"].code["flex_attention_studio"].rstrip() == code.rstrip()  # in the view's bundle too


def test_a_slide_shows_the_masks_and_the_call_and_the_bundle_keeps_the_whole_file():
    at = open_view(MASKING, **(LINK | {"present": "on", "part": "3"}))
    assert_clean(at)
    (shown_code,) = [block.value for block in at.code]
    whole = at.session_state["_shown"].code["flex_attention_studio"]
    assert shown_code.startswith("# The masks and the call") and "import torch" not in shown_code
    assert "mask_mod = or_masks(mask_a, mask_b)" in shown_code and "weights = flex_attention(" in shown_code
    assert whole.startswith("import torch") and len(shown_code.splitlines()) < len(whole.splitlines())


def test_bad_values_in_a_link_are_reported_and_the_studio_draws_its_defaults():
    query = {"studio_a": "hexagon", "studio_a_sizes": "window=3", "studio_b_sizes": "window=-1", "studio_score": "alibi"}
    at = open_view(MASKING, slide="7", **query, studio_score_sizes="heads=x")
    assert_clean(at)
    warnings = shown(" ".join(texts(at, "warning")))
    assert "studio_a" in warnings and "causal_documents takes lengths, not 'window'" in warnings  # A: its default
    assert "window must be between 1" in warnings and "heads must be a number" in warnings
    assert at.code and at.metric


def test_a_links_sizes_are_shown_as_typed_in_the_studios_warning():
    at = open_view(MASKING, slide="7", studio_a="sliding_window", studio_a_sizes="[prize](example.com)=1")
    assert_clean(at)
    warning = next(text for text in texts(at, "warning") if "defaults are used" in text)
    assert "not '[prize](example.com)'" in shown(warning) and "](" not in warning  # as text, never a link


def test_choosing_another_mask_resets_its_sizes_and_every_combination_draws():
    at = open_view(MASKING, slide="7")
    at.selectbox(key="studio_a").set_value("chunked").run()
    assert at.text_input(key="studio_a_sizes").value == "chunk=4"
    for combine in ("and", "and_not", "not", "a"):
        at.segmented_control(key="studio_combine").set_value(combine).run()
        assert_clean(at)
        assert ("mask_b" in at.code[0].value) is (combine in ("and", "and_not"))
    at.selectbox(key="studio_score").set_value("soft_cap").run()
    at.text_input(key="studio_score_sizes").set_value("cap=0.5").run()
    assert_clean(at)
    assert "0.5 * torch.tanh(score / 0.5)" in at.code[0].value
    assert set(GALLERY) >= {"chunked"} and "soft_cap" in SCORE_MODS
