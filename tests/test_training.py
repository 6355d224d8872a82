"""attn_core.training: tiny trainings of one attention head are deterministic, have correct gradients and learn."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attn_core.device import torch_threads
from attn_core.training import MAX_D_K, MAX_STEPS, TASKS, TRAINING_THREADS, VOCAB, TooLong, batch_of, generator, head, train


def test_a_seed_gives_the_same_run_and_scaled_and_unscaled_start_alike():
    first, again = train("marker", steps=30), train("marker", steps=30)
    assert first.loss == again.loss and first.accuracy == again.accuracy and first.grad_norms == again.grad_norms
    assert all(torch.equal(first.snapshots[step], again.snapshots[step]) for step in first.snapshots)
    unscaled = train("marker", steps=30, scaled=False)
    assert unscaled.example_tokens == first.example_tokens
    assert all(torch.equal(first.weights_before[name], unscaled.weights_before[name]) for name in ("W_Q", "W_K", "W_V"))
    assert unscaled.loss != first.loss  # the same start and batches, another scale
    assert sorted(first.snapshots) == [0, 10, 20, 30]


def test_a_run_is_the_same_whatever_the_callers_number_of_threads():
    """A page's server runs torch on one thread and a test or a notebook on every core: an unscaled d_k = 256 run, the
    most sensitive to the order of a sum, is the same bit for bit, and the caller's number of threads comes back."""
    runs, threads_in_runs = [], set()
    for threads in (1, 2, 1):
        with torch_threads(threads):
            progress = lambda step: threads_in_runs.add(torch.get_num_threads())  # noqa: E731
            runs.append(train("previous", d_k=256, scaled=False, steps=40, progress=progress))
            assert torch.get_num_threads() == threads
    assert threads_in_runs == {TRAINING_THREADS}
    assert runs[0].loss == runs[1].loss == runs[2].loss and runs[0].grad_norms == runs[1].grad_norms
    assert all(torch.equal(runs[0].snapshots[step], runs[1].snapshots[step]) for step in runs[0].snapshots)


def test_the_heads_gradients_match_finite_differences():
    rng = generator(7, 0)
    x = torch.randn(2, 5, 6, generator=rng, dtype=torch.float64)  # (B, T, C)
    tokens, targets, _ = batch_of("previous", 2, 5, generator(7, 1))
    shapes = {"W_Q": (6, 4), "W_K": (6, 4), "W_V": (6, 4), "W_out": (4, VOCAB)}
    weights = [torch.randn(shape, generator=rng, dtype=torch.float64, requires_grad=True) for shape in shapes.values()]

    def loss(*tensors):
        logits = head(x, dict(zip(shapes, tensors, strict=True)), scale=0.5)[1]
        return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), ignore_index=-100)

    assert torch.autograd.gradcheck(loss, weights)


@pytest.mark.parametrize("task", ["marker", "previous"])
def test_default_settings_learn_the_task_and_look_where_it_needs(task):
    run = train(task)
    assert run.accuracy[-1] >= 0.95
    last = run.snapshots[max(run.snapshots)]  # (T, T)
    looked_at = last.argmax(dim=-1).tolist()
    needed = run.example_targets
    assert all(key is None or looked_at[row] == key for row, key in enumerate(needed))
    if task == "marker":
        assert len(set(needed)) == 1  # one column: the marker's
    else:
        assert needed[1:] == list(range(len(needed) - 1))  # the sub-diagonal


def test_without_scaling_a_large_d_k_saturates_the_softmax_at_step_0():
    scaled, unscaled = train("marker", d_k=256, steps=1), train("marker", d_k=256, steps=1, scaled=False)
    assert unscaled.entropy[0] < 0.25 * scaled.entropy[0]
    assert unscaled.target_score_grad < 0.25 * scaled.target_score_grad


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"task": "sort"}, "task must be one of " + ", ".join(TASKS)),
        ({"task": "marker", "steps": MAX_STEPS + 1}, f"steps must be between 1 and {MAX_STEPS:,}"),
        ({"task": "marker", "d_k": MAX_D_K + 1}, f"d_k must be between 1 and {MAX_D_K}"),
        ({"task": "marker", "optimizer": "rmsprop"}, "optimizer must be one of adam, sgd"),
    ],
)
def test_settings_out_of_range_are_refused_with_the_limit(settings, message):
    with pytest.raises(ValueError, match=message):
        train(**settings)


def test_a_run_that_would_pass_its_time_budget_is_refused_with_the_numbers():
    with pytest.raises(TooLong, match=r"2,000 steps would take about \d+ s here, over the budget of 0.001 s"):
        train("marker", steps=2000, budget_s=0.001)
    assert len(train("marker", steps=20, budget_s=60).loss) == 20
