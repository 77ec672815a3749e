"""The node's ceilings: what its devices, links, CPUs and file system can do at most.

- matrix multiply TFLOP/s per precision (``2 n^3`` flops per ``n x n`` product), and the
  maximum achievable over a sweep of shapes (MAMF, :mod:`benchlib.kinds.probes.workload_achievable`);
- device memory bandwidth: a device-to-device copy, counted as bytes read + bytes written
  (STREAM's copy convention), and STREAM's triad (best call);
- host-to-device and device-to-host bandwidth from pinned and from pageable host memory;
- read from the data folder + JPEG decode + training transform images/s for each number of
  loader workers (the same DataLoader the benchmarks use), and decode + transform alone (the
  folder read into memory first) at the best of those worker counts;
- read throughput of the dataset directory, each file dropped from the page cache first where
  the kernel allows (``posix_fadvise(DONTNEED)``), so the disk or network file system is read.

Every device figure is the mean over back-to-back repetitions after ``warmup``, timed on the
device's own clock (CUDA events, :func:`~benchlib.measure.timing.device_seconds`: no launch gap
or host synchronisation inside the span): ``iterations`` of them, or fewer when
``probe_time_s`` runs out first (at least one).

The probe is measured as a benchmark run is: what else used the node meanwhile
(:mod:`benchlib.measure.contention`) and NVML telemetry (throttled clocks) over all of its
figures, so that a ceiling taken beside other work is flagged like any other number.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

from benchlib.kinds.probes import workload_achievable as achievable
from benchlib.kinds.probes.config import NodeProbeConfig
from benchlib.measure.contention import Contention, ContentionSampler
from benchlib.measure.telemetry import Telemetry, TelemetrySampler
from benchlib.measure.timing import device_seconds
from benchlib.vocabulary import MatmulPrecision
from benchlib.workloads.loop import progress
from benchlib.workloads.runtime import resolve_device, tf32_for_matmul

DTYPES = {MatmulPrecision.FP32: torch.float32, MatmulPrecision.TF32: torch.float32,
          MatmulPrecision.FP16: torch.float16, MatmulPrecision.BF16: torch.bfloat16}
READ_CHUNK = 4 << 20


@dataclass
class NodeProbeResult:
    """The probes' figures as one long table (``probe``, ``setting``, ``value``, ``unit``,
    ``note``), the decode curve (images/s per loader workers), and what else used the node
    (``contention``) and NVML saw (``telemetry``) while they were measured."""

    device: torch.device
    table: pd.DataFrame
    decode: pd.DataFrame
    env: dict[str, object] = field(default_factory=dict)
    num_devices: int = 1
    num_nodes: int = 1
    contention: Contention | None = None
    telemetry: Telemetry | None = None

    def watched_columns(self) -> dict[str, object]:
        """The record's contention and telemetry columns (``contended``,
        ``contention_cpu_share``, ``throttled_share``, ...), as a timed loop's record has them;
        {} for what was not measured."""
        columns = self.contention.columns() if self.contention is not None else {}
        if self.telemetry is not None:
            columns.update(self.telemetry.summary(None))
        return columns

    def value(self, probe: str, setting: str) -> float | None:
        """One figure, or None when that probe did not run."""
        rows = self.table[(self.table["probe"] == probe) & (self.table["setting"] == setting)]
        return float(rows["value"].iloc[0]) if len(rows) and pd.notna(rows["value"].iloc[0]) else None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def seconds_per_call(fn: Callable[[], object], device: torch.device, iterations: int,
                     warmup: int, budget_s: float = float("inf")) -> float:
    """Mean seconds of ``fn`` over up to ``iterations`` back-to-back calls after up to
    ``warmup`` calls, on the device's clock (:func:`benchlib.measure.timing.device_seconds`:
    CUDA events, no launch gap timed): one call first, then as many more as fit half of
    ``budget_s`` (at least one timed call)."""
    start = time.perf_counter()
    for _ in range(warmup):
        fn()
        _sync(device)
        if time.perf_counter() - start > budget_s / 2:
            break
    first = device_seconds(fn, device, 1)
    more = iterations - 1
    if budget_s != float("inf") and first > 0:
        more = min(more, int(budget_s / 2 / first))
    if more < 1:
        return first
    return (first + device_seconds(fn, device, more) * more) / (more + 1)


def matmul_size_within(device: torch.device, precision: str, largest: int,
                       budget_s: float) -> int:
    """The largest ``n`` (1024 doubling, at most ``largest``) whose product is expected to fit
    about a fifth of ``budget_s`` per call (time grows as n^3); ``largest`` when it fits."""
    size = min(1024, largest)
    while size < largest:
        seconds = seconds_per_call(_product(device, precision, size), device, 1, 1)
        if seconds * 8 > budget_s / 5:
            return size
        size = min(size * 2, largest)
    return size


def _product(device: torch.device, precision: str, size: int) -> Callable[[], object]:
    dtype = DTYPES[precision]
    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    out = torch.empty(size, size, device=device, dtype=dtype)
    return lambda: torch.mm(a, b, out=out)


def matmul_tflops(device: torch.device, precision: str, size: int, iterations: int,
                  warmup: int, budget_s: float = float("inf")) -> float:
    """TFLOP/s of ``size x size`` matrix products in ``precision`` (tf32: fp32 inputs with
    TF32 tensor cores allowed; fp32: TF32 off)."""
    with tf32_for_matmul(precision == MatmulPrecision.TF32):
        seconds = seconds_per_call(_product(device, precision, size), device, iterations, warmup,
                                   budget_s)
    return 2 * size**3 / seconds / 1e12


def memory_bandwidth_gbps(device: torch.device, nbytes: int, iterations: int, warmup: int,
                          budget_s: float = float("inf")) -> float:
    """GB/s (1e9 bytes) of a ``nbytes`` copy within the device: read + write counted."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    seconds = seconds_per_call(lambda: dst.copy_(src), device, iterations, warmup, budget_s)
    return 2 * src.numel() * 4 / seconds / 1e9


def transfer_gbps(device: torch.device, nbytes: int, direction: str, pinned: bool,
                  iterations: int, warmup: int, budget_s: float = float("inf")) -> float:
    """GB/s of ``nbytes`` copies host-to-device (``h2d``) or device-to-host (``d2h``)."""
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned).fill_(1)
    dev = torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(1)
    if direction == "h2d":
        def copy() -> object:
            return dev.copy_(host, non_blocking=pinned)
    else:
        def copy() -> object:
            return host.copy_(dev, non_blocking=pinned)
    return nbytes / seconds_per_call(copy, device, iterations, warmup, budget_s) / 1e9


def decode_images_per_s(data_dir: str, image_size: int, batch_size: int, workers: int,
                        batches: int, budget_s: float = float("inf"),
                        from_memory: bool = False) -> float:
    """Images/s a DataLoader with ``workers`` processes delivers from the JPEG folder with the
    training transform (RandomResizedCrop + flip, uint8 out): reading the files as it goes, or
    with ``from_memory`` decoding the folder's images read into memory beforehand
    (:mod:`benchlib.data.memory_folder`, so the file system is not timed). The first batch,
    which pays the workers' start, is not timed; the folder is passed over again as often as
    needed; timing stops after ``batches`` batches or ``budget_s`` seconds (at least two
    batches)."""
    from benchlib.data.imagefolder import image_folder_loader
    from benchlib.data.memory_folder import memory_folder_loader

    make = memory_folder_loader if from_memory else image_folder_loader
    loader = make(data_dir, image_size, batch_size, workers, train=True, pin_memory=False)

    def endless(source):
        while True:
            yield from source

    stream = endless(loader)
    next(stream)
    images = 0
    start = time.perf_counter()
    for index in range(batches):
        images += len(next(stream)[0])
        if index >= 1 and time.perf_counter() - start >= budget_s:
            break
    seconds = time.perf_counter() - start
    del stream, loader  # stops the persistent workers
    return images / seconds


def read_throughput(data_dir: str, max_bytes: int,
                    budget_s: float = float("inf")) -> dict[str, float | bool | int]:
    """Read the folder's files (sorted, up to ``max_bytes`` or ``budget_s`` seconds) and time
    it: MB/s (1e6 bytes) and files/s. Each file is dropped from the page cache before it is
    read where possible."""
    files = sorted(p for p in Path(data_dir).rglob("*") if p.is_file())
    total, count, dropped = 0, 0, hasattr(os, "posix_fadvise")
    buffer = bytearray(READ_CHUNK)
    start = time.perf_counter()
    for path in files:
        if total >= max_bytes or (count and time.perf_counter() - start >= budget_s):
            break
        fd = os.open(path, os.O_RDONLY)
        try:
            if dropped:
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                except OSError:
                    dropped = False
            with os.fdopen(fd, "rb", closefd=False) as handle:
                while (n := handle.readinto(buffer)) > 0:
                    total += n
        finally:
            os.close(fd)
        count += 1
    seconds = time.perf_counter() - start
    if count == 0:
        raise FileNotFoundError(f"data_dir {data_dir!r}: no files to read")
    return {"read_MBps": total / seconds / 1e6, "read_files_per_s": count / seconds,
            "read_bytes": total, "read_files": count, "read_cache_dropped": dropped}


def achievable_for(device: torch.device, precision: str, base: int,
                   config: NodeProbeConfig) -> achievable.Achieved:
    """The achievable matmul in ``precision`` (MAMF over shapes around the probe's square size
    ``base``, within ``probe_time_s``), with TF32 set as :func:`matmul_tflops` sets it."""
    with tf32_for_matmul(precision == MatmulPrecision.TF32):
        return achievable.achievable_matmul(device, DTYPES[precision], base, config.matmul_size,
                                            config.mamf_repeats, config.warmup,
                                            config.probe_time_s)


def run(config: NodeProbeConfig) -> NodeProbeResult:
    """Run every probe the node supports (the rest are rows with a note saying why not),
    watched for other work on the node and for throttled clocks as a timed loop is."""
    device = resolve_device(config.device)
    with ContentionSampler(device) as watch, TelemetrySampler(device) as sampler:
        rows, decode = figures(config, device)
    return NodeProbeResult(device=device, table=pd.DataFrame(rows),
                           decode=pd.DataFrame(decode, columns=["workers", "images_per_s"]),
                           contention=watch.contention, telemetry=sampler.telemetry)


def figures(config: NodeProbeConfig,
            device: torch.device) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The probe's figures (one row each: probe, setting, value, unit, note) and its decode
    curve (workers, images_per_s)."""
    cuda = device.type == "cuda"
    rows: list[dict[str, object]] = []

    def add(probe: str, setting: str, value: float | None, unit: str, note: str = "") -> None:
        rows.append({"probe": probe, "setting": setting, "value": value, "unit": unit, "note": note})
        progress.tick()

    it, warm, budget = config.iterations, config.warmup, config.probe_time_s
    for precision in config.precisions:
        if precision == MatmulPrecision.TF32 and not cuda:
            add("matmul", precision, None, "TFLOP/s", "TF32 is a CUDA tensor-core mode")
            continue
        n = matmul_size_within(device, precision, config.matmul_size, budget)
        cut = "" if n == config.matmul_size else f" (matmul_size {config.matmul_size} did not " \
            f"fit probe_time_s {budget:g})"
        add("matmul", precision, matmul_tflops(device, precision, n, it, warm, budget), "TFLOP/s",
            f"{n}x{n} @ {n}x{n}{cut}")
        best = achievable_for(device, precision, n, config)
        add("matmul achievable", precision, best.value, "TFLOP/s",
            f"best of {best.tried} shapes (MAMF), {best.calls_text(config.mamf_repeats)}: "
            f"{best.shape_text}; fastest single call {best.fastest_call:.4g} TFLOP/s")
    nbytes = config.memory_bytes
    host = "" if cuda else " (host memory: no device)"
    add("memory", "device copy", memory_bandwidth_gbps(device, nbytes, it, warm, budget), "GB/s",
        f"{nbytes / 2**20:.0f} MiB read + written{host}")
    triad = achievable.triad_gbps(device, nbytes, it, warm, budget)
    add("memory", "triad", triad.value, "GB/s",
        f"STREAM triad a = b + 3c, {nbytes / 2**20:.0f} MiB in three arrays, best call{host}")
    for direction in ("h2d", "d2h"):
        for pinned in (True, False):
            setting = f"{direction} {'pinned' if pinned else 'pageable'}"
            if not cuda:
                add("transfer", setting, None, "GB/s", "no device: nothing to copy to")
                continue
            add("transfer", setting, transfer_gbps(device, config.transfer_bytes, direction, pinned,
                                                   it, warm, budget), "GB/s",
                f"{config.transfer_bytes / 2**20:.0f} MiB")
    decode = []
    if config.data_dir:
        for workers in config.decode_workers:
            rate = decode_images_per_s(config.data_dir, config.image_size, config.decode_batch_size,
                                       workers, config.decode_batches, budget)
            decode.append({"workers": workers, "images_per_s": rate})
            add("decode", f"{workers} workers", rate, "images/s",
                f"read from data_dir + JPEG decode + RandomResizedCrop {config.image_size} + flip")
        best_workers = max(decode, key=lambda row: row["images_per_s"])["workers"]
        rate = decode_images_per_s(config.data_dir, config.image_size, config.decode_batch_size,
                                   best_workers, config.decode_batches, budget, from_memory=True)
        add("decode from memory", f"{best_workers} workers", rate, "images/s",
            f"JPEG decode + RandomResizedCrop {config.image_size} + flip of data_dir's images "
            "read into memory first (the file system not timed)")
        read = read_throughput(config.data_dir, config.read_max_bytes, budget)
        note = f"{read['read_files']} files, {read['read_bytes'] / 1e6:.1f} MB, " + (
            "page cache dropped per file" if read["read_cache_dropped"] else "page cache NOT dropped")
        add("read", "data_dir MB/s", read["read_MBps"], "MB/s", note)
        add("read", "data_dir files/s", read["read_files_per_s"], "files/s", note)
    else:
        for probe in ("decode", "decode from memory", "read"):
            add(probe, "", None, "", "no data_dir given")
    return rows, decode

