"""``python tools/gpu_check.py --judge FOLDER`` (issue 51): the GPU check's assertions computed
from planted records on a CPU machine. Each planted defect (an fp32 run above its fp32 ceiling,
a run without telemetry samples, a counted synchronisation, a GPU missing from the ceiling
table) fails by run and assertion; a campaign where everything holds exits 0; a missing or
empty folder is bad input (2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchlib import SCHEMA_VERSION
from benchlib.reference import datasheet_for, datasheets
from tests.fakes import write_record_notebook
from tests.test_gpu_check import _module

ROOT = Path(__file__).resolve().parent.parent
H100 = "NVIDIA H100 80GB HBM3"  #: H100 SXM5: fp32 67, tf32 494.7, bf16 989.4 TFLOP/s dense


def healthy(**changes: object) -> dict[str, object]:
    """A ResNet-50 training record on one H100 SXM that passes every assertion: bf16 at 10 % of
    the bf16 ceiling, 3 s timed loop with 31 NVML samples, power and energy, no sync."""
    record = {"schema_version": SCHEMA_VERSION, "campaign": "gpu-check", "cluster": "node",
              "host": "node", "gpu": "H100", "device_name": H100, "num_devices": 1,
              "num_nodes": 1, "benchmark": "train", "model": "resnet50", "dataset": "synthetic",
              "batch_size": 128, "precision": "amp_bf16", "num_workers": 0,
              "channels_last": True, "compile": "none", "unit": "images/s",
              "throughput": 4000.0, "wall_time_s": 3.0, "status": "ok", "error": "",
              "flops_per_sample": 24.6e9, "achieved_tflops": 98.4, "telemetry": "nvml",
              "telemetry_samples": 31, "power_mean_w": 650.0, "energy_j": 1950.0,
              "energy_source": "counter", "result_syncs_in_timed_loop": 0}
    return {**record, **changes}


def probe(**changes: object) -> dict[str, object]:
    """A node probe record on the same H100 under every ceiling."""
    record = {**healthy(), "benchmark": "probe_node", "model": "node", "precision": "fp32",
              "unit": "TFLOP/s (matmul peak)", "throughput": 760.0, "achieved_tflops": None,
              "telemetry": None, "telemetry_samples": None, "power_mean_w": None,
              "energy_j": None, "result_syncs_in_timed_loop": None,
              "matmul_tflops_fp32": 51.0, "matmul_tflops_bf16": 760.0,
              "mamf_tflops_bf16": 780.0, "memory_GBps": 2900.0, "triad_GBps": 3000.0}
    return {**record, **changes}


def plant(folder: Path, **records: dict[str, object]) -> Path:
    """A campaign folder of executed-notebook look-alikes, one per named record."""
    for name, record in records.items():
        write_record_notebook(folder / f"{name}.ipynb", {**record, "source": name})
    return folder


def judged(folder: Path) -> subprocess.CompletedProcess:
    """``tools/gpu_check.py --judge folder`` as a user runs it."""
    return subprocess.run([sys.executable, "tools/gpu_check.py", "--judge", str(folder)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def failures(done: subprocess.CompletedProcess) -> list[str]:
    """The failed assertions ``--judge`` listed first (``- run: assertion``)."""
    head = done.stdout.split("\n# benchlib gpu-check")[0]
    return [line[2:] for line in head.splitlines() if line.startswith("- ")]


def test_a_campaign_where_everything_holds_exits_0(tmp_path):
    done = judged(plant(tmp_path / "ok", **{"train-bf16": healthy(), "node": probe(),
                                             "short": healthy(wall_time_s=0.5, telemetry_samples=2)}))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 runs, 0 failed assertions" in done.stdout and failures(done) == []


def test_an_fp32_run_is_judged_against_the_fp32_ceiling_not_the_largest(tmp_path):
    """100 TFLOP/s in fp32 (TF32 off) is 149 % of the H100's 67, far under its bf16 989.4."""
    done = judged(plant(tmp_path / "c", **{"train-fp32": healthy(precision="fp32",
                                                                  achieved_tflops=100.0)}))
    assert done.returncode == 1, done.stdout + done.stderr
    assert failures(done) == [
        "train-fp32: MFU over 100 %: 100.0 TFLOP/s per device is 149% of the H100 SXM5 80GB "
        "fp32 ceiling (67 TFLOP/s dense, benchlib/reference/gpu_datasheets.csv): a timing or "
        "FLOP-count error"]


def test_a_run_without_telemetry_samples_fails_by_name(tmp_path):
    done = judged(plant(tmp_path / "c", **{"train-bf16": healthy(),
                                           "no-samples": healthy(telemetry_samples=0)}))
    assert done.returncode == 1, done.stdout + done.stderr
    assert failures(done) == ["no-samples: telemetry samples: 0 NVML readings over a 3.0 s "
                              "timed loop (at least 5 expected)"]


def test_a_counted_sync_fails_by_name(tmp_path):
    done = judged(plant(tmp_path / "c", **{"synced": healthy(result_syncs_in_timed_loop=3)}))
    assert done.returncode == 1, done.stdout + done.stderr
    assert failures(done) == ["synced: 3 device synchronisations counted in the timed loop "
                              "(0 expected)"]


def test_a_gpu_missing_from_the_ceiling_table_fails_by_name(tmp_path):
    done = judged(plant(tmp_path / "c", **{"unlisted": healthy(gpu="GB200",
                                                               device_name="NVIDIA GB200")}))
    assert done.returncode == 1, done.stdout + done.stderr
    assert failures(done) == ["unlisted: no ceiling row for NVIDIA GB200: add it to "
                              "benchlib/reference/gpu_datasheets.csv"]


@pytest.mark.parametrize("make", [lambda tmp: tmp / "missing", lambda tmp: tmp])
def test_a_missing_or_empty_folder_is_bad_input(tmp_path, make):
    done = judged(make(tmp_path))
    assert done.returncode == 2 and "error:" in done.stderr and failures(done) == []


def problems(record: dict[str, object]) -> list[str]:
    """``run_problems`` of one record, in process."""
    return _module().run_problems(record)[0]


def test_mfu_is_per_device_and_of_the_runs_own_precision():
    gpu_check = _module()
    # 8 devices at 900 TFLOP/s in all: 112.5 each, 23 % of the tf32 ceiling (494.7)
    eight = healthy(precision="tf32", num_devices=8, achieved_tflops=900.0)
    assert gpu_check.run_problems(eight) == ([], pytest.approx(900 / 8 / 494.7))
    assert problems(healthy(precision="tf32", achieved_tflops=500.0))[0].startswith(
        "MFU over 100 %: 500.0 TFLOP/s per device is 101% of the H100 SXM5 80GB tf32 ceiling")
    assert problems(healthy(achieved_tflops=None)) == []  # smooth inference: no TFLOP/s
    v100 = healthy(gpu="V100", device_name="Tesla V100-SXM2-16GB", precision="tf32")
    assert problems(v100) == ["no tf32 ceiling for V100 SXM2 in "
                              "benchlib/reference/gpu_datasheets.csv: its 98.4 TFLOP/s cannot "
                              "be judged"]


def test_telemetry_power_and_energy_over_a_second_and_not_below():
    assert problems(healthy(power_mean_w=0.0, energy_j=None, energy_source="none: read 0 J")) == [
        "telemetry power: mean board power 0.0 W over a 3.0 s timed loop (above 0 expected)",
        "telemetry energy: None J over a 3.0 s timed loop (above 0 expected; energy_source "
        "'none: read 0 J')"]
    short = healthy(wall_time_s=0.8, telemetry_samples=1, power_mean_w=None, energy_j=None)
    assert problems(short) == []
    assert problems(healthy(telemetry="unavailable: no NVML")) == [
        "telemetry 'unavailable: no NVML', not NVML samples"]


def test_the_node_probe_is_capped_by_its_ceilings():
    assert problems(probe()) == []
    found = problems(probe(matmul_tflops_fp32=70.0, triad_GBps=3400.0))
    assert [p.split(" is above")[0] for p in found] == ["matmul_tflops_fp32 70.0 TFLOP/s",
                                                         "triad_GBps 3,400.0 GB/s"]


def test_a_cpu_run_and_a_failed_run_say_why():
    cpu = healthy(gpu="cpu", device_name="AMD EPYC 7763")
    assert problems(cpu)[-1] == "ran on the CPU (AMD EPYC 7763): no GPU ceiling to judge it against"
    assert problems(healthy(status="failed", error="CUDA out of memory")) == [
        "status failed: CUDA out of memory"]


def test_the_ceiling_table_has_every_gpu_people_accept_nodes_of_with_its_source():
    expected = {"NVIDIA A100-SXM4-80GB": ("A100 SXM4 80GB", 19.5, 156, 312, 2039),
                "NVIDIA A100 80GB PCIe": ("A100 PCIe 80GB", 19.5, 156, 312, 1935),
                "NVIDIA H100 80GB HBM3": ("H100 SXM5 80GB", 67, 494.7, 989.4, 3350),
                "NVIDIA H100 PCIe": ("H100 PCIe 80GB", 51, 378, 756, 2000),
                "NVIDIA H200": ("H200 SXM 141GB", 67, 494.7, 989.4, 4800),
                "NVIDIA H200 NVL": ("H200 NVL 141GB", 60, 417.5, 835.5, 4800),
                "NVIDIA L40S": ("L40S", 91.6, 183, 362, 864),
                "NVIDIA B200": ("B200 (HGX B200)", 75, 1100, 2250, 7700)}
    for device, (variant, *figures) in expected.items():
        sheet = datasheet_for(device)
        assert sheet["variant"] == variant
        assert [sheet[c] for c in ("fp32_tflops", "tf32_tflops", "bf16_tflops", "memory_GBps")] \
            == pytest.approx(figures), device
        assert sheet["fp16_tflops"] == sheet["bf16_tflops"]
    assert datasheet_for("NVIDIA GB200") is None
    sources = datasheets()["source"]
    assert sources.map(lambda s: isinstance(s, str) and "NVIDIA" in s).all()
    assert not pd.isna(sources).any()
