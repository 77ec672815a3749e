"""The report reads well: answers on the index, tables for people, figures with alt text, run
pages reused when unchanged, relative results folders found from JupyterLab."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from benchlib import formatting
from benchlib.publish.pages import present, summary
from benchlib.publish.pages.scaling_sheet import Sheet
from benchlib.report import index_page
from benchlib.report.build import SUMMARIES, build_report, report_pages

from .browser import chromium
from .conftest import ROOT
from .fakes import campaign, write_record_notebook

#: Every element wider than the page, text that looks like a warning or traceback, truncated
#: tables and images without alt text, as the browser sees them.
INSPECT = """
const doc = document.documentElement;
const text = document.body.innerText;
const cells = Array.from(document.querySelectorAll('td, th')).map(c => c.innerText.trim());
return {overflow: doc.scrollWidth - doc.clientWidth,
        warnings: (text.match(/\\w*Warning: .*|Traceback.*/g) || []),
        truncated: cells.filter(t => t === '...' || t.endsWith('...')).length,
        noalt: Array.from(document.images).filter(i => !(i.alt || '').trim()).length,
        images: document.images.length,
        broken: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).length,
        tables: document.querySelectorAll('table').length};
"""


def test_numbers_are_formatted_for_people():
    assert formatting.ratio(1.9312) == "1.93x" and formatting.percent(0.9642) == "96.4 %"
    assert formatting.si(1.27e9, "B") == "1.27 GB" and formatting.si(8.7e8, "FLOP") == "870 MFLOP"
    assert formatting.tflops(0.052) == "52 GFLOP/s" and formatting.tflops(312.0) == "312 TFLOP/s"
    assert formatting.number(28.081631) == "28.1" and formatting.number(123456.7) == "123,457"


def test_a_table_shows_what_varies_with_units_a_dash_explained_once_and_a_caption():
    frame = pd.DataFrame({"model": ["resnet50"] * 3, "batch_size": [32, 64, 128],
                          "throughput": [1000.0, 1900.0, None], "unit": ["images/s"] * 3,
                          "efficiency": [1.0, 0.95, 0.9], "time_iteration_s": [0.032, 0.034, 0.04]})
    shown = present.table(frame, "Throughput per batch size")
    html = shown._repr_html_()
    assert "<th class=\"num\">throughput (images/s)</th>" in html
    assert "model" not in shown.cells.columns and "Every row: model resnet50" in shown.caption
    assert shown.cells["efficiency"].tolist() == ["100 %", "95.0 %", "90.0 %"]
    assert shown.cells["iteration (ms)"].tolist() == ["32", "34", "40"]
    assert shown.caption.count("–") == 1 and "1,900" in html
    assert html.index("<caption>") < html.index("<thead>")  # shown under it by the page's CSS


def test_a_wide_table_is_never_split_and_scrolls_in_its_own_box():
    frame = pd.DataFrame({"model": ["a", "b"], "dataset": ["real", "synthetic"],
                          **{f"time_p{i}_s": [0.1 * i, 0.2 * i] for i in range(1, 15)}})
    shown = present.table(frame, "Phases", max_columns=8)
    assert isinstance(shown, present.Table) and len(shown.cells.columns) == 16
    html = shown._repr_html_()
    assert "part 1" not in html and "..." not in html
    assert html.startswith('<div class="scroll"><table class="benchlib">')


def test_one_wide_row_says_its_settings_in_the_caption_and_shows_its_numbers():
    frame = pd.DataFrame({"benchmark": ["unet3d_train"], "model": ["unet3d"], "cluster": ["vm"],
                          "gpu": ["cpu"], "num_devices": [1], "batch_size": [4], "precision": ["fp32"],
                          "num_workers": [1], "compile": ["none"], "scaling": ["weak"],
                          "target": ["affinities"], "unet_norm": ["batch"], "unit": ["voxels/s"],
                          "a": [4551.0], "b": [4459.0], "ratio": [1.02]})
    shown = present.table(frame, "Pairs", keep=("a", "b", "ratio"))
    assert list(shown.cells.columns) == ["benchmark", "model", "a (voxels/s)", "b (voxels/s)",
                                         "ratio a / b"]
    assert "Its settings: " in shown.caption and "batch size 4" in shown.caption


def test_units_never_share_a_column():
    frame = pd.DataFrame({"benchmark": ["train", "unet3d_train"], "throughput": [10.0, 5e5],
                          "unit": ["images/s", "voxels/s"]})
    found = present.by_unit(frame, "Throughput")
    assert [t.cells.columns[-1] for t in found] == ["throughput (images/s)", "throughput (voxels/s)"]


def test_a_relative_results_dir_is_found_from_the_notebook_folder(tmp_path, monkeypatch):
    campaign(tmp_path / "outputs" / "demo")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")  # where JupyterLab runs a notebook
    assert summary.resolve_results_dir("outputs/demo") == tmp_path / "outputs" / "demo"
    assert len(summary.load_results("outputs/demo")) == 13
    monkeypatch.chdir(tmp_path)  # the project root, as the report runs it
    assert summary.resolve_results_dir("outputs/demo").resolve() == tmp_path / "outputs" / "demo"
    with pytest.raises(FileNotFoundError, match="does not exist"):
        summary.load_results("outputs/missing")


def test_the_index_answers_first_and_links_each_answer(tmp_path):
    records = summary.load_results(campaign(tmp_path / "fake"))
    runs = {f"train-{i}": f"runs/train-{i}.html" for i in range(12)}
    page = index_page.render("fake", records, report_pages(SUMMARIES), runs)
    answers = page[page.index("<h2>Answers</h2>"):page.index("<h2>Pages</h2>")]
    assert page.index("<h2>Answers</h2>") < page.index(">Runs by benchmark</h2>")
    best = 2500 * 4 * 0.95 ** 3 * 1.1  # synthetic, batch 64, 4 devices
    assert f"{best:,.0f} images/s" in answers and 'href="runs/train-' in answers
    assert "4 devices give <b>3.43x</b>" in answers and "85.7 %" in answers
    assert "dataset synthetic vs real: 1.43x" in answers
    for target in ("summary_scaling.html", "summary_comparisons.html", "summary_node.html"):
        assert f'href="{target}"' in answers
    assert "compute-bound" in answers or "data-bound" in answers


def test_the_scaling_sheet_has_the_reference_blocks_and_says_what_it_shows(tmp_path):
    sheet = Sheet(summary.load_results(campaign(tmp_path / "fake")))
    html = sheet._repr_html_()
    for block in ("images/s", "speedup", "efficiency", "energy efficiency (images/J)",
                  "speedup from synthetic data vs real data", "speedup from batch 64 vs batch 32"):
        assert f">{block}</th>" in html, block
    assert html.count(">median</th>") == 6
    assert ">unknown<" in html  # the fake campaign measured no energy: unknown, never 0
    assert "From 1 to 4 devices the throughput grows 3.43x" in html
    assert "synthetic data runs 1.43x faster than real data" in html
    assert "images/s: synthetic data runs 1.43x faster" in html  # its scope said


def test_a_rebuild_exports_only_the_run_pages_that_changed(tmp_path, monkeypatch):
    from benchlib.report import run_pages

    root = campaign(tmp_path / "fake")
    build_report(root, summaries=(), progress=False)
    exported = []
    export = run_pages.export_html

    def counting(notebook, target, include_code, **options):
        exported.append(notebook.name)
        return export(notebook, target, include_code, **options)

    monkeypatch.setattr(run_pages, "export_html", counting)
    build_report(root, summaries=(), progress=False)
    assert exported == []
    write_record_notebook(root / "train-new.ipynb", {"schema_version": 1, "campaign": "fake",
                                                     "benchmark": "train", "status": "ok",
                                                     "throughput": 1.0, "unit": "images/s"})
    index = build_report(root, summaries=(), progress=False)
    assert exported == ["train-new.ipynb"]
    assert len(list((index.parent / "runs").glob("*.html"))) == 14


@pytest.mark.slow
@pytest.mark.xdist_group("report")
def test_every_page_renders_and_reads_at_1400_px_in_chromium(report):
    """Every summary page (the compare page too: the report has a baseline) and two run pages
    in headless Chromium: plots loaded, tables shown, nothing wider than the page, no warning
    or traceback text, no truncated table, alt text on every image."""
    index = report
    assert (index.parent / "summary_compare.html").is_file()
    shots = ROOT / "outputs" / "test-artifacts"
    shots.mkdir(parents=True, exist_ok=True)
    pages = [index, *sorted(index.parent.glob("summary_*.html")),
             *sorted((index.parent / "runs").glob("*.html"))[:2]]
    with chromium() as driver:
        driver.set_window_size(1400, 1000)
        for page in pages:
            driver.get(page.as_uri())
            seen = driver.execute_script(INSPECT)
            assert seen["overflow"] <= 0, (page.name, seen["overflow"])
            assert seen["warnings"] == [], (page.name, seen["warnings"])
            assert seen["truncated"] == 0 and seen["noalt"] == 0, (page.name, seen)
            assert seen["broken"] == 0, (page.name, seen)  # every plot image loaded
            if page.parent == index.parent:
                assert seen["tables"] >= 1, page.name
            if page.name.startswith("summary_"):
                assert seen["images"] >= 1, page.name
            height = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(1400, min(height + 150, 12000))
            name = re.sub(r"\W", "_", page.stem)
            driver.save_screenshot(str(shots / f"readable-{name}.png"))
            driver.set_window_size(1400, 1000)
    assert (shots / "readable-summary_scaling.png").stat().st_size > 10_000


def test_the_index_scaling_line_names_the_runs_at_each_end_of_its_range(tmp_path):
    """'42.9 % to 85.7 % over 4 runs' says which run is the 42.9 % one."""
    from benchlib.analysis import comparisons
    from benchlib.publish.pages import summary
    from benchlib.report import index_page

    from .fakes import campaign

    df = comparisons.ok(summary.load_results(campaign(tmp_path / "c"))).copy()
    slow = df.index[(df["num_devices"] == 4) & (df["dataset"] == "real") & (df["batch_size"] == 64)]
    df.loc[slow, "throughput"] *= 0.5
    name = df.loc[slow[0], "source"].rsplit("/", 1)[-1].removesuffix(".ipynb")
    (line,) = index_page.scaling(df, {df.loc[slow[0], "source"]: f"runs/{name}.html"})
    assert f'42.9 % (<a href="runs/{name}.html">{name}</a>) to 85.7 % (' in line
    assert line.endswith(") over 4 runs</li>")


def test_the_index_scaling_line_flags_a_disturbed_run_behind_it(tmp_path):
    from benchlib.analysis import comparisons
    from benchlib.publish.pages import summary
    from benchlib.report import index_page

    from .fakes import campaign

    df = comparisons.ok(summary.load_results(campaign(tmp_path / "c"))).copy()
    noisy = df.index[(df["num_devices"] == 2) & (df["dataset"] == "real") & (df["batch_size"] == 32)]
    df.loc[noisy, "flags"] = "contended"
    (line,) = index_page.scaling(df, {})
    name = df.loc[noisy[0], "source"].rsplit("/", 1)[-1].removesuffix(".ipynb")
    assert line.endswith(f'<span class="flag">⚠ contended</span> ({name})</li>')


def test_the_index_scaling_line_cites_only_runs_of_configurations_that_scaled(tmp_path):
    """The demo's index: 'train resnet18: 2 devices give 0.74x ... ⚠ contended,superlinear
    (train-real-r0-...)': a run of real data, measured on one device only, behind a ratio of
    synthetic runs. A configuration with one device count is not behind the line; two flags
    read 'contended, superlinear'."""
    from benchlib.analysis import comparisons
    from benchlib.publish.pages import summary
    from benchlib.report import index_page

    from .fakes import campaign

    df = comparisons.ok(summary.load_results(campaign(tmp_path / "c"))).copy()
    lone = df[(df["num_devices"] == 1) & (df["dataset"] == "real") & (df["batch_size"] == 64)]
    lone = lone.head(1).assign(batch_size=48, flags="contended")  # one device count only
    scaled = df.index[(df["num_devices"] == 2) & (df["dataset"] == "real") & (df["batch_size"] == 32)]
    df.loc[scaled, "flags"] = "contended,noisy"
    (line,) = index_page.scaling(pd.concat([df, lone], ignore_index=True), {})
    name = df.loc[scaled[0], "source"].rsplit("/", 1)[-1].removesuffix(".ipynb")
    assert line.endswith(f'<span class="flag">⚠ contended, noisy</span> ({name})</li>'), line


def test_a_run_page_shows_the_configuration_table_not_its_thirty_lines_of_code(tmp_path):
    """The benchmark notebooks tag their configuration cell `hide-input`: the run page keeps
    the table it prints and leaves out the `name=name,` lines (the lead shows the parameters)."""
    import nbformat

    from benchlib.report.export import HIDE_INPUT, export_html

    source = nbformat.read("notebooks/train.ipynb", as_version=4)
    tagged = [c for c in source.cells if HIDE_INPUT in (c.metadata.get("tags") or [])]
    assert len(tagged) == 1 and tagged[0].source.startswith("config = ClassificationConfig(")
    cell = nbformat.v4.new_code_cell(tagged[0].source, metadata={"tags": [HIDE_INPUT]})
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": "<table><tr>"
                                           "<td>batch_size</td><td>32</td></tr></table>"})]
    nb = nbformat.v4.new_notebook(cells=[cell, nbformat.v4.new_code_cell("x = 1")])
    nb.metadata["language_info"] = {"name": "python"}
    path = tmp_path / "run.ipynb"
    nbformat.write(nb, str(path))
    page = export_html(path, tmp_path / "run.html", include_code=True).read_text()
    assert "ClassificationConfig" not in page and "batch_size" in page and "x" in page


def test_the_results_come_right_after_the_settings_that_name_a_row():
    """At 390 px a reader sees the first columns: the value, ratio, verdict and flags come right
    after the benchmark and model, the other settings after them."""
    frame = pd.DataFrame({"benchmark": ["train", "train"], "model": ["a", "b"],
                          "batch_size": [16, 32], "data_path": ["x", "y"], "num_workers": [1, 2],
                          "throughput": [10.0, 20.0], "flags": ["", "noisy"]})
    shown = present.table(frame, "Runs")
    columns = list(shown.cells.columns)
    assert columns.index("throughput") < columns.index("batch size")
    assert columns[0] == "model" and columns.index("flags") < columns.index("batch size")


def test_in_a_report_each_page_names_its_flags_in_one_line_and_links_the_index(monkeypatch):
    """The index explains every flag once; a summary page of the report says what it marks in
    one line with the link (in JupyterLab, outside a report, the whole explanation stays)."""
    from benchlib.publish import local_paths
    from benchlib.publish.pages.flag_notes import INDEX_FLAGS, flag_notes

    frame = pd.DataFrame({"benchmark": ["train"] * 3, "status": ["ok"] * 3,
                          "throughput": [1.0, 2.0, 3.0], "flags": ["noisy", "", "short"],
                          "source": ["a.ipynb", "b.ipynb", "c.ipynb"]})
    monkeypatch.delenv(local_paths.ROOT_ENV, raising=False)
    alone = flag_notes(frame)
    assert "iteration times spread" in alone and "\n- " in alone
    monkeypatch.setenv(local_paths.ROOT_ENV, "/somewhere")
    line = flag_notes(frame)
    assert "\n" not in line and "**noisy** 1 of 3 runs" in line and INDEX_FLAGS in line
