"""The 3D U-Net kinds: training on patches of an EM volume (``unet3d_train``) and blockwise
prediction of a whole volume (``unet3d_predict``), counted in output voxels."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

from benchlib import formatting
from benchlib.kinds.base import Kind, register_kind

if TYPE_CHECKING:
    from benchlib.kinds.unet3d.config import UNet3DConfig, UNet3DPredictConfig, UNet3DTrainConfig
    from benchlib.workloads.result import RunResult


def flops_per_voxel(config: UNet3DConfig, input_shape: tuple[int, ...], voxels: int,
                    train: bool) -> float:
    """FLOPs per output voxel of one pass over an input of ``input_shape`` giving ``voxels``
    output voxels (a training step when ``train``)."""
    from benchlib.kinds.unet3d.workload import build_model
    from benchlib.records.flops import COUNT_BATCH, count_flops

    flops = count_flops(lambda: build_model(config), (COUNT_BATCH, 1, *input_shape), train)
    return flops / COUNT_BATCH / voxels


class UNet3D(Kind):
    """What both U-Net kinds share: the network's columns, voxels read from a volume."""

    samples = "voxels"
    data_field = "volume"

    def columns(self, config: UNet3DConfig, result: RunResult) -> dict[str, object]:
        from benchlib.kinds.unet3d.model_geometry import shape_text

        return {
            "benchmark": config.benchmark, "model": "unet3d", "compile": config.compile,
            "channels_last": False, "unet_depth": config.depth,
            "unet_base_features": config.base_features, "unet_growth": config.growth,
            "unet_padding": config.padding, "unet_norm": config.norm,
            "unet_pooling": " ".join(shape_text(p) for p in config.pooling_levels),
            "target": config.target, "volume": config.volume, "raw_key": config.raw_key,
            **self.shape_columns(config),
            "downsampling": shape_text(config.geometry.downsampling),
        }

    def shape_columns(self, config: UNet3DConfig) -> dict[str, object]:
        """The shapes this U-Net kind reads and writes."""
        return {}

    def headline(self, config: UNet3DConfig, result: RunResult) -> str:
        """In the units labs use: megavoxels/s written by a prediction, iterations/minute and
        megavoxels/s of output of a training run (``number``: never ``0.000``)."""
        mega = formatting.number(result.throughput / 1e6)
        if "voxels_written" in result.extras:
            return (f"{mega} megavoxels/s: {result.extras['voxels_written']:,} voxels in "
                    f"{result.extras['blocks']} blocks ({result.wall_time_s:.1f} s, reads and "
                    "writes included)")
        per_minute = 60 / result.stats()["iteration"].median
        return (f"{per_minute:.1f} iterations/minute (median iteration), {mega} megavoxels/s "
                f"of output over {result.iterations} timed iterations ({result.wall_time_s:.1f} s)")

    def title(self, config: UNet3DConfig) -> str:
        return f"3D U-Net {config.benchmark}, batch {config.batch_size}, {config.precision}"

    def shown_config(self, entry: Any, fixed: dict[str, object]) -> Any:
        return entry.config.model_construct(**fixed)  # required fields (volume) have no default


@register_kind("unet3d_train")
class UNet3DTrain(UNet3D):
    """Adam steps on random patches; a sample is an output voxel of a patch."""

    run = "benchlib.kinds.unet3d.workload:train"
    lab_units = ("iterations_per_minute", "days_to_100k", "megavoxels_per_s")
    lab_panel = ("days_to_100k", "training: days to 100k iterations")
    comments: ClassVar[dict[str, str]] = {
        "num_workers": "loader processes sampling patches (dataset: real)",
        "dataset": "synthetic (device tensors) | real (the volume)",
        "iterations": "Adam steps timed after warm-up (the reference ran 1001)"}

    def shape_columns(self, config: UNet3DTrainConfig) -> dict[str, object]:
        from benchlib.kinds.unet3d.model_geometry import shape_text

        columns: dict[str, object] = {
            "dataset": config.dataset, "patch_shape": shape_text(config.patch_shape),
            "output_shape": shape_text(config.output_shape), "augment": config.augment,
            "label_key": config.label_key}
        if config.dataset == "synthetic":
            columns.update(volume="", synthetic_kind="device")
        return columns

    def flops_per_sample(self, config: UNet3DTrainConfig) -> float:
        """FLOPs of one training step on a patch, per valid output voxel."""
        return flops_per_voxel(config, tuple(config.patch_shape), math.prod(config.output_shape),
                               train=True)


@register_kind("unet3d_predict")
class UNet3DPredict(UNet3D):
    """Blockwise prediction of a whole volume; a sample is a voxel written."""

    run = "benchlib.kinds.unet3d.workload:predict"
    summed_extras = ("voxels_written", "blocks", "read_busy_s", "write_busy_s")
    lab_units = ("megavoxels_per_s", "hours_per_teravoxel")
    lab_panel = ("hours_per_teravoxel", "prediction: hours per teravoxel")
    comments: ClassVar[dict[str, str]] = {
        "num_workers": "threads reading blocks ahead of the compute",
        "iterations": 'batches of blocks, or "epoch" for the whole volume',
        "warmup": "batches run before the timed pass, not written"}

    def shape_columns(self, config: UNet3DPredictConfig) -> dict[str, object]:
        from benchlib.kinds.unet3d.model_geometry import shape_text
        from benchlib.kinds.unet3d.workload_blockwise import prediction_layout

        layout = prediction_layout(config)
        return {"dataset": "real", "block_shape": shape_text(config.block_shape),
                "halo": shape_text(config.resolved_halo),
                "input_shape": shape_text(layout["input_shape"]),
                "output_dtype": config.output_dtype, "output": config.output}

    def flops_per_sample(self, config: UNet3DPredictConfig) -> float:
        """FLOPs of one forward pass of a block's input, per voxel of the block."""
        from benchlib.kinds.unet3d.workload_blockwise import prediction_layout

        layout = prediction_layout(config)
        return flops_per_voxel(config, tuple(layout["input_shape"]),
                               math.prod(layout["block_shape"]), train=False)

