"""A report of more than report.run_pages.POOL_THRESHOLD runs (its run pages exported by a
process pool while the summaries run in threads) finishes beside a busy process: the pool is
spawned, never forked from the threaded builder (a fork could inherit an import lock a summary
thread holds and hang; the second test checks the start method itself, which no single build
can show)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.report.run_pages import POOL_THRESHOLD

from .fakes import write_record_notebook
from .walk import benchlib

pytestmark = [pytest.mark.xdist_group("report-many")]



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


@pytest.mark.slow
def test_a_report_of_many_runs_finishes_beside_a_busy_process(tmp_path: Path):
    runs = POOL_THRESHOLD + 4
    campaign = _campaign(tmp_path / "outputs" / "many", runs)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        try:
            done = benchlib(tmp_path, "report", "outputs/many", timeout=420)
        except subprocess.TimeoutExpired:
            pytest.fail("the report did not finish in 420 s (a hang)")
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(list((campaign / "report" / "runs").glob("*.html"))) == runs
    finally:
        busy.kill()
        busy.wait()


def test_the_run_pages_pool_is_spawned_never_forked(tmp_path: Path, monkeypatch):
    import concurrent.futures

    from benchlib.report import run_pages

    started = []

    class Recorder:
        def __init__(self, workers: int, mp_context: object) -> None:
            started.append(mp_context.get_start_method())  # type: ignore[attr-defined]
            raise RuntimeError("recorded")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Recorder)
    monkeypatch.setattr(run_pages.os, "cpu_count", lambda: 2)
    campaign = _campaign(tmp_path / "many", POOL_THRESHOLD + 1)
    building = tmp_path / "building"
    (building / "runs").mkdir(parents=True)
    with pytest.raises(RuntimeError, match="recorded"):
        run_pages.export_runs(campaign, building, sorted(campaign.glob("*.ipynb")),
                              steps=type("Steps", (), {"update": lambda self: None})())
    assert started == ["spawn"]
