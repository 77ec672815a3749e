"""Seaborn / matplotlib figures for people: one unit per axis, short labels from the fields
that vary, one colour per phase / model / precision on every page (:mod:`benchlib.publish.pages.palette`),
alt text on every image (:func:`show`), no warnings printed into pages (:func:`tidy`)."""

from __future__ import annotations

import base64
import io
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from benchlib import formatting
from benchlib.analysis.comparisons import headline
from benchlib.analysis.intervals import HEADLINE_NAME
from benchlib.kinds import kind_named
from benchlib.measure.telemetry import THROTTLE_MASK, Telemetry
from benchlib.publish.pages import narrow, palette
from benchlib.publish.pages.axes import log_axis, spans_decades
from benchlib.records import configuration, flags
from benchlib.records.run_table import FIRST
from benchlib.workloads.result import RunResult

#: ``text`` shown literally by matplotlib: ``$`` escaped (record text is not mathtext); every
#: label, title and legend entry that may hold record text goes through it.
plain = formatting.literal

LABEL_FORMS = formatting.LABEL_FORMS


#: Most bars a plot draws: beyond it the plot shows the most telling rows and its title says
#: so (the table beside it lists every row). A taller figure cannot be read, only rendered.
MAX_BARS = 40


def at_most(frame: pd.DataFrame, score: pd.Series, what: str) -> tuple[pd.DataFrame, str]:
    """``frame``'s :data:`MAX_BARS` rows of highest ``score`` (in their order) and a title note
    naming them (``"the 40 slowest of 450 configurations"``; ``""`` when every row fits)."""
    if len(frame) <= MAX_BARS:
        return frame, ""
    ranked = pd.to_numeric(score, errors="coerce").fillna(float("-inf")).to_numpy()
    keep = sorted(ranked.argsort(kind="stable")[::-1][:MAX_BARS])
    return frame.iloc[keep], f" (the {MAX_BARS} {what.format(total=len(frame))})"


def text_labels(df: pd.DataFrame, columns: list[str], mark: bool = False) -> pd.Series:
    """The short words of ``columns`` (:func:`~benchlib.records.configuration.written`) as
    literal matplotlib text (:func:`plain`); with ``mark`` a flagged row's label ends in ⚠
    (:func:`benchlib.records.flags.marked`)."""
    labels = configuration.written(df, columns, short=True)
    if mark and "flags" in df:
        labels = pd.Series([flags.marked(label, f) for label, f in
                            zip(labels, df["flags"], strict=True)], index=labels.index)
    return labels.map(plain)


def tidy(fig: plt.Figure) -> plt.Figure:
    """Lay the figure out tightly without printing layout warnings into the page (a figure
    whose legend cannot fit keeps its layout; :func:`show` crops to the drawing)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig.tight_layout()
    return fig


def describe(fig: plt.Figure) -> str:
    """Alt text for a figure from its titles and axis labels: ``Scaling: throughput
    (images/s) against devices; ...``."""
    parts = []
    if fig._suptitle is not None and fig._suptitle.get_text():
        parts.append(fig._suptitle.get_text())
    for ax in fig.axes:
        title, x, y = ax.get_title(), ax.get_xlabel(), ax.get_ylabel()
        if not (title or x or y):
            continue
        axes = f"{y or 'value'} against {x}" if x else (y or "")
        parts.append(f"{title}: {axes}" if title and axes else title or axes)
    text = "; ".join(dict.fromkeys(p.replace("\\$", "$") for p in parts if p))
    return f"Plot. {text}" if text else "Plot"


def show(fig: plt.Figure, alt: str | None = None) -> None:
    """Display a figure now as a PNG with alt text (``alt`` or :func:`describe`) and its phone
    rendering (:mod:`~benchlib.publish.pages.narrow`, in the output's metadata, for the report
    page), and close it so that it is not shown twice."""
    from IPython.display import display

    text = alt or describe(fig)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig.savefig(buffer, format="png", dpi=narrow.DPI, bbox_inches="tight")
    phone = narrow.render(fig)  # the same figure in one column, for a report read on a phone
    plt.close(fig)
    fig.clear()  # matplotlib_inline keeps a kernel's figures until the cell ends: drop what it drew
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    meta = {"alt": text, **({"narrow": base64.b64encode(phone).decode("ascii")} if phone else {})}
    display({"image/png": data, "text/plain": text}, raw=True, metadata={"image/png": meta})


def iteration_timeline(result: RunResult, title: str = "") -> plt.Figure:
    """Milliseconds per counted iteration, whole iteration and each phase, with the median."""
    frame = result.per_iteration.reset_index(names="step") * 1.0
    frame["step"] = frame["step"].astype(int)
    long = frame.melt(id_vars="step", var_name="phase", value_name="seconds")
    long["ms"] = long["seconds"] * 1e3
    fig, ax = plt.subplots(figsize=(8, 3.5))
    sns.lineplot(data=long, x="step", y="ms", hue="phase", ax=ax, marker=".", linewidth=1,
                 palette=palette.mapping("phase", long["phase"].unique()))
    median_ms = result.per_iteration["iteration"].median() * 1e3
    ax.axhline(median_ms, color="black", linestyle="--", linewidth=0.8,
               label=f"median iteration {median_ms:.1f} ms")
    ax.set(xlabel="timed iteration", ylabel="milliseconds",
           title=plain(title or "Time per iteration"))
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside: over no line
    tidy(fig)
    return fig


def phase_bars(result: RunResult, title: str = "") -> plt.Figure:
    """Median milliseconds per phase as one stacked bar, with the median iteration beside it."""
    table = result.breakdown()
    phases = table.drop(index="iteration")
    fig, ax = plt.subplots(figsize=(8, 1.8))
    left = 0.0
    for phase, row in phases.iterrows():
        width = row["median_s"] * 1e3
        ax.barh(["phases"], [width], left=left, color=palette.colour("phase", phase),
                label=f"{phase} {width:.1f} ms")
        left += width
    ax.barh(["iteration"], [table.loc["iteration", "median_s"] * 1e3],
            color=palette.colour("phase", "iteration"))
    ax.set(xlabel="median milliseconds per iteration", title=plain(title or "Phase breakdown"))
    ax.legend(fontsize=8, ncol=2, loc="center left", bbox_to_anchor=(1.01, 0.5))  # not over the x label
    tidy(fig)
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
    tidy(fig)
    return fig


def as_table(mapping: dict[str, object], name: str = "value") -> pd.DataFrame:
    """A one-column table of a mapping, for readable display in notebooks."""
    return pd.Series(mapping, dtype=object).to_frame(name)


HUE_KINDS = {"model": "model", "precision": "precision", "dataset": "dataset",
             "benchmark": "benchmark", "batch_size": "batch_size"}


def scaling_plot(scaled: pd.DataFrame, metric: str = "throughput",
                 hue: str | None = None) -> plt.Figure:
    """Throughput, speedup and efficiency against devices, with the ideal (linear) line; one row
    of panels per throughput unit (images/s and voxels/s never share an axis)."""
    scaled = _with_scaling(scaled)
    labelled = configuration.varying(scaled, ("benchmark", "model", "dataset", "batch_size",
                                              "precision"))
    units = (sorted(scaled["unit"].dropna().unique().tolist())
             if "unit" in scaled and scaled["unit"].notna().any() else [None])
    fig, axes = plt.subplots(len(units), 3, figsize=(13, 3.4 * len(units)), squeeze=False)
    for row_axes, unit in zip(axes, units, strict=True):
        rows = scaled if unit is None else scaled[scaled["unit"] == unit]
        columns = configuration.varying(rows, labelled) if hue is None else [hue]
        rows = rows.assign(configuration=text_labels(rows, columns) if columns else "all runs")
        kind = HUE_KINDS.get(columns[0], "configuration") if len(columns) == 1 else "configuration"
        order = sorted(rows["configuration"].unique(), key=str)
        colours = palette.mapping(kind, order)
        devices = sorted(rows["num_devices"].unique())
        for ax, column in zip(row_axes, (metric, "speedup", "efficiency"), strict=True):
            sns.lineplot(data=rows, x="num_devices", y=column, hue="configuration",
                         hue_order=order, palette=colours, marker="o", ax=ax, errorbar=None,
                         legend=column == "efficiency")
            if column == "speedup":
                ax.plot(devices, [d / devices[0] for d in devices], "k--", linewidth=0.8,
                        label="ideal")
            if column == "efficiency":
                ax.axhline(1.0, color=palette.IDEAL, linestyle="--", linewidth=0.8, label="ideal")
                ax.set_ylim(0, max(1.15, float(rows[column].max()) * 1.08))
                ax.yaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
            _mark_flagged(ax, rows, column)
            if column == metric and spans_decades(rows[column]):
                log_axis(ax, "y")
            ylabel = {"speedup": "speedup (x)", "efficiency": "efficiency"}.get(
                column, f"{column} ({unit})" if unit else column)
            title = (f"throughput, {unit}" if column == metric else f"{column} ({unit} runs)") \
                if unit else {metric: "throughput"}.get(column, column)
            ax.set(xlabel="devices", xticks=devices, ylabel=plain(ylabel), title=plain(title))
        row_axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                            title="configuration", title_fontsize=7)
    tidy(fig)
    return fig


def _with_scaling(scaled: pd.DataFrame) -> pd.DataFrame:
    """The rows of configurations measured on several device counts (those on one count have
    no scaling to show); all rows when none has."""
    if "baseline_key" not in scaled:
        return scaled
    counts = scaled.groupby("baseline_key")["num_devices"].transform("nunique")
    return scaled[counts > 1] if (counts > 1).any() else scaled


def _mark_flagged(ax: plt.Axes, table: pd.DataFrame, column: str) -> None:
    """Red crosses on the points of flagged runs (:mod:`benchlib.records.flags`), one legend entry."""
    if "flags" not in table:
        return
    flagged = table[[bool(flags.of(f)) for f in table["flags"]]]
    if len(flagged):
        ax.scatter(flagged["num_devices"], flagged[column], marker="X", s=70, color="crimson",
                   zorder=5, label="flagged ⚠ (see the list above)")


def ratio_plot(pairs: pd.DataFrame, title: str, label_columns: list[str] | None = None,
               xlabel: str = "ratio a / b (x)") -> plt.Figure:
    """One bar per paired configuration: ratio a / b, with 1 and the comparison's headline (the
    geometric mean ratio over every pair, :func:`benchlib.analysis.comparisons.headline`) marked."""
    varying = configuration.varying(pairs, [c for c in pairs.columns if c not in (
        "a", "b", "ratio", "flags") and not c.startswith(("a_", "b_"))], missing_too=True)
    # the main settings name a bar (the pairs' table beside the plot has every one)
    label_columns = label_columns or [c for c in FIRST if c in varying] or varying
    geomean = headline(pairs)
    pairs, shown = at_most(pairs, np.log(pairs["ratio"].astype(float).where(pairs["ratio"] > 0)).abs(),
                           "of {total} pairs furthest from 1x")
    labels = text_labels(pairs, label_columns)
    if "flags" in pairs:
        labels = [flags.marked(label, f) for label, f in zip(labels, pairs["flags"], strict=True)]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(pairs) + 1.4))
    sns.barplot(x=pairs["ratio"], y=labels, ax=ax, color=palette.BASE[0], orient="h")
    ax.axvline(1.0, color=palette.IDEAL, linewidth=0.8)
    ax.axvline(geomean, color=palette.FLAGGED, linestyle="--", linewidth=1)
    # said under the axis, where no bar or label can cover it
    ax.set(xlabel=f"{plain(xlabel)}; dashed: {HEADLINE_NAME} {geomean:.2f}x", ylabel="",
           title=plain(title) + shown)
    tidy(fig)
    return fig


def hours_plot(table: pd.DataFrame, label_columns: list[str], value: str = "hours",
               title: str = "", xlabel: str | None = None) -> plt.Figure:
    """Horizontal bars of a projected time per configuration (log scale beyond a decade)."""
    table, shown = at_most(table, table[value], "longest of {total}")
    labels = text_labels(table, label_columns, mark=True)
    fig, ax = plt.subplots(figsize=(11, 0.4 * len(table) + 1.4))
    sns.barplot(x=table[value].to_numpy(), y=labels.to_numpy(), ax=ax, orient="h",
                color=palette.BASE[2])
    if spans_decades(table[value]):
        log_axis(ax)
    ax.set(xlabel=plain(xlabel or value.replace("_", " ")), ylabel="", title=plain(title) + shown)
    tidy(fig)
    return fig


def lab_units_plot(table: pd.DataFrame, title: str = "3D U-Net in lab units") -> plt.Figure:
    """Days to 100k training iterations and hours per teravoxel predicted, one bar per run,
    coloured by source (this campaign or reference), from :func:`analysis.unet3d_units`."""
    panels = [(b, *kind.lab_panel) for b in dict.fromkeys(table["benchmark"])
              if (kind := kind_named(b)) is not None and kind.lab_panel is not None]
    fig, axes = plt.subplots(1, max(1, len(panels)), squeeze=False,
                             figsize=(6 * max(1, len(panels)), 0.35 * min(len(table), MAX_BARS) + 1.8))
    for ax, (benchmark, value, name) in zip(axes[0], panels, strict=False):
        rows, shown = at_most(table[table["benchmark"] == benchmark],
                              table.loc[table["benchmark"] == benchmark, value], "longest of {total}")
        columns = configuration.varying(rows, ("cluster", "gpu", "num_devices", "precision",
                                               "dataset", "batch_size"), missing_too=True)
        labels = text_labels(rows, columns or ["source"], mark=True)
        sns.barplot(x=rows[value].to_numpy(), y=labels.to_numpy(), hue=rows["source"].to_numpy(),
                    ax=ax, orient="h", dodge=False,
                    palette=palette.mapping("source", rows["source"].unique()))
        if spans_decades(rows[value]):
            log_axis(ax)
        ax.set(xlabel=value.replace("_", " "), ylabel="", title=name + shown)
        if ax.get_legend() is not None and ax is not axes[0][len(panels) - 1]:
            ax.get_legend().remove()  # one legend, beside the last panel: over no bar
    if panels and axes[0][len(panels) - 1].get_legend() is not None:
        sns.move_legend(axes[0][len(panels) - 1], "upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(plain(title))
    tidy(fig)
    return fig


def telemetry_plot(telemetry: Telemetry, title: str = "GPU telemetry over the timed loop") -> plt.Figure:
    """Utilization, power, SM clock and temperature against time; samples whose clocks NVML
    reported as held down (power or thermal) are marked in red."""

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
    axes[0, 0].set(title=plain(title))
    tidy(fig)
    return fig


def decode_plot(decode: pd.DataFrame,
                title: str = "read from data_dir + JPEG decode + transform") -> plt.Figure:
    """Images/s the loader delivers against its number of worker processes."""
    fig, ax = plt.subplots(figsize=(6, 3))
    hue = "configuration" if configuration.varying(decode, ["configuration"]) else None
    if hue:
        decode = decode.assign(configuration=decode["configuration"].map(plain))
    sns.lineplot(data=decode, x="workers", y="images_per_s", hue=hue, marker="o", ax=ax)
    ax.set(xlabel="loader workers", ylabel="images/s", title=plain(title))
    ax.set_xticks(sorted(decode["workers"].unique()))
    tidy(fig)
    return fig


def _bars(data: pd.DataFrame, y: str, x: str, hue: str, rows: int, line_at: float,
          xlabel: str, title: str) -> plt.Figure:
    """Horizontal bars of ``x`` per ``y`` and ``hue``, with a vertical reference line."""
    fig, ax = plt.subplots(figsize=(8, 0.4 * max(rows, 2) + 1.2))
    if len(data):
        sns.barplot(data=data, y=y, x=x, hue=hue, ax=ax, orient="h",
                    palette=palette.mapping(hue, data[hue].unique()))
        # beside the axes, never over a bar or an axis label
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title_fontsize=8)
    ax.axvline(line_at, color="black", linestyle="--", linewidth=0.8)
    ax.set(xlabel=plain(xlabel), ylabel="", title=plain(title))
    tidy(fig)
    return fig


def ceilings_plot(table: pd.DataFrame, title: str = "Measured ceilings against the datasheet") -> plt.Figure:
    """Measured / datasheet per figure (1.0 = the datasheet's peak), one bar per probe."""
    rated = table.dropna(subset=["of_datasheet"])
    rated, shown = at_most(rated, -rated["of_datasheet"].astype(float),
                           "lowest of {total} measured figures")
    rated = rated.assign(probe=lambda t: text_labels(t, ["cluster", "host"]))
    return _bars(rated, "figure", "of_datasheet", "probe", len(rated), 1.0,
                 "measured / datasheet", title + shown)


def verdict_plot(table: pd.DataFrame, title: str = "Where each run stands") -> plt.Figure:
    """Per run (labelled with its verdict): the share of the iteration spent waiting for data
    and the model FLOPs utilization; the line marks the 10 % data-bound threshold."""
    from benchlib.analysis.verdict import DATA_BOUND_SHARE
    from benchlib.publish.pages.verdict_tables import run_labels

    run = run_labels(table)
    frame = table.assign(run=(run + " [" + table["verdict"] + "]").map(plain))
    frame, shown = at_most(frame, frame["data_wait_share"], "of {total} runs waiting longest "
                           "for data")
    names = {"data_wait_share": "waiting for data (share of the iteration)",
             "mfu": "MFU of the datasheet peak",
             "mfu_achievable": "MFU of what the node reaches"}
    shares = [c for c in names if c in frame]
    long = frame.melt(id_vars=["run"], value_vars=shares,
                      var_name="figure", value_name="share").dropna(subset=["share"])
    long["figure"] = long["figure"].map(names)
    fig = _bars(long, "run", "share", "figure", len(frame), DATA_BOUND_SHARE,
                "share (%)", title + shown)
    fig.axes[0].xaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    return fig
