"""The bottleneck verdict of a diagnosis, made to agree with its waterfall.

A run's verdict (:func:`benchlib.analysis.verdict.judge`) is taken from the share of each
iteration spent waiting for data. Where the loader's workers run on the cores the model needs
(on a CPU the model itself; on a GPU the process that feeds it), the model does not wait for
data: it runs slower. So where the runs are judged compute-bound but a data step of the
waterfall (host copy, decode, filesystem) is a significant loss of at least
:data:`COMPETE_SHARE` of the speed before it, the verdict says that the loader competes with
the model for the cores, and how many cores per device the node has.
"""

from __future__ import annotations

import pandas as pd

from benchlib.diagnosis.plan import Plan
from benchlib.diagnosis.text import step_change

#: A data step losing at least this share of the speed before it, significantly, while the
#: runs wait little for data, makes the loader a competitor for the cores.
COMPETE_SHARE = 0.10
#: The waterfall's steps that the loader's work makes.
DATA_STEPS = ("host copy", "decode", "filesystem")
#: The verdict for runs slowed by the loader's share of the cores.
COMPETES = "slowed by the loader, not waiting for it"


def data_losses(steps: pd.DataFrame) -> pd.DataFrame:
    """The data steps that are significant losses of at least :data:`COMPETE_SHARE`."""
    if not len(steps):
        return steps
    chosen = steps["step"].isin(DATA_STEPS) & (steps["verdict"] == "loss") \
        & (pd.to_numeric(steps["share"], errors="coerce") >= COMPETE_SHARE)
    return steps[chosen]


def cores_text(plan: Plan) -> str:
    """``this node's 2 cores (2 per device)``, or ``the node's cores`` when not known."""
    if not plan.cores:
        return "the node's cores"
    each = max(1, plan.cores // plan.num_devices)
    return (f"this node's {plan.cores} core{'s' if plan.cores != 1 else ''} "
            f"({each} per device)")


def agreed(verdict: str, reason: str, steps: pd.DataFrame, plan: Plan) -> tuple[str, str]:
    """``verdict`` and ``reason`` as they stand, or, for compute-bound runs with a data step
    losing speed (:func:`data_losses`), :data:`COMPETES` and why (see the module docstring)."""
    losses = data_losses(steps)
    if verdict != "compute-bound" or not len(losses):
        return verdict, reason
    named = ", ".join(f"{row['step']} {step_change(row)}" for _, row in losses.iterrows())
    workers = (f"{plan.num_workers} loader worker competes" if plan.num_workers == 1
               else f"{plan.num_workers} loader workers compete")
    model = "the model" if plan.target == "cpu" else "the process that feeds the GPU"
    return COMPETES, (f"{reason}, yet the data path loses speed ({named}): the {workers} "
                      f"with {model} for {cores_text(plan)}, so the model runs slower "
                      "instead of waiting")
