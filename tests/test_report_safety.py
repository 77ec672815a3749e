"""No markup from records or foreign notebooks runs in a report page.

A campaign whose every free-text field holds an injection payload, and a foreign notebook
whose outputs carry script, is built into a report; each page is opened in headless Chromium.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from benchlib.publish.pages import summary
from benchlib.report.build import build_report
from benchlib.report.export import export_html

from .browser import chromium
from .conftest import ROOT
from .fakes import write_record_notebook

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'
SVG = "<svg onload=window.__pwned=1>"
LINK = "[x](javascript:window.__pwned=1)"
IFRAME = '"><iframe src=javascript:window.__pwned=1>'
IMAGE_LINK = "![y](javascript:window.__pwned=1)"
PAYLOADS = (SCRIPT, IMG, SVG, LINK, IFRAME, IMAGE_LINK)
#: Every element's ``on*`` attributes, ``javascript:`` URLs and frames, and the scripts.
INSPECT = """
const found = [];
for (const e of document.querySelectorAll('*')) {
  for (const a of e.attributes) {
    if (a.name.toLowerCase().startsWith('on')) found.push(e.tagName + ' ' + a.name);
    const value = a.value.replace(/[\\x00-\\x20]/g, '');
    if (/^javascript:/i.test(value)) found.push(e.tagName + ' ' + a.name + ' ' + a.value);
  }
}
for (const a of document.querySelectorAll('a[href], area[href]')) {
  if (a.protocol === 'javascript:') found.push('link ' + a.href);
}
const active = 'iframe, frame, object, embed, form, base, meta[http-equiv]';
for (const e of document.querySelectorAll(active)) found.push(e.tagName);
return {pwned: typeof window.__pwned, scripts: document.scripts.length, found: found,
        text: document.body.innerText};
"""


def _record(index: int, **fields: object) -> dict:
    return {"schema_version": 1, "campaign": SCRIPT, "cluster": (IMG, SVG)[index % 2],
            "host": IFRAME, "gpu": LINK, "device_name": IMAGE_LINK, "benchmark": "train",
            "model": f"resnet{SVG}", "dataset": ("synthetic", "real")[index // 2 % 2],
            "precision": "fp32", "batch_size": 32, "num_devices": 1, "num_nodes": 1,
            "num_workers": 4, "unit": "images/s", "status": "ok", "error": "",
            "throughput": 1000.0 + 100 * index, "time_iteration_s": 0.05,
            "time_data_s": 0.01, "time_forward_s": 0.02, "achieved_tflops": 10.0,
            "env_torch": SCRIPT + IMG, "env_note": LINK + IFRAME, **fields}


def _foreign_notebook(path: Path) -> None:
    """A notebook not made by benchlib, whose cells and outputs carry script."""
    html = ("".join(PAYLOADS) + '<a href="javascript:window.__pwned=1">a</a>'
            "<table><tr><td>kept</td></tr></table>")
    outputs = [
        new_output("display_data", data={"text/html": html, "text/plain": "html"}),
        new_output("display_data", data={"application/javascript": "window.__pwned=1"}),
        new_output("display_data", data={"text/markdown": LINK + IMG + IMAGE_LINK}),
        new_output("display_data", data={"text/vnd.mermaid": "</pre>" + SCRIPT}),
        new_output("display_data", data={"image/svg+xml": f"<svg xmlns='http://www.w3.org/2000/svg'>{SCRIPT}</svg>"}),
        new_output("display_data", data={"image/png": "x"},
                   metadata={"image/png": {"width": "1 onerror=window.__pwned=1"}}),
        new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "</script>" + SCRIPT}}),
        new_output("stream", name="stdout", text=SCRIPT),
        new_output("error", ename=SCRIPT, evalue=IMG, traceback=[SCRIPT]),
    ]
    cell = new_code_cell("x = 1", outputs=outputs, metadata={"tags": ['"><b onclick=x>']})
    nb = new_notebook(cells=[new_markdown_cell("# Foreign\n\n" + "".join(PAYLOADS)), cell,
                             new_raw_cell(SCRIPT, metadata={"raw_mimetype": "text/html"})],
                      metadata={"title": "</title>" + SCRIPT, "widgets": {"x": SCRIPT}})
    cell.id = 'x" onmouseover="window.__pwned=1'  # invalid, after new_notebook validated
    path.write_text(json.dumps(nb), encoding="utf-8")  # unvalidated, as a foreign tool may write


def payload_campaign(root: Path) -> Path:
    """Four finished runs, a node probe and a failed run with payloads in every text field,
    and the foreign notebook."""
    for index in range(4):
        write_record_notebook(root / f"train-{index}.ipynb", _record(index, batch_size=32 * (index % 2 + 1)))
    probe = _record(0, benchmark="probe_node", device="cuda", matmul_tflops_fp32=20.0,
                    memory_GBps=900.0, decode_images_per_s_4w=800.0)
    write_record_notebook(root / "probe.ipynb", probe)
    write_record_notebook(root / "oom.ipynb", _record(0, status="failed", throughput=None,
                                                       error=IMG + SCRIPT + LINK))
    _foreign_notebook(root / "foreign.ipynb")
    return root


def _assert_inert(driver, page: Path) -> str:
    driver.get(page.as_uri())
    seen = driver.execute_script(INSPECT)
    assert seen["pwned"] == "undefined", page
    assert seen["scripts"] == 0, page
    assert seen["found"] == [], (page, seen["found"])
    return seen["text"]


def test_md_text_escapes_markup():
    text = summary.md_text(SCRIPT + LINK + IMAGE_LINK + "a_b *c* `d` $e$ #f\n# g")
    assert "<" not in text and "](" not in text and "\n" not in text
    assert summary.md_text("H100 (80GB)") == "H100 \\(80GB\\)"
    assert summary.md_text("- item") == "\\- item" and summary.md_text("3.5") == "3.5"


def test_summary_markdown_holds_no_markup():
    import pandas as pd

    df = pd.DataFrame([_record(0), _record(1), _record(2), _record(3)])
    lines = [summary.describe(df, SCRIPT), summary.bullet_list(summary.missing(df), "none"),
             *(summary.md_text(c.title) for c in summary.comparisons(df))]
    from benchlib.analysis import verdict
    from benchlib.publish.pages import verdict_tables

    lines.append(verdict_tables.reasons(verdict.verdicts(df)))
    for line in lines:
        assert "<" not in line and "](" not in line, line


def test_a_foreign_run_page_is_inert(tmp_path):
    _foreign_notebook(tmp_path / "foreign.ipynb")
    page = export_html(tmp_path / "foreign.ipynb", tmp_path / "foreign.html", include_code=True)
    with chromium() as driver:
        text = _assert_inert(driver, page)
    assert "kept" in text and "Foreign" in text  # the harmless content is still shown


@pytest.mark.slow
def test_a_report_of_payloads_is_inert_in_chromium(tmp_path):
    index = build_report(payload_campaign(tmp_path / "evil"), progress=False)
    folder = index.parent
    pages = [index, *sorted(folder.glob("summary_*.html")), *sorted((folder / "runs").glob("*.html"))]
    assert len(pages) == 1 + 6 + 7
    texts = {}
    with chromium() as driver:
        for page in pages:
            texts[page.name] = _assert_inert(driver, page)
    # the payloads are shown as text, not dropped
    assert "onerror" in texts["summary_scaling.html"]  # the failed run's error
    assert SCRIPT in texts["summary_comparisons.html"] or IMG in texts["summary_comparisons.html"]
    assert "javascript:" in texts["summary_node.html"]


# ---------------------------------------------------------------- links into the report


def _build_runs(campaign: Path, into: str) -> Path:
    """The run pages of a build of ``campaign`` (no summaries) in ``campaign/into``, then made
    the campaign's report (as a build swaps it in)."""
    from benchlib.records.results import scan
    from benchlib.report.build import _build_pages

    building = campaign / into
    building.mkdir()
    _build_pages(campaign, building, scan(campaign), (), progress=False)
    report = campaign / "report"
    if report.exists():
        import shutil

        shutil.rmtree(report)
    building.rename(report)
    return report


def _link_campaign(tmp_path: Path) -> tuple[Path, Path]:
    campaign = tmp_path / "outputs" / "c"
    write_record_notebook(campaign / "a.ipynb", _record(0))
    private = tmp_path / "home" / "private"
    write_record_notebook(private / "x.ipynb", _record(1, env_note="PRIVATE-NOTEBOOK-TEXT"))
    (private / "secret.html").write_text("<p>PRIVATE-PAGE-TEXT</p>")
    return campaign, private


def test_a_notebook_linked_from_elsewhere_is_no_run_page(tmp_path):
    campaign, private = _link_campaign(tmp_path)
    (campaign / "zz.ipynb").symlink_to(private / "x.ipynb")
    (campaign / "sub").mkdir()
    (campaign / "sub" / "y.ipynb").symlink_to(campaign / "a.ipynb")  # a link, even inside
    report = _build_runs(campaign, ".report-1")
    pages = sorted(p.name for p in (report / "runs").glob("*.html"))
    assert pages == ["a.html"]
    assert "PRIVATE-NOTEBOOK-TEXT" not in "".join(p.read_text() for p in report.rglob("*.html"))
    assert "zz.ipynb" in (report / "index.html").read_text()  # listed as not shown


def test_a_cached_page_replaced_by_a_link_is_not_reused(tmp_path):
    campaign, private = _link_campaign(tmp_path)
    report = _build_runs(campaign, ".report-1")
    page = report / "runs" / "a.html"
    page.unlink()
    page.symlink_to(private / "secret.html")
    report = _build_runs(campaign, ".report-2")
    page = report / "runs" / "a.html"
    assert not page.is_symlink() and "PRIVATE-PAGE-TEXT" not in page.read_text()
    # a cached page rewritten in place (not what the build wrote) is not reused either
    page.write_text("<p>PRIVATE-PAGE-TEXT</p>")
    assert "PRIVATE-PAGE-TEXT" not in (_build_runs(campaign, ".report-3") / "runs" /
                                       "a.html").read_text()


def test_an_unchanged_cached_page_is_still_reused(tmp_path):
    campaign, _ = _link_campaign(tmp_path)
    first = (_build_runs(campaign, ".report-1") / "runs" / "a.html").stat()
    again = (_build_runs(campaign, ".report-2") / "runs" / "a.html").stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)


def test_a_cached_summary_page_replaced_by_a_link_is_not_reused(tmp_path):
    from benchlib.report import reuse

    campaign, private = _link_campaign(tmp_path)
    report = campaign / "report"
    report.mkdir()
    for suffix in (".ipynb", ".html"):
        (report / f"summary_x{suffix}").write_text(f"page {suffix}")
    reuse.write_keys(report, {"summary_x": "k1"})
    previous = reuse.previous_keys(campaign)
    building = campaign / ".report-1"
    building.mkdir()
    assert reuse.link_previous("summary_x", "k1", previous, campaign, building)
    assert (building / "summary_x.html").read_text() == "page .html"
    (report / "summary_x.html").unlink()
    (report / "summary_x.html").symlink_to(private / "secret.html")
    building = campaign / ".report-2"
    building.mkdir()
    assert not reuse.link_previous("summary_x", "k1", previous, campaign, building)
    assert not list(building.iterdir())


# ---------------------------------------------------------------- harder payloads

#: Markup that mutates when a sanitizer's output is parsed again (mXSS).
MXSS = ('<noscript><p title="</noscript><img src=x onerror=window.__pwned=1>">',
        '<svg></p><style><a id="</style><img src=1 onerror=window.__pwned=1>">',
        '<math><mtext><table><mglyph><style><img src=x onerror=window.__pwned=1>',
        '<form><math><mtext></form><form><mglyph><style></math><img src onerror=window.__pwned=1>')
#: ``javascript:`` URLs spelled with entities, tabs, case and leading control characters.
ENCODED = ('<a href="jav&#x09;ascript:window.__pwned=1">e1</a>',
           '<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;'
           'window.__pwned=1">e2</a>',
           '<a href="JaVaScRiPt:window.__pwned=1">e3</a>',
           '<a href=" &#14; javascript:window.__pwned=1">e4</a>')
#: CSS that would fetch from the network (a page of the report fetches nothing).
CSS = ('<div style="background:url(http://127.0.0.1:9/a.png)">c1</div>',
       '<style>@import url("http://127.0.0.1:9/b.css"); body {background: url(http://127.0.0.1:9/c)}'
       '</style>',
       '<p style="background-image: u\\72l(http://127.0.0.1:9/d)">c3</p>')
SVG_MORE = ('<svg><a xlink:href="javascript:window.__pwned=1"><text>s1</text></a></svg>',
            '<svg><animate attributeName="href" values="javascript:window.__pwned=1"/></svg>',
            '<svg><image href="http://127.0.0.1:9/e.png"/></svg>')
RESOURCES = "return performance.getEntriesByType('resource').map(e => e.name);"


def test_a_foreign_notebook_with_mxss_encoded_links_css_and_widgets_is_inert(tmp_path):
    html = "".join((*MXSS, *ENCODED, *CSS, *SVG_MORE))
    widget = {"application/vnd.jupyter.widget-state+json": {"state": {"m": {
        "model_name": "HTMLModel", "state": {"value": SCRIPT + IMG}}}, "version_major": 2}}
    outputs = [new_output("display_data", data={"text/html": html, "text/plain": "h"}),
               new_output("display_data", data={"text/html": "<p>still here</p>"}),
               new_output("display_data", data={"text/markdown": "[m](jav&#x61;script:x) "
                                                "<javascript:window.__pwned=1> " + CSS[0]}),
               new_output("display_data", data={
                   "image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'>"
                                    + "".join(SVG_MORE) + "</svg>"}),
               new_output("display_data", data={
                   "application/vnd.jupyter.widget-view+json": {"model_id": "m"}})]
    nb = new_notebook(cells=[new_markdown_cell("# Foreign\n\n" + "".join(MXSS + ENCODED + CSS)),
                             new_code_cell("x = 1", outputs=outputs)],
                      metadata={"widgets": widget})
    (tmp_path / "foreign.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    page = export_html(tmp_path / "foreign.ipynb", tmp_path / "foreign.html", include_code=True)
    source = page.read_text()
    assert "127.0.0.1:9" not in source and "@import" not in source
    with chromium() as driver:
        text = _assert_inert(driver, page)
        assert [r for r in driver.execute_script(RESOURCES) if not r.startswith("data:")] == []
    assert "still here" in text and "Foreign" in text


def test_a_linked_notebook_or_sidecar_gives_no_record_to_the_summaries(tmp_path):
    """The summary notebooks load the campaign themselves: a linked file's record is not read."""
    from benchlib.records.results import scan
    from benchlib.records.store import write_sidecar

    campaign, private = _link_campaign(tmp_path)
    (campaign / "zz.ipynb").symlink_to(private / "x.ipynb")
    write_sidecar(private / "y.ipynb", _record(2, env_note="PRIVATE-SIDECAR-TEXT"))
    (campaign / "yy.json").symlink_to(private / "y.json")
    found = scan(campaign)
    assert found.frame["point_id"].tolist() == ["a"]
    assert sorted(s.path.name for s in found.skipped) == ["yy.json", "zz.ipynb"]


def test_a_linked_sidecar_is_named_among_the_skipped_files(tmp_path):
    """docs/safety.md: a notebook or sidecar that is a link is named in the skipped list."""
    from benchlib.records.results import scan
    from benchlib.records.store import write_sidecar

    campaign, private = _link_campaign(tmp_path)
    write_sidecar(private / "x.ipynb", _record(1, env_note="PRIVATE-SIDECAR-TEXT"))
    (campaign / "zz.ipynb").symlink_to(private / "x.ipynb")
    (campaign / "zz.json").symlink_to(private / "x.json")
    assert sorted(s.path.name for s in scan(campaign).skipped) == ["zz.ipynb", "zz.json"]
    index = (_build_runs(campaign, ".report-1") / "index.html").read_text()
    assert "<code>zz.ipynb</code>" in index and "<code>zz.json</code>" in index
    assert "PRIVATE-SIDECAR-TEXT" not in index


# ---------------------------------------------------------------- what stands at report/


def _what_stands_at_report(campaign: Path, private: Path, kind: str) -> Path:
    report = campaign / "report"
    if kind == "fifo":
        os.mkfifo(report)
    elif kind == "link":
        (private / "repdir").mkdir()
        (private / "repdir" / "keep.txt").write_text("mine")
        report.symlink_to(private / "repdir")
    else:
        report.write_text("mine")
    return report


@pytest.mark.parametrize("kind", ["fifo", "link", "file"])
def test_a_report_path_that_is_no_folder_is_refused_untouched(tmp_path, kind):
    """``report`` refuses (exit 2, before building) a FIFO, a link or a file at
    ``<campaign>/report``: no hang, nothing followed or removed, no ``.report-*`` left."""
    campaign, private = _link_campaign(tmp_path)
    report = _what_stands_at_report(campaign, private, kind)
    before = os.lstat(report)
    benchlib = str(Path(sys.executable).with_name("benchlib"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run([benchlib, "report", str(campaign), "--quiet"], capture_output=True,
                              text=True, env=env, timeout=90)
    finally:
        left = sorted(p.name for p in campaign.glob(".report-*"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert str(report) in done.stderr and "move it away" in done.stderr, done.stderr
    assert left == []
    after = os.lstat(report)  # still there, the very same
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    if kind == "link":
        assert (private / "repdir" / "keep.txt").read_text() == "mine"


def test_the_summary_s_note_to_whoever_runs_it_is_left_out_of_its_page(tmp_path):
    """'Run by `benchlib report ...` or open it in JupyterLab' is for the notebook's user, in a
    cell tagged remove-cell: every summary notebook has it, no page shows it."""
    import nbformat

    from benchlib.publish.pages import common
    from benchlib.report.export import REMOVE_CELL, export_html

    from .conftest import ROOT

    for path in sorted((ROOT / "notebooks").glob("summary_*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        removed = [c for c in nb.cells if REMOVE_CELL in c.metadata.get("tags", [])]
        assert [c.source for c in removed] == [common.RUN_BY], path.name
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_markdown_cell(common.RUN_BY, metadata={"tags": [REMOVE_CELL]})])
    nb.metadata["language_info"] = {"name": "python"}
    source = tmp_path / "page.ipynb"
    nbformat.write(nb, str(source))
    page = export_html(source, tmp_path / "page.html", include_code=False).read_text()
    assert "Title" in page and "open it in JupyterLab" not in page


def test_a_plot_s_phone_rendering_is_offered_only_as_base64_image_data(tmp_path):
    """A figure's ``narrow`` metadata (its phone rendering) becomes a ``<picture>`` source for
    screens up to 640 px; anything but base64 (a foreign notebook's attribute injection) is
    dropped and the plain image stays."""
    import base64

    import nbformat

    from benchlib.report.export import export_html

    png = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really").decode("ascii")
    pages = {}
    for name, narrow in (("good", png), ("bad", 'x" onerror="alert(1)')):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("plot()", outputs=[
            nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "Plot"},
                                   metadata={"image/png": {"alt": "Plot", "narrow": narrow}})])])
        nb.metadata["language_info"] = {"name": "python"}
        nbformat.write(nb, str(tmp_path / f"{name}.ipynb"))
        pages[name] = export_html(tmp_path / f"{name}.ipynb", tmp_path / f"{name}.html",
                                  include_code=False).read_text()
    assert (f'<picture><source media="(max-width: 640px)" srcset="data:image/png;base64,{png}">'
            in pages["good"])
    assert "<picture>" not in pages["bad"] and "onerror" not in pages["bad"]
    assert f'src="data:image/png;base64,{png}"' in pages["bad"]
