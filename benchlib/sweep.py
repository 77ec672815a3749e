"""Sweeps: a params YAML expanded into points, validated whole, each point run through papermill.

A point is one notebook with one set of parameters and a repeat index; its id is a hash of
those, so a re-run finds the points already done by their parameters. Each point writes
``outputs/<campaign>/<point>.ipynb`` and its sidecar ``<point>.json``; the notebook is executed
in the point's own scratch folder under ``outputs/<campaign>/.partial/`` and moved into place
only when complete, and the sidecar comes last, so a point is done exactly when its sidecar
exists. A sweep holds the campaign's lock, each point its own (:mod:`benchlib.locks`).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import keyword
import logging
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from jupyter_client.manager import AsyncKernelManager
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError, field_validator

from benchlib.campaign import remember_points
from benchlib.config import ConfigError, describe_validation_error
from benchlib.errors import InputError, OutputError, describe_os_error
from benchlib.locks import campaign_lock, point_lock
from benchlib.registry import NOTEBOOK_CONFIGS
from benchlib.results import (
    RecordError,
    failed_record,
    is_complete_notebook,
    keep_ok_result,
    notebook_fingerprint,
    read_record,
    record_from_notebook,
    sidecar_path,
    write_sidecar,
)
from benchlib.slurm import SlurmExecutor
from benchlib.yaml_input import MAX_POINTS, load_yaml

log = logging.getLogger(__name__)
NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
PATH_PARAMETERS = ("data_dir", "volume", "output")  #: paths, made absolute before papermill


class LocalExecutor(BaseModel):
    """Run points one after another on this machine."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["local"] = "local"
    cell_timeout_s: PositiveInt | None = None


class SweepFile(BaseModel):
    """The params YAML: campaign, notebook(s), base parameters, grid, repeats, executor."""

    model_config = ConfigDict(extra="forbid")
    campaign: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    notebook: str | list[str | dict[str, dict[str, Any]]]
    base: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    repeats: PositiveInt = 1
    executor: LocalExecutor | SlurmExecutor = Field(default_factory=LocalExecutor, discriminator="kind")

    @field_validator("grid")
    @classmethod
    def _non_empty_axes(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        empty = [k for k, v in grid.items() if not v]
        if empty:
            raise ValueError(f"grid axes need at least one value: {', '.join(empty)}")
        return grid

    @field_validator("notebook")
    @classmethod
    def _one_name_per_mapping(cls, value: str | list) -> str | list:
        for item in [] if isinstance(value, str) else value:
            if isinstance(item, dict) and len(item) != 1:
                raise ValueError("a notebook entry with parameters is one mapping "
                                 "{name: {parameter: value}}; got keys " + ", ".join(item))
        return value

    @property
    def notebooks(self) -> list[str]:
        """The notebook names as a list."""
        items = [self.notebook] if isinstance(self.notebook, str) else self.notebook
        return [item if isinstance(item, str) else next(iter(item)) for item in items]

    @property
    def overrides(self) -> dict[str, dict[str, Any]]:
        """Parameters set for one notebook only (``notebook: [a, {b: {iterations: epoch}}]``);
        they replace ``base`` values for that notebook, and grid values replace them."""
        items = [] if isinstance(self.notebook, str) else self.notebook
        return {name: dict(values or {}) for item in items if isinstance(item, dict)
                for name, values in item.items()}


class LocalKernelManager(AsyncKernelManager):
    """Kernels talk over Unix sockets in the temp folder: no TCP ports, no unencrypted-TCP
    warning from ipykernel, nothing left in the working directory."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.transport = "ipc"
        self.ip = str(Path(tempfile.gettempdir()) / f"benchlib-kernel-{uuid.uuid4().hex[:12]}")


@dataclass(frozen=True)
class Point:
    """One execution: a notebook, its parameters and a repeat index."""

    notebook: str
    parameters: dict[str, Any]
    repeat: int
    label: str

    @property
    def point_id(self) -> str:
        """Stable hash of notebook, parameters and repeat."""
        key = json.dumps([self.notebook, self.parameters, self.repeat], sort_keys=True, default=str)
        return hashlib.sha1(key.encode()).hexdigest()[:10]

    @property
    def name(self) -> str:
        """File stem: notebook, the grid values that vary, repeat, id."""
        return f"{self.label}-{self.point_id}"


@dataclass(frozen=True)
class Sweep:
    """A validated params file and its points."""

    path: Path
    spec: SweepFile
    points: list[Point]
    notebook_dir: Path = NOTEBOOK_DIR

    @property
    def campaign(self) -> str:
        return self.spec.campaign


def _slug(value: object) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "", str(value))[:24] or "x"


def notebook_parameters(name: str, notebook_dir: Path = NOTEBOOK_DIR) -> dict[str, Any]:
    """The ``parameters`` cell's names and defaults of ``notebooks/<name>.ipynb`` (papermill)."""
    import papermill

    path = notebook_dir / f"{name}.ipynb"
    return {k: v["default"] for k, v in papermill.inspect_notebook(str(path)).items()}


def expand(spec: SweepFile, accepted: dict[str, set[str]] | None = None) -> list[Point]:
    """Every notebook x grid combination x repeat, base parameters under each.

    With ``accepted`` (parameter names per notebook), each notebook gets only the parameters it
    takes, so one file can drive notebooks with different parameters; points that become equal
    are kept once.
    """
    axes = list(spec.grid)
    points: dict[str, Point] = {}
    for notebook in spec.notebooks:
        for values in itertools.product(*(spec.grid[a] for a in axes)):
            chosen = {**spec.base, **spec.overrides.get(notebook, {}),
                      **dict(zip(axes, values, strict=True)), "campaign": spec.campaign}
            if accepted is not None and notebook in accepted:
                chosen = {k: v for k, v in chosen.items() if k in accepted[notebook]}
            label = "-".join([notebook, *(_slug(chosen[a]) for a in axes if a in chosen)])
            for repeat in range(spec.repeats):
                point = Point(notebook, chosen, repeat,
                              f"{label}-r{repeat}" if spec.repeats > 1 else label)
                points.setdefault(point.name, point)
    return list(points.values())


def _origin(spec: SweepFile, key: str, notebook: str = "") -> str:
    if key in spec.grid:
        return f"grid.{key}"
    if key in spec.overrides.get(notebook, {}):
        return f"notebook.{notebook}.{key}"
    return f"base.{key}"


def _check_notebooks(spec: SweepFile, notebook_dir: Path) -> tuple[dict[str, set[str]], list[str]]:
    """Parameter names of each listed notebook, and errors for missing notebooks / unknown keys."""
    errors: list[str] = []
    accepted: dict[str, set[str]] = {}
    for name in spec.notebooks:
        path = notebook_dir / f"{name}.ipynb"
        if path.is_file():
            accepted[name] = set(notebook_parameters(name, notebook_dir))
        else:
            available = sorted(p.stem for p in notebook_dir.glob("*.ipynb"))
            errors.append(f"notebook: {name!r} not found as {path}; available: "
                          f"{', '.join(available)}")
    if accepted:
        allowed = set().union(*accepted.values())
        for key in [*spec.base, *spec.grid]:
            if key not in allowed:
                errors.append(f"{_origin(spec, key)}: unknown parameter; allowed (parameters of "
                              f"{', '.join(accepted)}): {', '.join(sorted(allowed))}")
        for name, values in spec.overrides.items():
            for key in values:
                if name in accepted and key not in accepted[name]:
                    errors.append(f"notebook.{name}.{key}: unknown parameter of {name}; allowed: "
                                  f"{', '.join(sorted(accepted[name]))}")
    return accepted, errors


def _validate_points(spec: SweepFile, points: list[Point], base_dir: Path) -> list[str]:
    errors: list[str] = []
    for point in points:
        if point.notebook not in NOTEBOOK_CONFIGS:
            continue
        config_class, fixed = NOTEBOOK_CONFIGS[point.notebook]
        values = {k: v for k, v in resolve_paths(point.parameters, base_dir).items()
                  if k in config_class.model_fields}
        try:
            config_class(**{**values, **fixed})
        except ValidationError as error:
            for line in describe_validation_error(error, fields=config_class.model_fields):
                field = line.split(":", 1)[0]
                errors.append(f"{_origin(spec, field, point.notebook)}{line[len(field):]}"
                              if field in config_class.model_fields else line)
    return list(dict.fromkeys(errors))


def resolve_paths(parameters: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """Path parameters made absolute against ``base_dir`` (where the sweep was started)."""
    resolved = dict(parameters)
    for key in PATH_PARAMETERS:
        if resolved.get(key):
            resolved[key] = str((base_dir / str(resolved[key])).resolve())
    return resolved


def _explain_key_error(line: str) -> str:
    """``executor.slurm.x: ...`` -> ``executor.x: ...``; unknown keys get the allowed ones."""
    for kind, model in (("slurm", SlurmExecutor), ("local", LocalExecutor)):
        if line.startswith(f"executor.{kind}."):
            line = "executor." + line[len(f"executor.{kind}."):]
            if "unknown parameter" in line:
                return f"{line} (allowed with kind {kind}: {', '.join(model.model_fields)})"
            return line
    if "unknown parameter" in line:
        return f"{line} (allowed keys: {', '.join(SweepFile.model_fields)})"
    return line


def count_points(spec: SweepFile) -> int:
    """How many points ``spec`` expands to at most (before points that coincide are merged)."""
    count = len(spec.notebooks) * spec.repeats
    for values in spec.grid.values():
        count *= len(values)
    return count


def load_sweep(path: str | Path, notebook_dir: Path = NOTEBOOK_DIR,
               base_dir: Path | None = None, max_points: int = MAX_POINTS) -> Sweep:
    """Read and validate a params file as a whole; raise ConfigError listing every problem.

    The file is read by :func:`benchlib.yaml_input.load_yaml` (UTF-8, no duplicate keys,
    bounded aliases, JSON-typed values only) and may expand to at most ``max_points`` points.
    """
    path = Path(path)
    base_dir = base_dir or Path.cwd()
    try:
        raw = load_yaml(path)
    except InputError as error:
        raise ConfigError(str(error)) from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping with campaign, notebook, base, grid")
    try:
        spec = SweepFile(**raw)
    except ValidationError as error:
        lines = [_explain_key_error(line) for line in describe_validation_error(error)]
        raise ConfigError("\n".join(f"{path}: {line}" for line in lines)) from None
    count = count_points(spec)
    if count > max_points:
        axes = " x ".join(f"{len(v)} {k}" for k, v in spec.grid.items()) or "no grid"
        raise ConfigError(f"{path}: grid: {count:,} points ({len(spec.notebooks)} notebooks x "
                          f"{axes} x {spec.repeats} repeats) is more than the limit of "
                          f"{max_points:,}; split the file, or raise the limit with "
                          f"--max-points {count}")
    accepted, errors = _check_notebooks(spec, notebook_dir)
    points = expand(spec, accepted)
    if not errors:
        errors = _validate_points(spec, points, base_dir)
    if errors:
        raise ConfigError("\n".join(f"{path}: {line}" for line in errors))
    return Sweep(path, spec, points, notebook_dir)


def papermill_parameters(point: Point, base_dir: Path) -> dict[str, Any]:
    """The values papermill writes into the notebook's parameters cell: the validated
    config's JSON dump of the point's parameters (paths made absolute), never the raw input.

    Notebooks without a config class get the point's values only if every one is JSON-typed
    text, number, boolean, null, list or mapping (the params loader guarantees it)."""
    parameters = resolve_paths(point.parameters, base_dir)
    bad = sorted(k for k in parameters if not k.isidentifier() or keyword.iskeyword(k))
    if bad:
        raise ConfigError(f"{point.notebook}: parameter names must be Python names: "
                          f"{', '.join(map(repr, bad))}")
    if point.notebook not in NOTEBOOK_CONFIGS:
        return json.loads(json.dumps(parameters, allow_nan=False))
    config_class, fixed = NOTEBOOK_CONFIGS[point.notebook]
    unknown = sorted(set(parameters) - set(config_class.model_fields))
    if unknown:
        raise ConfigError(f"{point.notebook}: unknown parameters {', '.join(unknown)}")
    try:
        config = config_class(**{**parameters, **fixed})
    except ValidationError as error:
        raise ConfigError("\n".join(describe_validation_error(
            error, f"{point.name}: ", config_class.model_fields))) from None
    return config.model_dump(mode="json", include=set(parameters))


@dataclass
class PointOutcome:
    """What happened to one point in a sweep run."""

    point: Point
    status: Literal["ok", "failed", "skipped"]
    seconds: float = 0.0
    error: str = ""


def point_status(notebook: Path) -> str:
    """``ok`` / ``failed`` from the point's sidecar, ``pending`` when there is none (a sidecar
    that no longer reads as a record counts as ``failed``, so the point is not run blindly)."""
    if not sidecar_path(notebook).is_file():
        return "pending"
    try:
        record = read_record(notebook)
    except RecordError:
        return "failed"
    return str((record or {}).get("status", "failed"))


def skip_reason(status: str, force: bool, retry_failed: bool) -> str:
    """Why a point with this sidecar status (``ok`` / ``failed`` / ``pending``) is not run
    again, or '' when it runs: done points unless ``force``, failed ones unless
    ``retry_failed`` (or ``force``)."""
    if force or status not in ("ok", "failed"):
        return ""
    if status == "ok":
        return "done"
    return "" if retry_failed else "failed (use --retry-failed)"


def prepare_campaign_dir(campaign_dir: Path) -> None:
    """Create the campaign folder; InputError (exit 2) naming it when that is impossible (a file
    in the way, a read-only file system, no permission)."""
    try:
        campaign_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"outputs: cannot create the campaign folder "
                         f"({describe_os_error(error, campaign_dir)}); give --outputs a "
                         "writable folder") from None


def run_sweep(
    sweep: Sweep, outputs: Path = Path("outputs"), force: bool = False,
    retry_failed: bool = False, base_dir: Path | None = None, progress: bool = True,
    on_point: Callable[[PointOutcome], None] | None = None,
) -> list[PointOutcome]:
    """Execute every point not yet done; failed points are recorded and the sweep goes on.

    The campaign's lock is held throughout (a second sweep of the campaign is refused with
    CampaignBusyError). When results cannot be written at all (disk full, read-only), the
    sweep stops with OutputError saying how many points were left."""
    from tqdm.auto import tqdm

    base_dir = base_dir or Path.cwd()
    campaign_dir = outputs / sweep.campaign
    prepare_campaign_dir(campaign_dir)
    outcomes: list[PointOutcome] = []
    with campaign_lock(campaign_dir):
        bar = tqdm(sweep.points, desc=sweep.campaign, unit="point", disable=not progress)
        counts = {"ok": 0, "failed": 0, "skipped": 0}
        try:
            remember_points(campaign_dir, sweep.points)
            for point in bar:
                target = campaign_dir / f"{point.name}.ipynb"
                if skip_reason(point_status(target), force, retry_failed):
                    outcome = PointOutcome(point, "skipped")
                else:
                    bar.set_postfix_str(point.label, refresh=True)
                    outcome = execute_point(point, target, sweep.spec.executor.cell_timeout_s,
                                            base_dir, sweep.notebook_dir)
                counts[outcome.status] += 1
                bar.set_postfix(counts, refresh=False)
                outcomes.append(outcome)
                if on_point:
                    on_point(outcome)
        except OutputError as error:
            left = len(sweep.points) - len(outcomes)
            raise OutputError(f"cannot write results: {error}; the sweep stopped with {left} "
                              f"of {len(sweep.points)} points not run (free space or fix the "
                              "folder, then run the same command again)") from error
        finally:
            bar.close()
    return outcomes


def point_context(point: Point, context: dict[str, Any] | None = None) -> dict[str, Any]:
    """The columns every record of ``point`` gets besides its parameters: the notebook's fixed
    values (``benchmark``), point id, notebook, repeat, and ``context`` (e.g. SLURM job ids)."""
    fixed = NOTEBOOK_CONFIGS.get(point.notebook, (None, {}))[1]
    return {**(context or {}), **fixed, "point_id": point.point_id, "notebook": point.notebook,
            "repeat": point.repeat}


def execute_point(point: Point, target: Path, cell_timeout_s: int | None, base_dir: Path,
                  notebook_dir: Path = NOTEBOOK_DIR, context: dict[str, Any] | None = None,
                  ) -> PointOutcome:
    """Run one point with papermill into ``target``; write its sidecar (ok or failed).

    The point runs under its own lock (``skipped`` when another process runs it) in its own
    scratch folder; only a complete notebook is moved into place, and a failure never replaces
    an ``ok`` result (it is kept in the ledger instead). ``context`` adds columns to the record
    (the SLURM job of a point run by a job array). Raises OutputError when the sidecar cannot
    be written.
    """
    with point_lock(target.parent, target.stem) as mine:
        if not mine:
            return PointOutcome(point, "skipped", error="running in another process")
        scratch_root = target.parent / ".partial"
        try:
            scratch_root.mkdir(exist_ok=True)
            scratch = Path(tempfile.mkdtemp(prefix=f"{target.stem}.", dir=scratch_root))
        except OSError as error:
            raise OutputError(describe_os_error(error, scratch_root)) from error
        try:
            return _execute_in(point, target, scratch / target.name, cell_timeout_s, base_dir,
                               notebook_dir, point_context(point, context))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            with contextlib.suppress(OSError):
                scratch_root.rmdir()  # only when no other point is running


def _run_papermill(point: Point, partial: Path, cell_timeout_s: int | None, base_dir: Path,
                   notebook_dir: Path) -> str:
    """Execute the point's notebook into ``partial``; '' or the error text."""
    import papermill

    try:
        papermill.execute_notebook(
            str(notebook_dir / f"{point.notebook}.ipynb"), str(partial),
            parameters=papermill_parameters(point, base_dir), progress_bar=False,
            log_output=False, execution_timeout=cell_timeout_s, cwd=str(base_dir),
            kernel_manager_class=LocalKernelManager,
        )
    except papermill.PapermillExecutionError as exc:
        return f"{exc.ename}: {exc.evalue} (cell {exc.exec_count})"
    except OSError as exc:
        return describe_os_error(exc, exc.filename or partial)
    except Exception as exc:  # kernel death, timeout, bad parameters: the point fails
        return f"{type(exc).__name__}: {exc}"
    return ""


def _execute_in(point: Point, target: Path, partial: Path, cell_timeout_s: int | None,
                base_dir: Path, notebook_dir: Path, context: dict[str, Any]) -> PointOutcome:
    start = time.perf_counter()
    error = _run_papermill(point, partial, cell_timeout_s, base_dir, notebook_dir)
    seconds = time.perf_counter() - start
    complete = is_complete_notebook(partial)
    record = None
    if complete and not error:
        try:
            record = record_from_notebook(partial)
        except RecordError as exc:
            error = str(exc).replace(str(partial), target.name)
    elif partial.exists() and not complete:
        error = error or f"the executed notebook {target.name} was not written completely"
    if error or record is None:
        error = error or "the notebook published no result record"
        record = failed_record(point.parameters, error, wall_time_s=seconds)
    record.update(context)
    return commit_result(point, target, partial if complete else None, record, seconds)


def commit_result(point: Point, target: Path, notebook: Path | None, record: dict,
                  seconds: float = 0.0) -> PointOutcome:
    """Move ``notebook`` (complete, or None) into ``target`` and write the sidecar, unless the
    record failed and ``target`` already holds an ``ok`` result: then the earlier result stays
    and the failure is kept under ``.benchlib/rejected/``."""
    status = str(record.get("status", "failed"))
    kept = keep_ok_result(target, record) if status != "ok" else None
    if kept is not None:
        if notebook is not None:
            with contextlib.suppress(OSError):
                notebook.replace(kept.with_suffix(".ipynb"))
        error = (f"{record.get('error', '')} (the earlier ok result was kept; this failure is "
                 f"in {kept})")
        return PointOutcome(point, "failed", seconds, error)
    fingerprint = None
    if notebook is not None:
        fingerprint = notebook_fingerprint(notebook)
        try:
            notebook.replace(target)
        except OSError as exc:
            raise OutputError(describe_os_error(exc, target)) from exc
    write_sidecar(target, record, fingerprint)
    return PointOutcome(point, status, seconds, str(record.get("error", "")))


def summarize_outcomes(outcomes: Iterable[PointOutcome]) -> str:
    """One line: how many points ran, failed, were skipped."""
    outcomes = list(outcomes)
    counts = {s: sum(o.status == s for o in outcomes) for s in ("ok", "failed", "skipped")}
    return (f"{len(outcomes)} points: {counts['ok']} ok, {counts['failed']} failed, "
            f"{counts['skipped']} skipped (done before)")
