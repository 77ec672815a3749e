"""A slow drift with a step on top, as ``benchlib history`` reads it (issue 52): 80 nights on
one node, 3 runs a night (1 % apart), each night moving by a shared 1 % (the node's state that
night); the speed slides -0.3 % a week from the first night and steps -8 % on night 60.
Prints what history lists (one drift and one step, nothing else, is the goal) and, with
``--steady``, the same history without drift or step (nothing listed).

Usage: python benchmarks/drift_planted.py [--seed 0] [--steady] [--nights 80]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from history_data import nights  # noqa: E402

WEEKLY = -0.003
STEP_NIGHT, STEP = 60, 0.92


def drifting(seed: int = 0, steady: bool = False, count: int = 80) -> pd.DataFrame:
    """The planted history: :func:`history_data.nights` for one node, then the drift, the step
    and each night's shared factor applied."""
    frame = nights(nodes=1, nights=count, noise=0.01, repeats=3, seed=seed)
    day = (pd.to_datetime(frame["started_at"], utc=True)
           - pd.to_datetime(frame["started_at"], utc=True).min()).dt.days.to_numpy()
    rng = np.random.default_rng(seed + 1000)
    shared = np.exp(0.01 * rng.standard_normal(count))
    factor = shared[day]
    if not steady:
        factor = factor * (1 + WEEKLY) ** (day / 7) * np.where(day >= STEP_NIGHT, STEP, 1.0)
    return frame.assign(throughput=frame["throughput"] * factor)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steady", action="store_true")
    parser.add_argument("--nights", type=int, default=80)
    args = parser.parse_args()
    from benchlib.history import said, series

    found = series.change_points(drifting(args.seed, args.steady, args.nights))
    for line in said.lines(found):
        print(line)


if __name__ == "__main__":
    main()
