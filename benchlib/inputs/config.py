"""Typed, validated configurations of one benchmark run (what a notebook's parameters hold)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from benchlib import vocabulary
from benchlib.inputs import node_limits
from benchlib.inputs.node_limits import MAX_WORKERS, SEED_LIMIT

Precision = vocabulary.literal(vocabulary.Precision)
CompileMode = Literal["none", "default", "reduce-overhead", "max-autotune"]
DeviceChoice = Literal["auto", "cuda", "cpu"]
#: A campaign's name: the folder under outputs/ its records go to (params files, runs by hand).
CAMPAIGN_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
CAMPAIGN_MAX = 100


def check_campaign(value: str) -> str:
    """``value`` when it can name a campaign's folder, else a ValueError that says what can."""
    if len(value) > CAMPAIGN_MAX or not re.fullmatch(CAMPAIGN_PATTERN, value, re.ASCII):
        raise ValueError(f"{value[:120]!r} cannot name a campaign's folder: use ASCII letters, "
                         f"digits, '.', '_' and '-', starting with a letter or digit, at most "
                         f"{CAMPAIGN_MAX} characters (e.g. 'interactive', 'jade2-v100')")
    return value


class CommonConfig(BaseModel):
    """Parameters of every notebook that runs on devices: where, and on how many.

    ``num_devices`` counts devices (one process each) over all ``num_nodes`` nodes; more than
    one runs through torchrun (:mod:`benchlib.run.launch`). ``node_launcher`` says how the nodes'
    torchrun agents start when ``num_nodes`` > 1: ``srun`` inside a SLURM allocation (``auto``
    picks it there), or ``localhost`` to run every "node" on this machine (tests the multi-node
    path on one host). A rank that finishes no iteration for ``hang_timeout_s`` seconds is
    taken as hung and the launch is stopped.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    campaign: str = "interactive"
    cluster: str = ""
    device: DeviceChoice = "auto"
    num_devices: PositiveInt = 1
    num_nodes: PositiveInt = 1
    node_launcher: Literal["auto", "srun", "localhost"] = "auto"
    hang_timeout_s: PositiveFloat = 600.0
    seed: int = Field(0, ge=0, lt=SEED_LIMIT)

    @field_validator("campaign")
    @classmethod
    def _campaign_names_a_folder(cls, value: str) -> str:
        return check_campaign(value)

    @model_validator(mode="after")
    def _devices_split_over_nodes(self) -> CommonConfig:
        if self.num_devices % self.num_nodes:
            fits = range(self.num_nodes, 4 * self.num_nodes + 1, self.num_nodes)
            raise ValueError(f"num_devices {self.num_devices} does not split evenly over num_nodes "
                             f"{self.num_nodes} (each node runs num_devices / num_nodes processes); "
                             f"e.g. {', '.join(map(str, fits))}")
        return self

    @model_validator(mode="after")
    def _processes_fit_the_node(self) -> CommonConfig:
        """One process per device: no more on a node than its cores (``device: cpu``) or GPUs
        (:func:`benchlib.inputs.node_limits.device_bound`)."""
        bound, why = node_limits.device_bound(self.device)
        if self.processes_here > bound:
            where = "this node" if self.processes_here == self.num_devices else "each node"
            raise ValueError(f"num_devices {self.num_devices}: device {self.device!r} starts "
                             f"{self.processes_here} processes on {where}, more than {why} "
                             f"(at most {bound} per node)")
        return self

    @property
    def devices_per_node(self) -> int:
        """Processes torchrun starts on each node."""
        return self.num_devices // self.num_nodes

    @property
    def processes_here(self) -> int:
        """Processes one host runs: every device's with ``node_launcher: localhost`` (each
        "node" is this machine), else :attr:`devices_per_node`."""
        return self.num_devices if self.node_launcher == "localhost" else self.devices_per_node


class RunConfig(CommonConfig):
    """Parameters every benchmark notebook shares.

    ``scaling`` applies when ``num_devices`` > 1: ``weak`` keeps ``batch_size`` per device (the
    global batch grows with the devices), ``strong`` keeps ``batch_size`` as the global batch and
    splits it over the devices. Every rank runs ``iterations`` iterations on its own share of
    the data (no rank sees another's inputs). ``telemetry_interval_s`` is the NVML sampling
    period over the timed loop (0: off; CPUs have none to sample). ``iterations: auto`` times
    iterations until the mean iteration time is known within 2 % (95 % interval) after at
    least ``min_time_s`` seconds, or until ``max_time_s`` (one process only: ranks would stop
    at different counts). ``sync_debug`` counts the device synchronisations the timed steps make
    (PyTorch's sync debug mode; the record's ``result_syncs_in_timed_loop``, 0 when the loop
    never waits on the device; CUDA only).
    """

    precision: Precision = vocabulary.Precision.FP32.value
    iterations: PositiveInt | Literal["epoch", "auto"] = 50
    min_time_s: PositiveFloat = 2.0
    max_time_s: PositiveFloat = 60.0
    warmup: NonNegativeInt = 5
    batch_size: PositiveInt = 32
    num_workers: int = Field(4, ge=0, le=MAX_WORKERS)
    breakdown: bool = True
    scaling: Literal["weak", "strong"] = "weak"
    telemetry_interval_s: NonNegativeFloat = 0.1
    sync_debug: bool = False

    @model_validator(mode="after")
    def _time_budget(self) -> RunConfig:
        if self.max_time_s < self.min_time_s:
            raise ValueError(f"max_time_s {self.max_time_s} is below min_time_s {self.min_time_s}")
        if self.iterations == "auto" and self.num_devices > 1:
            raise ValueError(f"iterations 'auto' decides per process, so {self.num_devices} ranks "
                             "would stop at different counts; give a number of iterations")
        return self

    @model_validator(mode="after")
    def _strong_batch_splits(self) -> RunConfig:
        if self.scaling == "strong" and self.batch_size % self.num_devices:
            n = self.num_devices
            near = sorted({max(n, self.batch_size // n * n), (self.batch_size // n + 1) * n})
            raise ValueError(f"batch_size {self.batch_size} (the global batch in strong scaling) "
                             f"does not split over num_devices {n}; e.g. "
                             f"{' or '.join(map(str, near))}")
        return self

    @property
    def device_batch_size(self) -> int:
        """The batch each device processes per iteration."""
        return self.batch_size // self.num_devices if self.scaling == "strong" else self.batch_size

    @property
    def global_batch_size(self) -> int:
        """The batch of one iteration over all devices."""
        return self.device_batch_size * self.num_devices


def describe_validation_error(error: Exception, where: str = "",
                              fields: Iterable[str] = ()) -> list[str]:
    """Turn a pydantic ValidationError into one readable line per bad field.

    ``fields`` are the model's field names, used to name the field of cross-field checks.
    """
    fields = set(fields)
    from pydantic import ValidationError

    if not isinstance(error, ValidationError):
        return [f"{where}{error}"]
    lines: list[str] = []
    alternatives: dict[str, list[str]] = {}  # one line per field for values of union types
    for item in error.errors():
        # union members add their tag to the location (iterations.constrained-int): drop it
        loc = [p for p in item["loc"] if isinstance(p, int) or not re.search(r"[\[\]-]", p)]
        field = ".".join(str(p) for p in loc)
        message = item["msg"].removeprefix("Value error, ")
        if not field:  # a check across fields: its message starts with the field's name
            first = re.match(r"\w+", message)
            field = first.group(0) if first and first.group(0) in fields else "point"
            lines.append(f"{where}{field}: {message.removeprefix(f'{field}: ')}")
        elif item["type"] == "extra_forbidden":
            lines.append(f"{where}{field}: unknown parameter")
        elif len(loc) < len(item["loc"]):
            key = f"{where}{field}: bad value {item['input']!r}: "
            if key not in alternatives:
                alternatives[key] = []
                lines.append(key)
            alternatives[key].append(message)
        else:
            lines.append(f"{where}{field}: bad value {item['input']!r}: {message}")
    lines = [line + " or ".join(alternatives[line]) if line in alternatives else line
             for line in lines]
    return lines
