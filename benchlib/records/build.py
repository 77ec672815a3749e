"""Building a result record: one flat row per run from its config and result
(:func:`make_record`), the record of a run that did not finish (:func:`failed_record`), and
showing it in the notebook as a MIME output (:func:`publish`)."""

from __future__ import annotations

import math
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from benchlib import SCHEMA_VERSION
from benchlib.inputs.config import ClassificationConfig, RunConfig
from benchlib.inputs.unet3d_config import UNet3DConfig, UNet3DPredictConfig, UNet3DTrainConfig
from benchlib.measure.timing import PHASES, is_noisy
from benchlib.models.geometry import shape_text
from benchlib.records.flags import join, record_flags
from benchlib.records.run_interval import throughput_interval
from benchlib.records.store import (
    ITERATIONS_KEY,
    RECORD_MIME,
)

if TYPE_CHECKING:
    from benchlib.workloads.result import RunResult

#: What the launcher adds to a run of several ranks (see benchlib.run.launch), kept unprefixed.
LAUNCH_COLUMNS = ("dist_backend", "node_launcher", "launch_wall_s", "launch_overhead_s",
                  "straggler_spread", "slowest_rank")


def _finite(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def make_record(config: RunConfig, result: RunResult,
                env: Mapping[str, object] | None = None) -> dict:
    """The flat record of a finished run: DESIGN.md's columns, spread and p95, ``env_*``
    (``env``, else the result's own capture).

    ``batch_size`` is the parameter as given: per device in weak scaling, the global batch in
    strong scaling; ``device_batch_size`` and ``global_batch_size`` say what ran.
    """
    from benchlib.measure.environment import run_identity  # imports torch: loading records does not

    env = result.env if env is None else env
    stats = result.stats()
    iteration = stats["iteration"]
    record: dict[str, object] = {
        **run_identity(config, result),
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
        "status": "ok",
        "error": "",
    }
    for phase in PHASES:
        phase_stats = stats.get(phase)
        record[f"time_{phase}_s"] = phase_stats.median if phase_stats else None
        record[f"time_{phase}_p95_s"] = phase_stats.p95 if phase_stats else None
    if isinstance(config, ClassificationConfig):
        record.update(
            benchmark=config.benchmark, model=config.model, dataset=config.dataset,
            synthetic_kind=config.synthetic_kind if config.dataset == "synthetic" else "",
            data_source=config.data_source if config.dataset == "real" else "",
            image_size=config.resolved_image_size, channels_last=config.channels_last,
            compile=config.compile,
        )
        if config.benchmark == "smooth_inference":
            record.update(noise_samples=config.noise_samples, sigma=config.sigma,
                          noisy_samples_per_s=result.throughput * config.noise_samples)
    if isinstance(config, UNet3DConfig):
        record.update(_unet3d_columns(config))
    for key, value in result.extras.items():
        record[key if key in LAUNCH_COLUMNS else f"result_{key}"] = value
    from benchlib.records.flops import flops_columns  # imports torch

    record.update(flops_columns(config, result.throughput))
    record.update(result.telemetry_record())
    record.update(result.contention_record())
    record.update(throughput_interval(result))
    record.update(env)
    record["flags"] = join(record_flags(record))
    record = {k: _finite(v) for k, v in record.items()}
    record[ITERATIONS_KEY] = per_iteration_lists(result.per_iteration)
    return record


def per_iteration_lists(frame: pd.DataFrame) -> dict[str, list[float | None]]:
    """Per-iteration seconds as {column: values} (None where a phase did not run)."""
    return {str(c): [None if pd.isna(v) else float(v) for v in frame[c]] for c in frame.columns}


def _unet3d_columns(config: UNet3DConfig) -> dict[str, object]:
    geometry = config.geometry
    columns: dict[str, object] = {
        "benchmark": config.benchmark, "model": "unet3d", "compile": config.compile,
        "channels_last": False, "unet_depth": config.depth, "unet_base_features": config.base_features,
        "unet_growth": config.growth, "unet_padding": config.padding, "unet_norm": config.norm,
        "unet_pooling": " ".join(shape_text(p) for p in config.pooling_levels),
        "target": config.target, "volume": config.volume, "raw_key": config.raw_key,
    }
    if isinstance(config, UNet3DTrainConfig):
        columns.update(dataset=config.dataset, patch_shape=shape_text(config.patch_shape),
                       output_shape=shape_text(config.output_shape), augment=config.augment,
                       label_key=config.label_key)
        if config.dataset == "synthetic":
            columns.update(volume="", synthetic_kind="device")
    elif isinstance(config, UNet3DPredictConfig):
        from benchlib.workloads.blockwise import prediction_layout

        layout = prediction_layout(config)
        columns.update(dataset="real", block_shape=shape_text(config.block_shape),
                       halo=shape_text(config.resolved_halo),
                       input_shape=shape_text(layout["input_shape"]),
                       output_dtype=config.output_dtype, output=config.output)
    columns["downsampling"] = shape_text(geometry.downsampling)
    return columns


def failed_record(parameters: Mapping[str, object], error: str, **context: object) -> dict:
    """The record of a run that did not finish: its parameters, ``status = failed``, the error."""
    record = {"schema_version": SCHEMA_VERSION, **parameters, **context,
              "status": "failed", "error": error}
    record.setdefault("host", socket.gethostname())
    return record


def publish(record: Mapping[str, object]) -> None:
    """Display the record in a notebook as the benchlib MIME output plus a readable table."""
    from IPython.display import display

    summary = pd.Series({k: v for k, v in record.items()
                         if not k.startswith("env_") and k != ITERATIONS_KEY})
    display({RECORD_MIME: dict(record), "text/plain": summary.to_string(),
             "text/html": summary.to_frame("value").to_html()}, raw=True)
