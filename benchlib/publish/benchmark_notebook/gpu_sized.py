"""A run sized for a GPU about to run on this machine's CPU: one warning line before it starts.

docs/sweeps.md's papermill line (resnet50, batch 256, amp_bf16) on a machine without a GPU sat
for minutes in one cell, with no output and no word that it was meant for a GPU. A run is
GPU-sized when its precision is one only a GPU runs as meant (autocast to fp16 or bf16), or
when one iteration on one device takes more than :data:`CPU_ITERATION_FLOPS` model FLOPs (its
kind's FLOPs per sample times a device's batch)."""

from __future__ import annotations

import math

from benchlib import kinds
from benchlib.inputs import node_limits
from benchlib.inputs.config import CommonConfig
from benchlib.vocabulary import Precision

#: Model FLOPs of one iteration above which a CPU run is slow: about a second of a few cores'
#: best (a 2-core machine trains the demo's resnet18 at 64 px, batch 16, with 7 GFLOP).
CPU_ITERATION_FLOPS = 1e11
#: Precisions a GPU runs as meant; a CPU autocasts them slower than fp32, if at all.
GPU_PRECISIONS = (Precision.AMP_FP16, Precision.AMP_BF16)
#: Sizes a CPU runs in seconds (the CPU demo's, params/demo.yaml): a config field and its value.
CPU_SIZES = {"batch_size": 16, "image_size": 64, "sequence_length": 128}


def runs_on_cpu(device: str) -> bool:
    """Whether a run asking for ``device`` (auto | cuda | cpu) runs on this machine's CPU:
    ``cpu``, or ``auto`` where no GPU is visible (NVML, else torch)."""
    if device != "auto":
        return device == "cpu"
    gpus = node_limits.visible_gpus()
    if gpus is None:  # no NVML to ask
        import torch

        return not torch.cuda.is_available()
    return gpus == 0


def samples_per_iteration(config: CommonConfig) -> int | None:
    """Samples of one device's iteration as its kind counts them: a batch's images, its
    sequences' tokens, its patches' output voxels; None where a config has no batch."""
    batch = getattr(config, "device_batch_size", None)
    if batch is None:
        return None
    if hasattr(config, "sequence_length"):
        return batch * int(config.sequence_length)
    if hasattr(config, "output_shape"):
        return batch * math.prod(config.output_shape)
    return int(batch)


def iteration_flops(config: CommonConfig) -> float | None:
    """Model FLOPs of one iteration on one device; None where they are not counted."""
    samples = samples_per_iteration(config)
    if samples is None:
        return None
    try:
        per_sample = kinds.kind_of(config).flops_per_sample(config)
    except Exception:  # a model the meta device cannot count: no estimate, no failure
        return None
    return per_sample * samples if per_sample else None


def gpu_sized(config: CommonConfig) -> list[str]:
    """What sizes ``config`` for a GPU, in words: its precision, its FLOPs an iteration."""
    said = []
    precision = getattr(config, "precision", None)
    if precision in GPU_PRECISIONS:
        said.append(f"precision {precision}, autocast")
    flops = iteration_flops(config)
    if flops is not None and flops > CPU_ITERATION_FLOPS:
        said.append(f"{flops / 1e12:.2g} TFLOP an iteration")
    return said


def _size(config: CommonConfig, name: str) -> int:
    """``config``'s value of size field ``name`` as the run uses it (a default image size
    resolved: resnet50's 224); 0 where it has none."""
    return int(getattr(config, f"resolved_{name}", None) or getattr(config, name, None) or 0)


def smaller(config: CommonConfig) -> str:
    """papermill options that make ``config`` a CPU's size: ``-p batch_size 16 -p ...``."""
    options = {name: value for name, value in CPU_SIZES.items() if _size(config, name) > value}
    if getattr(config, "precision", None) in GPU_PRECISIONS:
        options["precision"] = Precision.FP32.value
    return " ".join(f"-p {name} {value}" for name, value in options.items())


def cpu_warning(config: CommonConfig) -> str:
    """One line when ``config`` is sized for a GPU and runs on the CPU here ('' otherwise):
    what sizes it so, that it will be slow, and how to make it small."""
    if not runs_on_cpu(config.device):
        return ""
    why = gpu_sized(config)
    if not why:
        return ""
    options = smaller(config) or "smaller sizes"
    chosen = "device cpu" if config.device == "cpu" else "no GPU here"
    return (f"⚠ sized for a GPU ({'; '.join(why)}) but running on this machine's CPU "
            f"({chosen}): it will be slow. To make it small: {options} (or the same keys in a "
            "params file, as params/demo.yaml)")
