"""Configurations of the probes: the all-reduce bus bandwidth and the node's ceilings."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    Field,
    NonNegativeInt,
    PositiveInt,
    model_validator,
)

from benchlib import vocabulary
from benchlib.inputs import node_limits
from benchlib.inputs.benchmark import Benchmark
from benchlib.inputs.config import CommonConfig
from benchlib.inputs.node_limits import MAX_WORKERS
from benchlib.inputs.param_paths import missing_data_dir

#: The largest square matmul the probe takes: three 65,536^2 float32 matrices are 51 GB.
MAX_MATMUL_SIZE = 65_536
#: The most the read probe reads (it stops at the data's end anyway): 1 PiB.
MAX_READ_BYTES = 1 << 50
#: One figure's time budget at most: an hour.
MAX_PROBE_TIME_S = 3600.0

MatmulPrecision = vocabulary.literal(vocabulary.MatmulPrecision)


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
    """The node probe: matmul TFLOP/s per precision (one square size, and the maximum
    achievable over a sweep of shapes: MAMF, the best shape's mean over ``mamf_repeats`` calls),
    device memory bandwidth (a copy, and STREAM's triad), host<->device bandwidth, read +
    JPEG decode images/s against loader workers, decode alone from memory, and the data
    directory's read throughput (those three only with ``data_dir``); the all-reduce probe
    over ``allreduce_devices`` (0: every visible GPU when there are two or more; 1: none).

    Each figure stops after ``probe_time_s`` seconds (at least one timed call): ``iterations``
    and ``decode_batches`` are upper bounds, and the matmul grows from 1024 towards
    ``matmul_size`` only while a product of the next size fits the budget, so a GPU measures at
    the full size and a CPU finishes in minutes.
    """

    benchmark: Literal["probe_node"] = "probe_node"
    precisions: list[MatmulPrecision] = list(vocabulary.values(vocabulary.MatmulPrecision))
    matmul_size: Annotated[int, Field(gt=0, le=MAX_MATMUL_SIZE)] = 8192
    #: At least 1 MiB: under 4 bytes the copy moved nothing and said 0 GB/s, under 12 the triad
    #: counted bytes it was not given, and a few KiB time the call, not the memory.
    memory_bytes: Annotated[int, Field(ge=1 << 20)] = 1 << 30
    transfer_bytes: PositiveInt = 256 << 20
    iterations: PositiveInt = 20
    warmup: NonNegativeInt = 3
    data_dir: str = ""
    image_size: PositiveInt = 224
    decode_workers: list[Annotated[int, Field(ge=0, le=MAX_WORKERS)]] = [1, 2, 4, 8]
    decode_batch_size: PositiveInt = 64
    decode_batches: PositiveInt = 20
    read_max_bytes: Annotated[int, Field(gt=0, le=MAX_READ_BYTES)] = 2 << 30
    allreduce_devices: NonNegativeInt = 0
    probe_time_s: float = Field(5.0, gt=0, le=MAX_PROBE_TIME_S, allow_inf_nan=False)
    mamf_repeats: Annotated[int, Field(ge=1, le=100)] = 5

    @model_validator(mode="after")
    def _one_process(self) -> NodeProbeConfig:
        if self.num_devices != 1 or self.num_nodes != 1:
            raise ValueError(f"num_devices {self.num_devices}: the node probe runs in one process "
                             "on one node; allreduce_devices sets the all-reduce part")
        if not self.precisions:
            raise ValueError("precisions: name at least one of "
                             + ", ".join(vocabulary.MatmulPrecision))
        if not self.decode_workers:
            raise ValueError("decode_workers: name at least one worker count (0: the main process)")
        if self.data_dir and not Path(self.data_dir).is_dir():
            raise ValueError(missing_data_dir(self.data_dir))
        return self

    @model_validator(mode="after")
    def _fits_the_node(self) -> NodeProbeConfig:
        """Sizes this node can hold, refused before the probe runs: the device copy's two
        buffers and the triad's three in one device's memory, a transfer's pinned host buffer
        in half the host's memory, and no more all-reduce processes than the node runs."""
        bound, why = node_limits.memory_bound(self.device)
        if 2 * self.memory_bytes > bound:
            raise ValueError(f"memory_bytes {self.memory_bytes:,}: the copy holds two buffers of "
                             f"it, more than {why}; at most {bound // 2:,}")
        host = node_limits.host_memory()
        if 2 * self.transfer_bytes > host:
            raise ValueError(f"transfer_bytes {self.transfer_bytes:,}: more than half of this "
                             f"node's {node_limits.size_text(host)} of memory; at most "
                             f"{host // 2:,}")
        devices, why = node_limits.device_bound(self.device)
        if self.allreduce_devices > devices:
            raise ValueError(f"allreduce_devices {self.allreduce_devices}: more than {why} "
                             f"({devices}); 0 takes every visible GPU")
        return self

    def allreduce_count(self, visible_gpus: int) -> int:
        """Devices the all-reduce part runs on (0: it does not run)."""
        count = visible_gpus if self.allreduce_devices == 0 else self.allreduce_devices
        return count if count >= 2 else 0


_NODE_FIXED = ("num_devices", "num_nodes", "node_launcher")
#: The kind's variants: one notebook each (the registry reads them, :func:`benchlib.registry.shipped`).
VARIANTS = (
    Benchmark("allreduce", "probe_allreduce", AllReduceConfig, "allreduce",
              "All-reduce probe: bus bandwidth over message sizes",
              "The collective that data-parallel training waits for, timed as nccl-tests times "
              "it.", activity="probe"),
    Benchmark("node_probe", "probe_node", NodeProbeConfig, "node_probe",
              "Node probe: what this node can do at most",
              "Matrix-multiply TFLOP/s per precision, memory and host-link bandwidth, JPEG "
              "decode against loader workers, data directory read throughput.", activity="probe",
              ignores=_NODE_FIXED),
)
