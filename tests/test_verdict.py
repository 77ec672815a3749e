"""The node probe, FLOPs per sample, datasheets, ceilings and the verdict per run."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from benchlib.analysis.verdict import (
    ceilings,
    decode_curves,
    judge,
    loader_capacity,
    nodes_compared,
    verdicts,
)
from benchlib.kinds import KINDS
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.classification.kind import flops_per_sample as classification_flops_per_sample
from benchlib.kinds.probes import launch as probe_runs
from benchlib.kinds.probes.config import NodeProbeConfig
from benchlib.kinds.record import make_record
from benchlib.kinds.unet3d.config import UNet3DTrainConfig
from benchlib.records import flags
from benchlib.records.flops import count_flops
from benchlib.reference import datasheet_for, datasheets


def test_flop_counts_match_the_architecture() -> None:
    # resnet50 at 224 px: 4.09 G multiply-adds forward (8.18 GFLOPs); backward twice that
    forward = classification_flops_per_sample(ClassificationConfig(benchmark="inference"))
    train = classification_flops_per_sample(ClassificationConfig(benchmark="train"))
    assert forward == pytest.approx(8.18e9, rel=0.01)
    assert train == pytest.approx(3 * forward, rel=0.01)
    smooth = ClassificationConfig(benchmark="smooth_inference", model="resnet18", noise_samples=10)
    resnet18 = classification_flops_per_sample(smooth.model_copy(update={"benchmark": "inference"}))
    assert classification_flops_per_sample(smooth) == pytest.approx(10 * resnet18)
    # one linear layer: 2 x in x out per sample forward
    import torch

    assert count_flops(lambda: torch.nn.Linear(100, 10, bias=False), (2, 100), False) == 2 * 2 * 100 * 10


def test_unet_flops_are_per_output_voxel() -> None:
    config = UNet3DTrainConfig(dataset="synthetic", depth=1, base_features=2, growth=2,
                               pooling=[1, 2, 2], patch_shape=[13, 28, 28])
    per_voxel = KINDS["unet3d_train"].flops_per_sample(config)
    from benchlib.kinds.unet3d.workload import build_model

    forward = count_flops(lambda: build_model(config), (1, 1, 13, 28, 28), False)
    voxels = math.prod(config.output_shape)
    # a training step is the forward pass plus a backward of about twice that (the first
    # convolution needs no input gradient, so a little less than 3x)
    assert 2.5 * forward / voxels < per_voxel <= 3 * forward / voxels


def test_datasheets_name_the_variant_and_leave_cpus_out() -> None:
    assert datasheet_for("NVIDIA H100 80GB HBM3")["variant"] == "H100 SXM5 80GB"
    assert datasheet_for("NVIDIA H100 PCIe")["memory_GBps"] == 2000
    assert datasheet_for("Tesla V100-SXM2-16GB")["fp16_tflops"] == 125
    assert datasheet_for("AMD EPYC 7763") is None and datasheet_for("") is None
    sheets = datasheets()
    assert sheets["pattern"].is_unique and (sheets["fp32_tflops"] > 0).all()


def test_node_probe_on_the_cpu(image_dir, tmp_path) -> None:
    config = NodeProbeConfig(device="cpu", precisions=["fp32", "tf32", "bf16"], matmul_size=64,
                             memory_bytes=1 << 20, iterations=2, warmup=1, data_dir=str(image_dir),
                             image_size=32, decode_workers=[0, 1], decode_batch_size=4,
                             decode_batches=2)
    from benchlib.run import launch

    result = launch.run(config)
    table = result.table.set_index(["probe", "setting"])
    assert table.loc[("matmul", "fp32"), "value"] > 0
    assert pd.isna(table.loc[("matmul", "tf32"), "value"])  # a CUDA mode: a row that says so
    assert "CUDA" in table.loc[("matmul", "tf32"), "note"]
    assert table.loc[("transfer", "h2d pinned"), "note"].startswith("no device")
    assert list(result.decode["workers"]) == [0, 1] and (result.decode["images_per_s"] > 0).all()
    assert "18 files" in table.loc[("read", "data_dir MB/s"), "note"]
    record = make_record(config, result)
    assert record["benchmark"] == "probe_node" and record["unit"] == "TFLOP/s (matmul peak)"
    assert record["throughput"] == max(record[f"{kind}_tflops_{p}"] for kind in ("matmul", "mamf")
                                       for p in ("fp32", "bf16"))
    assert record["decode_best_workers"] in (0, 1) and record["read_MBps"] > 0
    assert record["matmul_tflops_tf32"] is None and record["h2d_pinned_GBps"] is None
    assert record["env_data_fs"]
    # what the node reaches: the best matmul over a sweep of shapes, the triad, decode alone
    assert record["mamf_tflops_fp32"] > 0 and record["mamf_tflops_tf32"] is None
    assert "shapes (MAMF)" in table.loc[("matmul achievable", "fp32"), "note"]
    assert record["triad_GBps"] > 0 and "triad" in table.loc[("memory", "triad"), "note"]
    assert record["decode_memory_images_per_s"] > 0
    said = table.loc[("decode from memory", f"{record['decode_best_workers']} workers"), "note"]
    assert "read into memory first" in said and "read from data_dir" in table.loc[
        ("decode", "0 workers"), "note"]
    json.dumps(record, default=str)
    assert probe_runs.allreduce_for_node(config, visible_gpus=0) == (None, None)  # skipped


def test_node_probe_config_refuses_what_it_cannot_do(tmp_path) -> None:
    with pytest.raises(ValueError, match="num_devices 2: the node probe runs in one process"):
        NodeProbeConfig(num_devices=2)
    with pytest.raises(ValueError, match=r"data_dir .* is not a directory"):
        NodeProbeConfig(data_dir=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="precisions"):
        NodeProbeConfig(precisions=["fp64"])
    assert NodeProbeConfig().allreduce_count(8) == 8
    assert NodeProbeConfig().allreduce_count(1) == 0
    assert NodeProbeConfig(allreduce_devices=1).allreduce_count(8) == 0
    assert NodeProbeConfig(allreduce_devices=4).allreduce_count(8) == 4


PROBE = {"status": "ok", "benchmark": "probe_node", "cluster": "c", "host": "n1", "gpu": "H100",
         "device": "cuda", "device_name": "NVIDIA H100 80GB HBM3", "matmul_tflops_fp32": 51.0,
         "matmul_tflops_bf16": 700.0, "memory_GBps": 2900.0, "h2d_pinned_GBps": 53.0,
         "decode_images_per_s_4w": 800.0, "decode_images_per_s_8w": 1500.0,
         "decode_images_per_s_16w": 2600.0, "decode_best_images_per_s": 2600.0}
RUN = {"status": "ok", "benchmark": "train", "cluster": "c", "host": "n1", "gpu": "H100",
       "device_name": "NVIDIA H100 80GB HBM3", "model": "resnet50", "dataset": "real",
       "batch_size": 256, "precision": "amp_bf16", "num_workers": 8, "num_devices": 1,
       "num_nodes": 1, "unit": "images/s", "throughput": 1000.0, "time_iteration_s": 0.256,
       "time_data_s": 0.0, "achieved_tflops": 24.3, "throttled_share": 0.0}


def test_ceilings_against_the_datasheet() -> None:
    table = ceilings(pd.DataFrame([PROBE])).set_index("figure")
    assert table.loc["matmul bf16 (one square shape)", "datasheet"] == 989.4
    assert table.loc["matmul bf16 (one square shape)", "of_datasheet"] == pytest.approx(700 / 989.4)
    assert table.loc["device memory (copy)", "of_datasheet"] == pytest.approx(2900 / 3350)
    assert table.loc["host to device (pinned)", "of_datasheet"] == pytest.approx(53 / 63)
    assert pd.isna(table.loc["read + JPEG decode from data_dir (best worker count)", "datasheet"])
    cpu = ceilings(pd.DataFrame([{**PROBE, "device": "cpu", "device_name": "AMD EPYC"}]))
    assert cpu["datasheet"].isna().all()
    curves = decode_curves(pd.DataFrame([PROBE]))
    assert list(curves["workers"]) == [4, 8, 16]
    assert set(curves["configuration"]) == {"c, n1"}
    alone = decode_curves(pd.DataFrame([{**PROBE, "cluster": "vm", "host": "vm"}]))
    assert set(alone["configuration"]) == {"vm"}  # before: "vm, vm"


def test_compute_bound_run_gets_mfu_against_the_datasheet_and_what_the_node_reaches() -> None:
    probe = pd.Series(PROBE)
    verdict = judge(pd.Series(RUN), probe)
    assert verdict["verdict"] == "compute-bound"
    assert verdict["mfu"] == pytest.approx(24.3 / 989.4)
    assert verdict["mfu_achievable"] == pytest.approx(24.3 / 700)  # a probe of one shape only
    assert verdict["achievable_source"] == "probe bf16 matmul, one shape"
    assert verdict["reason"].startswith(
        "MFU 2.5 % of the datasheet bf16 (H100 SXM5 80GB) peak (989 TFLOP/s), 3.5 % of what this node "
        "reaches (probe bf16 matmul, one shape: 700 TFLOP/s)")
    swept = judge(pd.Series(RUN), pd.Series({**PROBE, "mamf_tflops_bf16": 810.0}))
    assert swept["mfu_achievable"] == pytest.approx(24.3 / 810)
    assert "best of a sweep of shapes: 810 TFLOP/s" in swept["reason"]
    no_probe = judge(pd.Series(RUN), None)
    assert no_probe["mfu"] == pytest.approx(24.3 / 989.4) and no_probe["mfu_achievable"] is None
    assert "datasheet bf16 (H100 SXM5 80GB)" in no_probe["reason"]
    assert "reaches" not in no_probe["reason"]
    cpu = judge(pd.Series({**RUN, "gpu": "cpu", "device_name": "AMD EPYC", "precision": "fp32",
                           "achieved_tflops": 0.05}),
                pd.Series({**PROBE, "gpu": "cpu", "mamf_tflops_fp32": 0.1}))
    assert cpu["mfu"] is None and cpu["mfu_achievable"] == pytest.approx(0.5)
    assert cpu["reason"].startswith("MFU 50.0 % of what this node reaches")
    two = judge(pd.Series({**RUN, "num_devices": 2, "throughput": 2000.0, "achieved_tflops": 48.6}))
    assert two["achieved_tflops_per_device"] == pytest.approx(24.3)


def test_a_contended_run_gets_no_bottleneck_verdict_and_a_tiny_mfu_says_how_small() -> None:
    contended = judge(pd.Series({**RUN, "flags": "contended", "contention_cpu_share": 0.61}),
                      pd.Series(PROBE))
    assert contended["verdict"] == "contended"
    assert contended["reason"].startswith("others took 61 % of the CPU time: no bottleneck verdict")
    tiny = judge(pd.Series({**RUN, "achieved_tflops": 0.0004}), pd.Series(PROBE))
    assert tiny["reason"].startswith("MFU 4e-05 % of the datasheet")


def test_ceilings_show_what_the_node_reaches_beside_the_datasheet() -> None:
    reached = {**PROBE, "mamf_tflops_bf16": 794.5, "triad_GBps": 3000.0,
               "decode_memory_images_per_s": 5200.0}
    table = ceilings(pd.DataFrame([reached])).set_index("figure")
    assert table.loc["achievable matmul bf16 (best of a sweep of shapes)",
                     "of_datasheet"] == pytest.approx(794.5 / 989.4)
    assert table.loc["device memory (STREAM triad, best call)", "datasheet"] == 3350
    assert table.loc["JPEG decode from memory (at that worker count)", "measured"] == 5200


def test_nodes_are_compared_on_what_each_reaches_among_their_own_gpu_model() -> None:
    nodes = pd.DataFrame([{**PROBE, "host": "n1", "mamf_tflops_bf16": 800.0},
                          {**PROBE, "host": "n2", "mamf_tflops_bf16": 760.0},
                          {**PROBE, "host": "n3", "mamf_tflops_bf16": 720.0},
                          {**PROBE, "host": "a1", "gpu": "A100",
                           "device_name": "NVIDIA A100-SXM4-80GB", "mamf_tflops_bf16": 280.0}])
    found = nodes_compared(nodes).set_index("host")
    assert found.loc["n3", "of_median"] == pytest.approx(720 / 760)
    assert found.loc["n1", "nodes"] == 3
    assert pd.isna(found.loc["a1", "of_median"])  # nothing of its model to compare with
    later = pd.concat([nodes, pd.DataFrame([{**PROBE, "host": "n3", "mamf_tflops_bf16": 780.0}])])
    assert nodes_compared(later).set_index("host").loc["n3", "value"] == 780  # the latest probe


def test_mamf_sweeps_aligned_shapes_largest_first_within_the_budget() -> None:
    import torch

    from benchlib.kinds.probes import workload_achievable as achievable

    found = achievable.shapes(1024, 1024)
    assert found[0] == (1024, 1024, 1024) and len(found) == 27
    assert all(d % achievable.ALIGN == 0 and 64 <= d <= 1024 for shape in found for d in shape)
    volumes = [m * n * k for m, n, k in found]
    assert volumes == sorted(volumes, reverse=True)
    assert max(max(s) for s in achievable.shapes(1024, 4096)) == 1280
    best = achievable.achievable_matmul(torch.device("cpu"), torch.float32, 128, 128, 2, 1, 0.0)
    assert best.tried == 1 and best.value > 0 and best.shape_text == "128x128 @ 128x128"
    more = achievable.achievable_matmul(torch.device("cpu"), torch.float32, 128, 256, 2, 1, 30.0)
    assert more.tried == len(achievable.shapes(128, 256)) == 8 and more.value >= best.value / 10
    triad = achievable.triad_gbps(torch.device("cpu"), 12 << 20, 3, 1, 5.0)
    assert triad.value > 0


def test_data_bound_run_names_the_loader_capacity() -> None:
    run = pd.Series({**RUN, "time_data_s": 0.128})  # half of each iteration waiting
    verdict = judge(run, pd.Series(PROBE))
    assert verdict["verdict"] == "data-bound"
    assert verdict["data_wait_share"] == pytest.approx(0.5)
    assert verdict["demand_per_device"] == pytest.approx(2000)
    assert verdict["loader_capacity_per_device"] == 1500  # 8 workers
    assert "1,500 images/s per device at 8 workers, below the 2,000 images/s" in verdict["reason"]
    # synthetic data waiting is data-bound as well, without a loader figure
    synthetic = judge(pd.Series({**run, "dataset": "synthetic"}), pd.Series(PROBE))
    assert synthetic["verdict"] == "data-bound" and synthetic["loader_capacity_per_device"] is None


def test_throttling_comes_first() -> None:
    run = pd.Series({**RUN, "time_data_s": 0.128, "throttled_share": 0.4,
                     "throttle_power_share": 0.4, "throttle_thermal_share": 0.0,
                     "sm_clock_mean_mhz": 1400.0})
    verdict = judge(run, pd.Series(PROBE))
    assert verdict["verdict"] == "throttled"
    assert verdict["reason"].startswith("clocks held down in 40% of the telemetry samples (power 40%)")


def test_loader_capacity_is_shared_by_the_node_s_devices() -> None:
    probe = pd.Series(PROBE)
    assert loader_capacity(probe, 4, 4) == (2600 / 4, 16)  # 16 workers on the node
    assert loader_capacity(probe, 2, 1) == (800, 4)  # below the smallest probed count
    assert loader_capacity(None, 4, 1) == (None, None)


def test_verdicts_match_each_run_to_its_host_s_probe() -> None:
    other = {**PROBE, "host": "n2", "matmul_tflops_bf16": 350.0}
    frame = pd.DataFrame([PROBE, other, RUN, {**RUN, "host": "n2"},
                          {**RUN, "status": "failed"}])
    table = verdicts(frame)
    assert len(table) == 2
    assert list(table["achievable_tflops"]) == [700.0, 350.0]


def test_node_probe_notebook_takes_every_config_field() -> None:
    from benchlib.inputs.params import notebook_parameters

    fixed = {"benchmark", "num_devices", "num_nodes", "node_launcher"}
    assert set(notebook_parameters("node_probe")) == set(NodeProbeConfig.model_fields) - fixed


@pytest.mark.slow
def test_probe_and_run_through_sweep_and_report_give_a_verdict(tmp_path, image_dir) -> None:
    import textwrap

    from benchlib.execute.sweep import run_sweep
    from benchlib.inputs.params import load_sweep
    from benchlib.records.results import load
    from benchlib.report.build import build_report

    common = "campaign: node-test\nrepeats: 1\ngrid: {}\n"
    probe = tmp_path / "probe.yaml"
    probe.write_text(common + textwrap.dedent(f"""
        notebook: node_probe
        base: {{device: cpu, precisions: [fp32], matmul_size: 128, memory_bytes: 1048576,
                iterations: 2, warmup: 1, data_dir: "{image_dir}", image_size: 32,
                decode_workers: [0, 1], decode_batch_size: 4, decode_batches: 2,
                allreduce_devices: 1}}
    """))
    train = tmp_path / "train.yaml"
    train.write_text(common + textwrap.dedent(f"""
        notebook: train
        base: {{model: resnet18, image_size: 32, num_classes: 10, iterations: 3, warmup: 1,
                num_workers: 0, device: cpu, batch_size: 2, dataset: real, data_dir: "{image_dir}"}}
    """))
    outputs = tmp_path / "outputs"
    for spec in (probe, train):
        assert [o.status for o in run_sweep(load_sweep(spec), outputs, progress=False)] == ["done"]
    frame = load(outputs / "node-test").set_index("benchmark")
    assert frame.loc["train", "flops_per_sample"] > 0 and frame.loc["train", "achieved_tflops"] > 0
    assert frame.loc["train", "telemetry"].startswith("unavailable: no CUDA device")
    assert frame.loc["probe_node", "matmul_tflops_fp32"] > 0
    judged = verdicts(load(outputs / "node-test"))
    # on a loaded machine the run is contended: then no bottleneck is named, as it should be
    assert len(judged) == 1 and judged["verdict"].iloc[0] in ("compute-bound", "data-bound",
                                                              "contended")
    # the probe is watched as the run is: contended, its ceiling is no denominator
    probe_flags = flags.of(frame.loc["probe_node", "flags"])
    assert judged["achievable_source"].iloc[0] == (
        "unknown: the node probe was contended; probe again on a quiet node"
        if "contended" in probe_flags else "probe fp32 matmul, best of a sweep of shapes")
    assert isinstance(frame.loc["probe_node", "contention_cpu_share"], float)
    assert judged["peak_source"].iloc[0] == ""  # a CPU: no datasheet
    report = build_report(outputs / "node-test", summaries=("summary_node",), progress=False)
    page = (report.parent / "summary_node.html").read_text()
    assert "matmul fp32" in page and judged["verdict"].iloc[0] in page
    assert "Traceback" not in page


@pytest.mark.gpu
def test_node_probe_and_telemetry_on_cuda(tiny) -> None:
    from benchlib.run import launch

    probe = launch.run(NodeProbeConfig(device="cuda", matmul_size=1024, memory_bytes=64 << 20,
                                       transfer_bytes=16 << 20, iterations=5, allreduce_devices=1))
    record = make_record(NodeProbeConfig(device="cuda"), probe)
    for column in ("matmul_tflops_fp32", "matmul_tflops_tf32", "matmul_tflops_bf16", "memory_GBps",
                   "h2d_pinned_GBps", "h2d_pageable_GBps", "d2h_pinned_GBps", "d2h_pageable_GBps"):
        assert record[column] > 0, column
    tiny.update(device="cuda", iterations=30)
    config = ClassificationConfig(benchmark="inference", telemetry_interval_s=0.01, **tiny)
    run = make_record(config, launch.run(config))
    assert run["telemetry"] == "nvml" and run["telemetry_samples"] >= 2
    assert run["power_mean_w"] > 0 and run["energy_j"] > 0 and run["joules_per_sample"] > 0


def test_plots_of_ceilings_and_verdicts() -> None:
    from benchlib.publish.pages.plots import ceilings_plot, verdict_plot

    figure = ceilings_plot(ceilings(pd.DataFrame([PROBE])))
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    decode = "read + JPEG decode from data_dir (best worker count)"
    assert "matmul bf16 (one square shape)" in labels and decode not in labels  # no sheet
    table = verdicts(pd.DataFrame([PROBE, RUN, {**RUN, "time_data_s": 0.128, "batch_size": 128}]))
    labels = [t.get_text() for t in verdict_plot(table).axes[0].get_yticklabels()]
    assert any(label.endswith("[data-bound]") for label in labels)
    assert any(label.endswith("[compute-bound]") for label in labels)


def test_verdict_table_and_reasons_name_each_run() -> None:
    from benchlib.publish.pages.verdict_tables import reasons, run_labels, verdict_display

    judged = verdicts(pd.DataFrame([PROBE, RUN, {**RUN, "time_data_s": 0.128, "num_devices": 2,
                                                 "throughput": 2000.0}]))
    assert list(run_labels(judged)) == ["1 dev", "2 dev"]
    assert list(judged["verdict"]) == ["compute-bound", "data-bound"]
    assert judged["data_wait_share"].iloc[1] == 0.5
    shown = verdict_display(judged)._repr_html_()
    assert "data-bound" in shown and "50" in shown and "waited" not in shown  # reasons apart
    text = reasons(judged)
    assert text.splitlines()[1].startswith("- **2 dev**: data-bound: waited 50% of each iteration")


def test_datasheets_of_the_gpus_seen() -> None:
    from benchlib.analysis.verdict import datasheets_seen

    frame = pd.DataFrame([RUN, {**RUN, "device_name": "Tesla V100-SXM2-32GB"},
                          {**RUN, "device_name": "AMD EPYC 7763"}])
    seen = datasheets_seen(frame)
    assert list(seen["variant"]) == ["H100 SXM5 80GB", "V100 SXM2"]
    assert datasheets_seen(frame.iloc[2:]).empty


def test_runs_without_telemetry_are_named(monkeypatch):
    """'Telemetry unavailable for 1 of 2 runs' says which run."""
    import pandas as pd

    from benchlib.publish.pages import verdict_tables

    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    df = pd.DataFrame({"benchmark": ["train", "train"], "status": ["ok", "ok"],
                       "model": ["a", "b"], "telemetry": ["nvml", "unavailable: no GPU"],
                       "gpu_util_mean": [90.0, None], "throughput": [1.0, 2.0],
                       "source": ["/x/c/train-fast.ipynb", "/x/c/train-cpu.ipynb"]})
    table = verdict_tables.telemetry_display(df)
    assert [m.data for m in shown] == ["Telemetry unavailable for 1 of 2 runs (train-cpu): "
                                       "no GPU."]
    assert "/x/c" not in repr(table) and "source" not in repr(table)


def test_a_wait_beyond_the_iteration_is_all_of_it_and_the_plot_draws() -> None:
    """Hypothesis found it: a record whose iteration is 1e-308 s and data wait 1.1 s made a
    share of 1e308, whose bar matplotlib cannot draw. Medians of phases need not add up, but a
    run never waits more than its whole iteration."""
    import matplotlib.pyplot as plt

    from benchlib.publish.pages import plots

    runs = pd.DataFrame([{"benchmark": "train", "model": "resnet50", "status": "ok",
                          "gpu": "H100", "num_devices": 1, "unit": "images/s",
                          "time_iteration_s": 1.1125369292536007e-308, "time_data_s": 1.1}])
    judged = verdicts(runs)
    assert judged["data_wait_share"].tolist() == [1.0]
    assert judged["verdict"].tolist() == ["data-bound"]
    fig = plots.verdict_plot(judged)
    fig.canvas.draw()
    plt.close(fig)
