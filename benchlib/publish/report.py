"""HTML reports: execute the summary notebooks on a campaign and export offline HTML.

``outputs/<campaign>/report/`` gets one executed notebook and one HTML page (no code cells) per
summary, an HTML page per benchmark notebook under ``runs/``, and ``index.html`` linking them.
Each build works in its own hidden folder, renamed into place at the end: a failed build leaves
the previous report as it was, and concurrent builds of one campaign do not disturb each other.
Nothing in the pages is fetched from the network.
"""

from __future__ import annotations

import contextlib
import errno
import html
import itertools
import logging
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from nbformat import NotebookNode

from benchlib.errors import InputError
from benchlib.execute.sweep import NOTEBOOK_DIR, LocalKernelManager
from benchlib.publish.index_page import Link, render
from benchlib.records.results import Scan, Skipped, iter_notebooks, load, scan
from benchlib.records.store import current_umask, notebook_fingerprint

log = logging.getLogger(__name__)
#: The report's pages after the index, in the order it lists them: a summary notebook executed
#: on the campaign (``notebooks/<name>.ipynb``), its title and the question it answers. Further
#: pages (checks, comparisons with other campaigns) are added here.
PAGES: list[Link] = [
    Link("summary_scaling.html", "Scaling",
         "throughput, speedup and efficiency against devices, in the reference sheets' layout"),
    Link("summary_comparisons.html", "Comparisons",
         "which settings (data, batch size, precision, GPU, model) change the throughput"),
    Link("summary_breakdown.html", "Breakdown", "where each iteration's time goes, phase by phase"),
    Link("summary_projection.html", "Projections",
         "hours to a training target or through a data set, beside the reference campaign"),
    Link("summary_node.html", "The node",
         "its ceilings, each run's telemetry, and what held each run back"),
    Link("summary_acceptance.html", "Acceptance",
         "each run against the published figure it should reach; nodes slower than their peers"),
]
SUMMARIES = tuple(Path(page.href).stem for page in PAGES)
#: The page ``benchlib report DIR --baseline BASE`` adds (its title names the baseline).
COMPARE = "summary_compare"
#: Run pages exported with more workers than this go to a process pool (fewer: in process).
POOL_THRESHOLD = 24
CACHE_FILE = ".pages.json"  #: run pages' notebook fingerprints, in ``report/runs/``
FAILED_DIR = ".report-failed"  #: where a failed summary notebook is kept (hidden: not loaded)
TEMPLATES = Path(__file__).resolve().parent / "templates"


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
    """Keep an output's safe data types and its plain image size / background / alt metadata
    (the template escapes the alt text)."""
    if "data" in output:
        output["data"] = {k: v for k, v in output["data"].items() if k in SAFE_MIMETYPES}
    if "metadata" in output:
        output["metadata"] = {
            mime: {k: v for k, v in meta.items()
                   if (k in ("width", "height") and isinstance(v, int | float)
                       and not isinstance(v, bool))
                   or (k == "needs_background" and v in ("light", "dark"))
                   or (k == "unconfined" and isinstance(v, bool))
                   or (k == "alt" and isinstance(v, str))}
            for mime, meta in output["metadata"].items()
            if mime in SAFE_MIMETYPES and isinstance(meta, dict)}


IMAGE_MIMETYPES = ("image/png", "image/jpeg")
HEADING = re.compile(r"^#{1,6}\s+(.+)$", re.MULTILINE)
FIGURE_REPR = re.compile(r"^<Figure size .*>$")
#: A Python warning printed by a library (``.../x.py:12: UserWarning: ...``) and its source line.
WARNING_TEXT = re.compile(r"\b\w*Warning: ")


def _alt_texts(nb: NotebookNode) -> None:
    """Give every image output alt text: its own (set by :func:`benchlib.publish.plots.show`), else its
    plain-text representation when that says something, else the heading above it."""
    heading = "Figure"
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            found = HEADING.findall(str(cell.get("source", "")))
            heading = found[-1].strip() if found else heading
            continue
        for output in cell.get("outputs", []):
            data, metadata = output.get("data", {}), output.setdefault("metadata", {})
            for mime in IMAGE_MIMETYPES:
                if mime not in data:
                    continue
                meta = metadata.setdefault(mime, {})
                if isinstance(meta, dict) and not (isinstance(meta.get("alt"), str) and meta["alt"]):
                    text = " ".join(str(data.get("text/plain", "")).split())
                    meta["alt"] = (text if text and not FIGURE_REPR.match(text)
                                   else f"Plot: {heading}")


def _without_warnings(nb: NotebookNode) -> int:
    """Drop library warnings printed on stderr (they are in the notebook file, not worth a
    reader's attention in the page); how many outputs were dropped."""
    dropped = 0
    for cell in nb.get("cells", []):
        outputs = cell.get("outputs")
        if not outputs:
            continue
        kept = [o for o in outputs if not (o.get("output_type") == "stream"
                                           and o.get("name") == "stderr"
                                           and WARNING_TEXT.search(str(o.get("text", ""))))]
        dropped += len(outputs) - len(kept)
        cell["outputs"] = kept
    return dropped


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


#: One HTML exporter per thread and kind, made once (making one reads every template).
_EXPORTERS: dict[tuple[bool, int], object] = {}


def export_html(notebook: Path, target: Path, include_code: bool) -> Path:
    """Render an executed notebook as a self-contained HTML page (embedded images, no scripts):
    its outputs and Markdown sanitized whoever wrote the notebook."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = neutralise(nbformat.reads(notebook.read_text(encoding="utf-8"), as_version=4))
    _without_warnings(nb)
    _alt_texts(nb)
    key = (include_code, threading.get_ident())
    exporter = _EXPORTERS.get(key)
    if exporter is None:
        exporter = _EXPORTERS[key] = HTMLExporter(
            extra_template_basedirs=[str(TEMPLATES)], template_name="offline",
            exclude_input=not include_code, exclude_input_prompt=True,
            exclude_output_prompt=True, sanitize_html=True, filters={"clean_html": sanitize_html})
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": notebook.stem}})
    target.write_text(body, encoding="utf-8")
    return target


def _run_summary(name: str, campaign_dir: Path, target: Path,
                 parameters: dict[str, object] | None = None) -> None:
    import papermill

    try:
        papermill.execute_notebook(
            str(NOTEBOOK_DIR / f"{name}.ipynb"), str(target),
            parameters={"results_dir": str(campaign_dir.resolve()), **(parameters or {})},
            progress_bar=False,
            kernel_manager_class=LocalKernelManager, cwd=str(campaign_dir),
        )
    except papermill.PapermillExecutionError as error:
        kept = campaign_dir / FAILED_DIR / target.name
        kept.parent.mkdir(exist_ok=True)
        os.replace(target, kept)
        raise ReportError(f"{name}: {error.ename}: {error.evalue} (cell {error.exec_count}); "
                          f"the executed notebook is {kept}") from None


@dataclass(frozen=True)
class ReportInputs:
    """What a report is built against besides its campaign: a baseline campaign folder
    (``--baseline``: adds the compare page) and a references file (``--references``; none:
    the shipped references)."""

    baseline: Path | None = None
    references: Path | None = None

    @classmethod
    def validated(cls, baseline: str | Path | None = None,
                  references: str | Path | None = None) -> ReportInputs:
        """Checked before any notebook runs: InputError naming the option otherwise."""
        from benchlib.analysis.references import load_references

        base = Path(baseline).expanduser().resolve() if baseline else None
        if base is not None and not base.is_dir():
            raise InputError(f"--baseline {baseline}: not an existing folder (give the "
                             "baseline campaign's results folder, outputs/<campaign>)")
        if base is not None and load(base).empty:
            raise InputError(f"--baseline {baseline}: no result records in that folder")
        refs = Path(references).expanduser().resolve() if references else None
        if refs is not None:
            if not refs.is_file():
                raise InputError(f"--references {references}: not an existing file")
            load_references(refs)  # InputError naming the bad field
        return cls(base, refs)

    def refs(self) -> list:
        """The references runs are checked against."""
        from benchlib.analysis import references

        return (references.load_references(self.references) if self.references
                else references.shipped())

    def compare_link(self) -> Link:
        """The compare page's entry in the index."""
        name = self.baseline.name if self.baseline else "the baseline"
        return Link(f"{COMPARE}.html", f"Compared with {name}",
                    "regression, improvement or no change per configuration, with intervals")

    def parameters(self, summary: str) -> dict[str, object]:
        """The papermill parameters ``summary`` takes from these inputs."""
        if summary == COMPARE and self.baseline:
            return {"baseline_dir": str(self.baseline)}
        if summary == "summary_acceptance" and self.references:
            return {"references_file": str(self.references)}
        return {}


def _skipped_section(skipped: Sequence[Skipped]) -> str:
    if not skipped:
        return ""
    items = "".join(f"<li><code>{html.escape(s.path.name)}</code>: "
                    f"{html.escape(s.reason.replace(str(s.path), '').lstrip(': '))}</li>"
                    for s in skipped)
    return (f"<h2>Skipped files</h2><p>{len(skipped)} files in the campaign folder hold no "
            f"usable record and are left out of every page:</p><ul>{items}</ul>")


def _index(campaign: str, records: pd.DataFrame, summaries: Sequence[str],
           runs: dict[str, str], skipped: Sequence[Skipped] = (),
           inputs: ReportInputs | None = None) -> str:
    inputs = inputs or ReportInputs()
    known = [*PAGES, *([inputs.compare_link()] if inputs.baseline else [])]
    pages = [p for p in known if Path(p.href).stem in summaries]
    pages += [Link(f"{name}.html", name.removeprefix("summary_").replace("_", " ").title())
              for name in summaries if name not in {Path(p.href).stem for p in pages}]
    compared = None
    if inputs.baseline is not None and COMPARE in summaries:
        from benchlib.publish.compare_page import compare_runs

        compared = compare_runs(load(inputs.baseline), records)
    return render(campaign, records, pages, runs, _skipped_section(skipped),
                  refs=inputs.refs(), compared=compared,
                  baseline=inputs.baseline.name if inputs.baseline else "")


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


def _export_version() -> str:
    """A digest of what shapes a run page (this module and the templates): a cached page made
    by other code is made again."""
    import hashlib

    digest = hashlib.sha256(Path(__file__).read_bytes())
    for path in sorted(TEMPLATES.rglob("*")):
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cached_runs(campaign_dir: Path) -> dict[str, dict]:
    """The previous report's run pages and the fingerprints they were made from."""
    import json

    try:
        found = json.loads((campaign_dir / "report" / "runs" / CACHE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _export_runs(campaign_dir: Path, building: Path, notebooks: Sequence[Path],
                 steps: object) -> tuple[dict[str, str], list[Skipped]]:
    """Every run page: reused from the previous report when its notebook's fingerprint and the
    export code are unchanged, else exported (in a process pool when there are many)."""
    import json
    from concurrent.futures import ProcessPoolExecutor

    version = _export_version()
    cached, fresh = _cached_runs(campaign_dir), {}
    runs, skipped, todo = {}, [], []
    for notebook in notebooks:
        target = building / "runs" / f"{notebook.stem}.html"
        key = {**notebook_fingerprint(notebook), "export": version, "path": str(notebook)}
        old = campaign_dir / "report" / "runs" / target.name
        if cached.get(notebook.stem) == key and old.is_file():
            try:
                os.link(old, target)
            except OSError:
                shutil.copyfile(old, target)
            runs[notebook.stem], fresh[notebook.stem] = f"runs/{target.name}", key
            steps.update()
        else:
            todo.append((notebook, target, key))
    workers = min(os.cpu_count() or 1, 8)
    if len(todo) > POOL_THRESHOLD and workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            errors = pool.map(_run_page, [n for n, _, _ in todo], [t for _, t, _ in todo],
                              chunksize=max(1, len(todo) // (workers * 4)))
            outcomes = []
            for outcome in errors:
                outcomes.append(outcome)
                steps.update()
    else:
        outcomes = []
        for notebook, target, _ in todo:
            outcomes.append(_run_page(notebook, target))
            steps.update()
    for (notebook, target, key), error in zip(todo, outcomes, strict=True):
        if error is None:
            runs[notebook.stem], fresh[notebook.stem] = f"runs/{target.name}", key
        else:
            log.warning("%s: cannot be shown (%s)", notebook, error)
            skipped.append(Skipped(notebook, f"cannot be shown as a page ({error})"))
    (building / "runs" / CACHE_FILE).write_text(json.dumps(fresh), encoding="utf-8")
    return runs, skipped


def _run_page(notebook: Path, target: Path) -> str | None:
    """Export one run page; the error text when the notebook cannot be shown (an OSError, the
    report not being writable, is raised: the build fails)."""
    try:
        export_html(notebook, target, include_code=True)
    except OSError:
        raise
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None


def _summary_page(name: str, campaign_dir: Path, building: Path,
                  inputs: ReportInputs | None = None) -> None:
    executed = building / f"{name}.ipynb"
    _run_summary(name, campaign_dir, executed, (inputs or ReportInputs()).parameters(name))
    export_html(executed, building / f"{name}.html", include_code=False)


def _build_pages(campaign_dir: Path, building: Path, found: Scan,
                 summaries: Sequence[str], progress: bool,
                 inputs: ReportInputs | None = None) -> None:
    """Execute and export every summary (side by side), export every run page (reusing
    unchanged ones; a notebook that cannot be exported is listed as skipped), write the index."""
    from concurrent.futures import ThreadPoolExecutor

    from tqdm.auto import tqdm

    (building / "runs").mkdir()
    skipped = list(found.skipped)
    left_out = {s.path for s in skipped}
    notebooks = [n for n in iter_notebooks(campaign_dir) if n not in left_out]
    threads = max(1, min(len(summaries), os.cpu_count() or 1))
    with tqdm(total=len(summaries) + len(notebooks), desc="report", unit="page",
              disable=not progress) as steps, ThreadPoolExecutor(threads) as pool:
        pending = [pool.submit(_summary_page, name, campaign_dir, building, inputs)
                   for name in summaries]
        runs, unshown = _export_runs(campaign_dir, building, notebooks, steps)
        for future in pending:
            future.result()  # a failed summary fails the build (ReportError)
            steps.update()
    index = _index(campaign_dir.name, found.frame, summaries, runs, [*skipped, *unshown], inputs)
    (building / "index.html").write_text(index, encoding="utf-8")


def build_report(campaign_dir: str | Path, summaries: Sequence[str] = SUMMARIES,
                 progress: bool = True, baseline: str | Path | None = None,
                 references: str | Path | None = None) -> Path:
    """Execute the summaries on ``campaign_dir``, export HTML, write ``report/index.html``.

    ``baseline``: a campaign folder to compare with (adds the compare page); ``references``:
    a references file for the acceptance page (default: the shipped references); both are
    checked before anything runs (InputError).

    Each build works in its own hidden scratch folder (concurrent builds of one campaign do not
    meet), removed when the build fails; a failed summary notebook is kept under
    ``.report-failed/``."""
    campaign_dir = Path(campaign_dir)
    inputs = ReportInputs.validated(baseline, references)
    if inputs.baseline is not None and COMPARE not in summaries:
        summaries = (*summaries, COMPARE)
    found = scan(campaign_dir)
    if found.frame.empty:
        raise FileNotFoundError(f"no result records under {str(campaign_dir)!r}: "
                                "run a sweep into it first")
    building = Path(tempfile.mkdtemp(prefix=".report-", dir=campaign_dir))
    try:
        _build_pages(campaign_dir, building, found, summaries, progress, inputs)
        os.chmod(building, 0o777 & ~current_umask())  # mkdtemp makes it 0700
        _swap_in(building, campaign_dir / "report")
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return campaign_dir / "report" / "index.html"
