"""Calibrate the history's change points (``benchlib history``, Otava's method in
``benchlib.history.change_points``) on synthetic nightly histories, as
``calibrate_compare.py`` calibrates ``benchlib compare``.

Each round makes, through the same frame path as ``benchlib history``
(``analysis.node_history.change_points`` over records with ``started_at``):

- **steps**: 10 nodes, 40 nights each, ``--runs`` runs a night (3) that move together: each
  night shifts all its runs by ``--noise`` (2 %, log-normal), each run differs by ``--run-noise``
  (1 %); a 10 % slowdown planted from a random night between 5 and 35 (``--step``): found when
  a listed change point lies within +-1 night of it (goal: >= 9 of 10);
- **stationary**: 25 nodes x 40 nights (1,000 nights) with the same noise and no step: every
  listed change point is a false one (goal: <= 1 per 1,000 nights).

    python benchmarks/calibrate_history.py --rounds 20
    python benchmarks/calibrate_history.py --rounds 20 --min-size 2     # the parameter tuned
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from history_data import START, nights

from benchlib.history import series as node_history
from benchlib.history.change_points import MAX_PVALUE, MIN_SIZE

NIGHTS = 40


def _night(times: pd.Series) -> pd.Series:
    return (pd.to_datetime(times, utc=True) - START).dt.days


def correlated(nodes: int, args: argparse.Namespace, seed: int, step=None) -> pd.DataFrame:
    """``nights`` with every run of a night on a node moved by one shared factor."""
    frame = nights(nodes=nodes, nights=NIGHTS, noise=args.run_noise, repeats=args.runs,
                   step=step, seed=seed)
    rng = np.random.default_rng(seed + 1)
    shift = {key: float(np.exp(args.noise * rng.standard_normal()))
             for key in sorted(set(zip(frame["campaign"], frame["host"], strict=True)))}
    frame["throughput"] *= [shift[key] for key in zip(frame["campaign"], frame["host"],
                                                      strict=True)]
    return frame


def one_round(seed: int, args: argparse.Namespace) -> tuple[int, int, int]:
    """(steps found within +-1 night of 10, false change points, stationary nights)."""
    rng = np.random.default_rng(seed)
    planted = {f"node{n:03d}": (int(rng.integers(5, 36)), 1 - args.step) for n in range(1, 11)}
    stepped = correlated(10, args, seed, planted)
    table = node_history.change_points(stepped, max_pvalue=args.max_pvalue,
                                       min_size=args.min_size)
    found = 0
    for node, (night, _) in planted.items():
        points = _night(table.loc[table["node"] == node, "time"])
        found += bool((abs(points - night) <= 1).any())
    calm = correlated(25, args, seed + 10_000)
    false = len(node_history.change_points(calm, max_pvalue=args.max_pvalue,
                                           min_size=args.min_size))
    return found, false, 25 * NIGHTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--noise", type=float, default=0.02,
                        help="noise between nights (log sd, default 0.02)")
    parser.add_argument("--run-noise", type=float, default=0.01,
                        help="noise between the runs of a night (log sd, default 0.01)")
    parser.add_argument("--runs", type=int, default=3, help="runs a night (default 3)")
    parser.add_argument("--step", type=float, default=0.10, help="slowdown planted (0.10)")
    parser.add_argument("--max-pvalue", type=float, default=MAX_PVALUE)
    parser.add_argument("--min-size", type=int, default=MIN_SIZE)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"{NIGHTS} nights of {args.runs} runs, nights {args.noise:.0%} apart, runs "
          f"{args.run_noise:.0%}, step {args.step:.0%}, max_pvalue "
          f"{args.max_pvalue:g}, min_size {args.min_size}")
    print("| round | steps found (+-1 night) | false change points | stationary nights |")
    print("| --- | --- | --- | --- |")
    totals = np.zeros(3, dtype=int)
    for seed in range(args.rounds):
        found, false, calm = one_round(seed, args)
        totals += (found, false, calm)
        print(f"| {seed + 1} | {found} of 10 | {false} | {calm} |")
    print(f"| all {args.rounds} rounds | {totals[0]} of {10 * args.rounds} "
          f"({totals[0] / args.rounds:.1f} of 10 a round) | {totals[1]} "
          f"({1000 * totals[1] / totals[2]:.2f} per 1,000 nights) | {totals[2]} |")
    print(f"wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
