"""Tables for people: column names in words with units, readable numbers, captions.

:func:`table` turns an analysis frame into a :class:`Table`: only the columns that vary (the
constant configuration is said once in the caption), each named in words with its unit,
numbers formatted for reading (``1.93x``, ``96.4 %``, ``1.27 GB``, ``52 GFLOP/s``, ``12.3 ms``),
missing values as a dash explained once (a missing energy figure as "unknown", explained
once), a caption under it; a wide table scrolls inside its own
box (never split, never wider than the page). Every text is HTML-escaped (``templates/pages/table.html.j2``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from benchlib import registry
from benchlib.analysis import energy
from benchlib.analysis.tables import config_columns
from benchlib.formatting import (
    DASH,
    ENERGY_COLUMNS,
    IDENTIFIERS,
    UNKNOWN,
    column_label,
    formatter,
    missing,
    si,
)
from benchlib.publish.templating import render
from benchlib.records import configuration, flags, schema

#: Settings a one-row table keeps as columns when it says its other settings in the caption.
NAMED_IN_ROW = ("benchmark", "model")


def _constant(frame: pd.DataFrame, column: str) -> bool:
    return not configuration.varies(frame[column], missing_too=True)


@dataclass
class Table:
    """A table ready to show: cell texts, which columns are numbers, caption; HTML in
    notebooks and pages (:meth:`_repr_html_`), aligned text elsewhere."""

    cells: pd.DataFrame
    caption: str
    numeric: set[str] = field(default_factory=set)

    def _repr_html_(self) -> str:
        columns = list(self.cells.columns)
        rows = [list(zip(columns, map(str, values), strict=True))
                for values in self.cells.itertuples(index=False)]
        return render("table.html.j2", caption=self.caption, columns=columns, rows=rows,
                      numeric=self.numeric)

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


def results_first(frame: pd.DataFrame, shown: Sequence[str], keep: Sequence[str] = ()) -> list[str]:
    """``shown`` with the results (speed, ratio, verdict, flags: every column that is not a
    setting) right after the settings that name the row (:data:`NAMED_IN_ROW`, else the first),
    the other settings after them: on a phone the values are in the first view."""
    settings = set(config_columns(frame)) - set(keep)
    named = ([c for c in shown if c in settings and c in NAMED_IN_ROW]
             or [c for c in shown if c in settings][:1])
    return [*named, *(c for c in shown if c not in settings),
            *(c for c in shown if c in settings and c not in named)]


def table(frame: pd.DataFrame, caption: str, *, keep: Sequence[str] = (),
          drop: Sequence[str] = (), missing_reason: str = "not recorded for that run",
          max_columns: int = 11, labels: Mapping[str, str] | None = None,
          say_constant: bool = True) -> Table | Tables:
    """``frame`` for people: varying columns (and ``keep``) named in words with units, values
    formatted, constant configuration said in the caption, a dash for missing values explained
    once. A table is never split: a wide one scrolls inside its own box on the page; one row
    wider than ``max_columns`` says its settings in the caption (beside :data:`NAMED_IN_ROW`
    and ``keep``), so that its numbers are on the first screen."""
    frame = frame.reset_index(drop=True).drop(columns=[c for c in drop if c in frame])
    # lists and mappings (a pair's log speeds) are for the analysis, never for reading
    frame = frame.drop(columns=[c for c in frame.columns if c not in keep
                                and frame[c].dtype == object and frame[c].map(
                                    lambda v: isinstance(v, list | tuple | dict | set)).any()])
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
    shown = results_first(frame, shown, keep)
    numeric = [c for c in shown if pd.api.types.is_numeric_dtype(frame[c])
               and not pd.api.types.is_bool_dtype(frame[c])
               and c not in IDENTIFIERS]
    per_joule = energy.frame_unit(frame)  # samples_per_joule's unit: images/J, ...
    names = {c: (labels or {}).get(c) or column_label(c, per_joule if c == energy.COLUMN else unit)
             for c in shown}
    cells = pd.DataFrame({names[c]: frame[c].map(formatter(c)) for c in shown})
    text = caption.rstrip(".") + "."
    said = describe_constant(frame, [c for c in constant if c in schema.said_once()])
    if say_constant and said:
        text += f" Every row: {said}."
    if (cells == DASH).any().any():
        text += f" {DASH} = {missing_reason}."
    if any(c in ENERGY_COLUMNS for c in shown) and (cells == UNKNOWN).any().any():
        text += f" {energy.UNKNOWN_NOTE}."
    if len(shown) > max_columns and len(frame) == 1:  # one wide row: its settings in words
        said = [c for c in config_columns(frame) if c in shown and c not in keep
                and c not in NAMED_IN_ROW]
        text = text.rstrip(".") + (f". Its settings: {describe_constant(frame, said)}."
                                   if said else ".")
        cells = cells.drop(columns=[names[c] for c in said])
    return Table(cells, text, {names[c] for c in numeric})


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


# -- run pages: the parameters that apply, the environment grouped -------------------------

def _takes(config: Mapping[str, object], name: str) -> bool:
    """Whether the configuration's benchmark takes parameter ``name`` (its registry entry does
    not ignore it)."""
    entry = registry.by_benchmark(config.get("benchmark"))
    return entry is None or name not in entry.ignores


#: Parameters that apply only when a condition on the configuration holds.
APPLIES: dict[str, Callable[[Mapping[str, object]], bool]] = {
    "noise_samples": lambda c: _takes(c, "noise_samples"),
    "sigma": lambda c: _takes(c, "sigma"),
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


def marked_rows(frame: pd.DataFrame, labels: Sequence[str]) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """``frame`` ready for :func:`table`: the ``labels`` that
    tell its rows apart (those that vary: devices, data, ...) first, then, where a row is
    flagged, its flags as ``⚠ contended, short``, then the rest; and the columns the table must
    keep where they are (its ``keep``). The settings come in the schema's order (benchmark,
    model, ..., devices, data: :func:`benchlib.records.schema.describing`)."""
    order = {name: place for place, name in enumerate(schema.describing())}
    apart = sorted(configuration.varying(frame, labels, missing_too=True),
                   key=lambda c: order.get(c, len(order)))
    marks = frame.get("flags", pd.Series("", index=frame.index))
    out = frame.drop(columns=["flags"], errors="ignore")
    out = out[[*apart, *(c for c in out.columns if c not in apart)]]
    if not any(flags.of(value) for value in marks):
        return out, tuple(apart)
    out.insert(len(apart), "flags", [flags.warned(value) for value in marks])
    return out, (*apart, "flags")
