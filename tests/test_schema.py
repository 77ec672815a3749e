"""The record schema is the one source of truth: documented, complete, and used by the loader."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from benchlib.analysis import comparisons
from benchlib.kinds.record import make_record
from benchlib.records import results, schema, store

from .conftest import ROOT


def test_docs_record_md_is_generated_from_the_schema():
    assert (ROOT / "docs" / "record.md").read_text() == schema.markdown(), (
        "docs/record.md is stale: python -m benchlib.records.schema > docs/record.md")


def test_families_match_their_members_only():
    assert schema.column("time_forward_s").name == "time_{phase}_s"
    assert schema.column("time_forward_p95_s").name == "time_{phase}_p95_s"
    assert schema.column("env_var_nccl_debug").role == "environment"
    assert schema.column("matmul_tflops_bf16").unit == "TFLOP/s"
    assert schema.column("decode_images_per_s_4w").role == "measurement"
    assert schema.column("no_such_column") is None


def test_loader_and_analysis_follow_the_schema(tmp_path: Path):
    from .fakes import write_record_notebook

    write_record_notebook(tmp_path / "a.ipynb", {"schema_version": 1, "status": "ok",
                                                 "batch_size": 8.0, "throughput": 1.0,
                                                 "peak_memory_bytes": 10})
    frame = results.load(tmp_path)
    assert str(frame["batch_size"].dtype) == "Int64"  # a count column
    assert list(frame.every_column().columns[:3]) == ["schema_version", "batch_size", "throughput"]
    table = pd.DataFrame({"model": ["a"], "throughput": [1.0], "contended": [True],
                          "contention_cpu_share": [0.3], "env_torch": ["2"], "flags": [""],
                          "my_custom_setting": ["x"], "megavoxels_per_s": [1.0]})
    # measurements, provenance and bookkeeping never make a configuration; unknown columns do
    assert comparisons.config_columns(table) == ["model", "my_custom_setting"]


def test_every_column_of_a_real_record_is_documented(tmp_path: Path):
    from benchlib.kinds.classification import workload as classification
    from benchlib.kinds.classification.config import ClassificationConfig
    from benchlib.measure.environment import capture

    config = ClassificationConfig(benchmark="smooth_inference", model="resnet18", image_size=32,
                                  batch_size=2, iterations=2, warmup=0, num_classes=10,
                                  num_workers=0, device="cpu", noise_samples=2)
    result = classification.run(config)
    record = make_record(config, result, capture(result.device))
    record.pop(store.ITERATIONS_KEY)
    assert [c for c in record if schema.column(c) is None] == []  # every column documented


def test_the_schema_version_and_the_package_version_live_in_one_place():
    from importlib.metadata import version

    import benchlib
    from benchlib.records.results import KNOWN_SCHEMA_VERSIONS

    assert max(benchlib.SCHEMA_HISTORY) == benchlib.SCHEMA_VERSION
    assert set(benchlib.SCHEMA_HISTORY) == KNOWN_SCHEMA_VERSIONS
    assert version("benchlib") == benchlib.__version__  # pyproject.toml reads it from benchlib
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()
    literal = re.compile(r"""schema_version["']?\s*[=:]\s*\d""")
    written = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "benchlib").rglob("*.py"))
               for n, line in enumerate(p.read_text().splitlines(), 1) if literal.search(line)]
    assert written == []


def test_column_roles_come_from_the_schema():
    assert schema.describing()[:2] == ("benchmark", "model")
    assert schema.factors()[:3] == ("dataset", "batch_size", "gpu")
    assert set(schema.factors()) <= set(schema.names(role="configuration"))
    assert "status" in schema.said_once() and "throughput" not in schema.said_once()
