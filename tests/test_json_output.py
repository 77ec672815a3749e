"""``--json`` (docs/json.md): every command that prints results writes its answer as one document
of a versioned schema; each is validated here against the pydantic model and the JSON Schema
docs/json.schema.json holds, the exit status is the same, the terminal text is unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from benchlib.cli import build_parser
from benchlib.cli.documents import schema as json_schema
from benchlib.diagnosis import ladder
from benchlib.diagnosis import plan as diagnose_plan
from benchlib.records.store import write_sidecar

from .conftest import ROOT
from .fakes import campaign, references_file, slower_copy, write_record_notebook
from .test_diagnose_rounds import SPREAD, _record
from .test_fleet_health import _write_fleet
from .test_history import _nights, _write_nights

BENCHLIB = str(Path(sys.executable).with_name("benchlib"))
VALIDATOR = jsonschema.Draft202012Validator(json_schema.json_schema())
#: Each command as typed on the campaign :func:`folders` writes, and its exit status there.
TYPED = {"results": (["results", "base"], 0),
         "check": (["check", "base", "--references", "refs.yaml"], 1),
         "compare": (["compare", "base", "new"], 3),
         "history": (["history", "nightly"], 1),
         "fleet": (["fleet", "fleet", "--drain-list"], 1),
         "status": (["status", "said"], 0)}


def _valid(text: str, command: str) -> dict:
    """The document ``text`` holds, once valid against its model and the JSON Schema."""
    document = json.loads(text)
    VALIDATOR.validate(document)
    model = json_schema.DOCUMENTS.get(command, json_schema.ErrorDocument)
    model.model_validate_json(text, strict=True)
    assert document["benchlib_json"] == json_schema.SCHEMA_VERSION
    return document


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scaling campaign and a slower copy, references, nights of a history, a fleet and a
    campaign with finished points."""
    root = tmp_path_factory.mktemp("json")
    slower_copy(campaign(root / "base"), root / "new", 0.8)
    references_file(root)
    _write_nights(root / "nightly", _nights(nights=16, step=8, driver_at=8))
    _write_fleet(root / "fleet", nights=4)
    record = {"schema_version": 1, "campaign": "said", "gpu": "H100", "num_devices": 1,
              "status": "ok", "error": "", "host": "node1", "benchmark": "train",
              "unit": "images/s", "throughput": 2500.0, "contended": True}
    write_sidecar(write_record_notebook(root / "said" / "train-a.ipynb", record), record)
    return root


def test_docs_json_md_and_the_schema_file_are_generated_from_the_models():
    stale = "is stale: python -m benchlib.cli.documents.schema {}> docs/{}"
    assert (ROOT / "docs" / "json.md").read_text() == json_schema.markdown(), \
        stale.format("", "json.md")
    assert (ROOT / "docs" / "json.schema.json").read_text() == json_schema.schema_text(), \
        stale.format("--schema ", "json.schema.json")


def test_every_command_that_prints_results_takes_json_and_has_its_document():
    commands = build_parser()._subparsers._group_actions[0].choices
    taking = {name for name, parser in commands.items()
              if any("--json" in action.option_strings for action in parser._actions)}
    assert taking == set(json_schema.DOCUMENTS) == {*TYPED, "calibrate", "diagnose"}


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
@pytest.mark.parametrize("command", TYPED)
def test_each_command_prints_its_document_on_stdout(folders: Path, command: str) -> None:
    """``--json -`` as typed: the document alone on stdout, the text on stderr, the status the
    same."""
    args, status = TYPED[command]
    done = subprocess.run([BENCHLIB, *args, "--json", "-"], cwd=folders, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == status, done.stderr
    document = _valid(done.stdout, command)
    assert document["command"] == command and document["exit_status"] == status
    assert done.stderr.strip(), "the terminal text goes to stderr"


@pytest.mark.parametrize("command", [c for c in TYPED if c != "fleet"])  # fleet says the time
def test_the_text_is_unchanged_beside_a_json_file(folders: Path, cli, command: str) -> None:
    args, status = TYPED[command]
    plain = cli(folders, *args)
    beside = cli(folders, *args, "--json", f"{command}.json")
    assert plain[0] == beside[0] == status
    assert plain[1] == beside[1]
    _valid((folders / f"{command}.json").read_text(), command)


def test_the_documents_say_what_the_text_says(folders: Path, cli) -> None:
    def document(command: str) -> dict:
        args, status = TYPED[command]
        code, out, _ = cli(folders, *args, "--json", "-")
        assert code == status
        return _valid(out, command)

    compared = document("compare")
    assert {row["verdict"] for row in compared["configurations"]} == {"unknown"}
    assert compared["configurations"][0]["settings"]["model"] == "resnet50"
    checked = document("check")
    assert checked["counts"] == {"no reference": 10, "pass": 1, "fail": 1, "run failed": 1}
    assert [row["high"] for row in checked["checks"] if row["verdict"] == "pass"] == [None]
    (change,) = document("history")["change_points"]
    assert change["time"] == "2026-09-09T02:00:00Z" and change["node"] == "node017"
    fleet = document("fleet")
    nodes = {row["node"]: row["state"] for row in fleet["nodes"]}
    assert nodes["node03"] == "slow" and nodes["node05"] == "failed"
    assert fleet["drain"][0].startswith("scontrol update nodename=node05")
    (point,) = document("status")["points"]
    assert point["status"] == "done" and point["flags"] == ["contended"]
    records = document("results")
    assert records["runs"] == len(records["records"]) == 13 and "throughput" in records["shown"]


def test_an_error_is_a_document_too(folders: Path, cli) -> None:
    code, out, err = cli(folders, "compare", "base", "--json", "-")
    assert code == 2 and "give two results folders" in err
    document = _valid(out, "error")
    assert document["exit_status"] == 2 and "give two results folders" in document["error"]
    code, out, err = cli(folders, "results", "base", "--json", "nowhere/x.json")
    assert code == 2 and "--json nowhere/x.json" in err and not out


def test_calibrate_says_the_noise_in_its_document(tmp_path: Path, cli, monkeypatch) -> None:
    """The rounds faked: each writes the runs of two nodes as its campaign."""
    from benchlib.execute import executor as executors

    class Faked:
        def submit_and_wait(self, sweep, outputs, progress=False):
            night = len(list(Path(outputs).glob("*")))
            for run in _nights(nights=3, step=None, driver_at=None).to_dict("records"):
                if run["source"].startswith(f"/n{night}/"):
                    run = {**run, "campaign": sweep.campaign}
                    write_record_notebook(Path(outputs) / sweep.campaign
                                          / f"{run.pop('source').split('/')[2]}", run)
            return []

    monkeypatch.setattr(executors, "executor_for", lambda settings: Faked())
    (tmp_path / "aa.yaml").write_text((ROOT / "tests" / "test_calibrate.py").read_text()
                                      .split('PARAMS = """', 1)[1].split('"""', 1)[0])
    args = ("calibrate", "aa.yaml", "--rounds", "3", "--db", "cat.sqlite", "--quiet")
    code, out, err = cli(tmp_path, *args, "--json", "-")
    document = _valid(out, "calibrate")
    assert code == document["exit_status"] == 0, err
    assert len(document["campaigns"]) == 3 and document["measured"] == 2
    assert {row["node"] for row in document["noise"]} == {"node001", "node017"}
    assert all(row["campaigns"] == 3 and row["half_width"] > 0 for row in document["noise"])
    assert "over 3 campaigns; one campaign against another: +-" in " ".join(err.split())


def test_diagnose_says_its_answer_in_its_document(tmp_path: Path, cli, monkeypatch) -> None:
    """The ladder's runs faked (its records written at once), as tests/test_line_widths.py."""
    def fake_run(plan_, outputs, executor=None, say=None, points=None, **_):
        diagnose_plan.write_plan(plan_, outputs / plan_.campaign)
        for point in points or [p for _, p in plan_.points()[1:]]:
            name = point.label.split("-", 1)[1].rsplit("-r", 1)[0]
            _record(plan_, outputs, name, point.repeat,
                    SPREAD.get(name, [60.0] * 3)[point.repeat % 3])
        return outputs / plan_.campaign

    monkeypatch.setattr(ladder, "run_ladder", fake_run)
    (tmp_path / "jpegs" / "a").mkdir(parents=True)
    (tmp_path / "jpegs" / "a" / "x.jpg").write_bytes(b"")
    code, out, err = cli(tmp_path, "diagnose", "--model", "resnet18", "--device", "cpu",
                         "--data-dir", "jpegs", "--workers", "1", "--no-report", "--json", "-")
    document = _valid(out, "diagnose")
    assert code == document["exit_status"] == 0, err
    assert document["model"] == "resnet18" and document["page"] is None
    assert " ".join(document["answer"].split()) in " ".join(err.split())
    assert document["steps"] and document["best"]["speed"] > document["user"]["speed"]
