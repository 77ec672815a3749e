"""Running a diagnose plan (:mod:`benchlib.inputs.diagnose_plan`) as one campaign through the
normal sweep: locally (:func:`benchlib.execute.sweep.run_sweep`) or as Slurm job arrays
(:func:`benchlib.execute.slurm_sweep.submit_sweep`, then waiting for them), so that it gets the
ledger, the locks, resuming (a second run skips the points already done) and Slurm."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchlib import formatting
from benchlib.execute.sweep import PointOutcome, point_status, run_sweep, skip_reason
from benchlib.inputs.diagnose_plan import Plan, check_campaign, sweep, write_plan
from benchlib.inputs.executors import LocalExecutor, SlurmExecutor
from benchlib.records.results import read_record
from benchlib.records.store import RecordError
from benchlib.vocabulary import PointState


def describe_outcome(outcome: PointOutcome, campaign_dir: Path) -> str:
    """``ok 35.2 images/s (8.1 s)``, ``failed: <error>`` or ``skipped (done before)``."""
    if outcome.status == PointState.SKIPPED:
        return f"skipped ({outcome.error or 'done before'})"
    if outcome.status == PointState.FAILED:
        return f"failed: {outcome.error.splitlines()[0] if outcome.error else 'no record'}"
    try:
        record = read_record(campaign_dir / f"{outcome.point.name}.ipynb") or {}
    except RecordError:
        record = {}
    speed = record.get("throughput")
    shown = (f" {formatting.number(float(speed))} {record.get('unit', '')}"
             if isinstance(speed, int | float) else "")
    return f"ok{shown} ({outcome.seconds:.0f} s)"


def points_left(plan: Plan, outputs: Path) -> list[str]:
    """The rung names of the points of ``plan`` that a run will execute: neither done nor
    failed yet in ``outputs/<campaign>`` (failed points are skipped, as in every sweep)."""
    campaign_dir = outputs / plan.campaign
    return [name for name, point in plan.points()
            if not skip_reason(point_status(campaign_dir / f"{point.name}.ipynb"), False, False)]


def run_ladder(plan: Plan, outputs: Path, executor: LocalExecutor | SlurmExecutor | None = None,
               force: bool = False, retry_failed: bool = False,
               say: Callable[[str], None] | None = print) -> Path:
    """Run every point of ``plan`` not done yet into ``outputs/<campaign>`` (the plan is kept
    there first); ``say`` gets one line per point as it finishes. Returns the campaign folder."""
    campaign_dir = outputs / plan.campaign
    check_campaign(plan, campaign_dir)
    campaign_dir.mkdir(parents=True, exist_ok=True)
    ladder = sweep(plan, write_plan(plan, campaign_dir), executor)
    total = len(ladder.points)
    if executor is not None and executor.kind == "slurm":
        _on_slurm(ladder, executor, outputs, force, retry_failed, say)
        return campaign_dir
    done = [0]

    def report(outcome: PointOutcome) -> None:
        done[0] += 1
        if say:
            say(f"[{done[0]}/{total}] {outcome.point.label}: "
                f"{describe_outcome(outcome, campaign_dir)}")

    run_sweep(ladder, outputs, force=force, retry_failed=retry_failed, progress=False,
              on_point=report)
    return campaign_dir


def _on_slurm(ladder, executor: SlurmExecutor, outputs: Path, force: bool, retry_failed: bool,
              say: Callable[[str], None] | None) -> None:
    """Submit the ladder as job arrays and wait for every point."""
    from benchlib.execute.campaign import format_status, wait
    from benchlib.execute.slurm_sweep import submit_sweep

    submission = submit_sweep(ladder, executor, outputs, force=force, retry_failed=retry_failed)
    campaign_dir = (outputs / ladder.campaign).resolve()
    if say:
        say(f"submitted {len(submission.jobs)} of {len(submission.points)} points as job "
            f"array(s) {', '.join(submission.arrays) or '-'}; waiting for them")
    table = wait(campaign_dir, [p.name for p in ladder.points], poll_s=executor.poll_s,
                 progress=say is not None)
    if say:
        say(format_status(campaign_dir, table))
