"""The harness's own cost, measured side by side in one run on this machine.

1. Sweep overhead per point: one papermill point (kernel start, notebook, plots, record, sidecar)
   against a plain ``python -c`` process running the same benchmark and building the same record.
   Both pay the torch + torchvision import; the difference is the sweep's overhead.
2. Breakdown timers: throughput with per-phase timers on against off, same config, alternating
   runs in one process.
3. Phase sum: sum of the phase medians against the iteration median, per run of a campaign.
4. Blockwise 3D U-Net prediction (read with halo, compute, write to HDF5, threads overlapping)
   against the plain forward pass over the same number of same-shape blocks already in memory:
   blocks/s ratio, alternating runs in one process.

Each figure is a median over --repeats runs with its spread (IQR / median).
Usage: python benchmarks/harness_overhead.py [--repeats 5] [--campaign outputs/demo] [--json F]
       [--only sweep breakdown unet3d]
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


UNET = {"depth": 2, "pooling": [1, 2, 2], "base_features": 8, "growth": 2, "device": "cpu",
        "block_shape": [15, 40, 40], "batch_size": 1, "num_workers": 1, "warmup": 1}
UNET_VOLUME = (60, 120, 120)


def unet3d_blockwise_ratio(repeats: int, work: Path) -> dict:
    from benchlib.config import UNet3DPredictConfig
    from benchlib.data.em_volume import write_em_volume
    from benchlib.workloads import unet3d

    volume = work / "em.h5"
    write_em_volume(volume, UNET_VOLUME, progress=False)
    config = UNet3DPredictConfig(volume=str(volume), output=str(work / "pred.h5"), **UNET)
    blockwise, plain = [], []
    unet3d.predict(config)  # warm caches
    for _ in range(repeats):
        run = unet3d.predict(config)
        blocks = run.extras["blocks"]
        blockwise.append(blocks / run.wall_time_s)
        ref = unet3d.plain_forward(config, blocks)
        plain.append(ref.extras["blocks"] / ref.wall_time_s)
    ratios = [a / b for a, b in zip(blockwise, plain, strict=True)]
    return {"config": {**UNET, "volume_shape": list(UNET_VOLUME), "blocks": blocks,
                       "input_block": run.extras["input_block"]},
            "ratio_blockwise_over_plain": _stats(ratios), "blockwise_blocks_per_s": _stats(blockwise),
            "plain_blocks_per_s": _stats(plain),
            "read_busy_s": round(run.extras["read_busy_s"], 4),
            "write_busy_s": round(run.extras["write_busy_s"], 4)}


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
    parser.add_argument("--only", nargs="+", choices=["sweep", "breakdown", "unet3d"],
                        default=["sweep", "breakdown", "unet3d"])
    args = parser.parse_args()
    report: dict = {"config": CONFIG, "repeats": args.repeats}
    with tempfile.TemporaryDirectory() as tmp:
        if "sweep" in args.only:
            plain, swept = [], []
            for index in range(args.repeats):  # alternate so drift hits both alike
                plain.append(plain_process_seconds())
                swept.append(sweep_point_seconds(Path(tmp), index))
            overhead = [s - p for s, p in zip(swept, plain, strict=True)]
            report["plain_process_s"] = _stats(plain)
            report["sweep_point_s"] = _stats(swept)
            report["sweep_overhead_per_point_s"] = _stats(overhead)
        if "breakdown" in args.only:
            report["breakdown_timers"] = breakdown_ratio(args.repeats)
        if "unet3d" in args.only:
            report["unet3d_blockwise"] = unet3d_blockwise_ratio(args.repeats, Path(tmp))
    if Path(args.campaign).is_dir():
        report["phase_sum_over_iteration"] = phase_sums(Path(args.campaign))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1))
    if "sweep_overhead_per_point_s" in report:
        o = report["sweep_overhead_per_point_s"]
        print(f"plain process        {report['plain_process_s']['median']:.2f} s")
        print(f"sweep point          {report['sweep_point_s']['median']:.2f} s")
        print(f"overhead per point   {o['median']:.2f} s (spread {o['spread']:.2f}, {o['runs']} runs)")
    if "breakdown_timers" in report:
        b = report["breakdown_timers"]["ratio_on_over_off"]
        print(f"breakdown on / off   {b['median']:.3f} throughput ratio (spread {b['spread']:.3f})")
    if "unet3d_blockwise" in report:
        u = report["unet3d_blockwise"]["ratio_blockwise_over_plain"]
        print(f"U-Net blockwise / plain forward  {u['median']:.3f} blocks/s ratio "
              f"(spread {u['spread']:.3f}, {u['runs']} runs)")
    if "phase_sum_over_iteration" in report:
        p = report["phase_sum_over_iteration"]
        print(f"phase sum / iteration on {args.campaign}: {p['min']:.3f} .. {p['max']:.3f}")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
