"""A benchmark notebook run by hand (plain papermill, JupyterLab) is a run: it ends with a line
saying what was measured, how well and what disturbed it, and saves its record where
``benchlib results`` and ``benchlib report`` find it; a sweep's kernels leave that to the sweep."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.records import hand_run
from benchlib.records.results import load

ROOT = Path(__file__).resolve().parent.parent
RECORD = {"campaign": "interactive", "benchmark": "train", "status": "ok", "unit": "images/s",
          "throughput": 11.2184, "throughput_low": 6.71, "throughput_high": 18.3,
          "iterations": 3, "wall_time_s": 4.28, "contended": True, "noisy": True,
          "contention_cpu_share": 0.69, "spread_iteration": 0.41, "flags": "contended,noisy,short",
          "schema_version": 1, "model": "resnet18", "dataset": "synthetic", "batch_size": 16,
          "num_devices": 1, "precision": "fp32", "gpu": "cpu", "cluster": "vm"}


def test_the_result_line_says_the_interval_and_each_flag_in_words():
    line = hand_run.result_line(RECORD)
    assert line.startswith("11.22 images/s (within-run 95 % interval 6.71-18.3) over 3 timed "
                           "iterations (4.28 s).")
    assert "\n⚠ Flagged contended, noisy, short:\n" in line
    assert "\n- contended (others took 69 % of the CPU time): other processes took more than" in line
    assert "noisy (spread 41 %)" in line and "short (3 iterations, 4.28 s)" in line


def test_an_unflagged_run_says_so():
    record = {**RECORD, "flags": "", "contended": False, "noisy": False, "iterations": 50,
              "wall_time_s": 12.0}
    assert hand_run.result_line(record).endswith("Not flagged: nothing disturbed it that "
                                                  "benchlib could see.")


def test_a_record_saved_by_hand_loads_with_the_campaign(tmp_path, monkeypatch):
    monkeypatch.setenv(hand_run.OUTPUTS_ENV, str(tmp_path))
    first, second = hand_run.save(RECORD), hand_run.save({**RECORD, "throughput": 12.0})
    assert first.parent == second.parent == tmp_path / "interactive" and first != second
    df = load(tmp_path / "interactive")
    assert sorted(df["throughput"]) == [11.2184, 12.0]
    assert all(Path(source).is_file() for source in df["source"])  # a notebook holding the record
    assert first.with_suffix(".ipynb").is_file()


def test_a_runner_kernel_does_not_save(tmp_path, monkeypatch):
    monkeypatch.setenv(hand_run.OUTPUTS_ENV, str(tmp_path))
    monkeypatch.setenv(hand_run.RUNNER_ENV, "1")
    assert hand_run.save(RECORD) is None
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("campaign", ["../escape", "/abs", "a/b", ".hidden", ""])
def test_a_campaign_that_is_not_a_folder_name_is_refused(tmp_path, monkeypatch, campaign):
    monkeypatch.setenv(hand_run.OUTPUTS_ENV, str(tmp_path / "out"))
    if not campaign:  # empty: the default campaign
        assert hand_run.save({**RECORD, "campaign": ""}).parent.name == "interactive"
        return
    with pytest.raises(ValueError, match="campaign"):
        hand_run.save({**RECORD, "campaign": campaign})
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.json"))


@pytest.mark.slow
def test_plain_papermill_run_saves_its_record_and_ends_with_the_result_line(tmp_path, image_dir):
    """``papermill notebooks/smooth_inference.ipynb`` as a user types it, outside any sweep, on
    real images: the suite's one plain papermill run of a benchmark notebook."""
    out = tmp_path / "out.ipynb"
    env = {k: v for k, v in os.environ.items() if k != hand_run.RUNNER_ENV}
    env[hand_run.OUTPUTS_ENV] = str(tmp_path / "outputs")
    parameters = ["-p", "device", "cpu", "-p", "model", "resnet18", "-p", "image_size", "32",
                  "-p", "batch_size", "4", "-p", "iterations", "2", "-p", "warmup", "1",
                  "-p", "num_workers", "0", "-p", "noise_samples", "6", "-p", "dataset", "real",
                  "-p", "data_dir", str(image_dir), "-p", "campaign", "by-hand"]
    done = subprocess.run([sys.executable, "-m", "papermill", "notebooks/smooth_inference.ipynb",
                           str(out), *parameters, "--no-progress-bar"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    import nbformat

    executed = nbformat.read(out, as_version=4)
    last = executed.cells[-1]
    text = "".join(o.get("text", "") for o in last.outputs if o.output_type == "stream")
    # 2 iterations give no within-run interval (a bootstrap of 2 values claims too much)
    assert " images/s over 2 timed iterations" in text and "interval" not in text.split("\n")[0]
    assert "⚠ Flagged" in text and "short (2 iterations" in text  # 2 iterations: short
    assert "Saved as " in text and "benchlib results " in text
    row = load(out).iloc[0]
    assert (row["benchmark"], row["dataset"], row["status"]) == ("smooth_inference", "real", "ok")
    assert (row["noise_samples"], row["samples"], row["iterations"]) == (6, 2, 2)
    assert row["time_preprocess_s"] > 0 and row["time_forward_s"] > 0
    images = sum("image/png" in o.get("data", {}) for c in executed.cells
                 for o in c.get("outputs", []))
    assert images == 2  # the per-iteration timeline and the phase bars
    folder = tmp_path / "outputs" / "by-hand"
    listed = subprocess.run([str(Path(sys.executable).parent / "benchlib"), "results", str(folder)],
                            capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr
    assert "smooth_inference" in listed.stdout and "short" in listed.stdout  # the flags column
    from benchlib.report.build import build_report

    index = build_report(folder, summaries=(), progress=False)
    pages = list((index.parent / "runs").glob("*.html"))
    assert len(pages) == 1 and "run by hand" in pages[0].read_text()
    assert f'href="runs/{pages[0].name}"' in index.read_text()


def test_a_read_only_outputs_folder_never_loses_the_notebook_s_record(monkeypatch, capsys):
    """Run by hand with outputs/ on a read-only file system: the record is published in the
    notebook first, the failed copy is said in one line, and nothing raises."""
    import errno

    from benchlib.publish.benchmark_notebook import run
    from benchlib.records import build, hand_run

    published = []
    monkeypatch.setattr(build, "publish", published.append)

    def read_only(record, root=None):
        raise OSError(errno.EROFS, "Read-only file system", "outputs/interactive")

    monkeypatch.setattr(hand_run, "save", read_only)
    run.publish({"benchmark": "train", "throughput": 10.0, "unit": "images/s", "flags": ""})
    assert len(published) == 1
    out = capsys.readouterr().out
    assert "The record is in this notebook, but its copy under outputs/ was not saved" in out
    assert "read-only" in out.lower()
