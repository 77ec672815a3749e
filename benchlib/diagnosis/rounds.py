"""Sequential repeats of ``benchlib diagnose``: which comparisons of a diagnosis are decided,
which rungs the next round of extra repeats runs, and what the answer says about it.

The comparisons are the waterfall's steps and the worker counts against the user's. One is
**decided** when the high end of its 95 % interval (of its ratio of speeds, Welch t over the
two rungs' runs) is at most the plan's ``target_factor`` times its low end. The next round
runs both rungs of every comparison not decided, those whose interval holds 1 (loss or gain
not yet told) first, then the widest first, as many rungs as the budget's runs left allow.
A comparison with a contended or throttled run (``unreliable``) runs again first: a rung's
disturbed runs are left out once two calm ones exist (:mod:`benchlib.diagnosis.rung_speeds`),
so a brief disturbance costs runs, not the verdict; a node busy through the whole budget leaves
the step unreliable, never judged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from benchlib.diagnosis.plan import Plan
from benchlib.diagnosis.text import WIDE_FACTOR

COLUMNS = ["comparison", "upper", "lower", "ratio", "low", "high", "factor", "verdict",
           "decided"]


def _factor(low: object, high: object) -> float:
    """High over low of an interval; infinite when it is missing or not positive."""
    try:
        low_, high_ = float(low), float(high)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.inf
    if not (math.isfinite(low_) and math.isfinite(high_)) or low_ <= 0:
        return math.inf
    return high_ / low_


def comparisons(steps: pd.DataFrame, workers: pd.DataFrame, plan: Plan,
                gpu_decode: Mapping[str, object] | None = None) -> pd.DataFrame:
    """One row per comparison (each step, each worker count against the user's, the user's
    data path decoded on the GPU against the user's): its rungs, ratio and interval,
    ``factor`` (high over low, infinite when unknown), verdict and whether it is decided
    (``factor`` at most the plan's target)."""
    rows = []
    for _, row in steps.iterrows():
        known = bool(row["known"])
        rows.append({"comparison": row["step"], "upper": row["upper"], "lower": row["lower"],
                     "ratio": row["ratio"], "low": row["low"], "high": row["high"],
                     "factor": _factor(row["low"], row["high"]) if known else math.inf,
                     "verdict": row["verdict"]})
    kind = "disk" if plan.data_dir else "host"
    for _, row in workers.iterrows():
        if pd.isna(row["ratio"]):
            continue  # the user's own count
        rows.append({"comparison": f"{int(row['workers'])} workers",
                     "upper": f"{kind}-w{int(row['workers'])}",
                     "lower": f"{kind}-w{plan.num_workers}", "ratio": row["ratio"],
                     "low": row["low"], "high": row["high"],
                     "factor": _factor(row["low"], row["high"]), "verdict": row["verdict"]})
    if gpu_decode is not None:
        rows.append({"comparison": "decode on the GPU", "upper": f"disk-gpu-w{plan.num_workers}",
                     "lower": f"disk-w{plan.num_workers}", "ratio": gpu_decode["ratio"],
                     "low": gpu_decode["low"], "high": gpu_decode["high"],
                     "factor": _factor(gpu_decode["low"], gpu_decode["high"]),
                     "verdict": gpu_decode["verdict"]})
    table = pd.DataFrame(rows, columns=COLUMNS[:-1])
    table["decided"] = table["factor"] <= plan.target_factor
    return table


def next_round(steps: pd.DataFrame, workers: pd.DataFrame, plan: Plan,
               runs_left: int, gpu_decode: Mapping[str, object] | None = None) -> list[str]:
    """The rungs of the next round of extra repeats, in the order they run (see the module
    docstring); none when every comparison is decided and none is unreliable, or no run is
    left."""
    table = comparisons(steps, workers, plan, gpu_decode)
    open_ = table[~table["decided"] | (table["verdict"] == "unreliable")]
    if not len(open_) or runs_left <= 0:
        return []
    holds_one = [not (float(r.low) > 1 or float(r.high) < 1) if math.isfinite(r.factor)
                 else True for r in open_.itertuples()]
    ranked = open_.assign(holds_one=holds_one, disturbed=open_["verdict"] == "unreliable") \
        .sort_values(["disturbed", "holds_one", "factor"], ascending=[False, False, False],
                     kind="stable")
    names: list[str] = []
    for row in ranked.itertuples():
        names += [n for n in (row.upper, row.lower) if n not in names]
    return names[:runs_left]


def rounds_text(steps: pd.DataFrame, workers: pd.DataFrame, plan: Plan, runs: int,
                gpu_decode: Mapping[str, object] | None = None) -> str:
    """What the repeats reached: every comparison within the target, or which were not (their
    factor, "interval unknown" beyond :data:`benchlib.diagnosis.text.WIDE_FACTOR`) and
    why (the budget's runs spent, or fixed ``--repeats``); '' with no steps."""
    if not len(steps):
        return ""
    table = comparisons(steps, workers, plan, gpu_decode)
    target = f"a factor of {plan.target_factor:g}"
    wide = table[~table["decided"] | (table["verdict"] == "unreliable")]
    if not len(wide):
        return (f"Repeats: every step's 95 % interval is within {target} (high over low) "
                f"after {runs} runs.")
    listed = "; ".join(f"{r.comparison} (disturbed runs)" if r.verdict == "unreliable"
                       else f"{r.comparison} x{r.factor:.2f}" if r.factor <= WIDE_FACTOR
                       else f"{r.comparison} (interval unknown)" for r in wide.itertuples())
    if not plan.adaptive:
        why = f"with a fixed {plan.repeats} runs per rung (--repeats)"
    elif runs >= plan.max_runs:
        why = f"the budget ran out ({runs} of {plan.max_runs} runs, {plan.budget_s:g} s)"
    else:
        why = f"{runs} of {plan.max_runs} runs spent (run the same command again to go on)"
    return f"Repeats: not within {target}, {why}: {listed}."
