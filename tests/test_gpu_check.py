"""``make gpu-check`` (tools/gpu_check.py): its plan and params on a CPU, and its run, judging
and packing over a tiny CPU campaign (where the GPU's assertions must fail, and say why)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _module():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "tools" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # its dataclass resolves its module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.xdist_group("gpu-check-data")  # one writer of data/gpu-check at a time
def test_on_a_cpu_it_validates_and_prints_the_plan():
    done = subprocess.run([sys.executable, "tools/gpu_check.py"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "gpu-check: 18 points from 6 of 7 params files" in done.stdout
    assert "params/gpu-check/unet3d.yaml: 2 points" in done.stdout
    assert "multi-gpu.yaml: 3 points (skipped: needs 2 or more GPUs)" in done.stdout
    assert "no CUDA device: plan and params checked, nothing run" in done.stdout


def test_a_params_file_out_of_the_plan_is_refused(tmp_path, monkeypatch):
    gpu_check = _module()
    (tmp_path / "extra.yaml").write_text("campaign: x\n")
    monkeypatch.setattr(gpu_check, "PARAMS", tmp_path)
    with pytest.raises(SystemExit, match="runs"):
        gpu_check.sweeps()


@pytest.mark.slow
def test_the_run_is_judged_summarised_and_packed(tmp_path, monkeypatch, image_dir):
    """Two CPU runs through the real sweep: the status, throughput and packing hold; the
    GPU-only assertions (NVML samples, the synchronisation count, a GPU's ceiling) fail, each
    named."""
    gpu_check = _module()
    params = tmp_path / "params"
    params.mkdir()
    (params / "tiny.yaml").write_text(
        "campaign: gpu-check\nnotebook: [train, inference]\nbase: {model: resnet18, "
        "image_size: 32, num_classes: 4, batch_size: 4, iterations: 2, warmup: 1, "
        "num_workers: 0, device: cpu, sync_debug: true}\ngrid: {}\nrepeats: 1\n")
    monkeypatch.setattr(gpu_check, "PARAMS", params)
    monkeypatch.setattr(gpu_check, "ORDER", ("tiny.yaml",))
    assert [name for name, _ in gpu_check.chosen(gpu_check.sweeps(), 1)] == ["tiny.yaml"]
    loaded = gpu_check.sweeps()
    outputs = tmp_path / "outputs"
    gpu_check.run_sweeps(outputs, ["tiny.yaml"])
    from benchlib.records.results import load

    frame = load(outputs / "gpu-check")
    outcome = gpu_check.Outcome()
    gpu_check.judge(frame, sum(len(s.points) for s in loaded), outcome)
    assert len(outcome.rows) == 2 and not any("status" in f for f in outcome.failures)
    assert sum("not NVML samples" in f for f in outcome.failures) == 2
    assert sum("synchronisation" in f for f in outcome.failures) == 2
    assert sum("ran on the CPU" in f for f in outcome.failures) == 2
    status, text = gpu_check.reference_check(outputs / "gpu-check")
    assert status == 3 and "NOTHING CERTIFIED" in text
    summary = gpu_check.summary_text(frame, outcome, text, 12.0)
    assert "| run | throughput |" in summary
    assert f"{len(outcome.failures)} failed assertions" in summary and len(outcome.failures) >= 6
    packed = gpu_check.pack(outputs / "gpu-check", summary, text)
    with tarfile.open(packed) as tar:
        names = tar.getnames()
    assert "gpu-check/summary.md" in names and "gpu-check/check.txt" in names
    assert sum(n.endswith(".ipynb") for n in names) == 2


def test_the_multi_gpu_points_run_on_two_or_more_gpus_only():
    gpu_check = _module()
    loaded = list(range(len(gpu_check.ORDER)))  # stand-ins: chosen() only pairs them with names
    one = [name for name, _ in gpu_check.chosen(loaded, 1)]
    assert "multi-gpu.yaml" not in one and len(one) == len(gpu_check.ORDER) - 1
    assert [name for name, _ in gpu_check.chosen(loaded, 8)] == list(gpu_check.ORDER)
