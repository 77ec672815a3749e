"""3D U-Net benchmarks: training on EM volume patches and blockwise prediction of whole volumes.

Prediction reads each output block with its halo of context (zero outside the volume), runs the
network, and writes the block's part of the output once. Reading runs in a thread pool ahead of
the compute and writing in a thread behind it, so the device stays busy: the main loop's
``read`` and ``write`` phases are only the time it waited for them.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import math
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from benchlib.data.patches import PatchSampler, patch_loader
from benchlib.data.volumes import LazyVolume, create_dataset, open_dataset, volume_format
from benchlib.inputs.unet3d_config import UNet3DConfig, UNet3DPredictConfig, UNet3DTrainConfig
from benchlib.measure.timing import PhaseTimer
from benchlib.models.geometry import Shape, shape_text
from benchlib.models.unet3d import UNet3D
from benchlib.run import distributed
from benchlib.workloads.loop import (
    NoTimer,
    TimeBudget,
    backward_and_step,
    next_batch,
    timed_loop,
)
from benchlib.workloads.result import RunResult
from benchlib.workloads.runtime import (
    autocast,
    peak_memory_bytes,
    reset_peak_memory,
    setup_run,
)

OUTPUT_DTYPES = {"uint8": np.uint8, "float16": np.float16, "float32": np.float32}


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


class UNetTrainStep:
    """One Adam step on a batch of patches: data, h2d, forward (+loss), backward, optimizer."""

    def __init__(self, model: nn.Module, config: UNet3DTrainConfig, device: torch.device) -> None:
        self.model, self.config, self.device = model.train(), config, device
        self.optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
        self.scaler = torch.amp.GradScaler(device.type, enabled=config.precision == "amp_fp16")
        self.voxels = math.prod(config.output_shape)
        self.loss: torch.Tensor | None = None

    def __call__(self, iterator: Iterator, timer: PhaseTimer | NoTimer) -> int | None:
        batch = next_batch(iterator, timer)
        if batch is None:
            return None
        raw, target = batch
        inputs = _to_unit(raw, self.device)
        target = target.to(self.device, non_blocking=True)
        timer.lap("h2d")
        with autocast(self.config.precision, self.device):
            logits = self.model(inputs)
        loss = nn.functional.binary_cross_entropy_with_logits(logits.float(), target)
        timer.lap("forward")
        backward_and_step(loss, self.scaler, self.optimizer, timer)
        timer.stop()
        self.loss = loss.detach()
        return inputs.shape[0] * self.voxels

    def finish(self) -> dict[str, object]:
        return {"final_loss": float(self.loss) if self.loss is not None else None}


def train(config: UNet3DTrainConfig) -> RunResult:
    """Train for ``iterations`` steps; throughput counts output (loss) voxels per second."""
    torch.manual_seed(config.seed)
    device, model = setup_run(config, build_model(config), ddp=True)
    if config.dataset == "real":
        sampler = PatchSampler(config.volume, config.raw_key, config.label_key, config.patch_shape,
                               config.output_shape, config.target, config.augment,
                               distributed.current().seed(config.seed))
        data: Any = patch_loader(sampler, config.device_batch_size, config.num_workers,
                                 pin_memory=device.type == "cuda")
    else:
        data = _synthetic_batches(config, device)
    step = UNetTrainStep(model, config, device)
    reset_peak_memory(device)
    limit = config.iterations if isinstance(config.iterations, int) else None
    loop = timed_loop(step, iter(data), device, config.warmup, limit, config.breakdown,
                      telemetry_interval_s=config.telemetry_interval_s,
                      budget=TimeBudget.of(config))
    return RunResult(
        device=device, iterations=len(loop.timer), warmup=loop.warmup, samples=loop.samples,
        wall_time_s=loop.wall_time_s, unit="voxels/s", per_iteration=loop.timer.samples(),
        peak_memory_bytes=peak_memory_bytes(device), telemetry=loop.telemetry, contention=loop.contention,
        extras={**step.finish(), "parameters": model_parameters(model), "loop_stop": loop.stop,
                "iterations_per_minute_wall": 60 * len(loop.timer) / loop.wall_time_s},
    )


def _meta_model(config: UNet3DConfig) -> UNet3D:
    """The network on the meta device: shapes and counts without allocating weights."""
    with torch.device("meta"):
        return build_model(config)


def model_parameters(model: nn.Module) -> int:
    """Trainable parameters (of the compiled model's original where compiled)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# ---------------------------------------------------------------- prediction


def block_plan(volume_shape: Sequence[int], block_shape: Sequence[int]) -> list[Shape]:
    """Start of every output block, z-major; together the blocks tile the volume exactly once
    (the last block along an axis may reach past the volume; only its inside is written)."""
    ranges = [range(0, size, step) for size, step in zip(volume_shape, block_shape, strict=True)]
    return [tuple(start) for start in itertools.product(*ranges)]  # type: ignore[misc]


def block_extent(start: Sequence[int], block: Sequence[int],
                 volume_shape: Sequence[int]) -> list[int]:
    """The part of a block at ``start`` that lies inside the volume, per axis."""
    return [min(b, n - s) for b, n, s in zip(block, volume_shape, start, strict=True)]


def write_block(array: Any, start: Sequence[int], block: np.ndarray) -> int:
    """Write ``block`` (channels, z, y, x) at ``start``, cropped to the array; voxels written."""
    extent = block_extent(start, block.shape[1:], array.shape[1:])
    region = (slice(None), *(slice(s, s + e) for s, e in zip(start, extent, strict=True)))
    array[region] = block[(slice(None), *(slice(0, e) for e in extent))]
    return math.prod(extent)


class BlockReader:
    """Reads batches of input blocks (block + halo, zero outside the volume) in a thread pool,
    ``prefetch`` batches ahead of the consumer, in plan order."""

    def __init__(self, volume: LazyVolume, batches: list[list[Shape]], input_shape: Shape,
                 halo: Shape, workers: int, pin: bool) -> None:
        self.volume, self.batches, self.input_shape, self.halo = volume, batches, input_shape, halo
        self.pin = pin
        self.pool = ThreadPoolExecutor(max(1, workers), thread_name_prefix="benchlib-read")
        self.prefetch = 2 * max(1, workers)
        self.busy_s = 0.0
        self._lock = threading.Lock()

    def read(self, starts: list[Shape]) -> torch.Tensor:
        """The input blocks of one batch as a uint8 tensor (batch, 1, *input_shape)."""
        t0 = time.perf_counter()
        array = np.stack([self.volume.read([s - h for s, h in zip(start, self.halo, strict=True)],
                                           self.input_shape) for start in starts])[:, None]
        tensor = torch.from_numpy(array)
        if self.pin:
            tensor = tensor.pin_memory()
        with self._lock:
            self.busy_s += time.perf_counter() - t0
        return tensor

    def __iter__(self) -> Iterator[tuple[list[Shape], torch.Tensor]]:
        pending: collections.deque[tuple[list[Shape], Future]] = collections.deque()
        batches = iter(self.batches)
        for starts in itertools.islice(batches, self.prefetch):
            pending.append((starts, self.pool.submit(self.read, starts)))
        while pending:
            starts, future = pending.popleft()
            for more in itertools.islice(batches, 1):
                pending.append((more, self.pool.submit(self.read, more)))
            yield starts, future.result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class BlockWriter:
    """Writes predicted blocks in a background thread; ``put`` blocks when ``depth`` batches
    are waiting (back-pressure), errors surface in the caller."""

    def __init__(self, array: Any, depth: int = 4) -> None:
        self.array = array
        self.queue: queue.Queue = queue.Queue(maxsize=depth)
        self.busy_s = 0.0
        self.voxels = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="benchlib-write", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (item := self.queue.get()) is not None:
            if self.error is not None:
                continue
            starts, blocks, ready = item
            try:
                if ready is not None:
                    ready.synchronize()
                t0 = time.perf_counter()
                host = blocks.numpy()
                for start, block in zip(starts, host, strict=True):
                    self.voxels += write_block(self.array, start, block)
                self.busy_s += time.perf_counter() - t0
            except BaseException as error:  # reported by put() / close()
                self.error = error

    def put(self, starts: list[Shape], blocks: torch.Tensor, ready: Any = None) -> None:
        """Queue a batch of (channels, z, y, x) host blocks; ``ready`` is a CUDA event to wait on."""
        if self.error is not None:
            raise RuntimeError(f"writing predictions failed: {self.error}") from self.error
        self.queue.put((starts, blocks, ready))

    def close(self) -> None:
        """Wait until everything queued is written."""
        self.queue.put(None)
        self.thread.join()
        if self.error is not None:
            raise RuntimeError(f"writing predictions failed: {self.error}") from self.error


class PredictStep:
    """One batch of blocks: read (wait), h2d, forward (+ sigmoid, crop, cast), d2h, write (wait)."""

    def __init__(self, model: nn.Module, config: UNet3DPredictConfig, device: torch.device,
                 crop: tuple[slice, ...], volume_shape: Sequence[int] = (),
                 writer: BlockWriter | None = None) -> None:
        self.model, self.config, self.device = model.eval(), config, device
        self.crop, self.volume_shape, self.writer = crop, tuple(volume_shape), writer
        self.dtype = getattr(torch, config.output_dtype)

    @torch.no_grad()
    def predict(self, raw: torch.Tensor) -> torch.Tensor:
        """Probabilities of the output blocks on the device, in the output dtype."""
        with autocast(self.config.precision, self.device):
            logits = self.model(_to_unit(raw, self.device))
        probabilities = torch.sigmoid(logits[(slice(None), slice(None), *self.crop)].float())
        if self.dtype == torch.uint8:
            return probabilities.mul_(255).round_().to(torch.uint8)
        return probabilities.to(self.dtype)

    def __call__(self, iterator: Iterator, timer: PhaseTimer | NoTimer) -> int | None:
        item = next_batch(iterator, timer, phase="read")
        if item is None:
            return None
        starts, raw = item
        raw = raw.to(self.device, non_blocking=True)
        timer.lap("h2d")
        blocks = self.predict(raw)
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


@contextlib.contextmanager
def _output_path(config: UNet3DPredictConfig) -> Iterator[Path]:
    if config.output:
        yield Path(config.output)
        return
    rank = distributed.current()
    several = rank.distributed  # several writers: zarr, whose chunks are separate files
    suffix = ".zarr" if several or volume_format(config.volume) == "zarr" else ".h5"
    folder = None
    if rank.rank == 0:
        folder = tempfile.mkdtemp(prefix="benchlib-predict-", dir=Path(config.volume).parent)
    folder = Path(str(distributed.broadcast_object(folder)))
    try:
        yield folder / f"predictions{suffix}"
    finally:
        distributed.barrier()
        if rank.rank == 0:
            shutil.rmtree(folder, ignore_errors=True)


def prediction_layout(config: UNet3DPredictConfig) -> dict[str, Any]:
    """Input and output block shapes, the crop that takes the block out of the network's output,
    and the share of computed output voxels that are written."""
    geometry = config.geometry
    halo = config.resolved_halo
    block = tuple(config.block_shape)
    input_shape, output_shape = geometry.block_input(block, halo)
    offset = halo if config.padding == "same" else (0, 0, 0)
    crop = tuple(slice(o, o + b) for o, b in zip(offset, block, strict=True))
    return {"halo": halo, "block_shape": block, "input_shape": input_shape,
            "output_shape": output_shape, "crop": crop,
            "compute_efficiency": math.prod(block) / math.prod(output_shape)}


@contextlib.contextmanager
def shared_dataset(path: Path, key: str, shape: Sequence[int], chunks: Sequence[int], dtype: Any,
                   fill_value: float | int) -> Iterator[Any]:
    """The output dataset, created by rank 0 and then opened by the others (zarr: each block is
    its own chunk, so ranks write disjoint files)."""
    rank = distributed.current()
    if not rank.distributed:
        with create_dataset(path, key, shape, chunks, dtype, fill_value=fill_value) as array:
            yield array
        return
    if rank.rank == 0:
        with create_dataset(path, key, shape, chunks, dtype, fill_value=fill_value):
            pass
    distributed.barrier()
    yield open_dataset(path, key)
    distributed.barrier()  # every rank's writes are done before anyone reads or removes it


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
                                  telemetry_interval_s=config.telemetry_interval_s)
            finally:
                if writer.thread.is_alive():
                    writer.close()
    finally:
        reader.close()
        volume.close()
    return RunResult(
        device=device, iterations=len(loop.timer), warmup=min(config.warmup, len(batches)),
        samples=loop.samples, wall_time_s=loop.wall_time_s, unit="voxels/s",
        per_iteration=loop.timer.samples(), peak_memory_bytes=peak_memory_bytes(device),
        telemetry=loop.telemetry, contention=loop.contention,
        extras={"voxels_written": writer.voxels, "blocks": sum(len(b) for b in timed),
                "volume_shape": "x".join(map(str, shape)),
                "input_block": "x".join(map(str, layout["input_shape"])),
                "compute_efficiency": layout["compute_efficiency"],
                "read_busy_s": reader.busy_s, "write_busy_s": writer.busy_s,
                "parameters": model_parameters(model)},
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

    def forward_only(iterator: Iterator, timer: PhaseTimer | NoTimer) -> int | None:
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
                     per_iteration=loop.timer.samples(), peak_memory_bytes=None,
                     extras={"blocks": count * config.batch_size})


def run(config: UNet3DConfig) -> RunResult:
    """Run the configured U-Net benchmark."""
    if isinstance(config, UNet3DTrainConfig):
        return train(config)
    if isinstance(config, UNet3DPredictConfig):
        return predict(config)
    raise TypeError(f"no U-Net benchmark for {type(config).__name__}")


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
    if isinstance(config, UNet3DTrainConfig):
        summary.update(patch_shape=shape_text(config.patch_shape),
                       output_shape=shape_text(config.output_shape))
    elif isinstance(config, UNet3DPredictConfig):
        layout = prediction_layout(config)
        summary.update(block_shape=shape_text(layout["block_shape"]),
                       halo=shape_text(layout["halo"]),
                       input_block=shape_text(layout["input_shape"]),
                       network_output=shape_text(layout["output_shape"]),
                       compute_efficiency=round(layout["compute_efficiency"], 4))
    return summary


def headline(result: RunResult) -> str:
    """One line on what a run achieved, in the units labs use."""
    if "voxels_written" in result.extras:
        return (f"{result.throughput / 1e6:.3f} megavoxels/s: {result.extras['voxels_written']:,} "
                f"voxels in {result.extras['blocks']} blocks ({result.wall_time_s:.1f} s, reads and "
                "writes included)")
    per_minute = 60 / result.stats()["iteration"].median
    return (f"{per_minute:.1f} iterations/minute (median iteration), "
            f"{result.throughput / 1e6:.3f} megavoxels/s of output over {result.iterations} "
            f"timed iterations ({result.wall_time_s:.1f} s)")
