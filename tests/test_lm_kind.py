"""The language model kind registered: its notebooks run through the sweep on the CPU and give
records in tokens/s with model FLOPs per token, so MFU and the pages work as for every kind."""

from __future__ import annotations

import textwrap

import pytest

from benchlib import kinds, registry
from benchlib.execute.sweep import run_sweep
from benchlib.inputs.params import load_sweep
from benchlib.kinds.language_model.config import LanguageModelConfig
from benchlib.kinds.language_model.model import SIZES
from benchlib.records.results import load
from benchlib.records.schema import column


def test_lm_notebooks_are_registered_with_the_language_model_kind():
    for name in ("lm_train", "lm_inference"):
        entry = registry.by_notebook(name)
        assert entry.config is LanguageModelConfig and entry.benchmark == name
        assert kinds.KINDS[entry.kind].run == "benchlib.kinds.language_model.workload:run"
    config = LanguageModelConfig(benchmark="lm_inference", size="gpt2", sequence_length=1024)
    per_token = kinds.kind_of(config).flops_per_sample(config)
    assert per_token == SIZES["gpt2"].flops_per_token(1024, train=False)
    train = kinds.kind_of(config.model_copy(update={"benchmark": "lm_train"}))
    assert train.flops_per_sample(config.model_copy(update={"benchmark": "lm_train"})) \
        == pytest.approx(3 * per_token)


def test_lm_columns_are_described_by_the_schema():
    for name in ("lm_size", "lm_layers", "lm_heads", "lm_width", "lm_vocab",
                   "sequence_length", "parameters"):
        assert column(name) is not None and column(name).name == name, name


@pytest.mark.slow
def test_lm_train_notebook_runs_through_the_sweep_on_the_cpu(tmp_path):
    spec = tmp_path / "lm.yaml"
    spec.write_text(textwrap.dedent("""
        campaign: lm
        notebook: lm_train
        base: {size: tiny, sequence_length: 32, batch_size: 2, iterations: 3, warmup: 1,
               device: cpu, num_workers: 0}
    """))
    outcomes = run_sweep(load_sweep(spec), tmp_path / "outputs", progress=False)
    assert len(outcomes) == 1 and outcomes[0].error == ""
    frame = load(tmp_path / "outputs" / "lm")
    row = frame.iloc[0]
    assert row["status"] == "ok" and row["benchmark"] == "lm_train" and row["unit"] == "tokens/s"
    assert row["model"] == "transformer" and row["lm_size"] == "tiny"
    assert row["samples"] == 3 * 2 * 32 and row["throughput"] > 0
    assert row["parameters"] == SIZES["tiny"].parameters and row["sequence_length"] == 32
    assert row["flops_per_sample"] == pytest.approx(SIZES["tiny"].flops_per_token(32, train=True))
    assert row["achieved_tflops"] == pytest.approx(row["flops_per_sample"] * row["throughput"]
                                                   / 1e12)
    assert row["time_backward_s"] > 0 and "short" in row["flags"]  # 3 iterations: short


def test_shipped_nanogpt_reference_matches_a_like_for_like_lm_train_run():
    import pandas as pd

    from benchlib.analysis import references

    run = {"status": "ok", "source": "/c/run0.ipynb", "gpu": "A100",
           "device_name": "NVIDIA A100-SXM4-40GB", "benchmark": "lm_train", "model": "transformer",
           "lm_size": "gpt2", "sequence_length": 1024, "num_devices": 8, "batch_size": 12,
           "precision": "amp_bf16", "compile": "default", "throughput": 700_000.0}
    other = {**run, "source": "/c/run1.ipynb", "device_name": "NVIDIA A100-SXM4-80GB"}
    checked = references.check(pd.DataFrame([run, other]), references.shipped())
    ours = checked[checked["reference_source"].fillna("").str.contains("nanoGPT")]
    assert len(ours) == 1 and ours["expected"].iloc[0] == 853_000
    assert ours["verdict"].iloc[0] == "pass"  # within the -25 % bound
