"""The History page: the campaign and earlier runs of its configurations, change points listed
and drawn per configuration and node; ``benchlib report --history`` checks its folders."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib.dates
import matplotlib.pyplot as plt
import pandas as pd
import pytest
from IPython.display import Markdown

from benchlib.analysis import selection
from benchlib.errors import InputError
from benchlib.history import page as history
from benchlib.history import plot as history_plot
from benchlib.history.report_input import validated_history
from benchlib.publish.pages.summary import load_results
from benchlib.report.build import ReportInputs, report_pages
from tests.test_history import _nights, _write_nights


@pytest.fixture
def shown(monkeypatch):
    import IPython.display

    seen: list = []
    monkeypatch.setattr(IPython.display, "display", lambda *values, **_: seen.extend(values))
    yield seen
    plt.close("all")


@pytest.fixture(scope="module")
def nightly(tmp_path_factory) -> Path:
    """16 nights on two nodes; node017 12 % slower from the 9th, when its driver changed."""
    root = tmp_path_factory.mktemp("history") / "nightly"
    _write_nights(root, _nights(nights=16, step=8, driver_at=8))
    return root


def _text(seen: list) -> str:
    return "\n".join(v.data for v in seen if isinstance(v, Markdown)).replace("\\", "")


def test_the_page_lists_draws_and_labels_the_change_point(nightly: Path, shown: list) -> None:
    campaign = load_results(nightly / "n15")
    runs = history.runs(campaign, os.pathsep.join([str(nightly)]))
    assert len(runs) == 32  # the campaign's 2 runs and the 30 earlier ones, none twice
    assert "2 runs of this campaign and 30 earlier runs" in _text(shown)
    found = history.change_points(runs, 0.05)
    said = _text(shown)
    assert "throughput -12 % (" in said and "on node017 from 2026-09-09" in said
    changes, every = [v._repr_html_() for v in shown if hasattr(v, "_repr_html_")]
    html = changes
    assert "node017" in html and "2026-09-09" in html and "driver 580.65 -&gt; 580.82" in html
    assert "-12 % (" in html  # the change as the lines say it
    assert "node001" in every and "2026-09-01 02:00" in every  # every history, with or without
    shown.clear()
    history.node_plots(runs, found)
    images = [v for v in shown if isinstance(v, dict) and "image/png" in v]
    assert len(images) == 2  # one per configuration and node
    assert "on node017" in images[0]["text/plain"]  # the one with a change point first


def test_the_plot_marks_the_change_point_and_leaves_disturbed_runs_grey() -> None:
    runs = _nights(nights=16, step=8, driver_at=8, nodes=("node017",))
    runs.loc[3, "flags"] = "throttled"
    from benchlib.history import series as node_history

    found = node_history.change_points(runs)
    table = found.table
    figure = history_plot.node_plot(node_history.series(runs), table, title="bs=64 on node017")
    texts = [t.get_text() for t in figure.axes[0].texts]
    assert len(texts) == 1 and texts[0].startswith("-1")
    assert texts[0].endswith(" % from 2026-09-09\ndriver 580.65 -> 580.82")
    labels = figure.axes[0].get_legend_handles_labels()[1]
    assert "disturbed, left out (1)" in labels
    figure.canvas.draw()


def test_earlier_runs_are_the_campaigns_configurations_on_its_nodes(nightly: Path) -> None:
    campaign = load_results(nightly / "n15")
    every = load_results(nightly)
    other = every.assign(batch_size=every["batch_size"] * 2)
    assert len(selection.earlier(campaign, every)) == 30
    twice = pd.concat([every, every.assign(source="/copy" + every["source"].astype(str))])
    assert "run_id" in every and len(selection.earlier(campaign, twice)) == 30  # a copy: once
    assert selection.earlier(campaign, other).empty
    assert selection.earlier(campaign[campaign["host"] == "node001"], every)["host"].unique() \
        .tolist() == ["node001"]


def test_history_folders_are_checked_and_add_the_page(nightly: Path, tmp_path: Path) -> None:
    campaign = nightly / "n15"
    folders = validated_history([str(nightly)], campaign)
    inputs = ReportInputs(history=folders)
    assert inputs.parameters("summary_history") == {"history_dirs": str(nightly)}
    titles = [link.title for link in report_pages(("summary_scaling", "summary_history"),
                                                  inputs)]
    assert titles == ["Scaling", "History"]
    with pytest.raises(InputError, match="--history nowhere: not an existing folder"):
        validated_history(["nowhere"], campaign)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no result records in that folder"):
        validated_history([str(tmp_path / "empty")], campaign)
    _write_nights(tmp_path / "other", _nights(nights=3, nodes=("node999",)))
    with pytest.raises(InputError, match="no earlier runs of this campaign's configurations"):
        validated_history([str(tmp_path / "other")], campaign)


def test_report_with_a_bad_history_folder_is_exit_2_before_anything_runs(nightly: Path,
                                                                        tmp_path: Path) -> None:
    shutil.copytree(nightly / "n15", tmp_path / "n15", ignore=shutil.ignore_patterns("report"))
    done = subprocess.run([str(Path(sys.executable).with_name("benchlib")), "report", "n15",
                           "--history", "n-missing", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "--history n-missing: not an existing folder" in done.stderr
    assert not (tmp_path / "n15" / "report").exists()


@pytest.mark.slow
@pytest.mark.xdist_group("report")
def test_the_report_gains_the_history_page(nightly: Path, tmp_path: Path) -> None:
    from benchlib.report.build import build_report

    index = build_report(nightly / "n15", summaries=("summary_scaling",), progress=False,
                         history=[nightly])
    page = (index.parent / "summary_history.html").read_text(encoding="utf-8")
    assert "on node017 from 2026-09-09" in page and "<img" in page
    assert 'href="summary_history.html"' in index.read_text(encoding="utf-8")


def test_a_configured_catalog_with_earlier_runs_adds_the_page(nightly: Path, tmp_path: Path,
                                                              monkeypatch, shown: list) -> None:
    from benchlib.cli import main

    catalog = tmp_path / "catalog.sqlite"
    assert main(["index", str(nightly), "--db", str(catalog), "--quiet"]) == 0
    campaign = nightly / "n15"
    assert ReportInputs.validated(campaign=campaign).history_catalog == ""  # none configured
    monkeypatch.setenv("BENCHLIB_DB", str(catalog))
    inputs = ReportInputs.validated(campaign=campaign)
    assert inputs.history_catalog == "30 runs to 2026-09-15T02:00:00Z"
    assert inputs.parameters("summary_history") == {"history_db": "$BENCHLIB_DB"}
    assert [link.title for link in report_pages(("summary_history",), inputs)] == ["History"]
    runs = history.runs(load_results(campaign), "", "$BENCHLIB_DB")
    assert len(runs) == 32
    assert "2 runs of this campaign and 30 earlier runs" in _text(shown)
    assert "from the catalog" in _text(shown)
    monkeypatch.setenv("BENCHLIB_DB", str(tmp_path / "none" / "catalog.sqlite"))
    said: list[str] = []
    from benchlib.history.report_input import catalog_history

    assert catalog_history(campaign, said.append) == ""
    assert said and said[0].startswith("History page: the catalog of $BENCHLIB_DB not read")


def test_a_catalog_s_runs_after_the_campaign_are_later_not_earlier(nightly: Path, tmp_path: Path,
                                                                   monkeypatch,
                                                                   shown: list) -> None:
    shutil.copytree(nightly, tmp_path / "nightly")
    done = subprocess.run([str(Path(sys.executable).with_name("benchlib")), "index", "nightly",
                           "--db", "catalog.sqlite", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("BENCHLIB_DB", str(tmp_path / "catalog.sqlite"))
    middle = load_results(tmp_path / "nightly" / "n7")  # 7 nights before it, 8 after
    runs = history.runs(middle, "", "$BENCHLIB_DB")
    assert len(runs) == 32
    said = _text(shown)
    assert "2 runs of this campaign, 14 earlier runs and 16 later runs (begun after this " \
           "campaign began)" in said, said
    assert "30 earlier" not in said


def test_one_run_gets_a_day_either_side_and_the_legend_covers_no_run() -> None:
    from benchlib.history import series as node_history

    for nights in (1, 16):
        runs = node_history.series(_nights(nights=nights, step=None, driver_at=None,
                                           nodes=("node017",)))
        figure = history_plot.node_plot(runs, node_history.change_points(runs).table,
                                        title="bs=64 on node017")
        axes = figure.axes[0]
        figure.canvas.draw()
        low, high = (pd.Timestamp(matplotlib.dates.num2date(x)) for x in axes.get_xlim())
        first, last = runs["time"].min(), runs["time"].max()
        assert first - pd.Timedelta(days=2) <= low and high <= last + pd.Timedelta(days=2), \
            (low, high)  # matplotlib gave a single date 2025 to 2029
        # the legend lies outside the axes, so it covers none of the runs drawn in them
        legend = axes.get_legend().get_window_extent()
        assert not legend.overlaps(axes.get_window_extent())
        assert not legend.overlaps(axes.xaxis.label.get_window_extent())
        plt.close(figure)


def test_the_catalog_s_runs_pair_with_a_campaign_read_as_a_report_reads_it(tmp_path, monkeypatch):
    """In a report's kernel a campaign's path columns are read relative to the builder's root
    (data/demo-images), the catalog's as stored (absolute): before, no catalog run paired with
    the campaign's configurations and the page said '0 earlier runs' (docs/acceptance.md's
    nightly example)."""
    import pandas as pd

    from benchlib.analysis import selection
    from benchlib.publish import local_paths
    from benchlib.publish.pages import summary

    data = tmp_path / "data" / "imgs"
    run = {"benchmark": "train", "model": "resnet18", "host": "n1", "status": "ok",
           "unit": "images/s", "data_path": str(data), "throughput": 100.0}
    stored = pd.DataFrame([{**run, "run_id": f"old{i}", "campaign": f"c{i}"} for i in range(3)])
    campaign = pd.DataFrame([{**run, "run_id": "new", "campaign": "new"}])
    monkeypatch.setenv(local_paths.ROOT_ENV, str(tmp_path))
    monkeypatch.setattr(selection, "catalog_runs", lambda c, db, as_read=None:
                        as_read(stored) if as_read else stored)
    read = summary.as_read(campaign)
    assert read["data_path"].iloc[0] == "data/imgs"  # relative, as the pages read it
    assert len(selection.earlier_in_catalog(read, "db")) == 0  # the pairing that failed
    assert len(selection.earlier_in_catalog(read, "db", summary.as_read)) == 3
