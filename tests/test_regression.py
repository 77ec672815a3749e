"""Campaign against campaign (``benchlib compare``) and campaigns over time (history)."""

from __future__ import annotations

import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from benchlib.analysis import campaign_history, comparisons
from benchlib.cli import main
from benchlib.compare import regression
from benchlib.records.results import load
from tests.fakes import write_record_notebook

matplotlib.use("Agg")

RUN = {"schema_version": 1, "cluster": "c", "host": "n1", "gpu": "H100", "benchmark": "train",
       "model": "resnet50", "dataset": "synthetic", "precision": "amp_bf16", "num_devices": 1,
       "num_nodes": 1, "unit": "images/s", "status": "ok", "error": "", "iterations": 50,
       "wall_time_s": 10.0, "env_driver": "550.54", "env_torch": "2.4.0"}


def _run(campaign: str, batch: int, throughput: float, repeat: int = 0, spread: float = 0.01,
         **extra: object) -> dict:
    record = {**RUN, "campaign": campaign, "batch_size": batch, "throughput": throughput,
              "repeat": repeat, "source": f"/{campaign}/b{batch}-r{repeat}.ipynb", **extra}
    if spread:
        record |= {"throughput_low": throughput * (1 - spread),
                   "throughput_high": throughput * (1 + spread)}
    return record


def _campaign(name: str, values: dict[int, list[float]], **extra: object) -> pd.DataFrame:
    return pd.DataFrame([_run(name, batch, v, i, **extra) for batch, runs in values.items()
                         for i, v in enumerate(runs)])


def test_regression_improvement_and_no_change_per_configuration() -> None:
    base = _campaign("quiet", {32: [1000, 1010, 995], 64: [1200, 1190, 1210], 128: [900, 905, 895]})
    new = _campaign("busy", {32: [700, 720, 690], 64: [1195, 1205, 1200], 128: [1000, 1010, 990]})
    comparison = regression.compare(base, new)
    compared = comparison.table.set_index("batch_size")
    assert compared.loc[32, "verdict"] == "regression"
    assert compared.loc[32, "ratio"] == pytest.approx(0.70, abs=0.02)
    assert compared.loc[32, "high"] < 0.8 and compared.loc[32, "low"] > 0.6
    assert compared.loc[64, "verdict"] == "no change"
    # +11 %: one campaign each, the noise between campaigns unknown: not beyond the 15 % floor,
    # and beyond 5 %: neither a change nor no change (undecided), saying what would tell
    assert compared.loc[128, "verdict"] == "undecided"
    assert "the noise between campaigns is unknown" in compared.loc[128, "interval"]
    assert compared.loc[128, "decides"].startswith("3 campaigns a side, or benchlib calibrate")
    assert list(compared["base_runs"]) == [3, 3, 3]
    assert comparison.warnings == ()  # same GPU, driver, torch
    known = regression.compare(base, new, history=_history({32: 1000, 64: 1200, 128: 900}))
    assert known.table.set_index("batch_size").loc[128, "verdict"] == "improvement"


def _history(speeds: dict[int, float], nights: int = 6, noise: float = 0.01,
             host: str = "n1") -> pd.DataFrame:
    """Earlier campaigns of each configuration on ``host`` (3 runs each), campaigns differing
    by ``noise`` (log sd), runs within one by a tenth of it."""
    rng = np.random.default_rng(5)
    rows = []
    for night in range(nights):
        shift = float(np.exp(noise * rng.standard_normal()))
        for batch, speed in speeds.items():
            for repeat in range(3):
                value = speed * shift * float(np.exp(noise / 10 * rng.standard_normal()))
                rows.append(_run(f"night-{night}", batch, value, repeat, host=host,
                                 started_at=f"2026-09-{night + 1:02d}T01:00:00Z"))
    return pd.DataFrame(rows)


def test_the_campaign_is_the_unit_of_noise() -> None:
    """Runs of one campaign move together: a 4 % shift between two campaigns whose runs agree
    to 0.1 % is no verdict when their configuration's campaigns differ by 3 % (its history);
    without history, no verdict under the 15 % floor."""
    base = _campaign("a", {32: [1000, 1001, 999]})
    new = _campaign("b", {32: [960, 961, 959]})
    alone = regression.compare(base, new).table.iloc[0]
    assert alone["verdict"] == "no change" and alone["high"] < 0.97  # within-run: "certain"
    noisy = regression.compare(base, new, history=_history({32: 1000}, noise=0.03)).table.iloc[0]
    assert noisy["verdict"] == "undecided" and noisy["low"] < 0.95  # holds a 5 % slowdown
    assert "more campaigns of each side would tell" in noisy["decides"], noisy["decides"]
    assert "between-campaign noise" in noisy["interval"] and "on n1" in noisy["interval"]
    calm = regression.compare(base, _campaign("b", {32: [880, 881, 879]}),
                              history=_history({32: 1000}, noise=0.005)).table.iloc[0]
    assert calm["verdict"] == "regression"


def test_several_campaigns_a_side_are_resampled_hierarchically() -> None:
    base = pd.concat([_campaign(f"a{i}", {32: [v, v + 1, v - 1]})
                      for i, v in enumerate((1000, 1030, 985, 1010))], ignore_index=True)
    new = pd.concat([_campaign(f"b{i}", {32: [v, v + 1, v - 1]})
                     for i, v in enumerate((880, 905, 870, 890))], ignore_index=True)
    row = regression.compare(base, new).table.iloc[0]
    assert row["verdict"] == "regression" and (row["base_campaigns"], row["new_campaigns"]) == (4, 4)
    assert "hierarchical bootstrap" in row["interval"]
    one = regression.compare(base, new[new["campaign"] == "b0"]).table.iloc[0]
    assert "from the 4 campaigns of the base side" in one["interval"]


def test_one_run_each_is_unknown_whatever_its_within_run_intervals() -> None:
    """A run's own interval (its iterations) says nothing about the next run: no verdict."""
    base = _campaign("a", {32: [1000]})
    new = _campaign("b", {32: [800]})
    row = regression.compare(base, new).table.iloc[0]
    assert row["verdict"] == "unknown" and "one run each" in row["reason"]
    assert np.isnan(row["low"]) and row["ratio"] == pytest.approx(0.8)


def test_threshold_separates_small_significant_slowdowns() -> None:
    base = _campaign("a", {32: [1000, 1001, 999, 1000]}, spread=0.002)
    new = _campaign("b", {32: [970, 971, 969, 970]}, spread=0.002)
    earlier = _history({32: 1000}, nights=12, noise=0.002)
    assert regression.compare(base, new, threshold=0.05, history=earlier).table.iloc[0]["verdict"] == (
        "no change")
    assert regression.compare(base, new, threshold=0.01, history=earlier).table.iloc[0]["verdict"] == (
        "regression")


def test_time_metrics_count_lower_as_faster() -> None:
    base = _campaign("a", {32: [1, 1, 1]}, spread=0).assign(time_iteration_s=[0.10, 0.11, 0.10])
    new = _campaign("b", {32: [1, 1, 1]}, spread=0).assign(time_iteration_s=[0.20, 0.21, 0.20])
    row = regression.compare(base, new, metric="time_iteration_s").table.iloc[0]
    assert row["ratio"] == pytest.approx(0.5, abs=0.03) and row["verdict"] == "regression"


def test_warns_when_campaigns_are_not_like_for_like() -> None:
    base = _campaign("a", {32: [1000, 1000]}, device_name="NVIDIA A100-SXM4-80GB")
    new = _campaign("b", {32: [2000, 2000]}).assign(
        gpu="H100X", env_driver="560.1", env_container="nvcr.io/nvidia/pytorch:24.05",
        gpu_power_limit_w=500.0)
    base["gpu_power_limit_w"] = 700.0
    comparison = regression.compare(base, new)
    compared = comparison.table
    assert len(compared) == 1 and compared.iloc[0]["verdict"] == "improvement"  # paired across gpu
    text = "\n".join(comparison.warnings)
    assert "GPU model differs (gpu): base H100; new H100X" in text
    assert "driver differs" in text and "gpu_power_limit_w" in text
    assert "torch" not in text and "container" not in text  # same torch; container on one side


def test_unpaired_configurations_are_listed() -> None:
    compared = regression.compare(_campaign("a", {32: [1000, 1001], 64: [900]}),
                                  _campaign("b", {32: [1000, 999], 256: [500]})).table
    assert sorted(compared["verdict"]) == ["no change", "only in base", "only in new"]


def _write(root: Path, frame: pd.DataFrame) -> Path:
    for record in frame.to_dict("records"):
        record.pop("source")
        write_record_notebook(root / f"b{record['batch_size']}-r{record['repeat']}.ipynb", record)
    return root


def test_cli_compare_exit_codes_and_junit(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    quiet = _write(tmp_path / "quiet", _campaign("quiet", {32: [1000, 1010, 995], 64: [500, 505, 498]}))
    slow = _write(tmp_path / "slow", _campaign("slow", {32: [600, 620, 590], 64: [502, 500, 503]}))
    busy = _write(tmp_path / "busy", _campaign("busy", {32: [600, 620, 590], 64: [502, 500, 503]},
                                               flags="contended"))
    report = tmp_path / "compare.xml"
    assert main(["compare", str(quiet), str(slow), "--junit", str(report)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION" in out and "40% slower" in out and "3 + 3 runs" in out
    row = next(line.split() for line in out.splitlines()  # the speed table's row, as read
               if "batch_size=32" in line)  # the figures first, the configuration last
    start = row.index("1,002")
    assert row[start:start + 5] == ["1,002", "603", "0.60x", "0.57x", "0.64x"], row
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    again = shutil.copytree(quiet, tmp_path / "again")  # the same numbers, another campaign
    assert main(["compare", str(quiet), str(again)]) == 0
    assert "no significant regression beyond 5%" in capsys.readouterr().out
    # the same numbers from contended runs: no verdict, exit 3 (cannot certify), and why
    assert main(["compare", str(quiet), str(busy)]) == 3
    out = capsys.readouterr().out
    assert "REGRESSION" not in out and "CANNOT CERTIFY 2 configurations (unreliable)" in out
    assert "new: contended (3 of 3 runs)" in out and "idle node" in out
    assert main(["compare", str(quiet), str(slow), "--threshold", "0.5"]) == 0
    assert main(["compare", str(quiet), str(busy), "--threshold", "5"]) == 2
    assert main(["compare", str(quiet), str(tmp_path / "none")]) == 2
    # bad input is exit 2 before any work, never an "unexpected" exit 1
    capsys.readouterr()
    assert main(["compare", str(quiet), str(slow), "--metric", "nosuchcolumn"]) == 2
    assert main(["compare", str(quiet), str(slow), "--metric", "model"]) == 2
    assert main(["compare", str(quiet), str(slow), "--junit", str(tmp_path / "no" / "x.xml")]) == 2
    err = capsys.readouterr().err
    assert "--metric nosuchcolumn: no such column in" in err and "unexpected" not in err
    assert "--junit" in err and "folder does not exist" in err


def test_history_marks_the_campaign_that_dropped() -> None:
    nights = [("n1", "2024-05-01", [1000, 1005, 995]), ("n2", "2024-05-02", [1002, 998, 1001]),
              ("n3", "2024-05-03", [800, 805, 795]), ("n4", "2024-05-04", [801, 799, 800])]
    frame = pd.concat([_campaign(name, {32: runs}).assign(timestamp=f"{day}T02:00:00Z")
                       for name, day, runs in nights], ignore_index=True)
    hist = comparisons.history(frame)
    assert list(hist["campaign"]) == ["n1", "n2", "n3", "n4"]
    assert list(hist["regression"]) == [False, False, True, False]
    assert hist.loc[2, "ratio"] == pytest.approx(0.8, abs=0.02)
    figure = campaign_history.history_plot(hist)
    assert "1 regression" in figure.axes[0].get_title()


def test_history_orders_by_sidecar_time_without_a_time_column(tmp_path: Path) -> None:
    # campaign names sort the other way round from the times the runs were made
    for name, runs, day in (("b-first", [1000, 1002], 1), ("a-second", [600, 601], 2)):
        folder = _write(tmp_path / name, _campaign(name, {32: runs}))
        for notebook in folder.glob("*.ipynb"):
            os.utime(notebook, (day * 86400.0, day * 86400.0))
    hist = campaign_history.history(load(tmp_path))
    assert list(hist["campaign"]) == ["b-first", "a-second"]
    assert list(hist["regression"]) == [False, True]
    assert hist["time"].iloc[0] == pd.Timestamp(86400, unit="s", tz="UTC")


def test_history_plot_shows_record_text_literally() -> None:
    nights = [("n1", "2024-05-01", [1000, 1005]), ("n2", "2024-05-02", [800, 805])]
    frame = pd.concat([_campaign(name, {32: runs}).assign(timestamp=f"{day}T02:00:00Z",
                                                         model=r"$\frac{1}{$")
                       for name, day, runs in nights], ignore_index=True)
    figure = campaign_history.history_plot(comparisons.history(frame))
    figure.canvas.draw()  # a mathtext label that does not parse raises here
    labels = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert labels and all(r"\$" in label for label in labels)


def test_the_floor_is_stated_as_its_one_constant_everywhere() -> None:
    """Every page, command and doc that states the floor for an unknown noise between
    campaigns states the constant's value."""
    from benchlib.analysis.campaign_noise import UNKNOWN_FLOOR

    root = Path(__file__).resolve().parent.parent
    said = f"{UNKNOWN_FLOOR:.0%}".replace("%", " %")
    for name in ("benchlib/compare/command.py", "benchlib/compare/page.py",
                 "benchlib/compare/tables.py", "benchlib/compare/regression.py",
                 "docs/acceptance.md"):
        text = " ".join((root / name).read_text().split())
        assert said in text, name
    base = _campaign("a", {32: [1000, 1001, 999]})
    lines = regression.summary(regression.compare(base, _campaign("b", {32: [970, 971, 969]})))
    assert any(f"judged only beyond {UNKNOWN_FLOOR:.0%}" in line for line in lines)
    assert lines[-1].startswith(f"no significant regression beyond 5% ({UNKNOWN_FLOOR:.0%} for "
                                "the 1 with one campaign each and no history)")
    beyond = regression.summary(regression.compare(base, _campaign("b", {32: [900, 901, 899]})))
    assert any(line.startswith("UNDECIDED") and f"within the {UNKNOWN_FLOOR:.0%} one campaign"
               in line for line in beyond)


def test_disturbed_runs_say_nothing_of_the_noise_between_campaigns() -> None:
    """Contended earlier campaigns (3x slower) are left out of the configuration's noise: they
    would widen every interval (2.9 % -> 30 % in a review)."""
    from benchlib.analysis import campaign_noise

    earlier = _history({32: 1000}, nights=8, noise=0.01)
    calm = campaign_noise.from_history(earlier, "throughput", ["n1"])
    busy = earlier["campaign"].isin(["night-2", "night-5"])
    earlier.loc[busy, "throughput"] /= 3
    earlier["flags"] = ["contended" if b else "" for b in busy]
    seen = campaign_noise.from_history(earlier, "throughput", ["n1"])
    assert seen.campaigns == 6 and seen.sd < 2 * calm.sd


def test_a_configuration_is_labelled_by_what_varies_within_its_benchmark():
    """compare's, history's and fleet's label: one benchmark's settings are no part of
    another's."""
    from benchlib.fleet.placing import labels as _labels
    from benchlib.records import configuration

    table = pd.DataFrame({"benchmark": ["train", "train", "lm_train"],
                          "model": ["resnet50", "resnet50", "gpt2"], "batch_size": [32, 64, 8],
                          "sequence_length": [None, None, 1024]})
    assert configuration.label(table, list(table.columns)).tolist() == [
        "benchmark=train, batch_size=32", "benchmark=train, batch_size=64", "benchmark=lm_train"]
    one = table[table["benchmark"] == "train"]
    assert configuration.label(one, list(one.columns)).tolist() == ["batch_size=32", "batch_size=64"]
    configs = [tuple(map(str, row)) for row in table.itertuples(index=False)]
    assert list(_labels(configs, list(table.columns)).values()) == [  # the same words
        "benchmark=train, batch_size=32", "benchmark=train, batch_size=64", "benchmark=lm_train"]


def test_a_junit_file_that_cannot_be_written_is_bad_input_not_a_regression(
        tmp_path: Path, cli) -> None:
    """A gate reads exit 1 as a regression: a --junit path that fails as it is written (a full
    disk) exits 2, as an unusable path given always does; the file is written before any
    output, so a closed pipe on stdout cannot leave it unwritten."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    _write(tmp_path / "quiet", _campaign("quiet", {32: [1000, 1010, 995]}))
    _write(tmp_path / "slow", _campaign("slow", {32: [600, 620, 590]}))
    code, out, err = cli(tmp_path, "compare", "quiet", "slow", "--junit", "/dev/full")
    assert code == 2 and "--junit /dev/full: cannot write JUnit XML" in err
    assert out == ""  # nothing judged was printed before the failure


def test_an_undecided_interval_that_holds_1_is_not_said_to_lie_beyond_the_threshold() -> None:
    """One campaign a side, no history: an interval across 1 - 5 % and 1 holds both no change
    and a 5 % change (it said 'lies beyond 5 %' of every undecided row with an unknown noise)."""
    base = _campaign("a", {32: [1000, 1001, 999]})
    lines = regression.summary(regression.compare(base, _campaign("b", {32: [930, 1000, 965]})))
    [said] = [line for line in lines if line.startswith("UNDECIDED")]
    assert "holds both no change and a 5% change" in said and "lies beyond" not in said
