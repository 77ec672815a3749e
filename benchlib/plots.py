"""Seaborn / matplotlib figures of one run (timelines, phase breakdown)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from benchlib import analysis, flags
from benchlib.telemetry import Telemetry
from benchlib.workloads.result import RunResult


def plain(text: object) -> str:
    """``text`` shown literally by matplotlib: ``$`` escaped (record text is not mathtext)."""
    return str(text).replace("$", r"\$")


def text_labels(df: pd.DataFrame, columns: list[str]) -> pd.Series:
    """:func:`analysis.labels` of ``df`` as literal matplotlib text (:func:`plain`)."""
    return analysis.labels(df, columns).map(plain)


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


def rank_table(result: RunResult) -> pd.DataFrame:
    """One row per rank (a single row for a single-process run): samples, wall time, throughput
    and median iteration."""
    if result.ranks is not None:
        return result.ranks
    return pd.DataFrame([{
        "rank": 0, "node": 0, "iterations": result.iterations, "samples": result.samples,
        "wall_time_s": result.wall_time_s, "throughput": result.throughput,
        "time_iteration_s": float(result.per_iteration["iteration"].median()),
    }]).set_index("rank")


def busbw_plot(curves: pd.DataFrame, title: str = "All-reduce bus bandwidth") -> plt.Figure:
    """Bus bandwidth (GB/s) against message size (log scale), one line per configuration."""
    curves = curves.assign(configuration=curves["configuration"].map(plain))
    fig, ax = plt.subplots(figsize=(8, 3.5))
    sns.lineplot(data=curves, x="size_bytes", y="busbw_GBps", hue="configuration", marker="o",
                 ax=ax, errorbar=None)
    ax.set_xscale("log", base=2)
    ticks = sorted(curves["size_bytes"].unique())[::2]
    ax.set_xticks(ticks, [curves.loc[curves["size_bytes"] == t, "size"].iloc[0] for t in ticks],
                  rotation=45, fontsize=8)
    ax.set(xlabel="message size", ylabel="bus bandwidth (GB/s)", title=plain(title))
    fig.tight_layout()
    return fig


def as_table(mapping: dict[str, object], name: str = "value") -> pd.DataFrame:
    """A one-column table of a mapping, for readable display in notebooks."""
    return pd.Series(mapping, dtype=object).to_frame(name)


def categorical_hue(frame: pd.DataFrame, hue: str | None) -> tuple[pd.DataFrame, list[str] | None]:
    """``frame`` with its ``hue`` column as text labels, and their order (numbers ascending).

    Seaborn draws a numeric hue as a colour scale whose brief legend fails on pandas' nullable
    integers (``Int64``); each value of a configuration column is one line, so one colour each.
    """
    if hue is None or hue not in frame:
        return frame, None
    values = frame[hue]
    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    ordered = sorted(values.dropna().unique(), key=float if numeric else str)
    labels = values.map(lambda v: "-" if pd.isna(v) else plain(v)).astype(object)
    order = [plain(v) for v in ordered] + (["-"] if values.isna().any() else [])
    return frame.assign(**{hue: labels}), list(dict.fromkeys(order))


def scaling_plot(scaled: pd.DataFrame, metric: str = "throughput",
                 hue: str | None = None) -> plt.Figure:
    """Throughput, speedup and efficiency against devices, with the ideal (linear) line."""
    hue = hue or next((c for c in ("model", "benchmark", "batch_size") if c in scaled
                       and scaled[c].nunique() > 1), None)
    scaled, hue_order = categorical_hue(scaled, hue)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    devices = sorted(scaled["num_devices"].unique())
    for ax, column in zip(axes, (metric, "speedup", "efficiency"), strict=True):
        sns.lineplot(data=scaled, x="num_devices", y=column, hue=hue, hue_order=hue_order,
                     marker="o", ax=ax, errorbar=None)
        if column == "speedup":
            ax.plot(devices, [d / devices[0] for d in devices], "k--", linewidth=0.8, label="ideal")
        if column == "efficiency":
            ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8, label="ideal")
            ax.set_ylim(0, max(1.15, float(scaled[column].max()) * 1.08))
        _mark_flagged(ax, scaled, column)
        ax.set(xlabel="devices", xticks=devices, title=column)
        if ax.get_legend():
            ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _mark_flagged(ax: plt.Axes, table: pd.DataFrame, column: str) -> None:
    """Red crosses on the points of flagged runs (:mod:`benchlib.flags`), one legend entry."""
    if "flags" not in table:
        return
    flagged = table[[bool(flags.split(f)) for f in table["flags"]]]
    if len(flagged):
        ax.scatter(flagged["num_devices"], flagged[column], marker="X", s=70, color="crimson",
                   zorder=5, label="flagged ⚠ (see the list above)")


def ratio_plot(pairs: pd.DataFrame, title: str, label_columns: list[str] | None = None) -> plt.Figure:
    """One bar per paired configuration: ratio a / b, with 1 and the median marked."""
    bookkeeping = ("a", "b", "ratio", "flags", "a_low", "a_high", "b_low", "b_high")
    label_columns = label_columns or [c for c in pairs.columns if c not in bookkeeping
                                      and pairs[c].nunique(dropna=False) > 1]
    labels = text_labels(pairs, label_columns)
    if "flags" in pairs:
        labels = [flags.marked(label, f) for label, f in zip(labels, pairs["flags"], strict=True)]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(pairs) + 1.4))
    sns.barplot(x=pairs["ratio"], y=labels, ax=ax, color=sns.color_palette("deep")[0], orient="h")
    ax.axvline(1.0, color="black", linewidth=0.8)
    median = pairs["ratio"].median()
    ax.axvline(median, color="crimson", linestyle="--", linewidth=1, label=f"median {median:.2f}")
    ax.set(xlabel="ratio a / b", ylabel="", title=plain(title))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def breakdown_plot(table: pd.DataFrame, label_columns: list[str], title: str = "") -> plt.Figure:
    """Stacked horizontal bars of median seconds per phase, one bar per configuration."""
    phases = [c for c in table.columns if c.startswith("time_") and c != "time_iteration_s"
              and table[c].notna().any()]
    labels = text_labels(table, label_columns)
    data = table[phases].astype(float).fillna(0.0).set_axis(labels)
    data.columns = [c.removeprefix("time_").removesuffix("_s") for c in phases]
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(data) + 1.6))
    if data.empty or not phases:
        ax.text(0.5, 0.5, "no phase timings to show", ha="center", va="center",
                transform=ax.transAxes)
    else:
        data.plot.barh(stacked=True, ax=ax, color=sns.color_palette("deep", len(phases)))
        ax.invert_yaxis()
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set(xlabel="median seconds per iteration", ylabel="", title=plain(title or "Phase breakdown"))
    fig.tight_layout()
    return fig


def hours_plot(table: pd.DataFrame, label_columns: list[str], value: str = "hours",
               title: str = "") -> plt.Figure:
    """Horizontal bars of a projected time per configuration (log scale when it spans decades)."""
    labels = text_labels(table, label_columns)
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(table) + 1.4))
    sns.barplot(x=table[value].to_numpy(), y=labels.to_numpy(), ax=ax, orient="h",
                color=sns.color_palette("deep")[2])
    values = table[value].dropna()
    if len(values) and values.max() / max(values.min(), 1e-12) > 100:
        ax.set_xscale("log")
    ax.set(xlabel=value.replace("_", " "), ylabel="", title=plain(title))
    fig.tight_layout()
    return fig


def lab_units_plot(table: pd.DataFrame, title: str = "3D U-Net in lab units") -> plt.Figure:
    """Days to 100k training iterations and hours per teravoxel predicted, one bar per run,
    coloured by source (this campaign or reference), from :func:`analysis.unet3d_units`."""
    panels = [("unet3d_train", "days_to_100k", "training: days to 100k iterations"),
              ("unet3d_predict", "hours_per_teravoxel", "prediction: hours per teravoxel")]
    panels = [p for p in panels if (table["benchmark"] == p[0]).any()]
    fig, axes = plt.subplots(1, max(1, len(panels)), squeeze=False,
                             figsize=(6 * max(1, len(panels)), 0.35 * len(table) + 1.8))
    for ax, (benchmark, value, name) in zip(axes[0], panels, strict=False):
        rows = table[table["benchmark"] == benchmark]
        columns = [c for c in ("cluster", "gpu", "num_devices", "precision", "dataset",
                               "batch_size") if c in rows and rows[c].nunique(dropna=False) > 1]
        labels = text_labels(rows, columns or ["source"])
        sns.barplot(x=rows[value].to_numpy(), y=labels.to_numpy(), hue=rows["source"].to_numpy(),
                    ax=ax, orient="h", dodge=False)
        if rows[value].max() / max(rows[value].min(), 1e-12) > 100:
            ax.set_xscale("log")
        ax.set(xlabel=value.replace("_", " "), ylabel="", title=name)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def show(fig: plt.Figure) -> None:
    """Display a figure now (inside loops) and close it so it is not shown twice."""
    from IPython.display import display

    display(fig)
    plt.close(fig)


def telemetry_plot(telemetry: Telemetry, title: str = "GPU telemetry over the timed loop") -> plt.Figure:
    """Utilization, power, SM clock and temperature against time; samples whose clocks NVML
    reported as held down (power or thermal) are marked in red."""
    from benchlib.telemetry import THROTTLE_MASK

    frame = telemetry.samples
    panels = [(c, label) for c, label in (("gpu_util", "utilization %"), ("power_w", "power W"),
                                          ("sm_clock_mhz", "SM clock MHz"),
                                          ("temperature_c", "temperature °C")) if c in frame]
    fig, axes = plt.subplots(len(panels) or 1, 1, figsize=(8, 1.6 * max(len(panels), 1)),
                             sharex=True, squeeze=False)
    throttled = (frame["throttle_reasons"].fillna(0).astype("int64") & THROTTLE_MASK) != 0 \
        if "throttle_reasons" in frame else pd.Series(False, index=frame.index)
    for ax, (column, label) in zip(axes[:, 0], panels, strict=False):
        sns.lineplot(data=frame, x="t_s", y=column, ax=ax, linewidth=1)
        if throttled.any():
            ax.scatter(frame.loc[throttled, "t_s"], frame.loc[throttled, column], color="red", s=8,
                       label="throttled (power / thermal)", zorder=3)
        ax.set(ylabel=label)
    if throttled.any():
        axes[0, 0].legend(fontsize=7, loc="lower right")
    axes[-1, 0].set(xlabel="seconds into the timed loop")
    axes[0, 0].set(title=title)
    fig.tight_layout()
    return fig


def decode_plot(decode: pd.DataFrame, title: str = "JPEG decode + transform") -> plt.Figure:
    """Images/s the loader delivers against its number of worker processes."""
    fig, ax = plt.subplots(figsize=(6, 3))
    sns.lineplot(data=decode, x="workers", y="images_per_s", marker="o", ax=ax)
    ax.set(xlabel="loader workers", ylabel="images/s", title=title)
    ax.set_xticks(sorted(decode["workers"].unique()))
    fig.tight_layout()
    return fig


def _bars(data: pd.DataFrame, y: str, x: str, hue: str, rows: int, line_at: float,
          xlabel: str, title: str) -> plt.Figure:
    """Horizontal bars of ``x`` per ``y`` and ``hue``, with a vertical reference line."""
    fig, ax = plt.subplots(figsize=(8, 0.4 * max(rows, 2) + 1.2))
    if len(data):
        sns.barplot(data=data, y=y, x=x, hue=hue, ax=ax, orient="h")
    ax.axvline(line_at, color="black", linestyle="--", linewidth=0.8)
    ax.set(xlabel=xlabel, ylabel="", title=title)
    fig.tight_layout()
    return fig


def ceilings_plot(table: pd.DataFrame, title: str = "Measured ceilings against the datasheet") -> plt.Figure:
    """Measured / datasheet per figure (1.0 = the datasheet's peak), one bar per probe."""
    rated = table.dropna(subset=["of_datasheet"]).assign(
        probe=lambda t: text_labels(t, ["cluster", "host"]))
    return _bars(rated, "figure", "of_datasheet", "probe", len(rated), 1.0,
                 "measured / datasheet", title)


def verdict_plot(table: pd.DataFrame, title: str = "Where each run stands") -> plt.Figure:
    """Per run (labelled with its verdict): the share of the iteration spent waiting for data
    and the model FLOPs utilization; the line marks the 10 % data-bound threshold."""
    from benchlib.verdict import DATA_BOUND_SHARE, run_labels

    run = run_labels(table)
    frame = table.assign(run=(run + " [" + table["verdict"] + "]").map(plain))
    long = frame.melt(id_vars=["run"], value_vars=["data_wait_share", "mfu"],
                      var_name="figure", value_name="share").dropna(subset=["share"])
    return _bars(long, "run", "share", "figure", len(frame), DATA_BOUND_SHARE,
                 "data wait / iteration; MFU / peak", title)
