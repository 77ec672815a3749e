"""Configurations of the 3D U-Net benchmarks: the network and volume they share, training on
patches and blockwise prediction."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import (
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    model_validator,
)

from benchlib.inputs.benchmark import Benchmark
from benchlib.inputs.config import CompileMode, RunConfig

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
        from benchlib.kinds.unet3d.model_geometry import UNetGeometry

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
        from benchlib.errors import VolumeError
        from benchlib.kinds.unet3d.data import check_volume

        if not self.volume:
            raise ValueError(f"volume is empty: {self.benchmark} needs an HDF5 or zarr volume "
                             "(benchlib data volume PATH --shape Z Y X writes one)")
        try:
            shape = check_volume(self.volume, getattr(self, key_field))
        except VolumeError as error:
            field = key_field if "has no dataset" in str(error) else "volume"
            raise ValueError(f"{field}: {error}") from None
        if key_field == "raw_key":
            self._check_raw_dtype()
        return shape

    def _check_raw_dtype(self) -> None:
        """The raw dataset holds numbers (its header's dtype), or the network cannot read it."""
        import numpy as np

        from benchlib.kinds.unet3d.data import open_volume

        with open_volume(self.volume, self.raw_key) as array:
            dtype = np.dtype(array.dtype)
        if not (np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.bool_)):
            raise ValueError(f"raw_key: dataset {self.raw_key!r} of volume {self.volume!r} holds "
                             f"{dtype.str} ({dtype.name}) values, not numbers; give the key of "
                             "the raw image (integers or floats)")


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
            from benchlib.errors import VolumeError
            from benchlib.kinds.unet3d.data import volume_format

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


#: The kind's variants: one notebook each (the registry reads them, :func:`benchlib.registry.shipped`).
VARIANTS = (
    Benchmark("unet3d_train", "unet3d_train", UNet3DTrainConfig,
              "unet3d_train", "3D U-Net training benchmark",
              "Adam steps of a 3D U-Net on random patches of an EM volume (CREMI layout: "
              "`volumes/raw`, `volumes/labels/neuron_ids`) with flips and transposes, against "
              "affinity or boundary targets made from the labels (`dataset: real`), or on tensors "
              "made once on the device (`dataset: synthetic`). Reported as iterations/minute, "
              "days to 100k iterations and output voxels/s.", activity="training", trains=True),
    Benchmark("unet3d_predict", "unet3d_predict", UNet3DPredictConfig,
              "unet3d_predict", "3D U-Net blockwise prediction benchmark",
              "The whole volume is predicted block by block: each output block is read with a "
              "halo of context (zero outside the volume), passed through the network and "
              "written once into `output`. Reading runs in `num_workers` threads ahead of the "
              "compute and writing in a thread behind it. Reported as megavoxels/s and hours "
              "per teravoxel.", activity="prediction"),
)
