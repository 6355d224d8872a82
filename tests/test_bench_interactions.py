"""The interaction benchmark works end to end: one view, one change per control, one session (about 45 s).

It asserts what the benchmark measured and reports, never how fast: timing targets belong to its output, not to tests.
"""

from __future__ import annotations

from attn_ui.page import VIEWS
from benchmarks import bench_interactions as bench
from tests.browser_support import skip_without_browser
from tests.conftest import open_view

skip_without_browser()

WIDGETS = ("selectbox", "number_input", "toggle", "checkbox", "radio", "slider", "select_slider", "text_area", "text_input")
SCALING = next(view for view in VIEWS if view.url_path == "Scaling")


def test_a_quick_run_reports_every_control_of_a_view_and_the_server_memory():
    at = open_view(SCALING.path)  # the view's widgets as the script draws them, to compare with what the page offered
    expected = {widget.label for kind in WIDGETS for widget in at.get(kind) if not widget.disabled}
    expected |= {button.label for button in at.button if not button.disabled} - {bench.RUN_SWEEP}
    assert {"Sentence", "Seed"} <= expected

    record = bench.run([SCALING], repeats=1, sessions=1)

    (view,) = record["views"]
    assert not view["skipped"], view["skipped"]
    rows = {row["action"]: row for row in view["controls"]}
    assert set(rows) == expected
    for row in rows.values():
        assert row["n"] == 1 and isinstance(row["p50"], float) and row["p50"] > 0 and not row["errors"], row
    assert view["fresh_tab"]["n"] == 1 and view["from_home"]["n"] == 1
    assert record["cold_start"]["drawn_s"] > record["cold_start"]["healthy_s"] > 0
    memory = record["memory"]
    assert memory["sessions"] == 1 and not memory["errors"] and 50 < memory["after"][1] <= memory["peak_mb"]

    text = bench.report(record)
    for label in expected:
        assert f"| Scaling | {label} | " in text
    assert f"| 1 | {bench.number(memory['after'][1])} |" in text
    assert record["machine"]["cores"] and record["machine"]["cpu"] in text
