"""HTML reports: execute the summary notebooks on a campaign and export offline HTML.

``outputs/<campaign>/report/`` gets one executed notebook and one HTML page (no code cells) per
summary, an HTML page per benchmark notebook under ``runs/``, and ``index.html`` linking them.
Each build works in its own hidden folder, renamed into place at the end: a failed build leaves
the previous report as it was, and concurrent builds of one campaign do not disturb each other.
Nothing in the pages is fetched from the network.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import html
import itertools
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from nbformat import NotebookNode

from benchlib.results import Scan, Skipped, current_umask, iter_notebooks, scan
from benchlib.sweep import NOTEBOOK_DIR, LocalKernelManager

log = logging.getLogger(__name__)
SUMMARIES = ("summary_scaling", "summary_comparisons", "summary_breakdown", "summary_projection",
             "summary_node")
FAILED_DIR = ".report-failed"  #: where a failed summary notebook is kept (hidden: not loaded)
TEMPLATES = Path(__file__).resolve().parent / "templates"
RUN_COLUMNS = ("benchmark", "model", "dataset", "batch_size", "precision", "gpu", "num_devices",
               "throughput", "unit", "time_iteration_s", "status")


class ReportError(RuntimeError):
    """A summary notebook failed; the message names it and the cell's error."""


#: HTML kept in pages (Markdown, pandas tables, highlighted code); the rest is stripped.
ALLOWED_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del", "div",
    "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p",
    "pre", "s", "samp", "small", "span", "strong", "sub", "sup", "table", "tbody", "td", "tfoot",
    "th", "thead", "tr", "u", "ul",
})
#: Output types rendered in pages: text, tables, Markdown and images; no script, widget or
#: mermaid output (their templates put the data into the page unescaped).
SAFE_MIMETYPES = ("text/plain", "text/html", "text/markdown", "text/latex", "image/png",
                  "image/jpeg", "image/svg+xml")
DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif|svg\+xml);base64,[A-Za-z0-9+/=\s]*", re.IGNORECASE)
TEXT_ALIGN = re.compile(r"\s*text-align:\s*(left|right|center)\s*;?\s*", re.IGNORECASE)
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
SCRIPT_OR_STYLE = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)


def _allowed_attribute(tag: str, name: str, value: str) -> bool:
    """Whether an attribute survives sanitizing: no event handlers, links to http(s), mailto or
    within the report, images only as embedded data."""
    compact = re.sub(r"[\x00-\x20]", "", value).lower()
    if name in ("class", "id", "title"):
        return True
    if name == "href":
        return tag == "a" and not compact.startswith("data:")
    if name == "src":
        return tag == "img" and bool(DATA_IMAGE.fullmatch(value.strip()))
    if name in ("colspan", "rowspan", "border", "width", "height", "start"):
        return value.strip().isdigit()
    if name == "alt":
        return tag == "img"
    return name == "style" and bool(TEXT_ALIGN.fullmatch(value))


def sanitize_html(markup: object) -> str:
    """``markup`` without script: tags outside :data:`ALLOWED_TAGS` stripped (script and style
    elements with their content), attributes limited by :func:`_allowed_attribute`."""
    import bleach

    text = markup.decode() if isinstance(markup, bytes) else str(markup)
    return bleach.clean(SCRIPT_OR_STYLE.sub("", text), tags=ALLOWED_TAGS,
                        attributes=_allowed_attribute,
                        protocols={"http", "https", "mailto", "data"}, strip=True,
                        strip_comments=True)


def _safe_output(output: dict) -> None:
    """Keep an output's safe data types and its plain image size / background metadata."""
    if "data" in output:
        output["data"] = {k: v for k, v in output["data"].items() if k in SAFE_MIMETYPES}
    if "metadata" in output:
        output["metadata"] = {
            mime: {k: v for k, v in meta.items()
                   if (k in ("width", "height") and isinstance(v, int | float)
                       and not isinstance(v, bool))
                   or (k == "needs_background" and v in ("light", "dark"))
                   or (k == "unconfined" and isinstance(v, bool))}
            for mime, meta in output["metadata"].items()
            if mime in SAFE_MIMETYPES and isinstance(meta, dict)}


def neutralise(nb: NotebookNode) -> NotebookNode:
    """A notebook read from anywhere, made safe for the templates: notebook metadata reduced to
    the language, cell ids and tags to plain names, outputs to :data:`SAFE_MIMETYPES`."""
    language = nb.get("metadata", {}).get("language_info", {}).get("name", "python")
    nb["metadata"] = {"language_info": {"name": language if NAME.fullmatch(str(language))
                                        else "python"}}
    for index, cell in enumerate(nb.get("cells", [])):
        if "id" in cell and not NAME.fullmatch(str(cell["id"])):
            cell["id"] = f"cell-{index}"
        metadata = cell.get("metadata", {})
        if "tags" in metadata:
            metadata["tags"] = [t for t in metadata["tags"] if NAME.fullmatch(str(t))]
        if "outputs" in cell:
            for output in cell["outputs"]:
                _safe_output(output)
            cell["outputs"] = [o for o in cell["outputs"] if o.get("data", True)]  # none left
    return nb


def export_html(notebook: Path, target: Path, include_code: bool) -> Path:
    """Render an executed notebook as a self-contained HTML page (embedded images, no scripts):
    its outputs and Markdown sanitized whoever wrote the notebook."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = neutralise(nbformat.reads(notebook.read_text(encoding="utf-8"), as_version=4))
    exporter = HTMLExporter(extra_template_basedirs=[str(TEMPLATES)], template_name="offline",
                            exclude_input=not include_code, exclude_input_prompt=True,
                            exclude_output_prompt=True, sanitize_html=True,
                            filters={"clean_html": sanitize_html})
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": notebook.stem}})
    target.write_text(body, encoding="utf-8")
    return target


def _run_summary(name: str, campaign_dir: Path, target: Path) -> None:
    import papermill

    try:
        papermill.execute_notebook(
            str(NOTEBOOK_DIR / f"{name}.ipynb"), str(target),
            parameters={"results_dir": str(campaign_dir.resolve())}, progress_bar=False,
            kernel_manager_class=LocalKernelManager, cwd=str(campaign_dir),
        )
    except papermill.PapermillExecutionError as error:
        kept = campaign_dir / FAILED_DIR / target.name
        kept.parent.mkdir(exist_ok=True)
        os.replace(target, kept)
        raise ReportError(f"{name}: {error.ename}: {error.evalue} (cell {error.exec_count}); "
                          f"the executed notebook is {kept}") from None


def _skipped_section(skipped: Sequence[Skipped]) -> str:
    if not skipped:
        return ""
    items = "".join(f"<li><code>{html.escape(s.path.name)}</code>: "
                    f"{html.escape(s.reason.replace(str(s.path), '').lstrip(': '))}</li>"
                    for s in skipped)
    return (f"<h2>Skipped files</h2><p>{len(skipped)} files in the campaign folder hold no "
            f"usable record and are left out of every page:</p><ul>{items}</ul>")


def _index(campaign: str, records: pd.DataFrame, summaries: Sequence[str],
           runs: dict[str, str], skipped: Sequence[Skipped] = ()) -> str:
    done = int((records["status"] == "ok").sum()) if "status" in records else len(records)
    rows = []
    for _, record in records.iterrows():
        stem = Path(str(record["source"])).stem
        cells = "".join(f"<td>{html.escape(_fmt(record.get(c)))}</td>" for c in RUN_COLUMNS)
        link = (f'<a href="{html.escape(runs[stem])}">{html.escape(stem)}</a>' if stem in runs
                else html.escape(stem))
        rows.append(f"<tr><td>{link}</td>{cells}</tr>")
    header = "".join(f"<th>{c.replace('_', ' ')}</th>" for c in ("run", *RUN_COLUMNS))
    items = "".join(f'<li><a href="{name}.html">{name.removeprefix("summary_").title()}</a></li>'
                    for name in summaries)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>benchlib report: {html.escape(campaign)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #222; }}
table {{ border-collapse: collapse; font-size: 0.85rem; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: left; }}
th {{ background: #f3f3f3; }} td:nth-child(9), td:nth-child(11) {{ text-align: right; }}
</style></head>
<body>
<h1>benchlib report: {html.escape(campaign)}</h1>
<p>{len(records)} runs, {done} finished, {len(records) - done} failed. Built {stamp}.</p>
<h2>Summaries</h2><ul>{items}</ul>
<h2>Runs</h2>
<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>
{_skipped_section(skipped)}
</body></html>
"""


def _fmt(value: object) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _swap_in(built: Path, final: Path) -> None:
    """Replace ``final`` by ``built``: the old report is renamed aside, the new one renamed in,
    so a reader sees a whole report (or, for an instant, none). A concurrent build that swaps
    its report in between is moved aside in turn: the last build to finish wins."""
    for attempt in itertools.count():
        aside = final.with_name(f"{built.name}-old-{attempt}")
        with contextlib.suppress(FileNotFoundError):
            os.rename(final, aside)
        try:
            os.rename(built, final)
        except OSError as error:  # another build renamed its report in first
            if error.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
            continue
        finally:
            shutil.rmtree(aside, ignore_errors=True)
        return


def _build_pages(campaign_dir: Path, building: Path, found: Scan,
                 summaries: Sequence[str], progress: bool) -> None:
    """Execute and export every summary, export every run notebook (a notebook that cannot be
    exported is listed as skipped), write the index."""
    from tqdm.auto import tqdm

    (building / "runs").mkdir()
    skipped = list(found.skipped)
    left_out = {s.path for s in skipped}
    notebooks = [n for n in iter_notebooks(campaign_dir) if n not in left_out]
    with tqdm(total=len(summaries) + len(notebooks), desc="report", unit="page",
              disable=not progress) as steps:
        for name in summaries:
            steps.set_postfix_str(name)
            executed = building / f"{name}.ipynb"
            _run_summary(name, campaign_dir, executed)
            export_html(executed, building / f"{name}.html", include_code=False)
            steps.update()
        runs = {}
        for notebook in notebooks:
            try:
                export_html(notebook, building / "runs" / f"{notebook.stem}.html",
                            include_code=True)
                runs[notebook.stem] = f"runs/{notebook.stem}.html"
            except OSError:
                raise  # the report cannot be written: the build fails, the old report stays
            except Exception as error:  # a malformed foreign notebook: listed, not fatal
                log.warning("%s: cannot be shown (%s: %s)", notebook, type(error).__name__, error)
                skipped.append(Skipped(notebook, f"cannot be shown as a page "
                                                 f"({type(error).__name__}: {error})"))
            steps.update()
    index = _index(campaign_dir.name, found.frame, summaries, runs, skipped)
    (building / "index.html").write_text(index, encoding="utf-8")


def build_report(campaign_dir: str | Path, summaries: Sequence[str] = SUMMARIES,
                 progress: bool = True) -> Path:
    """Execute the summaries on ``campaign_dir``, export HTML, write ``report/index.html``.

    Each build works in its own hidden scratch folder (concurrent builds of one campaign do not
    meet), removed when the build fails; a failed summary notebook is kept under
    ``.report-failed/``."""
    campaign_dir = Path(campaign_dir)
    found = scan(campaign_dir)
    if found.frame.empty:
        raise FileNotFoundError(f"no result records under {str(campaign_dir)!r}: "
                                "run a sweep into it first")
    building = Path(tempfile.mkdtemp(prefix=".report-", dir=campaign_dir))
    try:
        _build_pages(campaign_dir, building, found, summaries, progress)
        os.chmod(building, 0o777 & ~current_umask())  # mkdtemp makes it 0700
        _swap_in(building, campaign_dir / "report")
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return campaign_dir / "report" / "index.html"
