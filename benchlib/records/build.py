"""Building a result record: the columns of every timed loop (:func:`timed_loop_columns`,
which :func:`benchlib.kinds.record.make_record` puts together with the kind's own), the record
of a run that did not finish (:func:`failed_record`), and showing it in the notebook as a MIME
output (:func:`publish`)."""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from benchlib import SCHEMA_VERSION
from benchlib.measure.timing import PHASES, is_noisy, iso_utc, new_run_id
from benchlib.records.store import (
    ITERATIONS_KEY,
    RECORD_MIME,
)
from benchlib.vocabulary import RecordStatus

if TYPE_CHECKING:
    from benchlib.inputs.config import RunConfig
    from benchlib.workloads.result import RunResult

#: What the launcher adds to a run of several ranks (see benchlib.run.launch), kept unprefixed.
LAUNCH_COLUMNS = ("dist_backend", "node_launcher", "launch_wall_s", "launch_overhead_s",
                  "straggler_spread", "slowest_rank")


def finite(value: float) -> float | None:
    """``value``, or None for NaN (records hold no NaN)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def timed_loop_columns(config: RunConfig, result: RunResult) -> dict[str, object]:
    """The columns of every timed loop: batch, throughput, iteration and phase times, counts,
    launcher, telemetry and contention columns.

    ``batch_size`` is the parameter as given: per device in weak scaling, the global batch in
    strong scaling; ``device_batch_size`` and ``global_batch_size`` say what ran.
    """
    stats = result.stats()
    iteration = stats["iteration"]
    record: dict[str, object] = {
        "precision": config.precision,
        "batch_size": config.batch_size,
        "scaling": config.scaling,
        "device_batch_size": config.device_batch_size,
        "global_batch_size": config.device_batch_size * result.num_devices,
        "num_workers": config.num_workers,
        "throughput": result.throughput,
        "unit": result.unit,
        "time_iteration_s": iteration.median,
        "time_iteration_p95_s": iteration.p95,
        "spread_iteration": iteration.spread,
        "noisy": is_noisy(iteration),
        "breakdown": config.breakdown,
        "iterations": result.iterations,
        "warmup": result.warmup,
        "samples": result.samples,
        "wall_time_s": result.wall_time_s,
        "peak_memory_bytes": result.peak_memory_bytes,
        "device": result.device.type,
        "seed": config.seed,
    }
    for phase in PHASES:
        phase_stats = stats.get(phase)
        record[f"time_{phase}_s"] = phase_stats.median if phase_stats else None
        record[f"time_{phase}_p95_s"] = phase_stats.p95 if phase_stats else None
    for key, value in result.extras.items():
        record[key if key in LAUNCH_COLUMNS else f"result_{key}"] = value
    record.update(result.telemetry_record())
    record.update(result.contention_record())
    return record


def per_iteration_lists(frame: pd.DataFrame) -> dict[str, list[float | None]]:
    """Per-iteration seconds as {column: values} (None where a phase did not run)."""
    return {str(c): [None if pd.isna(v) else float(v) for v in frame[c]] for c in frame.columns}


def failed_record(parameters: Mapping[str, object], error: str, *, started: float | None = None,
                  ended: float | None = None, run_id: str = "", **context: object) -> dict:
    """The record of a run that did not finish: its parameters, ``status = failed``, the error,
    a run id (``run_id``, else a new one) and when the point started and failed (``started`` /
    ``ended``, epoch seconds: ``ended`` defaults to now, ``started`` to ``ended`` less the
    context's ``wall_time_s``, else to ``ended`` when nothing says when it started)."""
    ended = time.time() if ended is None else ended
    if started is None:
        seconds = context.get("wall_time_s")
        started = ended - float(seconds) if isinstance(seconds, int | float) else ended
    record = {"schema_version": SCHEMA_VERSION, **parameters, **context,
              "run_id": run_id or new_run_id(), "started_at": iso_utc(started),
              "ended_at": iso_utc(ended), "status": RecordStatus.FAILED.value, "error": error}
    record.setdefault("host", socket.gethostname())
    return record


def publish(record: Mapping[str, object]) -> None:
    """Display the record in a notebook as the benchlib MIME output plus a readable table."""
    from IPython.display import display

    summary = pd.Series({k: v for k, v in record.items()
                         if not k.startswith("env_") and k != ITERATIONS_KEY})
    table = summary.to_frame("value").to_html()
    html = (f"<details><summary>The whole record: {len(summary)} values (what summaries load)"
            f"</summary>{table}</details>")
    display({RECORD_MIME: dict(record), "text/plain": summary.to_string(), "text/html": html},
            raw=True)
