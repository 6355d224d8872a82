"""FlexAttention, compiled: the Cost view's fourth method beside naive attention, SDPA and the tiled kernel.

``torch.nn.attention.flex_attention`` runs a mask as a mask_mod (attn_core.mask_mods) through a block-sparse kernel:
``create_block_mask`` finds which (query block, key block) tiles the mask hides wholly (skipped), leaves whole (no
mask applied) or cuts (the mask_mod applied). The kernel is fast only compiled: ``torch.compile`` has Inductor write
it, in C++ built with the machine's compiler on a CPU, in Triton on CUDA. Compiled once per process; a new mask or
shape compiles again on its first call, which takes seconds to tens of seconds on a CPU: the sweep reports that first
call apart (``Point.compile_s``) and times the calls after it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import Tensor
from torch._dynamo.exc import FailOnRecompileLimitHit
from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

from attn_core.masks import Mask

RECOMPILES = 128  # compiled kernels kept for flex_attention, one per mask and shape (torch's default: 8)


@functools.cache
def compiled() -> Callable[..., Tensor]:
    """flex_attention compiled (once per process: its compiled kernels are kept for every later call). Static shapes:
    a kernel per length, as the sweep measures them; torch's kernel for dynamic shapes fails to build on a CPU here
    (Inductor's C++ template, torch 2.13). As one graph (fullgraph): where a new mask or shape would pass the
    RECOMPILES kernels kept, Dynamo then raises rather than run flex_attention uncompiled from then on (every head's
    T × T scores in memory: neither the kernel's time nor its memory); ``attend`` starts over."""
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILES)
    return torch.compile(flex_attention, dynamic=False, fullgraph=True)


def attend(q: Tensor, k: Tensor, v: Tensor, block_mask: BlockMask) -> Tensor:
    """Compiled flex_attention of q, k, v (B, H, T, d) under ``block_mask``. Past the kernels kept, they are dropped
    (torch._dynamo.reset: this process compiles nothing else) and this call's kernel is compiled anew."""
    try:
        return compiled()(q, k, v, block_mask=block_mask)
    except FailOnRecompileLimitHit:
        torch._dynamo.reset()
        return compiled()(q, k, v, block_mask=block_mask)


@functools.cache
def unavailable(device: str) -> str | None:
    """Why FlexAttention cannot be compiled on ``device`` here ("cpu" or "cuda"), or None where it can: Inductor needs
    a C++ compiler for a CPU kernel and Triton for a CUDA one. A failure the check cannot foresee is reported by the
    run that meets it."""
    try:
        if device == "cpu":
            from torch._inductor.cpp_builder import get_cpp_compiler

            get_cpp_compiler()  # the search Inductor makes (g++, clang++, or $CXX); raises where there is none
        else:
            import triton  # noqa: F401
    except Exception as error:  # ImportError, Inductor's InvalidCxxCompiler, ...
        needs = "a C++ compiler (g++ or clang++)" if device == "cpu" else "Triton"
        return f"torch.compile needs {needs} to build FlexAttention's kernel on {device}, and found none ({error})"
    return None


def runner(q: Tensor, k: Tensor, v: Tensor, mask: Mask) -> Callable[[], Tensor]:
    """One call of compiled FlexAttention on q, k, v (B, H, T, d) under ``mask``; its block mask is made here, once,
    as a model makes it once per batch (for no mask too: without one, each call makes a T × T one of its own)."""
    t = q.shape[-2]
    blocks = create_block_mask(mask.mask_mod(t), None, None, t, t, device=q.device)
    return lambda: attend(q, k, v, block_mask=blocks)
