"""Where each run of a fleet belongs (``benchlib fleet``; :mod:`benchlib.fleet.health` judges
the nodes): its node (the Slurm job's node list, else its host), when it started, which
configurations it counts for (a failed record's only the point's parameters), and a finished
run that did no work made a failed one."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

import benchlib.analysis.run_order as run_order
from benchlib.formatting import missing
from benchlib.records import configuration

#: The column of the Slurm job's node list.
NODELIST = "env_slurm_job_nodelist"


def node_names(df: pd.DataFrame) -> pd.Series:
    """Each run's node: its Slurm job's node list where it has one, else its ``host``; ''
    (unknown) for a failed record written from outside its job (``slurm_state`` set: a job
    that ended without a record) that names no node: its host is where the sweep ran."""
    empty = pd.Series("", index=df.index)
    host = df.get("host", empty)
    if "slurm_state" in df:
        host = host.where(df["slurm_state"].map(missing), "")
    names = df.get(NODELIST, empty)
    names = names.where(~names.map(missing), host)
    return names.map(lambda v: "" if missing(v) else str(v))


def run_started(df: pd.DataFrame) -> pd.Series:
    """When each run started (UTC): ``started_at``, else :func:`benchlib.analysis.run_order.run_times`."""
    kind = "datetime64[ns, UTC]"
    found = (pd.to_datetime(df["started_at"], utc=True, errors="coerce", format="ISO8601")
             .astype(kind) if "started_at" in df else pd.Series(pd.NaT, index=df.index, dtype=kind))
    if found.isna().any():
        other = run_order.run_times(df.drop(columns=["started_at"], errors="ignore")).astype(kind)
        found = found.where(found.notna(), other)
    return found


def text(value: object) -> str:
    """A configuration value as text ('' when missing; 256.0 as 256, so that a failed run's
    integer matches a finished run's float)."""
    if missing(value):
        return ""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


def assigned(runs: pd.DataFrame, columns: list[str], gpu_of: dict[str, str]) -> pd.DataFrame:
    """One row per (run, configuration): finished runs under their own configuration, a failed
    run under each configuration of its node's GPU whose values agree with all it has."""
    keys = [tuple(text(v) for v in row) for row in runs[columns].itertuples(index=False)]
    done = runs["_ok"].to_numpy()
    known = sorted({k for k, ok in zip(keys, done, strict=True) if ok})
    gpu_at = columns.index("gpu") if "gpu" in columns else None
    rows, configs = [], []
    for position, (key, ok, node) in enumerate(zip(keys, done, runs["_node"], strict=True)):
        if not ok:
            if gpu_at is not None and not key[gpu_at]:
                key = (*key[:gpu_at], gpu_of.get(node, ""), *key[gpu_at + 1:])
            matching = [k for k in known if all(not v or v == w for v, w in zip(key, k, strict=True))]
            for match in matching or [key]:
                rows.append(position)
                configs.append(match)
            continue
        rows.append(position)
        configs.append(key)
    out = runs.iloc[rows].reset_index(drop=True)
    out["_config"] = configs
    return out


def labels(configs: Iterable[tuple[str, ...]], columns: list[str]) -> dict[tuple, str]:
    """Each configuration in words: the one label of a configuration that compare and history
    give (:func:`~benchlib.records.configuration.label`: what varies within its
    benchmark), GPU and unit aside (the baseline is per GPU model; the table names it)."""
    configs = list(dict.fromkeys(configs))
    if not configs:
        return {}
    frame = pd.DataFrame(configs, columns=columns)
    keys = [c for c in columns if c not in ("gpu", "unit")]
    return dict(zip(configs, configuration.label(frame, keys), strict=True))


def no_work_failed(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``runs`` with a finished run whose ``metric`` is 0, negative or missing made a failed
    one (``_ok`` False, its ``error`` saying why): a rate of 0 is a run that did no work, as
    ``benchlib history`` counts it, never a healthy node's latest word."""
    values = runs["_value"].to_numpy(dtype=float)
    finite = np.isfinite(values)
    recorded = np.ones(len(runs), dtype=bool)  # a missing value fails a run only where its
    if "benchmark" in runs:                    # kind records one (old probes had none)
        kinds = runs["benchmark"].astype(str)
        recorded = kinds.isin(set(kinds[finite])).to_numpy()
    lacking = (finite & (values <= 0)) | (~finite & recorded)
    idle = runs["_ok"].to_numpy(dtype=bool) & lacking
    if not idle.any():
        return runs
    runs = runs.copy()
    said = np.where(np.isnan(values[idle]), f"finished without a {metric}",
                    [f"{metric} {v:g}: the run did no work" for v in values[idle]])
    errors = runs["error"].astype(object) if "error" in runs else pd.Series("", index=runs.index,
                                                                              dtype=object)
    errors[idle] = said
    runs["error"] = errors
    runs.loc[idle, "_ok"] = False
    return runs
