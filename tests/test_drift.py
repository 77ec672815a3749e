"""A slow drift is one finding (issue 52): on the planted 80-night history of
``benchmarks/drift_planted.py`` (-0.3 % a week, one -8 % step on night 60, nightly noise)
``benchlib history`` lists the step and one drift, never a staircase; a steady history and a
history with only the step get no drift; the History page's plot draws the slope."""

from __future__ import annotations

import pandas as pd

from benchlib.history import said, series

from .conftest import benchmark_module

PLANTED = benchmark_module("drift_planted")


def test_a_drift_with_a_step_is_one_drift_and_one_step() -> None:
    both = 0
    for seed in range(8):
        found = series.change_points(PLANTED.drifting(seed))
        assert len(found.table) == 1, found.table  # the step, never a stair of the drift
        assert found.table.iloc[0]["ratio"] < 0.95
        assert len(found.drifts) <= 1
        both += len(found.drifts)
        for drift in found.drifts:
            assert -0.006 < drift["per_week"] < -0.001 and drift["low"] < -0.003 < drift["high"]
    assert both >= 6, both  # measured: 15 of 20 seeds, 6 of these 8 (docs/measurements.md)


def test_no_drift_where_there_is_none() -> None:
    for seed in range(6):
        steady = series.change_points(PLANTED.drifting(seed, steady=True))
        assert not steady.drifts and steady.table.empty
        stepped = PLANTED.drifting(seed, steady=True)
        day = pd.to_datetime(stepped["started_at"], utc=True)
        stepped = stepped.assign(throughput=stepped["throughput"].where(
            day < day.min() + pd.Timedelta(days=60), stepped["throughput"] * 0.92))
        only_step = series.change_points(stepped)
        assert not only_step.drifts and len(only_step.table) == 1


def test_history_says_the_drift_in_one_line(tmp_path) -> None:
    found = series.change_points(PLANTED.drifting(0))
    [line] = [text for text in said.lines(found) if " drifts " in text]
    assert line.startswith("throughput drifts -0.29 % a week") and "so far" in line
    assert "since 2026-09-01" in line and "(drift;" in line


def test_the_history_plot_draws_the_slope() -> None:
    from benchlib.history import plot

    frame = PLANTED.drifting(0)
    found = series.change_points(frame)
    figure = plot.node_plot(series.series(frame), found.table, drift=found.drifts[0])
    labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert any("drifting -0.29 % a week from 2026-09-01" in label for label in labels)
    lines = [line for line in figure.axes[0].get_lines() if len(line.get_xdata()) > 2]
    first = lines[0].get_ydata()
    assert first[0] > first[-1] * 1.01  # the segment before the step slopes down
