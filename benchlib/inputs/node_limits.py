"""What the node that validates a params file has (cores, memory, GPUs), and the fixed caps
used where that cannot be known, so that sizes it cannot hold are refused before any point runs.

Nothing here imports torch: GPUs are counted from ``CUDA_VISIBLE_DEVICES`` or NVML
(nvidia-ml-py). A SLURM sweep is validated on the node that submits it, not on the node that
runs it, so the bounds of GPUs use the fixed caps below when this node sees none.
"""

from __future__ import annotations

import contextlib
import functools
import os

#: Most loader workers of one process: a fixed cap, generous for the largest nodes (256 cores),
#: that stops a typo (``num_workers: 100000``) from forking without end.
MAX_WORKERS = 256
#: Most GPUs one node is taken to have where this node cannot count them (a login node).
MAX_GPUS_PER_NODE = 16
#: One GPU's memory where this node cannot read it (the largest GPUs sold hold 192 GB).
GPU_MEMORY_CAP = 192 << 30
#: Largest image side (px) a run or a generated data set takes: ImageNet's largest images are a
#: few thousand px, and one 4096 px image is 200 MB as float32 before any model sees it.
MAX_IMAGE_SIDE = 4096
#: Largest seed + 1: torch's generators take 64-bit seeds, numpy's non-negative ones, and each
#: rank adds to the seed (``data.shard.Rank.seed``): 0 <= seed < 2**63 leaves room for that.
SEED_LIMIT = 2 ** 63


def cores() -> int:
    """CPU cores this process may use (its affinity)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def host_memory() -> int:
    """Bytes of physical memory of this node."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


@functools.cache
def _nvml() -> tuple[int, int] | None:
    """(GPU count, memory of GPU 0 in bytes) as NVML reports them; None without a driver."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no nvidia-ml-py, no driver, no GPU: not knowable here
        return None
    try:
        count = pynvml.nvmlDeviceGetCount()
        memory = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0)).total \
            if count else 0
        return int(count), int(memory)
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def visible_gpus() -> int | None:
    """GPUs a process started here would see (``CUDA_VISIBLE_DEVICES``, else NVML's count);
    None when it cannot be known without importing torch."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return len([d for d in listed.split(",") if d.strip()])
    found = _nvml()
    return found[0] if found else None


def gpu_memory() -> int | None:
    """Bytes of memory of this node's first GPU (NVML); None when not knowable."""
    found = _nvml()
    return found[1] if found and found[1] else None


def device_bound(device: str) -> tuple[int, str]:
    """Most processes of ``device`` one node may run, and the reason in words."""
    gpus = visible_gpus()
    if device == "cpu":
        return cores(), f"this node's {cores()} cores"
    if gpus:
        return gpus, f"the {gpus} GPUs this node sees"
    if device == "cuda":
        return MAX_GPUS_PER_NODE, (f"{MAX_GPUS_PER_NODE} GPUs, the most a node is taken to have "
                                   "where this node sees none")
    bound = max(cores(), MAX_GPUS_PER_NODE)
    return bound, (f"{bound}, the larger of this node's {cores()} cores and the "
                   f"{MAX_GPUS_PER_NODE} GPUs a node is taken to have at most")


def memory_bound(device: str) -> tuple[int, str]:
    """Bytes one node holds for ``device``'s processes, and the reason in words: the host's
    memory on a CPU, a GPU's memory (NVML, else :data:`GPU_MEMORY_CAP`) otherwise."""
    host = host_memory()
    gpu = gpu_memory()
    if device == "cpu":
        return host, f"this node's {_gib(host)} of memory"
    if gpu:
        return gpu, f"the {_gib(gpu)} of this node's GPU"
    if device == "cuda":
        return GPU_MEMORY_CAP, f"{_gib(GPU_MEMORY_CAP)}, the most a GPU is taken to hold"
    bound = max(host, GPU_MEMORY_CAP)
    return bound, (f"{_gib(bound)}, the larger of this node's memory and the "
                   f"{_gib(GPU_MEMORY_CAP)} a GPU is taken to hold")


def _gib(count: float) -> str:
    return f"{count / (1 << 30):.1f} GiB"


def size_text(count: float) -> str:
    """``2.6 TB``: bytes in decimal units, for estimates."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} bytes"
