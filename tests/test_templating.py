"""HTML from Jinja2 templates (benchlib.publish.templating): one environment, autoescape on,
record text escaped in tables and the sheet; only Markup passes as HTML."""

import pandas as pd
from markupsafe import Markup

from benchlib.publish import present, templating
from benchlib.publish.sheet import Block, Sheet, _view

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
