"""Why a run was as fast as it was: the node's ceilings and a bottleneck verdict per run.

The node probe (``benchmark: probe_node``) measures what the node can do at most. A run is then

- **throttled** when NVML reported its clocks held down by a power or thermal limit in at least
  :data:`THROTTLED_SHARE` of the telemetry samples;
- **data-bound** when the device waited for the next batch (the ``data`` phase, or ``read`` for
  blockwise prediction) for at least :data:`DATA_BOUND_SHARE` of the median iteration. The
  reason puts the loader's capacity from the probe (images/s at the run's worker count) beside
  what the model consumes when it does not wait;
- **compute-bound** otherwise, with model FLOPs utilization: the model's FLOPs per sample
  (torch.utils.flop_counter) times samples per second per device, over two ceilings in the
  run's precision: the datasheet's peak (``mfu``, where the GPU is listed) and what this node
  reaches (``mfu_achievable``: the probe's best matmul over a sweep of shapes, else its
  one-shape figure). A probe that was itself disturbed (``contended`` or ``throttled``) gives
  no ceiling: what the node reaches is then unknown, and said so.
"""

from __future__ import annotations

import re

import pandas as pd

from benchlib import formatting, kinds, registry
from benchlib.analysis import comparisons as analysis
from benchlib.kinds import kind_named
from benchlib.measure.contention import reasons
from benchlib.records import flags
from benchlib.reference import datasheet_for
from benchlib.vocabulary import matmul_precision

DATA_BOUND_SHARE = 0.10  #: waiting this share of the iteration for data makes a run data-bound
THROTTLED_SHARE = 0.10  #: clocks held down in this share of samples makes a run throttled
#: Probe figures compared with datasheet columns: (record column, datasheet column, label,
#: unit), as the node probe's kind declares them.
CEILINGS = kinds.get(registry.node_probe().kind).ceilings  # type: ignore[attr-defined]


def probes(df: pd.DataFrame) -> pd.DataFrame:
    """The finished node probes (records of :func:`benchlib.registry.node_probe`)."""
    done = analysis.ok(df)
    if "benchmark" not in done:
        return done.iloc[0:0]
    return done[done["benchmark"] == registry.node_probe().benchmark]


def ceilings(df: pd.DataFrame) -> pd.DataFrame:
    """One row per probe and figure: measured, datasheet (where the GPU is listed),
    measured / datasheet, and the probe's flags (``contended``: a ceiling taken beside other
    work)."""
    rows = []
    for _, probe in probes(df).iterrows():
        sheet = datasheet_for(probe.get("device_name", "")) if probe.get("device") == "cuda" else None
        for column, sheet_column, label, unit in CEILINGS:
            measured = flags.number(probe.get(column))
            if measured is None:
                continue
            peak = flags.number(sheet.get(sheet_column)) if sheet and sheet_column else None
            rows.append({"cluster": probe.get("cluster"), "host": probe.get("host"),
                         "gpu": probe.get("gpu"), "figure": label, "unit": unit,
                         "measured": measured, "datasheet": peak,
                         "of_datasheet": measured / peak if peak else None,
                         "variant": sheet["variant"] if sheet else "",
                         "flags": flags.join(flags.of(probe))})
    return pd.DataFrame(rows, columns=["cluster", "host", "gpu", "figure", "unit", "measured",
                                       "datasheet", "of_datasheet", "variant", "flags"])


#: What nodes are compared on: what each reaches (record column, label).
REACHED = (("mamf_tflops_fp32", "achievable matmul fp32 (TFLOP/s)"),
           ("mamf_tflops_tf32", "achievable matmul tf32 (TFLOP/s)"),
           ("mamf_tflops_bf16", "achievable matmul bf16 (TFLOP/s)"),
           ("mamf_tflops_fp16", "achievable matmul fp16 (TFLOP/s)"),
           ("triad_GBps", "memory triad (GB/s)"))


def nodes_compared(df: pd.DataFrame) -> pd.DataFrame:
    """The nodes side by side on what each reaches (achievable matmul per precision, memory
    triad; each node's latest probe): per figure, the node's value and its ratio to the median
    of the probed nodes with the same GPU (``of_median``; NA where that GPU has one node)."""
    found = probes(df)
    keys = [k for k in ("cluster", "host", "gpu") if k in found]
    if found.empty or "host" not in keys:
        return pd.DataFrame(columns=[*keys, "figure", "value", "of_median", "nodes"])
    latest = found.groupby("host", sort=False, dropna=False).tail(1)
    # the exact model (device_name: H100 PCIe is not H100 SXM, an EPYC not a Xeon), else gpu
    fallback = latest["gpu"] if "gpu" in keys else latest["host"]
    named = latest.get("device_name", pd.Series("", index=latest.index)).fillna("").astype(str)
    latest = latest.assign(_model=named.where(named != "", fallback.astype(str)))
    rows = []
    for column, label in REACHED:
        if column not in latest:
            continue
        values = pd.to_numeric(latest[column], errors="coerce")
        for _, same in latest.assign(value=values).dropna(subset=["value"]).groupby(
                "_model", sort=False, dropna=False):
            median = same["value"].median()
            for _, node in same.iterrows():
                rows.append({**{k: node[k] for k in keys}, "figure": label,
                             "value": node["value"], "nodes": len(same),
                             "of_median": node["value"] / median if len(same) > 1 and median
                             else None})
    return pd.DataFrame(rows, columns=[*keys, "figure", "value", "of_median", "nodes"])


def decode_curves(df: pd.DataFrame) -> pd.DataFrame:
    """Loader capacity per probe: ``workers`` and ``images_per_s`` from the
    ``decode_images_per_s_<n>w`` columns."""
    found = probes(df)
    columns = [c for c in found.columns if re.fullmatch(r"decode_images_per_s_\d+w", c)]
    if found.empty or not columns:
        return pd.DataFrame(columns=["configuration", "workers", "images_per_s"])
    named = analysis.labels(found, ["cluster", "host"])
    if {"cluster", "host"} <= set(found.columns):  # a node named like its cluster: once ("vm")
        named = named.where(found["cluster"].astype(str) != found["host"].astype(str),
                            found["host"].astype(str))
    frame = found.assign(configuration=named)
    long = frame.melt(id_vars=["configuration"], value_vars=columns, var_name="workers",
                      value_name="images_per_s").dropna(subset=["images_per_s"])
    long["workers"] = long["workers"].str.extract(r"_(\d+)w$")[0].astype(int)
    return long.sort_values(["configuration", "workers"], ignore_index=True)


def _probe_for(run: pd.Series, found: pd.DataFrame) -> pd.Series | None:
    """The latest probe of the run's host, else of its cluster and GPU."""
    for keys in (("host",), ("cluster", "gpu")):
        same = found
        for key in keys:
            if key not in found or key not in run:
                same = found.iloc[0:0]
                break
            same = same[same[key] == run[key]]
        if len(same):
            return same.iloc[-1]
    return None


def _key(values: tuple) -> tuple | None:
    """``values`` as a lookup key; None when one is missing (missing never matches) or is not
    a plain value."""
    try:
        hash(values)
        return None if any(pd.isna(v) for v in values) else values
    except (TypeError, ValueError):
        return None


def _latest_probes(found: pd.DataFrame) -> dict[tuple, int]:
    """Where :func:`_probe_for` finds its probe, for every host and every cluster and GPU:
    ``{(keys, values): position of the latest matching probe}``, so that many runs look theirs
    up at once."""
    latest: dict[tuple, int] = {}
    for keys in (("host",), ("cluster", "gpu")):
        if all(k in found for k in keys):
            for position, values in enumerate(zip(*(found[k] for k in keys), strict=True)):
                if (key := _key(values)) is not None:
                    latest[(keys, key)] = position
    return latest


def _probe_of(run: pd.Series, found: pd.DataFrame, latest: dict[tuple, int]) -> pd.Series | None:
    """What :func:`_probe_for` returns, through :func:`_latest_probes`."""
    for keys in (("host",), ("cluster", "gpu")):
        if not all(k in run and k in found for k in keys):
            continue
        values = tuple(run[k] for k in keys)
        key = _key(values)
        if key is None:
            if all(pd.api.types.is_scalar(v) for v in values):
                continue  # a missing value matches nothing
            return _probe_for(run, found)  # not a plain value: the long way
        position = latest.get((keys, key))
        if position is not None:
            return found.iloc[position]
    return None


def loader_capacity(probe: pd.Series | None, workers: int,
                    devices_per_node: int) -> tuple[float | None, int | None]:
    """Images/s per device the probe's loader delivered at the node's total worker count
    (``workers`` per device x devices per node; the nearest probed count not above it, else
    the smallest), shared among the node's devices; and the worker count used."""
    if probe is None:
        return None, None
    measured = {int(m.group(1)): flags.number(probe[c]) for c in probe.index
                if (m := re.fullmatch(r"decode_images_per_s_(\d+)w", c))}
    measured = {k: v for k, v in measured.items() if v is not None}
    if not measured:
        return None, None
    total = workers * devices_per_node
    below = [k for k in measured if k <= total]
    chosen = max(below) if below else min(measured)
    return measured[chosen] / devices_per_node, chosen


def _datasheet_peak(run: pd.Series, precision: str) -> tuple[float | None, str]:
    """The datasheet's matmul peak of the run's GPU in ``precision`` and its source's words."""
    sheet = datasheet_for(run.get("device_name", "")) if run.get("gpu") != "cpu" else None
    value = flags.number(sheet.get(f"{precision}_tflops")) if sheet else None
    return (value, f"datasheet {precision} ({sheet['variant']})") if value else (None, "")


#: The start of ``achievable_source`` where the probe was disturbed: no ceiling from it.
UNKNOWN_REACH = "unknown: the node probe was "


def disturbed_probe(probe: pd.Series | None) -> str:
    """Why ``probe``'s ceilings are no denominator (``unknown: the node probe was contended``,
    with what to do), '' where it was undisturbed (or there is none)."""
    found = flags.disturbed([probe]) if probe is not None else []
    if not found:
        return ""
    return f"{UNKNOWN_REACH}{' and '.join(found)}; probe again on a quiet node"


def unknown_reach(judged: pd.DataFrame) -> str:
    """Why what the node reaches is unknown for these verdicts (their probe was disturbed:
    :func:`disturbed_probe`), '' when it is known or there is no probe."""
    sources = judged.get("achievable_source", pd.Series(dtype=object)).dropna().astype(str)
    unknown = sources[sources.str.startswith(UNKNOWN_REACH)]
    return str(unknown.iloc[0]) if len(unknown) else ""


def _achievable_peak(probe: pd.Series | None, precision: str) -> tuple[float | None, str]:
    """What this node reaches in ``precision``: the probe's achievable matmul (the best over a
    sweep of shapes), else its one-shape matmul (a probe from before the sweep); from a
    disturbed probe none, and why (:func:`disturbed_probe`)."""
    if probe is None:
        return None, ""
    if why := disturbed_probe(probe):
        return None, why
    for column, words in ((f"mamf_tflops_{precision}", "best of a sweep of shapes"),
                          (f"matmul_tflops_{precision}", "one shape")):
        measured = flags.number(probe.get(column))
        if measured:
            return measured, f"probe {precision} matmul, {words}"
    return None, ""


def utilization(achieved: float | None, devices: int, run: pd.Series,
                probe: pd.Series | None) -> dict[str, object]:
    """Model FLOPs utilization against both ceilings: ``mfu`` of the datasheet's peak and
    ``mfu_achievable`` of what this node reaches (the probe's), each with its peak and source."""
    precision = matmul_precision(run.get("precision"))
    sheet, sheet_source = _datasheet_peak(run, precision) if precision else (None, "")
    reach, reach_source = _achievable_peak(probe, precision) if precision else (None, "")
    per_device = achieved / devices if achieved else None
    return {"mfu": per_device / sheet if per_device and sheet else None,
            "peak_tflops": sheet, "peak_source": sheet_source,
            "mfu_achievable": per_device / reach if per_device and reach else None,
            "achievable_tflops": reach, "achievable_source": reach_source}


def utilization_said(found: dict[str, object]) -> str:
    """``MFU 45 % of the datasheet fp32 (H100 SXM) peak (67 TFLOP/s), 57 % of what this node
    reaches (...)``: each ceiling there is, '' when neither."""
    parts = []
    if found["mfu"] is not None:
        parts.append(f"{formatting.percent(found['mfu'])} of the {found['peak_source']} peak "
                     f"({formatting.tflops(found['peak_tflops'])})")
    if found["mfu_achievable"] is not None:
        parts.append(f"{formatting.percent(found['mfu_achievable'])} of what this node reaches "
                     f"({found['achievable_source']}: "
                     f"{formatting.tflops(found['achievable_tflops'])})")
    elif str(found["achievable_source"]).startswith(UNKNOWN_REACH):
        parts.append(f"of what this node reaches {found['achievable_source']}")
    return "MFU " + ", ".join(parts) if parts else ""


def judge(run: pd.Series, probe: pd.Series | None = None) -> dict[str, object]:
    """The verdict on one run record: ``verdict``, ``reason`` and the figures behind them."""
    iteration = flags.number(run.get("time_iteration_s"))
    waits = [flags.number(run.get(c)) for c in ("time_data_s", "time_read_s")]
    wait = sum(w for w in waits if w is not None) if any(w is not None for w in waits) else None
    # medians of phases need not add up: a wait beyond the iteration is all of it, never
    # 1e308 of it (a record whose iteration is 1e-308 s)
    wait_share = min(wait / iteration, 1.0) if wait is not None and iteration else None
    devices = int(flags.number(run.get("num_devices")) or 1)
    nodes = int(flags.number(run.get("num_nodes")) or 1)
    throughput = flags.number(run.get("throughput"))
    per_device = throughput / devices if throughput else None
    demand = (per_device / (1 - wait_share) if per_device and wait_share is not None
              and wait_share < 1 else None)
    capacity, capacity_workers = (None, None)
    kind = kind_named(run.get("benchmark"))
    if kind is not None and kind.samples == "images" and run.get("dataset") == "real":
        capacity, capacity_workers = loader_capacity(
            probe, int(flags.number(run.get("num_workers")) or 0), max(1, devices // nodes))
    achieved = flags.number(run.get("achieved_tflops"))
    used = utilization(achieved, devices, run, probe)
    throttled = flags.number(run.get("throttled_share"))

    if "contended" in flags.of(run):
        verdict = "contended"
        reason = ((", ".join(reasons(run)) or "others used the node while it ran")
                  + ": no bottleneck verdict from a disturbed run; run it again on a quiet node")
    elif throttled is not None and throttled >= THROTTLED_SHARE:
        causes = ", ".join(f"{cause} {share:.0%}" for cause in ("power", "thermal", "hw_slowdown")
                           if (share := flags.number(run.get(f"throttle_{cause}_share"))))
        verdict = "throttled"
        reason = (f"clocks held down in {throttled:.0%} of the telemetry samples ({causes}); "
                  f"mean SM clock {flags.number(run.get('sm_clock_mean_mhz')) or float('nan'):.0f} MHz")
    elif wait_share is not None and wait_share >= DATA_BOUND_SHARE:
        verdict = "data-bound"
        reason = f"waited {wait_share:.0%} of each iteration for data"
        if capacity is not None and demand is not None:
            side = "below" if capacity < demand else "above"
            reason += (f"; the probe's loader gives {capacity:,.0f} images/s per device at "
                       f"{capacity_workers} workers, {side} the {demand:,.0f} images/s the model "
                       "takes when it does not wait")
    else:
        verdict = "compute-bound"
        reason = f"data wait {wait_share:.0%}" if wait_share is not None else "no data phase timed"
        if said := utilization_said(used):
            reason = f"{said}; {reason}"
            if (used["mfu_achievable"] or 0) > 1:
                reason += ("; above 100 % of what the probe reached: its matrix multiplies did "
                           "not find this device's ceiling (probe again with a larger "
                           "matmul_size or probe_time_s)")
    over = (used["mfu_achievable"] or 0) > 1
    return {"verdict": verdict, "reason": reason,
            "flags": flags.join([*flags.of(run), *(["mfu_over_100"] if over else [])]),
            "data_wait_share": wait_share,
            "demand_per_device": demand, "loader_capacity_per_device": capacity,
            "achieved_tflops_per_device": achieved / devices if achieved else None,
            **used, "throttled_share": throttled}


def verdicts(df: pd.DataFrame) -> pd.DataFrame:
    """One verdict per finished benchmark run of ``df`` (probes taken from ``df`` itself)."""
    found = probes(df)
    runs = analysis.benchmarks(analysis.ok(df))
    described = [c for c in ("source", "cluster", "gpu", "benchmark", "model", "dataset",
                             "synthetic_kind", "data_source", "batch_size", "precision",
                             "num_workers", "num_devices", "throughput", "unit")
                 if c in runs]
    latest = _latest_probes(found)
    rows = [{**{c: run[c] for c in described}, **judge(run, _probe_of(run, found, latest))}
            for _, run in runs.iterrows()]
    return pd.DataFrame(rows)


def telemetry_table(df: pd.DataFrame) -> pd.DataFrame:
    """The telemetry columns of every finished benchmark run (what NVML saw), and its ``source``."""
    runs = analysis.benchmarks(analysis.ok(df))
    columns = [c for c in ("cluster", "gpu", "benchmark", "model", "dataset", "batch_size",
                           "precision", "telemetry", "gpu_util_mean", "power_mean_w",
                           "sm_clock_mean_mhz", "temperature_max_c", "throttled_share",
                           "energy_j", "joules_per_sample", "energy_source", "source") if c in runs]
    return runs[columns].reset_index(drop=True)


def datasheets_seen(df: pd.DataFrame) -> pd.DataFrame:
    """The datasheet rows of the GPUs that ran these records (by ``device_name``), so that
    runs can be read against the hardware's figures even where no probe ran."""
    names = analysis.ok(df).get("device_name", pd.Series(dtype=object)).dropna().unique()
    rows = [{"device_name": name, **sheet} for name in names if (sheet := datasheet_for(name))]
    columns = ["device_name", "variant", "fp32_tflops", "tf32_tflops", "fp16_tflops",
               "bf16_tflops", "memory_GBps", "host_link", "host_link_GBps", "note"]
    return pd.DataFrame(rows).reindex(columns=columns)
