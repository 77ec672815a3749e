"""Executed-notebook look-alikes with records, to test loading, summaries and reports fast."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from benchlib.records.store import RECORD_MIME


def write_record_notebook(path: Path, record: dict | None = None, benchmark: bool = True,
                          error: str | None = None, parameters: dict | None = None) -> Path:
    """A notebook holding ``record`` as the benchlib MIME output (or a papermill error)."""
    cell = new_code_cell("publish(record)")
    if record is not None:
        cell.outputs = [new_output("display_data", data={RECORD_MIME: record, "text/plain": "r"})]
    if error:
        cell.outputs = [new_output("error", ename="RuntimeError", evalue=error, traceback=[])]
    nb = new_notebook(cells=[cell])
    if benchmark:
        nb.metadata["benchlib"] = {"kind": "benchmark"}
    if error:
        nb.metadata["papermill"] = {"exception": True, "parameters": parameters or {}}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def campaign(root: Path) -> Path:
    """A small scaling campaign: 1/2/4 devices x synthetic/real x batch 32/64, one failed run."""
    base = {"schema_version": 1, "campaign": "fake", "cluster": "c1", "gpu": "H100",
            "benchmark": "train", "model": "resnet50", "precision": "amp_bf16", "num_nodes": 1,
            "num_workers": 8, "unit": "images/s", "status": "ok", "error": ""}
    index = 0
    for devices in (1, 2, 4):
        for dataset, data_factor in (("synthetic", 1.0), ("real", 0.7)):
            for batch, batch_factor in ((32, 1.0), (64, 1.1)):
                throughput = 2500 * devices * (0.95 ** (devices - 1)) * data_factor * batch_factor
                iteration = batch * devices / throughput
                record = {**base, "num_devices": devices, "dataset": dataset, "batch_size": batch,
                          "throughput": throughput, "time_iteration_s": iteration,
                          "time_data_s": iteration * (0.3 if dataset == "real" else 0.01),
                          "time_forward_s": iteration * 0.3, "time_backward_s": iteration * 0.6}
                write_record_notebook(root / f"train-{index}.ipynb", record)
                index += 1
    write_record_notebook(root / "train-oom.ipynb", error="CUDA out of memory",
                          parameters={"batch_size": 1024, "model": "resnet50"})
    return root


#: Fits :func:`campaign`: its 1-device batch-32 runs (synthetic 2,500 images/s passes,
#: real 1,750 fails).
REFERENCES = """references:
  - name: H100 ResNet-50 bf16, 1 device, batch 32
    match: {gpu: H100, benchmark: train, model: resnet50, num_devices: 1, batch_size: 32}
    metric: throughput
    value: 2500
    lower: -0.10
    upper: null
    unit: images/s
    source: a test figure from a healthy node
"""


def references_file(folder: Path) -> Path:
    path = folder / "refs.yaml"
    path.write_text(REFERENCES)
    return path


def slower_copy(source: Path, target: Path, factor: float) -> Path:
    """``source`` with every throughput times ``factor``."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("report", ".report*"))
    for path in target.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        for output in nb.cells[0].get("outputs", []):
            record = output.get("data", {}).get(RECORD_MIME)
            if record and record.get("throughput"):
                record["throughput"] *= factor
        nbformat.write(nb, str(path))
    return target


def build_reports_at_once(root: Path, count: int = 2) -> list[Path]:
    """Build ``count`` reports of the campaign ``root`` (no summary pages) in threads at once;
    the index paths they return, or the first error any raised."""
    import threading

    from benchlib.report.build import build_report

    results, errors = [], []

    def build() -> None:
        try:
            results.append(build_report(root, summaries=(), progress=False))
        except BaseException as error:  # handed to the test
            errors.append(error)

    threads = [threading.Thread(target=build) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def loop_calls(monkeypatch, warmup: int, iterations: int, barrier: bool = False) -> list[str]:
    """What ``benchlib.workloads.loop.timed_loop`` does, in order: each step ("warm-up" or
    "timed"), the peak-memory reset ("reset") and, with ``barrier``, the ranks' barrier."""
    import torch

    from benchlib.workloads import loop

    calls: list[str] = []
    monkeypatch.setattr(loop, "reset_peak_memory", lambda device: calls.append("reset"))
    if barrier:
        monkeypatch.setattr(loop.distributed, "barrier", lambda: calls.append("barrier"))

    def step(iterator, timer):
        calls.append("warm-up" if isinstance(timer, loop.NoTimer) else "timed")
        timer.start()
        timer.stop()
        return 1

    loop.timed_loop(step, iter(()), torch.device("cpu"), warmup=warmup, iterations=iterations,
                    telemetry_interval_s=0)
    return calls
