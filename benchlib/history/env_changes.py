"""What changed in a node's environment around a change point: the recorded versions and
settings (``env_*`` columns: driver, CUDA, cuDNN, NCCL, torch, container, kernel, ...; the GPU
variant; power limits, clocks, BIOS or firmware where a record holds them) that differ between
the runs on either side of it. See :mod:`benchlib.history.series`."""

from __future__ import annotations

import re

import pandas as pd

from benchlib.compare.comparable import INCOMPARABLE, INCOMPARABLE_PATTERN

#: Settings beyond ``env_*`` compared when a record holds them: power limits, clocks, BIOS,
#: firmware.
SETTINGS_PATTERN = re.compile(rf"{INCOMPARABLE_PATTERN.pattern}|bios|firmware")
#: ``env_*`` columns that differ from run to run by nature (job ids, the node list) or name the
#: node itself: never a change of the environment.
PER_RUN = ("env_slurm_job_id", "env_slurm_array_job_id", "env_slurm_array_task_id",
           "env_slurm_job_nodelist", "env_host")
#: What people read for a column, where its name does not say it (:data:`INCOMPARABLE`'s
#: names, and the kernel, which ``env_os`` holds: ``platform.platform()``).
NAMES = {**INCOMPARABLE, "env_os": "kernel", "env_benchlib": "benchlib",
         "env_python": "Python", "env_torchvision": "torchvision",
         "env_gpu_interconnect": "interconnect", "env_git_commit": "benchlib commit"}
#: Runs looked at on each side beyond the nearest one: a change point found one run off
#: still names the change (said "one run earlier" / "later").
NEAR = 1


def columns(df: pd.DataFrame) -> list[str]:
    """The columns of ``df`` that say what a run's environment was."""
    return [c for c in df.columns if c not in PER_RUN and (
        c in NAMES or str(c).startswith("env_") or SETTINGS_PATTERN.search(str(c)))]


def name(column: str) -> str:
    """``driver`` for ``env_driver``, ``NCCL_ALGO`` for ``env_var_nccl_algo``, ..."""
    if column in NAMES:
        return NAMES[column]
    if column.startswith("env_var_"):
        return column.removeprefix("env_var_").upper()
    return column.removeprefix("env_")


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def between(runs: pd.DataFrame, index: int, near: int = NEAR, unit: str = "run") -> list[str]:
    """What changed between ``runs`` (one node's runs, or campaigns, in time order) ``index -
    1`` and ``index`` (``driver 580.65 -> 580.82``), and between the ``near`` rows either side
    of them (``... (one run earlier)``, ``unit`` naming a row): one entry per column, its
    nearest change."""
    said: dict[str, str] = {}
    offsets = sorted(range(-near, near + 1), key=abs)
    for column in columns(runs):
        values = [_text(v) for v in runs[column].tolist()]
        for offset in offsets:
            after = index + offset
            if not 1 <= after < len(values) or values[after - 1] == values[after]:
                continue
            old, new = values[after - 1] or "(none)", values[after] or "(none)"
            where = ("" if offset == 0 else
                     f" ({f'one {unit}' if abs(offset) == 1 else f'{abs(offset)} {unit}s'} "
                     f"{'earlier' if offset < 0 else 'later'})")
            said[column] = f"{name(column)} {old} -> {new}{where}"
            break
    return list(said.values())
