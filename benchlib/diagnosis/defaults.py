"""The defaults of ``benchlib diagnose`` per target (CPU or GPU), in one place: the plan uses
them and the command's help quotes them (this module imports nothing, so ``benchlib --help``
stays fast)."""

from __future__ import annotations

from typing import Any

#: Defaults per target: batch, image side (None: the model's), budget (s), warm-up, the probe's
#: seconds per figure. Each rung runs 3 times first, then in rounds of extra repeats
#: (:mod:`benchlib.diagnosis.budget`); the budgets hold that: 15 CPU runs of the initial
#: round at 17 s each and the probe are 280 s, the old 180 s could not hold them.
DEFAULTS: dict[str, dict[str, Any]] = {
    "cpu": {"batch_size": 8, "image_size": 32, "budget_s": 540.0, "warmup": 2,
            "probe_time_s": 0.5},
    "cuda": {"batch_size": 64, "image_size": None, "budget_s": 1200.0, "warmup": 5,
             "probe_time_s": 2.0},
}


def per_target(key: str, gpu_none: str = "the model's") -> str:
    """``8 on a CPU, 64 on a GPU``: a default of both targets, for help texts."""
    cpu, gpu = DEFAULTS["cpu"][key], DEFAULTS["cuda"][key]
    return f"{cpu:g} on a CPU, {gpu_none if gpu is None else format(gpu, 'g')} on a GPU"
