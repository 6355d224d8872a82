"""FlexAttention compiled on this CPU beside SDPA and our tiled kernel (issue 55): ``python -m benchmarks.flex_vs_tiled``.

At T = 4,096, B = 1, H = 8, d = 64, float32, under the causal mask and under 4 equal packed documents (causal in
each): flex_attention compiled by torch.compile with its BlockMask (block size 128, empty blocks skipped), SDPA (the
causal one with is_causal; the documents with the dense boolean mask), and attn_core.tiled_attention with this
machine's tuned tiles. First each compiled flex_attention's compile time (its first call, apart from its runs), then
ROUNDS rounds of one call each, the methods interleaved; min and median per method, and the ratios of medians. Every
output is checked against the dense reference first (max |difference|).
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from attn_core import tuning
from attn_core.device import cpu_model
from attn_core.mask_mods import GALLERY, attend_mod
from attn_core.masks import at_length
from attn_core.tiled import tiled_attention

T, B, H, D = 4096, 1, 8, 64
ROUNDS = 7
BLOCK = 128
MASKS = {"causal": GALLERY["causal"](), "4 documents": GALLERY["causal_documents"](lengths=(T // 4,) * 4)}


def main() -> None:
    torch.manual_seed(0)
    q, k, v = torch.randn(3, B, H, T, D).unbind(0)
    if tuning.tuned() is None:
        tuning.tune()
    plan = tuning.current()
    compiled = torch.compile(flex_attention)
    print(f"{cpu_model()}, torch {torch.__version__}, {torch.get_num_threads()} threads; T = {T:,}, B = {B}, H = {H}, d = {D}")
    for name, mask_mod in MASKS.items():
        dense = at_length(mask_mod, T)  # (T, T)
        block_mask = create_block_mask(mask_mod, None, None, T, T, device="cpu", BLOCK_SIZE=BLOCK)
        start = time.perf_counter()
        flex_out = compiled(q, k, v, block_mask=block_mask)
        compile_s = time.perf_counter() - start
        sdpa_options = {"is_causal": True} if name == "causal" else {"attn_mask": dense}
        runs = {
            "flex (compiled)": lambda block_mask=block_mask: compiled(q, k, v, block_mask=block_mask),
            "sdpa": lambda options=sdpa_options: F.scaled_dot_product_attention(q, k, v, **options),
            "tiled": lambda dense=dense: tiled_attention(q, k, v, mask=dense, plan=plan),
        }
        reference = attend_mod(q[:, :, :512], k, v, mask_mod)  # the first 512 query rows, densely
        errors = {method: float((run()[:, :, :512] - reference).abs().max()) for method, run in runs.items()}
        samples = {method: [] for method in runs}
        for _ in range(ROUNDS):
            for method, run in runs.items():
                start = time.perf_counter()
                run()
                samples[method].append(1000 * (time.perf_counter() - start))
        medians = {method: statistics.median(times) for method, times in samples.items()}
        print(
            f"\n{name}: flex_attention's first call (compile) {compile_s:.1f} s; max |Δ| of flex's first output "
            f"{float((flex_out[:, :, :512] - reference).abs().max()):.1e}\n"
        )
        print("| method | min ms | median ms | ÷ flex | max abs difference |\n|---|---:|---:|---:|---:|")
        for method, times in samples.items():
            ratio = medians[method] / medians["flex (compiled)"]
            print(f"| {method} | {min(times):.1f} | {medians[method]:.1f} | {ratio:.2f} | {errors[method]:.1e} |")


if __name__ == "__main__":
    main()
