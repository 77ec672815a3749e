"""The waterfall of a ``benchlib diagnose`` campaign as a plot: from the best speed on this
node down to the user's setting, one floating bar per step (shown on the diagnose page)."""

from __future__ import annotations

import matplotlib.pyplot as plt

from benchlib.diagnosis import analysis
from benchlib.diagnosis.text import UNIT, is_wide, loss_text
from benchlib.publish.pages import palette
from benchlib.publish.pages.plots import plain, tidy

#: Colours of the waterfall's bars.
COLOURS = {"speed": palette.BASE[0], "loss": palette.FIXED["verdict"]["data-bound"],
           "gain": palette.FIXED["verdict"]["compute-bound"], "unclear": "#bab0ac",
           "unreliable": "#dddddd"}


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
                "  " + plain(loss_text(row._asdict())), va="center", fontsize=9,
                color="#555555" if verdict == "unreliable" else "black")
        labels.append(plain(f"{row.step}\n{row.label}"))
    user = found.user.speed if found.user else 0.0
    ax.barh(rows - 1, user, color=COLOURS["speed"])
    said = "the best" if not top or user / top <= 1.005 else "the best: faster than it, noise"
    ax.text(user, rows - 1, f"  {user:,.1f} {UNIT} ({user / top:.2f}x {said})", va="center",
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
