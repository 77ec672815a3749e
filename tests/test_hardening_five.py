"""The fifth hardening round (issue 55): copies of a campaign, a metric that may be negative,
the bootstrap's memory, a node's wrong clock, an unbounded ``min_size``, nodes whose runs
measure 0 and an energy efficiency no device could give. Each case as a user meets it: the
command as a subprocess from the folder holding the campaigns, relative paths, or the Python
API from a fresh interpreter."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import sys
import tracemalloc
import uuid
from pathlib import Path

import numpy as np
import pytest

from tests.fakes import write_record_notebook
from tests.walk import benchlib

RUN = {"schema_version": 2, "cluster": "c", "host": "n1", "gpu": "H100", "benchmark": "train",
       "model": "resnet50", "dataset": "synthetic", "precision": "amp_bf16", "num_devices": 1,
       "num_nodes": 1, "unit": "images/s", "status": "ok", "error": "", "iterations": 50,
       "wall_time_s": 10.0, "batch_size": 32}


def _runs(folder: Path, campaign: str, values: list[float], column: str = "throughput",
          **more: object) -> None:
    for repeat, value in enumerate(values):
        write_record_notebook(folder / f"r{repeat}.ipynb",
                              {**RUN, "throughput": 1000.0, "campaign": campaign,
                               "repeat": repeat, column: value, "run_id": uuid.uuid4().hex,
                               **more})


def _said(done: subprocess.CompletedProcess) -> str:
    return done.stdout + done.stderr


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_copies_of_the_base_campaign_count_once(tmp_path: Path) -> None:
    """Two copies of the base folder beside it (cp -r, a restored backup) are the same runs:
    before, they counted as three campaigns with no noise between them and a 10 % slower new
    campaign became a regression (exit 1); as one campaign each, the noise between campaigns is
    unknown and -10 % is within the 15 % floor: undecided (exit 3), saying what would tell."""
    _runs(tmp_path / "base" / "orig", "base", [1000.0, 1012.0, 991.0])
    _runs(tmp_path / "new", "new", [898.0, 905.0, 890.0])
    for copy in ("copy1", "copy2"):
        shutil.copytree(tmp_path / "base" / "orig", tmp_path / "base" / copy)
    done = benchlib(tmp_path, "compare", "base", "new")
    out = _said(done)
    assert done.returncode == 3, out  # one campaign each: -10 % is undecided, not a regression
    assert "6 of the 9 base runs are copies of runs found in another folder" in out
    assert "each run counted once" in out and "REGRESSION" not in out and "UNDECIDED" in out


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_a_signed_metric_is_compared_on_its_values(tmp_path: Path) -> None:
    """launch_overhead_s may be negative: base mean 0.54 s, new 0.34 s (two runs below 0).
    Before, the negative values were dropped and new read 0.81 s: a regression (exit 1)."""
    _runs(tmp_path / "base", "base", [0.52, 0.55, 0.53, 0.56], column="launch_overhead_s")
    _runs(tmp_path / "new", "new", [0.80, 0.82, -0.13, -0.13], column="launch_overhead_s")
    done = benchlib(tmp_path, "compare", "base", "new", "--metric", "launch_overhead_s")
    out = _said(done)
    assert done.returncode == 3, out  # undecided: the interval holds a 5 % change either way
    assert "REGRESSION" not in out and "may be negative" in out and "UNDECIDED" in out
    assert "0.54 0.34" in out  # the means of the values, negatives included


def test_a_signed_metric_regresses_by_its_values() -> None:
    import pandas as pd

    from benchlib.compare import regression

    def side(name: str, values: list[float]) -> pd.DataFrame:
        return pd.DataFrame([{**RUN, "campaign": name, "source": f"{name}/r{i}.ipynb",
                              "run_id": f"{name}{i}", "launch_overhead_s": v, "throughput": 1.0}
                             for i, v in enumerate(values)])

    found = regression.compare(side("base", [-0.10, -0.12, -0.11, -0.09]),
                               side("new", [0.30, 0.31, 0.29, 0.32]), metric="launch_overhead_s")
    row = found.table.iloc[0]
    assert row["verdict"] == "regression" and row["base"] < 0 < row["new"], row.to_dict()


def test_the_bootstraps_memory_does_not_grow_with_the_runs() -> None:
    """Before, the hierarchical bootstrap held resamples x campaigns x runs draws at once:
    2 campaigns of 20,000 runs took 640 MB; now at most 2 x 32 MiB whatever the runs."""
    from benchlib.analysis.campaign_noise import bootstrap_variance

    rng = np.random.default_rng(3)
    groups = [np.log(1000 + rng.standard_normal(20_000)) for _ in range(2)]
    tracemalloc.start()
    try:
        variance = bootstrap_variance(groups)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200 << 20, f"peak {peak / 2**20:.0f} MiB"
    assert 0 < variance < 1e-4


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_a_run_from_the_future_is_named_and_hides_nothing(tmp_path: Path) -> None:
    """One record dated 2099 on node007 after a -25 % drop in its last three nights: before,
    the drop disappeared (exit 0, 'possible shift not listed') and the 2099 run was not named."""
    rng = np.random.default_rng(4)
    for night in range(1, 21):
        day = f"2026-11-{night:02d}"
        _runs(tmp_path / day, f"nightly-{day}",
              [1000 * (0.75 if night > 17 else 1.0) * (1 + 0.01 * rng.standard_normal())
               for _ in range(3)], host="node007", started_at=f"{day}T01:00:00+00:00")
    _runs(tmp_path / "2099-01-01", "nightly-2099", [1000.0], host="node007",
          started_at="2099-01-01T01:00:00+00:00")
    done = benchlib(tmp_path, "history", ".", "--quiet")
    out = _said(done)
    assert done.returncode == 1, out
    assert "-25 %" in out and "from 2026-11-18" in out
    assert "1 run dated 2099-01-01 on node007, after now" in out and "left out" in out


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_min_size_is_bounded_by_the_series_or_refused() -> None:
    """From a fresh interpreter: min_size=10**9 ran past 60 s; now refused at once naming the
    allowed range, and min_size=10**6 answers (no loop as long as min_size)."""
    code = """
import pandas as pd
from benchlib import analysis
from benchlib.errors import InputError
df = pd.DataFrame([{"benchmark": "train", "model": "m", "unit": "images/s", "status": "ok",
                    "host": "n1", "campaign": f"c{i}", "started_at": f"2026-11-{i + 1:02d}T00:00Z",
                    "throughput": 1000.0 + i % 3} for i in range(20)])
try:
    analysis.change_points(df, min_size=10**9)
except InputError as error:
    print("refused:", error)
print("answered:", len(analysis.change_points(df, min_size=10**5).table))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "refused: change_points: min_size 1000000000" in done.stdout
    assert "from 1 to 100,000" in done.stdout and "answered: 0" in done.stdout


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_nodes_whose_runs_measure_zero_are_failed_and_drained(tmp_path: Path) -> None:
    """node004 measured 0 in every run, node005 in its latest night: before, both were ok
    (exit 0); a run that did no work is a failed run, as history counts it."""
    rng = np.random.default_rng(6)
    today = dt.datetime.now(dt.timezone.utc).date()
    for back in (3, 2, 1):
        night = today - dt.timedelta(days=back)
        for node in range(1, 7):
            zero = node == 4 or (node == 5 and back == 1)
            _runs(tmp_path / str(night) / f"node{node:03d}", f"nightly-{night}",
                  [0.0 if zero else 1000 * (1 + 0.01 * rng.standard_normal()) for _ in range(2)],
                  host=f"node{node:03d}", started_at=f"{night}T01:00:00+00:00")
    done = benchlib(tmp_path, "fleet", ".", "--drain-list")
    out = _said(done)
    assert done.returncode == 1, out
    assert "2 failed, 4 ok nodes" in out
    for node in ("node004", "node005"):
        assert f"nodename={node} state=drain" in out
    assert "throughput 0: the run did no work" in out


def test_an_energy_efficiency_no_device_could_give_is_flagged_not_shown() -> None:
    import pandas as pd

    from benchlib.analysis import energy
    from benchlib.records import flags

    huge = {**RUN, "throughput": 1000.0, "time_iteration_s": 0.032, "samples": 32_000,
            "samples_per_joule": 1e308}
    beyond_power = {**huge, "samples_per_joule": 5_000.0}  # 0.2 W for 1,000 images/s
    plausible = {**huge, "samples_per_joule": 4.2}  # 238 W
    assert flags.record_flags(huge) == ["energy_implausible"]
    assert flags.record_flags(beyond_power) == ["energy_implausible"]
    assert flags.record_flags(plausible) == []
    shown = energy.with_per_joule(pd.DataFrame([huge, beyond_power, plausible]))[energy.COLUMN]
    assert shown.isna().tolist() == [True, True, False]
    assert energy.record_said(huge).startswith("implausible")
    assert "energy_implausible" in flags.FLAGS
