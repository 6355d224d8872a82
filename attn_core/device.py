"""Where tensors live: the CPU by default, CUDA when it is available and chosen; how many CPU threads torch uses."""

from __future__ import annotations

import platform
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

DEFAULT_THREADS = torch.get_num_threads()  # torch's own choice when this module is first imported: the cores


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Inside the block torch uses ``n`` intra-op threads (for the whole process); the previous number after it."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


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


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what platform says."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or platform.machine()
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), platform.machine())
