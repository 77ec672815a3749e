"""Each answer of the report's index is computed once: by the summary page that declares it,
which shows it and carries it in its executed notebook, from where the index reads it."""

from __future__ import annotations

import re

import nbformat
import pandas as pd
import pytest

from benchlib.publish.pages import answers, catalog
from benchlib.publish.pages.catalog import SUMMARY_PAGES
from benchlib.records.results import load
from benchlib.report import index_page
from benchlib.report.build import report_pages

pytestmark = pytest.mark.xdist_group("report")


def _carried(notebook) -> list[dict]:
    return [o["data"][answers.MIME] for cell in nbformat.read(notebook, as_version=4).cells
            for o in cell.get("outputs", []) if answers.MIME in o.get("data", {})]


def test_every_index_answer_is_computed_by_exactly_one_page_and_each_page_publishes_its_own():
    declared = [a for page in SUMMARY_PAGES for a in page.computes]
    assert sorted(declared) == sorted(answers.ANSWERS)
    assert set(index_page.SECTIONS) == set(answers.ANSWERS) == set(index_page.COMPUTED_BY)
    for page in SUMMARY_PAGES:
        module = __import__(page.module, fromlist=["PAGE"])
        publishing = [call for cell in module.PAGE.cells
                      for call in (cell if isinstance(cell, tuple) else (cell,))
                      if getattr(call, "function", None) is answers.publish]
        assert [c.arguments.split(",")[0] for c in publishing] == (
            [f'"{page.name}"'] if page.computes else []), page.name


def test_the_index_shows_what_the_pages_computed(report):
    """The built report's pages carry their answers, and the index's lines are those answers
    (the same words as computed from the records here)."""
    folder = report.parent
    records = load(folder.parent)
    for page in (catalog.SCALING, catalog.COMPARISONS, catalog.NODE, catalog.ACCEPTANCE):
        (carried,) = _carried(folder / page.notebook)
        assert set(carried) == set(page.computes)
        shown = (folder / page.href).read_text()
        assert "In short" in shown
    index = report.read_text()
    done = answers.by_campaign(records)["fake"]
    for line in index_page.fastest(done, {}):  # the words; the index links the runs
        words = re.sub(r"<[^>]+>", "", str(line))
        assert words in re.sub(r"<[^>]+>", "", index)


def test_the_index_reads_a_pages_answer_and_computes_only_what_no_page_carries(tmp_path):
    """A page's carried answer is what the index shows, even where the records would say
    otherwise: the index reads it, it does not compute it again. A payload not of the answer's
    shape is not read."""
    from .fakes import campaign

    records = load(campaign(tmp_path / "fake"))
    planted = {"fastest": {"fake": [{"benchmark": "train", "model": "planted", "value": "123,456",
                                     "unit": "images/s", "interval": "", "energy": "",
                                     "came": "", "source": "", "flags": ""}]},
               "scaling": {"fake": [{"name": "only a name"}]}}  # missing fields: not read
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
        "display_data", {"text/html": "<ul></ul>", answers.MIME: planted})]))
    nbformat.write(notebook, tmp_path / "summary_scaling.ipynb")
    computed = answers.from_pages(tmp_path, ["summary_scaling"])
    assert set(computed) == {"fastest"}
    page = index_page.render("fake", records, report_pages(["summary_scaling"]), {},
                             computed=computed)
    assert "123,456" in page and "planted" in page
    assert "How it scales" in page  # computed here: no page carried it whole


def test_publish_names_the_pages_that_compute_answers_for_a_page_that_does_not():
    with pytest.raises(ValueError, match="summary_scaling"):
        answers.publish("summary_breakdown", pd.DataFrame())
