"""The peak memory of ``regression.compare`` on 2 + 2 campaigns of 50,000 runs each (issue 55):
the growth of the process's peak resident set over what the 200,000-row table already held.

Usage: python benchmarks/compare_memory.py [--runs 50000]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def table(runs: int, campaign: str, speed: float, seed: int) -> pd.DataFrame:
    """One campaign of ``runs`` runs of one configuration at about ``speed`` images/s."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "benchmark": "train", "model": "resnet50", "gpu": "H100", "unit": "images/s",
        "status": "ok", "host": "n1", "campaign": campaign,
        "source": [f"{campaign}/r{i}.ipynb" for i in range(runs)],
        "run_id": [f"{campaign}-{i}" for i in range(runs)],
        "throughput": speed * (1 + 0.01 * rng.standard_normal(runs))})


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50_000)
    runs = parser.parse_args().runs
    from benchlib.compare import regression

    base = pd.concat([table(runs, f"base{i}", 1000, i) for i in range(2)], ignore_index=True)
    new = pd.concat([table(runs, f"new{i}", 990, 10 + i) for i in range(2)], ignore_index=True)
    before = peak_mib()
    started = time.perf_counter()
    found = regression.compare(base, new)
    seconds = time.perf_counter() - started
    row = found.table.iloc[0]
    print(f"2 + 2 campaigns of {runs:,} runs ({len(base) + len(new):,} rows): peak resident "
          f"{before:,.0f} MiB with the tables, {peak_mib():,.0f} MiB after compare (+"
          f"{peak_mib() - before:,.0f} MiB); {seconds:.1f} s; {row['verdict']} "
          f"{row['ratio']:.3f} ({row['low']:.3f}-{row['high']:.3f})")


if __name__ == "__main__":
    main()
