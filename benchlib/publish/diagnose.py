"""``benchlib diagnose`` for people: the waterfall as a plot and a table, the answer printed at
the end of a run, and the whole diagnosis from Python (:func:`diagnose`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from benchlib.analysis import diagnose as analysis
from benchlib.inputs.diagnose_plan import Plan
from benchlib.publish import palette
from benchlib.publish.plots import plain, tidy

#: Colours of the waterfall's bars.
COLOURS = {"speed": palette.BASE[0], "loss": palette.FIXED["verdict"]["data-bound"],
           "gain": palette.FIXED["verdict"]["compute-bound"], "unclear": "#bab0ac",
           "unreliable": "#dddddd"}
UNIT = "images/s"


def _percent(value: object) -> str:
    return f"{float(value):.0%}" if pd.notna(value) else "?"


def _change(value: float) -> str:
    """A relative change as ``-57%``; beyond +999 % as ``>+999%`` (an interval that wide says
    only that the repeats disagree)."""
    return ">+999%" if value > 9.99 else f"{value:+.0%}"


def loss_text(row: pd.Series) -> str:
    """``-54.5 images/s, -57% (-59% to -55%)``: a step's change of speed and of the speed
    before it, with the 95 % interval; what it is when not a clear loss."""
    text = f"{-float(row['loss']):+,.1f} {UNIT}, {_change(1 / float(row['ratio']) - 1)}"
    if row["known"]:
        text += (f" ({_change(1 / float(row['high']) - 1)} to "
                 f"{_change(1 / float(row['low']) - 1)})")
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
        if row.known and verdict != "unreliable":
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
    """The waterfall as text columns for a table: step, what runs after it, speeds, loss with
    its interval, ratio and verdict."""
    rows = []
    for _, row in found.steps.iterrows():
        interval = (f"{row['loss_low']:,.1f} to {row['loss_high']:,.1f}" if row["known"] else "-")
        rows.append({"step": row["step"], "then": row["label"],
                     "before": f"{row['upper_speed']:,.1f}", "after": f"{row['lower_speed']:,.1f}",
                     "loss": f"{row['loss']:,.1f}", "loss 95 %": interval,
                     "share": _percent(row["share"]),
                     "share 95 %": (f"{_percent(row['share_low'])} to {_percent(row['share_high'])}"
                                    if row["known"] else "-"),
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
            f"{int(r.workers)}: {r.speed:,.1f}" + (f" ({r.ratio:.2f}x yours, {r.verdict})"
                                                    if pd.notna(r.ratio) else " (yours)")
            for r in found.workers.itertuples()))
    lines += [f"Note: {note}" for note in found.notes]
    return "\n".join(lines)


@dataclass
class Result:
    """What :func:`diagnose` returns: the diagnosis, its campaign folder and its page."""

    diagnosis: analysis.Diagnosis
    campaign_dir: Path
    page: Path | None

    def __str__(self) -> str:
        return answer_text(self.diagnosis)


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
    from benchlib.execute.diagnose import run_ladder
    from benchlib.inputs.diagnose_plan import plan, request_from

    folder = str(Path(data_dir).expanduser().absolute()) if data_dir else ""
    request = request_from({"model": model, "data_dir": folder, **options})
    kind = getattr(executor, "kind", "local")
    ladder = plan(request, kind)
    if say:
        say(describe_plan(ladder))
    campaign_dir = run_ladder(ladder, Path(outputs).absolute(), executor, say=say)
    found = load_diagnosis(campaign_dir)
    page = build_page(campaign_dir) if report else None
    return Result(found, campaign_dir, page)


def describe_plan(ladder: Plan) -> str:
    """What is about to run, in one line."""
    runs = ladder.repeats * (len(ladder.rungs) - 1)
    return (f"diagnose {ladder.model} {ladder.benchmark} on {ladder.target}: the node probe and "
            f"{len(ladder.rungs) - 1} rungs x {ladder.repeats} repeats = {runs} runs of about "
            f"{ladder.run_time_s:g} s each (batch {ladder.batch_size}, {ladder.image_size} px, "
            f"workers {', '.join(map(str, ladder.worker_counts))}); about "
            f"{ladder.estimate_s / 60:.0f} min in all")


def build_page(campaign_dir: Path) -> Path:
    """The campaign's report with the diagnose page (and the node page); the page's path."""
    from benchlib.publish.report import DIAGNOSE, build_report

    index = build_report(campaign_dir, summaries=(DIAGNOSE, "summary_node"), progress=False)
    return index.parent / f"{DIAGNOSE}.html"
