"""``benchlib diagnose``'s campaign: the ladder planned (:mod:`benchlib.inputs.diagnose_plan`)
and run as one campaign through the normal sweep and its executor
(:meth:`benchlib.execute.executor.Executor.submit_and_wait`: here, or as Slurm job arrays
waited for), so that it gets the ledger, the locks, resuming (a second run skips the points
already done) and Slurm. Analysing it is :mod:`benchlib.analysis.diagnose`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchlib import formatting
from benchlib.errors import RecordError
from benchlib.execute.executor import executor_for
from benchlib.execute.sweep import PointOutcome, point_status, skip_reason
from benchlib.inputs.diagnose_plan import (
    Plan,
    check_campaign,
    plan,
    request_from,
    require_device,
    sweep,
    write_plan,
)
from benchlib.inputs.executors import LocalExecutor, Settings
from benchlib.records.results import read_record
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


def points_left(plan_: Plan, outputs: Path) -> list[str]:
    """The rung names of the points of ``plan_`` that a run will execute: neither done nor
    failed yet in ``outputs/<campaign>`` (failed points are skipped, as in every sweep)."""
    campaign_dir = outputs / plan_.campaign
    return [name for name, point in plan_.points()
            if not skip_reason(point_status(campaign_dir / f"{point.name}.ipynb"), False, False)]


def run_ladder(plan_: Plan, outputs: Path, executor: Settings | None = None,
               force: bool = False, retry_failed: bool = False,
               say: Callable[[str], None] | None = print) -> Path:
    """Run every point of ``plan_`` not done yet into ``outputs/<campaign>`` (the plan is kept
    there first) with ``executor`` (default: here); ``say`` gets one line per point as it
    finishes here, and the executor's own lines. Returns the campaign folder."""
    campaign_dir = outputs / plan_.campaign
    check_campaign(plan_, campaign_dir)
    campaign_dir.mkdir(parents=True, exist_ok=True)
    ladder = sweep(plan_, write_plan(plan_, campaign_dir), executor)
    done = [0]

    def report(outcome: PointOutcome) -> None:
        done[0] += 1
        if say:
            say(f"[{done[0]}/{len(ladder.points)}] {outcome.point.label}: "
                f"{describe_outcome(outcome, campaign_dir)}")

    executor_for(ladder.spec.executor).submit_and_wait(
        ladder, outputs, force=force, retry_failed=retry_failed, progress=say is not None,
        say=say, on_point=report)
    return campaign_dir


def run(model: str = "resnet50", data_dir: str | Path = "", outputs: str | Path = "outputs",
        executor: Settings | None = None, say: Callable[[str], None] | None = print,
        **options: object) -> Path:
    """Plan the ladder for ``model`` on ``data_dir`` (``options``: the other
    :class:`~benchlib.inputs.diagnose_plan.DiagnoseRequest` fields), say what is about to run
    and run it with ``executor`` (default: here); the campaign folder. Relative paths are taken
    from the current folder."""
    executor = executor or LocalExecutor()
    folder = str(Path(data_dir).expanduser().absolute()) if data_dir else ""
    ladder = plan(request_from({"model": model, "data_dir": folder, **options}),
                  executor.runs_here)
    require_device(ladder, executor.runs_here)
    outputs = Path(outputs).absolute()
    if say:
        say(describe_plan(ladder, points_left(ladder, outputs)))
    return run_ladder(ladder, outputs, executor, say=say)


def describe_plan(ladder: Plan, left: list[str] | None = None) -> str:
    """What is about to run, in one line; ``left`` (the rung names of the points not done yet,
    None: all) says how many points are left on a resumed ladder and their estimate."""
    runs = ladder.repeats * (len(ladder.rungs) - 1)
    text = (f"diagnose {ladder.model} {ladder.benchmark} on {ladder.target} (campaign "
            f"{ladder.campaign}): the node probe and {len(ladder.rungs) - 1} rungs x "
            f"{ladder.repeats} repeats = {runs} runs of about {ladder.run_time_s:g} s each "
            f"(batch {ladder.batch_size}, {ladder.image_size} px, workers "
            f"{', '.join(map(str, ladder.worker_counts))}); ")
    total = runs + 1
    if left is None or len(left) == total:
        return text + f"about {_minutes(ladder.estimate_s)} in all"
    if not left:
        return text + f"all {total} points ran before: nothing left to run"
    seconds = ladder.estimate_of(sum(name != "probe" for name in left), "probe" in left)
    return text + (f"{total - len(left)} of {total} points ran before, {len(left)} left: "
                   f"about {_minutes(seconds)}")


def _minutes(seconds: float) -> str:
    """``3 min``, or ``under a minute``."""
    return f"{seconds / 60:.0f} min" if seconds >= 60 else "under a minute"
