"""The masks of today's models in the app, run by AppTest from streamlit_app.py: the Masking view's masks and their
tile maps, the Cost view measuring them against dense, and links that keep their parameters."""

from __future__ import annotations

from attn_core import document_mask
from attn_core.sweep import Settings
from attn_core.timing import format_bytes
from attn_ui import measure
from tests.conftest import assert_clean, chart_frames, open_view, texts

COST = "pages/5_Cost.py"
METHODS = ("naive", "sdpa", "tiled")


# --- Cost ------------------------------------------------------------------------------------


def test_cost_measures_a_document_mask_against_dense_on_request():
    at = open_view(COST, mask="documents", documents="4", T_max="128", repeats="1", heads="2")
    assert_clean(at)
    assert at.radio(key="mask").value == "documents" and at.number_input(key="documents").value == 4
    assert any("No reference results for this mask" in message for message in texts(at, "info"))
    assert not any(rows and "median ms" in rows[0] for rows in chart_frames(at))  # nothing measured, nothing drawn
    at.button(key="run").click().run()
    assert_clean(at)
    points = at.session_state["cost_sweep"].points
    assert sorted((p.method, p.mask, p.T) for p in points) == sorted(
        (method, mask, 128) for method in METHODS for mask in ("none", "documents:4")
    )
    assert all(p.max_diff < 1e-5 for p in points)  # each against SDPA under the same mask
    time_rows = next(rows for rows in chart_frames(at) if rows and "median ms" in rows[0])
    assert {row["series"] for row in time_rows} == {f"{method} {mask}" for method in METHODS for mask in ("none", "documents:4")}
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
