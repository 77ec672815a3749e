"""The Python API's edge: a bad argument to an analysis function is an InputError naming the
argument and what is allowed (as the command exits 2), never a silent wrong answer; a metric
is judged in the direction the schema gives it."""

from __future__ import annotations

import pandas as pd
import pytest

from benchlib import analysis
from benchlib.compare import regression
from benchlib.errors import InputError
from tests.test_regression import _campaign


def _nights() -> pd.DataFrame:
    """Three nodes, two configurations, four nights each."""
    rows = [{"campaign": f"night{n}", "host": f"node0{h}", "gpu": "H100", "benchmark": "train",
             "model": "resnet50", "batch_size": batch, "unit": "images/s", "status": "ok",
             "flags": "", "throughput": 1000.0 + 10 * n + batch, "time_iteration_s": 0.1,
             "num_devices": 1,
             "started_at": f"2026-11-{20 + n:02d}T01:00:00+00:00"}
            for n in range(4) for h in range(1, 4) for batch in (32, 64)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("call", "said"), [
    (lambda df: analysis.node_states(df, metric="thruput", now="2026-11-25"),
     "node_states: metric thruput: no such column in the table"),
    (lambda df: analysis.node_states(df, expected="node[01-03]", now="2026-11-25"),
     "node_states: expected='node[01-03]': give a list of node names"),
    (lambda df: analysis.node_states(df, expected=["bad name!"], now="2026-11-25"),
     "give a list of node names"),
    (lambda df: analysis.node_states(df, window_days=0, now="2026-11-25"),
     "node_states: window_days=0: give the validity window in days, above 0"),
    (lambda df: analysis.node_states(df, now="tomorrow"), "node_states: now='tomorrow': not a time"),
    (lambda df: analysis.scaling(df, metric="thruput"), "scaling: metric thruput: no such column"),
    (lambda df: analysis.scaling(df, by=["nonexistent"]), "scaling: by: no column 'nonexistent'"),
    (lambda df: analysis.scaling(df, by="model"), "scaling: by='model': give a list"),
    (lambda df: analysis.change_points(df, by=["nosuch"]), "change_points: by: no column 'nosuch'"),
    (lambda df: analysis.change_points(df, metric="batch_size"),
     "change_points: metric batch_size: a configuration column, not a measurement"),
    (lambda df: analysis.compare(df, "nosuch", 1, 2), "compare: factor: no column 'nosuch'"),
    (lambda df: analysis.compare(df, ["batch_size"], 32, 64), "compare: factor=['batch_size']"),
    (lambda df: analysis.compare(df, "batch_size", 32, 64, on=["nope"]), "compare: on: no column"),
    (lambda df: analysis.node_states(df, now=""), "node_states: now='': not a time"),
    (lambda df: analysis.node_states(df, now=5), "node_states: now=5: not a time (a int)"),
    (lambda df: analysis.node_states(df, window_days=True, now="2026-11-25"), "window_days=True"),
    (lambda df: analysis.node_states(df, window_days=1e9, now="2026-11-25"), "at most 3,653"),
    (lambda df: analysis.node_states(df, metric="time_iteration_s", now="2026-11-25"),
     "node_states: metric time_iteration_s: lower is better"),
    (lambda df: analysis.node_states(df, metric=None, now="2026-11-25"), "metric=None: give one"),
    (lambda df: analysis.scaling(df, metric="time_iteration_s"), "scaling: metric time_iteration_s"),
    (lambda df: analysis.node_table(df, by="gpu"), "node_table: by='gpu': give a list"),
    (lambda df: analysis.change_points(df, threshold="0.05"), "change_points: threshold='0.05'"),
    (lambda df: analysis.change_points(df, threshold=2), "change_points: threshold=2"),
    (lambda df: analysis.history(df, threshold=5), "history: threshold=5"),
    (lambda df: analysis.compare_campaigns("outputs/a", df), "compare: base='outputs/a'"),
    (lambda df: analysis.check(df, None), "check: refs=None"),
])
def test_a_bad_argument_is_named_not_answered(call, said: str) -> None:
    with pytest.raises(InputError) as raised:
        call(_nights())
    assert said in str(raised.value)


def test_fleet_states_judge_the_named_metric() -> None:
    states = analysis.node_states(_nights(), now="2026-11-25")
    assert set(states.table["state"]) == {"ok"} and len(states.table) == 6


def test_more_memory_is_a_regression_and_the_ratio_is_base_over_new() -> None:
    base = _campaign("base", {32: [100.0, 101.0, 99.0]}).assign(
        peak_memory_bytes=[1e9, 1.01e9, 0.99e9])
    new = _campaign("new", {32: [100.0, 101.0, 99.0]}).assign(
        peak_memory_bytes=[2e9, 2.02e9, 1.98e9])
    found = analysis.compare_campaigns(base, new, metric="peak_memory_bytes")
    assert found.table["verdict"].tolist() == ["regression"]
    assert found.table["ratio"].iloc[0] == pytest.approx(0.5, rel=0.01)
    assert regression.ratio_name("peak_memory_bytes") == "base / new"
    assert regression.ratio_name("throughput") == "new / base"


@pytest.mark.parametrize(("kwargs", "said"), [
    ({"metric": "power_mean_w"}, "neither better higher nor lower"),
    ({"threshold": 5}, "compare: threshold=5: give a fraction from 0 to 1"),
])
def test_compare_refuses_what_it_cannot_judge(kwargs: dict, said: str) -> None:
    base = _campaign("base", {32: [100.0, 101.0]}).assign(power_mean_w=300.0)
    new = _campaign("new", {32: [90.0, 91.0]}).assign(power_mean_w=310.0)
    with pytest.raises(InputError, match=said):
        analysis.compare_campaigns(base, new, **kwargs)


def test_compare_of_empty_campaigns_is_bad_input() -> None:
    empty = _campaign("base", {32: [100.0]}).iloc[0:0]
    with pytest.raises(InputError, match="compare: base holds no finished run"):
        analysis.compare_campaigns(empty, empty.assign(campaign="new"))


def test_the_node_table_never_pools_units() -> None:
    images = _nights()
    tokens = images.assign(benchmark="lm_train", unit="tokens/s", throughput=50_000.0)
    table = analysis.node_table(pd.concat([images, tokens], ignore_index=True), by=["gpu"])
    assert len(table) == 6 and set(table["unit"]) == {"images/s", "tokens/s"}
    assert table["relative"].between(0.9, 1.1).all()


def test_load_takes_where_as_the_commands_write_it(tmp_path) -> None:
    import benchlib
    from tests.test_regression import _write

    _write(tmp_path / "c", _campaign("c", {32: [100.0, 101.0], 64: [90.0]}))
    typed = benchlib.load(tmp_path / "c", where="batch_size=32")
    assert len(typed) == 2 and typed.equals(benchlib.load(tmp_path / "c", where={"batch_size": 32}))
    with pytest.raises(InputError, match="'bogus' is not KEY=VALUE"):
        benchlib.load(tmp_path / "c", where="bogus")


def test_a_history_on_other_nodes_gives_no_noise_not_a_key_error() -> None:
    base, new = _campaign("b", {32: [100.0, 101.0, 99.0]}), _campaign("n", {32: [90.0, 91.0, 89.0]})
    elsewhere = _campaign("h", {32: [100.0, 98.0]}).assign(host="another-node", flags="")
    found = analysis.compare_campaigns(base, new, history=elsewhere)
    assert found.table["verdict"].tolist() == analysis.compare_campaigns(base, new).table[
        "verdict"].tolist()


def test_a_memory_regression_is_told_in_memory_not_speed() -> None:
    base = _campaign("base", {32: [100.0, 101.0, 99.0]}).assign(
        peak_memory_bytes=[1e9, 1.01e9, 0.99e9])
    new = _campaign("new", {32: [100.0, 101.0, 99.0]}).assign(
        peak_memory_bytes=[1.6e9, 1.62e9, 1.58e9])
    found = analysis.compare_campaigns(base, new, metric="peak_memory_bytes")
    [line] = [t for t in regression.summary(found) if t.startswith("REGRESSION")]
    assert "speed" not in line and "slower" not in line
    assert "peak_memory_bytes base / new 0.63" in line and "60% higher than the base's" in line
    [case] = regression.junit_cases(found.table, found.metric)
    assert "(peak_memory_bytes, base / new)" in case.message


def test_a_time_of_zero_on_one_side_is_unknown_and_said_without_a_warning() -> None:
    import warnings

    base = _campaign("b", {32: [100.0, 101.0, 99.0]}).assign(time_data_s=0.0)
    new = _campaign("n", {32: [100.0, 101.0, 99.0]}).assign(time_data_s=0.002)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = analysis.compare_campaigns(base, new, metric="time_data_s")
    assert found.table[["verdict", "reason"]].values.tolist() == [
        ["unknown", "no base run has a time_data_s above 0"]]


@pytest.mark.parametrize(("where", "said"), [
    ("benchmark=", "benchmark= has no value"),
    ("since=2026-09-06 until=2026-09-01", "is not before until="),
    (["benchmark=train"], "load: where=['benchmark=train']"),
])
def test_a_selection_that_can_hold_nothing_is_said(tmp_path, where, said) -> None:
    import benchlib
    from tests.test_regression import _write

    _write(tmp_path / "c", _campaign("c", {32: [100.0, 101.0]}))
    with pytest.raises(InputError, match=said.replace("[", r"\[").replace("]", r"\]")):
        benchlib.load(tmp_path / "c", where=where)


def test_compare_names_a_value_no_run_has_and_a_value_against_itself() -> None:
    df = _campaign("c", {32: [100.0, 101.0], 64: [90.0, 91.0]})
    with pytest.raises(InputError, match="no finished run has dataset='synthtic'; its values: synthetic"):
        analysis.compare(df, "dataset", "synthtic", "synthetic")
    with pytest.raises(InputError, match="a and b are both 32"):
        analysis.compare(df, "batch_size", 32, 32)
    assert len(analysis.compare(df, "batch_size", 64, 32)) == 1


def test_flags_select_every_run_flagged_so_among_others(tmp_path) -> None:
    import benchlib
    from tests.test_regression import _write

    runs = _campaign("c", {32: [100.0, 101.0, 99.0]}).assign(flags=["contended,noisy", "noisy", ""])
    _write(tmp_path / "c", runs)
    assert len(benchlib.load(tmp_path / "c", where="flags=noisy")) == 2
    assert len(benchlib.load(tmp_path / "c", where="flags=contended")) == 1


def test_load_of_a_folder_without_records_says_so(tmp_path, caplog) -> None:
    import logging

    import benchlib

    (tmp_path / "empty").mkdir()
    with caplog.at_level(logging.WARNING):
        assert len(benchlib.load(tmp_path / "empty")) == 0
    assert "load: no records under" in caplog.text


def test_a_frame_made_from_the_runs_has_their_views_through_its_accessor(tmp_path):
    """``df.query(...)`` is a plain pandas frame (no ``tidy()``); ``part.benchlib.tidy()``
    gives its own view: the settings that vary among those runs, then the results."""
    import benchlib

    from .fakes import campaign

    df = benchlib.load(campaign(tmp_path / "fake"))
    part = df.query("num_devices == 4")
    assert not hasattr(part, "tidy")
    view = part.benchlib.tidy()
    assert list(view.columns) == ["dataset", "batch_size", "throughput", "unit", "flags"]
    assert "num_devices" in df.tidy().columns and "num_devices" not in view.columns
    assert list(part.benchlib.every_column().columns) == list(df.every_column().columns)
