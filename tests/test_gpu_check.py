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
    assert "gpu-check: 24 points from 11 of 12 params files" in done.stdout
    assert "params/gpu-check/unet3d.yaml: 2 points" in done.stdout
    assert "multi-gpu.yaml: 3 points (skipped: needs 2 or more GPUs)" in done.stdout
    assert "no CUDA device: plan and params checked, nothing run" in done.stdout


def _checkout(root: Path) -> Path:
    """A checkout without data/: tools/gpu_check.py copied (it finds the checkout from its own
    path), the package, params and notebooks linked."""
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "gpu_check.py").write_bytes((ROOT / "tools" / "gpu_check.py").read_bytes())
    for name in ("benchlib", "params", "notebooks"):
        (root / name).symlink_to(ROOT / name)
    return root


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
@pytest.mark.xdist_group("gpu-check-data")
def test_the_plan_validates_and_prints_without_writing_the_data(tmp_path):
    """`--plan` prints the plan and writes nothing (it wrote the 487 MB of data first, minutes
    on a CPU): the params are validated against stand-ins of the data's shapes."""
    checkout = _checkout(tmp_path / "benchlib")
    done = subprocess.run([sys.executable, "tools/gpu_check.py", "--plan"], cwd=checkout,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "params/gpu-check/unet3d.yaml: 2 points" in done.stdout
    assert "params/gpu-check/node.yaml: 1 point" in done.stdout
    assert "plan only (--plan)" in done.stdout
    assert "data/gpu-check not written: the params were checked against stand-ins" in done.stdout
    assert not (checkout / "data").exists()


def test_a_python_without_the_packages_gets_their_list_not_a_traceback():
    """`make gpu-check PYTHON=...` with a Python that lacks packages (here the venv's without
    its site-packages): every missing package named at once, with how to get them, exit 2;
    it ended in a ModuleNotFoundError for the first one."""
    done = subprocess.run(["make", "--no-print-directory", "gpu-check",
                           f"PYTHON={sys.executable} -S"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "ModuleNotFoundError" not in done.stderr, done.stderr
    assert "lacks" in done.stderr and "of the packages the check imports" in done.stderr
    for package in ("torch", "numpy", "pillow (PIL)", "pyyaml (yaml)", "regex", "papermill"):
        assert package in done.stderr, done.stderr
    assert "tools/gpu-check-wheels.txt" in done.stderr
    assert "gpu-check:" not in done.stdout, done.stdout  # nothing planned


def test_every_package_the_check_imports_is_in_the_image_or_the_wheel_list():
    """The check's import list is benchlib's dependencies (less the PostgreSQL driver), and each
    is either in the PyTorch image docs/gpu-check.md assumes or a wheel of
    tools/gpu-check-wheels.txt that the doc names: regex (imported by `benchlib check`, which
    the check runs last) was in neither."""
    import re

    import tomllib

    gpu_check = _module()
    wanted = set(gpu_check.REQUIRED.values())

    def name(requirement: str) -> str:
        return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert wanted == {name(d) for d in dependencies} - {"psycopg"}
    doc = " ".join((ROOT / "docs" / "gpu-check.md").read_text().split())
    image = doc.split("A container image with its own Python, ", 1)[1].split(" (an NGC", 1)[0]
    in_image = {name(n) for n in re.split(r", | and ", image)} | {"matplotlib"}  # seaborn's
    wheels = {name(line) for line in (ROOT / "tools" / "gpu-check-wheels.txt").read_text()
              .splitlines() if line and not line.startswith("#")}
    lacking = sorted(wanted - in_image - wheels)
    assert not lacking, f"neither in the image nor in tools/gpu-check-wheels.txt: {lacking}"
    named = doc.split("exactly the wheels", 1)[1].split("Fetch them", 1)[0].lower()
    for package in sorted((wanted & wheels) - in_image):
        assert package in named, f"docs/gpu-check.md does not name the wheel {package}"


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


# --- the JPEG folder, sized from the points that read it (issue 51, build 2) ---------------


def _jpeg_sweep(**parameters):
    """A loaded sweep's stand-in: one point of ``parameters`` (a notebook, its values)."""
    from types import SimpleNamespace

    from benchlib.inputs.params import Point

    notebook = parameters.pop("notebook", "train")
    values = {"dataset": "real", "data_dir": "data/gpu-check/images", "batch_size": 128,
              "iterations": 50, "warmup": 8, "num_workers": 8, **parameters}
    return SimpleNamespace(points=[Point(notebook, values, 0, notebook)])


def test_the_jpeg_folder_holds_every_timed_span_with_the_workers_in_flight(monkeypatch):
    from benchlib.data.imagefolder import images_for_span

    gpu_check = _module()
    monkeypatch.chdir(ROOT)
    images = gpu_check.jpeg_images(gpu_check.planned_sweeps())
    # classification-jpeg.yaml: 8 warm-up + 50 timed batches of 128, 8 workers x 2 in flight
    assert images == images_for_span(58, 128, 8) == 10_496
    assert images % 128 == 0 and images % gpu_check.IMAGES["classes"] == 0
    assert images > 384  # the 3 batches it was, for 8 workers


def test_the_jpeg_folder_follows_the_largest_point_and_its_loader_batch():
    gpu_check = _module()
    big = _jpeg_sweep(iterations=100, num_workers=4)  # (108 + 8) batches, 12 more, of 128
    smooth = _jpeg_sweep(notebook="smooth_inference", iterations=500)  # a batch is 1 image
    synthetic = _jpeg_sweep(dataset="synthetic", iterations=10_000)
    other = _jpeg_sweep(data_dir="elsewhere", iterations=10_000)
    assert gpu_check.jpeg_images([big, smooth, synthetic, other]) == 128 * 128
    assert gpu_check.jpeg_images([smooth]) == 8 * -(-((508 + 16) + 53) // 8)


@pytest.mark.parametrize("iterations", ["auto", "epoch"])
def test_a_point_reading_the_folder_for_a_time_cannot_size_it(iterations):
    from benchlib.errors import InputError

    gpu_check = _module()
    with pytest.raises(InputError, match=f"iterations '{iterations}' reads data/gpu-check"):
        gpu_check.jpeg_images([_jpeg_sweep(iterations=iterations)])


def test_a_jpeg_folder_of_another_size_is_written_again(tmp_path, monkeypatch):
    gpu_check = _module()
    data = tmp_path / "data"
    (data / "images" / "class_000").mkdir(parents=True)
    (data / "images" / "class_000" / "old.JPEG").write_bytes(b"")  # the 384 it was, say
    (data / "em.h5").write_bytes(b"")  # kept as they are
    (data / "tokens.bin").write_bytes(b"")
    monkeypatch.setattr(gpu_check, "DATA", data)
    monkeypatch.setattr(gpu_check, "IMAGES", {"classes": 2, "size": 16})
    gpu_check.prepare_data(8, quiet=True)
    assert gpu_check.jpeg_count(data / "images") == 8
    assert not (data / "images" / "class_000" / "old.JPEG").exists()
    first = sorted(p.stat().st_mtime_ns for p in (data / "images").glob("*/*"))
    gpu_check.prepare_data(8, quiet=True)  # the right size: kept
    assert sorted(p.stat().st_mtime_ns for p in (data / "images").glob("*/*")) == first
    assert (data / "em.h5").stat().st_size == 0


def test_an_epoch_boundary_in_a_timed_span_fails_the_run():
    from tests.test_gpu_check_judge import healthy

    gpu_check = _module()
    problems, _ = gpu_check.run_problems(healthy(dataset="real",
                                                 result_epoch_boundaries_in_timed_loop=2))
    assert problems == ["2 epoch boundaries inside the timed span (0 expected): the image folder "
                        "is too small for the run (tools/gpu_check.py sizes data/gpu-check/images "
                        "from its points: jpeg_images)"]
    assert gpu_check.run_problems(healthy(result_epoch_boundaries_in_timed_loop=0))[0] == []
    assert gpu_check.run_problems(healthy())[0] == []  # synthetic data: no count, no epochs


# --- the published setups, a TF32 point and compiled training (issue 51, build 1) ----------


def _points() -> list[tuple[str, object]]:
    """(params file, point) of every params file of the check, validated as --plan does."""
    gpu_check = _module()
    import os

    here = Path.cwd()
    os.chdir(ROOT)
    try:
        loaded = gpu_check.planned_sweeps()
    finally:
        os.chdir(here)
    return [(name, point) for name, sweep in zip(gpu_check.ORDER, loaded, strict=True)
            for point in sweep.points]


def _config(point):
    from benchlib.registry import notebook_configs

    config_class, fixed = notebook_configs()[point.notebook]
    values = {k: v for k, v in point.parameters.items() if k != "data_dir"}
    return config_class.model_construct(**{**config_class().model_dump(), **values, **fixed})


def test_the_lambda_points_meet_their_published_references_tf32_among_them():
    import pandas as pd

    from benchlib.analysis import references
    from tests.test_published_params import H100, _record

    points = {name: point for name, point in _points() if name.startswith("lambda-")}
    assert set(points) == {"lambda-tf32.yaml", "lambda-fp16.yaml"}
    precisions = set()
    for name, point in points.items():
        config = _config(point)
        precisions.add(config.precision)
        record = {**_record(config), **H100}
        checked = references.check(pd.DataFrame([record]), references.shipped())
        throughput = checked[checked["metric"] == "throughput"]
        assert len(throughput) == 1, name
        assert throughput["reference"].iloc[0].startswith("Lambda ResNet-50 H100"), name
    assert precisions == {"tf32", "amp_fp16"}


def test_gpt2_trains_at_llmc_batch_eager_and_compiled():
    runs = [_config(point) for name, point in _points() if name == "llmc.yaml"]
    assert {(c.benchmark, c.size, c.sequence_length, c.batch_size, c.precision, c.num_devices)
            for c in runs} == {("lm_train", "gpt2", 1024, 64, "amp_bf16", 1)}
    assert sorted(c.compile for c in runs) == ["default", "none"]


def test_each_compiled_training_point_has_an_eager_twin():
    # like with like: the same parameters but compile, in the check's own points
    points = _points()
    compiled = [(name, p) for name, p in points if p.parameters.get("compile", "none") != "none"
                and p.notebook in ("train", "lm_train")]
    assert {p.notebook for _, p in compiled} == {"train", "lm_train"}

    def same(point) -> tuple:
        values = {k: v for k, v in point.parameters.items() if k not in ("compile", "campaign")}
        return point.notebook, repr(sorted(values.items(), key=str))

    eager = {same(p) for _, p in points if p.parameters.get("compile", "none") == "none"}
    for name, point in compiled:
        assert same(point) in eager, f"{name}: {point.name} has no eager twin"


@pytest.mark.slow  # validates every params file: in make test, not the edit loop
def test_eager_stays_the_default_and_the_record_says_which():
    from benchlib.kinds.classification.config import ClassificationConfig
    from benchlib.kinds.language_model.config import LanguageModelConfig
    from tests.test_published_params import _record

    assert ClassificationConfig().compile == LanguageModelConfig().compile == "none"
    for name, point in _points():
        if point.notebook in ("train", "lm_train"):
            config = _config(point)
            assert _record(config)["compile"] == config.compile, name
