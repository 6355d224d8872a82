"""The classroom benchmark's core (benchmarks/classroom.py) against a real server: its protocol client redraws what a
browser would, and two students, without browsers, visit three views each and change a control on each.

It asserts what the benchmark saw, never how fast: the timing targets belong to its output (the README), not to tests.
"""

from __future__ import annotations

import asyncio

from attn_ui.page import PIPELINE, SCALING, VIEWS
from benchmarks import classroom
from benchmarks.load import logged_server

PLAN = classroom.Plan(link=PIPELINE, query="", changes=1, spread_s=1, think_s=(0, 0.2), seed=1)


async def rerun_change_the_seed_and_follow_a_link(base: str) -> list[classroom.Page]:
    """The Pipeline opened by its address, rerun with nothing changed, then with its Seed one step up; then the
    sidebar's link to Scaling followed."""
    async with classroom.Client(base) as client:
        opened = await client.open(PIPELINE.url_path)
        again = await client.rerun()
        seed = next(widget for widget in opened.widgets.values() if widget.label == "Seed")
        (up,) = classroom.alternatives(seed, client.held[seed.id], "")  # 0 is its least value: one way to go
        changed = await client.change(up)
        followed = await client.follow(SCALING)
    return [opened, again, changed, followed]


def test_the_protocol_client_opens_a_view_and_a_control_change_redraws_it_and_nothing_else_does(tmp_path):
    with logged_server(tmp_path / "server.log") as server:
        opened, again, changed, followed = asyncio.run(rerun_change_the_seed_and_follow_a_link(server.base))
    assert opened.title == "Pipeline · Attention Explorer" and not opened.problems
    assert (again.digest, again.query) == (opened.digest, opened.query)  # the same page: the digest is no noise
    assert changed.digest != opened.digest and "seed=1" in changed.query  # the server took the new value and redrew
    assert followed.title == "Scaling · Attention Explorer" and not followed.problems
    assert followed.query == ""  # the Pipeline's seed left behind with its page, as the browser's address does


def test_two_students_visit_three_views_and_every_control_change_reaches_the_page(tmp_path):
    log = tmp_path / "server.log"
    with logged_server(log) as server:
        level = classroom.drive(server, 2, 0, PLAN, settle_after_s=None)
    summary = classroom.summarize(level, log.read_text())
    assert summary["errors"] == 0, summary["problems"]
    for student in level["students"]:
        actions = student["actions"]
        assert [action["what"] for action in actions] == ["open", "change", "navigate", "change", "navigate", "change"]
        assert len({action["view"] for action in actions}) == classroom.VIEWS_PER_STUDENT
        assert all(action["seconds"] is not None for action in actions)  # each run's script_finished came
    assert summary["runs_finished"] == summary["runs_planned"] == 12
    assert summary["changes_by_effect"]["none"] == 0 and summary["changes_by_effect"]["content"] >= 1
    assert set(level["warm_up"]) == {"Home", *(view.label for view in VIEWS)}
    assert level["rss_mb"]["peak (VmHWM)"] > 0 and level["server_healthy_after"]
