"""How `benchlib index` scales: N synthetic sidecar records (the columns a real classification
run writes: configuration, timings, telemetry, environment), indexed into a fresh SQLite
catalog, then indexed again unchanged; wall time and the indexing process's peak resident
memory (``ru_maxrss`` of the ``benchlib index`` subprocess) for each; then reading back with
``benchlib.load(db=...)`` (everything, and one node's runs of one model) beside
``benchlib.load(folder)``.

    python benchmarks/catalog_scale.py --records 20000
    python benchmarks/catalog_scale.py --records 100000 --folder /tmp/catalog-scale

Records are spread over campaigns of 500 (``outputs/night-<k>/``), one node each night.
Prints one line per step and the machine's load average (other work on the machine slows it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import benchlib

ROOT = Path(__file__).resolve().parent.parent
PER_CAMPAIGN = 500
PHASES = ("data", "h2d", "forward", "backward", "optimizer")


def record(index: int, rng: random.Random) -> dict:
    """One realistic ok record of a nightly acceptance run (schema 2)."""
    night, node = divmod(index, PER_CAMPAIGN)
    iteration = rng.uniform(0.05, 0.2)
    started = 1_790_000_000 + night * 86400 + node * 60
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(started))
    end = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(started + 30))
    out = {
        "schema_version": 2, "run_id": f"{index:032x}", "started_at": stamp, "ended_at": end,
        "campaign": f"night-{night}", "cluster": "jade2", "host": f"node{node:03d}",
        "gpu": "V100", "device_name": "Tesla V100-SXM2-32GB", "num_devices": 1, "num_nodes": 1,
        "benchmark": "train", "model": rng.choice(["resnet50", "resnet18", "vit_b_16"]),
        "dataset": "synthetic", "batch_size": rng.choice([32, 64, 128]),
        "precision": "amp_fp16", "num_workers": 8, "channels_last": True, "compile": "none",
        "throughput": 64 / iteration, "unit": "images/s", "time_iteration_s": iteration,
        "iterations": 50, "warmup": 5, "samples": 3200, "wall_time_s": 50 * iteration,
        "peak_memory_bytes": rng.randrange(2**30, 2**34), "status": "ok", "flags": "",
        "error": "", "scaling": "weak", "synthetic_kind": "device", "data_path": "",
        "image_size": 224, "breakdown": True, "device_batch_size": 64,
        "global_batch_size": 64, "device": "cuda", "seed": 0, "point_id": f"p{index:08x}",
        "notebook": "benchmark_classification", "repeat": 0, "sweep_order": node,
        "telemetry": "nvml", "telemetry_samples": 300, "energy_source": "counter",
        "contended": False, "noisy": False, "spread_iteration": 0.02,
        "throughput_low": 63 / iteration, "throughput_high": 65 / iteration,
        "gpu_util_mean": 0.97, "power_mean_w": 280.0, "power_max_w": 300.0,
        "sm_clock_mean_mhz": 1530.0, "temperature_max_c": 71.0, "energy_j": 8400.0,
        "joules_per_sample": 2.6, "samples_per_joule": 0.38, "throttled_share": 0.0,
        "flops_per_sample": 1.2e10, "achieved_tflops": 80.0,
        "env_benchlib": "0.1.0", "env_git_commit": "83f0dc3abcde", "env_python": "3.11.7",
        "env_torch": "2.14.1", "env_torchvision": "0.29.1", "env_cuda": "12.8",
        "env_cudnn": "91000", "env_nccl": "2.27.3", "env_driver": "580.65.06",
        "env_gpu_count": 4, "env_gpu_memory_bytes": 34089730048, "env_cpu": "Xeon Gold 6148",
        "env_cpu_count": 40, "env_cpus_allowed": 10, "env_memory_bytes": 404000000000,
        "env_gpu_names": "; ".join(["Tesla V100-SXM2-32GB"] * 4), "env_numa_nodes": 2,
        "env_os": "Linux-5.14-x86_64", "env_host": f"node{node:03d}", "env_container": "",
        "env_data_fs": "", "env_torch_threads": 10, "env_slurm_job_id": str(900000 + index),
        "env_slurm_job_nodelist": f"node{node:03d}", "env_slurm_cluster_name": "jade2",
        "env_var_omp_num_threads": "10", "env_var_nccl_debug": "WARN",
    }
    for phase in PHASES:
        out[f"time_{phase}_s"] = iteration / len(PHASES)
        out[f"time_{phase}_p95_s"] = iteration / len(PHASES) * 1.1
    return out


def write(folder: Path, count: int) -> float:
    """``count`` lone sidecars under ``folder/outputs``; seconds taken."""
    started, rng = time.perf_counter(), random.Random(20261126)
    for index in range(count):
        campaign = folder / "outputs" / f"night-{index // PER_CAMPAIGN}"
        if index % PER_CAMPAIGN == 0:
            campaign.mkdir(parents=True, exist_ok=True)
        (campaign / f"train-{index:07d}.json").write_text(json.dumps(record(index, rng)))
    return time.perf_counter() - started


#: ``benchlib index`` run in a process that then prints its own peak resident set (KiB).
MEASURED = ("import resource, sys; from benchlib.cli import main; code = main(sys.argv[1:]); "
            "print('peak_kib', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss); "
            "sys.exit(code)")


def index(folder: Path, db: Path) -> tuple[float, float, str]:
    """``benchlib index`` in a subprocess: seconds, its peak resident MiB, its summary line."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURED, "index", str(folder / "outputs"),
                           "--db", str(db)], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    seconds = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    peak = int(lines[-1].split()[1]) / 1024
    summary = next(line for line in lines if line.startswith("catalog "))
    return seconds, peak, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--folder", type=Path, help="where to write them (default: a "
                        "temporary folder, removed afterwards)")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="catalog-scale-"))
    try:
        seconds = write(folder, args.records)
        print(f"wrote {args.records} sidecars in {seconds:.1f} s under {folder / 'outputs'}")
        db = folder / "catalog.sqlite"
        db.unlink(missing_ok=True)
        for step in ("index (fresh catalog)", "index again (unchanged)"):
            seconds, peak, line = index(folder, db)
            print(f"{step}: {seconds:.1f} s, peak RSS {peak:.0f} MiB; {line}")
        for what, where in (("every record", {}),
                            ("one node's runs of one model", {"host": "node007",
                                                              "model": "resnet50"})):
            started = time.perf_counter()
            frame = benchlib.load(db=str(db), where=where)
            print(f"benchlib.load(db=..., where={where}): {len(frame)} rows in "
                  f"{time.perf_counter() - started:.2f} s ({what})")
        started = time.perf_counter()
        frame = benchlib.load(folder / "outputs")
        print(f"benchlib.load(folder): {len(frame)} rows in {time.perf_counter() - started:.2f} s")
        print(f"catalog size {db.stat().st_size / 2**20:.0f} MiB; load average "
              f"{Path('/proc/loadavg').read_text().split()[:3]}")
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
