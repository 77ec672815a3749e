"""What the CLI and the loader show of records: no terminal control characters from record text,
no notes about the records benchlib writes itself, one exit code and one message per bad input."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd
import pytest
import torch

from benchlib import registry
from benchlib.cli import main
from benchlib.kinds.probes.config import AllReduceConfig, NodeProbeConfig
from benchlib.kinds.probes.workload import NodeProbeResult
from benchlib.kinds.probes.workload_collectives import AllReduceResult
from benchlib.kinds.record import make_record
from benchlib.records import values
from benchlib.records.build import failed_record
from benchlib.records.results import scan
from benchlib.records.store import ITERATIONS_KEY, write_sidecar

from .fakes import campaign, write_record_notebook

HOSTILE = "\x1b[31mRED\x01ctl\x9b2J\x1b]0;title\x07"
GOOD = {"schema_version": 1, "campaign": "fake", "cluster": "c1", "gpu": "H100",
        "benchmark": "train", "model": "resnet50", "precision": "amp_bf16", "num_nodes": 1,
        "num_workers": 8, "unit": "images/s", "status": "ok", "error": "", "num_devices": 1,
        "dataset": "synthetic", "batch_size": 32, "throughput": 2400.0,
        "time_iteration_s": 0.0133}


def _controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 32 and c not in "\t\n") or 0x7f <= ord(c) <= 0x9f]


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A campaign with a lone sidecar whose text columns hold terminal escapes."""
    folder = campaign(tmp_path / "fake")
    (folder / "evil.json").write_text(json.dumps({**GOOD, "gpu": HOSTILE, "host": HOSTILE,
                                                  "model": "resnet50\x1b[2J"}))
    return folder


def test_clean_text_removes_escapes_and_replaces_controls():
    assert values.clean_text("\x1b[31mRED\x1b[0m") == "RED"
    assert values.clean_text("a\x01b\x7fc\x85") == "a\ufffdb\ufffdc\ufffd"
    assert values.clean_text("tab\tnew\nline café") == "tab\tnew\nline café"
    assert values.clean_text("\x1b]0;title\x07x\x1b(By\x9b1mz") == "xyz"


@pytest.mark.parametrize("command", ["results", "check", "compare", "status"])
def test_no_command_writes_a_record_control_character(hostile, tmp_path, capsys, command):
    refs = tmp_path / "refs.yaml"  # judges the hostile run, so check shows its text
    refs.write_text("references:\n  - {match: {model: '*'}, metric: throughput, value: 2400, "
                    "unit: images/s, source: a table}\n")
    args = {"results": [str(hostile)], "check": [str(hostile), "--references", str(refs)],
            "status": [str(hostile)],
            "compare": [str(campaign(tmp_path / "base")), str(hostile)]}[command]
    main([command, *args])
    out = capsys.readouterr()
    assert "RED" in out.out + out.err
    assert _controls(out.out + out.err) == []


def test_compare_warns_of_another_gpu_without_control_characters(hostile, tmp_path, capsys):
    base = tmp_path / "base"
    base.mkdir()
    (base / "one.json").write_text(json.dumps(GOOD))
    new = tmp_path / "new"
    new.mkdir()
    (new / "one.json").write_text(json.dumps({**GOOD, "gpu": HOSTILE}))
    main(["compare", str(base), str(new)])
    out = capsys.readouterr()
    assert "GPU model differs" in out.out + out.err and "RED" in out.out + out.err
    assert _controls(out.out + out.err) == []


def test_loaded_text_is_clean_in_the_table(hostile):
    frame = scan(hostile).frame
    text = "".join(str(v) for v in frame.drop(columns="source").to_numpy().ravel())
    assert "RED\ufffdctl" in text and _controls(text) == []


def _parameters(entry: registry.Benchmark) -> dict:
    """A point's parameters as a sweep gives them: every field with a default, and the fixed."""
    fields = entry.config.model_fields
    found = {name: field.get_default(call_default_factory=True)
             for name, field in fields.items() if not field.is_required()}
    return {**found, **entry.fixed}


def _ok_records() -> list[dict]:
    node = NodeProbeResult(device=torch.device("cpu"), decode=pd.DataFrame(
        columns=["workers", "images_per_s"]), table=pd.DataFrame(
        [{"probe": "matmul", "setting": "fp32", "value": 1.5, "unit": "TFLOP/s", "note": ""}]))
    table = pd.DataFrame({"size_bytes": [1024], "size": ["1KiB"], "count": [256],
                          "time_us": [10.0], "algbw_GBps": [0.1], "busbw_GBps": [0.1]})
    reduce = AllReduceResult(device=torch.device("cpu"), world_size=2, table=table,
                             num_devices=2)
    return [make_record(NodeProbeConfig(device="cpu", precisions=["fp32"], iterations=2), node,
                        {"env_torch": "x"}, allreduce={"throughput": 3.0, "num_devices": 2}),
            make_record(AllReduceConfig(device="cpu", iterations=3), reduce, {})]


def test_every_record_benchlib_writes_loads_without_a_note(tmp_path):
    folder = campaign(tmp_path / "own")  # ok runs and a failed notebook
    for index, record in enumerate(_ok_records()):
        record.pop(ITERATIONS_KEY, None)
        write_record_notebook(folder / f"probe-{index}.ipynb", record)
    for entry in registry.shipped():
        parameters = _parameters(entry)
        iterations = {"auto", "epoch", parameters.get("iterations")} - {None}
        for count, value in enumerate(sorted(iterations, key=str)):
            point = {**parameters, "iterations": value} if "iterations" in parameters \
                else parameters
            name = f"{entry.benchmark}-{count}"
            write_record_notebook(folder / f"{name}.ipynb", error="boom", parameters=point)
            write_sidecar(folder / f"{name}-slurm.ipynb", failed_record(point, "job ended"))
    found = scan(folder)
    assert [str(s) for s in found.skipped] == [] and [str(n) for n in found.notes] == []
    assert set(found.frame["benchmark"]) >= {e.benchmark for e in registry.shipped()}
    failed = found.frame[found.frame["status"] == "failed"]
    assert failed["decode_workers"].dropna().map(tuple).tolist()[0] == (1, 2, 4, 8)
    assert set(failed["iterations"].dropna()) >= {20, 50}  # auto / epoch: no count, no note


def test_read_iterations_of_a_run_without_a_timed_loop_describes_as_empty(tmp_path):
    from benchlib.records.store import read_iterations

    probe = _ok_records()[0]
    probe.pop(ITERATIONS_KEY, None)
    notebook = write_record_notebook(tmp_path / "node_probe.ipynb", probe)
    for path in (notebook, tmp_path / "missing.ipynb"):
        frame = read_iterations(path)
        assert list(frame.columns) == ["iteration"] and frame.empty
        assert frame.describe().loc["count", "iteration"] == 0


@pytest.mark.parametrize("command", ["results", "check", "compare"])
def test_a_folder_without_records_is_bad_input_to_every_command(tmp_path, capsys, command):
    empty = tmp_path / "empty"
    empty.mkdir()
    args = [str(campaign(tmp_path / "base")), str(empty)] if command == "compare" else [str(empty)]
    assert main([command, *args]) == 2
    out = capsys.readouterr()
    assert out.out == "" and f"error: no result records under {empty} " in out.err


@pytest.mark.parametrize(("target", "why"), [
    ("folder", "is a folder; give a file path"),
    ("/proc/version", "no file can be created in /proc"),
    ("missing/x.csv", "its folder does not exist")])
def test_an_output_file_that_cannot_be_written_is_named_before_any_work(
        hostile, tmp_path, capsys, target, why):
    (tmp_path / "folder").mkdir()
    path = target if target.startswith("/") else str(tmp_path / target)
    if target.startswith("/") and not Path("/proc/version").is_file():
        pytest.skip("no /proc")
    for command, option in (("results", "--csv"), ("check", "--junit")):
        assert main([command, str(hostile), option, path]) == 2
        out = capsys.readouterr()
        assert out.out == "" and out.err.startswith(f"error: {option} {path}: {why}")
        assert out.err.count("\n") == 1  # one line, no table before it


def test_a_lone_sidecar_that_is_not_a_record_is_named_once(tmp_path, caplog):
    folder = campaign(tmp_path / "c")
    (folder / "a.json").write_text("[1, 2]")
    (folder / "b.json").write_text("null")
    (folder / "c.json").write_text(json.dumps({**GOOD, "batch_size": 0}))
    (folder / "notes.json").write_text('{"foreign": "json"}')  # not a record: left alone
    found = scan(folder)
    assert sorted(str(s) for s in found.skipped) == [
        f"{folder / 'a.json'}: no usable record and no notebook (a JSON list, not a record)",
        f"{folder / 'b.json'}: no usable record and no notebook (JSON null, not a record)",
        f"{folder / 'c.json'}: no usable record and no notebook (batch_size 0 is not a number "
        "(whole, >= 1, < 2^53))"]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main(["results", str(folder)]) == 0
    warned = [r.getMessage() for r in caplog.records]
    assert not [w for w in warned if "reading the notebook" in w or "NoneType" in w]
    assert sorted(w.split(": ")[0] for w in warned) == [
        str(folder / name) for name in ("a.json", "b.json", "c.json")]


def test_a_bad_value_is_named_with_the_file_it_came_from(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "e.json").write_text(json.dumps({**GOOD, "host": ["x"]}))
    (folder / "f.json").write_text(json.dumps({**GOOD, "num_devices": 0}))
    found = scan(folder)
    assert [str(n) for n in found.notes] == [f"{folder / 'e.json'}: host ['x'] is not text or a "
                                             "number; set missing, the rest of the record kept"]
    assert [s.path.name for s in found.skipped] == ["f.json"]
    assert str(found.skipped[0]).startswith(f"{folder / 'f.json'}: ")


def test_json_kinds_are_said_in_json_words():
    assert [values.json_kind(v) for v in (None, True, [1], {}, "x", 2.5)] == [
        "JSON null", "JSON true", "a JSON list", "a JSON object", "a JSON string", "a JSON number"]


def test_a_wide_table_fits_the_terminal_figures_first_text_wrapped_under_itself():
    """What `compare` and `fleet` print through: at 100 columns every line fits, the figures
    come first, what every row shares is said once above, a long label wraps under its start."""
    import pandas as pd

    from benchlib.cli.base import fit, fold_constant, shared_parts

    labels = [f"num_devices=1, benchmark=train, model=resnet18, dataset=real, batch_size={b}, "
              "data_path=/scratch/imagenet/train, data_source=disk, synthetic_kind=device, "
              "precision=fp32" for b in (16, 32)]
    kept, common = shared_parts(labels)
    assert kept == ["batch_size=16", "batch_size=32"] and "model=resnet18" in common
    frame = pd.DataFrame({"base": [100.0, 200.0], "verdict": ["unknown", "unknown"],
                          "configuration": [labels[0], labels[1]]})
    frame, said = fold_constant(frame, ["verdict"])
    assert said == ["verdict (every row): unknown"] and "verdict" not in frame
    text = fit(frame, "configuration", columns=60)
    assert max(len(line) for line in text.splitlines()) <= 60
    assert text.splitlines()[1].lstrip().startswith("100.0")


def test_terminal_tables_show_paths_under_the_current_folder_relative_to_it(
        tmp_path, monkeypatch, capsys):
    """compare's and fleet's configuration column: a data folder under the folder the command
    was typed in reads as typed from it, never the machine's absolute path."""
    from benchlib.cli.base import show_table

    monkeypatch.chdir(tmp_path)
    here = str(tmp_path.resolve())
    frame = pd.DataFrame({"ratio": [1.0, 1.1], "configuration": [
        f"batch_size=16, data_path={here}/data/imgs", f"batch_size=32, data_path={here}/data/imgs"]})
    show_table(frame, "configuration")
    out = capsys.readouterr().out
    assert here not in out and "every configuration: data_path=data/imgs" in out, out
