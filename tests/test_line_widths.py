"""Every line a command prints fits the terminal: at ``COLUMNS=100`` the lines of ``index``
(155 characters before) and ``diagnose``'s plan (about 330) and answer are wrapped, continued
indented, and say the same words (``history``'s: tests/test_history.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.cli import main
from benchlib.diagnosis import ladder
from benchlib.diagnosis import plan as diagnose_plan

from .test_diagnose_rounds import SPREAD, _record
from .test_history import _nights, _write_nights

BENCHLIB = str(Path(sys.executable).with_name("benchlib"))
COLUMNS = 100


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``benchlib ARGS`` from ``cwd`` in a terminal 100 columns wide."""
    return subprocess.run([BENCHLIB, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": str(COLUMNS),
                                            "MPLBACKEND": "Agg"})


def _fits(text: str) -> str:
    """``text`` once every line is checked to fit; its words on one line, to look for."""
    widest = max(text.splitlines(), key=len, default="")
    assert len(widest) <= COLUMNS, f"{len(widest)} columns: {widest}"
    return " ".join(text.split())


def test_index_lines_fit_the_terminal(tmp_path: Path) -> None:
    _write_nights(tmp_path / "nightly", _nights(nights=16, step=8, driver_at=8))
    index = _run(tmp_path, "index", "nightly", "--db", "catalog.sqlite")
    assert index.returncode == 0, index.stderr
    assert "32 points looked at in" in _fits(index.stdout) and "0 skipped" in index.stdout


def test_diagnose_says_its_plan_and_answer_within_the_terminal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """``benchlib diagnose`` as typed, its runs faked (the ladder's records written at once)."""
    def fake_run(plan_, outputs, executor=None, say=None, points=None, **_):
        diagnose_plan.write_plan(plan_, outputs / plan_.campaign)
        for point in points or [p for _, p in plan_.points()[1:]]:
            name = point.label.split("-", 1)[1].rsplit("-r", 1)[0]
            _record(plan_, outputs, name, point.repeat, SPREAD.get(name, [60.0] * 3)[point.repeat % 3])
        return outputs / plan_.campaign

    monkeypatch.setattr(ladder, "run_ladder", fake_run)
    monkeypatch.setenv("COLUMNS", str(COLUMNS))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jpegs" / "a").mkdir(parents=True)
    (tmp_path / "jpegs" / "a" / "x.jpg").write_bytes(b"")
    assert main(["diagnose", "--model", "resnet18", "--device", "cpu", "--data-dir", "jpegs",
                 "--workers", "1", "--no-report"]) == 0
    said = _fits(capsys.readouterr().out)
    assert said.startswith("diagnose resnet18 train on cpu (campaign "), said
    assert "rungs x 3 initial repeats" in said and "min in all" in said
    assert "Waterfall (images/s;" in said


@pytest.mark.slow  # a subprocess or a model: make test, not the edit loop
def test_an_error_fits_the_terminal_and_stays_whole_in_a_pipe(tmp_path: Path) -> None:
    """A sweep of GPU points on this CPU: on a terminal 100 columns wide the error is wrapped
    (it was one line of 217 characters); into a pipe or a log it stays one line."""
    import pty

    if subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                      capture_output=True).returncode == 0:
        pytest.skip("CUDA here: the sweep would run")
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "gpu.yaml").write_text(
        "campaign: gpu\nnotebook: train\nbase: {device: cuda, dataset: synthetic}\n")
    command = [BENCHLIB, "sweep", "params/gpu.yaml"]
    env = {**os.environ, "COLUMNS": str(COLUMNS)}
    piped = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env=env)
    assert piped.returncode == 2 and len(piped.stderr.splitlines()) == 1, piped.stderr
    primary, secondary = pty.openpty()
    done = subprocess.run(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=secondary,
                          timeout=300, env=env)
    os.close(secondary)
    said = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:
            break
        if not chunk:
            break
        said += chunk
    os.close(primary)
    text = said.decode().replace("\r\n", "\n")
    assert done.returncode == 2 and len(text.splitlines()) > 1, text
    assert " ".join(_fits(text).split()) == " ".join(piped.stderr.split())
