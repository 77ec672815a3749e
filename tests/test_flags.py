"""Flags: which runs' numbers not to take at face value, and sentences that say why."""

from __future__ import annotations

import pandas as pd

from benchlib.analysis import comparisons
from benchlib.analysis.intervals import describe_effect, effect
from benchlib.records import flags

BASE = {"schema_version": 1, "status": "ok", "benchmark": "train", "model": "resnet18",
        "dataset": "synthetic", "batch_size": 8, "gpu": "cpu", "unit": "images/s",
        "iterations": 50, "wall_time_s": 10.0, "time_iteration_s": 0.2, "noisy": False,
        "contended": False,
        "contention_cpu_share": 0.01}


def _campaign() -> pd.DataFrame:
    return pd.DataFrame([
        {**BASE, "num_devices": 1, "throughput": 10.0, "contended": True,
         "contention_cpu_share": 0.63},
        {**BASE, "num_devices": 2, "throughput": 140.0},
        {**BASE, "num_devices": 1, "throughput": 100.0, "batch_size": 16},
        {**BASE, "num_devices": 2, "throughput": 150.0, "batch_size": 16},
    ])


def test_record_flags_from_the_runs_own_columns():
    assert flags.record_flags(BASE) == []
    assert flags.record_flags({**BASE, "contended": True, "noisy": True, "throttled_share": 0.2,
                               "iterations": 3}) == ["contended", "throttled", "noisy", "short"]
    assert flags.record_flags({**BASE, "wall_time_s": 0.2}) == ["short"]
    assert flags.record_flags({**BASE, "status": "failed", "contended": True}) == []
    probe = {**BASE, "benchmark": "probe_node", "iterations": 3, "wall_time_s": None,
             "time_iteration_s": None}
    assert flags.record_flags(probe) == []  # no timed loop (probes time each figure on their own)


def test_scaling_flags_superlinear_and_explains_the_contended_baseline():
    scaled = comparisons.scaling(_campaign())
    by_key = scaled.set_index(["batch_size", "num_devices"])
    assert by_key.loc[(8, 2), "speedup"] == 14.0
    assert by_key.loc[(8, 2), "flags"] == "superlinear"
    assert by_key.loc[(8, 1), "flags"] == "contended"
    assert by_key.loc[(16, 2), "flags"] == ""
    assert flags.explain_superlinear(scaled) == [
        "2 devices 14.0x faster than 1 (efficiency 700%): the 1-device run was contended "
        "(others took 63 % of the CPU time); re-run it."]
    lines = flags.explain(scaled)
    assert lines[0].startswith("**contended** (1 of 4 runs): other processes took more than 10%")
    assert lines[1].startswith("**superlinear** (1 of 4 runs):")


def test_join_orders_and_deduplicates_and_marks_labels():
    assert flags.join(["short", "contended", "short", "custom"]) == "contended,short,custom"
    assert flags.of("") == [] and flags.of(None) == []
    assert flags.marked("1 device", "contended") == "1 device ⚠"
    assert flags.marked("1 device", "") == "1 device"


def test_effect_with_consistent_pairs_is_significant_and_with_noise_is_not():
    pairs = pd.DataFrame({"ratio": [1.93, 1.95, 1.91, 1.94]})
    found = effect(pairs)
    assert found["significant"] and 1.9 < found["low"] <= found["geomean"] <= found["high"] < 2.0
    assert describe_effect(found).endswith("significant")
    flat = pd.DataFrame({"ratio": [0.98, 1.03, 1.01, 0.99, 1.04]})
    assert not effect(flat)["significant"]
    assert describe_effect(effect(flat)).endswith("no significant effect")


def test_one_pair_needs_repeats_to_say_anything():
    alone = effect(pd.DataFrame({"ratio": [1.3]}))
    assert not alone["known"] and not alone["significant"]
    assert "one run each: set repeats: 3" in describe_effect(alone)
    # within-run intervals, however tight, decide nothing
    tight_runs = effect(pd.DataFrame({"ratio": [1.3], "a": [130.0], "b": [100.0], "a_low": [128.0],
                                      "a_high": [132.0], "b_low": [99.0], "b_high": [101.0]}))
    assert not tight_runs["known"] and not tight_runs["significant"]


def test_compare_carries_each_sides_repeats_into_the_pairs():
    df = pd.DataFrame([
        *({**BASE, "dataset": "synthetic", "throughput": v, "repeat": i}
          for i, v in enumerate([100.0, 101.0, 99.0])),
        *({**BASE, "dataset": "real", "throughput": v, "repeat": i}
          for i, v in enumerate([50.0, 51.0, 49.0])),
    ])
    pairs = comparisons.compare(df, "dataset", "synthetic", "real")
    assert pairs[["a_runs", "b_runs"]].iloc[0].tolist() == [3, 3]
    found = comparisons.effect(pairs)
    assert found["significant"] and found["method"] == "Welch t interval over 3 + 3 runs"
    flagged = comparisons.compare(df.assign(flags="contended"), "dataset", "synthetic", "real")
    unreliable = comparisons.effect(flagged)
    assert not unreliable["significant"] and "contended" in unreliable["unreliable"]
    assert "unreliable" in describe_effect(unreliable)


def test_a_wide_interval_is_inconclusive_not_no_effect():
    wide = effect(pd.DataFrame({"ratio": [0.3, 2.5, 1.1, 0.6, 1.9]}))
    assert not wide["significant"]
    assert "inconclusive" in describe_effect(wide)
