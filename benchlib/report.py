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
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from benchlib.results import iter_notebooks, load
from benchlib.sweep import NOTEBOOK_DIR, LocalKernelManager

SUMMARIES = ("summary_scaling", "summary_comparisons", "summary_breakdown", "summary_projection",
             "summary_node")
FAILED_DIR = ".report-failed"  #: where a failed summary notebook is kept (hidden: not loaded)
TEMPLATES = Path(__file__).resolve().parent / "templates"
RUN_COLUMNS = ("benchmark", "model", "dataset", "batch_size", "precision", "gpu", "num_devices",
               "throughput", "unit", "time_iteration_s", "status")


class ReportError(RuntimeError):
    """A summary notebook failed; the message names it and the cell's error."""


def export_html(notebook: Path, target: Path, include_code: bool) -> Path:
    """Render an executed notebook as a self-contained HTML page (embedded images, no scripts)."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(extra_template_basedirs=[str(TEMPLATES)], template_name="offline",
                            exclude_input=not include_code, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_filename(str(notebook))
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


def _index(campaign: str, records: pd.DataFrame, summaries: Sequence[str],
           runs: dict[str, str]) -> str:
    done = int((records["status"] == "ok").sum()) if "status" in records else len(records)
    rows = []
    for _, record in records.iterrows():
        stem = Path(str(record["source"])).stem
        cells = "".join(f"<td>{html.escape(_fmt(record.get(c)))}</td>" for c in RUN_COLUMNS)
        link = f'<a href="{html.escape(runs[stem])}">{html.escape(stem)}</a>' if stem in runs else stem
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


def _build_pages(campaign_dir: Path, building: Path, records: pd.DataFrame,
                 summaries: Sequence[str], progress: bool) -> None:
    """Execute and export every summary, export every run notebook, write the index."""
    from tqdm.auto import tqdm

    (building / "runs").mkdir()
    notebooks = list(iter_notebooks(campaign_dir))
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
            export_html(notebook, building / "runs" / f"{notebook.stem}.html", include_code=True)
            runs[notebook.stem] = f"runs/{notebook.stem}.html"
            steps.update()
    (building / "index.html").write_text(_index(campaign_dir.name, records, summaries, runs),
                                         encoding="utf-8")


def build_report(campaign_dir: str | Path, summaries: Sequence[str] = SUMMARIES,
                 progress: bool = True) -> Path:
    """Execute the summaries on ``campaign_dir``, export HTML, write ``report/index.html``.

    Each build works in its own hidden scratch folder (concurrent builds of one campaign do not
    meet), removed when the build fails; a failed summary notebook is kept under
    ``.report-failed/``."""
    campaign_dir = Path(campaign_dir)
    records = load(campaign_dir)
    if records.empty:
        raise FileNotFoundError(f"no result records under {str(campaign_dir)!r}: "
                                "run a sweep into it first")
    building = Path(tempfile.mkdtemp(prefix=".report-", dir=campaign_dir))
    try:
        _build_pages(campaign_dir, building, records, summaries, progress)
        os.chmod(building, 0o755)  # mkdtemp makes it 0700; the report is shared
        _swap_in(building, campaign_dir / "report")
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return campaign_dir / "report" / "index.html"
