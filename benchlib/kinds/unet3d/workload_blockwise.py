"""Blockwise I/O over a volume: the plan of output blocks, a reader that loads blocks (with their
halo) ahead of the compute, a writer that stores predictions behind it, and the layout of the
output file."""

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

from benchlib.kinds.unet3d.config import UNet3DPredictConfig
from benchlib.kinds.unet3d.data import LazyVolume, create_dataset, open_dataset, volume_format
from benchlib.kinds.unet3d.model_geometry import Shape
from benchlib.workloads import distributed
from benchlib.workloads.scratch import scratch_root

OUTPUT_DTYPES = {"uint8": np.uint8, "float16": np.float16, "float32": np.float32}


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
        folder = tempfile.mkdtemp(prefix="benchlib-predict-", dir=scratch_root())
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
