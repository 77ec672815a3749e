"""HTML from Jinja2 templates (benchlib.publish.templating): one environment, autoescape on,
record text escaped in tables and the sheet; only Markup passes as HTML."""

import pandas as pd
from markupsafe import Markup

from benchlib.publish import templating
from benchlib.publish.pages import catalog, present
from benchlib.publish.pages.scaling_sheet import Block, Sheet, _view
from benchlib.report import index_page

HOSTILE = '<script>alert("x")</script>'


def test_one_environment_with_autoescape():
    assert templating.environment() is templating.environment()
    assert templating.environment().autoescape is True


def test_table_escapes_cells_columns_and_caption():
    table = present.Table(pd.DataFrame({HOSTILE: [HOSTILE], "n": ["1"]}), HOSTILE, {"n"})
    html = table._repr_html_()
    assert "<script" not in html
    assert html.count("&lt;script&gt;") == 3
    assert '<th class="num">n</th>' in html and '<td class="num">1</td>' in html


def test_sheet_escapes_titles_and_configurations():
    block = Block(HOSTILE, pd.DataFrame({HOSTILE: [1.0, 2.0], "median": [1.0, 2.0]},
                                        index=pd.Index([1, 2], name="num_devices")), "ratio")
    sheet = Sheet(pd.DataFrame())
    sheet.sections = [(HOSTILE, [block])]
    html = sheet._repr_html_()
    assert "<script" not in html and "&lt;script&gt;" in html
    assert _view(block)["columns"] == [HOSTILE, "median"]
    assert '<td class="text">2</td>' in html


def test_markup_is_the_only_way_to_pass_html():
    source = templating.environment().from_string("{{ value }}")
    assert source.render(value="<b>") == "&lt;b&gt;"
    assert source.render(value=Markup("<b>")) == "<b>"


def test_index_page_renders_from_its_template_with_record_text_escaped(tmp_path):
    records = pd.DataFrame([{"campaign": HOSTILE, "benchmark": "train", "model": HOSTILE,
                             "status": "failed", "error": HOSTILE, "source": "a/run.ipynb",
                             "flags": HOSTILE, "throughput": None, "num_devices": 1}])
    pages = [index_page.Link("x.html", HOSTILE, HOSTILE), index_page.Link("summary_node.html", "")]
    page = index_page.render(HOSTILE, records, pages,
                             {"a/run.ipynb": "runs/run.html"}, skipped="<p>skipped</p>")
    assert "<script" not in page and page.count("&lt;script&gt;") >= 5
    assert page.startswith("<!DOCTYPE html>") and "<p>skipped</p>" in page
    assert '<a href="runs/run.html">run</a>' in page  # the run list links the run
    assert "No finished run in this campaign" in page
    assert '<a href="x.html">&lt;script&gt;' in page
    section = index_page._section(HOSTILE, [], HOSTILE, index_page._link(
        {"summary_node": pages[1]}, catalog.NODE, "why"))
    assert '<a href="summary_node.html">why →</a>' in section and "<script" not in section
    assert "<style>" in page and "&gt;" not in page[page.index("<style>"):page.index("</style>")]
