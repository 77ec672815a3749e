"""Nothing judged is never a pass (issue 54): a history in which no configuration x node has
the campaigns a change point needs exits 3 saying NOTHING JUDGED, as compare's NOTHING
CERTIFIED does; the compare page says nothing was certified when no configuration was judged;
the gate table holds every gating command."""

from __future__ import annotations

import uuid
from pathlib import Path

import pandas as pd
import pytest

from benchlib.analysis import gate
from benchlib.compare import regression
from tests.fakes import write_record_notebook
from tests.walk import benchlib

RUN = {"schema_version": 2, "cluster": "c", "host": "n1", "gpu": "H100", "benchmark": "train",
       "model": "resnet50", "dataset": "synthetic", "precision": "amp_bf16", "num_devices": 1,
       "num_nodes": 1, "unit": "images/s", "status": "ok", "error": "", "iterations": 50,
       "wall_time_s": 10.0, "batch_size": 32}


def _nights(root: Path, count: int, flags: str = "") -> None:
    for night in range(1, count + 1):
        day = f"2026-11-{night:02d}"
        for repeat in range(2):
            write_record_notebook(root / day / f"r{repeat}.ipynb", {
                **RUN, "campaign": f"n-{day}", "repeat": repeat, "throughput": 1000.0 + repeat,
                "run_id": uuid.uuid4().hex, "started_at": f"{day}T01:0{repeat}:00+00:00",
                "flags": flags})


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_a_history_too_short_to_judge_exits_3(tmp_path: Path) -> None:
    _nights(tmp_path, 2)
    done = benchlib(tmp_path, "history", ".", "--quiet")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "NOTHING JUDGED: no configuration x node history has the 6 campaigns" in done.stdout


def test_a_history_of_disturbed_runs_exits_3_naming_them(tmp_path: Path) -> None:
    _nights(tmp_path, 8, flags="contended")
    done = benchlib(tmp_path, "history", ".", "--quiet")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "NOTHING JUDGED" in done.stdout and "16 disturbed runs left out" in done.stdout


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_a_steady_history_long_enough_is_a_pass(tmp_path: Path) -> None:
    _nights(tmp_path, 8)
    done = benchlib(tmp_path, "history", ".", "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NOTHING JUDGED" not in done.stdout


def test_the_compare_page_says_nothing_was_certified_when_nothing_was_judged() -> None:
    from benchlib.compare.tables import compare_headline

    table = pd.DataFrame({"configuration": ["a"], "base": [1.0], "new": [1.0], "ratio": [1.0],
                          "low": [float("nan")], "high": [float("nan")], "verdict": ["unknown"],
                          "base_runs": [1], "new_runs": [1]})
    said = compare_headline(regression.Comparison(table), "base")
    assert "Nothing certified" in said and "No significant regression" not in said


def test_every_gating_command_is_in_the_gate_table() -> None:
    assert {"check", "compare", "history", "fleet", "calibrate"} <= set(gate.MEANINGS)
    assert gate.exit_code("history", [gate.NOTHING_JUDGED]) == 3
    assert gate.exit_code("calibrate", [gate.NOTHING_JUDGED]) == 3
    assert gate.exit_code("calibrate", [gate.MEASURED]) == 0
