"""A report's notebooks travel with it (issue 54, item 17): built from an absolute path, the
executed ``report/*.ipynb`` hold no folder of the machine that built it, and each, reopened
from ``report/`` (as JupyterLab runs it), finds its campaign's records again."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.publish.pages.summary import load_results, resolve_results_dir
from benchlib.report.build import build_report

from .fakes import campaign


@pytest.mark.slow  # a command as a subprocess: in make test, not the edit loop
def test_report_notebooks_name_no_absolute_folder(tmp_path: Path) -> None:
    root = campaign(tmp_path / "outputs" / "fake")
    index = build_report(root.resolve(), summaries=("summary_acceptance",), progress=False)
    notebooks = sorted(index.parent.glob("*.ipynb"))
    assert notebooks
    for notebook in notebooks:
        assert str(tmp_path) not in notebook.read_text(encoding="utf-8"), notebook.name


def test_the_name_given_finds_the_campaign_from_its_report_folder(tmp_path: Path,
                                                                   monkeypatch) -> None:
    root = campaign(tmp_path / "outputs" / "fake")
    (root / "report").mkdir()
    monkeypatch.chdir(root / "report")
    assert resolve_results_dir("../fake").resolve() == root.resolve()
    assert len(load_results("../fake")) == len(load_results(str(root)))
    monkeypatch.chdir(root)  # where the report's kernel runs it
    assert Path("../fake").resolve() == root.resolve()
