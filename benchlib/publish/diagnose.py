"""``benchlib diagnose`` for people: the waterfall as a plot and a table, the answer printed at
the end of a run, and the whole diagnosis from Python (:func:`diagnose`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from benchlib.analysis import diagnose as analysis
from benchlib.analysis.diagnose_text import is_wide, step_change, switch_change
from benchlib.inputs.diagnose_plan import Plan
from benchlib.publish.pages import palette
from benchlib.publish.pages.plots import plain, tidy

#: Colours of the waterfall's bars.
COLOURS = {"speed": palette.BASE[0], "loss": palette.FIXED["verdict"]["data-bound"],
           "gain": palette.FIXED["verdict"]["compute-bound"], "unclear": "#bab0ac",
           "unreliable": "#dddddd"}
UNIT = "images/s"


def loss_text(row: pd.Series) -> str:
    """``-54.5 images/s, -57% (-59% to -55%)``: a step's change of speed and of the speed
    before it, with the 95 % interval (:func:`benchlib.analysis.diagnose_text.step_change`);
    what it is when not a clear loss."""
    text = f"{-float(row['loss']):+,.1f} {UNIT}, {step_change(row)}"
    if row["verdict"] == "unreliable":
        return f"unreliable ({row['unreliable'].split(':')[0]}): {text}"
    if row["verdict"] in ("unknown", "no significant change"):
        return f"{text}, {row['verdict']}"
    return text


def waterfall_plot(found: analysis.Diagnosis) -> plt.Figure:
    """Horizontal waterfall: the best speed on top, one floating bar per step (its loss, with
    the interval of its lower end from the repeats), the user's speed at the bottom; losses
    red, gains green, steps without a verdict grey, unreliable steps hatched."""
    steps = found.steps
    rows = len(steps) + 2
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.75 * rows))
    top = found.best.speed if found.best else 1.0
    labels = [plain(f"best here\n{found.best.rung.label}")]
    ax.barh(0, top, color=COLOURS["speed"])
    ax.text(top, 0, f"  {top:,.1f} {UNIT}", va="center", fontsize=9)
    for i, row in enumerate(steps.itertuples(), start=1):
        verdict = row.verdict
        colour = COLOURS.get(verdict, COLOURS["unclear"])
        left, width = min(row.upper_speed, row.lower_speed), abs(row.loss)
        ax.barh(i, width, left=left, color=colour, hatch="//" if verdict == "unreliable" else "",
                edgecolor="#777777" if verdict == "unreliable" else colour)
        if row.known and verdict != "unreliable" and not is_wide(row.low, row.high):
            lows = sorted((row.upper_speed - row.loss_high, row.upper_speed - row.loss_low))
            ax.errorbar(row.lower_speed, i, xerr=[[row.lower_speed - lows[0]],
                        [lows[1] - row.lower_speed]], color="black", capsize=4, linewidth=1)
        ax.plot([row.upper_speed] * 2, [i - 1.4, i + 0.4], color="#999999", linewidth=0.7,
                linestyle=":")
        ax.text(max(row.upper_speed, row.lower_speed), i,
                "  " + plain(loss_text(pd.Series(row._asdict()))), va="center", fontsize=9,
                color="#555555" if verdict == "unreliable" else "black")
        labels.append(plain(f"{row.step}\n{row.label}"))
    user = found.user.speed if found.user else 0.0
    ax.barh(rows - 1, user, color=COLOURS["speed"])
    ax.text(user, rows - 1, f"  {user:,.1f} {UNIT} ({user / top:.2f}x the best)", va="center",
            fontsize=9)
    labels.append(plain(f"yours\n{found.user.rung.label if found.user else ''}"))
    ax.set_yticks(range(rows), labels, fontsize=9)
    ax.invert_yaxis()
    speeds = [top, user, *steps["upper_speed"], *steps["lower_speed"]]
    ax.set_xlim(0, max(speeds) * 1.7)  # room for the labels right of the bars
    ax.set_xlabel(f"speed ({UNIT})")
    ax.set_title(plain(f"{found.plan.model} {found.plan.benchmark}: from the best speed on this "
                       "node down to your setting"))
    ax.spines[["top", "right"]].set_visible(False)
    return tidy(fig)


def steps_frame(found: analysis.Diagnosis) -> pd.DataFrame:
    """The waterfall as text columns for a table: step, what runs after it, speeds, loss, the
    change with its interval (as on the console and the plot), runs and verdict."""
    rows = []
    for _, row in found.steps.iterrows():
        rows.append({"step": row["step"], "then": row["label"],
                     "before": f"{row['upper_speed']:,.1f}", "after": f"{row['lower_speed']:,.1f}",
                     "loss": f"{row['loss']:,.1f}",
                     "change (95 % interval)": step_change(row),
                     "runs": f"{row['runs_upper']} + {row['runs_lower']}",
                     "verdict": row["verdict"] + (f": {row['unreliable']}" if row["unreliable"]
                                                  else "")})
    return pd.DataFrame(rows)


def answer_text(found: analysis.Diagnosis) -> str:
    """What ``benchlib diagnose`` prints at the end: the paragraph and the waterfall table."""
    lines = [analysis.recommendation(found), ""]
    if found.best is not None:
        lines.append(f"Waterfall ({UNIT}; each step's change, and in % of the speed before it "
                     "with its 95 % interval, Welch t over the repeats):")
        lines.append(f"  best here: {found.best.speed:,.1f} ({found.best.rung.label})")
        for _, row in found.steps.iterrows():
            lines.append(f"  {row['step']:>10}: {loss_text(row)} -> {row['lower_speed']:,.1f} "
                         f"({row['label']})")
        lines.append(f"  yours: {found.user.speed:,.1f} ({found.user.rung.label})")
    if len(found.workers) > 1:
        lines.append("Worker counts: " + "; ".join(
            f"{int(r.workers)}: {r.speed:,.1f}" + (f" ({worker_change(r._asdict())} against "
                                                    f"yours, {r.verdict})"
                                                    if pd.notna(r.ratio) else " (yours)")
            for r in found.workers.itertuples()))
    lines += [f"Note: {note}" for note in found.notes]
    return "\n".join(lines)


def worker_change(row: dict) -> str:
    """A worker count's speed against the user's count, with its interval (``-`` for the
    user's own count)."""
    return switch_change(row) if pd.notna(row["ratio"]) else "-"


@dataclass
class Result:
    """What :func:`diagnose` returns: the diagnosis, its campaign folder and its page."""

    diagnosis: analysis.Diagnosis
    campaign_dir: Path
    page: Path | None

    def __str__(self) -> str:
        return answer_text(self.diagnosis)


    def __repr__(self) -> str:
        return f"<diagnose Result {self.campaign_dir}: {self.diagnosis!r}>"


def load_diagnosis(campaign_dir: str | Path) -> analysis.Diagnosis:
    """The diagnosis of a finished diagnose campaign folder (InputError when it is not one)."""
    from benchlib.errors import InputError
    from benchlib.inputs.diagnose_plan import read_plan
    from benchlib.records.results import load

    plan = read_plan(campaign_dir)
    if plan is None:
        raise InputError(f"{campaign_dir}: not a diagnose campaign (no plan in it)")
    return analysis.diagnose(load(campaign_dir), plan)


def diagnose(model: str = "resnet50", data_dir: str | Path = "", outputs: str | Path = "outputs",
             executor: object = None, report: bool = True, say=print, **options: object) -> Result:
    """Plan, run (locally, or with ``executor`` a Slurm executor) and analyse the ladder for
    ``model`` on ``data_dir``; ``options`` are :class:`benchlib.inputs.diagnose_plan.
    DiagnoseRequest` fields (``num_workers``, ``precision``, ``budget_s``, ...). With
    ``report``, builds the campaign's report page. Relative paths are taken from the current
    folder."""
    from benchlib.execute.diagnose import points_left, run_ladder
    from benchlib.inputs.diagnose_plan import plan, request_from, require_device

    folder = str(Path(data_dir).expanduser().absolute()) if data_dir else ""
    request = request_from({"model": model, "data_dir": folder, **options})
    kind = getattr(executor, "kind", "local")
    ladder = plan(request, kind)
    require_device(ladder, kind)
    if say:
        say(describe_plan(ladder, points_left(ladder, Path(outputs).absolute())))
    campaign_dir = run_ladder(ladder, Path(outputs).absolute(), executor, say=say)
    found = load_diagnosis(campaign_dir)
    page = build_page(campaign_dir) if report else None
    return Result(found, campaign_dir, page)


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


def build_page(campaign_dir: Path) -> Path:
    """The campaign's report with the diagnose page (and the node page); the page's path."""
    from benchlib.publish.report.build import DIAGNOSE, build_report

    index = build_report(campaign_dir, summaries=(DIAGNOSE, "summary_node"), progress=False)
    return index.parent / f"{DIAGNOSE}.html"
