"""The report travels: every page readable on a phone (390 px) and a desktop (1400 px), a
navigation bar on every page whose links resolve inside the report, run pages that open with
what was measured, no path of the machine that built it, no table split into parts."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import urldefrag

import pytest

from benchlib.report.build import build_report

from .browser import chromium
from .fakes import campaign, write_record_notebook

#: What the browser sees of a page: its width against the viewport's, the body's font size
#: and the smallest of any text element, the navigation bar's links and the page's ids.
INSPECT = """
const sizes = Array.from(document.querySelectorAll('p, li, td, th, caption, a, pre, code, h1, h2, h3'))
  .filter(e => e.innerText && e.innerText.trim() && e.getClientRects().length)
  .map(e => parseFloat(getComputedStyle(e).fontSize));
const nav = document.querySelector('nav.report-nav');
return {scroll: document.scrollingElement.scrollWidth, inner: window.innerWidth,
        body: parseFloat(getComputedStyle(document.body).fontSize),
        smallest: Math.min(...sizes),
        nav: nav ? Array.from(nav.querySelectorAll('a')).map(a => a.getAttribute('href')) : null,
        ids: Array.from(document.querySelectorAll('[id]')).map(e => e.id),
        images: Array.from(document.querySelectorAll('.jp-RenderedImage img'))
          .filter(i => i.naturalWidth > 0)
          .map(i => ({scale: i.clientWidth / i.naturalWidth, natural: i.naturalWidth,
                      phone: !!i.closest('picture') && i.currentSrc !== i.src})),
        late: Array.from(document.querySelectorAll('table th')).filter(th =>
          /^(ratio|geometric mean ratio|verdict|measured \\/ expected)/.test(
            th.innerText.trim().replace(/\\s+/g, ' ')))
          .filter(th => th.getBoundingClientRect().right > window.innerWidth + 1)
          .map(th => th.innerText.replace(/\\s+/g, ' '))};
"""


def _pages(index: Path) -> list[Path]:
    return [index, *sorted(index.parent.glob("summary_*.html")),
            *sorted((index.parent / "runs").glob("*.html"))]


def _target(page: Path, href: str) -> tuple[Path, str]:
    """The file a relative link of ``page`` points at, and its fragment."""
    assert not re.match(r"^[a-z]+:|^/", href), href  # relative: works offline and moved
    path, fragment = urldefrag(href)
    return (page.parent / path).resolve(), fragment


def _no_build_path(report: Path, built_under: Path) -> None:
    """No page names the folder the report was built under (nor any folder inside it)."""
    for page in _pages(report / "index.html"):
        assert str(built_under) not in page.read_text(encoding="utf-8"), page.name


def test_every_page_has_the_bar_and_names_no_folder_of_the_builder(tmp_path):
    root = campaign(tmp_path / "fake")
    write_record_notebook(root / "lm-1.ipynb", {
        "schema_version": 1, "campaign": "fake", "benchmark": "lm_train", "model": "transformer",
        "status": "ok", "throughput": 7200.0, "throughput_low": 7100.0, "throughput_high": 7300.0,
        "unit": "tokens/s", "flags": "contended", "iterations": 24, "time_iteration_s": 0.0136})
    index = build_report(root, summaries=(), progress=False)
    for page in _pages(index):
        html = page.read_text(encoding="utf-8")
        bar = re.search(r'<nav class="report-nav".*?</nav>', html, re.S)
        assert bar, page.name
        for href in re.findall(r'href="([^"]+)"', bar.group(0)):
            target, fragment = _target(page, href)
            assert target.is_file(), (page.name, href)
            if fragment:
                assert f'id="{fragment}"' in target.read_text(encoding="utf-8"), href
        assert "part 1 of" not in html
    assert '<meta name="viewport"' in index.read_text(encoding="utf-8")
    lead = (index.parent / "runs" / "lm-1.html").read_text(encoding="utf-8")
    opening = lead[:lead.index('<div class="jp-Cell')]  # before the notebook's first cell
    assert "7,200 tokens/s" in opening and "7,100–7,300 tokens/s" in opening
    assert "contended" in opening and "other processes took" in opening
    failed = (index.parent / "runs" / "train-oom.html").read_text(encoding="utf-8")
    assert "RuntimeError: CUDA out of memory" in failed[:failed.index("</section>")]
    _no_build_path(index.parent, tmp_path)
    moved = shutil.move(str(root), tmp_path / "elsewhere")  # the report works after a move
    for page in _pages(Path(moved) / "report" / "index.html"):
        for href in re.findall(r'href="([^"#]+)', page.read_text(encoding="utf-8")):
            if not href.startswith(("http:", "https:", "mailto:")):
                assert _target(page, href)[0].is_file(), (page.name, href)


@pytest.mark.slow
@pytest.mark.xdist_group("report")
def test_every_page_reads_at_390_and_1400_px_in_chromium(report, tmp_path):
    """The full report (every summary page, the compare page, every run page) on a phone and
    on a desktop: the bar on every page with links that resolve, text of 12 px or more (a
    plot's labels 10 px or more: its phone rendering at 390 px), no
    sideways scrolling of the page, every ratio and verdict column in the first view, no path
    of the machine that built it; screenshots."""
    index = report
    pages = _pages(index)
    summaries = {p.name for p in pages if p.name.startswith("summary_")}
    assert {"summary_scaling.html", "summary_compare.html"} <= summaries
    _no_build_path(index.parent, index.parent.parent.parent)  # the tmp folder of both campaigns
    shots = tmp_path / "screenshots"
    shots.mkdir()
    phones = 0  # plots shown in their phone rendering at 390 px
    for width in (390, 1400):
        with chromium(phone=390 if width == 390 else None) as driver:
            if width != 390:
                driver.set_window_size(1400, 1000)
            for page in pages:
                driver.get(page.as_uri())
                seen = driver.execute_script(INSPECT)
                where = (width, page.name)
                if width == 390:  # the viewport meta makes the page the phone's width
                    assert seen["inner"] == 390, (where, seen["inner"])
                assert seen["scroll"] <= seen["inner"] + 1, (where, seen["scroll"], seen["inner"])
                assert seen["body"] >= 12 and seen["smallest"] >= 12, (where, seen)
                assert seen["nav"], where
                if width == 390:  # a plot's 10 pt labels (13.9 px in its PNG) at 10 px or more
                    small = [i for i in seen["images"] if i["scale"] * 13.9 < 10]
                    assert not small, (where, small)
                    phones += sum(i["phone"] for i in seen["images"])
                # a ratio or verdict column is in the first view, without scrolling the table
                assert seen["late"] == [], (where, seen["late"])
                links = {_target(page, href)[0] for href in seen["nav"]}
                assert all(link.is_file() for link in links), (where, seen["nav"])
                assert {(index.parent / s).resolve() for s in summaries} <= links, where
                assert index.resolve() in links, where
                name = re.sub(r"\W", "_", page.relative_to(index.parent).with_suffix("").as_posix())
                driver.save_screenshot(str(shots / f"{name}-{width}.png"))
    assert len(list(shots.glob("*.png"))) == 2 * len(pages)
    assert phones >= 5, phones  # the summaries' plots, each in one column at 390 px


@pytest.mark.slow  # executes a summary page
def test_no_page_or_notebook_copy_names_the_builder_s_folders(tmp_path, monkeypatch):
    """The demo's case: records whose data folders lie under the folder the report is built
    from. Every page and notebook copy shows them relative (data/...), never absolute."""
    import nbformat

    from benchlib.records.store import RECORD_MIME

    monkeypatch.chdir(tmp_path)
    root = campaign(tmp_path / "outputs" / "fake")
    for number, path in enumerate(sorted(root.glob("*.ipynb"))):
        notebook = nbformat.read(path, as_version=4)
        for output in notebook.cells[0].get("outputs", []):
            record = output.get("data", {}).get(RECORD_MIME)
            if record:
                folder = str(tmp_path / "data" / ("fast" if number % 2 else "slow"))
                record.update(data_path=folder, data_dir=folder)
        nbformat.write(notebook, str(path))
    index = build_report(root, summaries=("summary_comparisons",), progress=False)
    report = index.parent
    files = [*report.glob("*.html"), *report.glob("*.ipynb"), *(report / "runs").glob("*.html")]
    assert any(f.suffix == ".ipynb" for f in files)
    for file in files:
        assert str(tmp_path) not in file.read_text(encoding="utf-8"), file.name
    assert "data/fast" in (report / "summary_comparisons.html").read_text(encoding="utf-8")
