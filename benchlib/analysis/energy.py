"""Energy beside speed: ``samples_per_joule`` (images/J, tokens/J, voxels/J), its unit asked
of each record's kind (:meth:`benchlib.kinds.Kind.per_joule_unit`), and the words for it where
energy was not measured ("unknown", never 0)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import benchlib.compare.regression as regression
from benchlib import formatting
from benchlib.kinds import kind_named
from benchlib.records import flags
from benchlib.vocabulary import DEFAULT_THRESHOLD, CompareVerdict

COLUMN = "samples_per_joule"
UNKNOWN = formatting.UNKNOWN
#: What "unknown" means, said once where it appears.
UNKNOWN_NOTE = ("unknown = energy not measured (no NVML energy counter or power readings on a "
                "GPU, no readable RAPL package counter on a CPU: the run's energy_source says "
                "why)")


def per_joule_unit(benchmark: object, unit: object) -> str | None:
    """The unit of ``samples_per_joule`` for records of ``benchmark`` whose throughput is in
    ``unit`` (images/J, ...), as their kind names it; None where the kind has none."""
    kind = kind_named(benchmark)
    if kind is None or formatting.missing(unit):
        return None
    return kind.per_joule_unit(str(unit))


def with_per_joule(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``samples_per_joule`` for every row whose kind counts samples: the record's
    own, else samples / ``energy_j`` (records written before the column), NaN where the energy
    was not measured (or read 0 J; a recorded 0 or infinite value too: unknown, never 0), where
    it is beyond what the devices could give (:func:`benchlib.records.flags.energy_implausible`:
    the run is flagged ``energy_implausible``) and for rows whose kind has no per-joule unit."""
    df = df.copy()
    def numbers(column: str) -> pd.Series:
        if column not in df:
            return pd.Series(np.nan, index=df.index, dtype=float)
        return pd.to_numeric(df[column], errors="coerce").astype(float)

    recorded = numbers(COLUMN)
    energy = numbers("energy_j")
    recorded = recorded.fillna(numbers("samples") / energy.where(energy > 0))
    recorded = recorded.where((recorded > 0) & np.isfinite(recorded))  # 0 J/s is not measured
    read = df[[c for c in flags.ENERGY_READS if c in df]]  # only what the check reads
    implausible = pd.Series([flags.energy_implausible({**row, COLUMN: value}) for row, value in
                             zip(read.to_dict("records"), recorded, strict=True)],
                            index=df.index, dtype=bool) if len(df) else recorded.isna()
    recorded = recorded.where(~implausible)  # flagged energy_implausible: never a figure
    if "benchmark" in df and "unit" in df:
        counts = [per_joule_unit(b, u) is not None for b, u in zip(df["benchmark"], df["unit"],
                                                                    strict=True)]
        recorded = recorded.where(pd.Series(counts, index=df.index, dtype=bool))
    df[COLUMN] = recorded.astype(float)
    return df


def frame_unit(df: pd.DataFrame) -> str | None:
    """The one per-joule unit of ``df``'s rows (None where they have none or several)."""
    if "benchmark" not in df or "unit" not in df:
        return None
    units = {per_joule_unit(b, u) for b, u in zip(df["benchmark"], df["unit"], strict=True)}
    units.discard(None)
    return units.pop() if len(units) == 1 else None


def said(value: object, unit: str | None) -> str:
    """``4.21 images/J``, or ``unknown`` where the energy was not measured."""
    if formatting.missing(value) or not unit:
        return UNKNOWN
    return f"{formatting.number(float(value))} {unit}"  # type: ignore[arg-type]


def compare(base: pd.DataFrame, new: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD
            ) -> regression.Comparison:
    """Energy efficiency NEW against BASE per configuration: :func:`benchlib.compare.regression.compare`
    of ``samples_per_joule`` (the same pairing, ratio of geometric means and Welch t interval
    over each side's repeats as the speed's). A configuration whose energy was not measured on
    a side is ``unknown`` without a ratio, its ``reason`` saying where; with fewer than two
    measured runs a side it is ``unknown`` (a ratio, no interval), as speed is."""

    if not len(base) or not len(new):  # no workload run on a side (probes only): no ratio
        return regression.Comparison(pd.DataFrame(), metric=COLUMN, threshold=threshold)
    comparison = regression.compare(with_per_joule(base), with_per_joule(new), metric=COLUMN,
                                    threshold=threshold)
    compared = comparison.table
    if compared.empty:
        return comparison
    paired = compared["base_runs"].gt(0) & compared["new_runs"].gt(0)
    for sides, said in ((compared["base"].isna() & compared["new"].isna(), "base and new"),
                        (compared["base"].isna() & compared["new"].notna(), "base"),
                        (compared["base"].notna() & compared["new"].isna(), "new")):
        rows = paired & sides
        compared.loc[rows, ["verdict", "reason"]] = [CompareVerdict.UNKNOWN.value,
                                                     f"energy not measured in {said}"]
        compared.loc[rows, ["ratio", "low", "high"]] = np.nan
    return comparison


def record_said(record: dict) -> str:
    """One record's energy efficiency in words (``4.21 images/J``, ``unknown``), '' where its
    kind has no per-joule unit (a probe, a failed run before it had a unit)."""
    unit = per_joule_unit(record.get("benchmark"), record.get("unit"))
    if unit is None:
        return ""
    if flags.energy_implausible(record):
        return "implausible (flagged energy_implausible: not shown)"
    return said(with_per_joule(pd.DataFrame([record]))[COLUMN].iloc[0], unit)
