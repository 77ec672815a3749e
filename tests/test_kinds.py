"""Benchmark kinds as registered objects: the registry loads each lazily, one make_record
serves every kind (probes included), and code outside the kinds does not ask which kind it has."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pandas as pd
import pytest
import torch

from benchlib import registry
from benchlib.inputs.probe_config import AllReduceConfig, NodeProbeConfig
from benchlib.kinds import Kind
from benchlib.records.build import make_record
from benchlib.workloads.collectives import AllReduceResult
from benchlib.workloads.node_probe import NodeProbeResult

from .conftest import ROOT

#: Files that build records, count FLOPs, flag runs and assemble notebooks for every kind.
KIND_BLIND = ("benchlib/records/build.py", "benchlib/records/flops.py",
              "benchlib/records/flags.py", "benchlib/publish/benchmark_notebook/run.py",
              "tools/make_notebooks.py")
DISPATCH = re.compile(r'isinstance\(.*Config|benchmark ==|benchmark in\b|startswith\("probe')


@pytest.mark.parametrize("path", KIND_BLIND)
def test_code_outside_the_kinds_does_not_ask_which_kind_it_has(path):
    lines = (ROOT / path).read_text().splitlines()
    assert [line for line in lines if DISPATCH.search(line)] == []


def test_every_entry_loads_a_kind_whose_run_function_exists():
    for entry in registry.BENCHMARKS:
        kind = entry.kind
        assert isinstance(kind, Kind), entry.notebook
        module, function = kind.run.split(":")
        assert callable(getattr(importlib.import_module(module), function)), kind.run
    assert registry.kind_named("probe_node").timed_loop is False
    assert registry.kind_named("train").timed_loop is True
    assert registry.kind_named("not_a_benchmark") is None


def test_the_registry_imports_no_kind_until_asked():
    code = ("import sys, benchlib.registry, benchlib.records.results; "
            "print(sorted(m for m in sys.modules if m.startswith('benchlib.kinds') or m == 'torch'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _node_result() -> NodeProbeResult:
    table = pd.DataFrame([{"probe": "matmul", "setting": "fp32", "value": 1.5, "unit": "TFLOP/s",
                           "note": ""}])
    return NodeProbeResult(device=torch.device("cpu"), table=table,
                           decode=pd.DataFrame(columns=["workers", "images_per_s"]))


def test_probe_records_go_through_the_one_make_record():
    config = NodeProbeConfig(device="cpu", precisions=["fp32"], iterations=2)
    record = make_record(config, _node_result(), {"env_torch": "x"},
                         allreduce={"throughput": 3.0, "num_devices": 2})
    assert record["benchmark"] == "probe_node" and record["throughput"] == 1.5
    assert record["status"] == "ok" and record["flags"] == ""  # 2 iterations: not "short"
    assert record["throughput_low"] is None and "throughput_high" in record
    assert record["allreduce_busbw_GBps"] == 3.0 and record["env_torch"] == "x"
    assert "flops_per_sample" not in record and "schema_version" in record


def test_allreduce_record_has_flags_and_interval_columns():
    table = pd.DataFrame({"size_bytes": [1024, 2048], "size": ["1KiB", "2KiB"], "count": [256, 512],
                          "time_us": [10.0, 12.0], "algbw_GBps": [0.1, 0.17],
                          "busbw_GBps": [0.1, 0.17]})
    result = AllReduceResult(device=torch.device("cpu"), world_size=2, table=table, num_devices=2)
    record = make_record(AllReduceConfig(device="cpu", iterations=3), result, {})
    assert record["throughput"] == 0.17 and record["busbw_2KiB"] == 0.17
    assert record["flags"] == "" and record["throughput_low"] is None
    assert record["num_devices"] == 2 and record["unit"] == "GB/s (bus)"
