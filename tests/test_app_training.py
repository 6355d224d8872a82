"""The Training view, run as a browser would: from streamlit_app.py, by its URL and with clicks."""

from __future__ import annotations

import math

import pytest

from attn_core.training import train
from attn_ui import training_runs
from tests.conftest import assert_clean, chart_frames, chart_headings, heatmap_values, open_view, texts

TRAINING = "pages/7_Training.py"
QUICK = {"task": "marker", "d_k": "16", "steps": "100"}  # a pair of runs in well under a second


@pytest.fixture
def trainings(monkeypatch) -> list[bool]:
    """Every training the view starts, by its ``scaled`` flag."""
    started = []

    def counted(task, **options):
        started.append(options["scaled"])
        return train(task, **options)

    monkeypatch.setattr(training_runs, "train", counted)
    return started


def press(at, label: str):
    return next(button for button in at.button if button.label == label).click().run(timeout=120)


def loss_curves(at) -> dict[str, list[float]]:
    """The loss chart's series, by name."""
    frames = chart_frames(at)
    rows = next(frame for frame, heading in zip(frames, chart_headings(at), strict=True) if heading.startswith("Loss"))
    series = {}
    for point in rows:
        if point.get("source") == "measured":
            series.setdefault(point["series"], []).append(point["loss"])
    return series


def test_the_view_opens_without_training_and_train_draws_the_runs(trainings):
    at = open_view(TRAINING, **QUICK)
    assert_clean(at)
    assert not trainings and not chart_frames(at)
    assert any("Not trained yet" in text for text in texts(at, "info"))
    press(at, "Train")
    assert_clean(at)
    assert trainings == [True, False]  # both runs, once each
    assert not any("Not trained yet" in text for text in texts(at, "info"))
    # The page's runs are two direct calls of train with its settings.
    scaled, unscaled = (train("marker", d_k=16, steps=100, scaled=flag) for flag in (True, False))
    assert loss_curves(at) == {"loss": pytest.approx(scaled.loss, nan_ok=True)}
    last = max(scaled.snapshots)
    assert any(matrix.allclose(scaled.snapshots[last].double(), atol=1e-6) for matrix in heatmap_values(at, 12, 12))
    assert any(heading.startswith(f"Attention at step {last}") for heading in chart_headings(at))
    table = at.table[0].value
    assert table.loc["entropy at step 0 (nats)", "unscaled"] == f"{unscaled.entropy[0]:.2f}"
    assert table.loc["final accuracy", "scaled by 1/√d_k"] == f"{scaled.accuracy[-1]:.0%}"


def test_a_run_over_the_time_budget_is_refused_with_the_numbers_and_the_view_still_works(trainings, monkeypatch):
    monkeypatch.setattr(training_runs, "BUDGET_S", 1e-6)
    at = open_view(TRAINING)  # d_k = 256 and 300 steps: long enough for its first steps to be timed
    press(at, "Train")
    assert_clean(at)
    (refusal,) = texts(at, "error")
    assert (
        refusal.startswith("This run is refused: 300 steps would take about") and "over the budget of 5e-07 s" in refusal
    )  # each run: half
    assert not any("Not trained yet" in text for text in texts(at, "info"))  # the refusal in its place
    assert trainings == [True] and not chart_frames(at)  # the first run refused, the second never started
    at.number_input(key="seed").set_value(3).run()
    assert_clean(at)
    assert not texts(at, "error")
    assert any("Not trained yet" in text for text in texts(at, "info")) and trainings == [True]


@pytest.mark.parametrize(
    ("value", "budget_s"),
    [(None, 30.0), ("45", 45.0), ("inf", math.inf), ("0", 30.0), ("-5", 30.0), ("nan", 30.0), ("thirty", 30.0), ("", 30.0)],
)
def test_a_servers_environment_may_set_the_training_budget(monkeypatch, value, budget_s):
    """ATTN_TRAINING_BUDGET_S: a positive number of seconds or "inf"; anything else leaves the default 30 s."""
    if value is None:
        monkeypatch.delenv(training_runs.BUDGET_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(training_runs.BUDGET_VARIABLE, value)
    assert training_runs.seconds_from_environment(training_runs.BUDGET_VARIABLE, training_runs.DEFAULT_BUDGET_S) == budget_s


def test_the_tests_and_their_servers_train_with_no_budget():
    """tests/conftest.py sets the variable before the app is imported, and the servers the tests start inherit it: a
    run's refusal never depends on how busy the test machine is."""
    assert training_runs.BUDGET_S == math.inf


def test_changing_controls_never_trains_and_a_link_replays_from_the_cache(trainings):
    at = open_view(TRAINING, **QUICK)
    press(at, "Train")
    at.toggle(key="scaled").set_value(False).run()  # the other run of the pair: shown at once
    assert_clean(at)
    unscaled = train("marker", d_k=16, steps=100, scaled=False)
    assert loss_curves(at)["loss"] == pytest.approx(unscaled.loss, nan_ok=True)
    at.number_input(key="seed").set_value(3).run()  # new settings: nothing trained, nothing drawn
    assert any("Not trained yet" in text for text in texts(at, "info")) and not chart_frames(at)
    assert trainings == [True, False]
    # Another visitor opens a link to the trained settings: the runs are there, with no training.
    again = open_view(TRAINING, **QUICK, scaled="off")
    assert_clean(again)
    assert loss_curves(again)["loss"] == pytest.approx(unscaled.loss, nan_ok=True)
    assert trainings == [True, False]


def test_bad_values_in_a_link_are_reported_and_replaced(trainings):
    at = open_view(TRAINING, task="sort", d_k="huge", steps="-3", lr="fast", step="9999")
    assert_clean(at)
    warning = " ".join(texts(at, "warning"))
    for key in ("task", "d_k", "steps", "lr", "step"):
        assert f"{key} = “" in warning
    assert at.selectbox(key="task").value == "previous" and at.session_state["d_k"] == 256
    assert not trainings
