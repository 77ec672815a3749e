"""A campaign folder's ledger and status: which points exist, which jobs run them, where each stands.

``outputs/<campaign>/.benchlib/points.json`` lists every point a sweep of this campaign has
named (several params files may feed one campaign); ``jobs.json`` maps each point submitted to
SLURM to its job. A point is ``done`` or ``failed`` once its sidecar exists; before that it is
``running`` or ``pending`` (queued, or not started yet). A job that left the queue without a
sidecar gets a ``failed`` sidecar with the scheduler's reason (time limit, out of memory, node
failure, ...), so that ``--retry-failed`` finds it.
"""

from __future__ import annotations

import glob
import json
import logging
import textwrap
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from benchlib import formatting
from benchlib.errors import InputError
from benchlib.execute import slurm, slurm_pending
from benchlib.execute.locks import ledger_lock, point_holder
from benchlib.inputs.layout import LEDGER, PARTIAL
from benchlib.records import flags
from benchlib.records.build import failed_record
from benchlib.records.results import is_complete_notebook, keep_ok_result, read_record
from benchlib.records.store import sidecar_path, write_json_atomic, write_sidecar
from benchlib.vocabulary import JobPhase, PointState, RecordStatus

log = logging.getLogger(__name__)
#: Where a point stands in the ledger (a sweep's ``skipped`` never appears there).
LEDGER_STATES = (PointState.DONE, PointState.FAILED, PointState.RUNNING, PointState.PENDING)


@dataclass(frozen=True)
class PointStatus:
    """One point's state in a campaign."""

    name: str
    notebook: str
    status: PointState
    job_id: str = ""
    detail: str = ""
    blocked: str = ""  # queued, but Slurm will never start the job: why
    flags: tuple[str, ...] = ()  # a finished run's flags (records.flags.record_flags)


def ledger_dir(campaign_dir: Path) -> Path:
    """``outputs/<campaign>/.benchlib`` (hidden: results.load does not look inside)."""
    return campaign_dir / LEDGER


def _set_aside(path: Path, why: str) -> None:
    """Move a broken ledger file out of the way (kept beside it for inspection), with a warning."""
    kept = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        path.replace(kept)
    except OSError:
        kept = path
    log.warning("%s: %s; kept as %s and rebuilt from the campaign's files", path, why, kept.name)


def _read(path: Path) -> dict[str, dict]:
    """A ledger file's mapping; {} when missing; a broken file is set aside (warning) and {}."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        _set_aside(path, f"unreadable campaign ledger ({error})")
        return {}
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        _set_aside(path, "not a mapping of point name -> entry")
        return {}
    return data


def _points_from_files(campaign_dir: Path) -> dict[str, dict]:
    """Ledger entries rebuilt from the sidecars in the campaign folder (what is known of each)."""
    points: dict[str, dict] = {}
    for sidecar in sorted(campaign_dir.glob("*.json")):
        try:
            record = json.loads(sidecar.read_bytes())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if not isinstance(record, dict) or not record.get("notebook"):
            continue
        label = sidecar.stem.rsplit("-", 1)[0]
        points[sidecar.stem] = {"notebook": record["notebook"], "label": label,
                                "repeat": record.get("repeat", 0), "parameters": {}}
    return points


def read_points(campaign_dir: Path) -> dict[str, dict]:
    """Points named by sweeps of this campaign: name -> notebook, label, parameters. A broken
    ``points.json`` is set aside and rebuilt from the campaign's sidecars (with a warning)."""
    path = ledger_dir(campaign_dir) / "points.json"
    exists = path.exists()
    points = _read(path)
    if exists and not path.exists():  # it was broken and set aside
        points = _points_from_files(campaign_dir)
        write_json_atomic(path, points)
    return points


def remember_points(campaign_dir: Path, points: list) -> None:
    """Add a sweep's points (``benchlib.inputs.params.Point``) to the ledger (under its lock)."""
    with ledger_lock(campaign_dir):
        known = read_points(campaign_dir)
        before = json.dumps(known, sort_keys=True, default=str)
        for point in points:
            known[point.name] = {"notebook": point.notebook, "label": point.label,
                                 "repeat": point.repeat, "parameters": point.parameters}
        if json.dumps(known, sort_keys=True, default=str) != before:
            write_json_atomic(ledger_dir(campaign_dir) / "points.json", known)


def read_jobs(campaign_dir: Path) -> dict[str, dict]:
    """Point name -> the SLURM job that last ran it (job id, log paths, request, time). A broken
    ``jobs.json`` is set aside with a warning: its points then show as pending."""
    return _read(ledger_dir(campaign_dir) / "jobs.json")


def remember_jobs(campaign_dir: Path, jobs: dict[str, dict]) -> None:
    """Record submitted jobs (point name -> job entry), replacing earlier jobs of those points."""
    with ledger_lock(campaign_dir):
        known = read_jobs(campaign_dir)
        known.update(jobs)
        write_json_atomic(ledger_dir(campaign_dir) / "jobs.json", known)


def _finished(notebook: Path) -> PointStatus | None:
    if not sidecar_path(notebook).is_file():
        return None
    try:
        record = read_record(notebook)
    except (ValueError, OSError) as error:
        return PointStatus(notebook.stem, "", PointState.FAILED,
                           detail=f"unreadable record: {error}")
    if not isinstance(record, dict):
        return PointStatus(notebook.stem, "", PointState.FAILED,
                           detail="unreadable record: not a record")
    job = record.get("env_slurm_job_id", "")
    if record.get("env_slurm_array_task_id"):
        job = f"{record.get('env_slurm_array_job_id')}_{record['env_slurm_array_task_id']}"
    host = record.get("env_slurm_job_nodelist") or record.get("host", "")
    if record.get("status") == RecordStatus.OK:
        return PointStatus(notebook.stem, str(record.get("notebook", "")), PointState.DONE, str(job),
                           done_detail(record, str(host)), flags=tuple(flags.record_flags(record)))
    return PointStatus(notebook.stem, str(record.get("notebook", "")), PointState.FAILED, str(job),
                       str(record.get("error", "")))


def done_detail(record: Mapping[str, object], host: str) -> str:
    """A finished run's figure as people read it: ``65,240 voxels/s on node1``
    (:func:`benchlib.formatting.number`: never ``6.524e+04``)."""
    speed = flags.number(record.get("throughput"))
    shown = formatting.number(speed) if speed is not None else "no figure"
    return f"{shown} {record.get('unit', '')} on {host}".replace("  ", " ").strip()


def _write_failed(campaign_dir: Path, name: str, points: dict[str, dict], state: slurm.JobState,
                  error: str) -> None:
    """Write the failed sidecar of a point whose job ended (or was cancelled) without one."""
    target = campaign_dir / f"{name}.ipynb"
    point = points.get(name, {})
    parent, task = slurm.split_job_id(state.job_id)
    # an array task's own SLURM_JOB_ID is not known from outside it
    record = failed_record(point.get("parameters", {}), error,
                           notebook=point.get("notebook", ""), repeat=point.get("repeat", 0),
                           env_slurm_job_id="" if task else parent,
                           env_slurm_array_job_id=parent if task else "",
                           env_slurm_array_task_id=task,
                           env_slurm_job_nodelist=state.nodes, slurm_state=state.state)
    if keep_ok_result(target, record) is not None:
        return
    partials = sorted((campaign_dir / PARTIAL).glob(f"{glob.escape(name)}.*/{glob.escape(target.name)}"),
                      key=lambda p: p.stat().st_mtime)
    complete = [p for p in partials if is_complete_notebook(p)]
    if complete:  # what the job got to before it was stopped, for its error cell
        complete[-1].replace(target)
    write_sidecar(target, record)


def _record_ended_job(campaign_dir: Path, name: str, entry: dict, points: dict[str, dict],
                      state: slurm.JobState) -> str:
    """Write the failed sidecar of a job that ended without one; return its error text."""
    log = entry.get("stderr", "")
    error = f"job {state.job_id} {state.describe()}"
    if state.phase == JobPhase.UNKNOWN:
        error = f"job {state.job_id} left the queue without a result"
    error += f"; log: {log}" if log else ""
    _write_failed(campaign_dir, name, points, state, error)
    return error


def fail_blocked(campaign_dir: Path, point: PointStatus) -> PointStatus:
    """Cancel the queued job of ``point`` that Slurm will never start (``point.blocked``) and
    record the point failed with the reason; a job that started meanwhile is left to run."""
    complaint = slurm.cancel_pending(point.job_id)
    now = slurm.query_states([point.job_id]).get(point.job_id)
    if now is not None and now.phase == JobPhase.RUNNING:
        return replace(point, status=PointState.RUNNING, detail=now.describe(), blocked="")
    error = (f"job {point.job_id} {point.detail}; benchlib cancelled it "
             + (f"(scancel failed: {complaint})" if complaint else "(scancel)"))
    state = slurm.JobState(point.job_id, JobPhase.ENDED, "CANCELLED")
    _write_failed(Path(campaign_dir), point.name, read_points(Path(campaign_dir)), state, error)
    return replace(point, status=PointState.FAILED, detail=error, blocked="")


def campaign_status(campaign_dir: Path, names: list[str] | None = None,
                    record_ended: bool = True) -> list[PointStatus]:
    """Where each point of the campaign stands (all points, or ``names``).

    Asks the scheduler about points whose jobs have no sidecar yet, before looking at the
    sidecars, so a job that finishes in between is not mistaken for one that died. Jobs that
    ended without a sidecar get a failed one (``record_ended``). A queued job that Slurm will
    never start (:func:`benchlib.execute.slurm_pending.explain_pending`) stays ``pending``, with the
    reason explained in ``detail`` and ``blocked``.
    """
    campaign_dir = Path(campaign_dir)
    if campaign_dir.exists() and not campaign_dir.is_dir():
        raise InputError(f"{str(campaign_dir)!r} is a file, not a campaign folder")
    if not campaign_dir.is_dir():
        raise FileNotFoundError(f"campaign folder {str(campaign_dir)!r} does not exist")
    points = read_points(campaign_dir)
    jobs = read_jobs(campaign_dir)
    found = {p.stem for p in campaign_dir.glob("*.json")}
    wanted = names if names is not None else list(dict.fromkeys([*points, *sorted(found)]))
    open_jobs = {name: jobs[name] for name in wanted
                 if name in jobs and not sidecar_path(campaign_dir / f"{name}.ipynb").is_file()}
    states = slurm.query_states(
        [entry["job_id"] for entry in open_jobs.values()],
        {entry["job_id"]: [Path(entry[k]) for k in ("stderr", "stdout") if entry.get(k)]
         for entry in open_jobs.values()})
    for job_id, why in slurm_pending.explain_pending(states).items():
        states[job_id] = replace(states[job_id], blocked=why)
    table = []
    for name in wanted:
        notebook_name = points.get(name, {}).get("notebook", "")
        finished = _finished(campaign_dir / f"{name}.ipynb")
        if finished is not None:
            table.append(replace(finished, notebook=finished.notebook or notebook_name,
                                 job_id=finished.job_id or jobs.get(name, {}).get("job_id", "")))
            continue
        if name not in open_jobs:
            holder = point_holder(campaign_dir, name)
            table.append(PointStatus(name, notebook_name, PointState.RUNNING, "",
                                     f"running: {holder}")
                         if holder else PointStatus(name, notebook_name, PointState.PENDING, "",
                                                    "not started"))
            continue
        state = states[open_jobs[name]["job_id"]]
        if state.phase in (JobPhase.PENDING, JobPhase.RUNNING):
            table.append(PointStatus(name, notebook_name, PointState(state.phase), state.job_id,
                                     state.describe(), state.blocked))
        elif record_ended:
            error = _record_ended_job(campaign_dir, name, open_jobs[name], points, state)
            table.append(PointStatus(name, notebook_name, PointState.FAILED, state.job_id, error))
        else:
            table.append(PointStatus(name, notebook_name, PointState.FAILED, state.job_id,
                                     state.describe()))
    return table


def format_status(campaign_dir: Path, table: list[PointStatus]) -> str:
    """The status table as text: a count line, then one line per point (a flagged run's
    figure marked ``⚠ contended, short``), then what each flag raised means, once."""
    counts = {s: sum(p.status == s for p in table) for s in LEDGER_STATES}
    lines = [f"{campaign_dir}: {len(table)} point{'' if len(table) == 1 else 's'}: "
             + ", ".join(f"{n} {s}" for s, n in counts.items())]
    width = max((len(p.name) for p in table), default=0)
    lines += [_point_line(point, width) for point in table]
    raised = {name for point in table for name in point.flags}
    lines += [_fitted(f"⚠ {name}: {flags.FLAGS[name]}", "    ")
              for name in flags.FLAGS if name in raised]
    return "\n".join(lines)


def _point_line(point: PointStatus, width: int) -> str:
    """One point's line of the status table, its detail wrapped under itself."""
    job = f"job {point.job_id}" if point.job_id else ""
    marked = f" ⚠ {', '.join(point.flags)}" if point.flags else ""
    start = f"  {point.status:8} {point.name:{width}}  {job:12} "
    return _fitted(f"{start}{point.detail}{marked}".rstrip(), " " * min(len(start), 40))


def _fitted(line: str, indent: str) -> str:
    """``line`` wrapped to the terminal (:func:`benchlib.formatting.terminal_width`), its
    continuations set in by ``indent``."""
    return textwrap.fill(line, formatting.terminal_width(), subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=False,
                         drop_whitespace=True)


def fail_blocked_points(campaign_dir: Path, table: list[PointStatus], seen: dict[str, float],
                        grace_s: float) -> list[PointStatus]:
    """The table with the points whose jobs have waited ``grace_s`` on a reason Slurm never
    starts them for cancelled and failed (``seen``: job id -> when first seen so, kept between
    calls). The grace covers reasons that settle: a job to ``short`` with too long a time limit
    reads PartitionConfig for a moment, then PartitionTimeLimit."""
    now = time.monotonic()
    updated = []
    for point in table:
        if not point.blocked:
            seen.pop(point.job_id, None)  # the grace starts again if the reason comes back
        elif now - seen.setdefault(point.job_id, now) >= grace_s:
            point = fail_blocked(campaign_dir, point)
        updated.append(point)
    return updated


def wait(campaign_dir: Path, names: list[str], poll_s: float = 10.0, progress: bool = True,
         timeout_s: float | None = None, blocked_grace_s: float = 15.0) -> list[PointStatus]:
    """Poll until none of ``names`` is pending or running; a progress bar counts finished points
    (in a log, a plain line now and then: :mod:`benchlib.progress`).

    A queued job that Slurm will never start (``PartitionConfig``, ``PartitionTimeLimit``, ...:
    :mod:`benchlib.execute.slurm_pending`) is cancelled and its point recorded failed with the reason,
    once that reason has stood for ``blocked_grace_s``.
    """
    from benchlib import progress as shown

    start = time.monotonic()
    blocked_since: dict[str, float] = {}
    bar = shown.bar(total=len(names), desc=campaign_dir.name, unit="point", enabled=progress)
    while True:
        table = campaign_status(campaign_dir, names)
        table = fail_blocked_points(campaign_dir, table, blocked_since, blocked_grace_s)
        finished = [p for p in table if p.status in (PointState.DONE, PointState.FAILED)]
        bar.set_postfix({s: sum(p.status == s for p in table)
                         for s in LEDGER_STATES}, refresh=True)
        bar.update(len(finished) - bar.n)  # redrawn on a terminal, a line now and then in a log
        if len(finished) == len(table):
            bar.close()
            return table
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            bar.close()
            left = len(table) - len(finished)
            raise TimeoutError(f"{left} point{'' if left == 1 else 's'} still queued or running "
                               f"after {timeout_s:.0f} s")
        time.sleep(poll_s)


def now_text() -> str:
    """The current UTC time, ISO 8601, for ledger entries."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
