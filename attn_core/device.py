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


CPU_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")  # Linux: one folder (index0, index1 ...) a cache of core 0


def cpu_caches(root: Path = CPU_CACHES) -> str:
    """Core 0's caches from level 2 up, e.g. "L2 1 MiB, L3 32 MiB"; "" where the system does not say (not Linux).
    Two CPUs of one model name can differ here (a cloud's "AMD EPYC" with an L3 of 8 or 32 MiB), and what is fastest
    follows the caches."""
    caches = {}
    for index in sorted(root.glob("index*")):
        try:
            level, kind, size = ((index / name).read_text().strip() for name in ("level", "type", "size"))
        except OSError:
            continue
        if int(level) >= 2 and kind != "Instruction" and size.endswith("K"):
            kib = int(size[:-1])
            caches[int(level)] = f"L{level} {kib // 1024} MiB" if kib % 1024 == 0 else f"L{level} {kib} KiB"
    return ", ".join(caches[level] for level in sorted(caches))


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what platform says."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or platform.machine()
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), platform.machine())
