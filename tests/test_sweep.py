import re
import textwrap
from pathlib import Path

import pytest
import yaml

from benchlib.cli import main
from benchlib.errors import ConfigError
from benchlib.execute.sweep import run_sweep
from benchlib.inputs.params import Point, load_sweep
from benchlib.records.results import load

GOOD = {"campaign": "unit", "notebook": ["train", "smooth_inference"],
        "base": {"model": "resnet18", "image_size": 32, "num_classes": 10, "iterations": 2,
                 "warmup": 1, "num_workers": 0, "device": "cpu", "noise_samples": 4},
        "grid": {"batch_size": [2, 4], "noise_samples": [4, 8]}}


def _write(tmp_path: Path, spec: dict | str) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(spec if isinstance(spec, str) else yaml.safe_dump(spec))
    return path


def test_grid_expansion_gives_each_notebook_only_its_parameters(tmp_path):
    sweep = load_sweep(_write(tmp_path, GOOD))
    by_notebook = {}
    for point in sweep.points:
        by_notebook.setdefault(point.notebook, []).append(point)
    # train takes no noise_samples: its 2 x 2 grid collapses to 2 distinct points
    assert len(by_notebook["train"]) == 2 and len(by_notebook["smooth_inference"]) == 4
    assert all("noise_samples" not in p.parameters for p in by_notebook["train"])
    assert all(p.parameters["campaign"] == "unit" for p in sweep.points)
    names = [p.name for p in sweep.points]
    assert len(set(names)) == len(names)
    assert names[0].startswith("train-2-")


def test_point_ids_are_stable_and_depend_on_parameters_and_repeat():
    a = Point("train", {"batch_size": 2, "model": "x"}, 0, "l")
    assert a.point_id == Point("train", {"model": "x", "batch_size": 2}, 0, "other").point_id
    assert a.point_id != Point("train", {"batch_size": 4, "model": "x"}, 0, "l").point_id
    assert a.point_id != Point("train", {"batch_size": 2, "model": "x"}, 1, "l").point_id


def test_repeats_make_distinct_points(tmp_path):
    base = {k: v for k, v in GOOD["base"].items() if k != "noise_samples"}
    sweep = load_sweep(_write(tmp_path, {**GOOD, "notebook": "train", "base": base, "grid": {},
                                         "repeats": 3}))
    assert [p.repeat for p in sweep.points] == [0, 1, 2]
    assert len({p.point_id for p in sweep.points}) == 3


BAD = [
    ({"campaing": "x"}, ["campaing: unknown parameter (allowed keys: campaign, notebook"]),
    ({"base": {**GOOD["base"], "batchsize": 8}},
     ["base.batchsize: unknown parameter of train and smooth_inference; did you mean "
      "batch_size?"]),
    ({"grid": {"batch_size": ["big"]}},
     ["grid.batch_size: bad value 'big': Input should be a valid integer"]),
    ({"grid": {"batch_size": [0, 8]}}, ["grid.batch_size: bad value 0: Input should be greater than 0"]),
    ({"base": {**GOOD["base"], "model": "resnet5O"}},
     ["base.model: bad value 'resnet5O': unknown model 'resnet5O'; allowed:", "resnet50"]),
    ({"base": {**GOOD["base"], "precision": "fp64"}},
     ["base.precision: bad value 'fp64'", "'fp32', 'tf32', 'amp_fp16' or 'amp_bf16'"]),
    ({"base": {**GOOD["base"], "dataset": "real", "data_dir": "no/such/dir"}},
     ["base.data_dir: data_dir '", "no/such/dir' is not a directory"]),
    ({"notebook": "trian"},
     ["notebook: bad value 'trian': not a benchmark notebook; allowed: allreduce, inference"]),
    ({"grid": {"batch_size": []}}, ["grid: bad value", "at least one value: batch_size"]),
    ({"campaign": "../escape"}, ["campaign: bad value '../escape'"]),
    ({"repeats": 0}, ["repeats: bad value 0"]),
]


@pytest.mark.parametrize(("change", "expected"), BAD)
def test_bad_params_stop_before_anything_runs(tmp_path, capsys, change, expected):
    path = _write(tmp_path, {**GOOD, **change})
    outputs = tmp_path / "outputs"
    assert main(["sweep", str(path), "--outputs", str(outputs)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: "), err
    for text in expected:
        assert text in err, err
    assert not outputs.exists()


def test_a_misspelt_parameter_is_answered_with_the_name_meant_in_short_lines(tmp_path):
    """``benchlib sweep`` as typed, from the params file's folder: a misspelt key gets the name
    it is closest to; a key close to none lists every allowed name, wrapped; no line of either
    passes 100 columns (it was one line of 443 characters, with no suggestion)."""
    import subprocess
    import sys

    def sweep(text: str) -> subprocess.CompletedProcess:
        (tmp_path / "typo.yaml").write_text("campaign: typo\nnotebook: train\n" + text)
        return subprocess.run([str(Path(sys.executable).with_name("benchlib")), "sweep",
                               "typo.yaml", "--dry-run"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)

    misspelt = sweep("base: {batchsize: 4}\n")
    assert misspelt.returncode == 2, misspelt.stderr
    assert misspelt.stderr.splitlines() == [
        "error: typo.yaml: base.batchsize: unknown parameter of train; did you mean batch_size?"]
    far = sweep("grid: {zzz: [1, 2]}\n")
    assert far.returncode == 2, far.stderr
    lines = far.stderr.splitlines()
    assert lines[0] == "error: typo.yaml: grid.zzz: unknown parameter of train; allowed:"
    assert "batch_size" in far.stderr and "warmup" in far.stderr and "did you mean" not in far.stderr
    assert max(len(line) for line in lines) <= 100, lines


def test_unreadable_params_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read params file"):
        load_sweep(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_sweep(_write(tmp_path, "campaign: [unclosed"))
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_sweep(_write(tmp_path, "- a list"))


def test_dry_run_lists_points_and_writes_nothing(tmp_path, capsys):
    path = _write(tmp_path, GOOD)
    assert main(["sweep", str(path), "--outputs", str(tmp_path / "out"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "campaign unit: 6 points" in out and out.count("pending") == 6
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_sweep_runs_records_failures_and_resumes(tmp_path, image_dir, capsys, monkeypatch):
    from benchlib.execute import sweep as sweep_module

    broken = tmp_path / "broken-images"  # a folder, but not in ImageNet layout: fails at run time
    broken.mkdir()
    spec = textwrap.dedent(f"""
        campaign: resume
        notebook: inference
        base: {{model: resnet18, image_size: 32, num_classes: 10, iterations: 2, warmup: 1,
                num_workers: 0, device: cpu, batch_size: 2, dataset: real}}
        grid:
          data_dir: ["{image_dir}", "{broken}"]
    """)
    sweep = load_sweep(_write(tmp_path, spec))
    outputs = tmp_path / "outputs"
    outcomes = run_sweep(sweep, outputs, progress=False)
    assert [o.status for o in outcomes] == ["done", "failed"]
    assert "not an ImageNet-layout folder" in outcomes[1].error
    campaign = outputs / "resume"
    assert sorted(p.suffix for p in campaign.iterdir() if not p.name.startswith(".")) == [
        ".csv", ".ipynb", ".ipynb", ".json", ".json"]  # the ok point's iterations.csv too
    frame = load(campaign).sort_values("status", ascending=False)
    assert list(frame["status"]) == ["ok", "failed"]
    assert frame["benchmark"].tolist() == ["inference", "inference"]
    assert frame["throughput"].iloc[0] > 0 and frame["samples"].iloc[0] == 4
    assert set(frame["point_id"]) == {p.point_id for p in sweep.points}

    assert main(["status", str(campaign)]) == 0  # a local campaign: no scheduler involved
    table = capsys.readouterr().out
    assert "2 points: 1 done, 1 failed, 0 running, 0 pending" in table
    assert "not an ImageNet-layout folder" in table and "images/s on" in table

    # the resume bookkeeping from here on: papermill is replaced by a fake executor that
    # replays the first pass (the real executed notebook, or the real error) and notes each call
    ran = []
    executed = {p.point_id: (campaign / f"{p.name}.ipynb").read_bytes() for p in sweep.points}
    errors = {o.point.point_id: o.error for o in outcomes}

    def replay(point, partial, *args):
        ran.append(point.point_id)
        partial.write_bytes(executed[point.point_id])
        return errors[point.point_id]

    monkeypatch.setattr(sweep_module, "_run_papermill", replay)
    ok_id, failed_id = (o.point.point_id for o in outcomes)
    again = run_sweep(sweep, outputs, progress=False)
    assert [o.status for o in again] == ["skipped", "skipped"] and ran == []
    retried = run_sweep(sweep, outputs, retry_failed=True, progress=False)
    assert [o.status for o in retried] == ["skipped", "failed"] and ran == [failed_id]
    assert "not an ImageNet-layout folder" in retried[1].error
    capsys.readouterr()
    forced = run_sweep(sweep, outputs, force=True, progress=True)
    assert [o.status for o in forced] == ["done", "failed"] and ran == [failed_id, ok_id, failed_id]
    # with progress, each point's result is on screen as it finishes, flagged where it is
    lines: list[str] = []  # each line as said, its continuations (wrapped, set in) joined
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("    ") and lines:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    assert re.fullmatch(r"inference-\S+: ok [\d.,]+ images/s \(flagged [a-z, ]*short\) in \d+ s",
                        lines[0]), lines
    assert "failed: " in lines[1] and "not an ImageNet-layout folder" in lines[1], lines
    # each flag raised is explained once: the timed loop, not the point, was short
    assert sum(line.startswith("short: the timed loop ran under") for line in lines) == 1, lines
    assert len(load(campaign)) == 2
    assert sorted(load(campaign)["status"]) == ["failed", "ok"]
