"""A report of more than report.run_pages.POOL_THRESHOLD runs (its run pages exported by a
process pool while the summaries run in threads) finishes every time, beside busy processes:
the pool is spawned, never forked from the threaded builder."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.publish.report.run_pages import POOL_THRESHOLD

from .fakes import write_record_notebook
from .walk import benchlib

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("report-many")]

BUILDS = 3


def _campaign(root: Path, runs: int) -> Path:
    base = {"schema_version": 1, "campaign": "many", "cluster": "c1", "gpu": "H100",
            "benchmark": "train", "model": "resnet50", "precision": "amp_bf16", "num_nodes": 1,
            "num_workers": 8, "unit": "images/s", "status": "ok", "error": "", "dataset": "synthetic"}
    for index in range(runs):
        devices, batch = 2 ** (index % 4), 32 * (1 + index // 4)
        throughput = 2500.0 * devices * 0.95 ** devices
        write_record_notebook(root / f"train-{index:02d}.ipynb",
                              {**base, "num_devices": devices, "batch_size": batch,
                               "throughput": throughput, "time_iteration_s": batch / throughput})
    return root


def test_a_report_of_many_runs_finishes_every_time_beside_busy_processes(tmp_path: Path):
    runs = POOL_THRESHOLD + 12
    campaign = _campaign(tmp_path / "outputs" / "many", runs)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for build in range(BUILDS):
            shutil.rmtree(campaign / "report", ignore_errors=True)  # cold: every page exported
            try:
                done = benchlib(tmp_path, "report", "outputs/many", timeout=420)
            except subprocess.TimeoutExpired:
                pytest.fail(f"build {build + 1} of {BUILDS} did not finish in 420 s (a hang)")
            assert done.returncode == 0, done.stderr[-3000:]
            assert len(list((campaign / "report" / "runs").glob("*.html"))) == runs
    finally:
        for process in busy:
            process.kill()
            process.wait()
