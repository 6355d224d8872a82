"""The interaction benchmark works end to end: one view, one change per control and section tab, one session (a minute).

It asserts what the benchmark measured and reports, never how fast: timing targets belong to its output, not to tests.
"""

from __future__ import annotations

import pytest

from attn_core.device import cpu_caches
from attn_ui.page import VIEWS
from benchmarks import bench_interactions as bench
from benchmarks import heap_probe
from tests.browser_support import skip_without_browser
from tests.conftest import open_view

skip_without_browser()

WIDGETS = ("selectbox", "number_input", "toggle", "checkbox", "radio", "slider", "select_slider", "text_area", "text_input")
SCALING = next(view for view in VIEWS if view.url_path == "Scaling")


def widget_labels(drawn) -> set[str]:
    """The labels of the enabled widgets a run drew (an AppTest, or its main area), as the page offers them."""
    labels = {widget.label for kind in WIDGETS for widget in drawn.get(kind) if not widget.disabled}
    return labels | {button.label for button in drawn.button if not button.disabled} - {bench.RUN_SWEEP}


def test_a_quick_run_reports_every_control_and_section_of_a_view_and_the_server_memory():
    first = open_view(SCALING.path, slide="1")  # the view as it opens, to compare with what the page offered
    expected = widget_labels(first)
    assert {"Sentence", "Seed"} <= expected
    sections = {f"section “{label}”" for label in first.button_group[0].options}  # the sections' picker
    assert len(sections) == 5  # four sections and "All sections"

    record = bench.run([SCALING], repeats=1, sessions=1)

    (view,) = record["views"]
    assert not view["skipped"], view["skipped"]
    rows = {row["action"]: row for row in view["controls"]}
    # Every control again on the section, other than the first, that was slowest to open (the only one where the
    # sidebar's are measured again), and on every other section its own, those of the main area.
    (slowest,) = {action.rsplit(" ", 1)[1] for action in rows if action.startswith("Seed · on section ")}
    again = set()
    for section in range(2, len(sections)):
        at = open_view(SCALING.path, slide=str(section))
        again |= {f"{label} · on section {section}" for label in widget_labels(at if str(section) == slowest else at.main)}
    assert slowest != "1" and set(rows) == expected | sections | again
    assert {action for action, row in rows.items() if row["kind"] == bench.WHOLE_VIEW} == {"section “All sections”"}
    for row in rows.values():
        assert row["n"] == 1 and isinstance(row["p50"], float) and row["p50"] > 0 and not row["errors"], row
    assert view["fresh_tab"]["n"] == 1 and view["cached_tab"]["n"] == 1 and view["from_home"]["n"] == 1
    # A one-chart page, at the root and at its own address (as a view's link), first render in a new tab: with and
    # without its scripts cached.
    assert list(record["floor"]) == list(bench.FLOOR_PAGES)
    for floor in record["floor"].values():
        assert floor["fresh_tab"]["n"] == 1 and floor["cached_tab"]["n"] == 1 and 0 < floor["cached_tab"]["p50"]
    # and its redraw after a change of its seed: the floor of the redraws, and how fast the machine was
    redraw = record["floor_redraw"]
    assert redraw["action"] == bench.FLOOR_CONTROL and redraw["n"] == 1 and redraw["p50"] > 0 and not redraw["errors"]
    cold = record["cold_start"]  # one launch in a run of one change per control
    assert cold["drawn_s"] > cold["healthy_s"] > 0 and cold["drawn_samples_s"] == [cold["drawn_s"]]
    memory = record["memory"]
    assert memory["sessions"] == 1 and not memory["errors"] and 50 < memory["after"][1] <= memory["peak_mb"]
    (heap,) = memory["heap"]  # the server's own figures, read through benchmarks.heap_probe
    assert 10 < heap["in_use_mb"] < memory["after"][1] and heap["free_mb"] >= 0 and heap["python_blocks"] > 100_000
    assert 10 < heap["python_mb"] < heap["kept_mb"] == pytest.approx(heap["in_use_mb"] + heap["python_mb"])

    text = bench.report(record)
    drawn = bench.number(cold["drawn_s"], 2)
    assert f"{cold['view']} drawn in a tab (each launch: {drawn}) | {drawn} |" in text
    for action in rows:
        assert f"| Scaling | {action} | " in text
    assert f"| 1 | {bench.number(memory['after'][1])} |" in text
    kept_row = " | ".join(bench.number(heap[key]) for key in ("kept_mb", "in_use_mb", "free_mb"))
    assert f"| 1 | {kept_row} | {heap['python_blocks']:,} | {bench.number(heap['python_mb'])} |" in text
    for where, floor in record["floor"].items():
        assert f"| one-chart page ({bench.FLOOR_APP}) {where} | — | {bench.number(floor['fresh_tab']['p50'] / 1000, 2)} |" in text
    # the view's first render less the floor page's at its own address (as a view's link opens a view), their loads
    # interleaved: the floor's taken with the view's
    floors = [view[f"floor_{kind}"] for kind in ("fresh_tab", "cached_tab")]
    assert [(floor["view"], floor["n"]) for floor in floors] == [(bench.FLOOR_APP, 1)] * 2
    above = [
        f"{(view[kind]['p50'] - floor['p50']) / 1000:+.2f} | {view[kind]['p50'] / floor['p50']:.2f}"
        for kind, floor in zip(("fresh_tab", "cached_tab"), floors, strict=True)
    ]
    floor_p50s = " | ".join(bench.number(floor["p50"] / 1000, 2) for floor in floors)
    assert f"| Scaling | {floor_p50s} | {above[0]} | {above[1]} |" in text
    # its first-render verdicts against the floor page loaded beside it
    cells = []
    for kind in ("fresh_tab", "cached_tab"):
        p50, most, ok = bench.seconds_stats(view[kind], bench.first_render_limit(view[f"floor_{kind}"]))
        cells += [p50, most, bench.verdict(ok)]
    assert f"| Scaling | {bench.number(view['first_visit_s'], 2)} | {' | '.join(cells)} |" in text
    assert f"| {bench.FLOOR_APP} | {bench.FLOOR_CONTROL} | main | number input | 1 | {bench.number(redraw['p50'])} |" in text
    machine = record["machine"]
    assert (
        machine["caches"] == cpu_caches()
        and machine["cores"]
        and f"Machine: {machine['cpu']} ({machine['caches'] or 'caches unknown'}), " in text
    )


def test_all_sections_is_held_to_the_first_render_target():
    """ "All sections" draws every section of the view at once, as opening the view does: its target is a first
    render's, while any other section or control is held to the redraw targets."""
    row = {"p50": 700.0, "p95": 900.0}
    assert bench.redraw_verdict(row | {"kind": bench.WHOLE_VIEW}) == "ok (whole view: first render)"
    assert bench.redraw_verdict(row | {"kind": bench.SECTION}) == "**MISS** p50, p95"
    assert bench.redraw_verdict({"p50": 1600.0, "p95": 1700.0, "kind": bench.WHOLE_VIEW}).startswith("**MISS**")


def test_first_render_is_held_to_1_5_s_or_to_the_same_ratio_to_the_floor_page_beside_it_where_that_is_slower():
    """Where the one-chart page takes no more than it did when the views met 1.5 s, the target is 1.5 s; where the
    host makes it slower, the view may take no more than the same 1.5/0.9 times as long as it."""
    ratio = bench.FLOOR_RATIO
    assert ratio == pytest.approx(bench.FIRST_RENDER_S / bench.FLOOR_AT_TARGET_S) == pytest.approx(5 / 3)
    assert bench.first_render_limit(None) == bench.first_render_limit({"p50": None}) == bench.FIRST_RENDER_S
    assert bench.first_render_limit({"p50": 700.0}) == bench.FIRST_RENDER_S
    assert bench.first_render_limit({"p50": 1200.0}) == pytest.approx(2.0)
    view = {"p50": 2100.0, "max": 2300.0}
    assert bench.seconds_stats(view, bench.first_render_limit({"p50": 1300.0})) == ("2.10", "2.30", True)  # 1.62 times
    assert bench.seconds_stats(view, bench.first_render_limit({"p50": 1200.0}))[2] is False  # 1.75 times
    assert bench.seconds_stats(view)[2] is False  # from Home: no floor page, 1.5 s
    assert bench.above_floor(view, {"p50": 1200.0}) == ["+0.90", "1.75"]
    assert bench.above_floor(view, None) == ["—", "—"]


def test_memory_growth_is_read_off_the_line_through_sessions_10_to_20_not_its_two_ends():
    wobbling = [470.0] * 9 + [488.2, 491.6, 489.0, 489.8, 488.9, 489.6, 487.5, 489.1, 487.6, 489.2, 490.5]  # a real run
    growth, error = bench.growth_mb(wobbling)
    assert wobbling[19] - wobbling[9] > 2 and abs(growth) < 1 and not bench.memory_grows(growth, error)
    creeping = [400.0 + 0.5 * session for session in range(20)]
    assert bench.growth_mb(creeping) == pytest.approx((5.0, 0.0), abs=1e-9) and bench.memory_grows(5.0, 0.0)
    assert bench.growth_mb(creeping[:19]) is None


def test_memory_growth_within_the_readings_noise_is_not_growth_and_a_leak_through_the_noise_is():
    # A real run (f90ddab) that had plateaued: its line rises 2.2 MB, about 1.7 standard errors.
    plateau = [428.9, 432.6, 433.8, 437.2, 439.9, 442.2, 443.3, 445.4, 444.5, 446.2]
    plateau += [444.9, 447.1, 448.2, 446.5, 449.8, 449.5, 448.8, 447.9, 448.5, 446.8]
    growth, error = bench.growth_mb(plateau)
    assert growth > bench.GROWTH_MB and not bench.memory_grows(growth, error)
    leaking = [mb + 0.5 * session for session, mb in enumerate(plateau)]  # the same noise, half a megabyte a session more
    assert bench.memory_grows(*bench.growth_mb(leaking))


def memory_record(rss: list[float], kept: list[float] | None) -> dict:
    """The memory part of a benchmark record: resident memory after each session, and what the server kept (None:
    its heap could not be read, as off glibc)."""
    heaps = [{"python_blocks": 1_000_000, "python_mb": 60.0}] * len(rss)
    if kept is not None:
        heaps = [heap | {"kept_mb": mb, "in_use_mb": mb - 60, "free_mb": 20.0} for heap, mb in zip(heaps, kept, strict=True)]
    return {
        "sessions": len(rss),
        "rss_mb": rss,
        "heap": heaps,
        "after": {1: rss[0], 10: rss[9], 20: rss[19]},
        "max_mb": max(rss),
        "peak_mb": max(rss) + 30,
        "growth_10_to_last_mb": rss[19] - rss[9],
        "growth_10_to_20_mb": bench.growth_mb(rss),
        "kept_growth_10_to_20_mb": None if kept is None else bench.growth_mb(kept),
        "errors": [],
    }


def test_no_growth_is_judged_on_what_the_server_keeps_and_on_resident_memory_only_without_the_probe():
    """Resident memory that climbs while malloc's arenas fill their free space is not growth; memory the server keeps
    is, even when resident memory hides it; without the heap probe the resident line decides."""
    arenas_filling = [430.0 + min(session, 15) for session in range(20)]  # +5 MB on the line from 10 to 20
    flat, creeping = [190.0] * 20, [190.0 + 0.5 * session for session in range(20)]
    verdicts = {}
    cases = [("arenas", arenas_filling, flat), ("leak", [450.0] * 20, creeping), ("no probe", arenas_filling, None)]
    for name, rss, kept in cases:
        text = "\n".join(bench.memory_lines(memory_record(rss, kept), 300.0))
        assert "Below 600 MB after every session: ok" in text
        verdicts[name] = text.count("**MISS**")
    assert verdicts == {"arenas": 0, "leak": 1, "no probe": 1}
    assert "+0.0 ± 0.0 MB (ok)" in "\n".join(bench.memory_lines(memory_record(arenas_filling, flat), 300.0))


def test_the_heap_probe_counts_what_the_process_holds():
    """malloc's bytes in use follow a block that is held, then let go; Python's blocks follow its objects."""
    before = heap_probe.heap()
    held, objects = bytearray(64 * 2**20), [object() for _ in range(100_000)]
    holding = heap_probe.heap()
    assert holding["in_use_mb"] - before["in_use_mb"] > 63 and holding["python_blocks"] - before["python_blocks"] >= 100_000
    assert holding["python_mb"] - before["python_mb"] > 1.5  # 100k objects of 16 bytes each at least
    del held, objects
    assert heap_probe.heap()["in_use_mb"] - before["in_use_mb"] < 1
