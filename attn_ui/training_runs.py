"""The Training view's runs: trained only when asked (Train), kept in the server's memory per settings and shared by
every session, so that a link to a run already trained shows it at once."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from attn_core.training import TooLong, TrainingRun, train

RUNS_KEPT = 16  # settings; a pair of 300-step runs at d_k 256 holds about 0.5 MB
BUDGET_VARIABLE = "ATTN_TRAINING_BUDGET_S"
DEFAULT_BUDGET_S = 30.0


def seconds_from_environment(name: str, default: float) -> float:
    """The positive number of seconds (or "inf") in the environment variable ``name``; ``default`` where it is unset
    or holds anything else."""
    try:
        seconds = float(os.environ.get(name, default))
    except ValueError:
        return default
    return seconds if seconds > 0 else default  # not NaN either


# Seconds a pair of runs may take; longer ones are refused, with the time they would take. A server's environment may
# allow more (a lecturer's slow laptop) or no limit ("inf": the tests' servers, whose runs must not depend on how busy
# the test machine is).
BUDGET_S = seconds_from_environment(BUDGET_VARIABLE, DEFAULT_BUDGET_S)


@dataclass(frozen=True)
class Settings:
    task: str
    d_k: int
    optimizer: str
    lr: float | None  # None: the optimizer's default
    steps: int
    seed: int


@dataclass(frozen=True)
class Pair:
    """The same training scaled by 1/√d_k and unscaled: same seed, same start, same batches."""

    scaled: TrainingRun
    unscaled: TrainingRun


@st.cache_resource
def _store() -> tuple[OrderedDict[Settings, Pair], threading.Lock]:
    return OrderedDict(), threading.Lock()


def trained(settings: Settings) -> Pair | None:
    """The pair of runs with these settings, if one was trained on this server."""
    runs, lock = _store()
    with lock:
        return runs.get(settings)


def train_pair(settings: Settings, where: DeltaGenerator) -> Pair | str:
    """Train both runs with a progress bar drawn ``where`` (a rerun, e.g. the Stop button, interrupts them); the pair,
    or why not."""
    bar = where.progress(0.0, text="Training…")
    total = 2 * settings.steps

    def progress(done: int, before: int) -> None:
        if done % 10 == 0 or done == settings.steps:
            bar.progress((before + done) / total, text=f"Training: step {before + done:,} of {total:,} (both runs)")

    options = {"d_k": settings.d_k, "optimizer": settings.optimizer, "lr": settings.lr, "steps": settings.steps}
    options |= {"seed": settings.seed, "budget_s": BUDGET_S / 2}
    try:
        scaled = train(settings.task, scaled=True, progress=lambda done: progress(done, 0), **options)
        unscaled = train(settings.task, scaled=False, progress=lambda done: progress(done, settings.steps), **options)
    except TooLong as refused:
        return f"This run is refused: {refused}. Fewer steps or a smaller d_k fit."
    finally:
        bar.empty()
    pair = Pair(scaled, unscaled)
    runs, lock = _store()
    with lock:
        runs[settings] = pair
        while len(runs) > RUNS_KEPT:
            runs.popitem(last=False)
    return pair
