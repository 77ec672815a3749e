"""Sweeps: each point of a params file (:mod:`benchlib.inputs.params`) run through papermill.

A re-run finds the points already done by their ids and skips them. Each point writes
``outputs/<campaign>/<point>.ipynb`` and its sidecar ``<point>.json``; the notebook is executed
in the point's own scratch folder under ``outputs/<campaign>/.partial/`` and moved into place
only when complete, and the sidecar comes last, so a point is done exactly when its sidecar
exists. A sweep holds the campaign's lock, each point its own (:mod:`benchlib.execute.locks`).
The scratch folder is the point's scratch root (:mod:`benchlib.workloads.scratch`: launches
and temporary predictions go there), and every process the point started ends with it; a
sweep first removes the scratch of points whose process was killed (:func:`remove_stale_scratch`).
Every cell of a local point has a time limit (:func:`cell_timeout_for`), so a hung cell fails
its point instead of holding the sweep for ever.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib import formatting
from benchlib.errors import OutputError, RecordError, describe_os_error
from benchlib.execute.campaign import remember_points
from benchlib.execute.locks import campaign_lock, point_lock, prepare_campaign_dir
from benchlib.execute.notebook_run import execute_notebook
from benchlib.inputs.layout import PARTIAL
from benchlib.inputs.params import (
    NOTEBOOK_DIR,
    Point,
    Sweep,
    notebook_path,
    papermill_parameters,
)
from benchlib.records import flags
from benchlib.records.build import failed_record
from benchlib.records.results import is_complete_notebook, keep_ok_result, read_record, record_from_notebook
from benchlib.records.store import notebook_fingerprint, sidecar_path, write_sidecar
from benchlib.registry import notebook_configs
from benchlib.vocabulary import PointState, RecordStatus
from benchlib.workloads.scratch import SCRATCH_VARIABLE, end_processes

log = logging.getLogger(__name__)
#: Seconds a cell of a local point may run when ``executor.cell_timeout_s`` is not set.
DEFAULT_CELL_TIMEOUT_S = 7200
OWNER = "owner.json"  #: in a point's scratch folder: the host and pid of the process running it
#: Seconds after which the scratch of a point run on another host (whose locks may not reach
#: this one) counts as left behind.
STALE_AFTER_S = 24 * 3600.0


@dataclass
class PointOutcome:
    """What happened to one point in a sweep run."""

    point: Point
    status: PointState  #: done, failed or skipped
    seconds: float = 0.0
    error: str = ""


def point_status(notebook: Path) -> PointState:
    """``done`` / ``failed`` from the point's sidecar, ``pending`` when there is none (a sidecar
    that no longer reads as a record counts as ``failed``, so the point is not run blindly)."""
    if not sidecar_path(notebook).is_file():
        return PointState.PENDING
    try:
        record = read_record(notebook)
    except RecordError:
        return PointState.FAILED
    return PointState.of_record((record or {}).get("status", RecordStatus.FAILED))


def point_record(outcome: PointOutcome, campaign_dir: Path) -> dict:
    """The record a finished point wrote ({} when it wrote none that reads)."""
    if outcome.status != PointState.DONE:
        return {}
    try:
        return read_record(campaign_dir / f"{outcome.point.name}.ipynb") or {}
    except RecordError:
        return {}


def describe_outcome(outcome: PointOutcome, campaign_dir: Path, record: dict | None = None,
                     ) -> str:
    """``ok 35.2 images/s (within-run 95 %: 34.8-35.6; flagged noisy) in 8 s``,
    ``failed: <error>`` or ``skipped (done before)``: one point's line as it finishes
    (``record``: its :func:`point_record`, when read already)."""
    if outcome.status == PointState.SKIPPED:
        return f"skipped ({outcome.error or 'done before'})"
    if outcome.status == PointState.FAILED:
        return f"failed: {outcome.error.splitlines()[0] if outcome.error else 'no record'}"
    record = point_record(outcome, campaign_dir) if record is None else record
    speed, low, high = (flags.number(record.get(k))
                        for k in ("throughput", "throughput_low", "throughput_high"))
    shown = f" {formatting.number(speed)} {record.get('unit', '')}" if speed is not None else ""
    notes = ([f"within-run 95 %: {formatting.number(low)}-{formatting.number(high)}"]
             if low is not None and high is not None else [])
    marked = flags.record_flags(record)
    notes += [f"flagged {', '.join(marked)}"] if marked else []
    said = f" ({'; '.join(notes)})" if notes else ""
    return f"ok{shown}{said} in {outcome.seconds:.0f} s"


def skip_reason(status: str, force: bool, retry_failed: bool) -> str:
    """Why a point in this state (:class:`~benchlib.vocabulary.PointState`) is not run again,
    or '' when it runs: done points unless ``force``, failed ones unless ``retry_failed`` (or
    ``force``)."""
    if force or status not in (PointState.DONE, PointState.FAILED):
        return ""
    if status == PointState.DONE:
        return "done"
    return "" if retry_failed else "failed (use --retry-failed)"


def cell_timeout_for(point: Point, configured: int | None) -> int:
    """The time limit of each cell of ``point`` in a local sweep: ``executor.cell_timeout_s``
    when set, else :data:`DEFAULT_CELL_TIMEOUT_S` (2 hours), or twice the point's time budget
    (``max_time_s`` with ``iterations: auto``) when that is longer."""
    if configured:
        return configured
    budget = point.parameters.get("max_time_s") if point.parameters.get("iterations") == "auto" \
        else None
    if isinstance(budget, int | float) and not isinstance(budget, bool):
        return max(DEFAULT_CELL_TIMEOUT_S, int(2 * budget))
    return DEFAULT_CELL_TIMEOUT_S


def run_sweep(
    sweep: Sweep, outputs: Path = Path("outputs"), force: bool = False,
    retry_failed: bool = False, base_dir: Path | None = None, progress: bool = True,
    on_point: Callable[[PointOutcome], None] | None = None,
) -> list[PointOutcome]:
    """Execute every point not yet done; failed points are recorded and the sweep goes on.

    The campaign's lock is held throughout (a second sweep of the campaign is refused with
    CampaignBusyError). When results cannot be written at all (disk full, read-only), the
    sweep stops with OutputError saying how many points were left."""
    from benchlib import progress as shown

    base_dir = base_dir or Path.cwd()
    campaign_dir = outputs / sweep.campaign
    prepare_campaign_dir(campaign_dir)
    outcomes: list[PointOutcome] = []
    with campaign_lock(campaign_dir):
        remove_stale_scratch(campaign_dir)
        bar = shown.bar(sweep.points, desc=sweep.campaign, unit="point", enabled=progress)
        counts = {s.value: 0 for s in (PointState.DONE, PointState.FAILED, PointState.SKIPPED)}
        raised: list[str] = []  # the flags the points raised, for the legend after them
        try:
            remember_points(campaign_dir, sweep.points)
            for point in bar:
                target = campaign_dir / f"{point.name}.ipynb"
                if skip_reason(point_status(target), force, retry_failed):
                    outcome = PointOutcome(point, PointState.SKIPPED)
                else:
                    bar.set_postfix_str(point.label, refresh=True)
                    timeout_s = cell_timeout_for(point, sweep.spec.executor.cell_timeout_s)
                    outcome = execute_point(point, target, timeout_s, base_dir,
                                            sweep.notebook_dir)
                counts[outcome.status] += 1
                bar.set_postfix(counts, refresh=False)
                outcomes.append(outcome)
                if on_point:
                    on_point(outcome)
                elif progress and outcome.status != PointState.SKIPPED:
                    record = point_record(outcome, campaign_dir)
                    raised += [f for f in flags.record_flags(record) if f not in raised]
                    bar.write(_fitted(f"{point.label}: "
                                      f"{describe_outcome(outcome, campaign_dir, record)}"))
        except OutputError as error:
            left = len(sweep.points) - len(outcomes)
            raise OutputError(f"cannot write results: {error}; the sweep stopped with {left} "
                              f"of {len(sweep.points)} points not run (free space or fix the "
                              "folder, then run the same command again)") from error
        finally:
            bar.close()
    for name in (f for f in flags.FLAGS if f in raised):  # each explained once
        print(_fitted(f"{name}: {flags.FLAGS[name]}"))
    return outcomes


def _fitted(line: str) -> str:
    """``line`` wrapped to the terminal (:func:`benchlib.formatting.terminal_width`), set in."""
    return textwrap.fill(line, formatting.terminal_width(), subsequent_indent="    ",
                         break_on_hyphens=False, break_long_words=False)


def point_context(point: Point, context: dict[str, Any] | None = None) -> dict[str, Any]:
    """The columns every record of ``point`` gets besides its parameters: the notebook's fixed
    values (``benchmark``), point id, notebook, repeat, its place in the run order
    (``sweep_order``), and ``context`` (e.g. SLURM job ids)."""
    fixed = notebook_configs().get(point.notebook, (None, {}))[1]
    return {**(context or {}), **fixed, "point_id": point.point_id, "notebook": point.notebook,
            "repeat": point.repeat, "sweep_order": point.order}


def execute_point(point: Point, target: Path, cell_timeout_s: int | None, base_dir: Path,
                  notebook_dir: Path = NOTEBOOK_DIR, context: dict[str, Any] | None = None,
                  ) -> PointOutcome:
    """Run one point with papermill into ``target``; write its sidecar (ok or failed).

    The point runs under its own lock (``skipped`` when another process runs it) in its own
    scratch folder; only a complete notebook is moved into place, and a failure never replaces
    an ``ok`` result (it is kept in the ledger instead). ``context`` adds columns to the record
    (the SLURM job of a point run by a job array). Raises OutputError when the sidecar cannot
    be written.
    """
    with point_lock(target.parent, target.stem) as mine:
        if not mine:
            return PointOutcome(point, PointState.SKIPPED, error="running in another process")
        scratch_root = target.parent / PARTIAL
        try:
            scratch_root.mkdir(exist_ok=True)
            scratch = Path(tempfile.mkdtemp(prefix=f"{target.stem}.", dir=scratch_root)).absolute()
        except OSError as error:
            raise OutputError(describe_os_error(error, scratch_root)) from error
        try:
            try:
                (scratch / OWNER).write_text(json.dumps({"host": socket.gethostname(),
                                                         "pid": os.getpid()}), encoding="utf-8")
            except OSError as error:
                raise OutputError(describe_os_error(error, scratch / OWNER)) from error
            return _execute_in(point, target, scratch / target.name, cell_timeout_s, base_dir,
                               notebook_dir, point_context(point, context))
        finally:
            _remove_scratch(scratch)
            with contextlib.suppress(OSError):
                scratch_root.rmdir()  # only when no other point is running


def _remove_scratch(scratch: Path) -> None:
    """End what a point started (its kernel, launches and ranks), then remove its scratch."""
    end_processes(scratch)
    shutil.rmtree(scratch, ignore_errors=True)


def _left_behind(scratch: Path) -> bool:
    """Whether a point's scratch folder, whose point lock this process holds, is left behind:
    its owner ran on this host (the lock is free, so it is gone), or it ran elsewhere and its
    folder has not changed for :data:`STALE_AFTER_S` (so too one without an owner file: an
    older benchlib's, or killed before it wrote one)."""
    try:
        owner = json.loads((scratch / OWNER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        owner = None
    if isinstance(owner, dict) and owner.get("host") == socket.gethostname():
        return True
    try:
        newest = max(p.lstat().st_mtime for p in (scratch, *scratch.iterdir()))
    except OSError:
        return False
    return time.time() - newest > STALE_AFTER_S


def remove_stale_scratch(campaign_dir: Path) -> None:
    """Remove the scratch folders (``.partial/<point>.XXXXXXXX/``) of points whose process was
    killed, and end what they started; never that of a point running now (its lock is held)."""
    root = campaign_dir / PARTIAL
    try:
        folders = [f for f in root.iterdir() if f.is_dir() and not f.is_symlink()]
    except OSError:
        return
    for folder in folders:
        point = folder.name.rpartition(".")[0]
        if not point:
            continue
        with point_lock(campaign_dir, point) as mine:
            if mine and _left_behind(folder):
                log.info("removing %s, left by a point that was killed", folder)
                _remove_scratch(folder.absolute())
    with contextlib.suppress(OSError):
        root.rmdir()


def _run_papermill(point: Point, partial: Path, cell_timeout_s: int | None, base_dir: Path,
                   notebook_dir: Path) -> str:
    """Execute the point's notebook into ``partial``; '' or the error text."""
    import papermill
    from nbclient.exceptions import CellTimeoutError

    try:
        execute_notebook(notebook_path(point.notebook, notebook_dir), partial,
                         papermill_parameters(point, base_dir), base_dir, cell_timeout_s,
                         env={SCRATCH_VARIABLE: str(partial.parent)})
    except papermill.PapermillExecutionError as exc:
        return f"{exc.ename}: {exc.evalue} (cell {exc.exec_count})"
    except CellTimeoutError:
        return (f"CellTimeoutError: a cell ran longer than {cell_timeout_s} s and was stopped "
                f"(the cell time limit: executor.cell_timeout_s in the params file)")
    except OSError as exc:
        return describe_os_error(exc, exc.filename or partial)
    except Exception as exc:  # kernel death, timeout, bad parameters: the point fails
        return f"{type(exc).__name__}: {exc}"
    return ""


def _execute_in(point: Point, target: Path, partial: Path, cell_timeout_s: int | None,
                base_dir: Path, notebook_dir: Path, context: dict[str, Any]) -> PointOutcome:
    start = time.perf_counter()
    error = _run_papermill(point, partial, cell_timeout_s, base_dir, notebook_dir)
    seconds = time.perf_counter() - start
    complete = is_complete_notebook(partial)
    record = None
    if complete and not error:
        try:
            record = record_from_notebook(partial)
        except RecordError as exc:
            error = str(exc).replace(str(partial), target.name)
    elif partial.exists() and not complete:
        error = error or f"the executed notebook {target.name} was not written completely"
    if error or record is None:
        error = error or "the notebook published no result record"
        record = failed_record(point.parameters, error, wall_time_s=seconds)
    record.update(context)
    return commit_result(point, target, partial if complete else None, record, seconds)


def commit_result(point: Point, target: Path, notebook: Path | None, record: dict,
                  seconds: float = 0.0) -> PointOutcome:
    """Move ``notebook`` (complete, or None) into ``target`` and write the sidecar, unless the
    record failed and ``target`` already holds an ``ok`` result: then the earlier result stays
    and the failure is kept under ``.benchlib/rejected/``."""
    status = PointState.of_record(record.get("status", RecordStatus.FAILED))
    kept = keep_ok_result(target, record) if status != PointState.DONE else None
    if kept is not None:
        if notebook is not None:
            with contextlib.suppress(OSError):
                notebook.replace(kept.with_suffix(".ipynb"))
        error = (f"{record.get('error', '')} (the earlier ok result was kept; this failure is "
                 f"in {kept})")
        return PointOutcome(point, PointState.FAILED, seconds, error)
    fingerprint = None
    if notebook is not None:
        fingerprint = notebook_fingerprint(notebook)
        try:
            notebook.replace(target)
        except OSError as exc:
            raise OutputError(describe_os_error(exc, target)) from exc
    write_sidecar(target, record, fingerprint)
    return PointOutcome(point, status, seconds, str(record.get("error", "")))


def summarize_outcomes(outcomes: Iterable[PointOutcome]) -> str:
    """One line: how many points ran, failed, were skipped."""
    outcomes = list(outcomes)
    counts = {s: sum(o.status == s for o in outcomes)
              for s in (PointState.DONE, PointState.FAILED, PointState.SKIPPED)}
    return (f"{len(outcomes)} point{'' if len(outcomes) == 1 else 's'}: {counts['done']} done, "
            f"{counts['failed']} failed, "
            f"{counts['skipped']} skipped (done before)")
