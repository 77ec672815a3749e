"""The record columns only the node probes' runs have, each with its words and its form;
``benchlib.records.columns.every_column`` places them among the shared ones (settings
before the shared bookkeeping, measurements before the environment)."""

from __future__ import annotations

from benchlib.records.column import B, Column, M

#: The columns this kind adds to the record (docs/record.md lists them).
COLUMNS: tuple[Column, ...] = (
    Column("precisions", B, "text", "", "node probe: the precisions parameter", lists=True),
    Column("decode_workers", B, "int", "processes", "node probe: the decode_workers parameter",
           lists=True),
    Column("data_dir", B, "text", "", "image folder read (node probe)"),
    Column("busbw_peak_size", B, "text", "", "all-reduce: message size of the peak"),
    Column("decode_best_workers", B, "int", "processes", "node probe: loader workers of the "
           "best decode rate"),
    Column("allreduce_devices", B, "int", "devices", "node probe: devices in its all-reduce"),
    Column("busbw_{size}", M, "float", "GB/s", "all-reduce bus bandwidth at a message size",
           better="higher"),
    Column("algbw_{size}", M, "float", "GB/s", "all-reduce algorithm bandwidth at a size",
           better="higher"),
    Column("time_smallest_us", M, "float", "µs", "all-reduce: time of the smallest message",
           better="lower"),
    Column("matmul_tflops_{precision}", M, "float", "TFLOP/s", "node probe: matmul of one "
           "square size (matmul_size, or the largest that fits probe_time_s)", better="higher",
           shown="tflops"),
    Column("mamf_tflops_{precision}", M, "float", "TFLOP/s", "node probe: maximum achievable "
           "matmul (MAMF): over a sweep of shapes, the best shape's mean over mamf_repeats calls",
           better="higher"),
    Column("memory_GBps", M, "float", "GB/s", "node probe: device copy (read + written)",
           better="higher"),
    Column("triad_GBps", M, "float", "GB/s", "node probe: STREAM triad a = b + 3c (two arrays "
           "read, one written), best call", better="higher"),
    Column("{direction}_{kind}_GBps", M, "float", "GB/s", "node probe: h2d / d2h, pinned / "
           "pageable", better="higher"),
    Column("decode_images_per_s_{workers}w", M, "float", "images/s", "node probe: read from data_dir "
           "+ JPEG decode + transform, n loader workers", better="higher"),
    Column("decode_best_images_per_s", M, "float", "images/s", "node probe: best read + decode rate",
           better="higher"),
    Column("decode_memory_images_per_s", M, "float", "images/s", "node probe: JPEG decode + "
           "transform of data_dir's images read into memory first (no file system), at "
           "decode_best_workers", better="higher"),
    Column("read_MBps", M, "float", "MB/s", "node probe: data directory read", better="higher"),
    Column("read_files_per_s", M, "float", "files/s", "node probe: data directory files read",
           better="higher"),
    Column("allreduce_busbw_GBps", M, "float", "GB/s", "node probe: peak all-reduce bus "
           "bandwidth", better="higher"),
)
