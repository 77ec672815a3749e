"""The launcher's cost against the single-process path, on one device.

The same config (resnet18 train, 64 px, batch 8, 12 timed iterations after 3 warm-up) runs
in-process (``launch.run`` with ``num_devices: 1``) and through torchrun with one rank
(``launch.Launch(config).run()``), in alternating order, ``--repeats`` pairs. Prints the
median wall time of each side (from the call to the merged result) and its throughput.
Usage: python benchmarks/launch_overhead.py [--repeats 3] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.run import launch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    config = ClassificationConfig(benchmark="train", model="resnet18", image_size=64, batch_size=8,
                                  iterations=12, warmup=3, device=args.device, num_classes=10)
    runs: dict[str, list[tuple[float, float]]] = {"in-process": [], "torchrun, 1 rank": []}
    for index in range(args.repeats):
        order = list(runs) if index % 2 == 0 else list(reversed(runs))
        for side in order:
            start = time.perf_counter()
            result = launch.run(config) if side == "in-process" else launch.Launch(config).run()
            runs[side].append((time.perf_counter() - start, result.throughput))
    for side, values in runs.items():
        walls, rates = zip(*values, strict=True)
        each = ", ".join(f"{w:.2f}" for w in walls)
        print(f"{side:18s} wall {statistics.median(walls):6.2f} s (runs {each})"
              f"  throughput {statistics.median(rates):7.1f} {result.unit}")


if __name__ == "__main__":
    main()
