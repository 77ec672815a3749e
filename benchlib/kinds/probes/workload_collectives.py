"""The all-reduce probe: algorithm and bus bandwidth over message sizes, with nccl-tests' formulas.

For an all-reduce of ``S`` bytes on ``n`` ranks taking ``t`` seconds (nccl-tests,
doc/PERFORMANCE.md): algorithm bandwidth ``algbw = S / t``; bus bandwidth
``busbw = algbw * 2 (n - 1) / n``, the rate each link must sustain, comparable with the
hardware's peak whatever ``n``. Runs on every rank under torchrun (:mod:`benchlib.run.launch`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import torch

from benchlib.kinds.probes.config import AllReduceConfig
from benchlib.measure.timing import device_seconds
from benchlib.workloads import distributed
from benchlib.workloads.loop import progress
from benchlib.workloads.runtime import resolve_device


def bus_factor(world_size: int) -> float:
    """nccl-tests' all-reduce bus-bandwidth factor ``2 (n - 1) / n``."""
    return 2 * (world_size - 1) / world_size


def size_label(size: int) -> str:
    """1024 -> ``1KiB``, 1 << 30 -> ``1GiB``; other sizes in bytes (``1500B``)."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"


@dataclass
class AllReduceResult:
    """Per message size: seconds per all-reduce and the two bandwidths (GB/s, 1e9 bytes)."""

    device: torch.device
    world_size: int
    table: pd.DataFrame
    env: dict[str, object] = field(default_factory=dict)
    num_devices: int = 1
    num_nodes: int = 1


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run(config: AllReduceConfig) -> AllReduceResult:
    """Time ``iterations`` all-reduces (sum) of each size after ``warmup`` untimed ones."""
    rank = distributed.current()
    if not rank.distributed:
        raise RuntimeError("the all-reduce probe runs under torchrun: launch it with "
                           "benchlib.run.launch.run (num_devices >= 2)")
    device = resolve_device(config.device)
    dtype = getattr(torch, config.dtype)
    element = torch.tensor([], dtype=dtype).element_size()
    factor = bus_factor(rank.world_size)
    rows = []
    for size in config.sizes:
        count = max(1, size // element)
        buffer = torch.ones(count, dtype=dtype, device=device)
        for _ in range(config.warmup):
            torch.distributed.all_reduce(buffer)
        _synchronize(device)
        torch.distributed.barrier()
        # on the device's clock, the launches queued ahead (as nccl-tests times them): Python's
        # launch cost is not in a small message's latency
        per_call = device_seconds(lambda b=buffer: torch.distributed.all_reduce(b), device,
                                  config.iterations)
        seconds = torch.tensor([per_call], dtype=torch.float64, device=device)
        torch.distributed.all_reduce(seconds)  # nccl-tests' default: the mean over ranks
        mean = float(seconds) / rank.world_size
        nbytes = count * element
        algbw = nbytes / mean / 1e9
        rows.append({"size_bytes": nbytes, "size": size_label(nbytes), "count": count,
                     "time_us": mean * 1e6, "algbw_GBps": algbw, "busbw_GBps": algbw * factor})
        progress.tick()
        del buffer
    return AllReduceResult(device=device, world_size=rank.world_size, table=pd.DataFrame(rows))

