"""The node probe's one-shape figures beside what the node reaches (issue 34): the matmul of
one square size against the best over a sweep of shapes (MAMF), the memory copy against STREAM's
triad, and read + JPEG decode from a folder against decode alone from memory, on this machine's
device (the CPU here), repeated to show how much each moves between runs.

Usage: python benchmarks/probe_ceilings.py [--data-dir D] [--repeats N] [--probe-time S]
       [--precisions fp32 bf16] [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics

from benchlib.kinds.probes import workload as node_probe
from benchlib.kinds.probes.config import NodeProbeConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--probe-time", type=float, default=5.0)
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    config = NodeProbeConfig(device=args.device, precisions=args.precisions,
                             probe_time_s=args.probe_time, data_dir=args.data_dir,
                             decode_workers=[1, 2], memory_bytes=256 << 20)
    figures: dict[str, list[float]] = {}
    notes: dict[str, str] = {}
    for _ in range(args.repeats):
        result = node_probe.run(config)
        for row in result.table.itertuples():
            if row.value is None or row.value != row.value:
                continue
            label = f"{row.probe} {row.setting}".strip() + f" ({row.unit})"
            figures.setdefault(label, []).append(float(row.value))
            notes[label] = row.note
    print(f"{args.repeats} probes, device {args.device}, probe_time_s {args.probe_time}:")
    for label, values in figures.items():
        shown = " / ".join(f"{v:.4g}" for v in values)
        print(f"  {label}: median {statistics.median(values):.4g} ({shown}); {notes[label]}")


if __name__ == "__main__":
    main()
