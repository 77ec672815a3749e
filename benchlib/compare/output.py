"""What ``benchlib compare`` prints: the speed table fitted to the terminal and the energy
efficiency beside it (:mod:`benchlib.compare.command` reads the options and judges)."""

from __future__ import annotations

import pandas as pd

from benchlib import formatting
from benchlib.cli.base import show, show_table, wrapped
from benchlib.compare.regression import Comparison, higher_is_better, ratio_name
from benchlib.records import configuration, schema

#: What the base and new columns are: the index and the tables show the median of the same runs.
GEOMEAN = ("geometric mean of each side's runs (the report's index and throughput tables show "
           "their median)")


def show_compared(comparison: Comparison) -> None:
    """NEW / BASE per configuration (BASE / NEW where lower is better): the figures, then each
    configuration's label; how an interval was made said once above the table where every
    row's was made alike, else under the configuration's label (too long for a column)."""
    compared = comparison.table
    shown = [c for c in ("base", "new", "ratio", "low", "high", "verdict", "base_runs",
                         "new_runs", "flags", "interval", "configuration") if c in compared]
    readable = {**dict.fromkeys(("base", "new"), formatting.or_blank(formatting.number)),
                **dict.fromkeys(("ratio", "low", "high"), formatting.or_blank(formatting.ratio))}
    better = "" if higher_is_better(comparison.metric) else f", lower {comparison.metric} is better"
    signed = schema.signed(comparison.metric)
    ratio = ratio_name(comparison.metric).upper()
    sides = ("mean of each side's runs (the values may be negative: no ratio of them)" if signed
             else GEOMEAN)
    show(wrapped(f"{ratio} {comparison.metric} per configuration "
                 f"(above 1 is better{better}); base, new: {sides}; low-high: 95 % "
                 "interval (how it was made: said once, or under each configuration; the lines "
                 "below say why there is none); a within-run interval never decides", indent=""))
    table = compared[shown]
    if "interval" in table:
        made = table["interval"].where(table["low"].notna(), "")  # else: said below
        table = table.assign(interval=made)
        if configuration.varies(made[made != ""]):
            table = table.drop(columns="interval").assign(configuration=[
                f"{label}; interval: {how.replace(', ', '; ')}" if how else label
                for label, how in zip(table["configuration"], made, strict=True)])
    show_table(table, "configuration", formatters=readable,
               fold=("verdict", "base_runs", "new_runs", "flags", "interval"))


def energy_compared(base: pd.DataFrame, new: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The second ratio: energy efficiency NEW / BASE per configuration (the same pairing and
    interval as the speed's; :func:`benchlib.analysis.energy.compare`'s table)."""
    from benchlib.analysis import comparisons, energy

    base, new = comparisons.benchmarks(base), comparisons.benchmarks(new)
    return energy.compare(base, new, threshold=threshold).table


def show_energy(base: pd.DataFrame, new: pd.DataFrame, threshold: float,
                compared: pd.DataFrame | None = None) -> None:
    """The second ratio (``compared``, else :func:`energy_compared`) per configuration in
    common, or why there is none."""
    from benchlib.analysis import comparisons, energy
    from benchlib.vocabulary import CompareVerdict

    if compared is None:
        compared = energy_compared(base, new, threshold)
    base, new = comparisons.benchmarks(base), comparisons.benchmarks(new)
    if compared.empty:
        return
    unit = energy.frame_unit(pd.concat([base, new], ignore_index=True)) or "samples/J"
    show("\n" + wrapped(f"NEW / BASE energy efficiency ({unit}) per configuration in common; "
                        f"base, new: {GEOMEAN}; low-high: 95 % interval from the repeats, as for "
                        "speed; unknown: energy not measured (the reason says where)", indent=""))
    paired = compared[~compared["verdict"].isin((CompareVerdict.ONLY_IN_BASE,
                                                 CompareVerdict.ONLY_IN_NEW))]
    if paired["ratio"].isna().all():  # nothing measured: one line, not a row of unknowns each
        reasons = sorted(set(paired.get("reason", pd.Series(dtype=str)).dropna().astype(str)))
        count = len(paired)
        return show(wrapped(f"unknown for {'the' if count == 1 else 'all'} {count} "
                            f"configuration{'' if count == 1 else 's'} in common"
                            + (f": {reasons[0]}" if len(reasons) == 1 else "")))
    units = {row: energy.per_joule_unit(b, u) for row, b, u in zip(
        paired.index, paired.get("benchmark", ""), paired.get("unit", ""), strict=True)} \
        if "benchmark" in paired and "unit" in paired else {}
    shown = paired.assign(
        base=[energy.said(v, units.get(i, unit)) for i, v in paired["base"].items()],
        new=[energy.said(v, units.get(i, unit)) for i, v in paired["new"].items()],
        ratio=paired["ratio"].map(lambda v: energy.UNKNOWN if pd.isna(v) else f"{v:.2f}"),
        **{end: paired[end].map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
           for end in ("low", "high")})
    keep = ["base", "new", "ratio", "low", "high", "verdict", "configuration"]
    show_table(shown[[c for c in keep if c in shown]], "configuration")
