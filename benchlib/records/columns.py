"""Every record column, in the order tables show them, each with the words people read for it
and how its numbers are shown (:mod:`benchlib.records.schema` looks them up; the columns
analysis adds are :mod:`benchlib.records.derived`). The columns every kind shares are here;
those only one kind's runs have are in its folder (``benchlib/kinds/<kind>/columns.py``, found
by :mod:`benchlib.discovery`), placed by :func:`every_column`."""

from __future__ import annotations

import math
from functools import cache

from benchlib import discovery
from benchlib.measure.contention import RULE as CONTENTION_RULE
from benchlib.records.column import B, C, Column, E, M

#: The columns every kind's records share, in the order tables show them (core columns first).
COLUMNS: tuple[Column, ...] = (
    Column("schema_version", B, "int", "", "version of this schema the record follows", True,
           minimum=1),
    Column("campaign", C, "text", "", "the params file's campaign", True),
    Column("cluster", C, "text", "", "cluster name (parameter, SLURM's, $BENCHLIB_CLUSTER or host)",
            True, describes=3, factor=6, said_once=True),
    Column("host", B, "text", "", "host the run's first process ran on", True),
    Column("gpu", C, "text", "", "short device name (H100, A100, ..., cpu)", True,
           describes=4, factor=3, said_once=True, label="GPU"),
    Column("device_name", B, "text", "", "full device name (GPU name or CPU model)", True, label="device"),
    Column("num_devices", C, "count", "devices", "devices over all nodes, one process each",
            True, minimum=1, describes=6, said_once=True, label="devices"),
    Column("num_nodes", C, "count", "nodes", "nodes the run spanned", True, minimum=1,
           describes=5, said_once=True, label="nodes"),
    Column("benchmark", C, "text", "", "the benchmark the run is, one per notebook (the "
           "registered ones: docs/record.md lists them)", True, describes=1, said_once=True),
    Column("model", C, "text", "", "what the run measures: a torchvision model, unet3d, "
           "transformer, allreduce, node, ...", True, describes=2, factor=4, said_once=True),
    Column("dataset", C, "text", "", "synthetic or real (language models: synthetic or tokens)",
            True, describes=7, factor=1, said_once=True, label="data"),
    Column("batch_size", C, "count", "samples", "the batch_size parameter: per device in weak "
           "scaling, the global batch in strong scaling", True, minimum=1,
           describes=9, factor=2, said_once=True),
    Column("precision", C, "text", "", "fp32, tf32, amp_fp16, amp_bf16 (dtype for all-reduce)",
            True, describes=10, factor=5, said_once=True),
    Column("num_workers", C, "count", "processes", "data loader worker processes per rank", True,
           describes=11, factor=7, said_once=True, label="loader workers"),
    Column("channels_last", C, "bool", "", "channels-last memory format", True,
           describes=12, factor=8),
    Column("compile", C, "text", "", "torch.compile mode (none: eager)", True,
           describes=13, factor=9),
    Column("throughput", M, "float", "unit", "samples / wall time of the timed loop (the "
           "probes: their headline figure)", True, better="higher", shown="throughput"),
    Column("unit", C, "text", "", "unit of throughput (images/s, voxels/s, tokens/s, GB/s (bus), ...)",
           True),
    Column("time_iteration_s", M, "float", "s", "median seconds per timed iteration", True,
           better="lower"),
    Column("time_{phase}_s", M, "float", "s", "median seconds per iteration in a phase (data, "
           "read, h2d, preprocess, forward, backward, optimizer, d2h, write)", True,
           better="lower"),
    Column("iterations", B, "count", "iterations", "timed iterations that ran (failed records: "
           "the parameter, which may be auto or epoch)", True, words=("auto", "epoch"),
           label="timed iterations"),
    Column("warmup", B, "count", "iterations", "untimed iterations before them", True),
    Column("samples", B, "count", "samples", "samples over the timed loop, all ranks", True),
    Column("wall_time_s", B, "float", "s", "wall time of the timed loop (ranks: first start to last end)",
           True,
           minimum=0, label="timed loop"),
    Column("peak_memory_bytes", M, "int", "bytes", "peak device memory allocated by torch (CPU: "
           "peak resident set)", True, better="lower", label="peak memory"),
    Column("status", B, "text", "", "ok or failed", True,
           said_once=True),
    Column("flags", B, "text", "", "why not to take the number at face value: contended, "
           "superlinear, throttled, noisy, short, energy_implausible, mfu_over_100 "
           "(comma-separated)", True),
    Column("error", B, "text", "", "why a failed run failed", True),
    # configuration beyond the core
    Column("scaling", C, "text", "", "weak or strong",
           describes=18, said_once=True),
    Column("synthetic_kind", C, "text", "", "device (tensors made once) or loader (CPU workers)",
           describes=8, factor=10, label="synthetic data made"),
    Column("data_source", C, "text", "", "real data: disk (read as it goes) or memory (files "
           "read once before timing: decode only)"),
    Column("data_path", C, "text", "", "the data the run read: data_dir, volume or token_file, "
           "resolved (links and relative parts followed) and redacted; empty for synthetic "
           "data", describes=19, factor=11),
    Column("image_size", C, "count", "px", "image side", minimum=1,
           describes=14, said_once=True),
    Column("breakdown", B, "bool", "", "per-phase timers on"),
    Column("device_batch_size", B, "int", "samples", "batch per device per iteration",
           minimum=1),
    Column("global_batch_size", B, "int", "samples", "batch over all devices per iteration",
           minimum=1),
    Column("device", B, "text", "", "torch device type (cuda, cpu)"),
    Column("seed", B, "int", "", "random seed"),
    Column("provenance", B, "text", "", "shipped reference records: where the figures come from"),
    Column("dataset_label", B, "text", "", "shipped reference records: the data set's name"),
    # bookkeeping
    Column("run_id", B, "text", "", "the run's id (32 hex digits), made once per run: every "
           "rank of a run shares it; missing in records of schema 1", since=2),
    Column("started_at", B, "time", "", "when the run's timed work started (the probes: the "
           "launch; a failed record: the point), ISO 8601 UTC to the second; missing in "
           "records of schema 1", since=2),
    Column("ended_at", B, "time", "", "when the run's timed work ended (a failed record: when "
           "it failed), ISO 8601 UTC to the second; missing in records of schema 1",
           since=2),
    Column("point_id", B, "text", "", "hash of notebook, parameters and repeat"),
    Column("notebook", B, "text", "", "benchmark notebook that ran"),
    Column("repeat", B, "count", "", "repeat index of the point"),
    Column("sweep_order", B, "count", "", "the point's place in its sweep's run order (repeats "
           "interleaved ABCABC unless repeat_order: grouped)"),
    Column("source", B, "text", "", "the executed notebook the record was loaded from"),
    Column("slurm_state", B, "text", "", "the job's final Slurm state (failed points)"),
    Column("dist_backend", B, "text", "", "nccl or gloo (several ranks)", label="backend"),
    Column("node_launcher", B, "text", "", "how the nodes' torchrun agents started", label="launcher"),
    Column("slowest_rank", B, "int", "", "rank with the longest wall time"),
    Column("hang_timeout_s", B, "float", "s", "seconds without progress before a launch is "
           "stopped"),
    Column("threads_per_process", B, "int", "threads", "torch intra-op threads each process "
           "used (set explicitly)"),
    Column("telemetry", B, "text", "", "nvml, or unavailable: why"),
    Column("telemetry_samples", B, "int", "samples", "NVML readings over the timed loop"),
    Column("energy_source", B, "text", "", "where energy_j comes from: counter (NVML's energy "
           "counter), integrated instantaneous power (NVML's instantaneous power field), "
           "integrated power (NVML power samples), rapl (a CPU run: the packages' RAPL "
           "counters, whole packages, every process on them); none: why, where nothing was "
           "measured (energy unknown, never 0)"),
    Column("contended", M, "bool", "", f"{CONTENTION_RULE} during the timed loop (a probe: "
           "while it measured)"),
    Column("noisy", M, "bool", "", "iteration IQR / median above 10 %"),
    # measurements
    Column("time_{phase}_p95_s", M, "float", "s", "95th percentile seconds per iteration (phase "
           "or iteration)", better="lower"),
    Column("spread_iteration", M, "float", "", "IQR / median of iteration seconds", better="lower"),
    Column("throughput_low", M, "float", "unit", "within-run 95 % interval of throughput (a "
           "bootstrap over this run's iterations; never decides a comparison), low end",
           better="higher", shown="throughput"),
    Column("throughput_high", M, "float", "unit", "within-run 95 % interval of throughput, high end",
           better="higher", shown="throughput"),
    Column("flops_per_sample", M, "float", "FLOP", "model FLOPs per sample (forward, + backward "
           "for training)", label="work per sample"),
    Column("achieved_tflops", M, "float", "TFLOP/s", "flops_per_sample x throughput",
           better="higher", label="achieved", shown="tflops"),
    Column("contention_cpu_share", M, "float", "", "share of the run's CPU time that other "
           "processes took", shown="percent"),
    Column("contention_swap_pages", M, "int", "pages", "pages swapped in and out during the loop"),
    Column("contention_gpu_processes", M, "int", "processes", "other compute processes on the "
           "run's GPU"),
    Column("contention_gpu_util_before", M, "float", "%", "GPU utilization just before the loop"),
    Column("contention_read_bytes", M, "int", "bytes", "bytes others read from the node's local "
           "disks during the loop (the disks' reads less the run's own tree's)"),
    Column("contention_read_rate", M, "float", "bytes/s", "contention_read_bytes over the span "
           "the contention sampler measured (ranks: one that others' reads made contended, else "
           "the one where they read fastest)"),
    Column("pressure_cpu_share", M, "float", "", "share of the loop's time in which some task on "
           "the node waited for a CPU (Linux PSI; the run's own waits too)", shown="percent"),
    Column("pressure_io_share", M, "float", "", "share of the loop's time in which some task on "
           "the node waited for I/O (Linux PSI; the run's own waits too)", shown="percent"),
    Column("gpu_util_mean", M, "float", "%", "NVML GPU utilization, mean",
           label="GPU utilization", shown="points"),
    Column("gpu_mem_util_mean", M, "float", "%", "NVML memory controller utilization, mean",
           shown="points"),
    Column("gpu_memory_used_max_bytes", M, "int", "bytes", "NVML device memory used, max"),
    Column("power_mean_w", M, "float", "W", "board power, mean", label="mean power"),
    Column("power_max_w", M, "float", "W", "board power, max", label="max power"),
    Column("sm_clock_mean_mhz", M, "float", "MHz", "SM clock, mean", label="mean SM clock"),
    Column("sm_clock_min_mhz", M, "float", "MHz", "SM clock, min"),
    Column("mem_clock_mean_mhz", M, "float", "MHz", "memory clock, mean"),
    Column("temperature_mean_c", M, "float", "°C", "GPU temperature, mean"),
    Column("temperature_max_c", M, "float", "°C", "GPU temperature, max", label="max temperature"),
    Column("throttled_share", M, "float", "", "share of NVML samples with clocks held down",
           label="clocks held down", shown="percent"),
    Column("throttle_{cause}_share", M, "float", "", "share of samples throttled by power, "
           "thermal or hw_slowdown"),
    Column("energy_j", M, "float", "J", "energy over the timed loop: the GPUs' (NVML), or a CPU "
           "run's packages (RAPL: all processes on them); empty where not measured (unknown)",
           label="energy"),
    Column("joules_per_sample", M, "float", "J/sample", "energy / samples", better="lower",
           label="energy per sample"),
    Column("samples_per_joule", M, "float", "unit/J", "samples / energy: the throughput's unit "
           "per joule (images/J, tokens/J, voxels/J; the kind's per_joule_unit); empty where "
           "energy was not measured (unknown)", better="higher", label="energy efficiency"),
    Column("launch_wall_s", M, "float", "s", "the launch's wall time (several ranks)",
           better="lower"),
    Column("launch_overhead_s", M, "float", "s", "launch wall time beyond the slowest rank's loop",
           minimum=-math.inf, better="lower", label="launch overhead"),
    Column("straggler_spread", M, "float", "", "slowest / fastest rank's wall time",
           better="lower", label="slowest / fastest rank", shown="ratio"),
    Column("result_{name}", M, "text", "", "workload-specific results (final loss, loop stop "
           "reason, parameters, voxels written, ...)"),
    Column("env_var_{name}", E, "text", "", "allow-listed environment variable (never secrets)"),
    Column("env_slurm_{name}", E, "text", "", "SLURM job, array, node list, partition, cluster"),
    Column("env_{name}", E, "text", "", "versions, hardware, host, container, file system of the "
           "data, git commit (see benchlib.measure.environment.capture)"),
)

#: The shared columns a kind's settings (configuration and bookkeeping) and its measurements
#: are placed before.
SETTINGS_BEFORE = "provenance"
MEASUREMENTS_BEFORE = "env_var_{name}"


@cache
def every_column() -> tuple[Column, ...]:
    """The shared columns with each shipped kind's (its folder's ``columns`` module), in the
    order tables show them: a kind's settings before the shared bookkeeping, its measurements
    before the environment, its environment columns after it. A name declared twice is an
    ImportError naming both places."""
    where = {c.name: "benchlib.records.columns" for c in COLUMNS}
    settings: list[Column] = []
    measurements: list[Column] = []
    environment: list[Column] = []
    for module in discovery.role_modules("columns"):
        for column in module.COLUMNS:
            if column.name in where:
                raise ImportError(f"record column {column.name!r} is declared in "
                                  f"{where[column.name]} and in {module.__name__}")
            where[column.name] = module.__name__
            (measurements if column.role == M else environment if column.role == E
             else settings).append(column)
    names = [c.name for c in COLUMNS]
    first, second = names.index(SETTINGS_BEFORE), names.index(MEASUREMENTS_BEFORE)
    return (*COLUMNS[:first], *settings, *COLUMNS[first:second], *measurements,
            *COLUMNS[second:], *environment)
