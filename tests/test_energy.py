"""Energy beside speed: samples per joule in the kind's unit, shown where speed is shown (the
index's answers, the throughput and scaling tables, the compare page and ``benchlib compare``),
and "unknown", never 0 or blank, where energy was not measured."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from benchlib import formatting
from benchlib.analysis import energy
from benchlib.cli import main
from benchlib.kinds import kind_named
from tests.fakes import write_record_notebook

RUN = {"schema_version": 1, "campaign": "e", "cluster": "c", "host": "n1", "gpu": "H100",
       "benchmark": "train", "model": "resnet50", "dataset": "synthetic", "precision": "amp_bf16",
       "num_nodes": 1, "unit": "images/s", "status": "ok", "error": "", "batch_size": 32,
       "iterations": 50, "wall_time_s": 10.0, "flags": ""}


def run(devices: int = 1, throughput: float = 1000.0, energy_j: float | None = 2500.0,
        repeat: int = 0, **extra: object) -> dict:
    samples = int(throughput * 10)
    return {**RUN, "num_devices": devices, "throughput": throughput, "samples": samples,
            "energy_j": energy_j, "repeat": repeat, "time_iteration_s": 32 / throughput,
            "source": f"/e/d{devices}-r{repeat}.ipynb", **extra}


@pytest.mark.parametrize(("benchmark", "unit", "expected"), [
    ("train", "images/s", "images/J"), ("lm_train", "tokens/s", "tokens/J"),
    ("unet3d_predict", "voxels/s", "voxels/J"), ("probe_node", "TFLOP/s (matmul peak)", None),
    ("probe_allreduce", "GB/s (bus)", None)])
def test_each_kind_names_its_per_joule_unit(benchmark: str, unit: str, expected: str | None) -> None:
    assert energy.per_joule_unit(benchmark, unit) == expected
    assert kind_named(benchmark).per_joule_unit(unit) == expected  # type: ignore[union-attr]


def test_samples_per_joule_is_samples_over_energy_and_unknown_where_not_measured() -> None:
    frame = pd.DataFrame([run(energy_j=4000.0), run(energy_j=None), run(energy_j=0.0),
                          {**run(), "benchmark": "probe_node", "unit": "TFLOP/s (matmul peak)"},
                          run(samples_per_joule=7.0)])
    values = energy.with_per_joule(frame)["samples_per_joule"].tolist()
    assert values[0] == pytest.approx(10_000 / 4000)
    assert all(math.isnan(v) for v in values[1:4])  # not measured, read 0 J, a probe
    assert values[4] == 7.0  # the record's own figure is kept
    show = formatting.formatter("samples_per_joule")
    assert show(values[1]) == "unknown" and show(values[0]) == "2.50"
    assert formatting.formatter("energy_j")(None) == "unknown"
    assert energy.said(values[1], "images/J") == "unknown"
    assert energy.said(values[0], "images/J") == "2.50 images/J"


def test_the_throughput_table_has_an_energy_column_unknown_where_missing() -> None:
    from benchlib.publish.pages.summary import throughput_tables

    runs = pd.DataFrame([run(1, energy_j=4000.0), run(1, energy_j=4000.0, repeat=1),
                         run(2, 1900.0, energy_j=None)])
    table = throughput_tables(runs)[0]
    column = "energy efficiency (images/J)"
    assert list(table.cells[column]) == ["2.50", "unknown"]
    assert energy.UNKNOWN_NOTE in table.caption
    nothing = throughput_tables(pd.DataFrame([run(1, energy_j=None)]))[0]
    assert list(nothing.cells[column]) == ["unknown"]  # kept, never dropped as empty


def test_the_index_says_energy_efficiency_beside_the_speed() -> None:
    from benchlib.report.index_page import fastest

    measured = str(fastest(pd.DataFrame([run(energy_j=2500.0), run(energy_j=2000.0, repeat=1)]),
                           {})[0])
    assert "1,000 images/s" in measured and "energy efficiency <b>4.50 images/J</b>" in measured
    unknown = str(fastest(pd.DataFrame([run(energy_j=None)]), {})[0])
    assert "energy efficiency <b>unknown</b>" in unknown and "0 images/J" not in unknown


def test_the_scaling_sheet_has_an_energy_block() -> None:
    from benchlib.publish.pages.scaling_sheet import Sheet

    runs = pd.DataFrame([run(1, 1000.0, 2500.0), run(2, 1900.0, None), run(4, 3600.0, 12000.0)])
    (_, blocks), = Sheet(runs).sections
    block = next(b for b in blocks if b.title == "energy efficiency (images/J)")
    column = next(c for c in block.table.columns if c != "median")
    assert block.table.loc[1, column] == pytest.approx(4.0)
    assert math.isnan(block.table.loc[2, column])
    assert block.table.loc[4, column] == pytest.approx(3.0)
    assert "unknown" in Sheet(runs)._repr_html_()


def campaign(name: str, per_joule: list[float | None], throughput: float = 1000.0) -> pd.DataFrame:
    return pd.DataFrame([run(1, throughput, None if v is None else throughput * 10 / v, i,
                             campaign=name, source=f"/{name}/r{i}.ipynb")
                         for i, v in enumerate(per_joule)])


def test_compare_gives_energy_efficiency_a_second_ratio_with_the_speeds_interval() -> None:
    from benchlib.compare.tables import compare_display, compare_energy, compare_runs

    base, new = campaign("base", [4.0, 4.1, 3.9]), campaign("new", [5.0, 5.1, 4.9])
    found = compare_energy(base, new)
    row = found.table.iloc[0]
    assert row["ratio"] == pytest.approx(5.0 / 4.0, rel=0.01)
    assert row["low"] < row["ratio"] < row["high"] and row["verdict"] == "improvement"
    table = compare_display(compare_runs(base, new), "images/s", found)
    assert table.cells["energy efficiency new / base"].tolist() == ["1.25x"]
    assert table.cells["energy 95 % interval"].iloc[0] != formatting.DASH
    one = compare_energy(campaign("base", [4.0]), campaign("new", [5.0])).table.iloc[0]
    assert one["verdict"] == "unknown" and math.isnan(one["low"])  # a ratio without interval
    assert one["ratio"] == pytest.approx(1.25)
    missing = compare_energy(base, campaign("new", [None, None, None])).table.iloc[0]
    assert missing["verdict"] == "unknown" and math.isnan(missing["ratio"])
    assert missing["reason"] == "energy not measured in new"
    probes = campaign("new", [5.0]).assign(benchmark="probe_node", unit="TFLOP/s (matmul peak)")
    assert compare_energy(base, probes).table.empty  # no workload run on a side: no energy ratio
    shown = compare_display(compare_runs(base, campaign("new", [None] * 3)), "images/s",
                            compare_energy(base, campaign("new", [None] * 3)))
    assert shown.cells["energy efficiency new / base"].tolist() == ["unknown"]


def _write(root: Path, frame: pd.DataFrame) -> Path:
    for record in frame.to_dict("records"):
        record.pop("source")
        record = {k: v for k, v in record.items() if not (isinstance(v, float) and math.isnan(v))}
        write_record_notebook(root / f"r{record['repeat']}.ipynb", record)
    return root


def test_cli_compare_prints_the_energy_ratio_without_changing_the_exit(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    base = _write(tmp_path / "base", campaign("base", [4.0, 4.1, 3.9]))
    worse = _write(tmp_path / "worse", campaign("worse", [2.0, 2.1, 1.9]))
    assert main(["compare", str(base), str(worse)]) == 0  # the same speed: energy does not fail
    out = capsys.readouterr().out
    assert "NEW / BASE energy efficiency (images/J)" in out
    line = next(x for x in out.splitlines()[::-1] if "regression" in x)
    assert " 0.50 0.45 0.55 " in line and "4.00 images/J" in line
    blind = _write(tmp_path / "blind", campaign("blind", [None, None, None]))
    main(["compare", str(base), str(blind)])
    out = capsys.readouterr().out
    assert "energy not measured in new" in out and "unknown" in out


def test_the_run_list_and_a_run_page_say_each_runs_energy_efficiency() -> None:
    from benchlib.report.index_page import run_list
    from benchlib.report.run_lead import _measured

    html = str(run_list(pd.DataFrame([run(1, energy_j=4000.0), run(2, 1900.0, None)]), {}))
    assert "energy efficiency (images/J)" in html and "2.50" in html and "unknown" in html
    assert "energy not measured" in html  # what unknown means, said once
    probe = str(run_list(pd.DataFrame([{**run(), "benchmark": "probe_node",
                                        "unit": "TFLOP/s (matmul peak)"}]), {}))
    assert "images/J" not in probe and "energy efficiency" not in probe
    assert "energy efficiency 2.50 images/J" in _measured(run(energy_j=4000.0))["detail"]
    assert "energy efficiency unknown" in _measured(run(energy_j=None))["detail"]


def test_the_terminal_counts_energy_over_the_configurations_in_common(capsys, monkeypatch):
    """Configurations only one side ran are not 'unknown energy' (they have no pair); the
    energy block's unit is the one both sides share."""
    from benchlib.compare.output import show_energy

    monkeypatch.setenv("COLUMNS", "100")
    base = pd.concat([campaign("base", [None, None]),
                      campaign("base", [None, None]).assign(batch_size=64)], ignore_index=True)
    show_energy(base, campaign("new", [None, None]), 0.05)
    said = capsys.readouterr().out
    assert "unknown for the 1 configuration in common: energy not measured" in said, said
    assert "(images/J)" in said


def test_the_terminal_says_how_each_interval_was_made_under_its_configuration(capsys,
                                                                             monkeypatch):
    """Intervals made differently (a long text each) go under each configuration's label,
    not into a column wider than the terminal."""
    from benchlib.compare.output import show_compared
    from benchlib.compare.regression import Comparison

    monkeypatch.setenv("COLUMNS", "100")
    how = ["campaigns as units: 1 + 1 campaigns (3 + 3 runs, base + new), between-campaign "
           f"noise {n}.0% from {n} other campaigns on node001 and node002" for n in (2, 3)]
    table = pd.DataFrame({"configuration": ["batch_size=32", "batch_size=64"],
                          "base": [100.0, 200.0], "new": [90.0, 200.0], "ratio": [0.9, 1.0],
                          "low": [0.85, 0.95], "high": [0.95, 1.05], "verdict": ["regression",
                          "no change"], "base_runs": [3, 3], "new_runs": [3, 3], "flags": "",
                          "interval": how})
    show_compared(Comparison(table))
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 100, lines
    text = " ".join(" ".join(lines).split())
    assert "batch_size=32; interval: campaigns as units" in text and "3.0% from 3 other" in text
