"""A comparison's headline is one number, stated the same on every page, table, plot and API.

The campaign's synthetic / real pairs have ratios 1.43, 1.06, 1.00 and 0.97: their geometric
mean (1.10x, the headline) and their median (1.03x) differ, so a place that states the median
(as the comparisons page's table once did) fails here."""

from __future__ import annotations

import re

import pytest

from benchlib import analysis
from benchlib.publish.pages import plots
from benchlib.records.results import load

from .fakes import write_record_notebook

RATIOS = {"resnet18": 1.43, "resnet50": 1.06, "vgg16": 1.00, "inception_v3": 0.97}


def _campaign(root):
    base = {"schema_version": 1, "campaign": "stat", "cluster": "c1", "gpu": "H100",
            "benchmark": "train", "precision": "amp_bf16", "num_nodes": 1, "num_devices": 1,
            "num_workers": 8, "batch_size": 32, "unit": "images/s", "status": "ok", "error": "",
            "iterations": 50, "wall_time_s": 20.0}
    for model, ratio in RATIOS.items():
        for dataset, speed in (("synthetic", 1000.0 * ratio), ("real", 1000.0)):
            write_record_notebook(root / f"{model}-{dataset}.ipynb",
                                  {**base, "model": model, "dataset": dataset, "throughput": speed,
                                   "time_iteration_s": 32 / speed})
    return root


def test_the_api_names_the_geometric_mean_and_the_median_is_not_it(tmp_path):
    pairs = analysis.compare(load(_campaign(tmp_path / "c")), "dataset", "synthetic", "real")
    found = analysis.effect(pairs)
    assert "median" not in found  # a key called median would have to be the median
    assert found["geomean"] == pytest.approx((1.43 * 1.06 * 1.00 * 0.97) ** 0.25)
    assert analysis.headline(pairs) == found["geomean"]
    assert f"{pairs['ratio'].median():.2f}" == "1.03"  # what the pages must not call the headline


def test_the_ratio_plot_marks_the_headline(tmp_path):
    pairs = analysis.compare(load(_campaign(tmp_path / "c")), "dataset", "synthetic", "real")
    figure = plots.ratio_plot(pairs, "synthetic vs real")
    assert figure.axes[0].get_xlabel().endswith("; dashed: geometric mean ratio 1.10x")
    marked = [float(line.get_xdata()[0]) for line in figure.axes[0].get_lines()
              if len(line.get_xdata()) and line.get_linestyle() == "--"]
    assert marked == [pytest.approx(analysis.headline(pairs))]


@pytest.mark.slow
def test_every_page_states_the_same_figure(tmp_path):
    from benchlib.report.build import build_report

    root = _campaign(tmp_path / "stat")
    index = build_report(root, summaries=("summary_comparisons",), progress=False)
    pairs = analysis.compare(load(root), "dataset", "synthetic", "real")
    effect = analysis.effect(pairs)
    said = f"{effect['geomean']:.2f}x ({effect['low']:.2f}-{effect['high']:.2f}"
    assert said.startswith("1.10x (")
    pages = {"index": index.read_text(), "comparisons": (index.parent
                                                         / "summary_comparisons.html").read_text()}
    # the index's answer line and the comparisons page's heading: figure and interval
    assert f"dataset synthetic vs real: {said}" in pages["index"]
    assert "(geometric mean ratio over 4 pairs)" in pages["index"]
    assert f"<strong>{said}" in pages["comparisons"]
    assert "geometric mean ratio over 4 pairs" in pages["comparisons"]
    # the effects table: its column is the geometric mean ratio, its cell the same figure
    table = re.search(r"<table.*?geometric mean ratio.*?</table>", pages["comparisons"], re.S)
    assert table and re.search(r"<td[^>]*>1\.10x</td>", table.group(0))
    for name, page in pages.items():
        assert "median ratio" not in page, name
        text = re.sub(r"<[^>]+>", " ", page)
        stated = re.findall(r"synthetic vs real\W[^0-9]{0,80}?(\d+\.\d\d)x", text)
        assert stated and set(stated) == {"1.10"}, (name, stated)  # never the median, 1.03x
