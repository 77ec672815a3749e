"""One result from every rank's: what a launch of several processes returns (:func:`merge`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from benchlib.measure.contention import worst_contention
from benchlib.measure.telemetry import merge_summaries
from benchlib.measure.timing import Stats
from benchlib.workloads.result import RunResult


def merge(parts: list[dict], num_nodes: int = 1, summed: tuple[str, ...] = ()) -> Any:
    """One result from every rank's: samples of all ranks over the run's span (:func:`span`);
    the extras named in ``summed`` (the kind's :attr:`~benchlib.kinds.base.Kind.summed_extras`)
    added up over the ranks, the others rank 0's; per phase, the median over ranks of each
    rank's median (p95, IQR likewise); the straggler spread (slowest / fastest rank's wall
    time); one row per rank in ``ranks``; ``per_iteration`` is the median over ranks of each
    iteration (for plots). Non-RunResult payloads: rank 0's."""
    parts = sorted(parts, key=lambda p: p["rank"])
    first = parts[0]["result"]
    env = parts[0].get("env") or {}
    if not isinstance(first, RunResult):
        first.env, first.num_devices, first.num_nodes = env, len(parts), num_nodes
        return first
    results = [p["result"] for p in parts]
    walls = [r.wall_time_s for r in results]
    frames = [r.per_iteration.reset_index(drop=True) for r in results]
    columns = list(dict.fromkeys(c for f in frames for c in f.columns))
    per_iteration = pd.concat(frames).groupby(level=0).median()[columns]
    extras = dict(first.extras)
    for key in summed:
        if all(key in r.extras for r in results):
            extras[key] = sum(r.extras[key] for r in results)  # type: ignore[misc]
    slowest = max(range(len(walls)), key=walls.__getitem__)
    extras.update(straggler_spread=max(walls) / min(walls) if min(walls) > 0 else float("nan"),
                  slowest_rank=slowest)
    ranks = pd.DataFrame([{
        "rank": p["rank"], "node": p.get("node", 0), "host": p.get("host", ""),
        "iterations": r.iterations, "samples": r.samples, "wall_time_s": r.wall_time_s,
        "throughput": r.throughput,
        "time_iteration_s": float(r.per_iteration["iteration"].median()),
    } for p, r in zip(parts, results, strict=True)]).set_index("rank")
    per_rank = [r.stats() for r in results]
    rank_stats = {}
    for column in columns:
        each = [stats[column] for stats in per_rank if column in stats]
        rank_stats[column] = Stats(
            median=float(np.median([s.median for s in each])),
            p95=float(np.median([s.p95 for s in each])),
            mean=float(np.mean([s.mean for s in each])),
            iqr=float(np.median([s.iqr for s in each])), count=sum(s.count for s in each))
    peaks = [r.peak_memory_bytes for r in results if r.peak_memory_bytes is not None]
    total = sum(r.samples for r in results)
    hosts = [str(p.get("host") or "") for p in parts]
    telemetry_columns = merge_summaries([r.telemetry_record() for r in results], total,
                                        hosts if all(hosts) else None)
    starts = [r.started_at for r in results if r.started_at is not None]
    ends = [r.ended_at for r in results if r.ended_at is not None]
    return RunResult(
        started_at=min(starts) if starts else None, ended_at=max(ends) if ends else None,
        device=first.device, iterations=first.iterations, warmup=first.warmup,
        samples=total, wall_time_s=span(walls, starts, ends), unit=first.unit,
        per_iteration=per_iteration, peak_memory_bytes=max(peaks) if peaks else None,
        extras=extras, num_devices=len(parts), num_nodes=num_nodes, env=env, ranks=ranks,
        rank_stats=rank_stats, telemetry=first.telemetry, telemetry_columns=telemetry_columns,
        contention=worst_contention([r.contention for r in results]))


def span(walls: list[float], starts: list[float], ends: list[float]) -> float:
    """The run's time as one span: from the first rank's start to the last rank's end (ranks
    start their timed parts at a barrier, but a rank that started late must not make the
    others' samples look faster), never less than the slowest rank's own wall time (clocks of
    different hosts may disagree by a little)."""
    slowest = max(walls)
    if len(starts) != len(walls) or len(ends) != len(walls):
        return slowest
    return max(slowest, max(ends) - min(starts))
