"""Tiny trainings of one attention head: watch W_Q, W_K and W_V learn a task, scaled by 1/√d_k or not.

The model, for a sequence of T tokens:

    X = E[tokens] + P                      fixed random token embeddings plus the sinusoidal positions, (T, C)
    Q, K, V = X W_Q, X W_K, X W_V          the learned projections, (T, d_k)
    A = softmax(Q Kᵀ · s)                  s = 1/√d_k (scaled) or 1 (unscaled): attn_core's own ``attend``
    logits = (A V) W_out                   a learned readout to the vocabulary, (T, vocab)

trained with cross-entropy on the task's target of every position. Each task can be solved by the head alone:
the readout only has to name the token whose value the head brings.

- ``"marker"``: one of MARKERS marker tokens sits at a random place among noise tokens; every position must name
  it. The head must find a token by its content.
- ``"previous"``: every position must name the token before it (position 0 has no target). The head must learn an
  offset from the positions: the sub-diagonal that MiniLM's layer 0, head 2 shows in the Real model view.
- ``"first"``: every position must name the sequence's first token. The head must learn to look at one position,
  as real models' heads that park their attention on the first token ([CLS]) do.

Deterministic for a seed: the weights and the batches come from generators seeded by the seed alone, so the scaled and
the unscaled run of one seed start from the same weights and see the same batches. And a run computes on
TRAINING_THREADS torch threads whatever the caller's number: a sum split over another number of threads adds in
another order, and an unscaled d_k = 256 run turns those last bits into another run. So a page, a direct call and a
link opened on a server with another number of threads all get the same run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from attn_core.attention import AttentionSteps, attend, default_scale, entropy
from attn_core.device import torch_threads
from attn_core.positions import sinusoidal

TASKS = ("marker", "previous", "first")
OPTIMIZERS = ("adam", "sgd")
DEFAULT_LR = {"adam": 0.01, "sgd": 0.2}  # at 0.5, SGD diverged on 2 of 3 seeds, scaled or not
VOCAB = 16
MARKERS = 4  # tokens 0 … 3 are the marker task's markers, the others its noise
TOKEN_NAMES = "ABCD" + "efghijklmnop"  # the markers in capitals
NO_TARGET = -100  # cross_entropy's ignore_index: a position without a target (the first of "previous")
MAX_STEPS, MAX_D_K, MAX_BATCH, MAX_SEQ_LEN = 2000, 512, 256, 32
TRAINING_THREADS = 1  # its tensors hold a few thousand numbers: a second thread would only wait on the first
# A run with a time budget is timed over its steps after the first (which warms torch up) until TIMED_S have passed,
# then refused if it would pass the budget: a time, not a few steps of milliseconds, in which one wait for the CPU on
# a busy machine would make a run of seconds look like one of a minute.
TIMED_S = 0.5


class TooLong(ValueError):
    """A run would take longer than its time budget; the message gives both."""


@dataclass
class TrainingRun:
    """Everything a training run recorded. Per-step lists are measured on that step's batch, before its update."""

    task: str
    scaled: bool
    loss: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    grad_norms: list[dict[str, float]] = field(default_factory=list)  # per step: W_Q, W_K, W_V
    entropy: list[float] = field(default_factory=list)  # mean entropy of the attention rows, nats
    snapshots: dict[int, Tensor] = field(default_factory=dict)  # step → (T, T) weights on the example; 0: untrained
    example_tokens: list[int] = field(default_factory=list)
    example_targets: list[int | None] = field(default_factory=list)  # per row: the key it must attend to
    # Step 0: the mean |∂loss_i/∂S'_ij| over rows i at their correct key j, where S' = Q Kᵀ · s is the softmax's input
    # and loss_i the row's own loss. A saturated softmax passes little gradient back: this is where it shows.
    target_score_grad: float = 0.0
    weights_before: dict[str, Tensor] = field(default_factory=dict)
    weights_after: dict[str, Tensor] = field(default_factory=dict)
    seconds: float = 0.0

    def steps_to(self, accuracy: float) -> int | None:
        """The first step whose batch accuracy reached ``accuracy``, or None."""
        return next((step for step, reached in enumerate(self.accuracy) if reached >= accuracy), None)


def token_names() -> list[str]:
    """A name for each token of the vocabulary: the markers A–D, then e–p."""
    return list(TOKEN_NAMES)


def generator(seed: int, stream: int) -> torch.Generator:
    """One of a seed's independent random streams (0: weights, 1: batches, 2: the example)."""
    return torch.Generator().manual_seed(seed * 1000 + stream)


def batch_of(task: str, batch: int, seq_len: int, rng: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """Tokens (B, T), the target token of each position (B, T) and the key position it must attend to (B, T)."""
    positions = torch.arange(seq_len).expand(batch, seq_len)  # (B, T)
    if task == "marker":
        tokens = torch.randint(MARKERS, VOCAB, (batch, seq_len), generator=rng)  # (B, T) noise
        where = torch.randint(0, seq_len, (batch,), generator=rng)  # (B,)
        marker = torch.randint(0, MARKERS, (batch,), generator=rng)  # (B,)
        tokens[torch.arange(batch), where] = marker
        keys = where[:, None].expand(batch, seq_len)  # (B, T)
    else:
        tokens = torch.randint(0, VOCAB, (batch, seq_len), generator=rng)  # (B, T)
        keys = positions - 1 if task == "previous" else torch.zeros_like(positions)  # (B, T)
    targets = tokens.gather(1, keys.clamp(min=0))  # (B, T)
    targets = targets.masked_fill(keys < 0, NO_TARGET)
    return tokens, targets, keys


def head(x: Tensor, params: dict[str, Tensor], scale: float) -> tuple[AttentionSteps, Tensor]:
    """The head and its readout on X (B, T, C): every step of the attention, and the logits (B, T, vocab)."""
    attention = attend(x @ params["W_Q"], x @ params["W_K"], x @ params["W_V"], scale=scale)  # weights (B, T, T)
    return attention, attention.context @ params["W_out"]


def check_settings(task: str, d_model: int, d_k: int, optimizer: str, steps: int, batch: int, seq_len: int) -> None:
    """Raise ValueError, with the limit, for settings no run accepts."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}, not {task!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {optimizer!r}")
    for name, value, limit in (("steps", steps, MAX_STEPS), ("d_k", d_k, MAX_D_K), ("batch", batch, MAX_BATCH)):
        if not 1 <= value <= limit:
            raise ValueError(f"{name} must be between 1 and {limit:,}, not {value:,}")
    if not 2 <= seq_len <= MAX_SEQ_LEN or d_model < 2 or d_model % 2:
        raise ValueError(f"seq_len must be between 2 and {MAX_SEQ_LEN} and d_model even, not {seq_len} and {d_model}")


@torch_threads(TRAINING_THREADS)  # the caller's number of threads back after the run
def train(
    task: str,
    *,
    d_model: int = 32,
    d_k: int = 16,
    scaled: bool = True,
    optimizer: str = "adam",
    lr: float | None = None,
    steps: int = 300,
    batch: int = 64,
    seq_len: int = 12,
    seed: int = 0,
    snapshot_every: int = 10,
    progress: Callable[[int], None] | None = None,
    budget_s: float | None = None,
) -> TrainingRun:
    """Train one attention head and its readout on ``task``; ``progress(step)`` is called after each step (it may
    raise to stop the run). With ``budget_s``, a run whose first steps show it would take longer raises TooLong: the
    time is measured on the machine that runs it, not assumed."""
    check_settings(task, d_model, d_k, optimizer, steps, batch, seq_len)
    started = time.perf_counter()
    weights_rng, batches_rng, example_rng = (generator(seed, stream) for stream in range(3))
    embeddings = torch.randn(VOCAB, d_model, generator=weights_rng)  # (vocab, C), fixed
    positions = sinusoidal(seq_len, d_model)  # (T, C), fixed
    shapes = {"W_Q": (d_model, d_k), "W_K": (d_model, d_k), "W_V": (d_model, d_k), "W_out": (d_k, VOCAB)}
    params = {
        name: (torch.randn(shape, generator=weights_rng) / math.sqrt(shape[0])).requires_grad_() for name, shape in shapes.items()
    }
    scale = default_scale(d_k) if scaled else 1.0
    chosen = torch.optim.Adam if optimizer == "adam" else torch.optim.SGD
    update = chosen(params.values(), lr=DEFAULT_LR[optimizer] if lr is None else lr)
    example, _, example_keys = batch_of(task, 1, seq_len, example_rng)
    run = TrainingRun(task, scaled, example_tokens=example[0].tolist())
    run.example_targets = [int(key) if key >= 0 else None for key in example_keys[0]]
    run.weights_before = {name: p.detach().clone() for name, p in params.items() if name != "W_out"}

    def forward(tokens: Tensor) -> tuple[AttentionSteps, Tensor]:
        return head(embeddings[tokens] + positions, params, scale)  # X: (B, T, C)

    for step in range(steps + 1):
        with torch.no_grad():
            if step % snapshot_every == 0 or step == steps:
                run.snapshots[step] = forward(example)[0].weights[0].clone()  # (T, T)
        if step == steps:
            break
        tokens, targets, keys = batch_of(task, batch, seq_len, batches_rng)
        attention, logits = forward(tokens)
        if step == 0:
            attention.scaled.retain_grad()
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), ignore_index=NO_TARGET)
        update.zero_grad()
        loss.backward()
        counted = targets != NO_TARGET  # (B, T)
        run.loss.append(loss.item())
        run.accuracy.append((logits.argmax(-1) == targets)[counted].float().mean().item())
        run.entropy.append(entropy(attention.weights.detach()).mean().item())
        run.grad_norms.append({name: params[name].grad.norm().item() for name in ("W_Q", "W_K", "W_V")})
        if step == 0:
            at_keys = attention.scaled.grad.gather(2, keys.clamp(min=0)[..., None])[..., 0]  # (B, T)
            run.target_score_grad = (at_keys[counted].abs() * counted.sum()).mean().item()  # the loss is a mean over rows
        update.step()
        if step == 0:
            warmed_up, timed = time.perf_counter(), budget_s is None
        elif not timed and (elapsed := time.perf_counter() - warmed_up) >= TIMED_S:
            timed, expected = True, elapsed / step * steps
            if expected > budget_s:
                over = f"about {math.ceil(expected)} s here, over the budget of {budget_s:g} s"  # ceil: 15.4 s is not "15"
                raise TooLong(f"{steps:,} steps would take {over}")
        if progress is not None:
            progress(step + 1)
    run.weights_after = {name: p.detach().clone() for name, p in params.items() if name != "W_out"}
    run.seconds = time.perf_counter() - started
    return run
