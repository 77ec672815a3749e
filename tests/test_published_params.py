"""params/published/: each file runs the configuration of a shipped published figure, so that
`benchlib check` gives its runs a verdict on the GPUs the figure names (not "no reference")."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from benchlib.analysis import references
from benchlib.inputs.params import load_sweep
from benchlib.kinds.record import make_record
from benchlib.registry import notebook_configs
from benchlib.workloads.result import RunResult

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "params" / "published").glob("*.yaml"))
H100 = {"gpu": "H100", "device_name": "NVIDIA H100 80GB HBM3"}


def _record(config) -> dict:
    """The record a run of ``config`` on an H100 would write (a fixed 0.1 s per iteration)."""
    result = RunResult(device=torch.device("cpu"), iterations=200, warmup=20,
                       samples=200 * config.global_batch_size, wall_time_s=20.0,
                       unit=("tokens/s" if config.benchmark.startswith("lm") else "images/s"),
                       per_iteration=pd.DataFrame({"iteration": [0.1] * 200}),
                       num_devices=config.num_devices)
    return {**make_record(config, result, env={}), **H100, "contended": False, "flags": ""}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_each_point_meets_a_published_reference(path):
    sweep = load_sweep(str(path))
    for point in sweep.points:
        config_class, fixed = notebook_configs()[point.notebook]
        config = config_class(**{**point.parameters, **fixed})
        checked = references.check(pd.DataFrame([_record(config)]), references.shipped())
        throughput = checked[checked["metric"] == "throughput"]
        assert len(throughput) == 1, path.name
        assert throughput["verdict"].iloc[0] != "no reference", (path.name, point.name)
        assert throughput["reference"].iloc[0].split()[0] in ("Lambda", "llm.c"), path.name


def test_there_is_one_for_each_kind_of_published_figure():
    assert {p.stem for p in FILES} == {"lambda-resnet50-tf32", "lambda-resnet50-fp16",
                                       "llmc-gpt2"}
