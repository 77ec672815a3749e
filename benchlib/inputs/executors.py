"""The ``executor`` section of a params file: where the points run (this machine or SLURM),
and the command line's overrides of it. Each kind's settings are one class here
(:data:`SETTINGS`); what each kind does with them is its executor class in
:mod:`benchlib.execute.executor`."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError

from benchlib.errors import ConfigError
from benchlib.inputs.config import describe_validation_error


class LocalExecutor(BaseModel):
    """Run points one after another on this machine."""

    model_config = ConfigDict(extra="forbid", strict=True)
    #: Whether the points run on this machine (a diagnose ladder is planned for its devices).
    runs_here: ClassVar[bool] = True
    kind: Literal["local"] = "local"
    cell_timeout_s: PositiveInt | None = None


class SlurmExecutor(BaseModel):
    """Run the points as a SLURM job array through submitit, one job per point.

    Each job asks for the point's nodes (``num_nodes``), one GPU per device unless the point
    runs on ``device: cpu``, ``cpus_per_device`` cores and ``mem_gb_per_device`` memory per
    device on each node, for ``time_min`` minutes. With ``nodes`` (fleet runs, one-node points
    only) every point runs once on each chosen node (:func:`fleet_nodes`).
    """

    model_config = ConfigDict(extra="forbid", strict=True)
    runs_here: ClassVar[bool] = False
    kind: Literal["slurm"] = "slurm"
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time_min: PositiveInt = 60
    cpus_per_device: PositiveInt = 8
    mem_gb_per_device: PositiveInt | None = None
    max_parallel: PositiveInt | None = Field(
        None, description="array tasks running at once (sbatch --array=...%N)")
    signal_delay_s: int = Field(
        90, ge=0, description="Slurm warns the job this long before its time limit; the point "
                              "then stops and is recorded failed (time limit)")
    setup: list[str] = Field(default_factory=list,
                             description="shell lines run before the point (module load ...)")
    sbatch: dict[str, str | int | bool] = Field(
        default_factory=dict, description="more sbatch options, e.g. {constraint: h100}")
    cell_timeout_s: PositiveInt | None = None
    poll_s: float = Field(10.0, gt=0, description="seconds between queue checks with --wait")
    nodes: Literal["all"] | list[str] | PositiveInt | None = Field(
        None, description="fleet runs: every point once on each node (all: the partition's "
                          "nodes; a list of node names; N: the first N idle nodes), each job "
                          "pinned to its node with --nodelist")


#: The settings of a params file's ``executor`` section, one class per kind.
Settings = LocalExecutor | SlurmExecutor
#: Each kind's settings class, by the kind's name (``executor.kind``).
SETTINGS: dict[str, type[Settings]] = {
    model.model_fields["kind"].default: model for model in (LocalExecutor, SlurmExecutor)}


def apply_overrides(executor: Settings, kind: str | None, **settings: object) -> Settings:
    """The params file's executor with command-line overrides (``--executor``, ``--partition``...);
    ConfigError naming the options the chosen kind does not take."""
    values = executor.model_dump()
    if kind and kind != values["kind"]:
        values = {"kind": kind, "cell_timeout_s": values.get("cell_timeout_s")}
    model = SETTINGS.get(values["kind"])
    if model is None:
        raise ConfigError(f"--executor {kind}: not an executor (known: {', '.join(SETTINGS)})")
    foreign = [name for name, value in settings.items()
               if value is not None and name not in model.model_fields]
    if foreign:
        takers = [k for k, m in SETTINGS.items() if set(foreign) <= set(m.model_fields)]
        flags = ", ".join(f"--{name.replace('_', '-')}" for name in foreign)
        raise ConfigError(f"options {flags} need the {' or '.join(takers)} executor (executor: "
                          f"{{kind: {takers[0]}}} in the params file, or --executor {takers[0]})")
    values.update({k: v for k, v in settings.items() if v is not None})
    try:
        return model(**values)
    except ValidationError as error:
        lines = describe_validation_error(error, fields=model.model_fields)
        raise ConfigError("\n".join(f"executor.{line}" for line in lines)) from None
