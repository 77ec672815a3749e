"""Tables for people: column names in words with units, readable numbers, captions.

:func:`table` turns an analysis frame into a :class:`Table`: only the columns that vary (the
constant configuration is said once in the caption), each named in words with its unit,
numbers formatted for reading (``1.93x``, ``96.4 %``, ``1.27 GB``, ``52 GFLOP/s``, ``12.3 ms``),
missing values as a dash explained once, a caption under it, and wide tables split so that none
is wider than the page. Every text is HTML-escaped.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

DASH = "–"
#: Columns named in words (units added by :func:`column_label` from the column's kind).
NAMES: dict[str, str] = {
    "campaign": "campaign", "cluster": "cluster", "host": "host", "gpu": "GPU",
    "device_name": "device", "benchmark": "benchmark", "model": "model", "dataset": "data",
    "synthetic_kind": "synthetic data made", "batch_size": "batch size", "precision": "precision",
    "num_devices": "devices", "num_nodes": "nodes", "num_workers": "loader workers",
    "channels_last": "channels last", "compile": "compile", "image_size": "image size (px)",
    "noise_samples": "noise samples", "scaling": "scaling", "unit": "unit", "status": "status",
    "error": "error", "flags": "flags", "count": "runs", "spread": "spread between repeats",
    "speedup": "speedup", "efficiency": "efficiency", "ratio": "ratio a / b",
    "bottleneck": "bottleneck phase", "data_share": "waiting for data",
    "straggler_spread": "slowest / fastest rank", "launch_overhead_s": "launch overhead",
    "dist_backend": "backend", "node_launcher": "launcher", "verdict": "verdict",
    "data_wait_share": "waiting for data", "mfu": "MFU", "throttled_share": "clocks held down",
    "achieved_tflops_per_device": "achieved per device", "achieved_tflops": "achieved",
    "peak_tflops": "matmul peak", "demand_per_device": "model takes per device",
    "loader_capacity_per_device": "loader gives per device", "telemetry": "telemetry",
    "gpu_util_mean": "GPU utilization", "power_mean_w": "mean power",
    "sm_clock_mean_mhz": "mean SM clock", "temperature_max_c": "max temperature",
    "energy_j": "energy", "joules_per_sample": "energy per sample", "hours": "hours",
    "iterations_per_minute": "iterations per minute", "days_to_100k": "days to 100k iterations",
    "megavoxels_per_s": "megavoxels/s", "hours_per_teravoxel": "hours per teravoxel",
    "source": "source", "figure": "figure", "measured": "measured", "datasheet": "datasheet",
    "of_datasheet": "measured / datasheet", "variant": "datasheet variant",
    "peak_memory_bytes": "peak memory", "flops_per_sample": "work per sample",
    "wall_time_s": "timed loop", "iterations": "timed iterations", "samples": "samples",
    "patch_shape": "patch (z x y x x)", "block_shape": "block (z x y x x)",
    "speed_ratio": "measured speed ratio", "expected": "expected ratio",
    "slowdown": "times slower than expected", "pairs": "pairs", "significant": "significant",
    "median ratio": "median ratio", "configuration": "configuration", "workers": "workers",
    "images_per_s": "images/s", "busbw_GBps": "bus bandwidth (GB/s)", "size": "message size",
    "result_parameters": "network parameters", "a": "a", "b": "b",
}
#: How each kind of column is shown: a formatter of one number.
RATIO_COLUMNS = ("speedup", "ratio", "median ratio", "speed_ratio", "expected", "slowdown",
                 "of_datasheet", "straggler_spread")
PERCENT_COLUMNS = ("efficiency", "data_share", "data_wait_share", "mfu", "throttled_share",
                   "spread", "share", "contention_cpu_share")
PERCENT_POINTS = ("gpu_util_mean", "gpu_mem_util_mean")  #: already 0-100
TFLOPS_COLUMNS = ("achieved_tflops", "achieved_tflops_per_device", "peak_tflops")
#: Units by column (the unit goes into the column's name, numbers stay bare).
UNITS = {"power_mean_w": "W", "power_max_w": "W", "sm_clock_mean_mhz": "MHz",
         "temperature_max_c": "°C", "energy_j": "J", "joules_per_sample": "J",
         "demand_per_device": "images/s", "loader_capacity_per_device": "images/s",
         "launch_overhead_s": "s", "wall_time_s": "s", "hours": "h", "days_to_100k": "days"}
SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
#: Settings named in a caption when every row has the same value.
SAY_CONSTANT = ("cluster", "gpu", "num_nodes", "num_devices", "benchmark", "model", "dataset",
                "batch_size", "precision", "num_workers", "image_size", "scaling", "status")
#: Integer settings shown as they are written (no thousands separator, not right-aligned).
IDENTIFIERS = ("batch_size", "num_devices", "num_nodes", "num_workers", "image_size",
               "noise_samples", "workers", "repeat")


def missing(value: object) -> bool:
    """Whether ``value`` is missing (None, NaN, NA, '')."""
    if value is None or (isinstance(value, str) and value.strip() in ("", "None", "nan")):
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def number(value: float) -> str:
    """A number for reading: thousands separated, about 3 significant digits, no exponent."""
    magnitude = abs(value)
    if magnitude >= 100 or (value == int(value) and magnitude < 1e15):
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    if magnitude >= 0.001:
        return f"{value:.3g}"
    return f"{value:.1e}"


def si(value: float, unit: str) -> str:
    """``1.27e9, "B"`` -> ``1.27 GB``; ``5.2e10, "FLOP/s"`` -> ``52.0 GFLOP/s``."""
    if value == 0:
        return f"0 {unit}"
    for scale, prefix in SI:
        if abs(value) >= scale:
            return f"{number(value / scale)} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def ratio(value: float) -> str:
    """``1.93x``."""
    return f"{value:.2f}x"


def percent(value: float, points: bool = False) -> str:
    """``0.964`` -> ``96.4 %`` (``points``: the value is already 0-100)."""
    value = value if points else value * 100
    return f"{value:.0f} %" if abs(value) >= 100 else f"{value:.1f} %"


def milliseconds(seconds: float) -> str:
    """Seconds as ``12.3 ms`` figures (no unit: the column says ms)."""
    return number(seconds * 1e3)


def tflops(value: float) -> str:
    """TFLOP/s as ``52.0 GFLOP/s`` or ``312 TFLOP/s``."""
    return si(value * 1e12, "FLOP/s")


def kind(column: str) -> str:
    """What a column holds, for naming and formatting: ratio, percent, ms, bytes, flops,
    tflops, throughput, count or plain."""
    if column in RATIO_COLUMNS:
        return "ratio"
    if column in PERCENT_COLUMNS or column in PERCENT_POINTS:
        return "percent"
    if re.fullmatch(r"time_\w+_s", column):
        return "ms"
    if column.endswith("_bytes"):
        return "bytes"
    if column == "flops_per_sample":
        return "flops"
    if column in TFLOPS_COLUMNS or column.startswith("matmul_tflops"):
        return "tflops"
    if column in ("throughput", "throughput_low", "throughput_high", "a", "b", "measured",
                  "datasheet"):
        return "throughput"
    return "plain"


def column_label(column: str, unit: str | None = None) -> str:
    """``time_data_s`` -> ``data wait (ms)``; ``throughput`` with unit images/s ->
    ``throughput (images/s)``."""
    if column == "time_iteration_s":
        return "iteration (ms)"
    if column == "time_data_s":
        return "data wait (ms)"
    if match := re.fullmatch(r"time_(\w+)_s", column):
        return f"{match.group(1)} (ms)"
    name = NAMES.get(column, column.replace("_", " "))
    if column in ("throughput", "throughput_low", "throughput_high", "a", "b") and unit:
        prefix = {"throughput_low": "throughput, 95 % low", "throughput_high": "95 % high"}
        return f"{prefix.get(column, name)} ({unit})"
    if column in UNITS:
        return f"{name} ({UNITS[column]})"
    return name


def formatter(column: str) -> Callable[[object], str]:
    """The function that shows one value of ``column`` (missing values as :data:`DASH`)."""
    shown = {"ratio": ratio, "ms": milliseconds, "bytes": lambda v: si(v, "B"),
             "flops": lambda v: si(v, "FLOP"), "tflops": tflops,
             "percent": lambda v: percent(v, column in PERCENT_POINTS)}.get(kind(column), number)

    def show(value: object) -> str:
        if missing(value):
            return "" if column == "flags" else DASH
        if isinstance(value, bool | np.bool_):
            return "yes" if value else "no"
        if pd.api.types.is_number(value):
            number_value = float(value)
            if math.isinf(number_value):
                return "∞"
            if column in IDENTIFIERS and number_value == int(number_value):
                return str(int(number_value))
            return shown(number_value)
        return " ".join(str(value).split())
    return show


def _constant(frame: pd.DataFrame, column: str) -> bool:
    values = frame[column].map(lambda v: DASH if missing(v) else str(v))
    return values.nunique() <= 1


@dataclass
class Table:
    """A table ready to show: cell texts, which columns are numbers, caption; HTML in
    notebooks and pages (:meth:`_repr_html_`), aligned text elsewhere."""

    cells: pd.DataFrame
    caption: str
    numeric: set[str] = field(default_factory=set)

    def _repr_html_(self) -> str:
        head = "".join(f'<th class="{"num" if c in self.numeric else "text"}">{html.escape(c)}</th>'
                       for c in self.cells.columns)
        rows = []
        for values in self.cells.itertuples(index=False):
            tds = "".join(f'<td class="{"num" if c in self.numeric else "text"}">'
                          f"{html.escape(str(v))}</td>"
                          for c, v in zip(self.cells.columns, values, strict=True))
            rows.append(f"<tr>{tds}</tr>")
        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        return (f'<table class="benchlib">{caption}<thead><tr>{head}</tr></thead>'
                f"<tbody>{''.join(rows)}</tbody></table>")

    def __repr__(self) -> str:
        with pd.option_context("display.max_rows", None, "display.max_columns", None,
                               "display.width", 200):
            return f"{self.cells.to_string(index=False)}\n{self.caption}"


class Tables(list):
    """Several :class:`Table` (a wide table split, or one per unit), shown one after another."""

    def _repr_html_(self) -> str:
        return "".join(t._repr_html_() for t in self)

    def __repr__(self) -> str:
        return "\n\n".join(repr(t) for t in self)


def describe_constant(frame: pd.DataFrame, columns: Iterable[str]) -> str:
    """``model resnet50, GPU cpu, devices 1`` for the columns whose value is the same in every
    row (missing ones left out)."""
    parts = []
    for column in columns:
        value = next((v for v in frame[column] if not missing(v)), None)
        if value is not None:
            parts.append(f"{column_label(column)} {formatter(column)(value)}")
    return ", ".join(parts)


def table(frame: pd.DataFrame, caption: str, *, keep: Sequence[str] = (),
          drop: Sequence[str] = (), missing_reason: str = "not recorded for that run",
          max_columns: int = 11, labels: Mapping[str, str] | None = None,
          say_constant: bool = True) -> Table | Tables:
    """``frame`` for people: varying columns (and ``keep``) named in words with units, values
    formatted, constant configuration said in the caption, a dash for missing values explained
    once, split into several tables of at most ``max_columns`` (the label columns repeated)."""
    frame = frame.reset_index(drop=True).drop(columns=[c for c in drop if c in frame])
    unit = None
    if "unit" in frame and frame["unit"].nunique() == 1:
        unit = str(frame["unit"].dropna().iloc[0])
    empty = [c for c in frame.columns if frame[c].map(missing).all() and c not in keep]
    constant = [c for c in frame.columns if c not in empty and c not in keep and len(frame) > 1
                and _constant(frame, c)]
    shown = [c for c in frame.columns if c not in empty and c not in constant]
    if unit:
        shown = [c for c in shown if c != "unit"]
        constant = [c for c in constant if c != "unit"]
    if not shown:
        shown = list(frame.columns[:1])
    numeric = [c for c in shown if pd.api.types.is_numeric_dtype(frame[c])
               and not pd.api.types.is_bool_dtype(frame[c])
               and c not in IDENTIFIERS]
    names = {c: (labels or {}).get(c) or column_label(c, unit) for c in shown}
    cells = pd.DataFrame({names[c]: frame[c].map(formatter(c)) for c in shown})
    text = caption.rstrip(".") + "."
    said = describe_constant(frame, [c for c in constant if c in SAY_CONSTANT])
    if say_constant and said:
        text += f" Every row: {said}."
    if (cells == DASH).any().any():
        text += f" {DASH} = {missing_reason}."
    number_names = {names[c] for c in numeric}
    if len(shown) <= max_columns:
        return Table(cells, text, number_names)
    label_columns = [names[c] for c in shown if c not in numeric]
    rest = [names[c] for c in shown if names[c] not in label_columns]
    width = max(3, max_columns - len(label_columns))
    chunks = [rest[i:i + width] for i in range(0, len(rest), width)]
    return Tables(Table(cells[[*label_columns, *chunk]],
                        f"{text} (part {i + 1} of {len(chunks)})", number_names)
                  for i, chunk in enumerate(chunks))


def by_unit(frame: pd.DataFrame, caption: str, **options: object) -> Tables:
    """One :func:`table` per throughput unit (images/s and voxels/s never share a column)."""
    if "unit" not in frame or frame["unit"].nunique(dropna=True) <= 1:
        found = table(frame, caption, **options)
        return found if isinstance(found, Tables) else Tables([found])
    out = Tables()
    for unit, rows in frame.groupby(frame["unit"].fillna("no unit"), sort=True):
        found = table(rows, f"{caption} ({unit})", **options)
        out.extend(found if isinstance(found, Tables) else [found])
    return out


#: How a setting reads in a short label: ``batch 16``, ``2 dev``.
LABEL_FORMS = {"batch_size": "batch {}", "num_devices": "{} dev", "num_nodes": "{} nodes",
               "num_workers": "{} workers", "image_size": "{} px", "noise_samples": "{} noise",
               "channels_last": "channels-last {}", "compile": "compile {}",
               "synthetic_kind": "{} tensors"}


def short_labels(df: pd.DataFrame, columns: list[str]) -> pd.Series:
    """One short label per row from ``columns``: numbers named (``batch 16, 2 dev``), missing
    values left out, joined with ", "."""
    if not columns:
        return pd.Series(["all"] * len(df), index=df.index, dtype=object)

    def one(row: pd.Series) -> str:
        parts = [LABEL_FORMS.get(c, "{}").format(_label_value(v)) for c, v in row.items()
                 if not pd.isna(v) and str(v) != ""]
        return ", ".join(parts) or "-"
    return df[list(columns)].apply(one, axis=1).astype(object)


def _label_value(value: object) -> str:
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)


# -- run pages: the parameters that apply, the environment grouped -------------------------

#: Parameters that apply only when a condition on the configuration holds.
APPLIES: dict[str, Callable[[Mapping[str, object]], bool]] = {
    "noise_samples": lambda c: c.get("benchmark") == "smooth_inference",
    "sigma": lambda c: c.get("benchmark") == "smooth_inference",
    "synthetic_kind": lambda c: c.get("dataset") == "synthetic",
    "data_dir": lambda c: c.get("dataset") == "real",
    "num_nodes": lambda c: int(c.get("num_devices") or 1) > 1,
    "node_launcher": lambda c: int(c.get("num_devices") or 1) > 1,
    "scaling": lambda c: int(c.get("num_devices") or 1) > 1,
    "hang_timeout_s": lambda c: int(c.get("num_devices") or 1) > 1,
    "min_time_s": lambda c: c.get("iterations") == "auto",
    "max_time_s": lambda c: c.get("iterations") == "auto",
    "telemetry_interval_s": lambda c: c.get("device") != "cpu",
}
ENVIRONMENT_GROUPS = (
    ("software", ("benchlib", "git_commit", "python", "torch", "torchvision", "cuda", "cudnn",
                  "nccl", "driver", "os", "container", "torch_threads")),
    ("hardware", ("host", "cpu", "cpu_count", "cpus_allowed", "numa_nodes", "memory_bytes",
                  "gpu_names", "gpu_count", "gpu_memory_bytes", "gpu_interconnect", "gpu_nvlinks",
                  "gpu_pcie", "gpu_pcie_now", "data_fs")),
    ("job", ("slurm_cluster_name", "slurm_job_partition", "slurm_job_id", "slurm_array_job_id",
             "slurm_array_task_id", "slurm_job_nodelist")),
)


def config_table(config: object) -> Table:
    """A run's parameters that apply to it (no ``noise_samples`` for training, no multi-node
    settings on one device, ...), one per row."""
    values = config.model_dump() if hasattr(config, "model_dump") else dict(config)  # type: ignore[call-overload]
    rows = [(name, value) for name, value in values.items()
            if APPLIES.get(name, lambda _: True)(values)]
    cells = pd.DataFrame({"parameter": [n for n, _ in rows],
                          "value": [DASH if missing(v) else " ".join(str(v).split())
                                    for _, v in rows]})
    left = len(values) - len(rows)
    caption = "The parameters of this run"
    if left:
        caption += f" ({left} that do not apply to it left out)"
    return Table(cells, caption + ".")


def _environment_value(name: str, value: object) -> str:
    if missing(value):
        return DASH
    if name.endswith("_bytes") and pd.api.types.is_number(value):
        return si(float(value), "B")  # type: ignore[arg-type]
    return " ".join(str(value).split())


def environment_tables(env: Mapping[str, object]) -> Tables:
    """The environment in three tables: software, hardware, job (SLURM, allow-listed
    variables); settings not recorded are left out and named once per table."""
    env = {str(k).removeprefix("env_"): v for k, v in env.items()}
    out = Tables()
    placed: set[str] = set()
    groups = [*ENVIRONMENT_GROUPS,
              ("variables", tuple(sorted(k for k in env if k.startswith("var_"))))]
    for title, names in groups:
        placed.update(names)
        present_names = [n for n in names if n in env and not missing(env[n])]
        if not present_names:
            continue
        cells = pd.DataFrame({"setting": [n.removeprefix("var_") if n.startswith("var_")
                                          else n.removesuffix("_bytes").replace("_", " ")
                                          for n in present_names],
                              "value": [_environment_value(n, env[n]) for n in present_names]})
        absent = [n for n in names if n not in present_names]
        caption = f"Environment: {title}"
        if absent and title != "variables":
            caption += f"; not recorded here: {', '.join(a.replace('_', ' ') for a in absent)}"
        out.append(Table(cells, caption + "."))
    other = [k for k in env if k not in placed and not missing(env[k])]
    if other:
        out.append(Table(pd.DataFrame({"setting": other,
                                       "value": [_environment_value(k, env[k]) for k in other]}),
                         "Environment: other."))
    return out


def mapping_table(mapping: Mapping[str, object], caption: str) -> Table:
    """A mapping as a two-column table (whole values, never cut), for run pages."""
    rows = [(str(k).replace("_", " "), DASH if missing(v) else " ".join(str(v).split()))
            for k, v in mapping.items()]
    return Table(pd.DataFrame({"figure": [k for k, _ in rows], "value": [v for _, v in rows]}),
                 caption.rstrip(".") + ".")
