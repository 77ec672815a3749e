"""The probe kinds: the all-reduce probe (``probe_allreduce``) and the node probe
(``probe_node``). Neither is a timed loop of iterations: each figure is a mean over
back-to-back repetitions, so ``short`` does not apply and there is no within-run interval."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from benchlib.kinds.base import Kind, register_kind
from benchlib.vocabulary import MatmulPrecision

if TYPE_CHECKING:
    from benchlib.kinds.probes.config import AllReduceConfig, NodeProbeConfig
    from benchlib.kinds.probes.workload import NodeProbeResult
    from benchlib.kinds.probes.workload_collectives import AllReduceResult

class Probe(Kind):
    """What both probes share: no timed loop, no within-run interval."""

    timed_loop = False
    probe = True

    def interval(self, result: object) -> dict[str, float | None]:
        """Empty bounds: a probe keeps no per-iteration times to resample."""
        return {"throughput_low": None, "throughput_high": None}


#: The all-reduce's data type in the words every record's ``precision`` uses (fp32, as a
#: training run of float32 says; fp16 and bf16 as the node probe's matmul columns).
DTYPE_PRECISION = {"float32": MatmulPrecision.FP32.value, "float16": MatmulPrecision.FP16.value,
                   "bfloat16": MatmulPrecision.BF16.value}
PLATEAU_SIZES = 4  #: the all-reduce's headline: the median bus bandwidth of its largest sizes


@register_kind("allreduce")
class AllReduce(Probe):
    """Bus bandwidth of an all-reduce over message sizes (nccl-tests' formulas)."""

    run = "benchlib.kinds.probes.workload_collectives:run"

    def record_fields(self, config: AllReduceConfig, result: AllReduceResult,
                      **context: object) -> dict[str, object]:
        """The large-message bus bandwidth as throughput (the median over the
        :data:`PLATEAU_SIZES` largest messages, as nccl-tests users quote it: one fast small
        message is no headline), its peak and where, one ``busbw_<size>`` column per size."""
        table = result.table
        best = table.loc[table["busbw_GBps"].idxmax()]
        plateau = table.sort_values("size_bytes")["busbw_GBps"].tail(PLATEAU_SIZES)
        record: dict[str, object] = {
            "benchmark": config.benchmark, "model": "allreduce", "dataset": "synthetic",
            "precision": DTYPE_PRECISION[config.dtype], "throughput": float(plateau.median()),
            "unit": "GB/s (bus)", "iterations": config.iterations, "warmup": config.warmup,
            "samples": len(table), "busbw_peak_size": best["size"],
            "algbw_peak_GBps": float(table["algbw_GBps"].max()),
            "time_smallest_us": float(table["time_us"].iloc[0]), "device": result.device.type,
            "node_launcher": config.node_launcher, "seed": config.seed,
        }
        for row in table.itertuples():
            record[f"busbw_{row.size}"] = row.busbw_GBps
        return record


@register_kind("node_probe")
class NodeProbe(Probe):
    """The node's ceilings: matmul, memory, links, decode, reads."""

    run = "benchlib.kinds.probes.workload:run"
    data_field = "data_dir"
    comments: ClassVar[dict[str, str]] = {
        "precisions": "matmul precisions: fp32 | tf32 | fp16 | bf16",
        "matmul_size": "n of the n x n matrix products",
        "memory_bytes": "buffer copied within the device (bytes read + written per second)",
        "transfer_bytes": "buffer copied host <-> device, from pinned and from pageable memory",
        "iterations": "timed repetitions of each probe",
        "data_dir": "ImageNet-layout JPEG folder for the decode and read probes (empty: skip them)",
        "decode_workers": "loader worker counts to try (0: decode in this process)",
        "decode_batches": "timed batches per worker count",
        "read_max_bytes": "read at most this many bytes of data_dir",
        "allreduce_devices": "0: every visible GPU when there are 2 or more; 1: skip the all-reduce",
    }
    #: Its figures set against the datasheet: (record column, datasheet column or None,
    #: label, unit).
    ceilings = (
        *((f"matmul_tflops_{p}", f"{p}_tflops", f"matmul {p} (one square shape)", "TFLOP/s")
          for p in MatmulPrecision),
        *((f"mamf_tflops_{p}", f"{p}_tflops", f"achievable matmul {p} (best of a sweep of "
           "shapes)", "TFLOP/s") for p in MatmulPrecision),
        ("memory_GBps", "memory_GBps", "device memory (copy)", "GB/s"),
        ("triad_GBps", "memory_GBps", "device memory (STREAM triad, best call)", "GB/s"),
        ("h2d_pinned_GBps", "host_link_GBps", "host to device (pinned)", "GB/s"),
        ("d2h_pinned_GBps", "host_link_GBps", "device to host (pinned)", "GB/s"),
        ("h2d_pageable_GBps", "host_link_GBps", "host to device (pageable)", "GB/s"),
        ("d2h_pageable_GBps", "host_link_GBps", "device to host (pageable)", "GB/s"),
        ("allreduce_busbw_GBps", None, "all-reduce bus bandwidth", "GB/s"),
        ("decode_best_images_per_s", None, "read + JPEG decode from data_dir (best worker "
         "count)", "images/s"),
        ("decode_memory_images_per_s", None, "JPEG decode from memory (at that worker count)",
         "images/s"),
        ("read_MBps", None, "data_dir read", "MB/s"),
    )
    #: Its columns a fleet's heat map sets node against node, when present.
    fleet_columns = (*(f"matmul_tflops_{p}" for p in MatmulPrecision), "memory_GBps",
                     "h2d_pinned_GBps", "d2h_pinned_GBps", "allreduce_busbw_GBps",
                     "decode_best_images_per_s", "read_MBps")

    def record_fields(self, config: NodeProbeConfig, result: NodeProbeResult,
                      allreduce: dict[str, object] | None = None,
                      **context: object) -> dict[str, object]:
        """The best matmul TFLOP/s the probe measured (one shape or the sweep of shapes: the
        "matmul peak", never below a figure the node page shows) as throughput, one column per figure
        (``matmul_tflops_<precision>``, the achievable ``mamf_tflops_<precision>``,
        ``memory_GBps``, ``triad_GBps``, ``h2d_pinned_GBps``, ..., ``decode_images_per_s_<n>w``,
        ``decode_memory_images_per_s``, ``read_MBps``), what else used the node and NVML saw
        meanwhile (``contended``, ``contention_cpu_share``, ``throttled_share``: its flags come
        from them as a timed loop's do); ``allreduce`` (that probe's record) adds its peak bus
        bandwidth."""
        matmul = {f"matmul_tflops_{p}": result.value("matmul", p) for p in config.precisions}
        mamf = {f"mamf_tflops_{p}": result.value("matmul achievable", p) for p in config.precisions}
        measured = [v for v in (*matmul.values(), *mamf.values()) if v is not None]
        record: dict[str, object] = {
            "benchmark": config.benchmark, "model": "node",
            "dataset": "real" if config.data_dir else "synthetic", "precision": "",
            "throughput": max(measured) if measured else None, "unit": "TFLOP/s (matmul peak)",
            "iterations": config.iterations, "warmup": config.warmup,
            "samples": len(result.table), "device": result.device.type, "seed": config.seed,
            **matmul, **mamf, "memory_GBps": result.value("memory", "device copy"),
            "triad_GBps": result.value("memory", "triad"),
        }
        for direction in ("h2d", "d2h"):
            for memory in ("pinned", "pageable"):
                record[f"{direction}_{memory}_GBps"] = result.value("transfer",
                                                                    f"{direction} {memory}")
        for row in result.decode.itertuples():
            record[f"decode_images_per_s_{row.workers}w"] = row.images_per_s
        if len(result.decode):
            best = result.decode.loc[result.decode["images_per_s"].idxmax()]
            record.update(decode_best_images_per_s=float(best["images_per_s"]),
                          decode_best_workers=int(best["workers"]), data_dir=config.data_dir,
                          decode_memory_images_per_s=result.value(
                              "decode from memory", f"{int(best['workers'])} workers"))
        record["read_MBps"] = result.value("read", "data_dir MB/s")
        record["read_files_per_s"] = result.value("read", "data_dir files/s")
        record.update(result.watched_columns())
        if allreduce:
            record.update(allreduce_busbw_GBps=allreduce.get("throughput"),
                          allreduce_devices=allreduce.get("num_devices"))
        return record

