"""``python -m benchmarks.training_speed``: how long the Training view's runs take on one core.

Times ``attn_core.training.train`` at 300 steps, batch 64, d_k 256 (the view's comparison), scaled and unscaled, with
torch on one thread; each setting ``--repeats`` times, the settings interleaved, min and median reported. Twice: with
denormal floats kept (torch's default) and flushed to zero (``torch.set_flush_denormal``), since an unscaled run's
saturated softmax makes weights so small that they become denormals, which some CPUs compute far more slowly.
Target: under 5 s a run.
"""

from __future__ import annotations

import argparse
import statistics

import torch

from attn_core.device import cpu_model
from attn_core.training import train

SETTINGS = {"steps": 300, "batch": 64, "d_k": 256}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.training_speed")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--task", default="marker")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"{cpu_model()}, torch {torch.__version__}, 1 thread; train({args.task!r}, {SETTINGS})")
    runs = [(flush, scaled) for flush in (False, True) for scaled in (True, False)]
    seconds = {run: [] for run in runs}
    for _ in range(args.repeats):
        for flush, scaled in runs:
            torch.set_flush_denormal(flush)
            seconds[flush, scaled].append(train(args.task, scaled=scaled, **SETTINGS).seconds)
    torch.set_flush_denormal(False)
    print("| denormals | scaled | min s | median s |\n|---|---|---:|---:|")
    for (flush, scaled), times in seconds.items():
        denormals, scaling = "flushed" if flush else "kept", "yes" if scaled else "no"
        print(f"| {denormals} | {scaling} | {min(times):.2f} | {statistics.median(times):.2f} |")


if __name__ == "__main__":
    main()
