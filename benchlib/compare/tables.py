"""What the compare page shows: a campaign against a baseline campaign, each configuration's ratio
with its interval and verdict (from :mod:`benchlib.compare.regression`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

import benchlib.analysis.comparisons as comparisons
from benchlib import formatting
from benchlib.compare import regression
from benchlib.publish.pages import present
from benchlib.publish.pages.summary import as_read, md_text
from benchlib.records import configuration
from benchlib.vocabulary import DEFAULT_THRESHOLD, CompareVerdict

if TYPE_CHECKING:
    from benchlib.compare.regression import Comparison

VERDICT_COLOURS = {CompareVerdict.REGRESSION: "#e15759", CompareVerdict.IMPROVEMENT: "#59a14f",
                   CompareVerdict.NO_CHANGE: "#4e79a7", CompareVerdict.UNDECIDED: "#f28e2b",
                   CompareVerdict.UNKNOWN: "#bab0ac",
                   CompareVerdict.UNRELIABLE: "#f28e2b"}


#: What a compare verdict without a direction means, said once where it appears.
UNKNOWN = ("unknown: fewer than two runs on a side, and one run says nothing about the next "
           "one: set repeats: 3 in the params file (separate runs) to know")
#: What an unreliable verdict means, said once where it appears.
UNRELIABLE = ("unreliable: a run of the configuration was contended or throttled, so no verdict "
              "is given from it; re-run both sides on an idle node with repeats: 3")
#: What the intervals of the compare page are made from.
INTERVAL_NOTE = ("95 % interval: the campaign is the unit of noise (runs of one campaign move "
                 "together): from each side's campaigns, or the configuration's noise between "
                 "campaigns in its history; with one campaign each and no history, a Welch t "
                 "interval over each side's repeats, judged only beyond a 15 % floor; never one "
                 "run's own iterations")


def compare_runs(base: pd.DataFrame, new: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD,
                 history_db: str | None = None) -> Comparison:
    """:func:`regression.compare` of the workload runs' throughput (probes left out: their
    figures are not throughputs), each configuration's noise between campaigns from its earlier
    runs in catalog ``history_db`` where given (:func:`selection.comparison_history`)."""
    from benchlib.analysis import selection

    base, new = comparisons.benchmarks(base), comparisons.benchmarks(new)
    return regression.compare(base, new, threshold=threshold,
                              history=selection.comparison_history(base, new, history_db,
                                                                   as_read))


def compare_energy(base: pd.DataFrame, new: pd.DataFrame,
                   threshold: float = DEFAULT_THRESHOLD) -> Comparison:
    """:func:`benchlib.analysis.energy.compare` of the workload runs: energy efficiency
    (images/J, ...) new / base per configuration, beside the speed's."""
    from benchlib.analysis import energy

    return energy.compare(comparisons.benchmarks(base), comparisons.benchmarks(new),
                          threshold=threshold)


def compare_labels(compared: pd.DataFrame) -> pd.Series:
    """Each configuration's one label (:func:`benchlib.records.configuration.label`) in the
    short style (``1 dev, synthetic, batch 32``), from the pairing columns."""
    columns = list(compared.columns)
    keys = columns[1:columns.index("base")] if "base" in columns else []
    return configuration.label(compared, keys, short=True)


def compare_headline(comparison: Comparison, base: str) -> str:
    """Markdown: verdict counts against ``base`` and each regression with its size."""
    compared = comparison.table
    if compared.empty:
        return f"Nothing to compare: no configuration ran in both campaigns ({md_text(base)})."
    counts = compared["verdict"].value_counts()
    lines = [f"**Against {md_text(base)}**: " + ", ".join(
        f"{n} {md_text(v)}" for v, n in counts.items()) + " (configurations)."]
    threshold = comparison.threshold
    labels = compare_labels(compared)
    for index, row in compared[compared["verdict"] == CompareVerdict.REGRESSION].iterrows():
        lines.append(f"- **regression** {md_text(labels[index])}: "
                     f"{row['ratio']:.2f}x the base speed (95 % interval {row['low']:.2f}–"
                     f"{row['high']:.2f} from {row['base_runs']} + {row['new_runs']} runs), "
                     f"{1 - row['ratio']:.0%} slower")
    judged = int(compared["verdict"].isin(regression.JUDGED).sum())
    if not judged:
        lines.append("**Nothing certified**: no configuration in common could be judged "
                     "so no regression is ruled out.")
    elif CompareVerdict.REGRESSION not in counts:
        lines.append(f"No significant regression beyond {threshold:.0%} among the {judged} "
                     f"configuration{'' if judged == 1 else 's'} judged.")
    for verdict, said in ((CompareVerdict.UNRELIABLE, UNRELIABLE), (CompareVerdict.UNKNOWN, UNKNOWN)):
        if verdict in counts:
            lines.append(f"\n**{counts[verdict]} cannot be certified**: {md_text(said)}.")
    return "\n".join(lines)


def warnings_text(comparison: Comparison) -> str:
    """Markdown: the warnings about settings that make the campaigns incomparable, or ''."""
    found = comparison.warnings
    if not found:
        return ""
    return ("**⚠ Not like for like**: these settings differ between the campaigns, so the "
            "ratios below mix their effect in:\n" + "\n".join(f"- {md_text(w)}" for w in found))


def _interval(low: float, high: float) -> str:
    return formatting.DASH if formatting.missing(low) else f"{low:.2f}x – {high:.2f}x"


def energy_cells(compared: pd.DataFrame, energy: pd.DataFrame | None) -> dict[str, list[str]]:
    """The compare table's energy columns: energy efficiency new / base and its 95 % interval
    per configuration of ``compared`` (unknown where not measured on a side, a dash for no
    interval); {} without ``energy``."""
    if energy is None or energy.empty:
        return {}
    by_label = dict(zip(compare_labels(energy), energy.to_dict("records"), strict=True))
    rows = [by_label.get(label, {}) for label in compare_labels(compared)]
    ratio = [formatting.UNKNOWN if formatting.missing(r.get("ratio")) else
             formatting.ratio(float(r["ratio"])) for r in rows]
    return {"energy efficiency new / base": ratio,
            "energy 95 % interval": [_interval(r.get("low"), r.get("high"))  # type: ignore[arg-type]
                                     for r in rows]}


def compare_display(comparison: Comparison, unit: str = "",
                    energy: Comparison | None = None) -> present.Table:
    """Per configuration: the verdict, NEW / BASE with its 95 % interval and the flags first,
    then base and new medians, runs on each side, and with ``energy`` (:func:`compare_energy`) the energy
    efficiency new / base with its interval."""
    suffix = f" ({unit})" if unit else ""
    interval = _interval
    compared = comparison.table
    ratio = regression.ratio_name(comparison.metric)
    energy_table = energy.table if energy is not None else None

    cells = pd.DataFrame({
        "configuration": compare_labels(compared),
        f"base{suffix}": compared["base"].map(formatting.formatter("throughput")),
        f"new{suffix}": compared["new"].map(formatting.formatter("throughput")),
        ratio: compared["ratio"].map(formatting.formatter("ratio")),
        "95 % interval": [interval(lo, hi) for lo, hi in
                          zip(compared["low"], compared["high"], strict=True)],
        "verdict": compared["verdict"].map(
            lambda v: f"⚠ {v}" if v in (CompareVerdict.REGRESSION, CompareVerdict.UNRELIABLE) else v),
        "runs (base / new)": [f"{a} / {b}" for a, b in
                              zip(compared["base_runs"], compared["new_runs"], strict=True)],
        "flags": compared["flags"].fillna("").astype(str),
        **energy_cells(compared, energy_table),
    })
    if not cells["flags"].str.strip().any():
        cells = cells.drop(columns="flags")
    first = ["configuration", "verdict", ratio, "95 % interval", "flags"]  # a phone's view
    cells = cells[[c for c in first if c in cells] + [c for c in cells if c not in first]]
    better = ("faster" if comparison.metric == "throughput" else "better"
              if regression.higher_is_better(comparison.metric)
              else f"better (lower {comparison.metric} is better)")
    caption = (f"Geometric mean {comparison.metric} of each side's runs "
               f"per configuration; {ratio} above 1 is {better}. {INTERVAL_NOTE}. regression: "
               "the whole interval more "
               f"than {comparison.threshold:.0%} below 1; {formatting.DASH} = no "
               "interval (fewer than two runs a side) or nothing to pair.")
    if energy_table is not None and not energy_table.empty:
        caption += (" Energy efficiency (samples per joule: images/J, ...) new / base: the same "
                    "ratio and interval over the runs that measured energy; unknown = not "
                    "measured on a side.")
    return present.Table(cells.reset_index(drop=True), caption,
                         {f"base{suffix}", f"new{suffix}", ratio, "95 % interval",
                          "energy efficiency new / base", "energy 95 % interval"})


def compare_plot(compared: pd.DataFrame, base: str):
    """NEW / BASE per configuration with its 95 % interval, coloured by verdict, 1.0 marked."""
    import matplotlib.pyplot as plt

    from benchlib.publish.pages.plots import plain, tidy

    rows = compared.assign(label=compare_labels(compared)).dropna(subset=["ratio"])
    fig, ax = plt.subplots(figsize=(9, 0.42 * max(len(rows), 1) + 1.6))
    labels = [plain(c) for c in rows["label"]]
    for position, row in enumerate(rows.to_dict("records")):
        colour = VERDICT_COLOURS.get(row["verdict"], "#bab0ac")
        low = row["low"] if not formatting.missing(row["low"]) else row["ratio"]
        high = row["high"] if not formatting.missing(row["high"]) else row["ratio"]
        ax.errorbar(row["ratio"], position, xerr=[[row["ratio"] - low], [high - row["ratio"]]],
                    fmt="o", color=colour, capsize=4)
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linewidth=0.8)
    for verdict, colour in VERDICT_COLOURS.items():
        if (rows["verdict"] == verdict).any():
            ax.plot([], [], "o", color=colour, label=verdict)
    ax.legend(fontsize=8, loc="lower right")
    ax.set(xlabel="new / base speed (x), 95 % interval over the repeats", ylabel="",
           title=plain(f"Each configuration against {base}"))
    tidy(fig)
    return fig


def index_item(compared: pd.DataFrame) -> dict[str, object]:
    """What the report's index says of a comparison (the compare page carries it): the
    verdict counts, each regression with its interval, and how many cannot be certified."""
    if compared.empty:
        return {"counts": "", "regressions": [], "uncertified": []}
    counts = compared["verdict"].value_counts()
    labels = compare_labels(compared)
    return {"counts": ", ".join(f"{n} {v}" for v, n in counts.items()),
            "regressions": [[str(labels[i]), float(row.ratio), float(row.low), float(row.high)]
                            for i, row in regression.regressions(compared).iterrows()],
            "uncertified": [[int(counts[v]), said] for v, said in (
                (CompareVerdict.UNRELIABLE, UNRELIABLE), (CompareVerdict.UNKNOWN, UNKNOWN))
                if v in counts]}
