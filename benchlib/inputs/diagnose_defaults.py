"""The defaults of ``benchlib diagnose`` per target (CPU or GPU), in one place: the plan uses
them and the command's help quotes them (this module imports nothing, so ``benchlib --help``
stays fast)."""

from __future__ import annotations

from typing import Any

#: Defaults per target: batch, image side (None: the model's), repeats, budget (s), warm-up,
#: the probe's seconds per figure.
DEFAULTS: dict[str, dict[str, Any]] = {
    "cpu": {"batch_size": 8, "image_size": 32, "repeats": 2, "budget_s": 180.0, "warmup": 2,
            "probe_time_s": 0.5},
    "cuda": {"batch_size": 64, "image_size": None, "repeats": 3, "budget_s": 600.0, "warmup": 5,
             "probe_time_s": 2.0},
}


def per_target(key: str, gpu_none: str = "the model's") -> str:
    """``8 on a CPU, 64 on a GPU``: a default of both targets, for help texts."""
    cpu, gpu = DEFAULTS["cpu"][key], DEFAULTS["cuda"][key]
    return f"{cpu:g} on a CPU, {gpu_none if gpu is None else format(gpu, 'g')} on a GPU"
