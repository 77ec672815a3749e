"""Progress written to a log (a Slurm job's output, ``make demo > demo.log 2>&1``): a few plain
lines saying the count, never a progress bar redrawn with carriage returns line after line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib.progress import Lines

from .fakes import campaign
from .walk import benchlib

#: One tiny point that needs no data: a sweep whose log is read.
ONE_POINT = """campaign: logged
notebook: [inference]
base: {model: resnet18, image_size: 32, num_classes: 4, batch_size: 4, iterations: 3, warmup: 1,
       num_workers: 0, device: cpu, dataset: synthetic}
"""


@pytest.mark.slow
def test_a_sweep_into_a_log_says_each_finished_point_in_a_plain_line(tmp_path: Path) -> None:
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "one.yaml").write_text(ONE_POINT)
    done = benchlib(tmp_path, "sweep", "params/one.yaml")  # its output is a pipe, as in a log
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\r" not in done.stderr and "point/s" not in done.stderr, done.stderr
    assert "logged: 1/1 point (done 1, failed 0, skipped 0)" in done.stderr.splitlines(), \
        done.stderr


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_a_report_into_a_log_says_its_pages_in_a_few_plain_lines(tmp_path: Path) -> None:
    campaign(tmp_path / "fake")
    build = ("from benchlib.report.build import build_report; "
             "build_report('fake', summaries=())")  # the run pages: every one counted
    done = subprocess.run([sys.executable, "-c", build], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr and "page/s" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("report: ")]
    assert lines[0] == "report: 1/13 pages" and lines[-1] == "report: 13/13 pages", done.stderr
    assert len(lines) <= 3, done.stderr  # built in seconds: the first page and the last


def _polled(interval_s: float) -> Lines:
    """A wait's count over six polls (0, 0, 1, 1, 1 and 3 of 3 points finished)."""
    lines = Lines(total=3, desc="nightly", unit="point", interval_s=interval_s)
    for finished in (0, 0, 1, 1, 1, 3):
        lines.set_postfix({"running": 3 - finished, "done": finished})
        lines.update(finished - lines.n)
    lines.close()
    return lines


def test_a_wait_in_a_log_says_a_count_when_it_moves_and_not_every_poll(
        capsys: pytest.CaptureFixture) -> None:
    _polled(interval_s=0)
    assert capsys.readouterr().err.splitlines() == [
        "nightly: 0/3 points (running 3, done 0)", "nightly: 1/3 points (running 2, done 1)",
        "nightly: 3/3 points (running 0, done 3)"]
    _polled(interval_s=3600)  # a count that moves often is said at most once an interval
    assert capsys.readouterr().err.splitlines() == [
        "nightly: 0/3 points (running 3, done 0)", "nightly: 3/3 points (running 0, done 3)"]
