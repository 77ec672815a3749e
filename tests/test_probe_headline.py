"""The node probe's headline figure and the MFU flag agree with what the node page shows."""

from __future__ import annotations

import pandas as pd

from benchlib.analysis.verdict import judge, verdicts
from benchlib.kinds.probes.config import NodeProbeConfig
from benchlib.kinds.probes.kind import NodeProbe
from benchlib.kinds.probes.workload import NodeProbeResult
from benchlib.publish.pages import verdict_tables
from benchlib.records import flags

PROBE = {"status": "ok", "benchmark": "probe_node", "cluster": "c", "host": "n1", "gpu": "cpu",
         "device": "cpu", "matmul_tflops_fp32": 0.02, "mamf_tflops_fp32": 0.1}
RUN = {"status": "ok", "benchmark": "train", "cluster": "c", "host": "n1", "gpu": "cpu",
       "model": "resnet18", "dataset": "synthetic", "batch_size": 8, "precision": "fp32",
       "num_workers": 0, "num_devices": 1, "num_nodes": 1, "unit": "images/s",
       "throughput": 10.0, "time_iteration_s": 0.8, "time_data_s": 0.0, "flags": "noisy"}


def test_probe_headline_is_the_best_matmul_it_measured_sweep_included() -> None:
    import torch

    config = NodeProbeConfig(device="cpu", precisions=["fp32", "bf16"], matmul_size=64)
    table = pd.DataFrame([
        {"probe": "matmul", "setting": "fp32", "value": 0.017, "unit": "TFLOP/s", "note": ""},
        {"probe": "matmul achievable", "setting": "fp32", "value": 0.18, "unit": "TFLOP/s",
         "note": ""},
        {"probe": "matmul", "setting": "bf16", "value": 0.034, "unit": "TFLOP/s", "note": ""},
        {"probe": "matmul achievable", "setting": "bf16", "value": 0.04, "unit": "TFLOP/s",
         "note": ""}])
    result = NodeProbeResult(device=torch.device("cpu"), table=table,
                             decode=pd.DataFrame(columns=["workers", "images_per_s"]))
    record = NodeProbe().record_fields(config, result)
    # the node page shows 180 GFLOP/s achieved: the "matmul peak" may not say 34
    assert record["throughput"] == 0.18 and record["unit"] == "TFLOP/s (matmul peak)"


def test_mfu_above_what_the_probe_reached_is_flagged() -> None:
    over = judge(pd.Series({**RUN, "achieved_tflops": 0.15}), pd.Series(PROBE))
    assert over["mfu_achievable"] > 1
    assert flags.of(over["flags"]) == ["noisy", "mfu_over_100"]
    assert "probe" in flags.explain(pd.DataFrame([{"flags": over["flags"]}]))[-1]
    under = judge(pd.Series({**RUN, "achieved_tflops": 0.05}), pd.Series(PROBE))
    assert flags.of(under["flags"]) == ["noisy"]
    judged = verdicts(pd.DataFrame([PROBE, {**RUN, "achieved_tflops": 0.15}]))
    assert judged["flags"].tolist() == ["noisy,mfu_over_100"]
    assert "flags" in verdict_tables.verdict_display(judged)._repr_html_()


def test_mamf_note_says_how_many_calls_the_budget_left() -> None:
    import torch

    from benchlib.kinds.probes import workload_achievable as achievable

    cut = achievable.achievable_matmul(torch.device("cpu"), torch.float32, 128, 128, 50, 0, 0.0)
    assert cut.tried == 1 and cut.calls == 1
    assert cut.calls_text(50) == ("each the mean of up to 50 calls (as few as 1: probe_time_s "
                                  "ran out)")
    full = achievable.achievable_matmul(torch.device("cpu"), torch.float32, 64, 64, 3, 0, 30.0)
    assert full.calls == 3 and full.calls_text(3) == "each the mean of 3 calls"
    triad = achievable.triad_gbps(torch.device("cpu"), 12 << 10, 4, 0, 0.0)
    assert triad.tried == triad.calls == 1  # one call timed, not the 4 asked for


def test_memory_bytes_too_small_to_measure_memory_is_refused() -> None:
    import pytest
    from pydantic import ValidationError

    for tiny in (1, 11, 4096):  # 1 byte copied nothing and the probe said 0 GB/s
        with pytest.raises(ValidationError, match="memory_bytes"):
            NodeProbeConfig(device="cpu", memory_bytes=tiny)
    assert NodeProbeConfig(device="cpu", memory_bytes=1 << 20).memory_bytes == 1 << 20


def test_verdict_labels_tell_apart_runs_of_one_dataset() -> None:
    runs = [{**RUN, "achieved_tflops": 0.01, "synthetic_kind": "device", "num_workers": 0},
            {**RUN, "achieved_tflops": 0.01, "synthetic_kind": "loader", "num_workers": 1},
            {**RUN, "achieved_tflops": 0.01, "dataset": "real", "data_source": "memory",
             "synthetic_kind": "", "num_workers": 1},
            {**RUN, "achieved_tflops": 0.01, "dataset": "real", "data_source": "disk",
             "synthetic_kind": "", "num_workers": 2}]
    judged = verdicts(pd.DataFrame([PROBE, *runs]))
    labels = verdict_tables.run_labels(judged).tolist()
    # a diagnose ladder's rungs were all "synthetic" or "real": four runs, two labels
    assert len(set(labels)) == 4, labels


def test_a_probe_s_empty_precision_is_not_named_as_the_one_precision() -> None:
    from benchlib.publish.pages.summary import missing

    said = missing(pd.DataFrame([{**PROBE, "precision": "", "batch_size": None}]))
    assert not any("()" in line for line in said), said  # was "One precision only ()"
    both = missing(pd.DataFrame([{**PROBE, "precision": ""}, RUN]))
    assert "One precision only (fp32): no comparison across precisions." in both


def test_the_ceilings_say_which_matmul_is_one_shape_and_which_the_sweep() -> None:
    from benchlib.analysis.verdict import ceilings

    figures = ceilings(pd.DataFrame([PROBE]))["figure"].tolist()
    assert figures[:2] == ["matmul fp32 (one square shape)",
                           "achievable matmul fp32 (best of a sweep of shapes)"]


def test_nodes_are_compared_only_with_nodes_of_the_same_device_model() -> None:
    from benchlib.analysis.verdict import nodes_compared

    sxm = {**PROBE, "gpu": "H100", "device": "cuda", "device_name": "NVIDIA H100 80GB HBM3",
           "mamf_tflops_bf16": 800.0}
    nodes = pd.DataFrame([{**sxm, "host": "s1"}, {**sxm, "host": "s2", "mamf_tflops_bf16": 760.0},
                          {**sxm, "host": "p1", "device_name": "NVIDIA H100 PCIe",
                           "mamf_tflops_bf16": 500.0},
                          {**PROBE, "host": "c1", "device_name": "AMD EPYC 7763"},
                          {**PROBE, "host": "c2", "device_name": "Intel Xeon Gold 6148",
                           "mamf_tflops_fp32": 0.05}])
    found = nodes_compared(nodes)
    bf16 = found[found["figure"].str.contains("bf16")].set_index("host")
    assert bf16.loc["s2", "of_median"] == 760 / 780 and bf16.loc["s1", "nodes"] == 2
    assert pd.isna(bf16.loc["p1", "of_median"])  # a PCIe card is not a slow SXM one
    fp32 = found[found["figure"].str.contains("fp32")].set_index("host")
    assert fp32.loc[["c1", "c2"], "of_median"].isna().all()  # two CPU models: no peers, not 'half its peers'
