"""``benchlib compare --until-decided`` on planted campaigns (issue 52): each round, BASE is
``--base-campaigns`` campaigns of one configuration and NEW one campaign, NEW either 10 %
slower (``slow``) or the same code (``aa``); each campaign moves by a shared ``--noise``
(its clocks, caches, what ran before: 2 % by default) and its 3 runs 1 % apart; the catalog
holds ``--history`` earlier campaigns of the configuration (what ``benchlib calibrate``
writes; 0: none). While the comparison is undecided, NEW gets one more campaign of the same
kind, and BASE one where the comparison asks for both sides (not with ``--new-only``), up
to ``--budget`` rounds.
Prints, per kind, each round's verdict and campaigns added, and how many rounds were right
(slow: regression; aa: anything but a regression or improvement).

Usage: python benchmarks/compare_until_planted.py [--rounds 10] [--noise 0.02] [--budget 5]
       [--base-campaigns 1] [--history 8] [--new-only]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from benchlib.compare.until_decided import until_decided  # noqa: E402

RUN = {"schema_version": 1, "cluster": "c", "host": "n1", "gpu": "H100", "benchmark": "train",
       "model": "resnet50", "dataset": "synthetic", "precision": "fp32", "num_devices": 1,
       "num_nodes": 1, "unit": "images/s", "status": "ok", "error": "", "batch_size": 32}
SPEED = 1000.0


def campaign(name: str, speed: float, noise: float, rng: np.random.Generator,
             night: int = 30) -> pd.DataFrame:
    """One campaign: a shared factor of sd ``noise``, then 3 runs 1 % apart."""
    shared = speed * np.exp(noise * rng.standard_normal())
    return pd.DataFrame([{**RUN, "campaign": name, "repeat": r, "run_id": f"{name}-{r}",
                          "source": f"/{name}/r{r}.ipynb",
                          "started_at": f"2026-10-{night % 28 + 1:02d}T01:00:00Z",
                          "throughput": shared * np.exp(0.01 * rng.standard_normal())}
                         for r in range(3)])


def one_round(kind: str, seed: int, args: argparse.Namespace) -> tuple[str, int]:
    """The verdict and the campaigns added, for one planted round."""
    rng = np.random.default_rng(seed)
    factor = 0.9 if kind == "slow" else 1.0
    base = pd.concat([campaign(f"a{i}", SPEED, args.noise, rng)
                      for i in range(args.base_campaigns)], ignore_index=True)
    new = campaign("b0", SPEED * factor, args.noise, rng)
    history = (pd.concat([campaign(f"h{i}", SPEED, args.noise, rng, night=i)
                          for i in range(args.history)], ignore_index=True)
               if args.history else None)
    judged, added = until_decided(
        base, new, lambda k: campaign(f"b{k}", SPEED * factor, args.noise, rng), args.budget,
        history=history, more_base=None if args.new_only else (
            lambda k: campaign(f"a-more{k}", SPEED, args.noise, rng)))
    return str(judged.table["verdict"].iloc[0]), added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument("--budget", type=int, default=5)
    parser.add_argument("--base-campaigns", type=int, default=1)
    parser.add_argument("--history", type=int, default=8)
    parser.add_argument("--new-only", action="store_true",
                        help="BASE cannot be run again (older code): NEW's campaigns only")
    args = parser.parse_args()
    for kind in ("slow", "aa"):
        found = [one_round(kind, seed, args) for seed in range(args.rounds)]
        right = sum(v == "regression" if kind == "slow" else v not in ("regression", "improvement")
                    for v, _ in found)
        said = ", ".join(f"{v} (+{n})" for v, n in found)
        print(f"{kind}: {right} of {args.rounds} right; {said}")


if __name__ == "__main__":
    main()
