"""Every column that analysis and the pages add to tables (not a record's): its words, unit, how
its numbers are shown and which way is better, described once as a record column is
(:class:`~benchlib.records.column.Column`, role ``derived``). :func:`benchlib.formatting.column_label`
and :func:`~benchlib.formatting.formatter` read them as they read the record's; never a
configuration column (:data:`benchlib.analysis.tables.DERIVED`)."""

from __future__ import annotations

from benchlib.records.column import Column, D

R, P, T, U = "ratio", "percent", "tflops", "throughput"


def _derived(name: str, description: str, label: str = "", shown: str = "", unit: str = "",
             better: str = "", dtype: str = "float") -> Column:
    return Column(name, D, dtype, unit, description, label=label, shown=shown,  # type: ignore[arg-type]
                  better=better)  # type: ignore[arg-type]


#: Every derived column, in no particular order (tables place them).
DERIVED: tuple[Column, ...] = (
    _derived("count", "runs behind a row", "runs", dtype="count"),
    _derived("others_cpu", "other processes' share of the CPU time, the most of a row's runs",
             "others' CPU", P, better="lower"),
    _derived("others_disks", "the rate other processes read from the local disks, the most of a "
             "row's runs", "others' disk reads", unit="MiB/s", better="lower"),
    _derived("stall_cpu", "share of the time some task waited for a CPU (Linux PSI, the runs' "
             "own waits too), the most of a row's runs", "CPU stalls", P, better="lower"),
    _derived("stall_io", "share of the time some task waited for I/O (Linux PSI, the runs' own "
             "waits too), the most of a row's runs", "I/O stalls", P, better="lower"),
    _derived("spread", "spread between a configuration's repeats", "spread between repeats", P),
    _derived("speedup", "throughput over the fewest devices' (scaling)", shown=R, better="higher"),
    _derived("efficiency", "speedup over the device ratio (scaling)", shown=P, better="higher"),
    _derived("ratio", "a / b of a paired comparison", "ratio a / b", R),
    _derived("a", "side a of a paired comparison (median)", shown=U, unit="unit"),
    _derived("b", "side b of a paired comparison (median)", shown=U, unit="unit"),
    _derived("low", "low end of a ratio's 95 % interval"),
    _derived("high", "high end of a ratio's 95 % interval"),
    *(_derived(f"{side}_{end}", f"side {side}'s {end} end")
      for side in "ab" for end in ("low", "high")),
    _derived("bottleneck", "the phase taking the most of an iteration", "bottleneck phase",
             dtype="text"),
    _derived("data_share", "share of an iteration waiting for data", "waiting for data", P,
             better="lower"),
    _derived("data_wait_share", "share of an iteration waiting for data", "waiting for data", P,
             better="lower"),
    _derived("verdict", "what held a run back, or a comparison's outcome", dtype="text"),
    _derived("mfu", "model FLOP/s over the datasheet peak", "MFU of the datasheet", P,
             better="higher"),
    _derived("mfu_achievable", "model FLOP/s over the node's achievable matmul",
             "MFU of what the node reaches", P, better="higher"),
    _derived("achieved_tflops_per_device", "model FLOP/s per device", "achieved per device", T),
    _derived("peak_tflops", "the datasheet's peak for the run's precision", "datasheet peak", T),
    _derived("achievable_tflops", "the node probe's best matmul", "node's achievable matmul", T),
    _derived("demand_per_device", "samples/s the model takes per device", "model takes per device",
             U, "unit"),
    _derived("loader_capacity_per_device", "samples/s the loader gives per device",
             "loader gives per device", U, "unit"),
    _derived("hours", "hours of a projected job", unit="h", better="lower"),
    _derived("iterations_per_minute", "training iterations per minute (3D U-Net)",
             "iterations per minute", better="higher"),
    _derived("days_to_100k", "days to 100,000 training iterations (3D U-Net)",
             "days to 100k iterations", unit="days", better="lower"),
    _derived("megavoxels_per_s", "voxels predicted per second, in millions (3D U-Net)",
             "megavoxels/s", better="higher"),
    _derived("hours_per_teravoxel", "hours to predict 10^12 voxels (3D U-Net)",
             "hours per teravoxel", better="lower"),
    _derived("figure", "a node probe's figure", dtype="text"),
    _derived("measured", "the node's figure", shown=U),
    _derived("datasheet", "the datasheet's figure", shown=U),
    _derived("of_datasheet", "measured over datasheet", "measured / datasheet", R),
    _derived("variant", "the datasheet's variant of the GPU", "datasheet variant", dtype="text"),
    _derived("speed_ratio", "measured speed of two GPUs, a / b", "measured speed ratio", R),
    _derived("expected", "the datasheets' ratio of two GPUs", "expected ratio", R),
    _derived("slowdown", "expected over measured: times slower than expected",
             "times slower than expected", R, better="lower"),
    _derived("pairs", "configurations paired in a comparison", dtype="count"),
    _derived("significant", "whether a comparison's interval excludes 1", dtype="bool"),
    _derived("geometric mean ratio", "a comparison's headline: the geometric mean of its ratios",
             shown=R),
    _derived("configuration", "a configuration's label", dtype="text"),
    _derived("workers", "loader workers of a diagnose rung", dtype="count"),
    _derived("images_per_s", "images decoded per second (node probe)", "images/s"),
    _derived("busbw_GBps", "all-reduce bus bandwidth", "bus bandwidth (GB/s)"),
    _derived("size", "all-reduce message size", "message size", dtype="text"),
    _derived("share", "a share of the whole", shown=P),
    _derived("baseline_devices", "the fewest devices a scaling row is measured against",
             dtype="count"),
    _derived("baseline_key", "the scaling row's configuration without its device count",
             dtype="text"),
)
