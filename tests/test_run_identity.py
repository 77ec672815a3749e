"""Every record says which run it is and when it ran: ``run_id``, ``started_at``, ``ended_at``
(schema 2), from the timed loop, the launcher (rank-merged: one id), failed points and failed
notebooks alike; records of schema 1 load with them missing."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from types import SimpleNamespace

import pandas as pd
import pytest

from benchlib import SCHEMA_HISTORY, SCHEMA_VERSION
from benchlib.kinds.classification.config import ClassificationConfig
from benchlib.kinds.record import make_record
from benchlib.records import schema
from benchlib.records.build import failed_record
from benchlib.records.results import load, record_from_notebook
from benchlib.run import launch
from benchlib.run.merge import merge

from .fakes import write_record_notebook

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$")
RUN_ID = re.compile(r"^[0-9a-f]{32}$")


def _seconds(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@pytest.fixture(scope="module")
def run():
    config = ClassificationConfig(benchmark="train", model="resnet18", image_size=32,
                                  batch_size=4, iterations=3, warmup=1, num_classes=10,
                                  num_workers=0, device="cpu", campaign="unit", cluster="here")
    before = time.time()
    result = launch.run(config)
    after = time.time()
    return config, result, make_record(config, result), before, after


def test_the_schema_grew_a_version_and_says_what_changed():
    assert SCHEMA_VERSION == 2 and "run_id" in SCHEMA_HISTORY[2]
    assert set(schema.added_later()) == {"run_id", "started_at", "ended_at"}
    assert all(schema.column(c).role == "bookkeeping" for c in schema.added_later())


def test_a_run_record_carries_its_id_and_the_timed_loops_start_and_end(run):
    config, result, record, before, after = run
    assert record["schema_version"] == 2
    assert RUN_ID.match(record["run_id"]) and record["run_id"] == result.run_id
    assert ISO_UTC.match(record["started_at"]) and ISO_UTC.match(record["ended_at"])
    started, ended = _seconds(record["started_at"]), _seconds(record["ended_at"])
    assert int(before) <= started <= ended <= after + 1
    # the timed loop's own span (seconds precision), not the launch's
    assert ended - started == pytest.approx(record["wall_time_s"], abs=1.01)
    assert record["run_id"] == make_record(config, result)["run_id"]  # one id per run


def test_each_run_gets_its_own_id(run):
    record = run[2]
    assert launch.stamped(SimpleNamespace(), 1.0, 2.0).run_id != record["run_id"]


def test_a_probe_without_a_timed_loop_takes_the_launchs_span():
    probe = launch.stamped(SimpleNamespace(), 1_800_000_000.0, 1_800_000_005.0)
    assert (probe.started_at, probe.ended_at) == (1_800_000_000.0, 1_800_000_005.0)
    timed = launch.stamped(SimpleNamespace(started_at=3.0, ended_at=4.0), 1.0, 5.0)
    assert (timed.started_at, timed.ended_at) == (3.0, 4.0)


def test_ranks_merge_into_one_span(run):
    _, result, _, _, _ = run
    parts = [{"rank": rank, "result": SimpleNamespace(**{**result.__dict__,
                                                         "started_at": 100.0 + rank,
                                                         "ended_at": 200.0 - rank})}
             for rank in range(2)]
    from benchlib.workloads.result import RunResult
    parts = [{**p, "result": RunResult(**vars(p["result"]))} for p in parts]
    merged = merge(parts)
    assert (merged.started_at, merged.ended_at) == (100.0, 200.0)


def test_a_failed_record_says_when_the_point_started_and_failed():
    record = failed_record({"model": "resnet50"}, "boom", wall_time_s=30.0)
    assert RUN_ID.match(record["run_id"])
    assert _seconds(record["ended_at"]) - _seconds(record["started_at"]) == pytest.approx(30, abs=1)
    assert abs(_seconds(record["ended_at"]) - time.time()) < 5
    unknown = failed_record({}, "job ended", ended=1_800_000_000.0)
    assert unknown["started_at"] == unknown["ended_at"] == "2027-01-15T08:00:00+00:00"


def test_a_failed_notebook_gives_the_same_run_on_every_load(tmp_path):
    path = write_record_notebook(tmp_path / "train-oom.ipynb", error="CUDA out of memory",
                                 parameters={"batch_size": 1024})
    import nbformat
    nb = nbformat.read(path, as_version=4)
    nb.metadata["papermill"].update(start_time="2026-09-26T10:00:00.5",
                                    end_time="2026-09-26T10:01:00.2")
    nbformat.write(nb, str(path))
    first, second = record_from_notebook(path), record_from_notebook(path)
    assert first["run_id"] == second["run_id"] and RUN_ID.match(first["run_id"])
    assert (first["started_at"], first["ended_at"]) == ("2026-09-26T10:00:00+00:00",
                                                        "2026-09-26T10:01:00+00:00")


def test_records_of_schema_1_load_with_the_new_columns_missing(tmp_path, run):
    old = {"schema_version": 1, "campaign": "old", "cluster": "c1", "gpu": "H100",
           "benchmark": "train", "model": "resnet50", "dataset": "synthetic", "batch_size": 32,
           "precision": "fp32", "num_devices": 1, "num_nodes": 1, "num_workers": 0,
           "throughput": 100.0, "unit": "images/s", "status": "ok", "error": ""}
    write_record_notebook(tmp_path / "only" / "old.ipynb", old)
    frame = load(tmp_path / "only")
    assert frame[["run_id", "started_at", "ended_at"]].isna().all().all()
    _, _, record, _, _ = run
    write_record_notebook(tmp_path / "mixed" / "old.ipynb", old)
    write_record_notebook(tmp_path / "mixed" / "new.ipynb", record)
    mixed = load(tmp_path / "mixed").set_index("campaign")
    assert pd.isna(mixed.loc["old", "run_id"]) and mixed.loc["unit", "run_id"] == record["run_id"]
    stamp = datetime.fromisoformat(mixed.loc["unit", "started_at"])
    assert stamp.tzinfo == timezone.utc
