"""Numbers and column names for people: ``1.93x``, ``96.4 %``, ``1.27 GB``, ``52.0 GFLOP/s``,
``12.3 ms``; columns named in words with their unit; short labels such as ``batch 16, 2 dev``.

Pure functions of values, used wherever a sentence or a table shows a figure (analysis's
verdicts and effects, the report's tables and plots). A column's words, unit and how its numbers
are shown come from its entry (:func:`benchlib.records.schema.described`: the record's columns,
and those analysis adds, :mod:`benchlib.records.derived`), so this module sits at the records
layer.
"""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Callable

import numpy as np
import pandas as pd

from benchlib.records import schema

DASH = "–"
#: Energy figures: missing is shown as "unknown" (energy not measured), never as 0 or a dash.
ENERGY_COLUMNS = ("energy_j", "joules_per_sample", "samples_per_joule")
UNKNOWN = "unknown"
#: A unit at the end of a record column's name, dropped where the unit is shown beside it.
UNIT_SUFFIX = re.compile(r" (per s|GBps|MBps|s|us|w|mhz|c|j)$")
SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
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
    """A number for reading: thousands separated, about 3 significant digits, no exponent
    (but beyond 1e15, where digits stop being readable: ``1e+308``, never 309 digits)."""
    magnitude = abs(value)
    if magnitude >= 1e15:
        return f"{value:.3g}"
    if magnitude >= 100 or (value == int(value) and magnitude < 1e15):
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    if magnitude >= 0.001:
        return f"{value:.3g}"
    return f"{value:.1e}"


def or_blank(say: Callable[[float], str]) -> Callable[[object], str]:
    """``say`` for a number, an empty cell for a missing value (a table's formatter)."""
    return lambda value: "" if missing(value) else say(float(value))  # type: ignore[arg-type]


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
    """``0.964`` -> ``96.4 %`` (``points``: the value is already 0-100); a share that would
    round to ``0.0 %`` says how small it is (``0.004 %``), never 0."""
    value = value if points else value * 100
    if 0 < abs(value) < 0.05:
        return f"{value:.1g} %"
    return f"{value:.0f} %" if abs(value) >= 100 else f"{value:.1f} %"


def milliseconds(seconds: float) -> str:
    """Seconds as ``12.3 ms`` figures (no unit: the column says ms)."""
    return number(seconds * 1e3)


def tflops(value: float) -> str:
    """TFLOP/s as ``52.0 GFLOP/s`` or ``312 TFLOP/s``."""
    return si(value * 1e12, "FLOP/s")


def kind(column: str) -> str:
    """What a column holds, for naming and formatting: ratio, percent, ms, bytes, flops,
    tflops, throughput or plain (its entry's ``shown``, else its name's pattern)."""
    entry = schema.described(column)
    shown = entry.shown if entry is not None else ""
    if shown in ("ratio", "tflops", "throughput"):
        return shown
    if shown in ("percent", "points"):
        return "percent"
    if re.fullmatch(r"time_\w+_s", column):
        return "ms"
    if column.endswith("_bytes"):
        return "bytes"
    if column == "flops_per_sample":
        return "flops"
    return "plain"


def _points(column: str) -> bool:
    """Whether a percentage column holds 0-100 already (``gpu_util_mean``), not a 0-1 share."""
    entry = schema.described(column)
    return entry is not None and entry.shown == "points"


def column_label(column: str, unit: str | None = None) -> str:
    """``time_data_s`` -> ``data wait (ms)``; ``throughput`` with unit images/s ->
    ``throughput (images/s)``; ``samples_per_joule`` with unit images/J -> ``energy efficiency
    (images/J)``."""
    if column == "time_iteration_s":
        return "iteration (ms)"
    if column == "time_data_s":
        return "data wait (ms)"
    if match := re.fullmatch(r"time_(\w+)_s", column):
        return f"{match.group(1)} (ms)"
    entry = schema.described(column)
    name = schema.label(column)
    if column == "samples_per_joule" and unit:  # the per-joule unit (images/J), not images/s
        return f"{name} ({unit})"
    if entry is not None and entry.unit == "unit":  # in the run's throughput unit
        prefix = {"throughput_low": "within-run 95 % low", "throughput_high": "within-run 95 % high"}
        return f"{prefix.get(column, name)} ({unit})" if unit else name
    if entry is None:
        return name
    if entry.role == "derived":
        return f"{name} ({entry.unit})" if entry.unit else name
    shown = entry.unit if _unit_in_label(column, entry) else ""
    if shown and not entry.label:
        name = UNIT_SUFFIX.sub("", name)  # memory_GBps: "memory (GB/s)"
    return f"{name} ({shown})" if shown else name


def _unit_in_label(column: str, entry: schema.Column) -> bool:
    """Whether a record column's name carries its schema unit: measured quantities shown as bare
    numbers (and pixel sizes); counts are named by what they count, and percentages, times,
    bytes and FLOPs carry their unit in each value."""
    if entry.unit in ("", "unit", "unit/J") or kind(column) != "plain":
        return False
    return entry.dtype == "float" or entry.unit == "px"


def formatter(column: str) -> Callable[[object], str]:
    """The function that shows one value of ``column`` (missing values as :data:`DASH`)."""
    shown = {"ratio": ratio, "ms": milliseconds, "bytes": lambda v: si(v, "B"),
             "flops": lambda v: si(v, "FLOP"), "tflops": tflops,
             "percent": lambda v: percent(v, _points(column))}.get(kind(column), number)

    def show(value: object) -> str:
        if missing(value):
            return "" if column == "flags" else UNKNOWN if column in ENERGY_COLUMNS else DASH
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
        parts = [LABEL_FORMS.get(c, "{}").format(label_value(v)) for c, v in row.items()
                 if not pd.isna(v) and str(v) != ""]
        return ", ".join(parts) or "-"
    return df[list(columns)].apply(one, axis=1).astype(object)


def literal(text: object) -> str:
    """``text`` as matplotlib shows it, literally: every ``$`` escaped, so record text (a
    cluster named ``$\\frac{1}{$``) never starts mathtext. The one escape for plot labels."""
    return str(text).replace("$", r"\$")


def label_value(value: object) -> str:
    """A setting's value in a label: a whole float as an integer (``32``, not ``32.0``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


#: Where no terminal says (a pipe, a file), the width output is fitted to.
DEFAULT_WIDTH = 100


def terminal_width() -> int:
    """The terminal's columns (``$COLUMNS`` first), else :data:`DEFAULT_WIDTH`."""
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def error_line(line: str) -> str:
    """``line`` wrapped to the terminal, continued indented, where a person reads it (stderr a
    terminal); whole in a log or a pipe, for whoever searches it."""
    import sys
    import textwrap

    if not sys.stderr.isatty():
        return line
    return textwrap.fill(line, terminal_width(), subsequent_indent="  ",
                         break_long_words=False, break_on_hyphens=False)
