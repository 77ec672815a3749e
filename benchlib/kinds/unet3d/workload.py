"""3D U-Net benchmarks: training on EM volume patches and blockwise prediction of whole volumes.

Prediction reads each output block with its halo of context (zero outside the volume), runs the
network, and writes the block's part of the output once. Reading runs in a thread pool ahead of
the compute and writing in a thread behind it, so the device stays busy: the main loop's
``read`` and ``write`` phases are only the time it waited for them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from functools import singledispatch

import numpy as np
import torch
from torch import nn

from benchlib.kinds.unet3d.config import UNet3DConfig, UNet3DPredictConfig, UNet3DTrainConfig
from benchlib.kinds.unet3d.data import LazyVolume
from benchlib.kinds.unet3d.data_patches import PatchSampler, patch_loader
from benchlib.kinds.unet3d.model import UNet3D
from benchlib.kinds.unet3d.model_geometry import shape_text
from benchlib.kinds.unet3d.workload_blockwise import (
    OUTPUT_DTYPES,
    BlockReader,
    BlockWriter,
    _output_path,
    block_extent,
    block_plan,
    prediction_layout,
    shared_dataset,
)
from benchlib.workloads import distributed, step
from benchlib.workloads.loop import Timer, next_batch, timed_loop
from benchlib.workloads.result import RunResult
from benchlib.workloads.runtime import autocast, peak_memory_bytes, reset_peak_memory, setup_run
from benchlib.workloads.step import syncs_extra


def build_model(config: UNet3DConfig) -> UNet3D:
    """The configured U-Net, randomly initialised (one input channel)."""
    return UNet3D(1, config.out_channels, config.base_features, config.growth,
                  config.pooling_levels, config.padding, config.norm)


def _to_unit(raw: torch.Tensor, device: torch.device) -> torch.Tensor:
    """uint8 raw copied to the device and scaled to [0, 1] there (a quarter of the bytes)."""
    return raw.to(device, non_blocking=True).float().div_(255)


# ---------------------------------------------------------------- training


def _synthetic_batches(config: UNet3DTrainConfig, device: torch.device,
                       count: int = 4) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator(device="cpu").manual_seed(distributed.current().seed(config.seed))
    shape = (config.device_batch_size, 1, *config.patch_shape)
    out = (config.device_batch_size, config.out_channels, *config.output_shape)
    pool = [(torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator).to(device),
             torch.randint(0, 2, out, generator=generator).float().to(device))
            for _ in range(count)]
    return itertools.cycle(pool)


def patches(config: UNet3DTrainConfig, device: torch.device) -> Iterable:
    """This rank's training batches (uint8 raw, float target): random patches of the volume
    (this rank's seed), or a few synthetic batches made once on the device and cycled."""
    if config.dataset == "real":
        sampler = PatchSampler(config.volume, config.raw_key, config.label_key,
                               config.patch_shape, config.output_shape, config.target,
                               config.augment, distributed.current().seed(config.seed))
        return patch_loader(sampler, config.device_batch_size, config.num_workers,
                            pin_memory=device.type == "cuda")
    return _synthetic_batches(config, device)


class UNetTrainStep(step.TrainStep):
    """One Adam step on a batch of patches: data, h2d, forward (+loss), backward, optimizer;
    counts output (loss) voxels."""

    def __init__(self, model: nn.Module, config: UNet3DTrainConfig, device: torch.device) -> None:
        super().__init__(model, config, device)
        self.voxels = math.prod(config.output_shape)

    def make_optimizer(self, parameters: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.Adam(parameters, lr=self.config.learning_rate,
                                fused=step.fused(self.device))

    def to_device(self, batch: tuple[torch.Tensor, torch.Tensor],
                  timer: Timer) -> tuple[torch.Tensor, torch.Tensor]:
        raw, target = batch
        inputs = _to_unit(raw, self.device)
        target = target.to(self.device, non_blocking=True)
        timer.lap("h2d")
        return inputs, target

    def loss_of(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return nn.functional.binary_cross_entropy_with_logits(logits.float(), target)

    def count(self, inputs: torch.Tensor) -> int:
        return inputs.shape[0] * self.voxels

    def finish(self) -> dict[str, object]:
        return {**super().finish(), "parameters": model_parameters(self.model)}


def train(config: UNet3DTrainConfig) -> RunResult:
    """Train for ``iterations`` steps; throughput counts output (loss) voxels per second."""
    result = step.timed_run(config, lambda: build_model(config), UNetTrainStep,
                            lambda device: patches(config, device), "voxels/s")
    result.extras["iterations_per_minute_wall"] = 60 * result.iterations / result.wall_time_s
    return result


def _meta_model(config: UNet3DConfig) -> UNet3D:
    """The network on the meta device: shapes and counts without allocating weights."""
    with torch.device("meta"):
        return build_model(config)


def model_parameters(model: nn.Module) -> int:
    """Trainable parameters (of the compiled model's original where compiled)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# ---------------------------------------------------------------- prediction


class PredictStep(step.Step):
    """One batch of blocks: read (wait), h2d, forward (+ sigmoid, crop, cast), d2h, write (wait)."""

    def __init__(self, model: nn.Module, config: UNet3DPredictConfig, device: torch.device,
                 crop: tuple[slice, ...], volume_shape: Sequence[int] = (),
                 writer: BlockWriter | None = None) -> None:
        super().__init__(model, config, device)
        self.crop, self.volume_shape, self.writer = crop, tuple(volume_shape), writer
        self.dtype = getattr(torch, config.output_dtype)
        self.padded_blocks = 0  #: zero blocks that filled short batches up (outputs dropped)

    def padded(self, raw: torch.Tensor) -> torch.Tensor:
        """A short last batch of blocks filled up with zero blocks to the batch size (counted in
        :attr:`padded_blocks`; their outputs are dropped): every timed forward has one shape,
        so cuDNN's benchmark and compile do not tune again while the clock runs."""
        short = self.config.device_batch_size - raw.shape[0]
        if short <= 0:
            return raw
        self.padded_blocks += short
        return torch.cat([raw, raw.new_zeros((short, *raw.shape[1:]))])

    @torch.no_grad()
    def predict(self, raw: torch.Tensor) -> torch.Tensor:
        """Probabilities of the output blocks on the device, in the output dtype."""
        with autocast(self.config.precision, self.device):
            logits = self.model(_to_unit(raw, self.device))
        probabilities = torch.sigmoid(logits[(slice(None), slice(None), *self.crop)].float())
        if self.dtype == torch.uint8:
            return probabilities.mul_(255).round_().to(torch.uint8)
        return probabilities.to(self.dtype)

    def __call__(self, iterator: Iterator, timer: Timer) -> int | None:
        item = next_batch(iterator, timer, phase="read")
        if item is None:
            return None
        starts, raw = item
        raw = raw.to(self.device, non_blocking=True)
        timer.lap("h2d")
        blocks = self.predict(self.padded(raw))[:len(raw)]
        timer.lap("forward")
        ready = None
        if self.device.type == "cuda":
            host = torch.empty(blocks.shape, dtype=blocks.dtype, pin_memory=True)
            host.copy_(blocks, non_blocking=True)
            ready = torch.cuda.Event()
            ready.record()
        else:
            host = blocks
        timer.lap("d2h")
        if self.writer is not None:
            self.writer.put(starts, host, ready)
        timer.lap("write", host=True)
        timer.stop()
        return sum(math.prod(block_extent(start, self.config.block_shape, self.volume_shape))
                   for start in starts)


def predict(config: UNet3DPredictConfig) -> RunResult:
    """Predict the whole volume (or ``iterations`` batches of blocks) into the output dataset.

    Float outputs are created filled with NaN, so a voxel that was never written shows.
    Throughput counts written output voxels per second, including the final drain of writes.
    """
    torch.manual_seed(config.seed)
    device, model = setup_run(config, build_model(config))
    layout = prediction_layout(config)
    volume = LazyVolume(config.volume, config.raw_key)
    shape = volume.shape
    plan = distributed.current().shard(block_plan(shape, layout["block_shape"]))
    size = config.device_batch_size
    batches = [plan[i:i + size] for i in range(0, len(plan), size)]
    limit = None if config.iterations == "epoch" else config.iterations
    timed = batches if limit is None else batches[:limit]
    dtype = OUTPUT_DTYPES[config.output_dtype]
    fill = 0 if dtype == np.uint8 else np.nan
    reader = BlockReader(volume, timed, layout["input_shape"], layout["halo"], config.num_workers,
                         pin=device.type == "cuda")
    step = PredictStep(model, config, device, layout["crop"], shape)
    try:
        for starts in batches[:config.warmup]:  # warm-up: compute only, nothing written
            step.predict(reader.read(starts).to(device))
        with _output_path(config) as path, shared_dataset(
                path, config.output_key, (config.out_channels, *shape),
                (config.out_channels, *layout["block_shape"]), dtype, fill_value=fill) as array:
            writer = BlockWriter(array)
            step.writer = writer
            reset_peak_memory(device)
            try:
                loop = timed_loop(step, iter(reader), device, 0, None, config.breakdown,
                                  finish=writer.close,
                                  telemetry_interval_s=config.telemetry_interval_s,
                                  watch_syncs=config.sync_debug)
            finally:
                if writer.thread.is_alive():
                    writer.close()
    finally:
        reader.close()
        volume.close()
    return RunResult(
        device=device, iterations=len(loop.timer), warmup=min(config.warmup, len(batches)),
        samples=loop.samples, wall_time_s=loop.wall_time_s, unit="voxels/s",
        per_iteration=loop.timer.samples(), started_at=loop.started_at,
        ended_at=loop.ended_at, peak_memory_bytes=peak_memory_bytes(device),
        telemetry=loop.telemetry, contention=loop.contention,
        extras={"voxels_written": writer.voxels, "blocks": sum(len(b) for b in timed),
                "volume_shape": "x".join(map(str, shape)),
                "input_block": "x".join(map(str, layout["input_shape"])),
                "compute_efficiency": layout["compute_efficiency"],
                "read_busy_s": reader.busy_s, "write_busy_s": writer.busy_s,
                "parameters": model_parameters(model), "padded_blocks": step.padded_blocks,
                **syncs_extra(loop.syncs)},
    )


def plain_forward(config: UNet3DPredictConfig, blocks: int) -> RunResult:
    """The compute ceiling of :func:`predict`: the same model, input blocks and precision, run
    over ``blocks`` blocks (in batches) already on the device, with no reading or writing.
    Throughput counts the same written-voxel share as prediction (block_shape per block)."""
    torch.manual_seed(config.seed)
    device, model = setup_run(config, build_model(config))
    layout = prediction_layout(config)
    step = PredictStep(model, config, device, layout["crop"])
    raw = torch.randint(0, 256, (config.batch_size, 1, *layout["input_shape"]), dtype=torch.uint8,
                        device=device)
    voxels = config.batch_size * math.prod(layout["block_shape"])
    count = -(-blocks // config.batch_size)

    def forward_only(iterator: Iterator, timer: Timer) -> int | None:
        if next_batch(iterator, timer, phase="read") is None:
            return None
        step.predict(raw)
        timer.lap("forward")
        timer.stop()
        return voxels

    loop = timed_loop(forward_only, iter(range(config.warmup + count)), device, config.warmup,
                      count, config.breakdown)
    return RunResult(device=device, iterations=len(loop.timer), warmup=loop.warmup,
                     samples=loop.samples, wall_time_s=loop.wall_time_s, unit="voxels/s",
                     per_iteration=loop.timer.samples(), started_at=loop.started_at,
                     ended_at=loop.ended_at, peak_memory_bytes=None,
                     extras={"blocks": count * config.batch_size})


def network_summary(config: UNet3DConfig) -> dict[str, object]:
    """What the configured network looks like: levels, features, shapes, halo, parameters."""

    geometry = config.geometry
    summary: dict[str, object] = {
        "levels": config.depth,
        "features": " -> ".join(str(config.base_features * config.growth**level)
                                for level in range(config.depth + 1)),
        "pooling": " ".join(shape_text(p) for p in config.pooling_levels),
        "downsampling": shape_text(geometry.downsampling),
        "convolutions": f"3x3x3, {config.padding}, norm {config.norm}",
        "parameters": model_parameters(_meta_model(config)),
        "target": f"{config.target} ({config.out_channels} channels)",
    }
    return {**summary, **_shapes(config)}


@singledispatch
def _shapes(config: UNet3DConfig) -> dict[str, object]:
    """The shapes a benchmark's network summary adds (none for the shared base)."""
    return {}


@_shapes.register(UNet3DTrainConfig)
def _train_shapes(config: UNet3DTrainConfig) -> dict[str, object]:
    return {"patch_shape": shape_text(config.patch_shape),
            "output_shape": shape_text(config.output_shape)}


@_shapes.register(UNet3DPredictConfig)
def _predict_shapes(config: UNet3DPredictConfig) -> dict[str, object]:
    layout = prediction_layout(config)
    return {"block_shape": shape_text(layout["block_shape"]), "halo": shape_text(layout["halo"]),
            "input_block": shape_text(layout["input_shape"]),
            "network_output": shape_text(layout["output_shape"]),
            "compute_efficiency": round(layout["compute_efficiency"], 4)}
