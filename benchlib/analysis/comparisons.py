"""Comparison tables over result records: scaling, paired ratios, breakdowns, projections.

Every function takes the tidy DataFrame of :func:`benchlib.records.results.load` (or reference records)
and returns a new DataFrame. Failed runs (``status`` other than ``ok``) are left out; list them
with :func:`failed`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from benchlib.analysis import intervals
from benchlib.analysis.campaign_history import history as campaign_history
from benchlib.analysis.metrics import require_columns, require_metric
from benchlib.analysis.tables import (  # noqa: F401  (part of analysis's API)
    BOOKKEEPING,
    CONFIG_COLUMNS,
    DERIVED,
    DERIVED_SUFFIXES,
    config_columns,
    failed,
    labels,
    ok,
)
from benchlib.compare.regression import higher_is_better
from benchlib.errors import InputError
from benchlib.fleet.outliers import outliers as fleet_outliers
from benchlib.kinds import is_probe
from benchlib.measure.timing import PHASES
from benchlib.records import configuration, flags
from benchlib.records.run_table import ScalingTable
from benchlib.vocabulary import DEFAULT_THRESHOLD


def hashable(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each list, mapping, set or tuple in its object columns replaced by its text,
    so grouping and pairing on any column works (a table built by hand may hold one; a loaded
    one never does: :mod:`benchlib.records.values`)."""
    df = df.copy()
    for column in df.columns[df.dtypes.map(pd.api.types.is_object_dtype)]:
        if pd.api.types.infer_dtype(df[column], skipna=True) == "mixed":
            df[column] = [str(v) if isinstance(v, (list, dict, set, tuple)) else v
                          for v in df[column]]
    return df


def aggregate(df: pd.DataFrame, by: Sequence[str] | None = None,
              metric: str = "throughput", also: Sequence[str] = ()) -> pd.DataFrame:
    """Repeated runs of one configuration as one row: median ``metric``, ``spread``, ``count``
    (and ``flags``: every flag of any repeat, when the runs carry flags), and the median of
    each column of ``also`` that ``df`` has (NaN where no repeat measured it).

    ``spread`` is IQR / median over the repeats (0 for a single run).
    """
    df = hashable(ok(df))
    by = list(by) if by is not None else config_columns(df)
    def _spread(values: pd.Series) -> float:
        q25, q50, q75 = np.nanpercentile(values, [25, 50, 75])
        return float((q75 - q25) / q50) if q50 else float("nan")

    grouped = df.groupby(by, dropna=False, sort=False)[metric] if by else None
    if grouped is None:
        table = pd.DataFrame({metric: [df[metric].median()], "spread": [_spread(df[metric])],
                              "count": [len(df)]})
        if "flags" in df:
            table["flags"] = flags.join(n for f in df["flags"] for n in flags.of(f))
        for column in (c for c in also if c in df):
            table[column] = pd.to_numeric(df[column], errors="coerce").median()
        return table
    table = grouped.agg([("median", "median"), ("spread", _spread), ("count", "count")]) \
        .rename(columns={"median": metric}).reset_index()
    for column in (c for c in also if c in df):
        medians = df.assign(**{column: pd.to_numeric(df[column], errors="coerce")}).groupby(
            by, dropna=False, sort=False)[column].median()
        table[column] = medians.to_numpy()
    if "flags" in df:
        joined = df.groupby(by, dropna=False, sort=False)["flags"].agg(
            lambda values: flags.join(n for f in values for n in flags.of(f)))
        table["flags"] = joined.to_numpy()
    return table


def scaling(df: pd.DataFrame, metric: str = "throughput",
            by: Sequence[str] | None = None) -> pd.DataFrame:
    """Add ``speedup`` and ``efficiency`` against the fewest devices of the same configuration,
    ``baseline_devices`` (that fewest count), ``baseline_key`` (one number per configuration)
    and ``flags`` (``superlinear`` where efficiency exceeds 1.10, besides each run's own).

    ``speedup`` = metric / (median metric at the fewest devices of the configuration);
    ``efficiency`` = speedup x fewest devices / num_devices. ``by`` names the columns that define
    "the same configuration" (default: every non-metric column except ``num_devices``).
    Probes are left out; shown, the frame leads with speedup and efficiency (``ScalingTable``).
    """
    require_metric(df, metric, "scaling", rate=True)
    require_columns(df, by, "scaling")
    df = hashable(benchmarks(ok(df)))
    by = list(by) if by is not None else config_columns(df, exclude=("num_devices", "num_nodes"))
    # whole columns at once, one group number per configuration
    keys = (df.groupby(by, dropna=False, sort=False).ngroup() if by
            else pd.Series(0, index=df.index)).to_numpy()
    devices = df["num_devices"]
    fewest = devices.groupby(keys).transform("min")
    at_fewest = (devices == fewest).fillna(False).astype(bool)
    base = df[metric].where(at_fewest).groupby(keys).transform("median")
    df["speedup"] = (df[metric] / base).astype(float)
    df["efficiency"] = (df["speedup"] * fewest / devices).astype(float)
    df["baseline_devices"] = fewest.astype(object)
    df["baseline_key"] = keys
    df = flags.with_flags(df)
    return ScalingTable.of(flags.add_flag(df, df["efficiency"] > flags.SUPERLINEAR_EFFICIENCY,
                                   "superlinear"))


def scaling_table(df: pd.DataFrame, metric: str = "throughput",
                  by: Sequence[str] | None = None, value: str | None = None,
                  mark: bool = True) -> pd.DataFrame:
    """The classic sheet: one row per device count, one column per configuration, a median column.

    With ``mark``, a configuration with any flagged run (:mod:`benchlib.records.flags`) is labelled
    ``name ⚠``.

    ``value`` is ``metric`` (default), ``speedup`` or ``efficiency``; repeats are medians. When
    some configurations ran on several device counts, those measured on one count only are
    left out (they have no scaling to show).
    """
    scaled = scaling(df, metric, by)
    by = list(by) if by is not None else config_columns(scaled, exclude=("num_devices", "num_nodes"))
    counts = scaled.groupby(by, dropna=False)["num_devices"].transform("nunique") if by else None
    if counts is not None and (counts > 1).any():
        scaled = scaled[counts > 1]
    value = value or metric
    varying = configuration.varying(scaled, by, missing_too=True) or by[:1]
    names = labels(scaled, varying)
    flagged = set(names[[bool(flags.of(f)) for f in scaled["flags"]]]) if mark else set()
    names = names.map(lambda name: flags.marked(name, "flagged" if name in flagged else ""))
    table = scaled.assign(configuration=names).pivot_table(
        index="num_devices", columns="configuration", values=value, aggfunc="median")
    table["median"] = table.median(axis=1)
    return table


def _pair_columns(df: pd.DataFrame, factor: str, a: object, b: object) -> tuple[list, list, list]:
    """Configuration columns that apply to both sides (rows with a and with b hold values of
    them), and those that apply to side a only and to side b only (kept apart, not paired on):
    :func:`benchlib.records.configuration.pair`."""
    is_a, is_b = ((df[factor] == side).fillna(False).to_numpy(dtype=bool) for side in (a, b))
    pairing = configuration.pair(df[is_a], df[is_b], config_columns(df, exclude=(factor,)))
    return list(pairing.on), list(pairing.only_base), list(pairing.only_new)


def compare(df: pd.DataFrame, factor: str, a: object, b: object, metric: str = "throughput",
            on: Sequence[str] | None = None) -> pd.DataFrame:
    """Paired ratios of ``metric`` between ``factor == a`` and ``factor == b``.

    One row per pair of configurations equal in every ``on`` column: the ``on`` columns, then
    ``a`` and ``b`` (the two metric values, medians over repeats), ``ratio`` = a / b, the
    repeats behind each side (``a_runs``, ``b_runs``) and their log values (``a_logs``,
    ``b_logs``) for :func:`effect`.
    ``on`` defaults to the configuration columns that apply to both sides; a column that applies
    to one side only (``synthetic_kind`` when comparing synthetic with real data) is not paired
    on but kept, so each of its values gets its own row. The geometric mean of ``ratio`` is the
    headline (:func:`headline`, :func:`effect`).
    """
    if not isinstance(factor, str):
        raise InputError(f"compare: factor={factor!r}: give one column's name (batch_size)")
    require_columns(df, [factor], "compare", argument="factor")
    require_columns(df, on, "compare", argument="on")
    require_metric(df, metric, "compare")
    df = hashable(ok(df))
    held = set(df[factor].dropna().astype(str))
    for value in (a, b):  # a scalar no run has (a list-valued setting is matched as given)
        if isinstance(value, (str, int, float, np.generic)) and str(value) not in held:
            raise InputError(f"compare: no finished run has {factor}={value!r}; its values: "
                             f"{', '.join(sorted(held)[:12]) or 'none'}")
    if str(a) == str(b):
        raise InputError(f"compare: a and b are both {a!r}: a value compared with itself")
    if on is None:
        on, only_a, only_b = _pair_columns(df, factor, a, b)
    else:
        on, only_a, only_b = list(on), [], []

    values = [metric]

    def side(value: object, extra: list[str]) -> pd.DataFrame:
        rows = df[df[factor] == value].copy()
        rows["_log"] = np.log(pd.to_numeric(rows[metric], errors="coerce").where(lambda v: v > 0))
        keys = [*on, *extra]
        grouped = rows.groupby(keys, dropna=False, sort=False) if keys else rows.groupby(
            lambda _: 0)
        table = grouped[values].median()
        table["logs"] = grouped["_log"].agg(lambda v: [float(x) for x in v if np.isfinite(x)])
        return table.reset_index(drop=not keys)

    left, right = side(a, only_a), side(b, only_b)
    if on:
        pairs = left.merge(right, on=on, suffixes=("_a", "_b"))
    else:
        pairs = left.add_suffix("_a").merge(right.add_suffix("_b"), how="cross").rename(
            columns={f"{c}_a": c for c in only_a} | {f"{c}_b": c for c in only_b})
    result = pairs[[*on, *only_a, *only_b]].copy()
    result["a"] = pairs[f"{metric}_a"].to_numpy()
    result["b"] = pairs[f"{metric}_b"].to_numpy()
    result["ratio"] = result["a"] / result["b"]
    result["a_runs"] = [len(v) for v in pairs["logs_a"]]
    result["b_runs"] = [len(v) for v in pairs["logs_b"]]
    result["a_logs"] = pairs["logs_a"].to_numpy()
    result["b_logs"] = pairs["logs_b"].to_numpy()
    if "flags" in df:
        result["flags"] = _pair_flags(df, factor, a, b, on, only_a, only_b, result)
    return result.dropna(subset=["ratio"]).reset_index(drop=True)


def _pair_flags(df: pd.DataFrame, factor: str, a: object, b: object, on: list[str],
                only_a: list[str], only_b: list[str], result: pd.DataFrame) -> list[str]:
    """Every flag of the runs behind each pair (either side)."""
    def keys(frame: pd.DataFrame, columns: list[str]) -> list[tuple]:
        """Each row's values of ``columns`` as text (column by column: no row objects)."""
        return list(zip(*([str(v) for v in frame[c].tolist()] for c in columns), strict=True)) \
            if columns else [()] * len(frame)

    def side_flags(value: object, extra: list[str]) -> dict[tuple, list[str]]:
        rows = df[df[factor] == value]
        found: dict[tuple, list[str]] = {}
        for key, text in zip(keys(rows, [*on, *extra]), rows["flags"].tolist(), strict=True):
            found.setdefault(key, []).extend(flags.of(text))
        return found

    left, right = side_flags(a, only_a), side_flags(b, only_b)
    return [flags.join(left.get(key_a, []) + right.get(key_b, []))
            for key_a, key_b in zip(keys(result, [*on, *only_a]), keys(result, [*on, *only_b]),
                                    strict=True)]


def effect(pairs: pd.DataFrame, level: float = 0.95) -> dict[str, object]:
    """The effect of a factor over :func:`compare`'s pairs: ``geomean`` (the geometric mean
    ratio, the headline), ``low``, ``high``, ``pairs``, ``significant`` (the interval excludes
    1.0), ``known``, ``method`` (what the interval is made from) and ``unreliable`` (why, when a
    pair's runs were contended or throttled): see :func:`benchlib.analysis.intervals.effect`."""
    return intervals.effect(pairs, level)


def headline(pairs: pd.DataFrame) -> float:
    """:func:`effect`'s ``geomean`` (NaN when nothing paired): the geometric mean ratio a / b,
    the figure every page, table and plot states for the comparison."""
    return float(intervals.effect(pairs)[intervals.HEADLINE])


def breakdown(df: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """Median seconds per iteration in each phase per configuration, with ``bottleneck`` (the
    phase with the most time), ``data_share`` (data wait over the iteration, else over the
    phases' sum) and ``flags`` (its runs' flags). Probes left out."""
    df = hashable(benchmarks(ok(df)))
    default = ("cluster", "gpu", "num_devices", "num_workers", "benchmark", "model", "dataset",
               "batch_size", "precision")
    by = list(by) if by is not None else [c for c in default if c in df]
    phases = [f"time_{p}_s" for p in PHASES if f"time_{p}_s" in df and df[f"time_{p}_s"].notna().any()]
    columns = [*phases, *(["time_iteration_s"] if "time_iteration_s" in df else [])]
    table = df.groupby(by, dropna=False, sort=False)[columns].median().reset_index()
    table["count"] = df.groupby(by, dropna=False, sort=False).size().to_numpy()
    phase_times = table[phases]
    total = table["time_iteration_s"] if "time_iteration_s" in table else phase_times.sum(axis=1)
    total = total.fillna(phase_times.sum(axis=1, min_count=1))
    timed = phase_times.notna().any(axis=1)
    bottleneck = pd.Series(None, index=table.index, dtype=object)
    if timed.any():
        bottleneck[timed] = (phase_times[timed].idxmax(axis=1)
                             .str.removeprefix("time_").str.removesuffix("_s"))
    table["bottleneck"] = bottleneck
    # medians of phases need not add up: a wait beyond the iteration is all of it
    table["data_share"] = (table.get("time_data_s", np.nan) / total).clip(upper=1.0)
    if "flags" in df:
        table["flags"] = df.groupby(by, dropna=False, sort=False)["flags"].agg(
            flags.union).to_numpy()
    return table


def expected(df: pd.DataFrame, factor: str, a: object, b: object, expected_ratio: float,
             metric: str = "throughput", on: Sequence[str] | None = None) -> pd.DataFrame:
    """Measured speed of ``a`` relative to ``b`` against an expected ratio from a reference.

    Where lower is better (``time_*``: :func:`regression.higher_is_better`) speed is the
    inverse, so the speed ratio is b / a.
    Adds ``speed_ratio``, ``expected`` and ``slowdown`` = expected / speed_ratio: how many times
    slower ``a`` ran than it should have (1 = as expected, 6 = six times too slow).
    """
    pairs = compare(df, factor, a, b, metric, on)
    pairs["speed_ratio"] = pairs["ratio"] if higher_is_better(metric) else 1 / pairs["ratio"]
    pairs["expected"] = expected_ratio
    pairs["slowdown"] = expected_ratio / pairs["speed_ratio"]
    return pairs


def extrapolate(df: pd.DataFrame, iterations: float | None = None,
                samples: float | None = None) -> pd.DataFrame:
    """Add ``hours`` to reach ``iterations`` (from time_iteration_s) or ``samples`` (images or
    voxels, from throughput)."""
    if (iterations is None) == (samples is None):
        raise ValueError("extrapolate: give exactly one of iterations or samples")
    df = ok(df).copy()
    if iterations is not None:
        df["hours"] = iterations * df["time_iteration_s"] / 3600
    else:
        df["hours"] = samples / df["throughput"] / 3600
    return df


SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def benchmarks(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of workloads, without the probes (their kinds' ``probe``), whose metrics are not
    throughputs."""
    if "benchmark" not in df:
        return df
    return df[~df["benchmark"].map(is_probe).astype(bool)]


def allreduce_curves(df: pd.DataFrame) -> pd.DataFrame:
    """The all-reduce probes as long rows: configuration, ``size``, ``size_bytes``, ``busbw_GBps``
    (medians over repeats), from the records' ``busbw_<size>`` columns."""
    probes = ok(df)
    sizes = [c for c in probes.columns if re.fullmatch(r"busbw_\d+(B|KiB|MiB|GiB)", c)]
    probes = probes.dropna(subset=sizes, how="all") if sizes else probes.iloc[0:0]
    if probes.empty or not sizes:
        return pd.DataFrame(columns=["configuration", "size", "size_bytes", "busbw_GBps"])
    described = [c for c in ("cluster", "gpu", "num_nodes", "num_devices", "precision")
                 if c in probes]
    frame = probes.assign(configuration=labels(probes, described))
    long = frame.melt(id_vars=["configuration"], value_vars=sizes, var_name="size",
                      value_name="busbw_GBps").dropna(subset=["busbw_GBps"])
    long["size"] = long["size"].str.removeprefix("busbw_")
    parts = long["size"].str.extract(r"(\d+)(\D+)")
    long["size_bytes"] = parts[0].astype(int) * parts[1].map(SIZE_UNITS)
    return (long.groupby(["configuration", "size", "size_bytes"], as_index=False)["busbw_GBps"]
            .median().sort_values(["configuration", "size_bytes"], ignore_index=True))


def distributed_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Runs over several ranks: devices, nodes, backend, straggler spread (slowest / fastest
    rank's wall time) and the launcher's seconds beyond the slowest rank's timed loop."""
    runs = benchmarks(ok(df))
    if "num_devices" not in runs:
        return runs.iloc[0:0]
    runs = runs[runs["num_devices"].fillna(1) > 1]
    columns = [c for c in ("cluster", "gpu", "benchmark", "model", "dataset", "batch_size",
                           "scaling", "num_nodes", "num_devices", "dist_backend", "node_launcher",
                           "throughput", "straggler_spread", "launch_overhead_s") if c in runs]
    return runs[columns].reset_index(drop=True)


def outliers(df: pd.DataFrame, metric: str = "throughput",
             by: Sequence[str] | None = ("gpu",)) -> pd.DataFrame:
    """``df`` with ``robust_z`` (median / MAD within each ``by`` group) and ``outlier``
    (|robust_z| > 3.5): see :mod:`benchlib.fleet.outliers`."""
    return fleet_outliers(df, metric, by)


def history(df: pd.DataFrame, metric: str = "throughput", by: Sequence[str] | None = None,
            threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """Campaigns of each configuration over time with regressions against the previous one
    marked: see :func:`benchlib.analysis.campaign_history.history`."""
    return campaign_history(df, metric, by, threshold)
