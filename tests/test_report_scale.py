"""A report of many runs: run pages rendered cheaply and still self-contained, plots that stay
readable (at most plots.MAX_BARS bars), lookups that do not rescan every row, and the
benchmark that measures it all (benchmarks/report_scale.py)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from benchlib.analysis import comparisons as analysis
from benchlib.analysis import verdict
from benchlib.publish.pages import plots
from benchlib.records.store import write_sidecar
from benchlib.report import export

from .conftest import ROOT, examples
from .fakes import write_record_notebook


def _notebook(path: Path, value: int) -> Path:
    """A run notebook: Markdown, code, a progress bar on stderr, a table and an image."""
    cells = [new_markdown_cell("# A run\n\nWhat it **measures**."),
             new_code_cell("print('x')", outputs=[
                 new_output("stream", name="stdout", text="step 1\n"),
                 new_output("stream", name="stdout", text="step 2\n"),
                 new_output("stream", name="stderr", text="10%\r50%\r100%\n"),
                 new_output("display_data", data={
                     "text/html": f"<table><tr><td>value {value}</td></tr></table>",
                     "text/plain": "table"}),
                 new_output("display_data", data={"image/png": "aGVsbG8=", "text/plain": "img"},
                            metadata={"image/png": {"alt": "Plot of the run", "width": 40}})])]
    nb = new_notebook(cells=cells, metadata={"language_info": {"name": "python"}})
    nbformat.write(nb, str(path))
    return path


def test_a_run_page_is_small_self_contained_and_renders_shared_cells_once(tmp_path):
    first = export.export_html(_notebook(tmp_path / "a.ipynb", 1), tmp_path / "a.html", True)
    before = export._markdown.cache_info().hits
    second = export.export_html(_notebook(tmp_path / "b.ipynb", 2), tmp_path / "b.html", True)
    assert export._markdown.cache_info().hits > before  # the same Markdown: rendered once
    page = second.read_text()
    assert "value 2" in page and "value 1" in first.read_text()
    assert len(page.encode()) < 30_000  # styles inline, no 240 kB theme
    assert "<script" not in page and "<link" not in page and "http" not in page
    assert '<span class="nb">print</span>' in page  # highlighted code
    assert "step 1\nstep 2\n" in page  # consecutive streams joined
    assert "100%" in page and "10%" not in page  # what the progress bar ended as
    assert 'alt="Plot of the run" width="40"' in page and '<h1 id="A-run">' in page
    summary = export.export_html(tmp_path / "a.ipynb", tmp_path / "c.html", False).read_text()
    assert '<div class="jp-InputArea-editor">' not in summary and "value 1" in summary  # no code


def test_the_sanitizer_keeps_what_pages_need_and_nothing_that_runs():
    clean = export.sanitize_html(
        '<a href="runs/x.html">r</a><a href="https://x.org">h</a><a href="javascript:x()">j</a>'
        '<a href="data:text/html,x">d</a><img src="data:image/png;base64,AAAA" alt="p" onerror="x">'
        '<img src="https://x.org/i.png"><table><tr><td style="text-align: right" onclick="x">1</td>'
        '</tr></table>'
        '<p style="color: red">2</p><script>x()</script><style>p {}</style><!-- c -->'
        '<iframe src="x"></iframe><svg onload="x()"><g/></svg><b title="t">3</b>')
    assert '<a href="runs/x.html">r</a><a href="https://x.org">h</a>' in clean
    assert "javascript" not in clean and "data:text" not in clean and "on" not in clean.replace(
        "none", "")
    assert '<img src="data:image/png;base64,AAAA" alt="p">' in clean and "x.org/i.png" not in clean
    assert 'style="text-align: right"' in clean and "color" not in clean
    for gone in ("<script", "<style", "<!--", "<iframe", "<svg", "x()"):
        assert gone not in clean, gone
    assert '<b title="t">3</b>' in clean and ">2<" in clean


def test_a_notebook_with_an_unknown_cell_type_cannot_be_shown(tmp_path):
    path = tmp_path / "bad.ipynb"
    path.write_text('{"cells": [{"cell_type": "nonsense", "id": "a", "source": "", "metadata": {}}], '
                    '"metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    with pytest.raises(nbformat.ValidationError):
        export.export_html(path, tmp_path / "bad.html", True)


def test_a_plot_of_many_rows_draws_the_most_telling_and_says_so():
    ratios = [1.0 + i / 100 for i in range(100)] + [0.2]
    pairs = pd.DataFrame({"batch_size": range(101), "ratio": ratios})
    figure = plots.ratio_plot(pairs, "batch", label_columns=["batch_size"])
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert len(labels) == plots.MAX_BARS and "batch 100" in labels  # 0.2x: furthest from 1x
    assert "batch 0" not in labels and labels == sorted(labels, key=lambda t: int(t.split()[1]))
    assert "(the 40 of 101 pairs furthest from 1x)" in figure.axes[0].get_title()
    small = plots.ratio_plot(pairs.head(5), "batch", label_columns=["batch_size"])
    assert small.axes[0].get_title() == "batch"


def test_a_shown_figure_lets_go_of_what_it_drew(monkeypatch):
    """A kernel's inline backend keeps every figure of a cell until the cell ends: a summary
    cell drawing 14 plots held them all (160 MB at 5,000 runs)."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: shown.append(a[0]))
    figure = plots.ratio_plot(pd.DataFrame({"batch_size": [1, 2], "ratio": [1.1, 0.9]}), "b",
                              label_columns=["batch_size"])
    plots.show(figure)
    assert shown[0]["image/png"] and not figure.axes


def test_a_verdict_plot_of_many_runs_keeps_those_waiting_longest():
    table = pd.DataFrame({"benchmark": "train", "model": "m", "batch_size": range(90),
                          "num_devices": 1, "verdict": "compute-bound",
                          "data_wait_share": [i / 100 for i in range(90)], "mfu": 0.5})
    title = plots.verdict_plot(table).axes[0].get_title()
    assert title.endswith("(the 40 of 90 runs waiting longest for data)")


HOSTS = st.sampled_from(["n1", "n2", "n3", None])
ROWS = st.lists(st.tuples(st.booleans(), HOSTS, st.sampled_from(["c", "d", None]),
                          st.sampled_from(["H100", "A100", None])), min_size=1, max_size=12)


@settings(max_examples=examples(60), deadline=None)
@given(ROWS)
def test_each_runs_probe_is_the_one_the_row_by_row_lookup_finds(rows):
    frame = pd.DataFrame([{"benchmark": "probe_node" if probe else "train", "host": host,
                           "cluster": cluster, "gpu": gpu, "status": "ok",
                           "matmul_tflops_fp32": float(index)}
                          for index, (probe, host, cluster, gpu) in enumerate(rows)])
    found = verdict.probes(frame)
    latest = verdict._latest_probes(found)
    for _, run in frame.iterrows():
        fast, slow = verdict._probe_of(run, found, latest), verdict._probe_for(run, found)
        assert (fast is None) == (slow is None)
        if fast is not None:
            assert fast.equals(slow)


def test_each_pair_carries_every_flag_of_both_sides():
    base = {"benchmark": "train", "model": "m", "status": "ok", "unit": "images/s",
            "channels_last": False}
    rows = [{**base, "dataset": d, "batch_size": b, "throughput": 10.0 + i, "flags": f}
            for i, (d, b, f) in enumerate([("synthetic", 32, "noisy"), ("synthetic", 32, "short"),
                                           ("real", 32, "contended"), ("synthetic", 64, ""),
                                           ("real", 64, ""), ("real", 64, "throttled")])]
    frame = pd.DataFrame(rows).astype({"batch_size": "Int64"})
    frame.loc[len(frame)] = {**base, "dataset": "real", "batch_size": pd.NA, "throughput": 1.0,
                             "flags": "noisy"}
    pairs = analysis.compare(frame, "dataset", "synthetic", "real").set_index("batch_size")
    assert sorted(pairs.loc[32, "flags"].split(",")) == ["contended", "noisy", "short"]
    assert pairs.loc[64, "flags"] == "throttled"


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=2)
                    | st.dictionaries(st.text(max_size=2), inner, max_size=2), max_leaves=3)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), JSON, max_size=3)
                .map(lambda record: {"source": "x", **record}), max_size=5))
def test_records_gathered_by_column_make_the_table_pandas_makes_of_them(records):
    from benchlib.records.results import _Rows

    rows = _Rows()
    for record in records:
        rows.append(record)
    expected = pd.DataFrame(records)
    if records:
        pd.testing.assert_frame_equal(rows.frame(), expected)
    else:
        assert rows.frame().empty and expected.empty


def _scaling_row_by_row(df: pd.DataFrame) -> pd.DataFrame:
    """analysis.scaling as it was, group by group with .loc: the oracle of the vectorised one."""
    from benchlib.records import flags

    df = analysis.hashable(analysis.ok(df))
    by = analysis.config_columns(df, exclude=("num_devices", "num_nodes"))
    df["speedup"], df["efficiency"], df["baseline_devices"], df["baseline_key"] = \
        np.nan, np.nan, pd.NA, -1
    groups = df.groupby(by, dropna=False, sort=False) if by else [((), df)]
    for key, (_, group) in enumerate(groups):
        fewest = group["num_devices"].min()
        base = group.loc[group["num_devices"] == fewest, "throughput"].median()
        df.loc[group.index, "speedup"] = group["throughput"] / base
        df.loc[group.index, "efficiency"] = (group["throughput"] / base) * fewest / group["num_devices"]
        df.loc[group.index, "baseline_devices"] = fewest
        df.loc[group.index, "baseline_key"] = key
    df = flags.with_flags(df)
    return flags.add_flag(df, df["efficiency"] > flags.SUPERLINEAR_EFFICIENCY, "superlinear")


SCALING_ROWS = st.fixed_dictionaries({
    "benchmark": st.just("train"), "status": st.just("ok"), "model": st.sampled_from(["a", "b", None]),
    "batch_size": st.sampled_from([16, 32, None]), "num_devices": st.sampled_from([1, 2, 4]),
    "throughput": st.floats(0.5, 1000)})


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(SCALING_ROWS, min_size=1, max_size=12), st.booleans())
def test_scaling_by_whole_columns_is_what_the_group_by_group_loop_gave(records, nullable):
    df = pd.DataFrame(records)
    if nullable:
        df = df.astype({"num_devices": "Int64", "batch_size": "Int64"})
    expected, found = _scaling_row_by_row(df), analysis.scaling(df)
    assert sorted(found.columns) == sorted(expected.columns)  # shown: what varies, then speedup
    for column in ("speedup", "efficiency"):
        np.testing.assert_allclose(found[column].astype(float), expected[column].astype(float))
    assert [None if pd.isna(v) else int(v) for v in found["baseline_devices"]] == \
        [None if pd.isna(v) else int(v) for v in expected["baseline_devices"]]
    assert found["baseline_key"].tolist() == expected["baseline_key"].tolist()
    assert found["flags"].tolist() == expected["flags"].tolist()


def test_scaling_of_runs_without_a_throughput_leaves_speedup_missing():
    df = pd.DataFrame([{"benchmark": "train", "status": "ok", "model": "a", "num_devices": 1,
                        "throughput": None}])  # the group-by-group loop raised TypeError here
    assert analysis.scaling(df)["speedup"].isna().all()


def _script():
    spec = importlib.util.spec_from_file_location("report_scale",
                                                  ROOT / "benchmarks" / "report_scale.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["report_scale"] = module
    spec.loader.exec_module(module)
    return module


def _source(folder: Path) -> Path:
    """An executed-looking campaign with sidecars: two training runs and a node probe."""
    record = {"schema_version": 1, "campaign": "src", "benchmark": "train", "model": "resnet18",
              "status": "ok", "unit": "images/s", "num_devices": 1, "batch_size": 16,
              "throughput": 100.0, "throughput_low": 98.0, "throughput_high": 102.0,
              "time_iteration_s": 0.16, "time_data_s": 0.01, "notebook": "train"}
    for name, extra in (("train-a", {}), ("train-b", {"dataset": "real"}),
                        ("node_probe-c", {"benchmark": "probe_node", "notebook": "node_probe"})):
        notebook = write_record_notebook(folder / f"{name}.ipynb", {**record, **extra})
        write_sidecar(notebook, {**record, **extra})
    return folder


def test_the_scale_campaign_varies_its_runs_and_each_record_matches_its_notebook(tmp_path):
    from benchlib.records.results import scan

    script = _script()
    script.make_campaign(_source(tmp_path / "src"), tmp_path / "scale", 40, copy=False)
    found = scan(tmp_path / "scale")
    frame = found.frame
    assert len(frame) == 40 and not found.skipped
    assert frame["host"].nunique() == 16 and frame["gpu"].nunique() == 3
    train = frame[frame["benchmark"] == "train"]
    assert train["batch_size"].nunique() > 1 and train["model"].nunique() > 1
    assert np.allclose(train["throughput"] * train["time_iteration_s"], 100.0 * 0.16)
    used, files = script.disk_usage(tmp_path / "scale")
    assert files == 80 and used > 0  # a notebook and a sidecar per run


@pytest.mark.slow
def test_the_scale_benchmark_prints_cold_rebuild_memory_and_disk(tmp_path):
    import subprocess

    _source(tmp_path / "src")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "report_scale.py"),
                           "--runs", "8", "--source", str(tmp_path / "src"), "--folder",
                           str(tmp_path / "bench"), "--json", str(tmp_path / "figures.json")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    for line in ("cold ", "rebuild ", "one new run ", "report/ "):
        assert re.search(rf"^{line}.*", done.stdout, re.MULTILINE), done.stdout
    figures = json.loads((tmp_path / "figures.json").read_text())
    assert figures["cold"]["peak_rss_bytes"] > 50e6 and figures["rebuild"]["cpu_s"] > 0
    assert figures["one new run"]["cpu_s"] > figures["rebuild"]["cpu_s"]  # summaries run again
    assert figures["report_files"] > 9  # the index, a page per run, the summaries


def _tiny_summary(folder: Path, text: str = "len(load(results_dir))") -> Path:
    """A summary notebook that shows how many records the campaign has."""
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell("results_dir = ''", metadata={"tags": ["parameters"]}),
                             new_code_cell(f"from benchlib.results import load\n{text}")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    folder.mkdir(exist_ok=True)
    nbformat.write(nb, str(folder / "summary_tiny.ipynb"))
    return folder


@pytest.mark.slow
def test_a_summary_is_reused_until_something_it_is_made_of_changes(tmp_path, monkeypatch):
    from benchlib.report import build as report

    from .fakes import campaign

    root = campaign(tmp_path / "c")
    monkeypatch.setattr(report, "NOTEBOOK_DIR", _tiny_summary(tmp_path / "notebooks"))
    ran, run = [], report._run_summary
    monkeypatch.setattr(report, "_run_summary", lambda *a, **k: (ran.append(a[0]), run(*a, **k)))

    def build() -> str:
        index = report.build_report(root, summaries=("summary_tiny",), progress=False)
        return (index.parent / "summary_tiny.html").read_text()

    assert "13" in build() and len(ran) == 1
    assert "13" in build() and len(ran) == 1  # nothing changed: the page is reused
    write_record_notebook(root / "train-new.ipynb", {"schema_version": 1, "benchmark": "train",
                                                     "status": "ok", "throughput": 1.0})
    assert "14" in build() and len(ran) == 2  # a new run: made again
    _tiny_summary(tmp_path / "notebooks", "len(load(results_dir)) * 100")
    assert "1400" in build() and len(ran) == 3  # another notebook: made again


def test_a_summary_key_changes_with_each_input(tmp_path, monkeypatch):
    from benchlib.report import reuse

    from .fakes import campaign

    root, base = campaign(tmp_path / "c"), campaign(tmp_path / "base")
    refs = tmp_path / "refs.yaml"
    refs.write_text("references: []\n")
    notebook = _tiny_summary(tmp_path / "notebooks") / "summary_tiny.ipynb"

    def key(parameters: dict | None = None) -> str:
        return reuse.summary_key(reuse.inputs_digest([root, base], [refs]), notebook,
                                 parameters or {"results_dir": str(root)})

    first = key()
    assert key() == first
    (root / "report").mkdir()
    (root / "report" / "index.html").write_text("a report")  # reports are not inputs
    (root / ".report-abcdefgh").mkdir()
    (root / ".report-abcdefgh.owner").write_text("{}")  # a build's scratch
    assert key() == first
    changed = []
    for change in (lambda: (base / "train-0.ipynb").write_text("{}"),  # the baseline
                   lambda: refs.write_text("references: [] # another\n"),
                   lambda: (root / "notes.txt").write_text("a new file"),
                   lambda: notebook.write_text(notebook.read_text() + " ")):
        change()
        changed.append(key())
    assert len({first, *changed}) == 5
    assert key({"results_dir": str(root), "references_file": str(refs)}) != changed[-1]
    monkeypatch.setattr(reuse, "LIBRARIES", (*reuse.LIBRARIES, "hypothesis"))
    reuse.code_version.cache_clear()
    try:
        assert key() != changed[-1]  # another library version
    finally:
        reuse.code_version.cache_clear()
