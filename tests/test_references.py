"""References with tolerances: the file's validation, matching, check verdicts, the shipped
expectations and ``benchlib check`` (exit codes, JUnit XML)."""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from benchlib.analysis import reference_file, references
from benchlib.cli import main
from benchlib.errors import InputError
from tests.fakes import write_record_notebook

ROOT = Path(__file__).resolve().parent.parent

REFS = """\
references:
  - match: {gpu: H100, benchmark: train, model: resnet50, precision: amp_bf16, batch_size: 256}
    metric: throughput
    value: 2790
    lower: -0.05
    upper: null
    unit: images/s
    source: a published table
  - match: {gpu: H100, benchmark: train, model: '*', precision: '*', batch_size: '*'}
    metric: throughput
    value: 100
    lower: -0.5
    upper: 0.5
    unit: images/s
    source: a loose floor for any H100 training run
  - match: {benchmark: probe_node, device_name: {regex: 'H100 80GB HBM3|H100 SXM'}}
    metric: matmul_tflops_fp16
    value: 989.4
    lower: -0.5
    unit: TFLOP/s
    source: datasheet
"""

RUN = {"schema_version": 1, "campaign": "acc", "cluster": "c", "host": "n1", "gpu": "H100",
       "device_name": "NVIDIA H100 80GB HBM3", "benchmark": "train", "model": "resnet50",
       "precision": "amp_bf16", "batch_size": 256, "num_devices": 1, "num_nodes": 1,
       "unit": "images/s", "status": "ok", "error": "", "iterations": 50, "wall_time_s": 10.0}


def _refs(tmp_path: Path, text: str = REFS) -> Path:
    path = tmp_path / "refs.yaml"
    path.write_text(text)
    return path


def _frame(*records: dict) -> pd.DataFrame:
    return pd.DataFrame([{**RUN, "source": f"/c/run{i}.ipynb", **r} for i, r in enumerate(records)])


@pytest.mark.parametrize(("text", "named"), [
    (REFS.replace("    unit: TFLOP/s\n", "    unit: TFLOP/s\n    tolerance: 3\n"),
     "references.2.tolerance: unknown parameter"),
    (REFS.replace("value: 2790", "value: fast"), "references.0.value"),
    (REFS.replace("lower: -0.05", "lower: 0.05"), "references.0.lower"),
    (REFS.replace("regex: 'H100 80GB HBM3|H100 SXM'", "regex: '(H100'"), "references.2.match"),
    (REFS.replace("    source: datasheet\n", ""), "references.2.source"),
    ("- just a list\n", "expected a mapping"),
])
def test_bad_references_file_names_the_field(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(InputError, match=named.replace(".", r"\.").replace("(", r"\(")):
        references.load_references(_refs(tmp_path, text))


def test_most_specific_reference_wins_per_metric(tmp_path: Path) -> None:
    refs = references.load_references(_refs(tmp_path))
    checked = references.check(_frame({"throughput": 2700.0},
                                       {"batch_size": 64, "throughput": 2000.0}), refs)
    by_run = checked.set_index("run")
    assert by_run.loc["run0", "reference_index"] == 1  # 5 keys beat the '*' reference's 2
    assert by_run.loc["run0", "verdict"] == "pass"
    assert by_run.loc["run1", "reference_index"] == 2  # batch 64: only the loose one matches
    assert by_run.loc["run1", "verdict"] == "fail"     # 2000 > 100 * 1.5
    assert "above 150" in by_run.loc["run1", "message"]


def test_verdicts_bounds_and_slowdown(tmp_path: Path) -> None:
    refs = references.load_references(_refs(tmp_path))
    checked = references.check(_frame(
        {"throughput": 2651.0},                       # 2790 * 0.95 = 2650.5: passes
        {"throughput": 2650.0},                       # just below: fails
        {"gpu": "A100", "throughput": 900.0},         # nothing matches
        {"status": "failed", "error": "CUDA out of memory", "throughput": None},
        {"throughput": None},                         # matched, nothing measured
    ), refs)
    verdicts = checked.set_index("run")["verdict"].to_dict()
    assert verdicts == {"run0": "pass", "run1": "fail", "run2": "no reference",
                        "run3": "run failed", "run4": "no measurement"}
    fail = checked.set_index("run").loc["run1"]
    assert fail["low"] == pytest.approx(2650.5)
    assert "1.05x slower than expected" in fail["message"] and "a published table" in fail["message"]
    assert list(references.failed(checked)["run"]) == ["run1", "run3"]


def test_match_values_lists_regex_booleans_and_ties() -> None:
    refs = reference_file.parse_references({"references": [
        {"match": {"precision": ["amp_fp16", "amp_bf16"], "channels_last": True},
         "metric": "throughput", "unit": "images/s", "value": 10, "source": "a"},
        {"match": {"device_name": {"regex": "a100-sxm4"}, "channels_last": True},
         "metric": "throughput", "unit": "images/s", "value": 20, "source": "b"},
    ]})
    rows = _frame({"channels_last": True, "throughput": 10.0},
                  {"channels_last": False, "throughput": 10.0},
                  {"device_name": "NVIDIA A100-SXM4-80GB", "channels_last": True, "precision": "tf32",
                   "throughput": 20.0},
                  {"device_name": "NVIDIA A100-SXM4-80GB", "channels_last": True, "throughput": 10.0})
    checked = references.check(rows, refs).set_index("run")
    assert checked.loc["run0", "reference_index"] == 1
    assert checked.loc["run1", "verdict"] == "no reference"   # False is not True
    assert checked.loc["run2", "reference_index"] == 2        # regex ignoring case; tf32 not listed
    # both match run3 with 2 keys each: the first in the file wins and the note says so
    assert checked.loc["run3", "reference_index"] == 1
    assert "equally specific" in checked.loc["run3", "note"]


def test_shipped_expectations_have_sources_and_match_like_for_like() -> None:
    refs = references.shipped()
    listed = references.table(refs)
    assert listed["source"].str.len().min() > 20
    assert {938.0, 2470.0, 1753.0, 2616.0, 13856.0, 20728.0, 1066.0, 1582.0, 370.0, 3745000.0,
            1748000.0} <= set(listed["value"])
    dle = {"gpu": "A100", "device_name": "NVIDIA A100-SXM4-80GB", "model": "resnet50",
           "image_size": 224, "dataset": "real", "precision": "tf32", "channels_last": False,
           "throughput": 420.0}
    checked = references.check(_frame(
        dle,
        {**dle, "batch_size": 128},                                   # other batch
        {**dle, "device_name": "NVIDIA A100-SXM4-40GB"},              # other variant
        {**dle, "precision": "amp_fp16", "channels_last": True, "throughput": 2400.0},
        {"benchmark": "probe_node", "model": "node", "precision": "", "batch_size": None,
         "matmul_tflops_fp16": 700.0, "matmul_tflops_fp32": 20.0},
    ), refs).set_index(["run", "metric"], drop=False)
    first = checked.loc[("run0", "throughput")]
    assert first["expected"] == 938 and first["verdict"] == "fail"
    assert "2.23x slower than expected" in first["message"]
    assert "DeepLearningExamples" in first["reference_source"]
    assert checked.loc["run1", "verdict"].tolist() == ["no reference"]
    assert checked.loc["run2", "verdict"].tolist() == ["no reference"]
    assert checked.loc[("run3", "throughput"), "expected"] == 2470
    assert checked.loc[("run3", "throughput"), "verdict"] == "pass"
    probe = checked.loc["run4"].set_index("metric")
    assert probe.loc["matmul_tflops_fp16", "expected"] == 989.4       # SXM5, not PCIe's 756
    assert probe.loc["matmul_tflops_fp16", "verdict"] == "pass"       # 700 >= 494.7
    assert probe.loc["matmul_tflops_fp32", "verdict"] == "fail"       # 20 < 33.5
    assert probe.loc["matmul_tflops_tf32", "verdict"] == "no measurement"


def test_shipped_file_is_package_data() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    line = re.search(r"^\[tool\.setuptools\.package-data\]\nbenchlib = \[(.*)\]$", text, re.M)
    patterns = re.findall(r'"([^"]+)"', line.group(1))
    assert any(Path("reference", references.SHIPPED_FILE).match(p) for p in patterns)


def _campaign(root: Path, *throughputs: float) -> Path:
    for index, value in enumerate(throughputs):
        write_record_notebook(root / f"train-{index}.ipynb", {**RUN, "throughput": value})
    return root


def test_cli_check_exit_codes_and_junit(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    refs = _refs(tmp_path)
    good = _campaign(tmp_path / "good", 2800.0, 2790.0)
    assert main(["check", str(good), "--references", str(refs)]) == 0
    assert "2 pass" in capsys.readouterr().out

    bad = _campaign(tmp_path / "bad", 2800.0, 1400.0)
    report = tmp_path / "check.xml"
    assert main(["check", str(bad), "--references", str(refs), "--junit", str(report)]) == 1
    out = " ".join(capsys.readouterr().out.split())  # wrapped lines read as one
    assert "FAIL train-1" in out and "1.99x slower" in out and "a published table" in out
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    failures = suite.findall("testcase/failure")
    assert len(failures) == 1 and "below 2650" in failures[0].get("message")

    broken = _refs(tmp_path, REFS.replace("value: 2790", "value: [1]"))
    assert main(["check", str(good), "--references", str(broken)]) == 2
    assert "references.0.value" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "missing"), "--references", str(refs)]) == 2


def test_cli_check_defaults_to_shipped_references(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    record = {**RUN, "gpu": "H100", "image_size": 224, "compile": "none", "throughput": 1300.0,
              "batch_size": 1280, "dataset": "synthetic", "precision": "amp_fp16",
              "channels_last": False}
    write_record_notebook(tmp_path / "c" / "train-0.ipynb", record)
    assert main(["check", str(tmp_path / "c")]) == 1
    out = capsys.readouterr().out
    assert "Lambda ResNet-50 H100 SXM5 AMP fp16 (1 GPU, batch 1280" in out
    assert "2.01x slower" in out                                      # 2616 / 1300


def test_cli_check_gives_no_verdict_from_a_contended_run(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    """A contended run that fails (or passes) its reference is unreliable: exit 3, saying why
    and how to re-run; a reliable failure beside it still exits 1."""
    refs = _refs(tmp_path)
    busy = tmp_path / "busy"
    write_record_notebook(busy / "train-0.ipynb", {**RUN, "throughput": 2800.0})
    write_record_notebook(busy / "train-1.ipynb", {**RUN, "throughput": 1400.0,
                                                   "contended": True, "flags": "contended"})
    assert main(["check", str(busy), "--references", str(refs)]) == 3
    out = capsys.readouterr().out
    assert "FAIL" not in out and "CANNOT CERTIFY train-1: the run was contended" in out
    assert "idle node" in out
    write_record_notebook(busy / "train-2.ipynb", {**RUN, "throughput": 1400.0})
    assert main(["check", str(busy), "--references", str(refs)]) == 1


@pytest.mark.parametrize("flag", ["contended", "throttled", ""])
def test_a_run_at_zero_fails_its_reference_whatever_its_flags(tmp_path: Path, flag: str,
                                                              capsys: pytest.CaptureFixture) -> None:
    """Contention or throttling can slow a run, not stop it: 0 is a failure, never "cannot
    certify"; so is 0 against a reference that has an upper bound only."""
    stalled = tmp_path / "stalled"
    write_record_notebook(stalled / "train-0.ipynb", {**RUN, "throughput": 0.0, "flags": flag,
                                                      "contended": flag == "contended"})
    assert main(["check", str(stalled), "--references", str(_refs(tmp_path))]) == 1
    out = capsys.readouterr().out
    assert "FAIL train-0: throughput 0" in out and "CANNOT CERTIFY" not in out
    ceiling = reference_file.parse_references({"references": [
        {"match": {"gpu": "H100"}, "metric": "throughput", "unit": "images/s", "value": 10, "lower": None,
         "upper": 0.5, "source": "a ceiling only"}]})
    row = references.check(_frame({"throughput": 0.0, "flags": flag}), ceiling).iloc[0]
    assert row["verdict"] == "fail" and "did no work" in row["message"]


def test_a_backtracking_regex_is_bad_input_not_a_hang(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    # ^(a|a)*$ against 40 a's and a b backtracks 2^40 times with Python's re: check would spin
    refs = reference_file.parse_references({"references": [
        {"match": {"gpu": {"regex": "^(a|a)*$"}}, "metric": "throughput", "unit": "images/s", "value": 10,
         "source": "a hostile file"}]})
    rows = _frame({"gpu": "a" * 40 + "b", "throughput": 10.0})
    started = time.monotonic()
    with pytest.raises(InputError, match=r"backtracks without end"):
        references.check(rows, refs)
    assert time.monotonic() - started < 60  # the regex module's timeout, not 2^40 steps
    assert references.check(_frame({"gpu": "aaaa", "throughput": 10.0}), refs)[
        "reference_index"].tolist() == [1]


def test_lambda_and_llmc_references_match_their_configurations_only() -> None:
    """Lambda's NCHW A100 AMP figure (36 % below NVIDIA's channels_last one) never judges a
    channels_last run; llm.c's 8 x H100 GPT-2 figure judges an 8-GPU gpt2 run, not a 1-GPU one."""
    refs = references.shipped()
    a100 = {"gpu": "A100", "device_name": "NVIDIA A100-SXM4-80GB", "benchmark": "train",
            "model": "resnet50", "image_size": 224, "num_devices": 1, "batch_size": 1280,
            "dataset": "synthetic", "precision": "amp_fp16", "channels_last": False,
            "throughput": 1500.0}
    lm = {"gpu": "H100", "device_name": "NVIDIA H100 80GB HBM3", "benchmark": "lm_train",
          "lm_size": "gpt2", "sequence_length": 1024, "num_devices": 8, "batch_size": 64,
          "precision": "amp_bf16", "unit": "tokens/s", "throughput": 1_500_000.0}
    checked = references.check(_frame(a100, {**a100, "channels_last": True}, lm,
                                      {**lm, "num_devices": 1}), refs).set_index("run")
    assert checked.loc["run0", "expected"] == 1582 and checked.loc["run0", "verdict"] == "pass"
    assert "36 % below" in checked.loc["run0", "reference_source"]
    assert checked.loc["run1", "verdict"] == "no reference"
    assert checked.loc["run2", "expected"] == 3_745_000
    assert checked.loc["run2", "verdict"] == "fail"                    # below half of llm.c
    assert checked.loc["run3", "verdict"] == "no reference"


def test_nothing_judged_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A campaign no reference matches is not a pass: a CI gate on it must not go green."""
    refs = _refs(tmp_path, REFS.replace("gpu: H100", "gpu: B200"))
    good = _campaign(tmp_path / "good", 2800.0, 2790.0)
    assert main(["check", str(good), "--references", str(refs)]) == 3
    out = capsys.readouterr().out
    assert "2 no reference" in out and "NOTHING CERTIFIED: no run was judged" in out


@pytest.mark.parametrize(("change", "said"), [
    ({"metric": "thruput"}, "references.0.metric: bad value 'thruput': not a record column"),
    ({"metric": "batch_size"}, "a configuration column, not a numeric measurement"),
    ({"match": {"gpux": "cpu"}}, "not a record column: 'gpux'"),
    ({"metric": "matmul_tflops_fp16", "unit": "GB/s"}, "unit 'GB/s': matmul_tflops_fp16 is in TFLOP/s"),
])
def test_a_reference_names_only_record_columns_and_their_units(change: dict, said: str) -> None:
    entry = {"match": {"benchmark": "train"}, "metric": "throughput", "unit": "images/s", "value": 10,
             "source": "a table", **change}
    with pytest.raises(InputError) as raised:
        reference_file.parse_references({"references": [entry]}, "r.yaml")
    assert said in str(raised.value)


def test_a_throughput_reference_judges_only_runs_in_its_unit() -> None:
    refs = reference_file.parse_references({"references": [
        {"match": {"benchmark": "train"}, "metric": "throughput", "value": 100,
         "unit": "tokens/s", "lower": -0.1, "source": "a table"},
        {"match": {"benchmark": "probe_allreduce"}, "metric": "throughput", "value": 100,
         "unit": "GB/s", "lower": -0.1, "source": "nccl-tests"}]})
    checked = references.check(_frame({"throughput": 10.0},
                                      {"benchmark": "probe_allreduce", "unit": "GB/s (bus)",
                                       "throughput": 95.0}), refs).set_index("run")
    assert checked.loc["run0", "verdict"] == "no reference"   # images/s is not tokens/s
    assert checked.loc["run1", "verdict"] == "pass"           # GB/s takes GB/s (bus)


def test_the_shipped_all_reduce_reference_applies_to_an_all_reduce_record() -> None:
    record = {"benchmark": "probe_allreduce", "gpu": "H100", "num_nodes": 1, "num_devices": 8,
              "precision": "fp32", "unit": "GB/s (bus)", "throughput": 360.0}
    checked = references.check(_frame(record), references.shipped())
    assert checked["expected"].tolist() == [370] and checked["verdict"].tolist() == ["pass"]


def test_a_time_reference_is_judged_as_a_time() -> None:
    """Below a time's lower bound is faster, not slower; a time of 0 is a time, not a run that
    did no work; a throughput figure must say its unit; samples per joule match images/J."""
    refs = reference_file.parse_references({"references": [
        {"match": {"benchmark": "train"}, "metric": "time_iteration_s", "value": 100,
         "lower": -0.5, "unit": "s", "source": "a slow table"},
        {"match": {"benchmark": "train"}, "metric": "samples_per_joule", "value": 10,
         "lower": -0.5, "unit": "images/J", "source": "an energy table"}]})
    checked = references.check(_frame({"time_iteration_s": 0.18, "samples_per_joule": 9.0}), refs)
    timed = checked.set_index("metric").loc["time_iteration_s"]
    assert timed["verdict"] == "fail" and "slower" not in timed["message"]
    assert "0.0018x the reference" in timed["message"]
    assert checked.set_index("metric").loc["samples_per_joule", "verdict"] == "pass"
    with pytest.raises(InputError, match="unit: give the unit of throughput"):
        reference_file.parse_references({"references": [
            {"match": {"benchmark": "train"}, "metric": "throughput", "value": 1000,
             "source": "a table"}]})


def test_a_bad_pattern_is_one_error_naming_it() -> None:
    with pytest.raises(InputError) as raised:
        reference_file.parse_references({"references": [
            {"match": {"gpu": {"regex": "(unclosed"}}, "metric": "throughput", "value": 10,
             "unit": "images/s", "source": "x"}]}, "r.yaml")
    assert str(raised.value).count("\n") == 0
    assert "gpu: not a regular expression: missing )" in str(raised.value)


def test_a_number_written_as_text_matches_by_value() -> None:
    refs = reference_file.parse_references({"references": [
        {"match": {"batch_size": ["8", 256]}, "metric": "throughput", "unit": "images/s",
         "value": 10, "source": "a table"}]})
    checked = references.check(_frame({"batch_size": 8.0, "throughput": 10.0},
                                      {"batch_size": 256, "throughput": 10.0},
                                      {"batch_size": 16, "throughput": 10.0}), refs)
    assert checked["verdict"].tolist() == ["pass", "pass", "no reference"]
