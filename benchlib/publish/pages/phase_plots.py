"""Where each iteration's time goes, as a figure: stacked bars of milliseconds per phase, one
bar per configuration. When the iterations span more than a decade (one cluster's 7 s
iterations beside another's 0.2 s) stacked bars on one linear axis make the short ones
invisible, and on a log axis their segments mean nothing: the figure then has two panels, the
iteration time on a log axis and each phase's share of it."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from benchlib import formatting
from benchlib.publish.pages import palette
from benchlib.publish.pages.axes import log_axis, spans_decades
from benchlib.publish.pages.plots import at_most, plain, text_labels, tidy

#: Largest over smallest iteration a single linear axis shows (beyond it: two panels).
DECADE = 10.0


def _legend_beside(ax: plt.Axes) -> None:
    """The phases' legend right of the axes: never over a bar or an axis label."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="phase",
              title_fontsize=8)


def breakdown_plot(table: pd.DataFrame, label_columns: list[str], title: str = "") -> plt.Figure:
    """Stacked horizontal bars of median milliseconds per phase, one bar per configuration;
    two panels (iteration time on a log axis, each phase's share) when the iteration times
    span more than :data:`DECADE`."""
    phases = [c for c in table.columns if c.startswith("time_") and c != "time_iteration_s"
              and table[c].notna().any()]
    table, shown = at_most(table, table[phases].astype(float).sum(axis=1),
                           "slowest of {total} configurations")
    labels = text_labels(table, label_columns, mark=True)
    data = table[phases].astype(float).fillna(0.0).set_axis(labels)
    data.columns = [c.removeprefix("time_").removesuffix("_s") for c in phases]
    data = data * 1e3
    colours = [palette.colour("phase", p) for p in data.columns]
    heading = plain(title or "Phase breakdown") + shown
    totals = data.sum(axis=1)
    if data.empty or not phases or not spans_decades(totals, DECADE):
        fig, ax = plt.subplots(figsize=(9, 0.4 * len(data) + 1.6))
        if data.empty or not phases:
            ax.text(0.5, 0.5, "no phase timings to show", ha="center", va="center",
                    transform=ax.transAxes)
        else:
            data.plot.barh(stacked=True, ax=ax, color=colours)
            ax.invert_yaxis()
            _legend_beside(ax)
        ax.set(xlabel="median milliseconds per iteration", ylabel="", title=heading)
        tidy(fig)
        return fig
    fig, (time_ax, share_ax) = plt.subplots(1, 2, sharey=True, figsize=(13, 0.4 * len(data) + 1.8),
                                            gridspec_kw={"width_ratios": [1, 1.2]})
    shares = data.div(totals.where(totals > 0), axis=0).fillna(0.0).set_axis(range(len(data)))
    shares.plot.barh(stacked=True, ax=share_ax, color=colours, width=0.8)
    share_ax.set_xlim(0, 1)
    share_ax.xaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    share_ax.set(xlabel="share of the iteration", ylabel="", title="where it goes")
    _legend_beside(share_ax)
    time_ax.barh(range(len(totals)), totals.to_numpy(), color=palette.BASE[0], height=0.8)
    log_axis(time_ax)
    time_ax.set_yticks(range(len(totals)), list(totals.index))  # after the shares: shared axis
    time_ax.set_ylim(len(totals) - 0.5, -0.5)  # the first configuration on top
    time_ax.set(xlabel="phases' median milliseconds, summed (log scale)", ylabel="",
                title="time in the phases")
    low, high = totals[totals > 0].min(), totals.max()
    fig.suptitle(f"{heading}: the phases take {formatting.number(low)} to "
                 f"{formatting.number(high)} ms an iteration, so time on a log axis and each "
                 "phase's share")
    tidy(fig)
    return fig
