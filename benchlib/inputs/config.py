"""Typed, validated configurations of one benchmark run (what a notebook's parameters hold)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from benchlib.errors import InputError

Precision = Literal["fp32", "tf32", "amp_fp16", "amp_bf16"]
CompileMode = Literal["none", "default", "reduce-overhead", "max-autotune"]
DeviceChoice = Literal["auto", "cuda", "cpu"]
ClassificationBenchmark = Literal["train", "inference", "smooth_inference"]

#: Input side of models that do not take 224 px images by default.
DEFAULT_IMAGE_SIZE = {"inception_v3": 299}


@functools.cache
def classification_models() -> tuple[str, ...]:
    """Names of torchvision's image-classification models (``resnet50``, ``inception_v3``, ...)."""
    import torchvision

    return tuple(sorted(torchvision.models.list_models(module=torchvision.models)))


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

    campaign: str = "adhoc"
    cluster: str = ""
    device: DeviceChoice = "auto"
    num_devices: PositiveInt = 1
    num_nodes: PositiveInt = 1
    node_launcher: Literal["auto", "srun", "localhost"] = "auto"
    hang_timeout_s: PositiveFloat = 600.0
    seed: int = 0

    @model_validator(mode="after")
    def _devices_split_over_nodes(self) -> CommonConfig:
        if self.num_devices % self.num_nodes:
            fits = range(self.num_nodes, 4 * self.num_nodes + 1, self.num_nodes)
            raise ValueError(f"num_devices {self.num_devices} does not split evenly over num_nodes "
                             f"{self.num_nodes} (each node runs num_devices / num_nodes processes); "
                             f"e.g. {', '.join(map(str, fits))}")
        return self

    @property
    def devices_per_node(self) -> int:
        """Processes torchrun starts on each node."""
        return self.num_devices // self.num_nodes


class RunConfig(CommonConfig):
    """Parameters every benchmark notebook shares.

    ``scaling`` applies when ``num_devices`` > 1: ``weak`` keeps ``batch_size`` per device (the
    global batch grows with the devices), ``strong`` keeps ``batch_size`` as the global batch and
    splits it over the devices. Every rank runs ``iterations`` iterations on its own share of
    the data (no rank sees another's inputs). ``telemetry_interval_s`` is the NVML sampling
    period over the timed loop (0: off; CPUs have none to sample). ``iterations: auto`` times
    iterations until the mean iteration time is known within 2 % (95 % interval) after at
    least ``min_time_s`` seconds, or until ``max_time_s`` (one process only: ranks would stop
    at different counts).
    """

    precision: Precision = "fp32"
    iterations: PositiveInt | Literal["epoch", "auto"] = 50
    min_time_s: PositiveFloat = 2.0
    max_time_s: PositiveFloat = 60.0
    warmup: NonNegativeInt = 5
    batch_size: PositiveInt = 32
    num_workers: NonNegativeInt = 4
    breakdown: bool = True
    scaling: Literal["weak", "strong"] = "weak"
    telemetry_interval_s: NonNegativeFloat = 0.1

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


class ClassificationConfig(RunConfig):
    """One train / inference / smooth-inference run of a torchvision classification model.

    ``dataset`` is ``synthetic`` (``synthetic_kind`` says whether the tensors are made once on
    the device or by a CPU loader) or ``real`` (an ImageNet-layout JPEG folder in ``data_dir``).
    ``iterations`` counts timed iterations after ``warmup``, or ``"epoch"`` for one pass over the
    data (warm-up iterations then come out of that pass).
    """

    benchmark: ClassificationBenchmark = "train"
    model: str = "resnet50"
    image_size: PositiveInt | None = None
    dataset: Literal["synthetic", "real"] = "synthetic"
    synthetic_kind: Literal["device", "loader"] = "device"
    data_dir: str = ""
    num_classes: PositiveInt = 1000
    synthetic_samples: PositiveInt = 1024
    channels_last: bool = False
    compile: CompileMode = "none"
    noise_samples: PositiveInt = 100
    sigma: PositiveFloat = 0.25

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        known = classification_models()
        if value not in known:
            close = [m for m in known if m.startswith(value[:4])] or list(known[:8])
            raise ValueError(
                f"unknown model {value!r}; allowed: any torchvision classification model, "
                f"e.g. {', '.join(close[:8])} ({len(known)} in all)"
            )
        return value

    @model_validator(mode="after")
    def _real_data_needs_folder(self) -> ClassificationConfig:
        if self.dataset == "real":
            if not self.data_dir:
                raise ValueError("data_dir is empty: dataset 'real' needs an ImageNet-layout "
                                 "image folder")
            if not Path(self.data_dir).is_dir():
                raise ValueError(f"data_dir {self.data_dir!r} is not a directory")
        size = self.resolved_image_size
        if self.model == "inception_v3":
            smallest = 299 if self.benchmark == "train" else 75  # the aux head needs 299 px
            if size < smallest:
                raise ValueError(f"image_size {size} too small: inception_v3 {self.benchmark} "
                                 f"needs image_size >= {smallest}")
        if size < 32:
            raise ValueError(f"image_size {size} is below 32 px")
        if self.benchmark == "smooth_inference" and self.scaling == "strong":
            raise ValueError("scaling 'strong' does not apply to smooth_inference (one image per "
                             "iteration per device; batch_size is its noise chunk): use 'weak', or "
                             "iterations 'epoch' to split a fixed set of images over the devices")
        return self

    @property
    def resolved_image_size(self) -> int:
        """The image side actually used: ``image_size`` or the model's default."""
        return self.image_size or DEFAULT_IMAGE_SIZE.get(self.model, 224)


Triple = list[PositiveInt]
RAW_KEY = "volumes/raw"
LABEL_KEY = "volumes/labels/neuron_ids"
PREDICTION_KEY = "volumes/predictions"


def _triple(name: str, value: list[int]) -> tuple[int, int, int]:
    if len(value) != 3:
        raise ValueError(f"{name} {value}: three sizes (z, y, x) are needed")
    return tuple(int(v) for v in value)  # type: ignore[return-value]


class UNet3DConfig(RunConfig):
    """The 3D U-Net and the volume shared by ``unet3d_train`` and ``unet3d_predict``.

    ``pooling`` is one (z, y, x) factor for every level or one per level (``depth`` levels);
    the defaults are the CREMI network of the reference campaign's era: 12 features growing 5x
    per level, pooling (1, 3, 3), (1, 3, 3), (3, 3, 3), valid convolutions.
    """

    benchmark: Literal["unet3d_train", "unet3d_predict"] = "unet3d_train"
    volume: str = ""
    raw_key: str = RAW_KEY
    depth: PositiveInt = 3
    pooling: Triple | list[Triple] = [[1, 3, 3], [1, 3, 3], [3, 3, 3]]
    base_features: PositiveInt = 12
    growth: PositiveInt = 5
    padding: Literal["valid", "same"] = "valid"
    norm: Literal["none", "batch", "group"] = "batch"
    target: Literal["affinities", "boundaries"] = "affinities"
    compile: CompileMode = "none"

    @property
    def pooling_levels(self) -> tuple[tuple[int, int, int], ...]:
        """One (z, y, x) pooling factor per level."""
        if self.pooling and isinstance(self.pooling[0], list):
            return tuple(_triple("pooling", p) for p in self.pooling)  # type: ignore[arg-type]
        return (_triple("pooling", self.pooling),) * self.depth  # type: ignore[arg-type]

    @property
    def geometry(self):  # -> UNetGeometry (imported lazily: pure Python, but keeps config light)
        from benchlib.models.geometry import UNetGeometry

        return UNetGeometry(self.pooling_levels, self.padding)

    @property
    def out_channels(self) -> int:
        return 3 if self.target == "affinities" else 1

    @model_validator(mode="after")
    def _network_fits(self) -> UNet3DConfig:
        levels = self.pooling_levels
        if len(levels) != self.depth:
            raise ValueError(f"pooling lists {len(levels)} levels but depth is {self.depth}; "
                             "give one [z, y, x] per level or a single [z, y, x] for all")
        return self

    def _volume_shape(self, key_field: str = "raw_key") -> tuple[int, ...]:
        """Shape of the dataset named by ``key_field``; errors name that field or ``volume``."""
        from benchlib.data.volumes import VolumeError, check_volume

        if not self.volume:
            raise ValueError(f"volume is empty: {self.benchmark} needs an HDF5 or zarr volume "
                             "(benchlib data volume PATH --shape Z Y X writes one)")
        try:
            return check_volume(self.volume, getattr(self, key_field))
        except VolumeError as error:
            field = key_field if "has no dataset" in str(error) else "volume"
            raise ValueError(f"{field}: {error}") from None


class UNet3DTrainConfig(UNet3DConfig):
    """Training of the 3D U-Net on random patches of a CREMI-layout volume (or device tensors).

    ``patch_shape`` is the network's input; the loss (binary cross entropy on the logits) covers
    the output, the centred crop that valid convolutions leave. Adam, one step per iteration.
    """

    benchmark: Literal["unet3d_train"] = "unet3d_train"
    iterations: PositiveInt | Literal["epoch", "auto"] = 1001
    batch_size: PositiveInt = 1
    dataset: Literal["synthetic", "real"] = "synthetic"
    label_key: str = LABEL_KEY
    patch_shape: Triple = [84, 268, 268]
    augment: bool = True
    learning_rate: PositiveFloat = 0.5e-4

    @model_validator(mode="after")
    def _patch_and_volume(self) -> UNet3DTrainConfig:
        if self.iterations == "epoch":
            raise ValueError("iterations 'epoch': random patches have no epoch; give a number "
                             "(the reference campaign ran 1001)")
        patch = _triple("patch_shape", self.patch_shape)
        self.geometry.output_shape(patch, "patch_shape")
        if self.dataset == "real":
            shape = self._volume_shape()
            labels = self._volume_shape("label_key")
            if labels != shape:
                raise ValueError(f"label_key: labels {self.label_key!r} have shape {list(labels)}, "
                                 f"raw {self.raw_key!r} {list(shape)}: they must match")
            if any(p > s for p, s in zip(patch, shape, strict=True)):
                raise ValueError(f"patch_shape {list(patch)} is larger than the volume "
                                 f"{list(shape)}")
        return self

    @property
    def output_shape(self) -> tuple[int, int, int]:
        """The network's output for ``patch_shape`` (the part the loss covers)."""
        return self.geometry.output_shape(_triple("patch_shape", self.patch_shape))


class UNet3DPredictConfig(UNet3DConfig):
    """Blockwise prediction of a whole volume into ``output`` (HDF5 or zarr; empty: a temporary
    file beside the volume, removed afterwards).

    ``block_shape`` is the output block each forward pass writes, a multiple of the network's
    downsampling factor so that blocks stitch exactly; ``halo`` the context read around it
    (default: what valid convolutions consume, or the receptive field for same convolutions).
    ``iterations`` counts batches of ``batch_size`` blocks, ``"epoch"`` the whole volume;
    ``warmup`` batches are run before the timed pass and not written.
    """

    benchmark: Literal["unet3d_predict"] = "unet3d_predict"
    iterations: PositiveInt | Literal["epoch"] = "epoch"
    warmup: NonNegativeInt = 2
    batch_size: PositiveInt = 1
    block_shape: Triple = [48, 108, 108]
    halo: Triple | None = None
    output: str = ""
    output_key: str = PREDICTION_KEY
    output_dtype: Literal["uint8", "float16", "float32"] = "uint8"

    @model_validator(mode="after")
    def _blocks_and_volume(self) -> UNet3DPredictConfig:
        geometry = self.geometry
        block = _triple("block_shape", self.block_shape)
        factor = geometry.downsampling
        if any(b % f for b, f in zip(block, factor, strict=True)):
            nearby = [max(f, round(b / f) * f) for b, f in zip(block, factor, strict=True)]
            raise ValueError(f"block_shape {list(block)} is not a multiple of the network's "
                             f"downsampling {list(factor)}, so blocks would not stitch exactly; "
                             f"e.g. {nearby}")
        halo = self.resolved_halo
        if self.padding == "valid" and halo != geometry.valid_halo:
            raise ValueError(f"halo {list(halo)} differs from the {list(geometry.valid_halo)} that "
                             "valid convolutions consume; leave halo empty (None)")
        if any(b < h for b, h in zip(block, halo, strict=True)):
            raise ValueError(f"block_shape {list(block)} is smaller than the halo {list(halo)} "
                             "along an axis: each pass would read more context than it writes")
        geometry.block_input(block, halo)
        self._volume_shape()
        if self.output:
            from benchlib.data.volumes import VolumeError, volume_format

            try:
                volume_format(self.output)
            except VolumeError as error:
                raise ValueError(f"output: {error}") from None
            if self.num_devices > 1 and volume_format(self.output) != "zarr":
                raise ValueError(f"output {self.output!r}: {self.num_devices} ranks write the "
                                 "predictions at once, which HDF5 cannot take without MPI; give "
                                 "a .zarr output (or leave output empty)")
            if Path(self.output).resolve() == Path(self.volume).resolve():
                raise ValueError("output is the volume file itself: give another file")
            if not Path(self.output).resolve().parent.is_dir():
                raise ValueError(f"output {self.output!r}: folder "
                                 f"{str(Path(self.output).resolve().parent)!r} does not exist")
        return self

    @property
    def resolved_halo(self) -> tuple[int, int, int]:
        """The halo used: ``halo`` or the network's default."""
        if self.halo is None:
            return self.geometry.default_halo()
        return _triple("halo", self.halo)


class AllReduceConfig(CommonConfig):
    """The all-reduce probe: bus bandwidth over message sizes, as nccl-tests measures it.

    Sizes run from ``min_bytes`` to ``max_bytes``, doubling; each is all-reduced ``warmup``
    times untimed, then ``iterations`` times timed (the mean over ranks of the mean time per
    operation, as nccl-tests reports by default).
    """

    benchmark: Literal["probe_allreduce"] = "probe_allreduce"
    num_devices: PositiveInt = 2
    min_bytes: PositiveInt = 1024
    max_bytes: PositiveInt = 1 << 30
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    iterations: PositiveInt = 20
    warmup: NonNegativeInt = 5

    @model_validator(mode="after")
    def _sizes(self) -> AllReduceConfig:
        if self.num_devices < 2:
            raise ValueError("num_devices 1: the all-reduce probe needs at least 2 devices")
        if self.min_bytes > self.max_bytes:
            raise ValueError(f"min_bytes {self.min_bytes} is larger than max_bytes {self.max_bytes}")
        if self.min_bytes < 4:
            raise ValueError(f"min_bytes {self.min_bytes}: at least one element (4 bytes)")
        return self

    @property
    def sizes(self) -> list[int]:
        """Message sizes in bytes: ``min_bytes`` doubling up to ``max_bytes``."""
        sizes, size = [], self.min_bytes
        while size <= self.max_bytes:
            sizes.append(size)
            size *= 2
        return sizes


class NodeProbeConfig(CommonConfig):
    """The node probe: matmul TFLOP/s per precision, device memory bandwidth, host<->device
    bandwidth, JPEG decode images/s against loader workers and the data directory's read
    throughput (those two only with ``data_dir``); the all-reduce probe over
    ``allreduce_devices`` (0: every visible GPU when there are two or more; 1: none).

    Each figure stops after ``probe_time_s`` seconds (at least one timed call): ``iterations``
    and ``decode_batches`` are upper bounds, and the matmul grows from 1024 towards
    ``matmul_size`` only while a product of the next size fits the budget, so a GPU measures at
    the full size and a CPU finishes in minutes.
    """

    benchmark: Literal["probe_node"] = "probe_node"
    precisions: list[Literal["fp32", "tf32", "fp16", "bf16"]] = ["fp32", "tf32", "fp16", "bf16"]
    matmul_size: PositiveInt = 8192
    memory_bytes: PositiveInt = 1 << 30
    transfer_bytes: PositiveInt = 256 << 20
    iterations: PositiveInt = 20
    warmup: NonNegativeInt = 3
    data_dir: str = ""
    image_size: PositiveInt = 224
    decode_workers: list[NonNegativeInt] = [1, 2, 4, 8]
    decode_batch_size: PositiveInt = 64
    decode_batches: PositiveInt = 20
    read_max_bytes: PositiveInt = 2 << 30
    allreduce_devices: NonNegativeInt = 0
    probe_time_s: PositiveFloat = 5.0

    @model_validator(mode="after")
    def _one_process(self) -> NodeProbeConfig:
        if self.num_devices != 1 or self.num_nodes != 1:
            raise ValueError(f"num_devices {self.num_devices}: the node probe runs in one process "
                             "on one node; allreduce_devices sets the all-reduce part")
        if not self.precisions:
            raise ValueError("precisions: name at least one of fp32, tf32, fp16, bf16")
        if not self.decode_workers:
            raise ValueError("decode_workers: name at least one worker count (0: the main process)")
        if self.data_dir and not Path(self.data_dir).is_dir():
            raise ValueError(f"data_dir {self.data_dir!r} is not a directory")
        return self

    def allreduce_count(self, visible_gpus: int) -> int:
        """Devices the all-reduce part runs on (0: it does not run)."""
        count = visible_gpus if self.allreduce_devices == 0 else self.allreduce_devices
        return count if count >= 2 else 0


class ConfigError(InputError):
    """Invalid configuration; the message names the file, field, bad value and what is allowed."""


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

