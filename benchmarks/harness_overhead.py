"""The harness's own cost, measured side by side in one run on this machine.

1. Sweep overhead per point: one papermill point (kernel start, notebook, plots, record, sidecar)
   against a plain ``python -c`` process running the same benchmark and building the same record.
   Both pay the torch + torchvision import; the difference is the sweep's overhead.
2. Breakdown timers: throughput with per-phase timers on against off, same config, alternating
   runs in one process.
3. Phase sum: sum of the phase medians against the iteration median, per run of a campaign.

Each figure is a median over --repeats runs with its spread (IQR / median).
Usage: python benchmarks/harness_overhead.py [--repeats 5] [--campaign outputs/demo] [--json F]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
CONFIG = {"model": "resnet18", "image_size": 64, "batch_size": 8, "iterations": 10, "warmup": 2,
          "num_classes": 10, "num_workers": 0, "device": "cpu"}


def _stats(values: list[float]) -> dict:
    q25, q50, q75 = np.percentile(values, [25, 50, 75])
    return {"median": float(q50), "spread": float((q75 - q25) / q50) if q50 else 0.0,
            "runs": len(values), "values": [round(v, 4) for v in values]}


def plain_process_seconds() -> float:
    code = textwrap.dedent(f"""
        from benchlib.config import ClassificationConfig
        from benchlib.environment import capture
        from benchlib.results import make_record
        from benchlib.workloads import classification
        config = ClassificationConfig(benchmark="train", **{CONFIG!r})
        result = classification.run(config)
        make_record(config, result, capture(result.device))
    """)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return time.perf_counter() - start


def sweep_point_seconds(work: Path, index: int) -> float:
    from benchlib.sweep import load_sweep, run_sweep

    params = work / f"p{index}.yaml"
    params.write_text(yaml.safe_dump({"campaign": f"overhead{index}", "notebook": "train",
                                      "base": CONFIG}))
    sweep = load_sweep(params)  # validation is once per sweep, not per point: not timed
    start = time.perf_counter()
    outcome = run_sweep(sweep, work / "outputs", progress=False)[0]
    seconds = time.perf_counter() - start
    if outcome.status != "ok":
        raise RuntimeError(outcome.error)
    return seconds


def breakdown_ratio(repeats: int) -> dict:
    from benchlib.config import ClassificationConfig
    from benchlib.workloads import classification

    throughput: dict[bool, list[float]] = {True: [], False: []}
    config = {**CONFIG, "iterations": 30}
    classification.run(ClassificationConfig(benchmark="train", **config))  # warm caches
    for _ in range(repeats):
        for breakdown in (True, False):
            result = classification.run(ClassificationConfig(benchmark="train",
                                                             breakdown=breakdown, **config))
            throughput[breakdown].append(result.throughput)
    ratios = [a / b for a, b in zip(throughput[True], throughput[False], strict=True)]
    return {"ratio_on_over_off": _stats(ratios), "on": _stats(throughput[True]),
            "off": _stats(throughput[False])}


def phase_sums(campaign: Path) -> dict:
    from benchlib.results import load
    from benchlib.timing import PHASES

    frame = load(campaign)
    frame = frame[frame["status"] == "ok"]
    phases = [f"time_{p}_s" for p in PHASES]
    ratio = frame[phases].sum(axis=1, min_count=1) / frame["time_iteration_s"]
    table = frame[["benchmark", "dataset", "batch_size"]].assign(phase_sum_over_iteration=ratio)
    return {"runs": table.round(4).to_dict("records"),
            "min": float(ratio.min()), "max": float(ratio.max())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--campaign", default=str(ROOT / "outputs" / "demo"))
    parser.add_argument("--json", default=str(ROOT / "outputs" / "harness_overhead.json"))
    args = parser.parse_args()
    report: dict = {"config": CONFIG, "repeats": args.repeats}
    with tempfile.TemporaryDirectory() as tmp:
        plain, swept = [], []
        for index in range(args.repeats):  # alternate so drift hits both alike
            plain.append(plain_process_seconds())
            swept.append(sweep_point_seconds(Path(tmp), index))
    overhead = [s - p for s, p in zip(swept, plain, strict=True)]
    report["plain_process_s"] = _stats(plain)
    report["sweep_point_s"] = _stats(swept)
    report["sweep_overhead_per_point_s"] = _stats(overhead)
    report["breakdown_timers"] = breakdown_ratio(args.repeats)
    if Path(args.campaign).is_dir():
        report["phase_sum_over_iteration"] = phase_sums(Path(args.campaign))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1))
    o, b = report["sweep_overhead_per_point_s"], report["breakdown_timers"]["ratio_on_over_off"]
    print(f"plain process        {report['plain_process_s']['median']:.2f} s")
    print(f"sweep point          {report['sweep_point_s']['median']:.2f} s")
    print(f"overhead per point   {o['median']:.2f} s (spread {o['spread']:.2f}, {o['runs']} runs)")
    print(f"breakdown on / off   {b['median']:.3f} throughput ratio (spread {b['spread']:.3f})")
    if "phase_sum_over_iteration" in report:
        p = report["phase_sum_over_iteration"]
        print(f"phase sum / iteration on {args.campaign}: {p['min']:.3f} .. {p['max']:.3f}")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
