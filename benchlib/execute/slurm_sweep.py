"""Sweeps on a SLURM cluster: the points as job arrays through submitit, one job per point.

Each job runs :func:`benchlib.execute.sweep.execute_point` (papermill) on the first node of its
allocation, exactly as a local sweep would; points with several devices start their ranks with
torchrun from there, points with several nodes with srun across the allocation
(:mod:`benchlib.run.launch`). Points with the same request (nodes, GPUs, CPUs, memory) share one
array. Slurm's warning before the time limit (``USR2``, ``signal_delay_s`` ahead) stops the
point and records it failed with the reason; a job killed without warning (out of memory, node
failure) is recorded from the scheduler's state by :func:`benchlib.execute.campaign.campaign_status`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import shlex
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchlib.errors import (
    ConfigError,
    Preempted,
    RequestTooLarge,
    SubmissionError,
    TimeLimitReached,
)
from benchlib.execute import campaign, job_start, slurm, slurm_limits
from benchlib.execute.locks import campaign_lock, prepare_campaign_dir
from benchlib.inputs.executors import SlurmExecutor
from benchlib.inputs.params import Point
from benchlib.measure.environment import job_ids_from_env
from benchlib.records.build import failed_record
from benchlib.records.store import sidecar_path, write_json_atomic
from benchlib.vocabulary import PointState


@dataclass
class Submission:
    """What a SLURM sweep submitted: point name -> job id, and the points left alone.
    ``points`` are the sweep's points as submitted (one per node for fleet runs)."""

    points: list[Point] = field(default_factory=list)
    jobs: dict[str, str] = field(default_factory=dict)
    arrays: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def _warning_handler(time_min: int, signal_delay_s: int, warned: list[str]):
    """The USR2 handler: note the reason in ``warned`` and raise it where the job stands."""
    start = time.time()

    def handler(signum: int, frame: object) -> None:
        elapsed = time.time() - start
        limit = time_min * 60
        if elapsed >= limit - signal_delay_s - 120:
            warned.append(
                f"time limit: Slurm warned (USR2, up to {signal_delay_s} s ahead) that the job's "
                f"{time_min} min time limit was near, after {elapsed:.0f} s; the point was stopped")
            raise TimeLimitReached(warned[-1])
        warned.append(f"preempted: Slurm's warning came after {elapsed:.0f} s of {time_min} min")
        raise Preempted(warned[-1])

    return handler


def run_point_job(point, target: Path, cell_timeout_s: int | None, base_dir: Path,
                  notebook_dir: Path, time_min: int, signal_delay_s: int) -> str:
    """What each array task runs: the point through papermill; returns its status.

    Slurm's warning (USR2) stops the point with the reason. If Slurm terminates the job
    instead (SIGTERM: time limit without warning, scancel, preemption), a failed point's error
    is prefixed with the reason slurmstepd wrote into the job's log.
    """
    import submitit

    from benchlib.execute.sweep import execute_point, point_context

    terminated: list[int] = []
    warned: list[str] = []
    # Slurm sends SIGCONT just before each signal; submitit would log it, and an exception
    # raised by the USR2 handler inside that logging call would be swallowed by logging
    signal.signal(signal.SIGCONT, signal.SIG_DFL)
    signal.signal(signal.SIGUSR2, _warning_handler(time_min, signal_delay_s, warned))
    signal.signal(signal.SIGTERM, lambda signum, frame: terminated.append(signum))
    try:
        # held since the job started (job_start): a warning that came early is raised here
        signal.pthread_sigmask(signal.SIG_UNBLOCK, job_start.HELD_SIGNALS)
        outcome = execute_point(point, target, cell_timeout_s, base_dir, notebook_dir,
                                context=job_ids_from_env())
    except Exception:
        # the warning can land anywhere, e.g. inside an import that wraps the exception in its
        # own (lark's VisitError while papermill imports): the noted reason is what counts
        if not warned:
            raise
        record = failed_record(point.parameters, warned[0],
                               **point_context(point, job_ids_from_env()))
        write_json_atomic(sidecar_path(target), record)
        return PointState.FAILED
    if warned and outcome.status == PointState.FAILED and warned[0] not in outcome.error:
        _prefix_error(target, warned[0])
    if outcome.status == PointState.FAILED:
        # SIGTERM seen, or slurmstepd's "CANCELLED ... DUE TO TIME LIMIT" already in the log:
        # the kernel may die of Slurm's signal before this process notes its own
        paths = submitit.JobEnvironment().paths
        logged = slurm.reason_from_log([paths.stderr, paths.stdout])
        if terminated or logged:
            state = logged or "CANCELLED"
            _prefix_error(target, f"{state}: {slurm.FINAL_REASONS[state]} (Slurm sent SIGTERM)",
                          slurm_state=state)
    return outcome.status


def _prefix_error(target: Path, reason: str, **columns: object) -> None:
    """Put why the job stopped in front of a failed point's error (and set ``columns``)."""
    sidecar = sidecar_path(target)
    record = json.loads(sidecar.read_text())
    record.update(columns, error=f"{reason}; the notebook then failed with {record.get('error', '')}")
    write_json_atomic(sidecar, record)


def _job_entry(job, request: dict, folder: Path) -> dict:
    return {"job_id": job.job_id, "submitted": campaign.now_text(), "folder": str(folder),
            "stdout": str(job.paths.stdout), "stderr": str(job.paths.stderr),
            "partition": request.get("partition", ""), "time_min": request["time"]}


def _retire_sidecars(campaign_dir: Path, points: list) -> dict[Path, Path]:
    """Move the sidecars of points about to run again (earlier failures, or --force) into the
    ledger, so their status is the new job's; returns where each went, to undo on failure."""
    retired = {}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for point in points:
        sidecar = sidecar_path(campaign_dir / f"{point.name}.ipynb")
        if sidecar.is_file():
            kept = campaign.ledger_dir(campaign_dir) / "retired" / f"{point.name}-{stamp}.json"
            kept.parent.mkdir(parents=True, exist_ok=True)
            sidecar.replace(kept)
            retired[sidecar] = kept
    return retired


def select_points(sweep, campaign_dir: Path, force: bool, retry_failed: bool) -> tuple[list, dict]:
    """Points to submit, and the others with the reason they are left alone."""
    from benchlib.execute.sweep import skip_reason

    table = {p.name: p for p in campaign.campaign_status(campaign_dir, [p.name for p in sweep.points])}
    chosen, skipped = [], {}
    for point in sweep.points:
        state = table[point.name]
        reason = skip_reason(state.status, force, retry_failed)
        if state.status in (PointState.RUNNING, PointState.PENDING) and state.job_id:
            reason = f"{state.status} as job {state.job_id}"
        if reason:
            skipped[point.name] = reason
        else:
            chosen.append(point)
    return chosen, skipped


def _requests(sweep, executor: SlurmExecutor, points: list,
              pinned: dict[str, str] | None = None) -> dict[str, dict]:
    """Point name -> its submission parameters (GPUs only where the partition has them;
    a fleet point's job pinned to its node)."""
    has_gpus = slurm.partition_has_gpus(executor.partition) if points else True
    pinned = pinned or {}
    return {p.name: slurm.submission_parameters(executor, p.parameters, f"benchlib-{sweep.campaign}",
                                                has_gpus, pinned.get(p.name))
            for p in points}


def _node_slug(node: str) -> str:
    return "".join(ch if ch.isalnum() or ch in ".-" else "-" for ch in node)


def pin_to_nodes(points: list[Point], executor: SlurmExecutor
                 ) -> tuple[list[Point], dict[str, str]]:
    """Fleet runs (``executor.nodes``): one point per point and node, named
    ``<point label>-on-<node>``, and point name -> node. Without ``executor.nodes`` the points
    come back as they are. Points over several nodes are refused."""
    if executor.nodes is None:
        return list(points), {}
    wide = [p.name for p in points if int(p.parameters.get("num_nodes") or 1) > 1]
    if wide:
        raise ConfigError(f"executor.nodes runs each point on one node; {', '.join(wide[:3])} "
                          "ask for several (num_nodes)")
    nodes = slurm.fleet_nodes(executor)
    pinned, copies = {}, []
    for point in points:
        for node in nodes:
            copy = dataclasses.replace(point, label=f"{point.label}-on-{_node_slug(node)}")
            pinned[copy.name] = node
            copies.append(copy)
    return copies, pinned


def submit_sweep(sweep, executor: SlurmExecutor, outputs: Path, force: bool = False,
                 retry_failed: bool = False, base_dir: Path | None = None) -> Submission:
    """Submit the points that are not done (nor queued) as job arrays; return the job ids.

    The campaign's lock is held while points are chosen and submitted (CampaignBusyError
    when another sweep holds it). A partition sinfo does not list raises InputError naming the
    partitions there (:func:`benchlib.execute.slurm.check_partition`). Points that ask for more
    than any node of the partition has (or its time or node limit) raise RequestTooLarge
    before anything is submitted or written.
    An sbatch refusal raises SubmissionError with sbatch's message; nothing of that submission
    is left behind and no point changes state. With ``executor.nodes`` the points are first
    replaced by one per node (:func:`pin_to_nodes`), each job pinned to its node; the
    submission's ``points`` are those.
    """
    base_dir = base_dir or Path.cwd()
    campaign_dir = (outputs / sweep.campaign).resolve()
    slurm.check_partition(executor.partition)  # before anything asks sinfo about it
    points, pinned = pin_to_nodes(sweep.points, executor)
    sweep = dataclasses.replace(sweep, points=points)
    chosen, skipped = (select_points(sweep, campaign_dir, force, retry_failed)
                       if campaign_dir.is_dir() else (list(sweep.points), {}))
    requests = _requests(sweep, executor, chosen, pinned)
    partition = slurm_limits.read_partition(executor.partition) if chosen else None
    problems = slurm_limits.refusals(chosen, executor, requests, partition)
    if problems:
        raise RequestTooLarge("\n".join(problems))

    made = not campaign_dir.exists()  # a refused first submission leaves no folder behind
    prepare_campaign_dir(campaign_dir)
    try:
        with campaign_lock(campaign_dir):  # one submitter at a time; choose again under it
            chosen, skipped = select_points(sweep, campaign_dir, force, retry_failed)
            requests = _requests(sweep, executor, chosen, pinned)
            campaign.remember_points(campaign_dir, sweep.points)
            return _submit_groups(sweep, executor, campaign_dir, chosen, requests, base_dir,
                                  Submission(points=points, skipped=skipped))
    except SubmissionError as error:
        if made and not any(campaign_dir.glob("*.ipynb")):
            shutil.rmtree(campaign_dir, ignore_errors=True)
        notes = slurm_limits.refusals(chosen, executor, requests, partition, memory=True)
        if notes:
            raise SubmissionError("\n".join([str(error), *notes])) from None
        raise


def _submit_groups(sweep, executor: SlurmExecutor, campaign_dir: Path, chosen: list,
                   requests: dict[str, dict], base_dir: Path, submission: Submission) -> Submission:
    """Submit ``chosen`` as one job array per distinct request; record the jobs in the ledger."""
    import submitit

    groups: dict[str, list] = {}
    for point in chosen:
        groups.setdefault(json.dumps(requests[point.name], sort_keys=True), []).append(point)
    entries: dict[str, dict] = {}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for index, (key, points) in enumerate(groups.items()):
        request = json.loads(key)
        folder = campaign.ledger_dir(campaign_dir) / "slurm" / f"{stamp}-{index}"
        retired = _retire_sidecars(campaign_dir, points)
        try:
            # exec: python becomes the batch shell, so Slurm's warning (B:USR2) reaches it
            # job_start holds Slurm's warning until run_point_job can act on it
            ex = submitit.SlurmExecutor(folder=folder / "%j", python=(
                f"exec {shlex.quote(sys.executable)} -u -m {job_start.__name__}"))
            ex.update_parameters(**request)
            targets = [campaign_dir / f"{p.name}.ipynb" for p in points]
            with contextlib.redirect_stderr(io.StringIO()):  # sbatch's message goes in the error
                jobs = ex.map_array(
                    run_point_job, points, targets, [executor.cell_timeout_s] * len(points),
                    [base_dir] * len(points), [sweep.notebook_dir] * len(points),
                    [executor.time_min] * len(points), [executor.signal_delay_s] * len(points))
        except (submitit.core.utils.FailedJobError, ValueError) as error:
            shutil.rmtree(folder, ignore_errors=True)
            for sidecar, kept in retired.items():
                kept.replace(sidecar)
            if entries:
                campaign.remember_jobs(campaign_dir, entries)
            raise SubmissionError(str(error).strip()) from None
        submission.arrays.append(slurm.split_job_id(jobs[0].job_id)[0])
        for point, job in zip(points, jobs, strict=True):
            entries[point.name] = _job_entry(job, request, folder)
            submission.jobs[point.name] = job.job_id
    if entries:
        campaign.remember_jobs(campaign_dir, entries)
    return submission
