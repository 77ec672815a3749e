"""A campaign never loses a good result: locks, scratch space, I/O faults, hostile files, umask."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from benchlib.cli import main
from benchlib.errors import OutputError
from benchlib.execute import campaign
from benchlib.execute.locks import campaign_lock, point_lock
from benchlib.execute.sweep import commit_result, execute_point, run_sweep
from benchlib.inputs.params import Point, load_sweep
from benchlib.records.build import failed_record
from benchlib.records.results import load, read_record, scan
from benchlib.records.store import sidecar_path, write_json_atomic, write_sidecar

from .fakes import build_reports_at_once, write_record_notebook

PUBLISH = """\
from IPython.display import display
if fail:
    raise RuntimeError(fail)
display({"application/vnd.benchlib.result+json": {"schema_version": 1, "status": "ok",
         "error": "", "benchmark": "custom", "throughput": float(value), "unit": "x/s",
         "campaign": campaign}, "text/plain": "record"}, raw=True)
"""


@pytest.fixture(scope="module")
def notebook_dir(tmp_path_factory) -> Path:
    """A benchmark notebook that publishes a record at once (no torch: a point takes ~2 s)."""
    folder = tmp_path_factory.mktemp("notebooks")
    nb = new_notebook(cells=[
        new_code_cell("value = 1\nfail = ''\ncampaign = 'x'", metadata={"tags": ["parameters"]}),
        new_code_cell(PUBLISH)])
    nb.metadata["benchlib"] = {"kind": "benchmark"}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, str(folder / "custom.ipynb"))
    return folder


def _params(tmp_path: Path, values: list[int], campaign_name: str = "safe") -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(f"campaign: {campaign_name}\nnotebook: custom\ngrid: {{value: {values}}}\n")
    return path


@contextlib.contextmanager
def _tmpfs(path: Path, options: str):
    """A small tmpfs at ``path`` (skips the test where mounting is not allowed)."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                          capture_output=True, check=False)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


# --- one writer per campaign, one run per point ----------------------------------------------

def test_second_sweep_of_a_campaign_is_refused_naming_the_holder(tmp_path, capsys):
    params = tmp_path / "p.yaml"
    params.write_text("campaign: busy\nnotebook: train\nbase: {model: resnet18, image_size: 32, "
                      "iterations: 1, warmup: 0, num_workers: 0, device: cpu}\n")
    outputs = tmp_path / "outputs"
    with campaign_lock(outputs / "busy", command="benchlib sweep first.yaml"):
        assert main(["sweep", str(params), "--outputs", str(outputs)]) == 1
    err = capsys.readouterr().err
    assert f"is in use by benchlib sweep first.yaml (pid {os.getpid()} on host" in err, err
    assert err.count("\n") == 1  # one message, no traceback
    assert not list((outputs / "busy").glob("*.json"))  # nothing ran


def test_a_point_running_elsewhere_is_skipped_not_run_twice(tmp_path, notebook_dir):
    point = load_sweep(_params(tmp_path, [3]), notebook_dir).points[0]
    target = tmp_path / "out" / "safe" / f"{point.name}.ipynb"
    with point_lock(target.parent, target.stem) as mine:
        assert mine
        outcome = execute_point(point, target, None, tmp_path, notebook_dir)
    assert (outcome.status, outcome.error) == ("skipped", "running in another process")
    assert not target.exists()


@pytest.mark.slow
def test_a_failure_never_replaces_an_ok_result(tmp_path, notebook_dir, caplog):
    sweep = load_sweep(_params(tmp_path, [3]), notebook_dir)
    outputs = tmp_path / "out"
    assert [o.status for o in run_sweep(sweep, outputs, progress=False)] == ["done"]
    point = sweep.points[0]
    target = outputs / "safe" / f"{point.name}.ipynb"
    before = sidecar_path(target).read_bytes()
    with caplog.at_level(logging.WARNING):
        outcome = commit_result(point, target, None,
                                failed_record(point.parameters, "CUDA error: device lost"))
    assert outcome.status == "failed" and "the earlier ok result was kept" in outcome.error
    assert sidecar_path(target).read_bytes() == before
    kept = list((outputs / "safe" / ".benchlib" / "rejected").glob("*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())["error"] == "CUDA error: device lost"
    assert load(outputs / "safe")["status"].tolist() == ["ok"]
    assert not (outputs / "safe" / ".partial").exists()  # each point cleans its own scratch


# --- I/O faults ----------------------------------------------------------------------------

@pytest.mark.slow
def test_disk_full_keeps_the_good_result_and_stops_with_one_message(tmp_path, notebook_dir,
                                                                    capsys, monkeypatch):
    with _tmpfs(tmp_path / "small", "size=512k") as disk:
        monkeypatch.setattr("benchlib.execute.sweep.NOTEBOOK_DIR", notebook_dir)
        params = _params(tmp_path, [3, 4], "full")
        sweep = load_sweep(params, notebook_dir)
        first = run_sweep(sweep, disk, progress=False)
        assert [o.status for o in first] == ["done", "done"]
        good = {p: p.read_bytes() for p in (disk / "full").glob("*.*") if p.is_file()}
        with contextlib.suppress(OSError), (disk / "filler").open("wb") as handle:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        with pytest.raises(OutputError, match="no space left on device") as caught:
            run_sweep(sweep, disk, force=True, progress=False)
        assert "the sweep stopped with 2 of 2 points not run" in str(caught.value)
        for path, data in good.items():
            assert path.read_bytes() == data, f"{path} changed"
        assert load(disk / "full")["status"].tolist() == ["ok", "ok"]
        assert not list((disk / "full").glob("*.tmp")) and not list((disk / "full").glob(".*.tmp"))


def test_a_notebook_cut_short_is_never_moved_into_place(tmp_path, notebook_dir, monkeypatch):
    import papermill

    def cut_short(source, output, **kwargs):
        Path(output).write_text('{"cells": [{"cell_type": "code", "sou')
        raise OSError(28, "No space left on device", output)

    monkeypatch.setattr(papermill, "execute_notebook", cut_short)
    point = load_sweep(_params(tmp_path, [5]), notebook_dir).points[0]
    target = tmp_path / "out" / "safe" / f"{point.name}.ipynb"
    target.parent.mkdir(parents=True)
    outcome = execute_point(point, target, None, tmp_path, notebook_dir)
    assert outcome.status == "failed"
    assert outcome.error.startswith("no space left on device: ")
    assert not target.exists()  # the truncated notebook stayed out of place, and was removed
    assert read_record(target)["error"] == outcome.error
    rows = load(target.parent)  # the failure is a row although no notebook was kept
    assert rows[["status", "error"]].values.tolist() == [["failed", outcome.error]]


def test_outputs_that_are_a_file_or_read_only_are_input_errors(tmp_path, capsys):
    params = tmp_path / "p.yaml"
    params.write_text("campaign: c\nnotebook: train\nbase: {model: resnet18, device: cpu}\n")
    a_file = tmp_path / "outputs-file"
    a_file.write_text("not a folder")
    assert main(["sweep", str(params), "--outputs", str(a_file)]) == 2
    err = capsys.readouterr().err
    assert "outputs: cannot create the campaign folder (not a directory:" in err, err
    assert err.count("\n") == 1
    with _tmpfs(tmp_path / "ro", "ro,size=64k") as read_only:
        assert main(["sweep", str(params), "--outputs", str(read_only)]) == 2
        err = capsys.readouterr().err
        assert "read-only file system" in err and err.count("\n") == 1, err


def test_unexpected_errors_are_one_line_and_debug_shows_the_traceback(tmp_path, capsys,
                                                                       monkeypatch):
    def broken(args):
        raise KeyError("boom")

    monkeypatch.setattr("benchlib.cli.results.Results.run", broken)
    parser_args = ["results", str(tmp_path)]
    assert main(parser_args) == 1
    err = capsys.readouterr().err
    assert err == ("error: unexpected KeyError: 'boom' (run again as `benchlib --debug ...` for the "
                   "traceback, and report it)\n")
    assert main(["--debug", *parser_args]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


# --- readers survive any file --------------------------------------------------------------

GOOD = {"schema_version": 1, "status": "ok", "error": "", "benchmark": "train",
        "throughput": 10.0, "unit": "images/s", "notebook": "train", "repeat": 0}


def test_readers_survive_hostile_files(tmp_path, caplog):
    folder = tmp_path / "c"
    write_record_notebook(folder / "list-sidecar.ipynb", {**GOOD, "batch_size": 1})
    (folder / "list-sidecar.json").write_text("[1, 2]")
    write_record_notebook(folder / "null-sidecar.ipynb", {**GOOD, "batch_size": 2})
    (folder / "null-sidecar.json").write_text("null")
    write_record_notebook(folder / "foreign-sidecar.ipynb", {**GOOD, "batch_size": 3})
    (folder / "foreign-sidecar.json").write_text('{"foo": 1}')
    (folder / "truncated.ipynb").write_text('{"cells": [')
    (folder / "a-list.ipynb").write_text("[1, 2, 3]")
    (folder / "odd-cells.ipynb").write_text('{"cells": 5, "metadata": []}')
    (folder / "record-list.ipynb").write_text(json.dumps({"cells": [{"outputs": [
        {"data": {"application/vnd.benchlib.result+json": [1]}}]}]}))
    (folder / "binary.ipynb").write_bytes(b"\xff\xfe\x00garbage")
    with caplog.at_level(logging.WARNING):
        found = scan(folder)
    assert sorted(found.frame["batch_size"].tolist()) == [1, 2, 3]  # the notebooks' records
    assert sorted(s.path.name for s in found.skipped) == [
        "a-list.ipynb", "binary.ipynb", "odd-cells.ipynb", "record-list.ipynb", "truncated.ipynb"]
    for name in ("list-sidecar.json: sidecar holds a JSON list", "null-sidecar.json: sidecar "
                 "holds JSON null", "truncated.ipynb: not a readable notebook",
                 "foreign-sidecar.json: JSON without a schema_version"):
        assert name in caplog.text, caplog.text
    assert main(["results", str(folder)]) == 0


def test_a_sidecar_that_disagrees_with_its_notebook_is_ignored(tmp_path, caplog):
    notebook = write_record_notebook(tmp_path / "p.ipynb", {**GOOD, "batch_size": 8})
    write_sidecar(notebook, {**GOOD, "batch_size": 8, "status": "ok"})
    assert read_record(notebook)["batch_size"] == 8
    # another run's notebook copied over it, keeping an older time stamp
    write_record_notebook(notebook, {**GOOD, "batch_size": 64, "throughput": 99.0})
    os.utime(notebook, ns=(1, 1))
    with caplog.at_level(logging.WARNING):
        assert read_record(notebook)["batch_size"] == 64
    assert "sidecar was made from another version of p.ipynb" in caplog.text
    # a faithful copy (same bytes, new time stamp) keeps its sidecar
    write_sidecar(notebook, {**GOOD, "batch_size": 64, "from": "sidecar"})
    os.utime(notebook, ns=(10**18, 10**18))
    assert read_record(notebook)["from"] == "sidecar"


def test_a_broken_ledger_is_rebuilt_from_the_files(tmp_path, caplog):
    folder = tmp_path / "c"
    write_record_notebook(folder / "train-8-abc.ipynb", GOOD)
    write_json_atomic(folder / "train-8-abc.json", GOOD)
    ledger = folder / ".benchlib" / "points.json"
    ledger.parent.mkdir(parents=True)
    ledger.write_text('{"half": ')
    (folder / ".benchlib" / "jobs.json").write_text("[]")
    with caplog.at_level(logging.WARNING):
        campaign.remember_points(folder, [Point("train", {"batch_size": 16}, 0, "train-16")])
        assert campaign.read_jobs(folder) == {}
    points = campaign.read_points(folder)
    assert set(points) == {"train-8-abc", Point("train", {"batch_size": 16}, 0, "train-16").name}
    assert points["train-8-abc"]["notebook"] == "train"
    assert "unreadable campaign ledger" in caplog.text and "rebuilt from the campaign" in caplog.text
    assert len(list(ledger.parent.glob("points.json.broken-*"))) == 1
    assert main(["status", str(folder)]) == 0


# --- files honour the umask ------------------------------------------------------------------

@pytest.mark.parametrize(("mask", "mode"), [(0o077, 0o600), (0o002, 0o664), (0o022, 0o644)])
def test_written_files_honour_the_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        write_json_atomic(tmp_path / "x.json", {"a": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "x.json").stat().st_mode & 0o777 == mode


def test_readers_survive_special_files_and_records_of_the_wrong_types(tmp_path, caplog, capsys):
    folder = tmp_path / "c"
    folder.mkdir()
    os.mkfifo(folder / "fifo.ipynb")  # opening it would block forever
    (folder / "zero.ipynb").symlink_to("/dev/zero")  # reading it would never end
    write_record_notebook(folder / "huge.ipynb", {**GOOD, "batch_size": 3})
    (folder / "huge.json").write_text("9" * 5000)  # beyond int()'s digit limit
    write_record_notebook(folder / "typed.ipynb", {**GOOD, "batch_size": 4})
    (folder / "typed.json").write_text(json.dumps(  # newer than its notebook, no fingerprint
        {"status": "ok", "throughput": "fast", "batch_size": [1], "schema_version": 1}))
    write_json_atomic(folder / "lost.json", {**GOOD, "status": "failed", "throughput": None,
                                            "error": "killed before its notebook was written"})
    (folder / "notes.json").write_text('{"not": "a record"}')
    with caplog.at_level(logging.WARNING):
        found = scan(folder)
    frame = found.frame.set_index("point_id")
    assert frame.loc["huge", "batch_size"] == 3 and frame.loc["typed", "batch_size"] == 4
    assert frame.loc["lost", "error"] == "killed before its notebook was written"
    assert "notes" not in frame.index
    assert "throughput 'fast' is not a number" in caplog.text
    assert "huge.json: not a readable sidecar (ValueError" in caplog.text
    assert main(["status", str(folder)]) == 0
    assert main(["results", str(folder)]) == 0
    assert "error" not in capsys.readouterr().err


def test_status_shows_a_point_running_in_a_local_sweep(tmp_path, capsys):
    folder = tmp_path / "c"
    campaign.remember_points(folder, [Point("train", {"batch_size": 8}, 0, "train-8")])
    name = Point("train", {"batch_size": 8}, 0, "train-8").name
    assert main(["status", str(folder)]) == 0
    assert "not started" in capsys.readouterr().out
    with point_lock(folder, name) as mine:
        assert mine
        assert main(["status", str(folder)]) == 0
        out = capsys.readouterr().out
    assert f"running: pid {os.getpid()} on host" in out, out
    assert "1 running" in out
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert main(["status", str(a_file)]) == 2
    assert "is a file, not a campaign folder" in capsys.readouterr().err


# --- held: diagnose resumed and run twice at once; reports while a sweep writes ---------------

def _fake_points(monkeypatch, stop_after: int | None = None) -> list[str]:
    """Points run without a kernel: each writes a half notebook into its scratch, then its ok
    record; the point after ``stop_after`` is interrupted (Ctrl-C) instead."""
    from benchlib.execute import sweep as sweep_module

    ran: list[str] = []

    def execute_in(point, target, partial, *args):
        partial.write_text("{")
        if stop_after is not None and len(ran) == stop_after:
            raise KeyboardInterrupt
        ran.append(point.name)
        record = {"schema_version": 1, "status": "ok", "error": "", "benchmark": "train",
                  "throughput": 10.0, "unit": "images/s", "batch_size": 8, "num_devices": 1}
        return commit_result(point, target, None, record)

    monkeypatch.setattr(sweep_module, "_execute_in", execute_in)
    return ran


def test_an_interrupted_diagnose_resumes_where_it_stopped(tmp_path, monkeypatch):
    from benchlib.diagnosis import ladder

    from .test_diagnose import _plan

    plan = _plan(tmp_path)
    total = len(plan.points())
    first = _fake_points(monkeypatch, stop_after=2)
    with pytest.raises(KeyboardInterrupt):
        ladder.run_ladder(plan, tmp_path / "out", say=None)
    campaign_dir = tmp_path / "out" / plan.campaign
    assert len(first) == 2 and not (campaign_dir / ".partial").exists()
    assert len(ladder.points_left(plan, tmp_path / "out")) == total - 2
    second = _fake_points(monkeypatch)
    ladder.run_ladder(plan, tmp_path / "out", say=None)
    assert len(second) == total - 2 and not set(first) & set(second)
    assert ladder.points_left(plan, tmp_path / "out") == []


def test_two_diagnoses_of_one_campaign_at_once_are_refused(tmp_path, monkeypatch):
    from benchlib.diagnosis import ladder
    from benchlib.errors import CampaignBusyError

    from .test_diagnose import _plan

    plan = _plan(tmp_path)
    ran = _fake_points(monkeypatch)
    busy = pytest.raises(CampaignBusyError, match="is in use by benchlib diagnose resnet18")
    with campaign_lock(tmp_path / "out" / plan.campaign, command="benchlib diagnose resnet18"), busy:
        ladder.run_ladder(plan, tmp_path / "out", say=None)
    assert ran == []


@pytest.mark.slow
def test_two_reports_while_a_sweep_writes_into_the_campaign(tmp_path):
    import sys
    import time

    from .fakes import campaign as fake_campaign
    from .test_sweep_hardening import PUBLISH as PUBLISH_X
    from .test_sweep_hardening import _notebook

    outputs = tmp_path / "outputs"
    root = fake_campaign(outputs / "fake")
    folder, flag = tmp_path / "notebooks", tmp_path / "go"
    _notebook(folder / "waits.ipynb", f"campaign = 'x'\nflag = {str(flag)!r}",
              "import os, time\nwhile not os.path.exists(flag):\n    time.sleep(0.2)", PUBLISH_X)
    params = tmp_path / "params.yaml"
    params.write_text("campaign: fake\nnotebook: waits\n")
    code = ("import sys\nfrom pathlib import Path\n"
            "from benchlib.execute.sweep import run_sweep\n"
            "from benchlib.inputs.params import load_sweep\n"
            "run_sweep(load_sweep(Path(sys.argv[1]), Path(sys.argv[2])), Path(sys.argv[3]), "
            "progress=False)\n")
    sweep = subprocess.Popen([sys.executable, "-c", code, str(params), str(folder), str(outputs)],
                             cwd=Path(__file__).resolve().parent.parent)
    try:
        deadline = time.monotonic() + 120
        while not list(root.glob(".partial/*/*.ipynb")) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list(root.glob(".partial/*/*.ipynb")), "the sweep's point never started"
        assert build_reports_at_once(root) == [root / "report" / "index.html"] * 2
        pages = sorted(p.name for p in (root / "report" / "runs").glob("*.html"))
        assert len(pages) == 13 and not any("waits" in p for p in pages)  # nothing half-written
        flag.write_text("")
        assert sweep.wait(120) == 0
    finally:
        sweep.kill()
    assert len(load(root)) == 14 and not (root / ".partial").exists()
