"""How long ``benchlib fleet``'s judgement takes over a large fleet, and how often it calls a
node of normal speed slow (an A/A count) while finding a planted slow one.

Synthetic records, no files: ``--nodes`` nodes (one GPU model), ``--nights`` nights, a training
run and a node probe per node and night, ``--noise`` run-to-run spread (log-normal); one node
at ``--slow`` of normal speed. Prints the time of
:func:`benchlib.fleet.health.node_states` and the states it gave.

Usage: python benchmarks/fleet_states.py [--nodes 500] [--nights 30] [--noise 0.02] [--slow 0.85]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd

NOW = pd.Timestamp("2026-11-26T06:00:00Z")


def records(nodes: int, nights: int, noise: float, slow: float, seed: int) -> pd.DataFrame:
    """The fleet's records: node0000 at ``slow`` of normal speed, the rest alike."""
    rng = np.random.default_rng(seed)
    rows = []
    for night in range(nights):
        started = (NOW - pd.Timedelta(days=nights - night - 0.5)).isoformat()
        for index in range(nodes):
            common = {"host": f"node{index:04d}", "gpu": "H100", "status": "ok", "flags": "",
                      "campaign": f"night-{night}", "started_at": started}
            share = slow if index == 0 else 1.0
            rows.append({**common, "benchmark": "train", "model": "resnet50",
                         "throughput": 2500 * share * rng.lognormal(0, noise)})
            rows.append({**common, "benchmark": "probe_node",
                         "throughput": 700 * rng.lognormal(0, noise)})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument("--slow", type=float, default=0.85)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from benchlib.fleet import health as fleet_health

    frame = records(args.nodes, args.nights, args.noise, args.slow, args.seed)
    import scipy.stats  # noqa: F401  (the t quantiles' import, once per process, outside the time)
    start = time.perf_counter()
    states = fleet_health.node_states(frame, now=NOW)
    seconds = time.perf_counter() - start
    slow = states[states["state"] == "slow"]
    others = slow[slow["node"] != "node0000"]
    print(f"{len(frame):,} records, {args.nodes} nodes x {args.nights} nights: node_states "
          f"{seconds:.2f} s; {len(states):,} verdicts: "
          + ", ".join(f"{n} {s}" for s, n in states["state"].value_counts().items()))
    print(f"planted node0000 at {args.slow:g}x: "
          f"{'slow' if 'node0000' in set(slow['node']) else 'NOT found'}; nodes of normal "
          f"speed called slow: {len(others)} of {len(states) - 1} verdicts")


if __name__ == "__main__":
    main()
