"""Conformance of the change points (``benchlib.history.change_points`` and ``benchlib
history``'s frame path) with the series that Apache Otava and MongoDB's signal-processing-
algorithms ship in their own tests, each with the change points it must give, and with
simulated nightly histories whose runs move together within a night.

The series are data (``tests/data/change_point_series.json``): apache/otava at
1ceb1537a49d516cf6cef9a79bea6926002082f8 (tests/analysis_test.py, series_test.py,
change_point_divisive_test.py, tigerbeetle_test.py) and mongodb/signal-processing-algorithms
at aec099a9696d17ccd1e85a357313614a01f859a2 (tests/test_detection.py, test_e_divisive.py);
the file names each case's test and how the expectation was read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchlib import analysis
from benchlib.analysis import gate
from benchlib.history import change_points as change_detection
from benchlib.history import said as history_said

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from history_data import START as FIRST_NIGHT
from history_data import nights

DATA = json.loads((Path(__file__).parent / "data" / "change_point_series.json").read_text())
CASES = {case["id"]: case for case in DATA["cases"]}
#: Where benchlib answers otherwise on purpose, and what it answers.
DIFFERENT = {
    # MongoDB's E-divisive puts the recovery after the odd point at 32 (50, 50, 100, 50 ...);
    # benchlib names 32 (and 2) an outlier and finds the recovery where it starts.
    "mongodb/test_detection.py::TestPostRunCheck::test_regression_and_recovery": [15, 30],
}
START = pd.Timestamp("2026-01-01T00:00Z")


def _found(case: dict) -> list[int]:
    magnitude = case["params"].get("min_magnitude", 0.0) if case["source"] == "otava" else 0.0
    return [p.index for p in change_detection.change_points(case["values"],
                                                            min_magnitude=magnitude)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_published_series(name):
    """Each published series gives its test's change points with benchlib's defaults (Otava's
    ``min_magnitude`` where its test sets one; it means the same here)."""
    case, found = CASES[name], _found(CASES[name])
    if name in DIFFERENT:
        assert found == DIFFERENT[name]
    elif case["match"] == "exact":
        assert found == case["expected"]
    elif case["match"] == "none":
        assert found == []
    elif case["match"] == "contains":
        assert set(case["expected"]) <= set(found)
        assert len(found) == case.get("expected_count", len(found))
    else:
        assert len(found) == case["expected_count"]


def _one_run_a_day(values: object) -> pd.DataFrame:
    values = np.asarray(values, dtype=float)
    return pd.DataFrame({"benchmark": "train", "model": "resnet50", "host": "node001",
                         "status": "ok", "throughput": values,
                         "campaign": [f"night-{i}" for i in range(values.size)],
                         "started_at": [(START + pd.Timedelta(days=i)).isoformat()
                                        for i in range(values.size)]})


def _days(table: pd.DataFrame) -> list[int]:
    return sorted(int((t - START).days) for t in table["time"])


FRAME_CASES = [name for name, case in sorted(CASES.items())
               if case["match"] in ("exact", "none") and min(case["values"]) > 0]


@pytest.mark.parametrize("name", FRAME_CASES)
def test_published_series_as_a_history(name):
    """Called as a user would (``analysis.change_points(df)``, one run per point, one day
    apart, the threshold the test's ``min_magnitude`` where it sets one), every change of the
    published series is listed at its own position, and nothing else."""
    case = CASES[name]
    threshold = case["params"].get("min_magnitude") or 0.05
    found = analysis.change_points(_one_run_a_day(case["values"]), threshold=threshold)
    table = found.table
    assert _days(table) == DIFFERENT.get(name, case["expected"])


def test_tigerbeetle_outlier_is_named_not_a_change():
    """Otava's TigerBeetle series: the anomalous night at 10 is named an outlier; the real 12 %
    drop stays at 15 (it moved to 10 before)."""
    values = CASES["otava/tigerbeetle_test.py::test_tb_old_defaults"]["values"]
    found = change_detection.detect(values)
    assert found.outliers == [10]
    assert [p.index for p in found.points][:1] == [15]
    found = analysis.change_points(_one_run_a_day(values[:60]))
    table = found.table
    assert _days(table) == [15]
    assert [int((o["time"] - START).days) for o in found.outliers] == [10]
    assert any("outlier campaign" in line and "1970" not in line
               for line in history_said.lines(found))


@pytest.mark.parametrize("n", range(3, 100))
def test_zero_to_one_step(n):
    """``[0]*n + [1]*n``: one change at n, for every length (values of 0 were dropped before)."""
    assert [p.index for p in change_detection.change_points([0.0] * n + [1.0] * n)] == [n]


def test_positions_are_the_users_own():
    values = [0, 0, 0, 1.00, 1.12, 0.90, 0.50, 0.51, 0.48, 0.48, 0.55]
    assert 6 in [p.index for p in change_detection.change_points(values)]


@pytest.mark.parametrize("length", [3, 5, 10, 40])
def test_two_equal_steps_of_constant_segments(length):
    values = [50.0] * length + [100.0] * length + [150.0] * length
    assert [p.index for p in change_detection.change_points(values)] == [length, 2 * length]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_values_are_refused_by_position(bad):
    with pytest.raises(ValueError, match=r"position 4 "):
        change_detection.change_points([1.0, 1.0, 1.0, 1.0, bad, 1.0, 1.0])


def test_failed_runs_are_counted_in_a_history():
    """Runs with throughput 0 or NaN are failed runs, counted on the summary line; the rest of
    the history keeps its own dates."""
    values = [100.0] * 10 + [0.0, float("nan")] + [100.0] * 8
    found = analysis.change_points(_one_run_a_day(values))
    table = found.table
    assert len(table) == 0 and found.failed == 2
    said = history_said.lines(found)[-1]
    assert "2 failed runs (failed, or throughput 0, negative or missing) left out" in said


def _nightly(seed: int, step: dict | None = None, nodes: int = 1) -> pd.DataFrame:
    """40 nights, 3 runs a night: runs differ by 1 %, nights by 2 % (every run of a night moves
    together)."""
    frame = nights(nodes=nodes, nights=40, noise=0.01, repeats=3, step=step, seed=seed)
    rng = np.random.default_rng(seed + 1)
    night = {c: float(np.exp(0.02 * rng.standard_normal())) for c in frame["campaign"].unique()}
    frame["throughput"] *= frame["campaign"].map(night)
    return frame


@pytest.mark.slow  # the edit loop's slowest (make test runs it)
def test_steady_nightly_histories_have_no_change_point():
    """100 steady 40-night histories (4,000 nights) with correlated runs: no change point
    listed (goal: at most 1 per 1,000 nights)."""
    frame = pd.concat([_nightly(seed).assign(host=f"node{seed:03d}") for seed in range(100)],
                      ignore_index=True)
    found = analysis.change_points(frame)
    table = found.table
    assert found.series == 100 and found.points == 4000
    assert len(table) == 0


def test_planted_step_found_within_a_night():
    """A planted 10 % slowdown from a night between 5 and 35: found within +-1 night in at
    least 9 of 10 histories, as a regression."""
    rng = np.random.default_rng(7)
    found = 0
    for seed in range(10):
        night = int(rng.integers(5, 36))
        table = analysis.change_points(_nightly(100 + seed, {"node001": (night, 0.9)})).table
        days = [int((t - FIRST_NIGHT).days) for t in table["time"]]
        found += any(abs(d - night) <= 1 for d in days)
        assert set(table["verdict"]) <= {"regression"}
    assert found >= 9


def test_too_early_to_tell():
    """A drop in the newest two nights is not a change point yet: it is said, not counted as a
    regression."""
    frame = _nightly(3)
    last = sorted(frame["campaign"].unique())[-2:]
    frame.loc[frame["campaign"].isin(last), "throughput"] *= 0.8
    found = analysis.change_points(frame)
    table = found.table
    assert len(table) == 0
    said = history_said.lines(found)
    assert any(line.startswith("too early to tell: throughput -2") for line in said)
    assert gate.exit_code("history", table["verdict"]) == 0


def test_long_random_walk_is_fast_enough_to_run():
    """10,000 points of a random walk (44 s before the merge retested only neighbours): the
    time is in docs/measurements.md; here only that it ends and finds changes."""
    walk = np.cumsum(np.random.default_rng(0).standard_normal(10_000)) + 1_000
    assert len(change_detection.change_points(walk)) > 10


# -- found by a review: what a careless or hostile history looks like -----------------------

def test_one_campaign_name_reused_night_after_night_is_one_campaign_a_night():
    """`campaign: fleet-nightly` under outputs/nightly/<date>/: each night's folder is its own
    campaign (40 nights stay 40, and the drop on node002 is found)."""
    frame = _nightly(11, {"node001": (25, 0.88)})
    frame["source"] = [f"/outputs/nightly/{c[-10:]}/fleet-nightly/{s.rsplit('/', 1)[1]}"
                       for c, s in zip(frame["campaign"], frame["source"], strict=True)]
    frame["campaign"] = "fleet-nightly"
    found = analysis.change_points(frame)
    table = found.table
    assert found.campaigns == 40 and list(table["verdict"]) == ["regression"]


def test_alternating_values_are_not_outliers():
    values = np.array([100.0, 80.0] * 10) * np.exp(0.01 * np.random.default_rng(0)
                                                     .standard_normal(20))
    assert change_detection.detect(values).outliers == []


def test_three_odd_nights_in_a_row_are_a_segment_not_outliers():
    values = 100 * np.exp(0.01 * np.random.default_rng(1).standard_normal(30))
    values[13:16] *= 1.2
    found = change_detection.detect(values)
    assert found.outliers == [] and [p.index for p in found.points] == [13, 16]


def test_a_drop_in_the_newest_night_alone_is_too_early_to_tell():
    found = analysis.change_points(_one_run_a_day([100.0, 101, 99, 100, 102, 98, 100, 101, 99,
                                                   100, 70]))
    table = found.table
    said = history_said.lines(found)
    assert len(table) == 0 and said[0].startswith("too early to tell: throughput -30 %")
    assert "in the newest 1 campaign (" in said[0]


def test_failed_runs_are_counted_not_dropped_unsaid():
    frame = _one_run_a_day([100.0] * 12).assign(status="ok", error="")
    frame.loc[frame.index[3:5], ["status", "error"]] = ["failed", "CUDA out of memory"]
    found = analysis.change_points(frame)
    assert found.failed == 2 and "2 failed runs (failed, or" in history_said.lines(
        found)[-1]


def test_huge_values_and_bad_parameters():
    assert [p.index for p in change_detection.change_points([1e200] * 5 + [2e200] * 5)] == [5]
    for bad in ({"min_size": -1}, {"max_pvalue": float("nan")}, {"min_magnitude": -0.1}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            change_detection.change_points([1.0, 2.0, 3.0], **bad)
    for shape in ([[1.0, 2.0], [3.0, 4.0]], ["1", "2"]):
        with pytest.raises(ValueError, match="change_points: "):
            change_detection.change_points(shape)
