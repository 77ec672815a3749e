"""Model FLOPs per sample, counted by torch.utils.flop_counter on the meta device.

FlopCounterMode counts the matrix multiplies and convolutions (2 flops per multiply-add) of one
forward pass, and of the backward pass when asked; on the meta device nothing is computed or
allocated, so counting ResNet-50 costs a fraction of a second on any machine. These are the
FLOPs of model FLOPs utilization (MFU): the work the model needs, whatever the kernels do.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from benchlib.inputs.config import ClassificationConfig
from benchlib.inputs.unet3d_config import UNet3DPredictConfig, UNet3DTrainConfig

log = logging.getLogger(__name__)
COUNT_BATCH = 2  #: samples in the counted batch (batch norm in training mode needs more than 1)


def _total(output: object) -> torch.Tensor:
    """A scalar from a model output (tensor, or tuple of tensors such as aux logits)."""
    if isinstance(output, torch.Tensor):
        return output.float().sum()
    parts = [o.float().sum() for o in output if isinstance(o, torch.Tensor)]  # type: ignore[union-attr]
    return sum(parts[1:], parts[0])


def count_flops(build: Callable[[], nn.Module], input_shape: tuple[int, ...], train: bool) -> int:
    """FLOPs of one pass of ``build()``'s model over a batch of ``input_shape`` (forward, and
    backward when ``train``), on the meta device."""
    with torch.device("meta"):
        model = build().train(train)
        inputs = torch.empty(input_shape)
    with FlopCounterMode(display=False) as counter:
        if train:
            _total(model(inputs)).backward()
        else:
            with torch.no_grad():
                model(inputs)
    return int(counter.get_total_flops())


def classification_flops_per_sample(config: ClassificationConfig) -> float:
    """FLOPs per counted sample (one image): forward for inference, forward + backward for
    training, ``noise_samples`` forward passes for smooth inference."""
    from benchlib.workloads.classification import build_model

    size = config.resolved_image_size
    train = config.benchmark == "train"
    flops = count_flops(lambda: build_model(config), (COUNT_BATCH, 3, size, size), train)
    per_image = flops / COUNT_BATCH
    return per_image * config.noise_samples if config.benchmark == "smooth_inference" else per_image


def unet3d_flops_per_voxel(config: UNet3DTrainConfig | UNet3DPredictConfig) -> float:
    """FLOPs per output voxel (the unit the U-Net benchmarks count): one training step on a
    patch over its valid output, or one forward pass of a block's input over the block."""
    from benchlib.workloads.blockwise import prediction_layout
    from benchlib.workloads.unet3d import build_model

    if isinstance(config, UNet3DTrainConfig):
        shape, voxels, train = tuple(config.patch_shape), math.prod(config.output_shape), True
    else:
        layout = prediction_layout(config)
        shape, voxels, train = layout["input_shape"], math.prod(layout["block_shape"]), False
    flops = count_flops(lambda: build_model(config), (COUNT_BATCH, 1, *shape), train)
    return flops / COUNT_BATCH / voxels


def flops_columns(config: object, throughput: float | None) -> dict[str, float | None]:
    """``flops_per_sample`` (per image, or per output voxel for the U-Net) and
    ``achieved_tflops`` (that times the whole run's samples per second) for a record; empty
    values, with a warning, when the model cannot be counted on the meta device."""
    try:
        if isinstance(config, ClassificationConfig):
            per_sample = classification_flops_per_sample(config)
        elif isinstance(config, (UNet3DTrainConfig, UNet3DPredictConfig)):
            per_sample = unet3d_flops_per_voxel(config)
        else:
            return {}
    except Exception as error:  # a model with an op the meta device lacks: no MFU, no failure
        log.warning("FLOPs not counted: %s: %s", type(error).__name__, error)
        return {"flops_per_sample": None, "achieved_tflops": None}
    achieved = per_sample * throughput / 1e12 if throughput else None
    return {"flops_per_sample": per_sample, "achieved_tflops": achieved}
