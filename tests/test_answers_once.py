"""Each answer of the report's index is computed once: by the summary page that declares it,
which shows it and carries it in its executed notebook, from where the index reads it."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from benchlib.publish.pages import answers, carried, catalog
from benchlib.publish.pages.catalog import SUMMARY_PAGES
from benchlib.records.results import load
from benchlib.report import index_page
from benchlib.report.build import report_pages

pytestmark = pytest.mark.xdist_group("report")


def _carried(notebook) -> list[dict]:
    return [o["data"][carried.MIME] for cell in nbformat.read(notebook, as_version=4).cells
            for o in cell.get("outputs", []) if carried.MIME in o.get("data", {})]


def test_every_index_answer_is_computed_by_exactly_one_page_and_each_page_publishes_its_own():
    declared = [a for page in SUMMARY_PAGES for a in page.computes]
    assert sorted(declared) == sorted([*answers.ANSWERS, *carried.CARRIED])
    assert set(index_page.SECTIONS) == set(answers.ANSWERS)
    assert set(index_page.COMPUTED_BY) == set(declared)
    for page in SUMMARY_PAGES:
        if set(page.computes) <= set(carried.CARRIED):  # carried by the feature's own cell
            continue
        module = __import__(page.module, fromlist=["PAGE"])
        publishing = [call for cell in module.PAGE.cells
                      for call in (cell if isinstance(cell, tuple) else (cell,))
                      if getattr(call, "function", None) is carried.publish]
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
    (compared,) = _carried(folder / catalog.COMPARED.notebook)
    item = compared["compared"][""][0]
    assert item["counts"] and item["counts"] in index  # the compare page's counts, read
    # the runs a carried answer names (by the path the page's kernel read them from) are
    # linked to their pages, as the answers the index computes itself link theirs
    (scaling,) = _carried(folder / catalog.SCALING.notebook)
    (node,) = _carried(folder / catalog.NODE.notebook)
    named = [scaling["fastest"]["fake"][0]["source"],
             *(s for item in node["bottlenecks"]["fake"] for s in item["runs"]["sources"])]
    answered = index.split("Runs by benchmark")[0]
    for source in named:
        stem = Path(source).stem
        assert re.search(rf'<a href="runs/{stem}\.html">{stem}</a>', answered), source
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
        "display_data", {"text/html": "<ul></ul>", carried.MIME: planted})]))
    nbformat.write(notebook, tmp_path / "summary_scaling.ipynb")
    computed = carried.from_pages(tmp_path, ["summary_scaling"])
    assert set(computed) == {"fastest"}
    page = index_page.render("fake", records, report_pages(["summary_scaling"]), {},
                             computed=computed)
    assert "123,456" in page and "planted" in page
    assert "How it scales" in page  # computed here: no page carried it whole


def test_publish_names_the_pages_that_compute_answers_for_a_page_that_does_not():
    with pytest.raises(ValueError, match="summary_scaling"):
        carried.publish("summary_breakdown", pd.DataFrame())


def test_a_carried_answer_must_be_of_its_shape():
    with pytest.raises(ValueError, match="diagnosis, compared"):
        carried.carry("nothing", {}, "")
    with pytest.raises(ValueError, match="holding text"):
        carried.carry("diagnosis", {"said": "x"}, "")


def test_a_diagnose_campaigns_report_reads_the_recommendation_from_its_page(tmp_path, monkeypatch):
    """`benchlib report` on a diagnose campaign: the index's recommendation is the diagnose
    page's, and the build itself never diagnoses (the page's kernel does, once)."""
    from benchlib.diagnosis import analysis
    from benchlib.report.build import build_report

    from .test_diagnose import SLOW_DATA, _campaign, _plan

    def never(*_, **__):
        raise AssertionError("the build diagnosed the campaign itself")

    monkeypatch.setattr(analysis, "diagnose", never)
    root = _campaign(tmp_path, _plan(tmp_path), SLOW_DATA, {"disk-w1": 0.6, "memory-w1": 0.55})
    index = build_report(root, summaries=("summary_scaling",), progress=False).read_text()
    (carried,) = _carried(root / "report" / "summary_diagnose.ipynb")
    said = carried["diagnosis"][""][0]["text"]
    assert "Why it is slower than it should be" in index and "JPEG decode" in said
    assert said.split(":")[0] in index


@pytest.mark.parametrize(("answer", "item"), [
    ("bottlenecks", {"count": 2, "total": 3, "verdict": "x", "runs": "oops", "detail": ""}),
    ("scaling", {"name": "n", "most": "four", "speedup": "3x", "base": 1, "efficiency": "", "ends":
                 None, "over": 1, "flags": "", "flagged": {"sources": [], "count": 0}}),
    ("compared", {"counts": "1 regression", "regressions": [["l", "fast", 0.4, 0.6]],
                  "uncertified": []}),
    ("compared", {"counts": "1 regression", "regressions": [], "uncertified": "xy"}),
])
def test_a_carried_answer_not_of_its_shape_is_not_read(tmp_path, answer, item):
    """A tampered (or older) page's answer whose nested values are of the wrong type is left
    out, so the index computes it again instead of failing on it."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
        "display_data", {carried.MIME: {answer: {"": [item]}}})]))
    nbformat.write(notebook, tmp_path / "page.ipynb")
    assert carried.read(tmp_path / "page.ipynb") == {}


def test_every_computed_answer_is_of_its_shape(tmp_path):
    from benchlib.analysis import references

    from .fakes import campaign

    records = load(campaign(tmp_path / "fake"))
    for name in answers.ANSWERS:
        found = answers.compute(name, records, references.shipped())
        assert carried._shaped(name, found) == found, name
        assert any(found.values()) or name == "flagged", name  # the fakes answer each
