"""Fleet health over time: baselines made from the fleet itself, and each node's state per
configuration (``benchlib fleet``, the acceptance page's node states).

Where :mod:`benchlib.fleet.outliers` compares the nodes of one campaign with each other, this
reads many campaigns (nights) of the same configurations on the same nodes:

- **Configuration**: the configuration columns (:func:`~benchlib.analysis.tables.config_columns`)
  less where and when a run was made (campaign, cluster, host, times); the GPU model is one of
  them, so a baseline is per GPU model and configuration. A failed run's record holds only the
  point's parameters (no GPU, no unit): it belongs to each configuration of its node's GPU
  whose values agree with every value it has.
- **Node**: the Slurm job's node list where a run has one, else its ``host`` (a job that never
  started leaves a failed record with neither: it is left out and counted).
- **Time**: ``started_at`` (ISO 8601, UTC); where a record has none, the time
  :func:`benchlib.analysis.regression.run_times` finds (a time column, else the sidecar's
  modification time).
- **Window** (``window_days``, :data:`VALIDITY_DAYS` = 7): a result is valid this long, as
  Google's cluster-health-scanner expires its results. **Recent runs** of a node: its
  :data:`RECENT_RUNS` (5) latest finished runs inside the window.
- **Healthy node** (of a configuration): its latest run lies inside the window and finished, it
  has a recent undisturbed run (no ``contended`` / ``throttled`` flag), and the median of those
  is no outlier among the nodes (|robust z| <= 3.5, :func:`benchlib.fleet.outliers.robust_z`).
- **Baseline** (SuperBench's rule): the median over the healthy nodes of each one's median
  recent run; it needs :data:`MIN_BASELINE_NODES` (3) healthy nodes, else there is none.

States (:class:`~benchlib.vocabulary.NodeState`), in this order of precedence:

- ``missing``: the node is expected (seen anywhere in the records with this GPU model, or
  listed in ``expected``) but never ran the configuration;
- ``stale``: its latest run of the configuration is older than the window;
- ``failed``: its latest run failed (the error is the reason), or finished with a ``metric`` of
  0, negative or missing: a run that did no work (as ``benchlib history`` counts it);
- ``unknown``: nothing to judge speed by: no baseline, every recent run disturbed (named), or
  one undisturbed campaign (the interval needs two);
- ``slow``: the node's recent undisturbed runs, one value per campaign (runs of one campaign
  move together: the campaign is the unit of noise), against the other healthy nodes' medians
  (:func:`benchlib.analysis.intervals.repeats_effect`, a 95 % Welch t interval) lie wholly
  below 1 - ``threshold`` (5 %): ``benchlib compare``'s regression rule, whose threshold an A/A
  test on this machine showed is needed beyond 1.0 (docs/measurements.md);
- ``ok``: otherwise. Disturbed runs never make a node slow: they are left out and named.

A node's overall state is the most severe of its configurations'
(:func:`benchlib.fleet.actions.node_summary`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd

import benchlib.analysis.campaign_noise as campaign_noise
import benchlib.analysis.intervals as intervals
import benchlib.analysis.regression as regression
from benchlib.analysis.comparable import WHERE
from benchlib.analysis.metrics import require_fraction, require_metric
from benchlib.analysis.tables import config_columns, configuration_labels
from benchlib.errors import InputError
from benchlib.fleet import outliers as fleet
from benchlib.formatting import missing
from benchlib.records import flags
from benchlib.vocabulary import DEFAULT_THRESHOLD, MAX_WINDOW_DAYS, CompareVerdict, NodeState, RecordStatus

#: Days a result stays valid: a node without a run of a configuration in this window is stale.
VALIDITY_DAYS = 7.0
#: How many of a node's latest finished runs in the window its recent speed is made of.
RECENT_RUNS = 5
#: A node name a drain line may carry (a Slurm host name).
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: Healthy nodes a baseline needs.
MIN_BASELINE_NODES = 3
#: Columns that say when or as what a run was made: never part of a configuration.
WHEN = ("started_at", "ended_at", "run_id", "env_slurm_job_nodelist")
#: Node states from the most severe; a node's overall state is the first of its own.
SEVERITY = tuple(NodeState)
NODELIST = "env_slurm_job_nodelist"
#: What to do when a node's recent runs were all disturbed.
RERUN_ADVICE = "re-run it on an idle node (an exclusive allocation; nothing else running)"


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
    """When each run started (UTC): ``started_at``, else :func:`regression.run_times`."""
    kind = "datetime64[ns, UTC]"
    found = (pd.to_datetime(df["started_at"], utc=True, errors="coerce", format="ISO8601")
             .astype(kind) if "started_at" in df else pd.Series(pd.NaT, index=df.index, dtype=kind))
    if found.isna().any():
        other = regression.run_times(df.drop(columns=["started_at"], errors="ignore")).astype(kind)
        found = found.where(found.notna(), other)
    return found


def _text(value: object) -> str:
    """A configuration value as text ('' when missing; 256.0 as 256, so that a failed run's
    integer matches a finished run's float)."""
    if missing(value):
        return ""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _assigned(runs: pd.DataFrame, columns: list[str], gpu_of: dict[str, str]) -> pd.DataFrame:
    """One row per (run, configuration): finished runs under their own configuration, a failed
    run under each configuration of its node's GPU whose values agree with all it has."""
    keys = [tuple(_text(v) for v in row) for row in runs[columns].itertuples(index=False)]
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


def _labels(configs: Iterable[tuple[str, ...]], columns: list[str]) -> dict[tuple, str]:
    """Each configuration in words: the one label of a configuration that compare and history
    give (:func:`~benchlib.analysis.tables.configuration_labels`: what varies within its
    benchmark), GPU and unit aside (the baseline is per GPU model; the table names it)."""
    configs = list(dict.fromkeys(configs))
    if not configs:
        return {}
    frame = pd.DataFrame(configs, columns=columns)
    keys = [c for c in columns if c not in ("gpu", "unit")]
    return dict(zip(configs, configuration_labels(frame, keys), strict=True))


#: How far past ``now`` a run may say it started (clocks of nodes differ a little): later, it is
#: dated in the future, left out and counted (``future``), never a node's latest state.
FUTURE_TOLERANCE = pd.Timedelta(hours=1)


@dataclass(frozen=True)
class FleetStates:
    """What :func:`node_states` found: its ``table`` (one row per configuration and node), the
    window it judged (``window_days`` up to ``now``), the ``threshold`` of slow and the
    ``metric``; ``baselines`` (one row per configuration: ``configuration``, ``gpu``,
    ``baseline`` (NaN: too few healthy nodes), ``healthy_nodes``, ``nodes``), and the runs
    left out: ``unplaced`` (no node known, :func:`node_names`) and ``future`` (dated more than
    :data:`FUTURE_TOLERANCE` after ``now``)."""

    table: pd.DataFrame
    now: pd.Timestamp
    window_days: float = VALIDITY_DAYS
    threshold: float = DEFAULT_THRESHOLD
    metric: str = "throughput"
    baselines: pd.DataFrame = field(default_factory=pd.DataFrame)
    unplaced: int = 0
    future: int = 0


def node_states(df: pd.DataFrame, metric: str = "throughput", window_days: float = VALIDITY_DAYS,
                now: object = None, expected: Sequence[str] = (), recent: int = RECENT_RUNS,
                threshold: float = DEFAULT_THRESHOLD,
                min_nodes: int = MIN_BASELINE_NODES) -> FleetStates:
    """:class:`FleetStates`; its table has one row per (configuration, node) with its ``state`` (see
    the module docstring) and why: ``configuration``, ``gpu``, ``node``, ``state``, ``reason``,
    ``latest`` (its latest run's start), ``runs`` (recent undisturbed runs judged), ``value``
    (their median), ``baseline``, ``ratio`` / ``low`` / ``high`` (speed over the other healthy
    nodes, 95 % interval), ``robust_z``, ``disturbed`` (flags of recent runs left out),
    ``error``. ``now`` (default: the current time) ends the window; ``expected`` lists nodes
    that should have run every configuration of their GPU (one never seen: every configuration).
    A bad argument raises InputError naming it."""
    require_metric(df, metric, "node_states", rate=True)
    expected = () if expected is None else expected
    if isinstance(expected, str) or not all(isinstance(n, str) and NODE_NAME.fullmatch(n)
                                             for n in expected):
        raise InputError(f"node_states: expected={expected!r}: give a list of node names "
                         "(letters, digits, . _ -), e.g. ['node01', 'node02'] "
                         "(fleet.actions.expected_nodes(['node[01-02]']) expands a Slurm list)")
    if isinstance(window_days, bool) or not isinstance(window_days, (int, float, np.number)) \
            or not 0 < float(window_days) <= MAX_WINDOW_DAYS:
        raise InputError(f"node_states: window_days={window_days!r}: give the validity window in "
                         f"days, above 0 and at most {MAX_WINDOW_DAYS:,} (default {VALIDITY_DAYS:g})")
    window_days = float(window_days)
    require_fraction(threshold, "node_states")
    given = now
    try:
        if now is not None and not isinstance(now, (str, pd.Timestamp, datetime)):
            raise TypeError(f"a {type(now).__name__}")
        now = pd.Timestamp.now(tz="UTC") if now is None else pd.Timestamp(now)
        if pd.isna(now):
            raise ValueError("no time given")
    except (ValueError, TypeError) as error:
        raise InputError(f"node_states: now={given!r}: not a time ({error}); give an ISO 8601 "
                         "time such as '2026-11-27T12:00Z' or a datetime") from None
    now = now.tz_localize("UTC") if now.tzinfo is None else now.tz_convert("UTC")
    runs = df.copy()
    runs["_node"] = node_names(runs)
    unplaced = int((runs["_node"] == "").sum())
    runs = runs[runs["_node"] != ""]
    runs["_time"] = run_started(runs)
    ahead = runs["_time"] > now + FUTURE_TOLERANCE  # a wrong clock: suspect, not the latest word
    runs = runs[~ahead.fillna(False).astype(bool)].copy()
    runs["_ok"] = (runs["status"].fillna(RecordStatus.OK) == RecordStatus.OK
                   if "status" in runs else True)
    runs["_value"] = (pd.to_numeric(runs[metric], errors="coerce") if metric in runs
                      else np.nan)
    runs = _no_work_failed(runs, metric)
    columns = [c for c in config_columns(runs, exclude=(*WHERE, *WHEN))
               if not c.startswith("_") and runs[c].notna().any()]
    gpus = runs[runs["_ok"]] if "gpu" in runs else runs.iloc[0:0]
    gpu_of = {n: str(g.mode().iloc[0]) for n, g in gpus.groupby("_node")["gpu"]
              if g.notna().any()} if len(gpus) else {}
    assigned = _assigned(runs, columns, gpu_of)
    label = _labels(assigned["_config"].unique(), columns)
    start = now - pd.Timedelta(days=window_days)
    gpu_at = columns.index("gpu") if "gpu" in columns else None
    every_node = sorted(set(runs["_node"]) | set(expected))
    table: list[dict[str, object]] = []
    said = {}  # flag text -> disturbed, once per distinct text
    texts = assigned["flags"] if "flags" in assigned else pd.Series("", index=assigned.index)
    assigned["_bad"] = [said.setdefault(t, bool(flags.disturbed([t]))) if isinstance(t, str)
                        else bool(flags.disturbed([t])) for t in texts]
    assigned["_flags"] = texts
    assigned["_error"] = assigned.get("error", "")
    assigned["_campaign"] = campaign_noise.units(assigned).to_numpy()
    assigned = assigned.sort_values("_time", kind="stable", na_position="first")
    ids = {config: number for number, config in enumerate(sorted(set(assigned["_config"])))}
    assigned["_cid"] = assigned["_config"].map(ids)
    naive = assigned["_time"].dt.tz_convert("UTC").dt.tz_localize(None)
    arrays = {"time": naive.to_numpy(dtype="datetime64[ns]"),
              **{name: assigned[f"_{name}"].to_numpy() for name in
                 ("ok", "value", "bad", "flags", "error", "campaign")}}
    groups = assigned.groupby(["_cid", "_node"], sort=False).indices
    rows = []
    for config, number in ids.items():
        gpu = config[gpu_at] if gpu_at is not None else ""
        nodes = [n for n in every_node if (number, n) in groups or gpu_of.get(n, gpu) == gpu]
        found = [_state(config, label[config], gpu, node,
                        _runs(arrays, groups.get((number, node))), start, recent)
                 for node in nodes]
        rows.extend(found)
        table.append(_judge(found, threshold, min_nodes))
    states = pd.DataFrame(rows, columns=_COLUMNS).drop(columns=["_config", "_values"])
    order = {s: i for i, s in enumerate(SEVERITY)}
    states = states.sort_values(["state", "configuration", "node"], key=lambda c: c.map(order)
                                if c.name == "state" else c, kind="stable").reset_index(drop=True)
    return FleetStates(states, now, window_days, threshold, metric, pd.DataFrame(table),
                       unplaced, int(ahead.sum()))


def _no_work_failed(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``runs`` with a finished run whose ``metric`` is 0, negative or missing made a failed
    one (``_ok`` False, its ``error`` saying why): a rate of 0 is a run that did no work, as
    ``benchlib history`` counts it, never a healthy node's latest word."""
    values = runs["_value"].to_numpy(dtype=float)
    idle = runs["_ok"].to_numpy(dtype=bool) & ~(np.isfinite(values) & (values > 0))
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


_COLUMNS = ["configuration", "gpu", "node", "state", "reason", "latest", "runs", "value",
            "baseline", "ratio", "low", "high", "robust_z", "disturbed", "error", "_config",
            "_values"]


def _runs(arrays: dict[str, np.ndarray], positions: np.ndarray | None) -> dict[str, np.ndarray] | None:
    """The columns of one node's runs of one configuration (None: it has none)."""
    return None if positions is None else {name: a[positions] for name, a in arrays.items()}


def _state(config: tuple, label: str, gpu: str, node: str, mine: dict[str, np.ndarray] | None,
           start: pd.Timestamp, recent: int) -> dict[str, object]:
    """The state a node's runs of one configuration (in time order: ``time`` naive UTC,
    ``ok``, ``value``, ``bad``, ``flags``, ``error``) give before the baseline: missing,
    stale, failed, or its recent undisturbed values to judge (state left empty)."""
    row = dict.fromkeys(_COLUMNS, np.nan) | {"configuration": label, "gpu": gpu, "node": node,
                                              "state": "", "reason": "", "disturbed": "",
                                              "error": "", "_config": config, "_values": []}
    if mine is None or not len(mine["time"]):
        return row | {"state": NodeState.MISSING.value, "runs": 0,
                      "reason": "no run of this configuration"}
    times, done = mine["time"], mine["ok"].astype(bool)
    since = np.datetime64(start.tz_convert("UTC").tz_localize(None), "ns")
    last = pd.Timestamp(times[-1], tz="UTC") if not np.isnat(times[-1]) else pd.NaT
    row["latest"] = last
    if pd.isna(last) or times[-1] < since:
        when = "an unknown time" if pd.isna(last) else f"{last:%Y-%m-%d}"
        return row | {"state": NodeState.STALE.value,
                      "reason": f"latest run {when}, before the window's start {start:%Y-%m-%d}"}
    if not done[-1]:
        error = _text(mine["error"][-1]) or "failed"
        return row | {"state": NodeState.FAILED.value, "error": error,
                      "reason": f"latest run failed: {error.splitlines()[0][:160]}"}
    fresh = np.flatnonzero(done & (times >= since))[-recent:]
    bad = mine["bad"][fresh].astype(bool)
    if bad.any():
        names = flags.disturbed(mine["flags"][fresh])
        row["disturbed"] = (f"{int(bad.sum())} of {len(fresh)} recent runs "
                            f"{' or '.join(names)}, left out")
    kept = fresh[~bad]
    values = mine["value"][kept].astype(float)
    good = np.isfinite(values) & (values > 0)
    row["runs"] = int(good.sum())
    row["value"] = float(np.median(values[good])) if good.any() else np.nan
    row["_values"] = _per_campaign(values[good], mine["campaign"][kept][good])
    return row


def _per_campaign(values: np.ndarray, campaigns: np.ndarray) -> list[list[float]]:
    """The values grouped by campaign (:func:`benchlib.analysis.campaign_noise.units`): runs of
    one campaign move together, so the campaign is the unit of a node's noise."""
    out: dict[object, list[float]] = {}
    for value, campaign in zip(values, campaigns, strict=True):
        out.setdefault(campaign, []).append(float(value))
    return list(out.values())


def _node_effect(groups: list[list[float]], others: np.ndarray) -> dict[str, object]:
    """A node's recent runs (``groups``: per campaign) against the other healthy nodes'
    medians: one value per campaign where there are several; from one campaign its runs, judged
    only beyond the floor where the noise between campaigns is unknown (as ``compare``)."""
    if len(groups) > 1:
        found = intervals.repeats_effect([intervals.geometric_mean(g) for g in groups], others,
                                         unit="campaign")
        if not found["known"]:
            return found
        found["method"] = (f"Welch t interval: {len(groups)} recent campaigns "
                           f"({sum(map(len, groups))} runs) against {len(others)} other healthy "
                           "nodes")
        return found
    found = intervals.repeats_effect([v for g in groups for v in g], others)
    if not found["known"]:
        return found
    found["method"] = (f"Welch t interval: {sum(map(len, groups))} recent runs of one campaign "
                       f"against {len(others)} other healthy nodes; {campaign_noise.UNKNOWN_SAID}"
                       f", judged only beyond {campaign_noise.UNKNOWN_FLOOR:.0%}")
    return {**found, "floor": campaign_noise.UNKNOWN_FLOOR}


def _judge(rows: list[dict[str, object]], threshold: float,
           min_nodes: int) -> dict[str, object]:
    """Judge one configuration's ``rows`` left open (slow / ok / unknown, in place) against
    the baseline of its healthy nodes; the baseline's row of :func:`baselines`."""
    open_ = [r for r in rows if r["state"] == ""]
    values = pd.Series([r["value"] for r in open_], dtype=float)
    z = fleet.robust_z(values) if len(values) else values
    for row, score in zip(open_, z, strict=True):
        row["robust_z"] = score
    healthy = [i for i, score in enumerate(z) if abs(score) <= fleet.OUTLIER_Z]
    baseline = float(values[healthy].median()) if len(healthy) >= min_nodes else np.nan
    pool = values.to_numpy()[healthy]
    place = {index: at for at, index in enumerate(healthy)}
    for index, row in enumerate(open_):
        others = np.delete(pool, place[index]) if index in place else pool
        row.update(zip(("state", "reason", "baseline", "ratio", "low", "high"),
                       _verdict(row, others, baseline, threshold, len(healthy), min_nodes),
                       strict=True))
    return {"configuration": rows[0]["configuration"], "gpu": rows[0]["gpu"],
            "baseline": baseline, "healthy_nodes": len(healthy), "nodes": len(rows)}


def _verdict(row: dict[str, object], others: np.ndarray, baseline: float, threshold: float,
             healthy: int, min_nodes: int) -> list[object]:
    """[state, reason, baseline, ratio, low, high] of one node with recent runs."""
    disturbed = f"; {row['disturbed']}" if row["disturbed"] else ""
    if not row["_values"]:
        if row["disturbed"]:
            return [NodeState.UNKNOWN.value, f"{row['disturbed']}: {RERUN_ADVICE}",
                    baseline, np.nan, np.nan, np.nan]
        return [NodeState.UNKNOWN.value, "no recent run in the window measured a speed",
                baseline, np.nan, np.nan, np.nan]
    if np.isnan(baseline):
        return [NodeState.UNKNOWN.value, f"no baseline: {healthy} healthy node"
                f"{'' if healthy == 1 else 's'}, {min_nodes} needed{disturbed}",
                baseline, np.nan, np.nan, np.nan]
    found = _node_effect(row["_values"], others)
    said = regression.verdict(found, threshold)
    ratio, low, high = found[intervals.HEADLINE], found["low"], found["high"]
    outlier = (f"; robust z {row['robust_z']:+.1f}, an outlier"
               if abs(row["robust_z"]) > fleet.OUTLIER_Z else "")
    if said == CompareVerdict.UNKNOWN:
        return [NodeState.UNKNOWN.value, f"{ratio:.2f}x the baseline, interval unknown: "
                f"{found['method']}{outlier}{disturbed}", baseline, ratio, low, high]
    shown = f"{ratio:.2f}x the baseline (95 % interval {low:.2f}-{high:.2f}; {found['method']})"
    if said == CompareVerdict.REGRESSION:
        band = max(threshold, float(found.get("floor") or 0.0))
        return [NodeState.SLOW.value, f"{shown}: more than {band * 100:g} % slower{outlier}"
                f"{disturbed}", baseline, ratio, low, high]
    return [NodeState.OK.value, f"{shown}{outlier}{disturbed}", baseline, ratio, low, high]
