"""Result records: building them, storing them in notebooks and sidecars, loading them back.

A record is a flat mapping (one row per benchmark run) with a ``schema_version``. The executed
notebook holds it as a ``application/vnd.benchlib.result+json`` output; the sweep also writes it
next to the notebook as ``<point>.json`` (the sidecar), which :func:`load` prefers while it is
not older than its notebook.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from benchlib import SCHEMA_VERSION
from benchlib.analysis.intervals import throughput_interval
from benchlib.errors import InputError, OutputError, describe_os_error
from benchlib.inputs.config import (
    ClassificationConfig,
    RunConfig,
    UNet3DConfig,
    UNet3DPredictConfig,
    UNet3DTrainConfig,
)
from benchlib.measure.timing import PHASES, is_noisy
from benchlib.models.geometry import shape_text
from benchlib.records import schema
from benchlib.records.flags import join, record_flags, with_flags

if TYPE_CHECKING:
    from benchlib.workloads.result import RunResult

RECORD_MIME = "application/vnd.benchlib.result+json"
#: Record key of the raw per-iteration seconds; stored beside the sidecar as
#: ``<point>.iterations.csv`` (:func:`write_iterations`), never a column of the loaded table.
ITERATIONS_KEY = "per_iteration_s"
KNOWN_SCHEMA_VERSIONS = {1}
log = logging.getLogger(__name__)

#: Columns every record has, in the order tables show them (from :mod:`benchlib.records.schema`).
CORE_COLUMNS = schema.core_columns(PHASES)
#: Count columns kept as (nullable) integers even when a failed record leaves them empty.
INTEGER_COLUMNS = schema.names(dtype="count")


#: What the launcher adds to a run of several ranks (see benchlib.run.launch), kept unprefixed.
LAUNCH_COLUMNS = ("dist_backend", "node_launcher", "launch_wall_s", "launch_overhead_s",
                  "straggler_spread", "slowest_rank")


class RecordError(InputError):
    """A file that should hold a record does not hold a usable one."""


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
        from benchlib.workloads.unet3d import prediction_layout

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


def current_umask() -> int:
    """The process's umask (read from /proc where it can be, so nothing is changed)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file, fsync and a rename: never
    half-written. The file gets the mode a plain ``open`` would (0666 less the umask).
    Raises OutputError naming the path and the reason when it cannot be written whole."""
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except OSError as error:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        raise OutputError(describe_os_error(error, path)) from error
    except BaseException:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: object) -> None:
    """Write JSON to ``path`` atomically (:func:`write_bytes_atomic`)."""
    write_bytes_atomic(path, json.dumps(data, indent=1, default=str).encode())


def iterations_path(notebook: Path) -> Path:
    """``x.ipynb`` -> ``x.iterations.csv`` (the run's seconds per timed iteration and phase)."""
    return notebook.with_name(f"{notebook.stem}.iterations.csv")


def write_iterations(notebook: Path, record: dict) -> None:
    """Move the record's per-iteration seconds (if any) into ``<point>.iterations.csv``."""
    columns = record.pop(ITERATIONS_KEY, None)
    if isinstance(columns, dict) and columns:
        frame = pd.DataFrame(columns)
        frame.index.name = "step"
        write_bytes_atomic(iterations_path(notebook), frame.to_csv().encode())


def read_iterations(notebook: str | Path) -> pd.DataFrame:
    """Seconds per timed iteration (``iteration`` and each phase) of one run: from the file
    beside the notebook, else from the notebook's record; empty when neither has them."""
    notebook = Path(notebook)
    path = iterations_path(notebook)
    if path.is_file():
        return pd.read_csv(path, index_col="step")
    try:
        nb = json.loads(notebook.read_bytes())
        record = _find_record(nb) or {}
    except (OSError, ValueError, AttributeError, TypeError):
        return pd.DataFrame()
    columns = record.get(ITERATIONS_KEY) if isinstance(record, dict) else None
    frame = pd.DataFrame(columns) if isinstance(columns, dict) else pd.DataFrame()
    frame.index.name = "step"
    return frame


def sidecar_path(notebook: Path) -> Path:
    """``x.ipynb`` -> ``x.json``."""
    return notebook.with_suffix(".json")


def _cell_error(nb: Mapping) -> str:
    for index, cell in enumerate(nb.get("cells", [])):
        for output in cell.get("outputs", []) or []:
            if output.get("output_type") == "error":
                return f"{output.get('ename')}: {output.get('evalue')} (cell {index})"
    return "notebook execution failed"


#: Largest notebook or sidecar read (bytes): far above any executed benchmark notebook.
MAX_READ_BYTES = 256 << 20


def _read_json(path: Path, what: str = "sidecar") -> object:
    """JSON from a regular file of at most MAX_READ_BYTES; RecordError naming ``path`` for
    anything else (a device, pipe, unreadable bytes, numbers beyond Python's limits, nesting
    too deep). FileNotFoundError passes through."""
    mode = path.stat().st_mode  # FileNotFoundError for a missing or dangling path
    if not stat.S_ISREG(mode):
        raise RecordError(f"{path}: not a regular file; not a readable {what}")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_READ_BYTES + 1)
        if len(data) > MAX_READ_BYTES:
            raise RecordError(f"{path}: larger than {MAX_READ_BYTES >> 20} MiB; not a {what}")
        return json.loads(data)
    except (OSError, ValueError, RecursionError) as error:
        raise RecordError(f"{path}: not a readable {what} ({type(error).__name__}: "
                          f"{str(error)[:120]})") from None


def _find_record(nb: Mapping) -> dict | None:
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) or []:
            data = output.get("data") or {}
            if RECORD_MIME in data:
                return data[RECORD_MIME]
    return None


def record_from_notebook(path: Path) -> dict | None:
    """The record inside an executed benchmark notebook.

    Returns None for notebooks that are not benchlib benchmark notebooks (summaries); a failed
    execution without a record gives a ``failed`` record built from papermill's parameters.
    Raises RecordError for unreadable or malformed files and benchmark notebooks that never
    finished.
    """
    nb = _read_json(path, "notebook")
    try:
        record = _find_record(nb)
        metadata = nb.get("metadata", {})
        kind = metadata.get("benchlib", {}).get("kind")
        papermill = metadata.get("papermill", {})
        failed = papermill.get("exception") and kind == "benchmark"
        parameters = dict(papermill.get("parameters") or {}) if failed else {}
        error_text = _cell_error(nb) if failed else ""
    except (AttributeError, TypeError, ValueError) as error:
        raise RecordError(f"{path}: not a notebook (malformed JSON structure: {error})") from error
    if record is not None:
        if not isinstance(record, dict):
            raise RecordError(f"{path}: its result record is a {type(record).__name__}, "
                              "not a mapping")
        bad = schema.problems(record)
        if bad:
            raise RecordError(f"{path}: not a usable record ({'; '.join(bad)})")
        return dict(record)
    if kind != "benchmark":
        return None
    if failed:
        return failed_record(parameters, error_text)
    raise RecordError(f"{path}: benchmark notebook without a result record (unfinished run?)")


#: Key of a sidecar that says which notebook file it was made from (size, mtime, sha256).
SIDECAR_SOURCE_KEY = "sidecar_of"


def notebook_fingerprint(notebook: Path) -> dict[str, object]:
    """Size, modification time (ns) and SHA-256 of ``notebook``: what a sidecar is made from."""
    import hashlib

    stat = notebook.stat()
    with notebook.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}


def write_sidecar(notebook: Path, record: Mapping[str, object],
                  fingerprint: Mapping[str, object] | None = None) -> None:
    """Write ``record`` as the sidecar of ``notebook`` with the notebook's fingerprint (so a
    sidecar that no longer matches its notebook is ignored); no notebook: no fingerprint. The
    per-iteration seconds go to ``<point>.iterations.csv`` beside it."""
    data = dict(record)
    write_iterations(notebook, data)
    if fingerprint is None and notebook.is_file():
        fingerprint = notebook_fingerprint(notebook)
    if fingerprint is not None:
        data[SIDECAR_SOURCE_KEY] = dict(fingerprint)
    write_json_atomic(sidecar_path(notebook), data)


def _sidecar_matches(notebook: Path, source: object) -> bool:
    """Whether a sidecar's fingerprint still describes ``notebook``: same size and mtime, or
    the same size and content (a copy that lost its mtime)."""
    if not isinstance(source, dict):
        return False
    try:
        stat = notebook.stat()
        if stat.st_size != source.get("size"):
            return False
        if stat.st_mtime_ns == source.get("mtime_ns"):
            return True
        return notebook_fingerprint(notebook)["sha256"] == source.get("sha256")
    except OSError:
        return False


def read_sidecar(notebook: Path) -> dict | None:
    """The record in ``notebook``'s sidecar when it is a usable one for this notebook, else
    None (missing, unreadable, not a JSON object, or made from another version of the
    notebook: each logged as a warning naming the file)."""
    sidecar = sidecar_path(notebook)
    try:
        data = _read_json(sidecar)
    except FileNotFoundError:
        return None
    except RecordError as error:
        log.warning("%s; reading the notebook", error)
        return None
    if not isinstance(data, dict):
        log.warning("%s: sidecar holds %s, not a record; reading the notebook", sidecar,
                    "null" if data is None else f"a JSON {type(data).__name__}")
        return None
    source = data.pop(SIDECAR_SOURCE_KEY, None)
    bad = schema.problems(data)
    if bad:
        log.warning("%s: not a usable record (%s); reading the notebook", sidecar, "; ".join(bad))
        return None
    if not notebook.is_file():
        return data
    if source is None:  # sidecars of earlier versions: trusted while not older than the notebook
        try:
            if sidecar.stat().st_mtime >= notebook.stat().st_mtime:
                return data
        except OSError:
            pass
        return None
    if not _sidecar_matches(notebook, source):
        log.warning("%s: sidecar was made from another version of %s; reading the notebook",
                    sidecar, notebook.name)
        return None
    return data


def is_complete_notebook(path: Path) -> bool:
    """Whether ``path`` holds a whole notebook (valid JSON with cells), not a truncated one."""
    try:
        return isinstance(json.loads(path.read_bytes()).get("cells"), list)
    except (OSError, ValueError, AttributeError):
        return False


def keep_ok_result(target: Path, failure: Mapping[str, object]) -> Path | None:
    """When ``target`` (a point's notebook) already holds an ``ok`` record, keep it: restore
    its sidecar if a re-submission set it aside, write ``failure`` under
    ``.benchlib/rejected/`` and return that path. None when there is no ok result to keep."""
    try:
        current = read_record(target) if target.exists() or sidecar_path(target).exists() else None
    except RecordError:
        return None
    if not current or current.get("status") != "ok":
        return None
    if read_sidecar(target) is None:
        write_sidecar(target, current)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-%f")
    kept = target.parent / ".benchlib" / "rejected" / f"{target.stem}-{stamp}.json"
    write_json_atomic(kept, dict(failure))
    log.warning("%s: kept the earlier ok result; the new failure is in %s", target.name, kept)
    return kept


def read_record(notebook: Path) -> dict | None:
    """The record of one notebook: its sidecar while it matches the notebook, else the
    notebook's own record."""
    record = read_sidecar(notebook)
    if record is not None:
        return record
    if not notebook.is_file() and sidecar_path(notebook).is_file():
        raise RecordError(f"{sidecar_path(notebook)}: no usable record and no notebook")
    return record_from_notebook(notebook)


def iter_notebooks(path: Path) -> Iterator[Path]:
    """Executed notebooks under ``path`` (regular files only), skipping hidden folders (work in
    progress) and reports."""
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "report")
        for name in sorted(files):
            if name.endswith(".ipynb") and os.path.isfile(os.path.join(root, name)):
                yield Path(root) / name


def iter_lone_sidecars(path: Path) -> Iterator[Path]:
    """Sidecars under ``path`` whose notebook does not exist (a point that failed before its
    notebook was written), as the notebook paths they stand for."""
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "report")
        names = set(files)
        for name in sorted(files):
            stem = name[:-5]
            if name.endswith(".json") and f"{stem}.ipynb" not in names:
                yield Path(root) / f"{stem}.ipynb"


@dataclass(frozen=True)
class Skipped:
    """A file under a results folder that was left out, and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return self.reason if self.reason.startswith(str(self.path)) else f"{self.path}: {self.reason}"


@dataclass(frozen=True)
class Scan:
    """What :func:`scan` found: the records as a table, and the files it left out."""

    frame: pd.DataFrame
    skipped: list[Skipped] = field(default_factory=list)


def _usable_record(notebook: Path) -> dict | None:
    if not notebook.exists():  # a lone sidecar: a record only if it reads as one
        try:
            data = _read_json(sidecar_path(notebook))
        except RecordError:
            return None
        if not isinstance(data, dict) or "schema_version" not in data:
            return None
    record = read_record(notebook)
    if record is None:
        return None
    version = record.get("schema_version")
    if version not in KNOWN_SCHEMA_VERSIONS:
        raise RecordError(f"{notebook}: unknown schema_version {version!r} "
                          f"(known: {sorted(KNOWN_SCHEMA_VERSIONS)})")
    return record


def scan(path: str | Path, strict: bool = False) -> Scan:
    """Every record under ``path`` (a folder or one notebook), and the files left out.

    Unreadable or malformed notebooks, unfinished runs and unknown schema versions are left
    out, each logged as a warning naming the file (raised when ``strict``); the rest loads.
    """
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"results path {str(root)!r} does not exist")
    notebooks = [root] if root.is_file() else [*iter_notebooks(root), *iter_lone_sidecars(root)]
    rows, skipped = [], []
    for notebook in notebooks:
        try:
            record = _usable_record(notebook)
        except RecordError as error:
            if strict:
                raise
            log.warning("%s", error)
            skipped.append(Skipped(notebook, str(error)))
            continue
        if record is None:
            continue
        record.pop(ITERATIONS_KEY, None)
        record.setdefault("point_id", notebook.stem)
        record["source"] = str(notebook)
        rows.append(record)
    return Scan(_frame(rows), skipped)


def load(path: str | Path, strict: bool = False) -> pd.DataFrame:
    """Every record under ``path`` as one row each (see :func:`scan` for what is left out).
    A ``source`` column names each row's notebook."""
    return scan(path, strict).frame


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=[*CORE_COLUMNS, "source"])
    frame = with_flags(frame)  # records written before flags existed get theirs too
    for column in INTEGER_COLUMNS:
        if column in frame:
            numbers = pd.to_numeric(frame[column], errors="coerce")
            if (numbers.dropna() % 1 == 0).all():
                frame[column] = numbers.astype("Int64")
    ordered = [c for c in CORE_COLUMNS if c in frame.columns]
    env = sorted(c for c in frame.columns if c.startswith("env_"))
    rest = [c for c in frame.columns if c not in ordered and c not in env]
    return frame[ordered + rest + env]
