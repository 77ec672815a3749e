"""``benchlib diagnose``'s campaign: the ladder planned (:mod:`benchlib.diagnosis.plan`)
and run as one campaign through the normal sweep and its executor
(:meth:`benchlib.execute.executor.Executor.submit_and_wait`: here, or as Slurm job arrays
waited for), so that it gets the ledger, the locks, resuming (a second run skips the points
already done) and Slurm. Analysing it is :mod:`benchlib.diagnosis.analysis`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchlib.diagnosis.plan import (
    Plan,
    check_campaign,
    plan,
    request_from,
    require_device,
    sweep,
    write_plan,
)
from benchlib.execute.executor import executor_for
from benchlib.execute.sweep import PointOutcome, describe_outcome, point_status, skip_reason
from benchlib.inputs.executors import LocalExecutor, Settings
from benchlib.inputs.params import Point


def _ran(plan_: Plan, campaign_dir: Path, point: Point) -> bool:
    """Whether ``point`` of ``plan_`` ran before (done or failed: either way it is not run
    again, and it spent its share of the budget)."""
    return bool(skip_reason(point_status(campaign_dir / f"{point.name}.ipynb"), False, False))


def points_left(plan_: Plan, outputs: Path) -> list[str]:
    """The rung names of the points of ``plan_``'s initial round that a run will execute:
    neither done nor failed yet in ``outputs/<campaign>`` (failed points are skipped, as in
    every sweep)."""
    campaign_dir = outputs / plan_.campaign
    return [name for name, point in plan_.points() if not _ran(plan_, campaign_dir, point)]


def repeats_ran(plan_: Plan, outputs: Path) -> dict[str, int]:
    """Rung name -> how many of its points ran before (done or failed), extra rounds
    included."""
    campaign_dir = outputs / plan_.campaign
    return {rung.name: sum(_ran(plan_, campaign_dir, plan_.point(rung.name, repeat))
                           for repeat in range(plan_.most_repeats))
            for rung in plan_.rungs[1:]}


def extra_round(plan_: Plan, outputs: Path, names: list[str]) -> list[Point]:
    """One more run of each rung in ``names``, in that order (interleaved: one after the
    other, never one rung many times): each rung's first repeat (from ``plan_.repeats`` on)
    that has not run; a rung whose every repeat ran is left out."""
    campaign_dir = outputs / plan_.campaign
    order = len(plan_.points()) + sum(repeats_ran(plan_, outputs).values())
    found = []
    for name in dict.fromkeys(names):
        for repeat in range(plan_.repeats, plan_.most_repeats):
            point = plan_.point(name, repeat, order + len(found))
            if not _ran(plan_, campaign_dir, point):
                found.append(point)
                break
    return found


def run_ladder(plan_: Plan, outputs: Path, executor: Settings | None = None,
               force: bool = False, retry_failed: bool = False,
               say: Callable[[str], None] | None = print,
               points: list[Point] | None = None) -> Path:
    """Run every point of ``plan_``'s initial round (or ``points``, a round of extra repeats)
    not done yet into ``outputs/<campaign>`` (the plan is kept there first) with ``executor``
    (default: here); ``say`` gets one line per point as it finishes here, and the executor's
    own lines. Returns the campaign folder."""
    campaign_dir = outputs / plan_.campaign
    check_campaign(plan_, campaign_dir)
    campaign_dir.mkdir(parents=True, exist_ok=True)
    ladder = sweep(plan_, write_plan(plan_, campaign_dir), executor, points)
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


#: Given the campaign folder and the runs the budget still holds, the rungs of the next round
#: of extra repeats (none: stop); :func:`benchlib.diagnosis.api.diagnose` passes the analysis's choice.
Choose = Callable[[Path, int], list[str]]


def run_rounds(plan_: Plan, outputs: Path, choose: Choose, executor: Settings | None = None,
               say: Callable[[str], None] | None = print) -> int:
    """Rounds of extra repeats of ``plan_`` (sequential repeats) while ``choose`` names rungs
    and the budget holds runs: each round one run of each chosen rung, one after the other.
    The budget counts every run of the campaign, those of earlier commands too, so running the
    same command again goes on where it stopped and a finished diagnosis runs nothing. Returns
    the rounds run."""
    rounds = 0
    while plan_.adaptive:
        spent = sum(repeats_ran(plan_, outputs).values())
        left = plan_.max_runs - spent
        names = choose(outputs / plan_.campaign, left) if left > 0 else []
        points = extra_round(plan_, outputs, names[:left])
        if not points:
            break
        rounds += 1
        if say:
            say(f"round {rounds} of extra repeats ({spent} of {plan_.max_runs} runs spent): "
                f"{', '.join(p.label.split('-', 1)[1] for p in points)}")
        run_ladder(plan_, outputs, executor, say=say, points=points)
        if sum(repeats_ran(plan_, outputs).values()) <= spent:
            break  # nothing ran (held elsewhere): stop rather than ask again
    return rounds


def run(model: str = "resnet50", data_dir: str | Path = "", outputs: str | Path = "outputs",
        executor: Settings | None = None, say: Callable[[str], None] | None = print,
        choose: Choose | None = None, **options: object) -> Path:
    """Plan the ladder for ``model`` on ``data_dir`` (``options``: the other
    :class:`~benchlib.diagnosis.plan.DiagnoseRequest` fields), say what is about to run
    and run it with ``executor`` (default: here): the initial round, then with ``choose`` the
    rounds of extra repeats (:func:`run_rounds`); the campaign folder. Relative paths are taken
    from the current folder."""
    executor = executor or LocalExecutor()
    folder = str(Path(data_dir).expanduser().absolute()) if data_dir else ""
    ladder = plan(request_from({"model": model, "data_dir": folder, **options}),
                  executor.runs_here)
    require_device(ladder, executor.runs_here)
    outputs = Path(outputs).absolute()
    if say:
        say(describe_plan(ladder, points_left(ladder, outputs),
                          sum(repeats_ran(ladder, outputs).values())))
    campaign_dir = run_ladder(ladder, outputs, executor, say=say)
    if choose is not None:
        run_rounds(ladder, outputs, choose, executor, say)
    return campaign_dir


def describe_plan(ladder: Plan, left: list[str] | None = None, spent: int | None = None) -> str:
    """What is about to run, in one line: the initial round, and with sequential repeats the
    target and the most runs the budget holds; ``left`` (the rung names of the initial round's
    points not done yet, None: all) and ``spent`` (benchmark runs done before) say what is left
    of a resumed ladder and its estimate."""
    runs = ladder.initial_runs
    text = (f"diagnose {ladder.model} {ladder.benchmark} on {ladder.target} (campaign "
            f"{ladder.campaign}): the node probe and {len(ladder.rungs) - 1} rungs x "
            f"{ladder.repeats} {'initial ' if ladder.adaptive else ''}repeats = {runs} runs of "
            f"about {ladder.run_time_s:g} s each (batch {ladder.batch_size}, "
            f"{ladder.image_size} px, workers {', '.join(map(str, ladder.worker_counts))}); ")
    if ladder.adaptive:
        text += (f"then rounds of extra repeats of the steps whose 95 % interval spans more "
                 f"than a factor of {ladder.target_factor:g}, until none does or the budget of "
                 f"{ladder.budget_s:g} s ({ladder.max_runs} runs in all) is spent; ")
    total = runs + 1
    most = max(ladder.max_runs, runs)
    fresh = (left is None or len(left) == total) and not spent
    if fresh:
        least = ladder.estimate_of(runs, probe=True)
        if least > ladder.budget_s:
            return text + (f"about {_minutes(least)}, over the budget of {ladder.budget_s:g} s: "
                           "the least this ladder takes (no extra rounds)")
        return text + (f"about {_minutes(least)} to {_minutes(ladder.estimate_s)} in all"
                       if ladder.adaptive else f"about {_minutes(ladder.estimate_s)} in all")
    left = left or []
    if ladder.adaptive:
        extra = max(0, most - (spent or 0) - sum(name != "probe" for name in left))
        seconds = ladder.estimate_of(most - (spent or 0), "probe" in left)
        done = f"{total - len(left)} of {total} points ran before, {len(left)} left"
        if not left and not extra:
            return text + f"{done}, and every run the budget holds: nothing left to run"
        return text + (f"{done}, then at most {extra} runs of extra rounds while a step is "
                       f"wider than the target: about {_minutes(seconds)} at most")
    if not left:
        return text + f"all {total} points ran before: nothing left to run"
    seconds = ladder.estimate_of(sum(name != "probe" for name in left), "probe" in left)
    return text + (f"{total - len(left)} of {total} points ran before, {len(left)} left: "
                   f"about {_minutes(seconds)}")


def _minutes(seconds: float) -> str:
    """``3 min``, or ``under a minute``."""
    return f"{seconds / 60:.0f} min" if seconds >= 60 else "under a minute"
