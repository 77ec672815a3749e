"""Seaborn / matplotlib figures of one run (timelines, phase breakdown)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from benchlib.workloads.result import RunResult


def iteration_timeline(result: RunResult, title: str = "") -> plt.Figure:
    """Milliseconds per counted iteration, whole iteration and each phase, with the median."""
    frame = result.per_iteration.reset_index(names="step") * 1.0
    frame["step"] = frame["step"].astype(int)
    long = frame.melt(id_vars="step", var_name="phase", value_name="seconds")
    long["ms"] = long["seconds"] * 1e3
    fig, ax = plt.subplots(figsize=(8, 3.5))
    sns.lineplot(data=long, x="step", y="ms", hue="phase", ax=ax, marker=".", linewidth=1)
    median_ms = result.per_iteration["iteration"].median() * 1e3
    ax.axhline(median_ms, color="black", linestyle="--", linewidth=0.8,
               label=f"median iteration {median_ms:.1f} ms")
    ax.set(xlabel="timed iteration", ylabel="ms", title=title or "Time per iteration")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def phase_bars(result: RunResult, title: str = "") -> plt.Figure:
    """Median milliseconds per phase as one stacked bar, with the median iteration beside it."""
    table = result.breakdown()
    phases = table.drop(index="iteration")
    fig, ax = plt.subplots(figsize=(8, 1.8))
    left = 0.0
    palette = sns.color_palette("deep", len(phases))
    for (phase, row), colour in zip(phases.iterrows(), palette, strict=True):
        width = row["median_s"] * 1e3
        ax.barh(["phases"], [width], left=left, color=colour, label=f"{phase} {width:.1f} ms")
        left += width
    ax.barh(["iteration"], [table.loc["iteration", "median_s"] * 1e3], color="grey")
    ax.set(xlabel="median ms per iteration", title=title or "Phase breakdown")
    ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.45))
    fig.tight_layout()
    return fig


def as_table(mapping: dict[str, object], name: str = "value") -> pd.DataFrame:
    """A one-column table of a mapping, for readable display in notebooks."""
    return pd.Series(mapping, dtype=object).to_frame(name)
