"""The acceptance, fleet and compare pages of the report, and their answers on the index."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from benchlib.analysis import references
from benchlib.cli import main
from benchlib.fleet import tables as fleet_tables
from benchlib.publish.pages import acceptance_tables, summary
from benchlib.report import index_page
from benchlib.report.build import SUMMARIES, build_report, report_pages

from .fakes import REFERENCES, campaign, references_file, slower_copy, write_record_notebook

SLOW_NODE = "gpu-node05"


def fleet_campaign(root: Path, speed: float = 1.0) -> Path:
    """Seven nodes, each two training runs and a node probe; SLOW_NODE at 0.6x."""
    base = {"schema_version": 1, "campaign": root.name, "cluster": "c1", "gpu": "H100",
            "model": "resnet50", "precision": "amp_bf16", "num_nodes": 1, "num_devices": 1,
            "batch_size": 256, "dataset": "synthetic", "unit": "images/s", "status": "ok",
            "error": ""}
    for node, share in enumerate((1.0, 0.99, 1.01, 1.02, 0.98, 0.6, 1.0)):
        host = f"gpu-node{node:02d}"
        for repeat in range(2):
            write_record_notebook(root / f"train-{host}-{repeat}.ipynb", {
                **base, "host": host, "benchmark": "train", "repeat": repeat,
                "throughput": 2700 * share * speed * (1 + 0.005 * repeat)})
        write_record_notebook(root / f"probe-{host}.ipynb", {
            **base, "host": host, "benchmark": "probe_node", "model": None,
            "matmul_tflops_bf16": 700 * share * (1 + 0.01 * (node % 3)),
            "memory_GBps": 2900 * (1 - 0.01 * (node % 2))})
    return root


def _text(page: Path) -> str:
    """The page's text without markup."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text())).replace("&amp;", "&")


def test_check_headline_and_index_line_name_the_pass_and_the_failure(tmp_path):
    df = summary.load_results(campaign(tmp_path / "fake"))
    refs = references.load_references(references_file(tmp_path))
    checked = acceptance_tables.check(df, refs)
    line = acceptance_tables.headline(checked, df, given=True)
    assert line.startswith("**1 of 2 runs pass** (train-0); **1 fails**: train-2 \\(1 dev, real")
    assert "0.70x the expected speed, 1.43x slower than expected by H100 ResNet-50 bf16" in line
    shown = acceptance_tables.check_display(checked).cells
    assert shown["verdict"].tolist() == ["pass", "⚠ fail"]
    assert shown["configuration"].tolist() == ["1 dev, synthetic, batch 32", "1 dev, real, batch 32"]
    lines = acceptance_tables.stands_lines(df[df["status"] == "ok"], refs)
    assert lines == ["train resnet50: best run train-0 1.00x, worst train-2 0.70x the expected "
                     "speed: 1.4x slower than it should be (H100 ResNet-50 bf16, 1 device, batch "
                     "32; a test figure from a healthy node); 1 of 2 runs pass (train-0)"]


def test_cpu_runs_match_no_reference_and_say_so():
    df = pd.DataFrame([{"gpu": "cpu", "benchmark": name, "model": "resnet18", "status": "ok",
                        "throughput": 50.0, "source": f"{name}.ipynb"}
                       for name in ("train", "inference", "smooth_inference")])
    checked = acceptance_tables.check(df, references.shipped())
    assert acceptance_tables.headline(checked, df) == ("**No reference matches these runs** (CPU runs); "
                                                 "see the shipped references below.")
    assert acceptance_tables.stands_lines(df, references.shipped()) == [  # said once, not per benchmark
        "No published reference matches: inference resnet18, smooth_inference resnet18, "
        "train resnet18"]


def test_fleet_section_finds_the_slow_node(tmp_path):
    df = summary.load_results(fleet_campaign(tmp_path / "fleet"))
    assert fleet_tables.node_count(df) == 7
    nodes = fleet_tables.node_table(df)
    assert nodes["host"].iloc[0] == SLOW_NODE and nodes["outlier"].tolist() == [True] + [False] * 6
    assert "**1 outlier node** among 7" in fleet_tables.outlier_text(nodes)
    assert fleet_tables.node_display(nodes).cells["outlier"].iloc[0] == "⚠ outlier"
    [(figure, alt)] = fleet_tables.heatmaps(df)
    assert f"outliers marked: {SLOW_NODE} ⚠" in alt
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()][-1] == "train resnet50"
    assert fleet_tables.node_count(summary.load_results(campaign(tmp_path / "one"))) < 2
    states = fleet_tables.node_states(df)       # two runs a node: the slow one is known slow
    shown = fleet_tables.states_display(states).cells.set_index("node")
    assert shown.loc[SLOW_NODE, "state"] == "⚠ slow (1 of 2)"
    assert "0.60x the baseline" in shown.loc[SLOW_NODE, "why (speed over the baseline, 95 % interval)"]
    assert "**1 slow**" in fleet_tables.states_text(states)


@pytest.mark.slow
@pytest.mark.xdist_group("report")
def test_acceptance_page_with_a_references_file(report):
    index = report  # the fake campaign's report, built with references_file
    page = _text(index.parent / "summary_acceptance.html")
    assert "1 of 2 runs pass" in page and "1.43x slower than expected by H100 ResNet-50" in page
    assert "pass" in page and "⚠ fail" in page and "a test figure from a healthy node" in page
    assert "Fleet" not in page  # one node
    front = _text(index)
    assert "How it stands against the matching reference acceptance →" in front
    assert "worst train-2 0.70x the expected speed: 1.4x slower than it should be" in front
    assert 'href="summary_acceptance.html"' in index.read_text()


@pytest.mark.slow
def test_fleet_and_baseline_pages(tmp_path):
    base = fleet_campaign(tmp_path / "base")
    new = slower_copy(base, tmp_path / "new", 0.6)
    index = build_report(new, summaries=("summary_acceptance",), progress=False, baseline=base)
    folder = index.parent
    acceptance_page = _text(folder / "summary_acceptance.html")
    assert "Fleet: 7 nodes" in acceptance_page and "1 outlier node among 7" in acceptance_page
    assert f"{SLOW_NODE} ⚠" in acceptance_page
    assert "Node states" in acceptance_page and f"{SLOW_NODE} ⚠ slow (1 of 2)" in acceptance_page
    assert "No reference matches these runs" in acceptance_page
    compare_page = _text(folder / "summary_compare.html")
    assert ("regression train, resnet50, H100: 0.60x the base speed (95 % interval 0.52–0.69 from 14 + 14 "
            "runs), 40% slower") in compare_page  # one campaign each: beyond the 15 % floor
    verdicts = compare_page.split("Verdict")[1].split("Runs per benchmark")[0]  # not the overview
    assert "⚠ regression" in compare_page and "probe_node" not in verdicts
    front = _text(index)
    assert "Compared with base compare page → 1 regression (configurations)" in front
    assert 'href="summary_compare.html">Compared with base</a>' in index.read_text()


def test_report_refuses_a_missing_baseline_or_bad_references(tmp_path, capsys):
    root = campaign(tmp_path / "fake")
    assert main(["report", str(root), "--baseline", str(tmp_path / "missing"), "--quiet"]) == 2
    assert "--baseline" in capsys.readouterr().err and not (root / "report").exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text(REFERENCES.replace("metric:", "metrik:"))
    assert main(["report", str(root), "--references", str(bad), "--quiet"]) == 2
    assert "metrik" in capsys.readouterr().err


def test_the_acceptance_page_is_listed_and_the_sources_escaped():
    assert "summary_acceptance.html" in [p.href for p in report_pages(SUMMARIES)]
    checked = pd.DataFrame([{"run": "r", "configuration": "c", "metric": "throughput",
                             "verdict": "pass", "reference_index": 1, "reference": "<b>x</b>",
                             "reference_source": "[l](javascript:x)"}])
    text = acceptance_tables.sources_used(checked)
    assert "<b>" not in text and "](" not in text
    runs = pd.DataFrame([{"benchmark": "<script>x</script>", "model": "m", "status": "ok",
                          "throughput": 1.0}])
    [line] = index_page.stands(runs, references.shipped())
    assert "<script>" not in line and "&lt;script&gt;" in line
