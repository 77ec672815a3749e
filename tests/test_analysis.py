"""Hand-computed cases for every analysis function."""

import math
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from benchlib import reference
from benchlib.analysis import comparisons, lab_units


def _runs(rows, columns=("model", "batch_size", "num_devices", "throughput")):
    return pd.DataFrame(rows, columns=list(columns))


def test_scaling_against_the_fewest_devices_with_repeats():
    df = _runs([
        ("resnet50", 64, 1, 100.0), ("resnet50", 64, 1, 110.0), ("resnet50", 64, 1, 90.0),
        ("resnet50", 64, 2, 190.0), ("resnet50", 64, 4, 360.0),
        # no 1-device run: the 2-device run is the baseline
        ("inception_v3", 64, 2, 80.0), ("inception_v3", 64, 8, 240.0),
    ])
    scaled = comparisons.scaling(df)
    r50 = scaled[scaled["model"] == "resnet50"].set_index("throughput")
    assert r50.loc[100.0, "speedup"] == 1.0  # baseline = median of the repeats (100)
    assert r50.loc[190.0, "speedup"] == pytest.approx(1.9)
    assert r50.loc[190.0, "efficiency"] == pytest.approx(0.95)
    assert r50.loc[360.0, "efficiency"] == pytest.approx(0.9)
    inc = scaled[scaled["model"] == "inception_v3"].set_index("num_devices")
    assert inc.loc[8, "speedup"] == pytest.approx(3.0)
    assert inc.loc[8, "efficiency"] == pytest.approx(3.0 * 2 / 8)


def test_scaling_by_names_the_configuration_columns():
    df = _runs([("a", 32, 1, 10.0), ("a", 64, 2, 30.0)])
    assert comparisons.scaling(df)["speedup"].tolist() == [1.0, 1.0]  # two configurations
    assert comparisons.scaling(df, by=["model"])["speedup"].tolist() == [1.0, 3.0]


def test_scaling_table_has_a_column_per_configuration_and_a_median():
    df = _runs([("a", 32, 1, 10.0), ("a", 32, 2, 18.0), ("b", 32, 1, 20.0), ("b", 32, 2, 40.0)])
    table = comparisons.scaling_table(df)
    assert list(table.columns) == ["a", "b", "median"]
    assert table.loc[2, "median"] == 29.0
    speedup = comparisons.scaling_table(df, value="speedup")
    assert speedup.loc[2].tolist() == pytest.approx([1.8, 2.0, 1.9])


def test_compare_pairs_equal_configurations_and_takes_medians():
    df = pd.DataFrame({
        "model": ["r50", "r50", "r50", "r50", "inc", "inc", "vit"],
        "dataset": ["synthetic", "real", "real", "real", "synthetic", "real", "synthetic"],
        "throughput": [300.0, 100.0, 140.0, 120.0, 200.0, 50.0, 999.0],
    })
    pairs = comparisons.compare(df, "dataset", "synthetic", "real")
    assert list(pairs.columns) == ["model", "a", "b", "ratio",  # the first design's, then the
                                   "a_runs", "b_runs", "a_logs", "b_logs"]  # repeats behind them
    assert pairs.set_index("model")["ratio"].to_dict() == {"r50": 2.5, "inc": 4.0}  # vit unpaired
    assert comparisons.headline(pairs) == pytest.approx((2.5 * 4.0) ** 0.5)  # geometric mean
    assert comparisons.headline(pairs) == comparisons.effect(pairs)["geomean"]


def test_compare_ignores_columns_that_apply_to_one_side_only():
    df = pd.DataFrame({"dataset": ["synthetic", "synthetic", "real"],
                       "synthetic_kind": ["device", "loader", ""],
                       "batch_size": [32, 32, 32], "throughput": [400.0, 200.0, 100.0]})
    pairs = comparisons.compare(df, "dataset", "synthetic", "real")
    assert pairs["ratio"].tolist() == [4.0, 2.0]


def test_compare_leaves_out_failed_runs():
    df = pd.DataFrame({"batch_size": [64, 32, 64], "status": ["ok", "ok", "failed"],
                       "throughput": [120.0, 100.0, 5.0]})
    pairs = comparisons.compare(df, "batch_size", 64, 32)
    assert pairs["ratio"].tolist() == [1.2]
    assert len(comparisons.failed(df)) == 1


def test_breakdown_names_the_bottleneck_and_data_share():
    df = pd.DataFrame({"cluster": ["x", "x"], "benchmark": ["train", "train"],
                       "time_data_s": [0.5, 0.7], "time_forward_s": [0.2, 0.2],
                       "time_backward_s": [0.3, 0.3], "time_iteration_s": [1.0, 1.2]})
    row = comparisons.breakdown(df).iloc[0]
    assert (row["time_data_s"], row["time_iteration_s"], row["count"]) == (0.6, 1.1, 2)
    assert row["bottleneck"] == "data"
    assert row["data_share"] == pytest.approx(0.6 / 1.1)


def test_expected_flags_a_system_slower_than_it_should_be():
    # reference says a JADE2 V100 runs at 0.67 x a TN V100; measured 3 x slower in time
    df = pd.DataFrame({"cluster": ["JADE2", "TN"], "gpu": ["V100", "V100"],
                       "time_iteration_s": [0.9, 0.3]})
    row = comparisons.expected(df, "cluster", "JADE2", "TN", 0.67, metric="time_iteration_s").iloc[0]
    assert row["speed_ratio"] == pytest.approx(1 / 3)
    assert row["slowdown"] == pytest.approx(0.67 * 3)
    speed = pd.DataFrame({"gpu": ["V100", "A40"], "throughput": [80.0, 100.0]})
    assert comparisons.expected(speed, "gpu", "V100", "A40", 0.943)["slowdown"].iloc[0] == \
        pytest.approx(0.943 / 0.8)


def test_extrapolate_and_lab_units():
    df = pd.DataFrame({"time_iteration_s": [1.8], "throughput": [1e7], "unit": ["voxels/s"],
                       "benchmark": ["unet3d_predict"]})  # its kind reports the voxel units
    assert comparisons.extrapolate(df, iterations=100_000)["hours"].iloc[0] == pytest.approx(50.0)
    assert comparisons.extrapolate(df, samples=3.6e10)["hours"].iloc[0] == pytest.approx(1.0)
    units = lab_units.derived_units(df).iloc[0]
    assert units["iterations_per_minute"] == pytest.approx(60 / 1.8)
    assert units["days_to_100k"] == pytest.approx(100_000 * 1.8 / 86_400)
    assert units["megavoxels_per_s"] == 10.0
    assert units["hours_per_teravoxel"] == pytest.approx(1e12 / 1e7 / 3600)
    with pytest.raises(ValueError, match="exactly one"):
        comparisons.extrapolate(df)


def test_aggregate_repeats():
    df = pd.DataFrame({"model": ["a"] * 4 + ["b"], "throughput": [1.0, 2.0, 3.0, 4.0, 5.0]})
    table = comparisons.aggregate(df).set_index("model")
    assert table.loc["a", "throughput"] == 2.5 and table.loc["a", "count"] == 4
    assert table.loc["a", "spread"] == pytest.approx(1.5 / 2.5)
    assert table.loc["b", "spread"] == 0.0


def test_reference_records_keep_provenance_and_reproduce_the_published_figures():
    breakdown = reference.breakdown_records()
    assert len(breakdown) == 30 and breakdown["provenance"].str.startswith("reference").all()
    tn = breakdown.query("cluster == 'TN' and gpu == 'V100' and dataset == 'real' "
                         "and benchmark == 'train'").iloc[0]
    assert tn["time_iteration_s"] == pytest.approx(0.0100 + 0.1233 + 0.2378)
    unet = reference.unet3d_records()
    v100 = unet.query("cluster == 'SMC:V100' and benchmark == 'unet3d_predict'").iloc[0]
    assert v100["throughput"] == pytest.approx(1.9e9 / 148.4)
    units = lab_units.derived_units(unet.query("benchmark == 'unet3d_train'"))
    first = units.iloc[0]  # P40: 1001 iterations in 1816.7 s
    assert first["iterations_per_minute"] == pytest.approx(1001 / 1816.7 * 60)
    assert not math.isnan(first["days_to_100k"])
    assert "JADE2" in (resources.files("benchlib.reference") / "README.md").read_text()


def test_unet3d_units_put_a_campaign_beside_the_reference():
    runs = pd.DataFrame([
        {"benchmark": "unet3d_train", "status": "ok", "gpu": "H100", "time_iteration_s": 0.864,
         "throughput": 2e5, "unit": "voxels/s"},
        {"benchmark": "unet3d_predict", "status": "ok", "gpu": "H100", "throughput": 5e7,
         "unit": "voxels/s", "time_iteration_s": 0.1},
        {"benchmark": "train", "status": "ok", "gpu": "H100", "throughput": 900.0,
         "unit": "images/s", "time_iteration_s": 0.3},
    ])
    table = lab_units.unet3d_units(runs, reference.unet3d_records())
    ours = table[table["source"] == "this campaign"].set_index("benchmark")
    assert len(ours) == 2  # the classification run is left out
    assert ours.loc["unet3d_train", "days_to_100k"] == pytest.approx(1.0)  # 86400 s
    assert ours.loc["unet3d_train", "iterations_per_minute"] == pytest.approx(60 / 0.864)
    assert np.isnan(ours.loc["unet3d_train", "hours_per_teravoxel"])
    assert ours.loc["unet3d_predict", "hours_per_teravoxel"] == pytest.approx(1e12 / 5e7 / 3600)
    assert np.isnan(ours.loc["unet3d_predict", "days_to_100k"])
    ref = table[(table["source"] == "reference") & (table["cluster"] == "SMC:V100")]
    v100_predict = ref[ref["benchmark"] == "unet3d_predict"].iloc[0]
    assert v100_predict["megavoxels_per_s"] == pytest.approx(1.9e9 / 148.4 / 1e6)
    assert lab_units.unet3d_units(runs.iloc[2:]).empty
