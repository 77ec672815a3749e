"""The report's run pages: one offline page per executed benchmark notebook, reused from the
previous report while the notebook's fingerprint and the export code are unchanged.

Only regular files inside the campaign are shown: a notebook that is a symbolic link (to a
notebook elsewhere on the machine, or even inside the campaign) or resolves outside the
campaign is listed as not shown. A cached page is reused only while it is the regular file the
build wrote (:func:`benchlib.report.reuse.reuse_file`)."""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from benchlib.inputs.layout import REPORT
from benchlib.report.export import TEMPLATES, export_html
from benchlib.report.reuse import digest_of, reuse_file

if TYPE_CHECKING:
    from benchlib.records.results import Skipped

log = logging.getLogger("benchlib.report.build")

#: Run pages exported with more workers than this go to a process pool (fewer: in process).
POOL_THRESHOLD = 24


CACHE_FILE = ".pages.json"  #: run pages' notebook fingerprints, in ``report/runs/``
#: A page name kept as it is: a notebook at the campaign's top level with a plain name.
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def page_name(relative: Path) -> str:
    """The file name of the run page of the notebook at ``relative`` (its path in the
    campaign folder): ``<stem>.html`` for a plainly named notebook at the top level, else its
    path made safe (``day1_train-x``) with a digest of the path, so that same-named notebooks
    in different subfolders never share a page."""
    stem = relative.with_suffix("").as_posix()
    if PLAIN_NAME.fullmatch(stem):
        return f"{stem}.html"
    digest = hashlib.sha256(relative.as_posix().encode()).hexdigest()[:10]
    return f"{UNSAFE.sub('_', stem).strip('._')[:100]}-{digest}.html"


def _export_version() -> str:
    """A digest of what shapes a run page (this module, the exporter, the templates and the
    libraries it renders with): a cached page made by other code is made again."""
    import hashlib
    from importlib import metadata

    from benchlib.report import export, run_lead

    digest = hashlib.sha256(Path(__file__).read_bytes())
    for library in ("nh3", "mistune", "nbconvert", "pygments", "jinja2", "nbformat"):
        digest.update(f"{library} {metadata.version(library)}".encode())
    for module in (export, run_lead):
        digest.update(Path(module.__file__).read_bytes())
    for path in sorted(TEMPLATES.rglob("*")):
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cached_runs(campaign_dir: Path) -> dict[str, dict]:
    """The previous report's run pages and the fingerprints they were made from."""
    import json

    try:
        found = json.loads((campaign_dir / REPORT / "runs" / CACHE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def outside_reason(campaign_dir: Path, notebook: Path) -> str:
    """Why ``notebook`` is no page of the campaign ``campaign_dir`` ('' when it is one): it
    must be a regular file (not a symbolic link) whose resolved path is inside the campaign."""
    try:
        if not stat.S_ISREG(os.lstat(notebook).st_mode):
            return "a symbolic link or not a regular file; the report shows only the campaign's own files"
        notebook.resolve(strict=True).relative_to(campaign_dir.resolve(strict=True))
    except ValueError:
        return "outside the campaign folder; the report shows only the campaign's own files"
    except OSError as error:
        return f"cannot be read ({type(error).__name__}: {error.strerror})"
    return ""


def _page_names(campaign_dir: Path, notebooks: Sequence[Path]) -> dict[Path, str]:
    """Each notebook's page name (:func:`page_name`), made unique should two names meet."""
    names, used = {}, set()
    for notebook in notebooks:
        name = page_name(notebook.relative_to(campaign_dir))
        stem, count = name.removesuffix(".html"), itertools.count(2)
        while name.lower() in used:  # lower: case-insensitive file systems too
            name = f"{stem}-{next(count)}.html"
        used.add(name.lower())
        names[notebook] = name
    return names


def export_runs(campaign_dir: Path, building: Path, notebooks: Sequence[Path],
                 steps: object, nav: str = "") -> tuple[dict[str, str], list[Skipped]]:
    """Every run page, under the navigation bar ``nav``: reused from the previous report when
    its notebook's fingerprint, the export code and the bar are unchanged, else exported (in a
    process pool when there are many).

    Returns each shown notebook's page (``runs/<name>.html``) keyed by the notebook's path as
    the records' ``source`` column names it, and the notebooks that cannot be shown."""
    import json
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # here, not at the top: a pool worker imports this module for _run_page, without pandas
    from benchlib.records.results import Skipped
    from benchlib.records.store import notebook_fingerprint

    version = _export_version()
    cached, fresh = _cached_runs(campaign_dir), {}
    runs, skipped, todo = {}, [], []
    for notebook in notebooks:
        if reason := outside_reason(campaign_dir, notebook):
            log.warning("%s: not shown (%s)", notebook, reason)
            skipped.append(Skipped(notebook, f"not shown: {reason}"))
    notebooks = [n for n in notebooks if n not in {s.path for s in skipped}]
    for notebook, name in _page_names(campaign_dir, notebooks).items():
        target = building / "runs" / name
        relative = notebook.relative_to(campaign_dir).as_posix()
        key = {**notebook_fingerprint(notebook), "export": version, "page": name,
               "navigation": hashlib.sha256(nav.encode()).hexdigest()[:16]}
        old = campaign_dir / REPORT / "runs" / name
        previous = cached.get(relative)
        if (isinstance(previous, dict) and {**previous, "sha256": None} == {**key, "sha256": None}
                and reuse_file(old, target, previous.get("sha256"))):
            runs[str(notebook)], fresh[relative] = f"runs/{name}", previous
            steps.update()
        else:
            todo.append((notebook, target, key))
    workers = min(os.cpu_count() or 1, 8)
    if len(todo) > POOL_THRESHOLD and workers > 1:
        # spawn, never fork: the report's summary threads are running (a forked child can
        # inherit an import lock one of them holds and wait for it for ever)
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            errors = pool.map(_run_page, [n for n, _, _ in todo], [t for _, t, _ in todo],
                              [nav] * len(todo), chunksize=max(1, len(todo) // (workers * 4)))
            outcomes = []
            for outcome in errors:
                outcomes.append(outcome)
                steps.update()
    else:
        outcomes = []
        for notebook, target, _ in todo:
            outcomes.append(_run_page(notebook, target, nav))
            steps.update()
    for (notebook, target, key), error in zip(todo, outcomes, strict=True):
        if error is None:
            relative = notebook.relative_to(campaign_dir).as_posix()
            runs[str(notebook)] = f"runs/{target.name}"
            fresh[relative] = {**key, "sha256": digest_of(target)}
        else:
            log.warning("%s: cannot be shown (%s)", notebook, error)
            skipped.append(Skipped(notebook, f"cannot be shown as a page ({error})"))
    (building / "runs" / CACHE_FILE).write_text(json.dumps(fresh), encoding="utf-8")
    return runs, skipped


def _run_page(notebook: Path, target: Path, nav: str = "") -> str | None:
    """Export one run page; the error text when the notebook cannot be shown (an OSError, the
    report not being writable, is raised: the build fails)."""
    try:
        export_html(notebook, target, include_code=True, nav=nav, run_page=True)
    except OSError:
        raise
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None
