"""Intervals between runs, checked against scipy's own implementations and calibrated on
simulated repeats: an A/A comparison rarely says "significant", a real slowdown usually does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchlib.analysis import comparisons, gate, intervals
from benchlib.compare import regression


def test_repeats_interval_is_scipys_welch_t_interval_of_the_log_ratio():
    rng = np.random.default_rng(1)
    for n_a, n_b in ((2, 2), (3, 3), (3, 5), (8, 4)):
        a = 100 * np.exp(rng.normal(0, 0.1, n_a))
        b = 90 * np.exp(rng.normal(0, 0.2, n_b))
        found = intervals.repeats_effect(a, b)
        ref = stats.ttest_ind(np.log(a), np.log(b), equal_var=False).confidence_interval(0.95)
        assert found["low"] == pytest.approx(np.exp(ref.low), rel=1e-9)
        assert found["high"] == pytest.approx(np.exp(ref.high), rel=1e-9)
        assert found["geomean"] == pytest.approx(stats.gmean(a) / stats.gmean(b))
        assert found["known"] and found["method"] == f"Welch t interval over {n_a} + {n_b} runs"


def test_several_pairs_use_scipys_one_sample_t_interval_of_their_log_ratios():
    ratios = np.array([1.10, 1.25, 0.98, 1.15])
    found = intervals.effect(pd.DataFrame({"ratio": ratios}))
    ref = stats.ttest_1samp(np.log(ratios), 0.0).confidence_interval(0.95)
    assert (found["low"], found["high"]) == pytest.approx((np.exp(ref.low), np.exp(ref.high)))
    assert found["method"] == "t interval over 4 pairs of configurations"


def test_a_significant_interval_agrees_with_a_rank_test_on_clear_cases():
    """Where the repeats do not overlap at all (8 against 8), Mann-Whitney's U test and the
    interval agree that the sides differ; where they interleave, both say nothing."""
    fast, slow = np.linspace(100, 110, 8), np.linspace(80, 88, 8)
    assert intervals.repeats_effect(fast, slow)["significant"]
    assert stats.mannwhitneyu(fast, slow).pvalue < 0.05
    mixed_a, mixed_b = np.array([100, 102, 98, 101, 99, 103, 97, 100.5]), \
        np.array([101, 99, 100, 102, 98, 100.2, 99.5, 101.5])
    assert not intervals.repeats_effect(mixed_a, mixed_b)["significant"]
    assert stats.mannwhitneyu(mixed_a, mixed_b).pvalue > 0.05


@pytest.mark.parametrize("runs", [(1, 1), (1, 3), (3, 1)])
def test_fewer_than_two_runs_a_side_is_unknown_never_significant(runs):
    found = intervals.repeats_effect([100.0] * runs[0], [50.0] * runs[1])
    assert not found["known"] and not found["significant"]
    assert "set repeats: 3" in found["method"]
    one_pair = comparisons.effect(pd.DataFrame({"ratio": [2.0], "a": [100.0], "b": [50.0]}))
    assert not one_pair["known"] and "one run each" in intervals.describe_effect(one_pair)


@pytest.mark.parametrize(("spread", "power"), [(0.05, 0.9), (0.10, 0.4)])
def test_simulated_a_a_rarely_and_planted_slowdown_often_called(spread, power):
    """3 repeats a side at 5 % and 10 % run-to-run spread (this machine's is 5-15 %): in A/A a
    change claimed (regression or improvement) is rare (at most 3 % of 400 trials; "undecided",
    an interval too wide to tell, claims none), and a 25 % slowdown is called a regression in
    most trials at 5 % spread and in a good share at 10 %."""
    rng = np.random.default_rng(7)
    trials, alarms, found = 400, 0, 0
    for _ in range(trials):
        base = 100 * np.exp(rng.normal(0, spread, 3))
        same = 100 * np.exp(rng.normal(0, spread, 3))
        slower = 75 * np.exp(rng.normal(0, spread, 3))
        alarms += regression.verdict(intervals.repeats_effect(same, base)) in ("regression",
                                                                               "improvement")
        found += regression.verdict(intervals.repeats_effect(slower, base)) == "regression"
    assert alarms / trials <= 0.03
    assert found / trials >= power


def _runs(campaign: str, values: list[float], flagged: str = "") -> pd.DataFrame:
    return pd.DataFrame([{"campaign": campaign, "benchmark": "train", "model": "resnet18",
                          "batch_size": 16, "status": "ok", "throughput": v, "repeat": i,
                          "flags": flagged} for i, v in enumerate(values)])


def test_a_contended_pair_is_unreliable_whatever_its_numbers():
    base, new = _runs("a", [100, 101, 99]), _runs("b", [50, 51, 49], flagged="contended,noisy")
    row = regression.compare(base, new).table.iloc[0]
    assert row["verdict"] == "unreliable"
    assert "new: contended (3 of 3 runs)" in row["reason"] and "idle node" in row["reason"]
    assert gate.exit_code("compare", pd.Series([row["verdict"]])) == 3


def test_exit_codes_of_a_comparison():
    assert gate.exit_code("compare", pd.Series(["no change", "improvement"])) == 0
    assert gate.exit_code("compare", pd.Series(["no change", "unknown"])) == 3
    assert gate.exit_code("compare", pd.Series(["regression", "unreliable"])) == 1
    assert gate.exit_code("compare", pd.Series(["no change", "only in new"])) == 0


def test_one_run_each_is_unknown_and_repeats_decide():
    once = regression.compare(_runs("a", [100]), _runs("b", [60])).table.iloc[0]
    assert once["verdict"] == "unknown" and "one run each" in once["reason"]
    thrice = regression.compare(_runs("a", [100, 102, 98]), _runs("b", [60, 61, 59])).table.iloc[0]
    assert thrice["verdict"] == "regression"
    assert thrice["interval"] == ("Welch t interval over 3 + 3 runs (base + new); one campaign each: the "
                                  "noise between campaigns is unknown")


def test_repeats_run_interleaved_by_default_and_grouped_on_request():
    from benchlib.inputs.params import SweepFile, expand

    spec = {"campaign": "c", "notebook": "train", "grid": {"batch_size": [8, 16]}, "repeats": 2}
    order = [(p.parameters["batch_size"], p.repeat, p.order) for p in expand(SweepFile(**spec))]
    assert order == [(8, 0, 0), (16, 0, 1), (8, 1, 2), (16, 1, 3)]  # ABAB
    grouped = expand(SweepFile(**spec, repeat_order="grouped"))
    assert [(p.parameters["batch_size"], p.repeat) for p in grouped] == \
        [(8, 0), (8, 1), (16, 0), (16, 1)]


def test_each_record_says_where_its_point_ran_in_the_sweep():
    from benchlib.execute.sweep import point_context
    from benchlib.inputs.params import SweepFile, expand

    spec = SweepFile(campaign="c", notebook="train", grid={"batch_size": [8, 16]}, repeats=2)
    contexts = [point_context(p) for p in expand(spec)]
    assert [(c["sweep_order"], c["repeat"]) for c in contexts] == [(0, 0), (1, 0), (2, 1), (3, 1)]
