"""Where ``--csv`` / ``--junit`` may write: never over a campaign's own result files (notebooks,
sidecars, iteration files, ledgers, reports, scratch), never to an empty path."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.cli import main
from benchlib.records.store import ITERATIONS_KEY, write_sidecar

from .fakes import write_record_notebook

RUN = {"schema_version": 1, "campaign": "c", "cluster": "c1", "host": "n1", "gpu": "H100",
       "benchmark": "train", "model": "resnet50", "dataset": "synthetic", "precision": "amp_bf16",
       "num_devices": 1, "num_nodes": 1, "batch_size": 32, "unit": "images/s", "status": "ok",
       "error": "", "iterations": 50, "wall_time_s": 10.0, "throughput": 1000.0}


@pytest.fixture
def campaign(tmp_path: Path) -> Path:
    """A campaign folder as a sweep leaves it: two runs, a sidecar, an iterations file, the
    ledger, a report and a scratch folder."""
    folder = tmp_path / "outputs" / "X"
    for repeat in range(2):
        write_record_notebook(folder / f"train-{repeat}.ipynb",
                              {**RUN, "throughput": 1000.0 + repeat, "repeat": repeat})
    write_sidecar(folder / "train-0.ipynb", {**RUN, "repeat": 0,
                                             ITERATIONS_KEY: {"iteration": [0.1, 0.1]}})
    assert (folder / "train-0.json").is_file() and (folder / "train-0.iterations.csv").is_file()
    for sub in (".benchlib", "report", ".partial/train-0.abc"):
        (folder / sub).mkdir(parents=True)
    (folder / ".benchlib" / "points.json").write_text("{}")
    (folder / "report" / "index.html").write_text("<html></html>")
    return folder


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A baseline campaign for ``compare``."""
    return write_record_notebook(tmp_path / "outputs" / "B" / "train-0.ipynb", RUN).parent


RESULT_FILES = ["train-0.ipynb", "train-0.json", "train-0.iterations.csv", "train-1.json",
                "train-1.iterations.csv", ".benchlib/points.json", ".benchlib/new.csv",
                "report/index.html", "report/table.csv", ".partial/train-0.abc/out.csv"]


@pytest.mark.parametrize("name", RESULT_FILES)
@pytest.mark.parametrize("command", ["results", "check", "compare"])
def test_an_export_never_lands_on_a_campaign_result_file(
        campaign: Path, base: Path, capsys: pytest.CaptureFixture, name: str, command: str) -> None:
    target = campaign / name
    before = target.read_bytes() if target.exists() else None
    option = "--csv" if command == "results" else "--junit"
    args = {"results": ["results", str(campaign)], "check": ["check", str(campaign)],
            "compare": ["compare", str(base), str(campaign)]}[command]
    assert main([*args, option, str(target)]) == 2
    err = capsys.readouterr().err
    assert f"{option} {target}" in err and "result" in err, err
    assert (target.read_bytes() if target.exists() else None) == before


def test_a_link_to_a_result_file_or_into_a_ledger_is_refused(
        tmp_path: Path, campaign: Path, capsys: pytest.CaptureFixture) -> None:
    notebook = campaign / "train-0.ipynb"
    before = notebook.read_bytes()
    (tmp_path / "out.csv").symlink_to(notebook)
    (tmp_path / "ledger").symlink_to(campaign / ".benchlib")
    for target in (tmp_path / "out.csv", tmp_path / "ledger" / "x.csv"):
        assert main(["results", str(campaign), "--csv", str(target)]) == 2
        err = capsys.readouterr().err
        assert f"--csv {target}" in err and "result" in err, err
    assert notebook.read_bytes() == before
    assert not (campaign / ".benchlib" / "x.csv").exists()


def test_a_new_file_in_a_campaign_folder_or_a_plain_report_folder_is_written(
        tmp_path: Path, campaign: Path, capsys: pytest.CaptureFixture) -> None:
    elsewhere = tmp_path / "mine" / "report"
    elsewhere.mkdir(parents=True)
    for target in (campaign / "table.csv", campaign / "table.json", elsewhere / "t.csv",
                   tmp_path / "mine" / "notes.json"):
        assert main(["results", str(campaign), "--csv", str(target)]) == 0, target
        assert target.read_text().startswith("run") or target.stat().st_size > 0
    capsys.readouterr()


@pytest.mark.parametrize(("command", "option"), [
    (["results"], "--csv"), (["check"], "--junit"), (["compare", "BASE"], "--junit")])
def test_an_empty_output_path_is_bad_input(campaign: Path, base: Path,
                                           capsys: pytest.CaptureFixture, command: list[str],
                                           option: str) -> None:
    args = [str(base) if a == "BASE" else a for a in command]
    assert main([*args, str(campaign), option, ""]) == 2
    err = capsys.readouterr().err
    assert option in err and "empty" in err, err
