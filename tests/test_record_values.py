"""One odd value in one record never stops a command: records are checked against the schema on
load (a bad essential value leaves the record out, named; any other is set missing, noted),
text is made encodable, and analysis and plots survive the values that remain."""

from __future__ import annotations

import json
import logging
import math
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

from benchlib.analysis import comparisons, references
from benchlib.cli import main
from benchlib.fleet import tables as fleet_tables
from benchlib.publish.pages import plots
from benchlib.records import values
from benchlib.records.results import scan
from benchlib.records.store import write_json_atomic, write_sidecar

from .fakes import campaign, references_file, write_record_notebook

matplotlib.use("Agg")

#: A finished run that matches :data:`tests.fakes.REFERENCES` (H100 train resnet50, 1 device,
#: batch 32).
GOOD = {"schema_version": 1, "campaign": "fake", "cluster": "c1", "gpu": "H100",
        "benchmark": "train", "model": "resnet50", "precision": "amp_bf16", "num_nodes": 1,
        "num_workers": 8, "unit": "images/s", "status": "ok", "error": "", "num_devices": 1,
        "dataset": "synthetic", "batch_size": 32, "throughput": 2400.0,
        "time_iteration_s": 0.0133}
MATH = "$\\frac{1}{$"


def _lone(folder: Path, name: str, **changes: object) -> Path:
    """A sidecar without a notebook (a point that failed before its notebook was written)."""
    path = folder / f"{name}.json"
    path.write_text(json.dumps({**GOOD, **changes}))
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return campaign(tmp_path / "fake")


def _skipped(found, name: str) -> str:
    reasons = [s.reason for s in found.skipped if s.path.stem == name]
    assert len(reasons) == 1, [str(s) for s in found.skipped]
    return reasons[0]


@pytest.mark.parametrize(("value", "shown"), [(1e308, "1e+308"), (2**70, str(2**70)),
                                              (10**400, str(10**400)[:20])],
                         ids=["1e308", "2**70", "10**400"])
def test_a_batch_size_beyond_2_53_leaves_its_record_out_named(folder, capsys, value, shown):
    _lone(folder, "huge", batch_size=value)
    found = scan(folder)
    reason = _skipped(found, "huge")
    assert "huge.json" in reason and "batch_size" in reason and shown in reason
    assert len(reason) < 400  # the value is shortened
    assert len(found.frame) == 13 and str(found.frame["batch_size"].dtype) == "Int64"
    assert main(["results", str(folder)]) == 0
    assert "unexpected" not in capsys.readouterr().err


def test_zero_throughput_fails_its_reference_without_dividing_by_zero(folder, capsys):
    _lone(folder, "stalled", throughput=0.0)
    frame = scan(folder).frame
    assert (frame["throughput"] == 0).sum() == 1  # zero is a valid (if sad) measurement
    checked = references.check(frame, references.load_references(references_file(folder.parent)))
    row = checked[checked["run"] == "stalled"].iloc[0]
    assert row["verdict"] == "fail" and "none of the speed" in row["message"]
    assert main(["check", str(folder), "--references", str(folder.parent / "refs.yaml")]) == 1
    assert "unexpected" not in capsys.readouterr().err


def test_infinite_throughput_never_passes_an_unbounded_reference(folder):
    _lone(folder, "endless", throughput=math.inf)
    assert "throughput inf is not a number" in _skipped(scan(folder), "endless")
    refs = references.load_references(references_file(folder.parent))  # upper: null
    checked = references.check(pd.DataFrame([{**GOOD, "throughput": math.inf}]), refs)
    assert list(checked["verdict"]) == ["fail"] and checked["ratio"].isna().all()
    assert "not a finite measurement" in checked["message"].iloc[0]


def test_zero_devices_leave_the_record_out_and_scaling_works(folder):
    _lone(folder, "nodevice", num_devices=0)
    found = scan(folder)
    assert "num_devices 0 is not a number (whole, >= 1" in _skipped(found, "nodevice")
    scaled = comparisons.scaling(found.frame)
    assert scaled["efficiency"].notna().all() and (scaled["efficiency"] < 2).all()


def test_a_mapping_where_text_belongs(folder, capsys, caplog):
    _lone(folder, "essential", model={"name": "resnet50"})
    _lone(folder, "elsewhere", host=["n1", "n2"], compile_mode={"a": 1}, energy_j="lots",
          contended=1, time_iteration_s=-1.0)
    with caplog.at_level(logging.WARNING):
        found = scan(folder)
    assert "model {'name': 'resnet50'} is not text" in _skipped(found, "essential")
    kept = found.frame.set_index("point_id").loc["elsewhere"]
    for column in ("host", "compile_mode", "energy_j", "contended", "time_iteration_s"):
        assert pd.isna(kept[column]), column
    [note] = [n.reason for n in found.notes]
    assert "elsewhere.json" in note and "host ['n1', 'n2'] is not text or a number" in note
    assert "energy_j 'lots'" in note and "time_iteration_s -1.0" in note
    assert "set missing" in caplog.text and "model {'name': 'resnet50'}" in caplog.text
    again = shutil.copytree(folder, folder.parent / "again")
    assert main(["compare", str(folder), str(again)]) in (0, 3)
    assert "unexpected" not in capsys.readouterr().err


def test_analysis_groups_a_hand_built_table_holding_lists_and_mappings():
    rows = [{**GOOD, "dataset": data, "num_devices": devices, "compile": setting,
             "throughput": 1000.0 * devices}
            for data in ("synthetic", "real") for devices in (1, 2)
            for setting in ("none", {"mode": "max"}, ["a"])]
    table = pd.DataFrame(rows)
    assert len(comparisons.compare(table, "dataset", "synthetic", "real")) == 6
    assert len(comparisons.aggregate(table)) == 12
    assert comparisons.scaling(table)["efficiency"].eq(1.0).all()
    assert len(comparisons.breakdown(table.assign(time_data_s=0.01), by=["compile", "dataset"])) == 6


def test_a_sidecar_with_a_bad_essential_value_gives_way_to_its_notebook(tmp_path):
    notebook = write_record_notebook(tmp_path / "run.ipynb", GOOD)
    write_sidecar(notebook, {**GOOD, "batch_size": 2**70})  # fingerprinted to the notebook
    found = scan(tmp_path)
    assert list(found.frame["batch_size"]) == [32] and found.skipped == []


def test_lone_surrogates_become_replacement_characters(folder, tmp_path, capsys):
    _lone(folder, "surrogate", host="\ud800", cluster="x\udfffy", env_note="\udc80",
          **{"odd\ud801key": "v"})
    found = scan(folder)
    row = found.frame.set_index("point_id").loc["surrogate"]
    assert (row["host"], row["cluster"], row["env_note"]) == ("\ufffd", "x\ufffdy", "\ufffd")
    assert "odd\ufffdkey" in found.frame.columns
    csv, xml = tmp_path / "out.csv", tmp_path / "out.xml"
    assert main(["results", str(folder), "--csv", str(csv)]) == 0
    assert main(["check", str(folder), "--junit", str(xml)]) in (0, 1, 3)
    captured = capsys.readouterr()
    captured.out.encode("utf-8")  # printable on a UTF-8 terminal
    assert "unexpected" not in captured.err
    assert "x\ufffdy" in pd.read_csv(csv, encoding="utf-8")["cluster"].tolist()
    ET.parse(xml)


def test_values_are_checked_one_column_at_a_time():
    frame = pd.DataFrame([{**GOOD, "iterations": 10, "contended": False},
                          {**GOOD, "iterations": 2.5, "contended": "yes", "batch_size": True},
                          {**GOOD, "iterations": None, "contended": None}])
    checked, dropped, cleared = values.check_frame(frame)
    assert list(dropped) == [1] and "batch_size True" in dropped[1][0]
    assert list(checked.index) == [0, 2] and cleared == {}
    checked, dropped, cleared = values.check_frame(frame.drop(columns="batch_size"))
    assert dropped == {} and sorted(cleared[1]) == [
        "contended 'yes' is not true or false", "iterations 2.5 is not a number (whole, >= 0, "
        "< 2^53) or 'auto' or 'epoch'"]
    assert checked["iterations"].isna().tolist() == [False, True, True]


def test_the_comparison_plot_shows_record_text_literally():
    pairs = pd.DataFrame({"model": ["a", "b"], "ratio": [1.1, 0.9], "a": [1.1, 0.9],
                          "b": [1.0, 1.0], "flags": ["", ""]})
    figure = plots.ratio_plot(pairs, f"{MATH} vs c1", xlabel=f"{MATH} / c1 (x)")
    figure.canvas.draw()  # mathtext would raise here
    assert figure.axes[0].get_xlabel().startswith("\\$")


def test_the_fleet_heat_map_shows_record_text_literally():
    nodes = pd.DataFrame([{**GOOD, "gpu": MATH, "host": host, "throughput": speed}
                          for host, speed in ((MATH, 1000.0), ("n2", 1100.0), ("n3", 1050.0))])
    [(heat, _alt)] = fleet_tables.heatmaps(nodes)
    heat.canvas.draw()
    assert heat.axes[0].get_title().startswith("GPU \\$")


def test_writes_a_sidecar_json_that_loads(tmp_path):
    """The writer's own records pass the checks untouched (nothing noted)."""
    write_json_atomic(tmp_path / "a.json", {**GOOD, "env_torch": "2.14", "result_loss": 1.5,
                                            "contended": False, "iterations": 20})
    found = scan(tmp_path)
    assert found.skipped == [] and found.notes == [] and len(found.frame) == 1


@pytest.mark.slow
def test_a_report_of_a_campaign_with_hostile_sidecars_names_the_ones_left_out(folder):
    from benchlib.report.build import build_report

    _lone(folder, "huge", batch_size=1e308)
    _lone(folder, "nodevice", num_devices=0)
    _lone(folder, "endless", throughput=math.inf)
    _lone(folder, "mapped", model={"name": "resnet50"})
    _lone(folder, "stalled", throughput=0.0)  # kept: fails the reference below
    _lone(folder, "surrogate", host="\ud800", error="\udfff")
    _lone(folder, "mathtext", cluster=MATH, host=MATH)  # compared with cluster c1
    _lone(folder, "node-b", host="n2<script>")
    for host in ("a", "b"):
        _lone(folder, f"gpu-{host}", gpu=MATH, host=host)  # a heat map titled by the GPU
    index = build_report(folder, progress=False, references=references_file(folder.parent))
    text = index.read_text(encoding="utf-8")
    skipped = text[text.index("Skipped files"):]
    for name, why in (("huge", "batch_size 1e+308"), ("nodevice", "num_devices 0"),
                      ("endless", "throughput inf"), ("mapped", "model {")):
        assert f"{name}.json" in skipped and why in skipped, name
    assert "stalled" not in skipped and "mathtext" not in skipped
    pages = {p.name: p.read_text(encoding="utf-8") for p in index.parent.glob("summary_*.html")}
    assert "none of the speed" in pages["summary_acceptance.html"]


def test_a_start_time_that_is_not_a_time_is_set_missing_and_named():
    """History orders runs by ``started_at``: text that is not an ISO 8601 time is set missing
    with a note naming it, never kept as a time and then explained as absent."""
    frame = pd.DataFrame([{**GOOD, "started_at": "2026-11-27T01:00:00+00:00"},
                          {**GOOD, "started_at": "garbage"}])
    checked, dropped, cleared = values.check_frame(frame)
    assert dropped == {} and cleared[1] == [
        "started_at 'garbage' is not an ISO 8601 time (2026-11-27T01:00:00+00:00)"]
    assert checked["started_at"].isna().tolist() == [False, True]
