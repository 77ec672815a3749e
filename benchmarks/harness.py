"""The harness's own speed, measured side by side in one run on this machine.

1. Train loop: benchlib's classification train loop (breakdown timers on, the default) against
   a bare hand-written PyTorch loop: same model, batch, SGD, synthetic device data. Throughput
   ratio, alternating runs in one process. Goal >= 0.99.
2. Breakdown timers: throughput with per-phase timers on against off. Goal >= 0.99.
3. Real-data loader: benchlib's ImageFolder DataLoader (decode + train transform in N worker
   processes) against a bare loop doing PIL decode + the same transform in this process;
   images/s per worker, ratio. Goal >= 0.95.
4. Sweep overhead per point: one papermill point (kernel start, notebook, plots, record,
   sidecar) against a plain ``python -c`` process running the same benchmark and building the
   same record; both pay the torch + torchvision import. Goal <= 3 s.
5. Loading 10,000 executed notebooks with ``benchlib.records.results.load`` (hard links of one executed
   demo notebook), with and without sidecars. Goal <= 10 s.
6. Blockwise 3D U-Net prediction (read with halo, compute, write to HDF5, threads overlapping)
   against the plain forward pass over the same number of same-shape blocks already in memory:
   blocks/s ratio, at least 9 runs (shorter series were too noisy on this VM). Goal >= 0.9.
Also: the sum of phase medians against the iteration median for each run of a campaign.

Each figure is a median over --repeats pairs with its spread (IQR / median); the two sides of a
pair run back to back in one process, their order swapped every other pair. Prints a table and
writes JSON (default outputs/harness.json).
Usage: python benchmarks/harness.py [--repeats 5] [--campaign outputs/demo] [--json F]
       [--only train breakdown loader sweep load unet3d]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
CONFIG = {"model": "resnet18", "image_size": 64, "batch_size": 8, "iterations": 10, "warmup": 2,
          "num_classes": 10, "num_workers": 0, "device": "cpu"}


def paired(a: Callable[[], float], b: Callable[[], float], repeats: int) -> tuple[list, list]:
    """``repeats`` pairs of measurements, the order swapped every other pair (ABBA), so that
    drift and whatever favours the first or second slot hit both sides alike."""
    first, second = [], []
    for index in range(repeats):
        if index % 2:
            y = b()
            x = a()
        else:
            x = a()
            y = b()
        first.append(x)
        second.append(y)
    return first, second


def _stats(values: list[float]) -> dict:
    q25, q50, q75 = np.percentile(values, [25, 50, 75])
    return {"median": float(q50), "spread": float((q75 - q25) / q50) if q50 else 0.0,
            "runs": len(values), "values": [round(v, 4) for v in values]}


def bare_train_throughput(iterations: int, warmup: int) -> float:
    """A hand-written loop: the same model, loss, SGD and one batch made once on the device."""
    import torch
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.get_model(CONFIG["model"], weights=None,
                                         num_classes=CONFIG["num_classes"]).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    size, batch = CONFIG["image_size"], CONFIG["batch_size"]
    images = torch.randn(batch, 3, size, size)
    labels = torch.randint(0, CONFIG["num_classes"], (batch,))

    def step() -> None:
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(iterations):
        step()
    return iterations * batch / (time.perf_counter() - start)


def train_loop_ratio(repeats: int) -> dict:
    from benchlib.kinds.classification import workload as classification
    from benchlib.kinds.classification.config import ClassificationConfig

    config = ClassificationConfig(benchmark="train", **{**CONFIG, "iterations": 40})
    classification.run(config)  # warm caches
    ours, bare = paired(lambda: classification.run(config).throughput,
                        lambda: bare_train_throughput(config.iterations, config.warmup), repeats)
    ratios = [a / b for a, b in zip(ours, bare, strict=True)]
    return {"ratio_benchlib_over_bare": _stats(ratios), "benchlib_images_per_s": _stats(ours),
            "bare_images_per_s": _stats(bare)}


LOADER = {"image_size": 224, "batch_size": 32, "classes": 4, "images_per_class": 48,
          "source_px": 320}


def bare_decode_throughput(root: Path) -> float:
    """PIL open + RGB + the same train transform, one image after another, batched by stack."""
    import torch
    from PIL import Image

    from benchlib.data.imagefolder import train_transform

    transform = train_transform(LOADER["image_size"])
    files = sorted(p for p in root.glob("*/*") if p.is_file())
    start = time.perf_counter()
    batch = []
    for path in files:
        with Image.open(path) as image:
            batch.append(transform(image.convert("RGB")))
        if len(batch) == LOADER["batch_size"]:
            torch.stack(batch)
            batch = []
    return len(files) / (time.perf_counter() - start)


def loader_throughput(root: Path, workers: int) -> float:
    """One pass of benchlib's DataLoader (workers already started), images/s."""
    from benchlib.data.imagefolder import image_folder_loader

    loader = image_folder_loader(root, LOADER["image_size"], LOADER["batch_size"], workers,
                                 train=True, pin_memory=False)
    for _ in loader:  # first pass starts the persistent workers: not timed
        pass
    start = time.perf_counter()
    count = sum(images.shape[0] for images, _ in loader)
    return count / (time.perf_counter() - start)


def loader_ratio(repeats: int, work: Path, worker_counts: tuple[int, ...] = (1, 2)) -> dict:
    from benchlib.data.generate import write_imagefolder

    root = write_imagefolder(work / "images", classes=LOADER["classes"],
                             images_per_class=LOADER["images_per_class"], size=LOADER["source_px"])
    report: dict = {"config": LOADER}
    bare_decode_throughput(root)  # warm the page cache
    for workers in worker_counts:
        ours, bare = paired(lambda w=workers: loader_throughput(root, w) / w,
                            lambda: bare_decode_throughput(root), repeats)
        report[f"workers_{workers}"] = {
            "ratio_per_worker": _stats([a / b for a, b in zip(ours, bare, strict=True)]),
            "loader_images_per_s_per_worker": _stats(ours), "bare_images_per_s": _stats(bare)}
    return report


def load_seconds(repeats: int, work: Path, campaign: Path, count: int = 10_000) -> dict:
    """Time ``benchlib.records.results.load`` over ``count`` hard links of one executed notebook."""
    import os

    from benchlib.records.results import load
    from benchlib.records.store import sidecar_path

    source = next((p for p in sorted(campaign.glob("*.ipynb"))
                   if sidecar_path(p).is_file()), None) if campaign.is_dir() else None
    if source is None:
        raise FileNotFoundError(f"no executed notebook with a sidecar under {campaign}: run "
                                "make demo first (or pass --campaign)")
    folder = work / "many"
    folder.mkdir()
    for index in range(count):
        target = folder / f"point-{index:05d}.ipynb"
        os.link(source, target)
        os.link(sidecar_path(source), sidecar_path(target))
    with_sidecars, without = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        rows = len(load(folder))
        with_sidecars.append(time.perf_counter() - start)
    assert rows == count, rows
    for index in range(count):
        sidecar_path(folder / f"point-{index:05d}.ipynb").unlink()
    for _ in range(max(1, repeats // 2)):
        start = time.perf_counter()
        rows = len(load(folder))
        without.append(time.perf_counter() - start)
    assert rows == count, rows
    return {"notebooks": count, "source": source.name,
            "notebook_bytes": source.stat().st_size,
            "with_sidecars_s": _stats(with_sidecars), "without_sidecars_s": _stats(without)}


def plain_process_seconds() -> float:
    code = textwrap.dedent(f"""
        from benchlib.kinds.classification.config import ClassificationConfig
        from benchlib.measure.environment import capture
        from benchlib.kinds.record import make_record
        from benchlib.kinds.classification import workload as classification
        config = ClassificationConfig(benchmark="train", **{CONFIG!r})
        result = classification.run(config)
        make_record(config, result, capture(result.device))
    """)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return time.perf_counter() - start


def sweep_point_seconds(work: Path, index: int) -> float:
    from benchlib.execute.sweep import run_sweep
    from benchlib.inputs.params import load_sweep

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
    from benchlib.kinds.classification import workload as classification
    from benchlib.kinds.classification.config import ClassificationConfig

    config = {**CONFIG, "iterations": 40}
    classification.run(ClassificationConfig(benchmark="train", **config))  # warm caches
    throughput: dict[bool, list[float]] = dict(zip((True, False), paired(
        *(lambda on=on: classification.run(ClassificationConfig(
            benchmark="train", breakdown=on, **config)).throughput for on in (True, False)),
        repeats), strict=True))
    ratios = [a / b for a, b in zip(throughput[True], throughput[False], strict=True)]
    return {"ratio_on_over_off": _stats(ratios), "on": _stats(throughput[True]),
            "off": _stats(throughput[False])}


def contention_ratio(repeats: int) -> dict:
    """Throughput with the contention sampler on / off (the same run, ABBA pairs), and the
    sampler's own seconds per loop (both /proc snapshots)."""
    import contextlib

    import torch

    from benchlib.kinds.classification import workload as classification
    from benchlib.kinds.classification.config import ClassificationConfig
    from benchlib.measure.contention import ContentionSampler
    from benchlib.workloads import loop

    class Off(contextlib.nullcontext):
        contention = None

        def __enter__(self) -> Off:
            return self

    config = ClassificationConfig(benchmark="train", **{**CONFIG, "iterations": 40})
    classification.run(config)  # warm caches

    def run(on: bool) -> float:
        loop.ContentionSampler = ContentionSampler if on else (lambda device: Off())
        try:
            return classification.run(config).throughput
        finally:
            loop.ContentionSampler = ContentionSampler

    on, off = paired(lambda: run(True), lambda: run(False), repeats)
    cost = []
    for _ in range(max(repeats, 20)):
        start = time.perf_counter()
        with ContentionSampler(torch.device("cpu")):
            pass
        cost.append(time.perf_counter() - start)
    return {"ratio_on_over_off": _stats([a / b for a, b in zip(on, off, strict=True)]),
            "on": _stats(on), "off": _stats(off), "sampler_seconds_per_loop": _stats(cost)}


UNET = {"depth": 2, "pooling": [1, 2, 2], "base_features": 8, "growth": 2, "device": "cpu",
        "block_shape": [15, 40, 40], "batch_size": 1, "num_workers": 1, "warmup": 1}
UNET_VOLUME = (60, 120, 120)


def unet3d_blockwise_ratio(repeats: int, work: Path) -> dict:
    from benchlib.kinds.unet3d import workload as unet3d
    from benchlib.kinds.unet3d.config import UNet3DPredictConfig
    from benchlib.kinds.unet3d.data_writer import write_em_volume

    volume = work / "em.h5"
    write_em_volume(volume, UNET_VOLUME, progress=False)
    config = UNet3DPredictConfig(volume=str(volume), output=str(work / "pred.h5"), **UNET)
    run = unet3d.predict(config)  # warm caches
    blocks = run.extras["blocks"]
    busy: dict[str, float] = {}

    def blockwise_pass() -> float:
        result = unet3d.predict(config)
        busy.update(read=result.extras["read_busy_s"], write=result.extras["write_busy_s"])
        return result.extras["blocks"] / result.wall_time_s

    def plain_pass() -> float:
        result = unet3d.plain_forward(config, blocks)
        return result.extras["blocks"] / result.wall_time_s

    blockwise, plain = paired(blockwise_pass, plain_pass, repeats)
    ratios = [a / b for a, b in zip(blockwise, plain, strict=True)]
    return {"config": {**UNET, "volume_shape": list(UNET_VOLUME), "blocks": blocks,
                       "input_block": run.extras["input_block"]},
            "ratio_blockwise_over_plain": _stats(ratios), "blockwise_blocks_per_s": _stats(blockwise),
            "plain_blocks_per_s": _stats(plain),
            "read_busy_s": round(busy["read"], 4), "write_busy_s": round(busy["write"], 4)}


def phase_sums(campaign: Path) -> dict:
    from benchlib.measure.timing import PHASES
    from benchlib.records.results import load

    frame = load(campaign)
    frame = frame[frame["status"] == "ok"]
    phases = [f"time_{p}_s" for p in PHASES]
    ratio = frame[phases].sum(axis=1, min_count=1) / frame["time_iteration_s"]
    table = frame[["benchmark", "dataset", "batch_size"]].assign(phase_sum_over_iteration=ratio)
    return {"runs": table.round(4).to_dict("records"),
            "min": float(ratio.min()), "max": float(ratio.max())}


PARTS = ("train", "breakdown", "contention", "loader", "sweep", "load", "unet3d")


def measure(parts: list[str], repeats: int, campaign: Path) -> dict:
    """Run the chosen measurements; the JSON report."""
    report: dict = {"machine": _machine(), "repeats": repeats, "classification_config": CONFIG}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "train" in parts:
            report["train_loop"] = train_loop_ratio(repeats)
        if "breakdown" in parts:
            report["breakdown_timers"] = breakdown_ratio(repeats)
        if "contention" in parts:
            report["contention_sampler"] = contention_ratio(repeats)
        if "loader" in parts:
            report["loader"] = loader_ratio(repeats, work)
        if "sweep" in parts:
            points = iter(range(repeats))
            plain, swept = paired(plain_process_seconds,
                                  lambda: sweep_point_seconds(work, next(points)), repeats)
            report["sweep"] = {
                "plain_process_s": _stats(plain), "sweep_point_s": _stats(swept),
                "overhead_per_point_s": _stats([s - p for s, p in zip(swept, plain,
                                                                        strict=True)])}
        if "load" in parts:
            report["load_notebooks"] = load_seconds(repeats, work, campaign)
        if "unet3d" in parts:
            report["unet3d_blockwise"] = unet3d_blockwise_ratio(max(repeats, 9), work)
    if campaign.is_dir():
        report["phase_sum_over_iteration"] = phase_sums(campaign)
    return report


def _machine() -> dict:
    import os
    import platform

    import torch

    return {"cpu": platform.processor() or platform.machine(),
            "cores": len(os.sched_getaffinity(0)), "python": platform.python_version(),
            "torch": torch.__version__, "cuda": torch.cuda.is_available()}


def table(report: dict) -> list[tuple[str, dict, str, bool | None]]:
    """(figure, stats, goal, met) rows of the report."""
    rows = []

    def add(name: str, stats: dict, goal: str, met: bool) -> None:
        rows.append((name, stats, goal, met))

    if "train_loop" in report:
        r = report["train_loop"]["ratio_benchlib_over_bare"]
        add("train loop: benchlib / bare PyTorch (throughput)", r, ">= 0.99", r["median"] >= 0.99)
    if "breakdown_timers" in report:
        r = report["breakdown_timers"]["ratio_on_over_off"]
        add("breakdown timers on / off (throughput)", r, ">= 0.99", r["median"] >= 0.99)
    if "contention_sampler" in report:
        r = report["contention_sampler"]["ratio_on_over_off"]
        add("contention sampler on / off (throughput)", r, ">= 0.99", r["median"] >= 0.99)
        r = report["contention_sampler"]["sampler_seconds_per_loop"]
        add("contention sampler: seconds per timed loop", r, "<= 0.05", r["median"] <= 0.05)
    for key, value in report.get("loader", {}).items():
        if key.startswith("workers_"):
            r = value["ratio_per_worker"]
            add(f"loader / bare PIL loop, per worker ({key.split('_')[1]} workers)", r, ">= 0.95",
                r["median"] >= 0.95)
    if "sweep" in report:
        r = report["sweep"]["overhead_per_point_s"]
        add("sweep overhead per point (s)", r, "<= 3 s", r["median"] <= 3)
    if "load_notebooks" in report:
        r = report["load_notebooks"]["with_sidecars_s"]
        add("load 10,000 executed notebooks, sidecars (s)", r, "<= 10 s", r["median"] <= 10)
        r = report["load_notebooks"]["without_sidecars_s"]
        add("load 10,000 executed notebooks, no sidecars (s)", r, "<= 10 s", r["median"] <= 10)
    if "unet3d_blockwise" in report:
        r = report["unet3d_blockwise"]["ratio_blockwise_over_plain"]
        add("U-Net blockwise / plain forward (blocks/s)", r, ">= 0.9", r["median"] >= 0.9)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--campaign", default=str(ROOT / "outputs" / "demo"),
                        help="an executed campaign (make demo): source of the 10k-notebook "
                             "load test and of the phase sums")
    parser.add_argument("--json", default=str(ROOT / "outputs" / "harness.json"))
    parser.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS))
    args = parser.parse_args()
    report = measure(args.only, args.repeats, Path(args.campaign))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1))
    print(f"{'figure':58} {'median':>9} {'spread':>7} {'runs':>4}  {'goal':8} met")
    for name, stats, goal, met in table(report):
        print(f"{name:58} {stats['median']:9.3f} {stats['spread']:7.3f} {stats['runs']:4d}  "
              f"{goal:8} {'yes' if met else 'NO'}")
    if "phase_sum_over_iteration" in report:
        p = report["phase_sum_over_iteration"]
        print(f"phase sum / iteration on {args.campaign}: {p['min']:.3f} .. {p['max']:.3f}")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
