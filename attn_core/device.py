"""Where tensors live: the CPU by default, CUDA when it is available and chosen."""

from __future__ import annotations

import torch


def available_devices() -> list[str]:
    """The device names this machine can run on, the CPU first."""
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def resolve_device(name: str = "cpu") -> torch.device:
    """A torch.device for "cpu", "cuda" or "auto" (CUDA when available, else the CPU)."""
    if name == "auto":
        name = available_devices()[-1]
    if name not in available_devices():
        raise ValueError(f"Device {name!r} is not available here; choose one of {available_devices()}.")
    return torch.device(name)
