"""How long the history takes (goals of issue 32, docs/measurements.md):

- **one configuration over 100,000 records** (<= 1 s): a frame of 100,000 synthetic records
  with ``started_at`` (50 configurations x 50 nodes x 40 nights, the shape
  ``benchlib.load`` returns), then what ``benchlib history --where batch_size=64`` does on it:
  the selection (``analysis.selection.select``) and the change points of that configuration's
  50 node histories (``analysis.node_history.change_points``), timed together;
- **change points over 10,000 points of one series** (<= 5 s): Otava's method
  (``analysis.change_detection.change_points``) on 10,000 log-normal points (2 % noise) with a
  step every 1,000, and the same series as one node's history through
  ``node_history.change_points`` (intervals and environment changes included).

With ``--catalog FOLDER`` the same 100,000 records are also written there as lone sidecars
(one folder per night), indexed into ``FOLDER/catalog.sqlite`` with ``benchlib index`` (once;
kept for later runs), and the history of the one configuration is timed through the catalog:
``benchlib.load(db=..., where={"batch_size": 64})`` and the change points, together.

Each figure is the best of ``--repeats`` runs (default 3), after one warm-up (imports).

    python benchmarks/history_speed.py
    python benchmarks/history_speed.py --catalog /tmp/history-catalog
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from history_data import nights

import benchlib
from benchlib.analysis import selection
from benchlib.history import change_points as change_detection
from benchlib.history import series as node_history


def best(repeats: int, work) -> tuple[float, object]:
    """The shortest of ``repeats`` timed calls of ``work`` (after one untimed), its result."""
    result = work()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--catalog", type=Path, help="also time it through a catalog here")
    args = parser.parse_args()
    with open("/proc/loadavg") as load:
        print(f"load average: {load.read().strip()}")

    made = time.perf_counter()
    frame = nights(nodes=50, nights=40, batches=tuple(range(8, 8 + 50 * 8, 8)),
                   step={"node017": (25, 0.88)})
    print(f"{len(frame):,} records made in {time.perf_counter() - made:.1f} s")

    def one_configuration():
        chosen = selection.select(frame, selection.parse_where(["batch_size=64"]))
        return node_history.change_points(chosen)

    seconds, table = best(args.repeats, one_configuration)
    print(f"history of one configuration over {len(frame):,} records: {seconds:.2f} s "
          f"({table.attrs['runs']:,} runs, {table.attrs['series']} node histories, "
          f"{len(table)} change point(s))")

    if args.catalog:
        through_catalog(frame, args.catalog, args.repeats)

    rng = np.random.default_rng(0)
    values = 1000 * np.exp(0.02 * rng.standard_normal(10_000))
    for start in range(1000, 10_000, 1000):
        values[start:] *= 0.9 if start // 1000 % 2 else 1 / 0.9
    seconds, points = best(args.repeats, lambda: change_detection.change_points(values))
    print(f"change points over {values.size:,} points of one series: {seconds:.2f} s "
          f"({len(points)} found, 9 planted)")

    series = nights(nodes=1, nights=10_000, seed=1).assign(throughput=values)
    seconds, table = best(args.repeats, lambda: node_history.change_points(series))
    print(f"the same series as one node's history over 10,000 campaigns (frame path): "
          f"{seconds:.2f} s ({len(table)} change points)")

    walk = 1000 + np.cumsum(rng.standard_normal(10_000))
    seconds, points = best(args.repeats, lambda: change_detection.change_points(walk))
    print(f"change points over a 10,000-point random walk: {seconds:.2f} s ({len(points)} found)")
    growth(args.repeats)


def growth(repeats: int) -> None:
    """How the whole history grows with records: every configuration x node history of frames
    of 1,000, 10,000 and 100,000 records (40 nights, 3 runs a night, histories of 25
    configurations x nodes per 3,000 records), through ``node_history.change_points``."""
    for records in (1_000, 10_000, 100_000):
        histories = max(1, records // 120)
        nodes = max(1, round(histories ** 0.5))
        batches = tuple(range(8, 8 + 8 * max(1, histories // nodes), 8))
        frame = nights(nodes=nodes, nights=40, repeats=3, batches=batches, seed=3)
        seconds, table = best(repeats, lambda f=frame: node_history.change_points(f))
        print(f"every history of {len(frame):,} records: {seconds:.2f} s "
              f"({table.attrs['series']:,} configuration x node histories, "
              f"{table.attrs['campaigns']:,} campaigns, {len(table)} change points)")


def through_catalog(frame, folder: Path, repeats: int) -> None:
    """Index ``frame``'s records (once) and time one configuration's history from the catalog."""
    catalog = folder / "catalog.sqlite"
    if not catalog.exists():
        started = time.perf_counter()
        for (campaign, _), runs in frame.groupby(["campaign", "batch_size"]):
            night = folder / "outputs" / str(campaign)
            night.mkdir(parents=True, exist_ok=True)
            for record in runs.drop(columns=["source"]).to_dict("records"):
                name = f"{record['host']}-b{record['batch_size']}-r{record['repeat']}.json"
                (night / name).write_text(json.dumps(record))
        print(f"wrote {len(frame):,} sidecars in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        subprocess.run([str(Path(sys.executable).with_name("benchlib")), "index",
                        str(folder / "outputs"), "--db", str(catalog), "--quiet"], check=True)
        print(f"indexed in {time.perf_counter() - started:.1f} s")

    def one_configuration():
        chosen = benchlib.load(db=str(catalog), where={"batch_size": 64})
        return node_history.change_points(chosen)

    seconds, table = best(repeats, one_configuration)
    print(f"history of one configuration over {len(frame):,} catalogued records: {seconds:.2f} s "
          f"({table.attrs['runs']:,} runs, {table.attrs['series']} node histories, "
          f"{len(table)} change point(s))")


if __name__ == "__main__":
    main()
