import os
import re

import pytest

from benchlib.errors import ReportError
from benchlib.publish.pages.catalog import SUMMARY_PAGES, Needs
from benchlib.report.build import build_report

from .fakes import build_reports_at_once, campaign

#: Every summary page but a diagnose campaign's; the compare page comes with a baseline (the
#: ``report`` fixture has one).
SUMMARIES = sorted(p.name for p in SUMMARY_PAGES if p.needs is not Needs.DIAGNOSE_PLAN)


@pytest.mark.slow
@pytest.mark.xdist_group("report")
def test_report_has_every_page_offline(report):
    folder = report.parent
    assert sorted(p.stem for p in folder.glob("summary_*.html")) == SUMMARIES
    assert len(list((folder / "runs").glob("*.html"))) == 13
    index = report.read_text()
    assert len(set(re.findall(r'href="(summary_\w+\.html)"', index))) == len(SUMMARIES)
    assert len(set(re.findall(r'href="(runs/[^"]+)"', index))) == 13
    for page in folder.rglob("*.html"):
        text = page.read_text()
        external = re.findall(r'<(?:script|link|img|iframe)[^>]*(?:src|href)="(?!data:)[^"]*//', text)
        assert not external, (page, external)
        assert "Traceback" not in text, page
    comparisons = (folder / "summary_comparisons.html").read_text()
    assert "dataset: synthetic vs real" in comparisons and "1.43x" in comparisons
    assert "CUDA out of memory" in (folder / "summary_scaling.html").read_text()
    assert "def " not in (folder / "summary_scaling.html").read_text()  # no code cells


def test_report_of_an_empty_folder_fails_clearly(tmp_path):
    with pytest.raises(FileNotFoundError, match="no result records under"):
        build_report(tmp_path)
    assert not (tmp_path / "report").exists()


def _report_files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_two_concurrent_reports_both_succeed(tmp_path, monkeypatch):
    import threading

    from benchlib.report import run_pages

    root = campaign(tmp_path / "fake")
    export = run_pages.export_html
    together = threading.Barrier(2, timeout=60)
    first = threading.local()

    def export_in_step(notebook, target, include_code, **options):
        if not getattr(first, "done", False):  # each build waits for the other once
            first.done = True
            together.wait()
        return export(notebook, target, include_code, **options)

    monkeypatch.setattr(run_pages, "export_html", export_in_step)
    assert build_reports_at_once(root) == [root / "report" / "index.html"] * 2
    files = _report_files(root / "report")
    assert len([f for f in files if f.startswith("runs/") and f.endswith(".html")]) == 13
    assert "index.html" in files
    assert not [p.name for p in root.iterdir() if p.name.startswith(".report")]


def test_a_failed_report_leaves_the_previous_one_and_no_scratch(tmp_path, monkeypatch):
    from benchlib.report import run_pages

    root = campaign(tmp_path / "fake")
    build_report(root, summaries=(), progress=False)
    before = {p: p.read_bytes() for p in (root / "report").rglob("*.html")}

    def broken(notebook, target, include_code, **options):
        raise OSError("disk full")

    monkeypatch.setattr(run_pages, "export_html", broken)
    for notebook in root.glob("*.ipynb"):  # changed notebooks: their pages are made again
        os.utime(notebook, ns=(notebook.stat().st_atime_ns, notebook.stat().st_mtime_ns + 10**9))
    with pytest.raises(OSError, match="disk full"):
        build_report(root, summaries=(), progress=False)
    assert {p: p.read_bytes() for p in (root / "report").rglob("*.html")} == before
    assert not [p.name for p in root.iterdir() if p.name.startswith(".report")]


def _summary_notebook(tmp_path, monkeypatch, name: str, source: str) -> None:
    """A summary notebook ``name`` whose one cell is ``source``, where the report looks for
    the summaries."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from benchlib.report import build as report_module

    notebooks = tmp_path / "notebooks"
    notebooks.mkdir(exist_ok=True)
    nb = new_notebook(cells=[new_code_cell("results_dir = ''", metadata={"tags": ["parameters"]}),
                             new_code_cell(source)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(notebooks / f"{name}.ipynb"))
    monkeypatch.setattr(report_module, "NOTEBOOK_DIR", notebooks)


@pytest.mark.slow
def test_a_failed_summary_is_kept_and_named(tmp_path, monkeypatch):
    root = campaign(tmp_path / "fake")
    _summary_notebook(tmp_path, monkeypatch, "summary_broken", "raise KeyError('no such column')")
    with pytest.raises(ReportError, match="summary_broken: KeyError") as raised:
        build_report(root, summaries=("summary_broken",), progress=False)
    kept = root / ".report-failed" / "summary_broken.ipynb"
    assert str(kept) in str(raised.value) and kept.is_file()
    assert not (root / "report").exists()
    assert [p.name for p in root.iterdir() if p.name.startswith(".report")] == [".report-failed"]


@pytest.mark.slow  # the edit loop's slowest (make test runs it)
def test_a_summary_that_kills_its_kernel_is_named(tmp_path, monkeypatch):
    root = campaign(tmp_path / "fake")
    _summary_notebook(tmp_path, monkeypatch, "summary_dying", "import os\nos._exit(3)")
    with pytest.raises(ReportError, match="summary_dying: its kernel died while the page ran"):
        build_report(root, summaries=("summary_dying",), progress=False)
    assert not (root / "report").exists()
    assert not [p.name for p in root.iterdir() if p.name.startswith(".report-")]  # no scratch


def test_the_report_lists_files_it_skipped_and_still_builds(tmp_path):
    root = campaign(tmp_path / "c")
    (root / "truncated.ipynb").write_text('{"cells": [')
    (root / "not-a-notebook.ipynb").write_text("[1, 2, 3]")
    (root / "bad-format.ipynb").write_text('{"cells": [{"cell_type": "nonsense"}], "metadata": {},'
                                           ' "nbformat": 4, "nbformat_minor": 5}')
    index = build_report(root, summaries=(), progress=False)
    text = index.read_text()
    assert "<h2>Skipped files</h2>" in text
    for name in ("truncated.ipynb", "not-a-notebook.ipynb", "bad-format.ipynb"):
        assert f"<code>{name}</code>" in text, name
    assert (index.parent / "runs" / "train-0.html").is_file()


@pytest.mark.slow
@pytest.mark.xdist_group("report")
def test_a_report_from_a_relative_path_never_moves_the_working_directory(tmp_path, monkeypatch):
    """Summaries run in threads while run pages are exported: the working directory of the
    process stays where it was (papermill's ``cwd`` would ``os.chdir`` under the others)."""
    campaign(tmp_path / "outputs" / "fake")
    monkeypatch.chdir(tmp_path)
    moves, chdir = [], os.chdir

    def watched_chdir(path):  # any call at all: papermill's own handler chdirs around I/O
        moves.append(str(path))
        chdir(path)

    monkeypatch.setattr(os, "chdir", watched_chdir)
    index = build_report("outputs/fake", summaries=("summary_scaling", "summary_breakdown"),
                         progress=False)
    assert moves == []
    assert index == tmp_path / "outputs" / "fake" / "report" / "index.html"
    assert len(list((tmp_path / "outputs" / "fake" / "report" / "runs").glob("*.html"))) == 13


@pytest.mark.slow  # heavy: `make test` runs it, the edit loop does not
def test_a_build_loads_the_campaign_and_its_baseline_once_each(tmp_path, monkeypatch):
    """The checks, the diagnosis and the index share one load of each folder (three loads of
    the campaign and two of the baseline before)."""
    from benchlib.report import build

    root, base = campaign(tmp_path / "fake"), campaign(tmp_path / "base")
    loaded = []
    real_scan, real_load = build.scan, build.load
    monkeypatch.setattr(build, "scan", lambda path, *a: loaded.append(path) or real_scan(path, *a))
    monkeypatch.setattr(build, "load", lambda path, *a: loaded.append(path) or real_load(path, *a))
    build.build_report(root, summaries=(), progress=False, baseline=base)
    assert sorted(map(str, loaded)) == sorted([str(root.absolute()), str(base.resolve())]), loaded
