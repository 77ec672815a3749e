"""The HTML report at scale: `benchlib report` on a campaign of N runs, cold, rebuilt, and
rebuilt after one new run.

The campaign is made from an executed campaign (``--source``, default ``outputs/demo``: run
``make demo`` first): run i is a hard link (``--copy``: a copy) of one of its notebooks, in turn,
with a sidecar whose record is that notebook's with settings drawn at random (seeded): 16 hosts
on 2 clusters, 3 GPUs, 4 models, batch sizes 16-128 and 1-8 devices, throughput and phase times
scaled to match. So configurations repeat and pair, and the summaries group, pair and plot real
variety, not one configuration N times.

Then ``benchlib report`` runs as a subprocess: cold (no previous report), rebuilt (nothing
changed: every run page and summary page reused) and after one new run (its page exported,
every summary executed again). For each: wall time, CPU seconds of the whole process tree
(user + system of every process it waited for: kernels and pool workers included), and the
peak resident memory of the process tree (RSS of the command and all its descendants summed,
sampled every 0.1 s) with the processes at that moment. Then the size of ``report/`` on disk.

    python benchmarks/report_scale.py --runs 1000
    python benchmarks/report_scale.py --runs 5000 --json outputs/report-scale-5000.json
    python benchmarks/report_scale.py --runs 200 --only cold      # one cold build
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHLIB = str(Path(sys.executable).with_name("benchlib"))
HOSTS = [f"node{i:02d}" for i in range(1, 17)]
GPUS = {"H100": 1.0, "A100": 0.55, "L40S": 0.4}
MODELS = {"resnet18": 2.2, "resnet50": 1.0, "efficientnet_b0": 1.4, "vit_b_16": 0.6}
BATCHES = {16: 0.8, 32: 0.9, 64: 1.0, 128: 1.05}
DEVICES = (1, 2, 4, 8)
SETTINGS = list(itertools.product(MODELS, BATCHES, DEVICES))


@dataclass
class Build:
    """One ``benchlib report`` run."""

    wall_s: float
    cpu_s: float
    peak_rss_bytes: int
    returncode: int
    #: the processes at the peak, (what, MB), largest first
    at_peak: list[tuple[str, int]]


def _templates(source: Path) -> list[tuple[Path, dict]]:
    """The source campaign's notebooks that have a sidecar, with its record."""
    found = []
    for notebook in sorted(source.glob("*.ipynb")):
        sidecar = notebook.with_suffix(".json")
        if sidecar.is_file():
            found.append((notebook, json.loads(sidecar.read_text())))
    if not found:
        sys.exit(f"{source}: no executed notebooks with sidecars (run `make demo` first)")
    return found


def _varied(record: dict, index: int, rng: random.Random) -> dict:
    """``record`` as run ``index`` of the scale campaign: its settings varied, its throughput
    and phase times scaled to match."""
    host, gpu = rng.choice(HOSTS), rng.choice(list(GPUS))
    model, batch, devices = rng.choice(SETTINGS)
    varied = dict(record)
    varied.update(campaign="scale", host=host, env_host=host, cluster=f"c{HOSTS.index(host) // 8}",
                  gpu=gpu, point_id=f"p{index:06d}")
    factor = GPUS[gpu] * rng.lognormvariate(0, 0.05)
    if record.get("benchmark") in ("train", "inference", "smooth_inference"):
        varied.update(model=model, batch_size=batch, device_batch_size=batch,
                      num_devices=devices, global_batch_size=batch * devices)
        factor *= MODELS[model] * BATCHES[batch] * devices * 0.95 ** math.log2(devices)
    for key, value in record.items():
        if not isinstance(value, float) or isinstance(value, bool):
            continue
        if key.startswith("throughput") or key == "achieved_tflops":
            varied[key] = value * factor
        elif key.startswith("time_") and key.endswith("_s"):
            varied[key] = value / factor
    return varied


def make_campaign(source: Path, folder: Path, runs: int, copy: bool) -> None:
    """``runs`` runs in ``folder`` made from ``source``'s notebooks (see the module's text)."""
    templates = _templates(source)
    rng = random.Random(0)
    folder.mkdir(parents=True)
    for index in range(runs):
        add_run(folder, templates, index, rng, copy)


def add_run(folder: Path, templates: list[tuple[Path, dict]], index: int, rng: random.Random,
            copy: bool) -> Path:
    """Run ``index``: the next template's notebook linked (or copied) and its varied sidecar."""
    notebook, record = templates[index % len(templates)]
    stem = f"{record.get('notebook') or notebook.stem.split('-')[0]}-{index:06d}"
    target = folder / f"{stem}.ipynb"
    if copy:
        shutil.copy2(notebook, target)  # keeps the time stamp: the sidecar still matches
    else:
        os.link(notebook, target)
    iterations = notebook.with_suffix("").with_suffix(".iterations.csv")
    if iterations.is_file():
        os.link(iterations, folder / f"{stem}.iterations.csv")
    (folder / f"{stem}.json").write_text(json.dumps(_varied(record, index, rng)))
    return target


def _tree_rss(process: object) -> tuple[int, list[tuple[str, int]]]:
    """The RSS of ``process`` and its descendants summed, and each one's (what, RSS)."""
    import psutil

    each = []
    for member in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # ended between the listing and the reading
            each.append((_what(member.cmdline()), member.memory_info().rss))
    return sum(rss for _, rss in each), each


def _what(cmdline: list[str]) -> str:
    """A process of a report build, in a few words (kernel, pool worker, the command)."""
    text = " ".join(cmdline)
    if "ipykernel" in text:
        return "kernel"
    if "multiprocessing" in text:
        return "pool worker"
    return "benchlib report" if "report" in text else os.path.basename(cmdline[0] if cmdline else "?")


def build(campaign: Path, log: Path) -> Build:
    """``benchlib report campaign``, measured (see the module's text)."""
    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start, peak, at_peak = time.perf_counter(), 0, []
    with log.open("w") as output:
        process = psutil.Popen([BENCHLIB, "report", str(campaign)], stdout=output,
                               stderr=subprocess.STDOUT, cwd=ROOT)
        while process.poll() is None:
            with contextlib.suppress(psutil.Error):
                total, each = _tree_rss(process)
                if total > peak:
                    peak, at_peak = total, each
            time.sleep(0.1)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Build(wall, cpu, peak, process.returncode,
                 sorted(((w, round(rss / 1e6)) for w, rss in at_peak), key=lambda p: -p[1]))


def disk_usage(folder: Path) -> tuple[int, int]:
    """Bytes on disk under ``folder`` (each inode once) and the number of files."""
    seen, used, files = set(), 0, 0
    for path in folder.rglob("*"):
        stat = path.lstat()
        if path.is_file():
            files += 1
        if stat.st_ino not in seen:
            seen.add(stat.st_ino)
            used += stat.st_blocks * 512
    return used, files


def _say(name: str, done: Build) -> str:
    return (f"{name:12s} wall {done.wall_s:7.1f} s   CPU {done.cpu_s:7.1f} s   "
            f"peak RSS (process tree) {done.peak_rss_bytes / 1e9:5.2f} GB"
            + ("" if done.returncode == 0 else f"   FAILED (exit {done.returncode})")
            + "\n             at the peak (MB): "
            + ", ".join(f"{what} {mb}" for what, mb in done.at_peak))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs in the campaign (1000)")
    parser.add_argument("--source", type=Path, default=ROOT / "outputs" / "demo",
                        help="an executed campaign to make the runs from (outputs/demo)")
    parser.add_argument("--folder", type=Path, default=None,
                        help="where the campaign goes (a new temporary folder; removed after)")
    parser.add_argument("--copy", action="store_true", help="copy notebooks (default: hard links)")
    parser.add_argument("--only", choices=("cold", "rebuild", "one new run", "all"),
                        default="all", help="which builds to time (all: the three in turn)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs {args.runs}: give a positive number of runs")
    scratch = None if args.folder else Path(tempfile.mkdtemp(prefix="report-scale-"))
    campaign = (args.folder or scratch) / "scale"
    try:
        if not campaign.is_dir():
            start = time.perf_counter()
            make_campaign(args.source.resolve(), campaign, args.runs, args.copy)
            print(f"campaign: {args.runs} runs in {campaign} "
                  f"(made in {time.perf_counter() - start:.1f} s)", flush=True)
        figures: dict[str, object] = {"runs": args.runs, "cpus": os.cpu_count()}
        names = ("cold", "rebuild", "one new run") if args.only == "all" else (args.only,)
        for name in names:
            if name == "cold":
                shutil.rmtree(campaign / "report", ignore_errors=True)
            if name == "one new run":
                runs = len(list(campaign.glob("*.ipynb")))
                add_run(campaign, _templates(args.source.resolve()), runs, random.Random(runs),
                        args.copy)
            done = build(campaign, campaign.parent / f"{name.replace(' ', '-')}.log")
            figures[name] = asdict(done)
            print(_say(name, done), flush=True)
            if done.returncode:
                log = campaign.parent / f"{name.replace(' ', '-')}.log"
                print(log.read_text()[-3000:], file=sys.stderr)
                sys.exit(1)
        used, files = disk_usage(campaign / "report")
        figures["report_bytes"], figures["report_files"] = used, files
        print(f"report/      {used / 1e9:.2f} GB on disk, {files} files")
        if args.json:
            args.json.write_text(json.dumps(figures, indent=1) + "\n")
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
