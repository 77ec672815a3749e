"""``benchlib diagnose``'s plan: a ladder of runs, from what the node can do for a model down to
what the user's setting achieves, as the points of one campaign.

The rungs (each run ``repeats`` times first, interleaved; then, with sequential repeats, the
rungs of the steps not yet decided again in rounds: :mod:`benchlib.diagnosis.budget`):

- ``probe``: the node probe (matmul, memory, host link, JPEG decode per worker count, read);
- ``device``: synthetic data made once on the device, at the user's precision and, on a GPU,
  at the other precisions and memory formats (``channels_last``);
- ``host``: synthetic data made on the host by the loader workers (adds the copy and collate);
- ``memory``: the data folder read once into memory (``data_source: memory``: decode only);
- ``disk``: the data folder read as the user reads it, at the user's worker count and others;
- ``gpu_decode`` (on a GPU, with a data folder): the same at the user's worker count with the
  JPEGs decoded on the GPU (``decode: device``): not a step of the waterfall, a change to try.

Without a data folder the ladder ends at ``host``, run at every worker count. Every point's
parameters are typed values validated by its config class: nothing the user typed is ever
formatted into YAML or code. The plan is kept in the campaign folder (:data:`PLAN_FILE`) so
that the analysis and the report know which run is which rung and what the user's setting is.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    ValidationError,
)

from benchlib import registry
from benchlib.diagnosis import budget as budget_of
from benchlib.diagnosis.defaults import DEFAULTS
from benchlib.errors import InputError
from benchlib.inputs.config import DeviceChoice, Precision, describe_validation_error
from benchlib.inputs.executors import LocalExecutor, Settings
from benchlib.inputs.layout import LEDGER
from benchlib.inputs.node_limits import MAX_IMAGE_SIDE, MAX_WORKERS, cores
from benchlib.inputs.params import Point, Sweep, SweepFile
from benchlib.vocabulary import MatmulPrecision
from benchlib.vocabulary import Precision as Precisions

#: Where the plan is kept in the campaign folder (hidden: the record loader does not look there).
PLAN_FILE = Path(LEDGER) / "diagnose.json"
RungKind = Literal["probe", "device", "host", "memory", "disk", "gpu_decode"]
#: Precisions and memory formats tried on a GPU besides the user's.
GPU_VARIANTS = ((Precisions.TF32, False), (Precisions.AMP_BF16, False), (Precisions.AMP_BF16, True),
                (Precisions.AMP_FP16, True))
MAX_WORKER_COUNTS = 3


MAX_BUDGET_S = 7 * 24 * 3600.0  #: a week: diagnose's --budget at most (inf is not a budget)


class DiagnoseRequest(BaseModel):
    """What ``benchlib diagnose`` is asked: the model, the user's data and setting, the budget.

    ``None`` values take the defaults of the target (:data:`DEFAULTS`: CPU or GPU);
    ``num_workers`` defaults to 4, or the cores available when fewer."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    model: str = "resnet50"
    benchmark: Literal[registry.DIAGNOSED] = registry.DIAGNOSED[0]  # type: ignore[valid-type]
    data_dir: str = ""
    num_devices: PositiveInt = 1
    num_workers: int | None = Field(None, ge=0, le=MAX_WORKERS)
    precision: Precision = Precisions.FP32.value
    channels_last: bool = False
    batch_size: PositiveInt | None = None
    image_size: int | None = Field(None, gt=0, le=MAX_IMAGE_SIDE)
    budget_s: float | None = Field(None, gt=0, le=MAX_BUDGET_S, allow_inf_nan=False)
    repeats: int | None = Field(None, ge=2, le=20)  #: fixed runs per rung (no extra rounds)
    device: DeviceChoice = "auto"
    campaign: str = Field("", pattern=r"^([A-Za-z0-9][A-Za-z0-9._-]*)?$", max_length=100)
    cores: PositiveInt | None = None


class Rung(BaseModel):
    """One rung of the ladder: its kind, a label for people, and the record columns that
    pick its runs out of the campaign (``match``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    kind: RungKind
    label: str
    match: dict[str, str | int | bool]


class Plan(BaseModel):
    """The planned ladder: the user's setting, the rungs, and the timing of each run."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    campaign: str
    target: Literal["cpu", "cuda"]
    model: str
    benchmark: str
    data_dir: str
    num_devices: int
    batch_size: int
    image_size: int
    num_workers: int
    precision: str
    channels_last: bool
    worker_counts: list[int]
    cores: int = 0  #: cores available to the ladder (0: not known)
    repeats: int  #: runs per rung in the initial round (all of them with ``adaptive`` false)
    adaptive: bool = False  #: sequential repeats: extra rounds until each step is decided
    max_runs: int = 0  #: benchmark runs the budget holds, extra rounds included
    target_factor: float = budget_of.TARGET_FACTOR
    budget_s: float
    run_time_s: float
    rungs: list[Rung]
    parameters: dict[str, dict[str, Any]]  #: rung name -> its point's parameters

    @property
    def initial_runs(self) -> int:
        """Benchmark runs of the initial round."""
        return self.repeats * (len(self.rungs) - 1)

    @property
    def estimate_s(self) -> float:
        """Seconds the whole ladder is expected to take at most (every run the budget holds)."""
        return self.estimate_of(max(self.max_runs, self.initial_runs), probe=True)

    def estimate_of(self, runs: int, probe: bool) -> float:
        """Seconds ``runs`` benchmark runs (and the probe, with ``probe``) are expected to take."""
        return budget_of.estimate_s(self.target, runs, self.run_time_s, probe)

    def point(self, name: str, repeat: int, order: int = 0) -> Point:
        """Run ``repeat`` (0, 1, ...) of the rung named ``name``."""
        return Point(self.benchmark, self.parameters[name], repeat,
                     f"{self.benchmark}-{name}-r{repeat}", order)

    def points(self) -> list[tuple[str, Point]]:
        """Every point of the initial round with its rung's name: the probe first, then every
        rung, its repeats interleaved (ABCABC)."""
        probe = registry.node_probe().notebook
        found = [("probe", Point(probe, self.parameters["probe"], 0, probe, 0))]
        for repeat in range(self.repeats):
            for rung in self.rungs[1:]:
                found.append((rung.name, self.point(rung.name, repeat, len(found))))
        return found

    @property
    def most_repeats(self) -> int:
        """The most runs one rung can get: the initial round's and every extra run."""
        return self.repeats + max(0, self.max_runs - self.initial_runs)

    def point_ids(self) -> dict[str, set[str]]:
        """Rung name -> the ids of its points (a record's ``point_id``), extra rounds
        included: the runs of this plan, never those of another plan run into the same
        campaign folder."""
        found: dict[str, set[str]] = {"probe": {self.points()[0][1].point_id}}
        for rung in self.rungs[1:]:
            found[rung.name] = {self.point(rung.name, r).point_id
                                for r in range(self.most_repeats)}
        return found

    def __str__(self) -> str:
        return (f"diagnose plan {self.campaign}: {self.model} {self.benchmark} on {self.target}, "
                f"{len(self.rungs) - 1} rungs x {self.repeats} repeats"
                + (f", up to {self.max_runs} runs" if self.adaptive else ""))


def worker_counts(user: int, cores: int, devices: int) -> list[int]:
    """The user's worker count and powers of two up to the cores each device gets (at most
    :data:`MAX_WORKER_COUNTS` counts, the largest kept)."""
    cap = max(1, cores // devices)
    powers = [2 ** i for i in range(cap.bit_length()) if 2 ** i <= cap]
    if cap not in powers:
        powers.append(cap)
    chosen = sorted({user, *powers[-(MAX_WORKER_COUNTS - 1):]})
    return chosen


def _target(request: DiagnoseRequest, runs_here: bool) -> Literal["cpu", "cuda"]:
    if request.device != "auto":
        return request.device  # type: ignore[return-value]
    if not runs_here:
        return "cuda"  # planned on a login node: the jobs run on a GPU node
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def require_device(plan_: Plan, runs_here: bool = True) -> None:
    """InputError before anything runs when a ladder that ``runs_here`` (on this machine, as
    the executor's settings say) is planned on a GPU that torch does not see here (every run
    would fail)."""
    if plan_.target != "cuda" or not runs_here:
        return
    import torch

    if not torch.cuda.is_available():
        raise InputError("--device cuda: torch sees no CUDA device here (use --device cpu or "
                         "auto, or --executor slurm to run on a GPU node)")


def settings_tag(parameters: dict[str, dict[str, Any]], repeats: int,
                 rounds: tuple[object, ...] = ()) -> str:
    """Six hex digits naming the settings of a ladder (its points' parameters, repeats and
    ``rounds``: whether extra rounds run, their most runs and target), never the runs done: the
    same command gets the same default campaign, so it resumes; another setting gets its own."""
    key = json.dumps([parameters, repeats, *rounds], sort_keys=True, default=str)
    return hashlib.sha1(key.encode()).hexdigest()[:6]


def _rungs(request: DiagnoseRequest, target: str, workers: int,
           counts: list[int]) -> list[tuple[Rung, dict[str, Any]]]:
    """Every rung and its point's parameters beyond the shared ones."""
    user_format = (request.precision, request.channels_last)
    formats = [user_format, *(GPU_VARIANTS if target == "cuda" else ())]
    found: list[tuple[Rung, dict[str, Any]]] = []
    for precision, channels_last in dict.fromkeys(formats):
        name = f"device-{precision}" + ("-cl" if channels_last else "")
        label = f"synthetic on the device, {precision}" + (", channels_last" if channels_last else "")
        found.append((Rung(name=name, kind="device", label=label, match={
            "dataset": "synthetic", "synthetic_kind": "device", "precision": precision,
            "channels_last": channels_last}),
            {"dataset": "synthetic", "synthetic_kind": "device", "precision": precision,
             "channels_last": channels_last, "num_workers": 0}))
    user = {"precision": request.precision, "channels_last": request.channels_last}
    if target == "cuda" and request.data_dir:  # before the disk rungs: the last stays last
        values = {"dataset": "real", "data_source": "disk", "decode": "device", **user,
                  "num_workers": workers}
        found.append((Rung(name=f"disk-gpu-w{workers}", kind="gpu_decode",
                           label=f"real data from disk decoded on the GPU, {workers} worker"
                                 f"{'s' if workers != 1 else ''}", match=values),
                      {**values, "data_dir": request.data_dir}))
    last: RungKind = "disk" if request.data_dir else "host"
    for kind in ("host", "memory", "disk"):
        if kind != "host" and not request.data_dir:
            continue
        for count in counts if kind == last else [workers]:
            values: dict[str, Any] = {"dataset": "synthetic", "synthetic_kind": "loader"} \
                if kind == "host" else {"dataset": "real", "data_source": kind,
                                        "data_dir": request.data_dir}
            what = {"host": "synthetic on the host", "memory": "real data from memory",
                    "disk": "real data from disk"}[kind]
            match = {k: v for k, v in values.items() if k != "data_dir"}
            found.append((Rung(name=f"{kind}-w{count}", kind=kind,
                               label=f"{what}, {count} worker{'s' if count != 1 else ''}",
                               match={**match, **user, "num_workers": count}),
                          {**values, **user, "num_workers": count}))
    return found


def plan(request: DiagnoseRequest, runs_here: bool = True) -> Plan:
    """The ladder for ``request`` (InputError naming the option when a value is not allowed);
    ``runs_here``: whether its points run on this machine (else ``device: auto`` means a GPU)."""
    target = _target(request, runs_here)
    defaults = DEFAULTS[target]
    available = request.cores or cores()
    workers = request.num_workers if request.num_workers is not None else min(4, available)
    counts = worker_counts(workers, available, request.num_devices)
    budget = request.budget_s or defaults["budget_s"]
    rungs = _rungs(request, target, workers, counts)
    repeats, max_runs, run_time = budget_of.size(budget, target, len(rungs), request.repeats)
    adaptive = request.repeats is None
    shared = {"model": request.model, "device": target,
              "num_devices": request.num_devices,
              "batch_size": request.batch_size or defaults["batch_size"],
              "image_size": request.image_size or defaults["image_size"],
              "warmup": defaults["warmup"], "telemetry_interval_s": 0.1 if target == "cuda" else 0.0}
    shared.update({"iterations": "auto", "min_time_s": round(run_time / 2, 2), "max_time_s": run_time}
                  if request.num_devices == 1 else {"iterations": 30})
    config = _validated(registry.by_benchmark(request.benchmark).config,
                        {**shared, **rungs[-1][1], "benchmark": request.benchmark}, "diagnose")
    parameters = {rung.name: {**shared, **values} for rung, values in rungs}
    parameters["probe"] = _probe_parameters(request, target, counts, config.resolved_image_size,
                                            defaults["probe_time_s"])
    rounds = (adaptive, max_runs, budget_of.TARGET_FACTOR) if adaptive else ()
    campaign = request.campaign or \
        f"diagnose-{request.model}-{settings_tag(parameters, repeats, rounds)}"
    parameters = {name: {**values, "campaign": campaign} for name, values in parameters.items()}
    probe = Rung(name="probe", kind="probe", label="the node probe",
                 match={"benchmark": registry.node_probe().benchmark})
    return Plan(campaign=campaign, target=target, model=request.model,
                benchmark=request.benchmark, data_dir=request.data_dir,
                num_devices=request.num_devices, batch_size=config.batch_size,
                image_size=config.resolved_image_size, num_workers=workers,
                precision=request.precision, channels_last=request.channels_last,
                worker_counts=counts, cores=available, repeats=repeats, adaptive=adaptive,
                max_runs=max_runs, budget_s=budget, run_time_s=run_time,
                rungs=[probe, *(rung for rung, _ in rungs)], parameters=parameters)


def _probe_parameters(request: DiagnoseRequest, target: str, counts: list[int],
                      image_size: int, probe_time_s: float) -> dict[str, Any]:
    values: dict[str, Any] = {"device": target, "data_dir": request.data_dir,
                              "decode_workers": counts, "image_size": image_size,
                              "probe_time_s": probe_time_s}
    if target == "cpu":
        values.update(precisions=[MatmulPrecision.FP32.value], matmul_size=1024, memory_bytes=64 << 20,
                      transfer_bytes=16 << 20, read_max_bytes=256 << 20, decode_batch_size=16,
                      decode_batches=8)
    _validated(registry.node_probe().config, values, "diagnose (node probe)")
    return values


def _validated(model: type[BaseModel], values: dict[str, Any], where: str) -> Any:
    """``model(**values)``, or InputError with one line per bad field."""
    try:
        return model(**values)
    except ValidationError as error:
        lines = describe_validation_error(error, fields=model.model_fields)
        raise InputError("\n".join(f"{where}: {line}" for line in lines)) from None


def request_from(values: dict[str, Any]) -> DiagnoseRequest:
    """A validated request from keyword values (InputError naming each bad one)."""
    return _validated(DiagnoseRequest, values, "diagnose")


def sweep(plan_: Plan, plan_path: Path, executor: Settings | None = None,
          points: list[Point] | None = None) -> Sweep:
    """The plan as a sweep of the normal machinery: ``points`` (a round of extra repeats), or
    the initial round: the probe first, then every rung, its repeats interleaved (ABCABC)."""
    spec = SweepFile(campaign=plan_.campaign, notebook=[registry.node_probe().notebook, plan_.benchmark],
                     repeats=plan_.repeats, executor=executor or LocalExecutor())
    chosen = points if points is not None else [point for _, point in plan_.points()]
    return Sweep(plan_path, spec, chosen)


def write_plan(plan_: Plan, campaign_dir: Path) -> Path:
    """Keep the plan in the campaign folder (written whole: a temp file, then renamed)."""
    path = campaign_dir / PLAN_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(plan_.model_dump(mode="json"), indent=1), encoding="utf-8")
    os.replace(partial, path)
    return path


def read_plan(campaign_dir: str | Path) -> Plan | None:
    """The plan kept in ``campaign_dir`` (None when the campaign is not a diagnosis)."""
    path = Path(campaign_dir) / PLAN_FILE
    if not path.is_file():
        return None
    try:
        return Plan(**json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as error:
        raise InputError(f"{path}: not a diagnose plan ({error}); run benchlib diagnose "
                         "again into a new campaign") from None


def check_campaign(plan_: Plan, campaign_dir: Path) -> None:
    """InputError when ``campaign_dir`` already holds a diagnosis planned with other settings
    (its runs would be mixed with this one's and its plan overwritten); the same plan resumes."""
    kept = read_plan(campaign_dir)
    if kept is None or kept == plan_:
        return
    ours, theirs = plan_.model_dump(mode="json"), kept.model_dump(mode="json")
    differ = [name for name in ours if ours[name] != theirs.get(name)]
    raise InputError(f"--campaign {plan_.campaign}: {campaign_dir} holds a diagnosis with other "
                     f"settings ({', '.join(differ)} differ); use another --campaign (or none: "
                     "the default name is per setting), or the same settings to resume it")
