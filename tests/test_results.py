import json
import logging
import os

import pytest

from benchlib import SCHEMA_VERSION
from benchlib.errors import RecordError
from benchlib.kinds.classification import workload as classification
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.record import make_record
from benchlib.measure.environment import capture, short_gpu_name
from benchlib.records.results import CORE_COLUMNS, load, record_from_notebook
from benchlib.records.store import write_json_atomic

from .fakes import write_record_notebook


@pytest.fixture(scope="module")
def record():
    config = ClassificationConfig(benchmark="train", model="resnet18", image_size=32,
                                  batch_size=4, iterations=3, warmup=1, num_classes=10,
                                  num_workers=0, device="cpu", campaign="unit", cluster="here")
    result = classification.run(config)
    return make_record(config, result, capture(result.device))


def test_record_has_every_design_column(record):
    assert set(CORE_COLUMNS) <= set(record)
    assert record["schema_version"] == SCHEMA_VERSION
    assert (record["status"], record["gpu"], record["num_devices"]) == ("ok", "cpu", 1)
    assert (record["campaign"], record["cluster"], record["benchmark"]) == ("unit", "here", "train")
    assert record["unit"] == "images/s" and record["samples"] == 12
    assert record["throughput"] == pytest.approx(12 / record["wall_time_s"])
    assert record["time_preprocess_s"] is None  # train has no preprocess phase
    assert record["env_torch"].startswith("2.") and record["env_cpu_count"] >= 1
    json.dumps(record)  # JSON-clean: no NaN, no tensors


def test_short_gpu_names():
    assert short_gpu_name("NVIDIA H100 80GB HBM3") == "H100"
    assert short_gpu_name("Tesla V100-SXM2-32GB") == "V100"
    assert short_gpu_name("NVIDIA A40") == "A40"
    assert short_gpu_name("NVIDIA GeForce GTX 1080 Ti") == "1080Ti"
    assert short_gpu_name("NVIDIA Mystery 9") == "Mystery 9"


def test_load_reads_notebooks_and_prefers_fresh_sidecars(tmp_path, record):
    first = write_record_notebook(tmp_path / "a.ipynb", record)
    write_record_notebook(tmp_path / "b.ipynb", {**record, "batch_size": 8})
    write_json_atomic(tmp_path / "b.json", {**record, "batch_size": 16})
    frame = load(tmp_path)
    assert list(frame["batch_size"]) == [4, 16]  # b's sidecar is newer than b's notebook
    assert list(frame.every_column().columns[: len(CORE_COLUMNS)]) == list(CORE_COLUMNS)
    assert frame["source"].iloc[0] == str(first)
    stale = tmp_path / "b.json"
    os.utime(stale, (1, 1))  # older than its notebook: never served
    assert list(load(tmp_path)["batch_size"]) == [4, 8]


def test_failed_papermill_run_becomes_a_failed_record(tmp_path):
    write_record_notebook(tmp_path / "x.ipynb", error="CUDA out of memory",
              parameters={"model": "resnet50", "batch_size": 512})
    row = load(tmp_path).iloc[0]
    assert (row["status"], row["model"], row["batch_size"]) == ("failed", "resnet50", 512)
    assert "CUDA out of memory" in row["error"]


def test_bad_files_are_named_and_the_rest_still_loads(tmp_path, record, caplog):
    write_record_notebook(tmp_path / "good.ipynb", record)
    (tmp_path / "corrupt.ipynb").write_text('{"cells": [')
    write_record_notebook(tmp_path / "future.ipynb", {**record, "schema_version": 99})
    write_record_notebook(tmp_path / "unfinished.ipynb", None)
    write_record_notebook(tmp_path / "summary.ipynb", None, benchmark=False)
    (tmp_path / ".partial").mkdir()
    write_record_notebook(tmp_path / ".partial" / "running.ipynb", record)
    with caplog.at_level(logging.WARNING):
        frame = load(tmp_path)
    assert len(frame) == 1 and frame["source"].iloc[0].endswith("good.ipynb")
    messages = "\n".join(caplog.messages)
    assert "corrupt.ipynb: not a readable notebook" in messages
    assert "future.ipynb: unknown schema_version 99" in messages
    assert "unfinished.ipynb: benchmark notebook without a result record" in messages
    assert "summary.ipynb" not in messages
    with pytest.raises(RecordError, match=r"corrupt\.ipynb"):
        load(tmp_path, strict=True)


def test_empty_and_missing_folders(tmp_path):
    frame = load(tmp_path)
    assert frame.empty and "throughput" in frame.columns
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load(tmp_path / "nope")


def test_record_from_notebook_ignores_non_benchmark_notebooks(tmp_path):
    assert record_from_notebook(
        write_record_notebook(tmp_path / "s.ipynb", None, benchmark=False)) is None


def test_raw_iteration_seconds_are_kept_beside_the_sidecar(tmp_path, record):
    from benchlib.records.store import ITERATIONS_KEY, iterations_path, read_iterations, write_sidecar

    seconds = record[ITERATIONS_KEY]["iteration"]
    assert len(seconds) == record["iterations"] == 3 and all(s > 0 for s in seconds)
    notebook = write_record_notebook(tmp_path / "p.ipynb", record)
    assert read_iterations(notebook)["iteration"].tolist() == seconds  # from the notebook
    write_sidecar(notebook, record)
    assert ITERATIONS_KEY not in json.loads((tmp_path / "p.json").read_text())
    assert iterations_path(notebook).is_file()
    frame = read_iterations(notebook)
    assert frame["iteration"].tolist() == pytest.approx(seconds)
    assert ITERATIONS_KEY not in load(tmp_path).columns


def test_three_iterations_give_no_interval_and_a_short_flag(record):
    """A bootstrap over 3 iterations would state a precision they do not have."""
    assert record["throughput_low"] is None and record["throughput_high"] is None
    assert "short" in record["flags"].split(",")  # 3 iterations: too few to trust


def test_ten_iterations_give_an_interval_that_brackets_the_throughput():
    import numpy as np
    import pandas as pd
    import torch

    from benchlib.records.run_interval import throughput_interval
    from benchlib.workloads.result import RunResult

    seconds = 0.1 + np.random.default_rng(0).normal(0, 0.005, 12)
    result = RunResult(device=torch.device("cpu"), iterations=12, warmup=0, samples=12 * 8,
                       wall_time_s=float(seconds.sum()), unit="images/s",
                       per_iteration=pd.DataFrame({"iteration": seconds}))
    interval = throughput_interval(result)
    assert interval["throughput_low"] < result.throughput < interval["throughput_high"]


def test_a_relative_folder_from_a_notebook_folder_says_where_it_is(tmp_path, monkeypatch):
    """`benchlib.load("outputs/demo")` typed in a notebook of notebooks/: the error says where it
    looked and the path that works."""
    import pytest

    from benchlib.records.results import load

    (tmp_path / "outputs" / "demo").mkdir(parents=True)
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    with pytest.raises(FileNotFoundError, match=r"it is at '\.\./outputs/demo': give that"):
        load("outputs/demo")


def test_a_slice_of_the_runs_keeps_the_readable_order(tmp_path):
    """``load(...).sort_values(...).head()``, ``.query()`` and ``analysis.scaling(df).head()``
    are plain frames that still open with the settings that vary and the results (a frame of
    200 columns shown by pandas: its first columns, then '...'), not ``schema_version``."""
    from benchlib import analysis

    from .fakes import campaign

    df = load(campaign(tmp_path / "c"))
    for part in (df.sort_values("throughput").head(), df.query("batch_size > 0"), df[df.index < 5]):
        assert type(part).__name__ == "DataFrame"
        first = list(part.columns[:12])
        assert "throughput" in first and "flags" in first and "schema_version" not in first, first
    scaled = analysis.scaling(df).head()
    assert "speedup" in list(scaled.columns[:10]) and "efficiency" in list(scaled.columns[:10])
    core = [c for c in CORE_COLUMNS if c in df]  # every column in the record's order (--csv)
    assert list(df.every_column().columns[:len(core)]) == core
