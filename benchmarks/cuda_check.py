"""``python -m benchmarks.cuda_check``: on a machine with CUDA, does attn_core give there what it gives on the CPU,
and how does the Cost view's sweep grow to T = 32,768?

1. Every engine function the views call runs on the CPU and on CUDA with the same float64 inputs; the largest
   difference is printed per function (float64 on both sides, so anything above ~1e-12 is a real difference).
2. The tiled and naive attentions on CUDA against SDPA on CUDA, float32, under each mask.
3. The Cost sweep on CUDA (B=1, H=8, d=64, float32 and float16) from T = 1,024 to 32,768, no mask and causal.

The results go to docs/performance.md by hand, with the GPU's name and torch's version printed here.
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F

from attn_core import (
    causal_mask,
    multi_head_attention,
    multi_head_projections,
    naive_attention,
    padding_mask,
    self_attention,
    tiled_attention,
)
from attn_core.bench import format_table
from attn_core.masks import window_mask
from attn_core.sweep import Point, Settings, Skipped, Stopped, fits, sweep

LENGTHS = tuple(2**p for p in range(10, 16))  # 1,024 … 32,768


def largest_difference(cpu: torch.Tensor, cuda: torch.Tensor) -> float:
    return (cpu - cuda.cpu()).abs().max().item()


def engine_differences() -> dict[str, float]:
    """CPU against CUDA for the functions the views call, float64."""
    torch.manual_seed(0)
    x = torch.randn(2, 16, 32, dtype=torch.float64)  # (B, T, C)
    w_q, w_k, w_v = (torch.randn(32, 16, dtype=torch.float64) for _ in range(3))
    mask = causal_mask(16) & padding_mask([16, 11], 16)  # (B, T, T)
    out = {}
    for name, masked in (("self_attention", None), ("self_attention, causal + padding", mask)):
        cpu = self_attention(x, w_q, w_k, w_v, mask=masked)
        gpu = self_attention(x.cuda(), w_q.cuda(), w_k.cuda(), w_v.cuda(), mask=None if masked is None else masked.cuda())
        out[name] = max(largest_difference(a, b) for a, b in ((cpu.weights, gpu.weights), (cpu.context, gpu.context)))
    weights = multi_head_projections(32)
    cpu = multi_head_attention(x.float(), *weights, n_heads=4)
    gpu = multi_head_attention(x.float().cuda(), *(w.cuda() for w in weights), n_heads=4)
    out["multi_head_attention (float32)"] = largest_difference(cpu.output, gpu.output)
    q, k, v = (torch.randn(2, 4, 300, 64, dtype=torch.float64) for _ in range(3))  # (B, H, T, d)
    for name, kwargs in (
        ("tiled_attention", {}),
        ("tiled_attention, causal", {"causal": True}),
        ("tiled_attention, window 64", {"window": 64}),
        ("tiled_attention, key lengths", {"key_lengths": [300, 170]}),
    ):
        on_cuda = tiled_attention(q.cuda(), k.cuda(), v.cuda(), **kwargs)
        out[name] = largest_difference(tiled_attention(q, k, v, **kwargs), on_cuda)
    out["naive_attention, causal"] = largest_difference(
        naive_attention(q, k, v, causal=True), naive_attention(q.cuda(), k.cuda(), v.cuda(), causal=True)
    )
    return out


def against_sdpa() -> dict[str, float]:
    """Tiled and naive on CUDA against SDPA on CUDA, float32, T = 1,000 (not a multiple of any block)."""
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 8, 1000, 64, device="cuda") for _ in range(3))  # (B, H, T, d)
    window = window_mask(1000, 128, device="cuda")
    out = {}
    for name, kwargs, sdpa_kwargs in (
        ("none", {}, {}),
        ("causal", {"causal": True}, {"is_causal": True}),
        ("window 128", {"window": 128}, {"attn_mask": window}),
    ):
        expected = F.scaled_dot_product_attention(q, k, v, **sdpa_kwargs)
        out[f"tiled, {name}"] = (tiled_attention(q, k, v, **kwargs) - expected).abs().max().item()
        out[f"naive, {name}"] = (naive_attention(q, k, v, **kwargs) - expected).abs().max().item()
    return out


def cost_sweep(dtype: str) -> list[Point]:
    settings = Settings(dtype=dtype, device="cuda", lengths=LENGTHS, masks=("none", "causal"), time_budget=90.0)
    points = []
    for event in sweep(settings):
        if isinstance(event, Point):
            points.append(event)
        elif isinstance(event, Skipped | Stopped):
            print(event.message)
    return points


def main() -> int:
    if not torch.cuda.is_available():
        print("no CUDA device here")
        return 1
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    print("\nCPU against CUDA, float64 (largest absolute difference):")
    for name, difference in engine_differences().items():
        print(f"  {name:40s} {difference:.2e}")
    print("\nOn CUDA against SDPA on CUDA, float32, B=2, H=8, T=1,000, d=64:")
    for name, difference in against_sdpa().items():
        print(f"  {name:40s} {difference:.2e}")
    for dtype in ("float32", "float16"):
        print(f"\nCost sweep on CUDA, B=1, H=8, d=64, {dtype}:")
        points = cost_sweep(dtype)
        print(format_table(points))
        for (method, mask), fit in fits(points).items():
            print(f"  {method} ({mask}): log-log slope of time {fit.time.slope:.2f}, of peak memory {fit.memory.slope:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
