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
import itertools
import logging
import os
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from benchlib.analysis.selection import CONFIGURED_CATALOG
from benchlib.errors import InputError, ReportError
from benchlib.execute.notebook_run import NotebookSession
from benchlib.history.report_input import catalog_history, validated_history
from benchlib.inputs.layout import REPORT
from benchlib.inputs.params import NOTEBOOK_DIR
from benchlib.publish import local_paths
from benchlib.publish.pages import carried
from benchlib.publish.pages.catalog import EVERY_REPORT, SUMMARY_PAGES, Needs, SummaryPage, named, needing
from benchlib.publish.templating import render as render_template
from benchlib.records.results import Scan, Skipped, iter_notebooks, load, scan
from benchlib.records.run_table import RunTable
from benchlib.records.store import current_umask
from benchlib.report import navigation, reuse, travel
from benchlib.report.export import export_html
from benchlib.report.index_page import Link, RunLinks, render
from benchlib.report.run_pages import export_runs
from benchlib.report.scratch import remove_stale, scratch_folder

log = logging.getLogger(__name__)
#: The summary pages every report has (the others come with what they need:
#: :mod:`benchlib.publish.pages.catalog`).
SUMMARIES = EVERY_REPORT
#: The page of a ``benchlib diagnose`` campaign, first when the folder holds a diagnose plan.
(DIAGNOSE,) = needing(Needs.DIAGNOSE_PLAN)
#: The page ``benchlib report DIR --baseline BASE`` adds (its title names the baseline).
(COMPARE,) = needing(Needs.BASELINE)
#: The page earlier runs add (``--history``, the catalog).
(HISTORY,) = needing(Needs.HISTORY)
FAILED_DIR = ".report-failed"  #: where a failed summary notebook is kept (hidden: not loaded)


def _run_summary(name: str, campaign_dir: Path, target: Path, session: NotebookSession,
                 parameters: dict[str, object] | None = None) -> None:
    import papermill
    from nbclient.exceptions import DeadKernelError

    try:
        session.execute(NOTEBOOK_DIR / f"{name}.ipynb", target,
                        {"results_dir": travel.results_dir(campaign_dir), **(parameters or {})})
        travel.metadata(target, name)
    except papermill.PapermillExecutionError as error:
        kept = campaign_dir / FAILED_DIR / target.name
        kept.parent.mkdir(exist_ok=True)
        os.replace(target, kept)
        raise ReportError(f"{name}: {error.ename}: {error.evalue} (cell {error.exec_count}); "
                          f"the executed notebook is {kept}") from None
    except DeadKernelError as error:  # the page ended its kernel (os._exit, out of memory)
        raise ReportError(f"{name}: its kernel died while the page ran ({error}); run "
                          f"notebooks/{name}.ipynb in JupyterLab with results_dir = "
                          f"'{campaign_dir}' to see where") from None


def _comparable_baseline(given: str | Path, base_runs: pd.DataFrame, runs: pd.DataFrame) -> None:
    """InputError naming ``--baseline`` when the compare page could only fail or certify
    nothing: the baseline holds the campaign's own ``runs``, or another benchmark or unit."""
    import benchlib.compare.comparable as comparable

    if runs.empty:
        return
    try:
        comparable.same_runs(base_runs, runs)
        comparable.not_comparable(base_runs, runs, comparable.pairing_columns(base_runs, runs)[1])
    except InputError as error:
        raise InputError(f"--baseline {given}: {str(error).removeprefix('compare: ')}") from None


@dataclass(frozen=True)
class ReportInputs:
    """What a report is built against besides its campaign: a baseline campaign folder
    (``--baseline``: adds the compare page), a references file (``--references``; none:
    the shipped references) and earlier campaign folders (``--history``: adds the History
    page)."""

    baseline: Path | None = None
    references: Path | None = None
    diagnosis: str = ""  #: a diagnose campaign's recommendation, for the index
    history: tuple[Path, ...] = ()
    #: with ``$BENCHLIB_DB`` holding earlier runs of the campaign's configurations: a stamp of
    #: them (a History page from the catalog, made again when they change)
    history_catalog: str = ""
    #: the baseline's runs, loaded once when the inputs are checked (the index compares them)
    baseline_runs: pd.DataFrame | None = field(default=None, compare=False, repr=False)

    @classmethod
    def validated(cls, baseline: str | Path | None = None,
                  references: str | Path | None = None,
                  campaign: str | Path | None = None,
                  history: Sequence[str | Path] = (),
                  runs: pd.DataFrame | None = None) -> ReportInputs:
        """Checked before any notebook runs: InputError naming the option otherwise (a
        baseline that is ``campaign`` itself, or of another benchmark or unit, included;
        ``runs``: the campaign's, when loaded already)."""
        from benchlib.analysis.references import load_references

        base = Path(baseline).expanduser().resolve() if baseline else None
        if base is not None and not base.is_dir():
            raise InputError(f"--baseline {baseline}: not an existing folder (give the "
                             "baseline campaign's results folder, outputs/<campaign>)")
        base_runs = None
        if base is not None:
            base_runs = load(base)
            if base_runs.empty:
                raise InputError(f"--baseline {baseline}: no result records in that folder")
            if campaign is not None:
                _comparable_baseline(baseline, base_runs,
                                     load(Path(campaign)) if runs is None else runs)
        refs = Path(references).expanduser().resolve() if references else None
        if refs is not None:
            if not refs.is_file():
                raise InputError(f"--references {references}: not an existing file")
            load_references(refs)  # InputError naming the bad field
        folders = validated_history(history, campaign)
        return cls(base, refs, history=folders,
                   history_catalog="" if folders or campaign is None else catalog_history(campaign),
                   baseline_runs=base_runs)

    @property
    def history_dirs(self) -> str | None:
        """The ``--history`` folders as one papermill parameter (``os.pathsep``-separated)."""
        return os.pathsep.join(map(str, self.history)) if self.history else None

    @property
    def history_db(self) -> str | None:
        """The History page's catalog: ``$BENCHLIB_DB`` by name, never its value (a URL may
        hold a password, and papermill keeps parameters in the notebook)."""
        return CONFIGURED_CATALOG if self.history_catalog else None

    def refs(self) -> list:
        """The references runs are checked against."""
        import benchlib.analysis.references as references

        return (references.load_references(self.references) if self.references
                else references.shipped())

    def has(self, needs: Needs) -> bool:
        """Whether these inputs give what a page built from ``needs`` needs (a diagnose plan
        is read from the campaign folder: :func:`_with_diagnosis`)."""
        if needs is Needs.HISTORY:
            return bool(self.history or self.history_catalog)
        return needs is not Needs.BASELINE or self.baseline is not None

    def link(self, page: SummaryPage) -> Link:
        """``page``'s entry in the index and the navigation bar."""
        return Link(page.href, page.titled(self.baseline.name if self.baseline else
                                           "the baseline"), page.answers)

    def parameters(self, summary: str) -> dict[str, object]:
        """The papermill parameters ``summary`` takes from these inputs (those given)."""
        page = named(summary)
        given = ((name, getattr(self, field)) for name, field in (page.inputs if page else ()))
        return {name: str(value) for name, value in given if value is not None}


def _skipped_section(skipped: Sequence[Skipped]) -> str:
    """The index's list of files that hold no usable record (``templates/pages/skipped.html.j2``)."""
    return render_template("skipped.html.j2", skipped=[
        {"name": s.path.name, "reason": s.reason.replace(str(s.path), "").lstrip(": ")}
        for s in skipped])


def report_pages(summaries: Sequence[str], inputs: ReportInputs | None = None) -> list[Link]:
    """The report's summary pages, in the index's order: those of ``summaries`` among
    :data:`~benchlib.publish.pages.catalog.SUMMARY_PAGES` in its order (the diagnose page first,
    the compare page last, given a baseline), then any other summary by its name. The index
    lists them and every page's navigation bar links them."""
    inputs = inputs or ReportInputs()
    pages = [inputs.link(p) for p in SUMMARY_PAGES if p.name in summaries and inputs.has(p.needs)]
    pages += [Link(f"{name}.html", name.removeprefix("summary_").replace("_", " ").title())
              for name in summaries if name not in {Path(p.href).stem for p in pages}]
    return pages


def _index(campaign_dir: Path, records: pd.DataFrame, summaries: Sequence[str],
           runs: dict[str, str], skipped: Sequence[Skipped] = (),
           inputs: ReportInputs | None = None, building: Path | None = None) -> str:
    inputs = inputs or ReportInputs()
    pages = report_pages(summaries, inputs)
    computed = carried.from_pages(building, summaries) if building else {}
    compared = carried.item(computed, "compared")
    if compared is None and inputs.baseline is not None and COMPARE in summaries:
        from benchlib.compare.tables import compare_runs, index_item

        base_runs = load(inputs.baseline) if inputs.baseline_runs is None else inputs.baseline_runs
        compared = index_item(compare_runs(base_runs, records, history_db=inputs.history_db).table)
    said = carried.item(computed, "diagnosis")
    return render(campaign_dir.name, records, pages, RunLinks(runs, campaign_dir),
                  _skipped_section(skipped),
                  refs=inputs.refs(), compared=compared,
                  baseline=inputs.baseline.name if inputs.baseline else "",
                  diagnosis=inputs.diagnosis or (str(said["text"]) if said else ""),
                  computed=computed)


def _with_diagnosis(campaign_dir: Path, summaries: Sequence[str], inputs: ReportInputs,
                    said: str | None = None) -> tuple[Sequence[str], ReportInputs]:
    """A diagnose campaign (its plan in the folder) gets the diagnose page first; its
    recommendation is among the index's answers: ``said`` when the caller has made it, else as
    the diagnose page computed it (never made twice)."""
    from benchlib.diagnosis.plan import read_plan

    if read_plan(campaign_dir) is None:
        return summaries, inputs
    return ((DIAGNOSE, *(s for s in summaries if s != DIAGNOSE)),
            replace(inputs, diagnosis=said or ""))


def check_report_place(final: Path) -> None:
    """InputError when something other than a real folder (a symbolic link, FIFO, file, device
    or socket: ``lstat``) stands at ``final``, the report's place: a build would replace it,
    so it is refused, never followed nor removed."""
    try:
        mode = os.lstat(final).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        return
    kind = ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO (named pipe)"
            if stat.S_ISFIFO(mode) else "a file" if stat.S_ISREG(mode) else "a socket"
            if stat.S_ISSOCK(mode) else "a device")
    raise InputError(f"{final}: {kind}, not a folder; benchlib writes the report there and "
                     "never replaces what you put there: move it away, then run again")


def _swap_in(built: Path, final: Path) -> None:
    """Replace ``final`` by ``built``: the old report is renamed aside, the new one renamed in,
    so a reader sees a whole report (or, for an instant, none). A concurrent build that swaps
    its report in between is moved aside in turn: the last build to finish wins. Only a real
    folder is replaced (:func:`check_report_place`)."""
    for attempt in itertools.count():
        check_report_place(final)
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
            with contextlib.suppress(OSError):  # a real folder only: rmtree opens what it gets
                if stat.S_ISDIR(os.lstat(aside).st_mode):
                    shutil.rmtree(aside, ignore_errors=True)
        return


def _summary_page(name: str, campaign_dir: Path, building: Path, session: NotebookSession,
                  inputs: ReportInputs | None = None, key: str = "",
                  previous: Mapping[str, Mapping] | None = None) -> bool:
    """Execute summary ``name`` into ``building`` in ``session``'s kernel (True), or reuse the
    previous report's page (HTML too) when its key (:mod:`benchlib.report.reuse`) is
    ``key`` (False)."""
    if key and reuse.link_previous(name, key, previous or {}, campaign_dir, building):
        return False
    _run_summary(name, campaign_dir, building / f"{name}.ipynb", session,
                 (inputs or ReportInputs()).parameters(name))
    return True


def _summary_group(names: Sequence[str], campaign_dir: Path, building: Path,
                   inputs: ReportInputs, keys: Mapping[str, str],
                   previous: Mapping[str, Mapping], done: Callable[[], object]) -> list[str]:
    """Summaries ``names`` one after another in one kernel (started only if one is not
    reused); returns those executed. ``done`` is called after each page."""
    executed = []
    with NotebookSession(campaign_dir, env={local_paths.ROOT_ENV: str(local_paths.builder_root())}
                         ) as session:
        for name in names:
            if _summary_page(name, campaign_dir, building, session, inputs, keys[name], previous):
                executed.append(name)
            done()
    return executed


def _summary_keys(campaign_dir: Path, summaries: Sequence[str],
                  inputs: ReportInputs) -> dict[str, str]:
    """Each summary page's key: what it is made from (:mod:`benchlib.report.reuse`), its
    navigation bar included (another set of pages makes the page again)."""
    made_from = reuse.inputs_digest([campaign_dir, *filter(None, [inputs.baseline]),
                                     *inputs.history],
                                    list(filter(None, [inputs.references])))
    return {name: reuse.summary_key(made_from, NOTEBOOK_DIR / f"{name}.ipynb",
                                    {"results_dir": str(campaign_dir.resolve()),
                                     **inputs.parameters(name),
                                     **({"catalog": inputs.history_catalog}
                                        if name == HISTORY else {}),
                                     "navigation": _nav(summaries, inputs, name)})
            for name in summaries}


def _nav(summaries: Sequence[str], inputs: ReportInputs, page: str = "") -> str:
    """The navigation bar of summary page ``page`` (a run page's: ``page`` empty)."""
    pages = report_pages(summaries, inputs)
    return navigation.bar(pages, f"{page}.html") if page else navigation.bar(pages, in_runs=True)


def _build_pages(campaign_dir: Path, building: Path, found: Scan,
                 summaries: Sequence[str], progress: bool,
                 inputs: ReportInputs | None = None) -> None:
    """Export every run page (reusing unchanged ones; a notebook that cannot be exported is
    listed as skipped), then execute the summaries side by side, then export them and write
    the index. One phase at a time (the page pool's processes, then the summaries' kernels,
    then this process's own work) keeps a large campaign's peak memory down; each phase uses
    every core it can. The summaries are dealt out to one kernel per core, each kernel running
    its share one after another (its imports paid once, not once per page)."""
    from concurrent.futures import ThreadPoolExecutor

    from benchlib import progress as shown

    (building / "runs").mkdir()
    inputs = inputs or ReportInputs()
    keys, previous = _summary_keys(campaign_dir, summaries, inputs), reuse.previous_keys(campaign_dir)
    skipped = list(found.skipped)
    left_out = {s.path for s in skipped}
    notebooks = [n for n in iter_notebooks(campaign_dir) if n not in left_out]
    threads = max(1, min(len(summaries), os.cpu_count() or 1))
    with shown.bar(total=len(summaries) + len(notebooks), desc="report", unit="page",
                   enabled=progress) as steps:
        runs, unshown = export_runs(campaign_dir, building, notebooks, steps,
                                    _nav(summaries, inputs))
        groups = [list(summaries[start::threads]) for start in range(threads)]
        with ThreadPoolExecutor(threads) as pool:
            pending = [pool.submit(_summary_group, group, campaign_dir, building, inputs, keys,
                                   previous, steps.update) for group in groups]
            ran = {name for future in pending for name in future.result()}  # a failed summary
            executed = [name for name in summaries if name in ran]  # fails the build (ReportError)
    for name in executed:  # once the kernels have ended: their memory and this never meet
        copy = building / f"{name}.ipynb"  # the notebook copy names no folder of this machine
        copy.write_text(local_paths.scrub(copy.read_text(encoding="utf-8"), local_paths.builder_root()),
                        encoding="utf-8")
        export_html(building / f"{name}.ipynb", building / f"{name}.html", include_code=False,
                    nav=_nav(summaries, inputs, name))
    reuse.write_keys(building, keys)
    index = _index(campaign_dir, found.frame, summaries, runs, [*skipped, *unshown], inputs,
                   building)
    (building / "index.html").write_text(local_paths.scrub(index, local_paths.builder_root()),
                                         encoding="utf-8")


def build_report(campaign_dir: str | Path, summaries: Sequence[str] = SUMMARIES,
                 progress: bool = True, baseline: str | Path | None = None,
                 references: str | Path | None = None,
                 history: Sequence[str | Path] = (), diagnosis: str | None = None) -> Path:
    """Execute the summaries on ``campaign_dir``, export HTML, write ``report/index.html``.

    ``baseline``: a campaign folder to compare with (adds the compare page); ``references``:
    a references file for the acceptance page (default: the shipped references);
    ``history``: earlier campaign folders (adds the History page); ``diagnosis``: a diagnose
    campaign's recommendation when the caller made it (else made here); all are checked before
    anything runs (InputError), as is ``campaign_dir/report`` (InputError when it is anything
    but a real folder: :func:`check_report_place`).

    Each build works in its own hidden scratch folder (concurrent builds of one campaign do not
    meet), removed when the build fails, and first removes the scratch killed builds left
    (:mod:`benchlib.report.scratch`); a failed summary notebook is kept under
    ``.report-failed/``."""
    campaign_dir = Path(campaign_dir).absolute()  # the one place a user's path is resolved
    found = scan(campaign_dir)  # the campaign loaded once: the checks, diagnosis and index
    runs = RunTable.of(found.frame)
    inputs = ReportInputs.validated(baseline, references, campaign_dir, history, runs)
    check_report_place(campaign_dir / REPORT)
    summaries, inputs = _with_diagnosis(campaign_dir, summaries, inputs, diagnosis)
    summaries = (*summaries, *(p.name for p in SUMMARY_PAGES
                               if p.needs in (Needs.BASELINE, Needs.HISTORY)
                               and inputs.has(p.needs) and p.name not in summaries))
    if found.frame.empty:
        raise FileNotFoundError(f"no result records under {str(campaign_dir)!r}: "
                                "run a sweep into it first")
    remove_stale(campaign_dir)  # what killed builds left
    with scratch_folder(campaign_dir) as building:
        _build_pages(campaign_dir, building, found, summaries, progress, inputs)
        os.chmod(building, 0o777 & ~current_umask())  # made 0700
        _swap_in(building, campaign_dir / REPORT)
    return campaign_dir / REPORT / "index.html"
