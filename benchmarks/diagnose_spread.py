"""Which limits a diagnose ladder's intervals: the spread between a rung's runs or each run's own
timing noise (issue 52: "fewer but longer runs where the per-run spread is the limit: measure
which"). For every rung of the diagnose campaigns given: the standard deviation of the log
throughput between its runs (%) and the mean within-run standard error (each run's bootstrap
interval, ``throughput_low`` to ``throughput_high``, over 2 x 1.96, %). Where the first is much
the larger, longer runs cannot tighten a step's interval; more runs can.

Usage: python benchmarks/diagnose_spread.py CAMPAIGN_FOLDER [...]
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

import benchlib  # noqa: E402
from benchlib.diagnosis.plan import read_plan  # noqa: E402
from benchlib.diagnosis.rung_speeds import rung_runs  # noqa: E402


def _number(runs: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(runs[column], errors="coerce")


def spread(folder: str) -> pd.DataFrame:
    """One row per benchmark rung of the diagnose campaign ``folder`` with two runs or more."""
    plan = read_plan(folder)
    if plan is None:
        raise SystemExit(f"{folder}: not a diagnose campaign (no plan in it)")
    df = pd.DataFrame(benchlib.load(folder))
    rows = []
    for rung in plan.rungs[1:]:
        runs = rung_runs(df, plan, rung)
        if rung.kind == "probe" or len(runs) < 2:
            continue
        between = float(np.std(np.log(_number(runs, "throughput")), ddof=1))
        within = float(np.mean(np.log(_number(runs, "throughput_high")
                                      / _number(runs, "throughput_low")) / (2 * 1.96)))
        rows.append({"campaign": Path(folder).name, "rung": rung.name, "runs": len(runs),
                     "timed_s": _number(runs, "wall_time_s").mean(),
                     "between_sd_%": 100 * between, "within_se_%": 100 * within,
                     "ratio": between / within if within else np.nan})
    return pd.DataFrame(rows)


def main(folders: list[str]) -> None:
    warnings.filterwarnings("ignore")
    found = pd.concat([spread(f) for f in folders], ignore_index=True)
    with pd.option_context("display.width", 200):
        print(found.round(2).to_string())
        print("medians:", found[["between_sd_%", "within_se_%", "ratio"]].median().round(2)
              .to_dict())


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        raise SystemExit(0 if len(sys.argv) > 1 else 2)
    main(sys.argv[1:])
