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
  :func:`benchlib.analysis.run_order.run_times` finds (a time column, else the sidecar's
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
- ``slow``: **against the fleet**: each of the node's campaigns in the window (the geometric
  mean of its undisturbed runs there; runs of one campaign move together: the campaign is the
  unit of noise) over the fleet's median of the same campaign (which cancels what moved the
  whole fleet that night), a one-sample 95 % t interval over those campaigns (since its own
  latest change point, where it has one) lying wholly below 1 - ``threshold`` (5 %):
  ``benchlib compare``'s regression rule; or **against its own past**: the latest change point
  of that series (:mod:`benchlib.fleet.paired`: ``benchlib history``'s method and verdict) is
  a regression. The reason says which, and since when. A node's
  persistent speed within a model's normal spread (+-2-3 %) is not slow: on the planted fleets
  of ``benchmarks/fleet_planted.py`` (48 nodes x 30 nights, nodes within +-2 %, the fleet
  moving +-1.5 % a night, 1 % run noise) no healthy node was drained and every node slowed by
  8 % or more was found within 2 campaigns (docs/measurements.md). With one campaign in the
  window, its runs against the other healthy nodes' medians (Welch), judged only beyond the
  floor of an unknown noise between campaigns. Where the fleet's own median changes (a step
  every node took: a driver, a firmware), that change is named once per configuration
  (``fleet_moved``) and no node is slow for it;
- ``ok``: otherwise. Disturbed runs never make a node slow: they are left out and named.

A node's overall state is the most severe of its configurations'
(:func:`benchlib.fleet.actions.node_summary`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd

import benchlib.analysis.campaign_noise as campaign_noise
import benchlib.analysis.intervals as intervals
import benchlib.compare.regression as regression
from benchlib.analysis.metrics import require_fraction, require_metric
from benchlib.analysis.tables import config_columns
from benchlib.compare.comparable import WHERE
from benchlib.errors import InputError
from benchlib.fleet import outliers as fleet
from benchlib.fleet import paired, placing
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
#: What to do when a node's recent runs were all disturbed.
RERUN_ADVICE = "re-run it on an idle node (an exclusive allocation; nothing else running)"


#: How far past ``now`` a run may say it started (clocks of nodes differ a little): later, it is
#: dated in the future, left out and counted (``future``), never a node's latest state.
FUTURE_TOLERANCE = pd.Timedelta(hours=1)


@dataclass(frozen=True)
class FleetStates:
    """What :func:`node_states` found: its ``table`` (one row per configuration and node), the
    window it judged (``window_days`` up to ``now``), the ``threshold`` of slow and the
    ``metric``; ``baselines`` (one row per configuration: ``configuration``, ``gpu``,
    ``baseline`` (NaN: too few healthy nodes), ``healthy_nodes``, ``nodes``, ``fleet_moved``
    (the whole fleet's own changes in words, :func:`benchlib.fleet.paired.fleet_moves`)), and
    the runs left out: ``unplaced`` (no node known,
    :func:`benchlib.fleet.placing.node_names`) and ``future`` (dated more than
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
    runs["_node"] = placing.node_names(runs)
    unplaced = int((runs["_node"] == "").sum())
    runs = runs[runs["_node"] != ""]
    runs["_time"] = placing.run_started(runs)
    ahead = runs["_time"] > now + FUTURE_TOLERANCE  # a wrong clock: suspect, not the latest word
    runs = runs[~ahead.fillna(False).astype(bool)].copy()
    runs["_ok"] = (runs["status"].fillna(RecordStatus.OK) == RecordStatus.OK
                   if "status" in runs else True)
    runs["_value"] = (pd.to_numeric(runs[metric], errors="coerce") if metric in runs
                      else np.nan)
    runs = placing.no_work_failed(runs, metric)
    columns = [c for c in config_columns(runs, exclude=(*WHERE, *WHEN))
               if not c.startswith("_") and runs[c].notna().any()]
    gpus = runs[runs["_ok"]] if "gpu" in runs else runs.iloc[0:0]
    gpu_of = {n: str(g.mode().iloc[0]) for n, g in gpus.groupby("_node")["gpu"]
              if g.notna().any()} if len(gpus) else {}
    assigned = placing.assigned(runs, columns, gpu_of)
    label = placing.labels(assigned["_config"].unique(), columns)
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
        table.append(_judge(found, threshold, min_nodes, start))
    states = pd.DataFrame(rows, columns=_COLUMNS).drop(columns=["_config", "_values",
                                                                "_campaigns"])
    order = {s: i for i, s in enumerate(SEVERITY)}
    states = states.sort_values(["state", "configuration", "node"], key=lambda c: c.map(order)
                                if c.name == "state" else c, kind="stable").reset_index(drop=True)
    return FleetStates(states, now, window_days, threshold, metric, pd.DataFrame(table),
                       unplaced, int(ahead.sum()))


_COLUMNS = ["configuration", "gpu", "node", "state", "reason", "latest", "runs", "value",
            "baseline", "ratio", "low", "high", "robust_z", "disturbed", "error", "_config",
            "_values", "_campaigns"]


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
                                              "error": "", "_config": config, "_values": [],
                                              "_campaigns": {}}
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
        error = placing.text(mine["error"][-1]) or "failed"
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
    every = mine["value"].astype(float)
    calm = done & ~mine["bad"].astype(bool) & np.isfinite(every) & (every > 0)
    row["_campaigns"] = paired.campaign_means(times[calm], every[calm], mine["campaign"][calm])
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


def _judge(rows: list[dict[str, object]], threshold: float, min_nodes: int,
           start: pd.Timestamp | None = None) -> dict[str, object]:
    """Judge one configuration's ``rows`` left open (slow / ok / unknown, in place): each
    node's campaigns in the window paired with the fleet's median of the same campaign
    (against the fleet) and the change points of that series (against its own past); the
    baseline of its healthy nodes is shown; the baseline's row of :func:`baselines`."""
    medians = paired.campaign_medians(rows, min_nodes)
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
        said = (paired.verdict(row, medians, baseline, threshold, start)
                if medians and row["_values"] and not np.isnan(baseline) else None)
        row.update(zip(("state", "reason", "baseline", "ratio", "low", "high"),
                       said or _verdict(row, others, baseline, threshold, len(healthy),
                                        min_nodes), strict=True))
    return {"configuration": rows[0]["configuration"], "gpu": rows[0]["gpu"],
            "baseline": baseline, "healthy_nodes": len(healthy), "nodes": len(rows),
            "fleet_moved": paired.fleet_moves(rows, medians, threshold)}


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
