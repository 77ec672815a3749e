"""The node probe is measured as a run is (issue 54, item 1): its record carries the contention
check's columns and flags, a disturbed probe's ceiling is no MFU denominator (the node page, the
index and the verdict say what the node reaches is unknown), and history leaves it out."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from IPython.display import Markdown

from benchlib.analysis.verdict import judge, verdicts
from benchlib.history import series as node_history
from benchlib.kinds.probes.config import NodeProbeConfig
from benchlib.kinds.probes.workload import NodeProbeResult
from benchlib.kinds.record import make_record
from benchlib.measure.contention import Contention
from benchlib.publish.pages import node
from benchlib.records import flags
from benchlib.report import index_page

from .fakes import write_record_notebook
from .walk import checked

PROBE = {"schema_version": 1, "status": "ok", "campaign": "probe", "benchmark": "probe_node",
         "model": "node", "cluster": "c", "host": "n1", "gpu": "cpu", "device": "cpu",
         "unit": "TFLOP/s (matmul peak)", "throughput": 0.147, "matmul_tflops_fp32": 0.0225,
         "mamf_tflops_fp32": 0.147, "started_at": "2026-09-01T02:00:00Z"}
RUN = {"schema_version": 1, "status": "ok", "campaign": "probe", "benchmark": "train",
       "cluster": "c", "host": "n1", "gpu": "cpu", "model": "resnet18", "dataset": "synthetic",
       "batch_size": 8, "precision": "fp32", "num_workers": 0, "num_devices": 1, "num_nodes": 1,
       "unit": "images/s", "throughput": 10.0, "time_iteration_s": 0.8, "time_data_s": 0.0,
       "achieved_tflops": 0.091, "flags": "", "started_at": "2026-09-01T03:00:00Z"}
BUSY = Contention(cpu_share=0.42, swap_pages=0, gpu_processes=None, gpu_util_before=None,
                  threads_per_process=2)


@pytest.fixture
def shown(monkeypatch):
    import IPython.display

    seen: list = []
    monkeypatch.setattr(IPython.display, "display", lambda *values, **_: seen.extend(values))
    return seen


def test_the_probe_s_record_holds_the_contention_check_and_its_flag() -> None:
    from benchlib.run import launch

    config = NodeProbeConfig(device="cpu", precisions=["fp32"], matmul_size=64,
                             memory_bytes=1 << 20, iterations=2, warmup=1, probe_time_s=1)
    result = launch.run(config)
    record = make_record(config, result)
    # measured as every timed loop is: the record says what else used the node meanwhile
    assert isinstance(record["contended"], bool)
    share = record["contention_cpu_share"]  # None only where no clock tick passed
    assert share is None or isinstance(share, float)
    assert record["telemetry"].startswith("unavailable")  # a CPU: no NVML, and it says so
    result.contention = BUSY  # the same probe beside a busy process
    busy = make_record(config, result)
    assert busy["contended"] is True and busy["contention_cpu_share"] == 0.42
    assert flags.of(busy) == ["contended"]


def test_a_disturbed_probe_s_ceiling_divides_nothing() -> None:
    clean = judge(pd.Series(RUN), pd.Series(PROBE))
    assert clean["mfu_achievable"] == pytest.approx(0.091 / 0.147)
    busy = judge(pd.Series(RUN), pd.Series({**PROBE, "flags": "contended"}))
    assert busy["mfu_achievable"] is None and busy["achievable_tflops"] is None
    assert busy["verdict"] == "compute-bound"
    assert "of what this node reaches unknown: the node probe was contended" in busy["reason"]
    assert busy["reason"].startswith("MFU of what this node reaches unknown")
    assert "61.9" not in busy["reason"]
    throttled = judge(pd.Series(RUN), pd.Series({**PROBE, "flags": "throttled,noisy"}))
    assert "the node probe was throttled; probe again" in throttled["reason"]


def test_the_node_page_and_the_index_say_the_ceiling_is_unknown(tmp_path: Path,
                                                                 shown: list) -> None:
    folder = tmp_path / "outputs" / "probe"
    write_record_notebook(folder / "probe.ipynb", {**PROBE, "flags": "contended",
                                                   "contended": True,
                                                   "contention_cpu_share": 0.42})
    write_record_notebook(folder / "train.ipynb", RUN)
    from benchlib.publish.pages.summary import load_results

    df = load_results(folder)
    node.verdicts(df)
    said = "\n".join(v.data for v in shown if isinstance(v, Markdown))
    assert "unknown: the node probe was contended" in said
    html = "\n".join(v._repr_html_() for v in shown if hasattr(v, "_repr_html_"))
    assert "61.9" not in html and "61.9" not in said
    shown.clear()
    node.ceilings(df)
    assert "contended" in "\n".join(v._repr_html_() for v in shown if hasattr(v, "_repr_html_"))
    lines = " ".join(str(line) for line in index_page.bottlenecks(df))
    assert "MFU of what the node reaches unknown: the node probe was contended" in lines
    assert "no FLOPs peak" not in lines
    # results shows the probe flagged, as a user lists it
    listed = checked(tmp_path, "results", "outputs/probe")
    assert "contended" in listed


def _probe_record(contention: Contention | None, night: int) -> dict:
    """A node probe's record as the probe notebook makes it, begun on ``night``."""
    import torch

    config = NodeProbeConfig(device="cpu", precisions=["fp32"])
    table = pd.DataFrame([{"probe": "matmul", "setting": "fp32", "value": 0.02, "unit": "TFLOP/s",
                           "note": ""}])
    result = NodeProbeResult(device=torch.device("cpu"), table=table,
                             decode=pd.DataFrame(columns=["workers", "images_per_s"]),
                             contention=contention)
    result.run_id, result.started_at, result.ended_at = f"r{night}", 1.79e9 + night * 86400, \
        1.79e9 + night * 86400 + 60
    return {**make_record(config, result, env={}), "host": "n1", "cluster": "c"}


def test_history_leaves_a_disturbed_probe_out() -> None:
    probes = pd.DataFrame([_probe_record(BUSY if night % 2 else None, night)
                           for night in (1, 2, 3, 4)])
    runs = node_history.series(probes)
    assert runs["disturbed"].tolist() == [True, False, True, False]
    assert verdicts(probes).empty  # a probe gets no bottleneck verdict of its own
