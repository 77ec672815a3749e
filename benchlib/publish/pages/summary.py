"""What the summary notebooks show: the campaign's records, the comparisons its data supports,
and plain sentences about what is missing."""

from __future__ import annotations

import html
import itertools
import re
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import pandas as pd

from benchlib import PROJECT_ROOT, formatting, registry
from benchlib.analysis.comparisons import (
    aggregate,
    compare,
    config_columns,
    effect,
    ok,
)
from benchlib.analysis.intervals import HEADLINE, HEADLINE_NAME, describe_effect
from benchlib.analysis.lab_units import has_lab_units
from benchlib.publish import local_paths
from benchlib.records import configuration, flags, schema
from benchlib.records.results import CORE_COLUMNS, INTEGER_COLUMNS, load
from benchlib.vocabulary import Precision

#: Characters with a meaning in Markdown (or nbconvert's math), escaped by :func:`md_text`.
MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#!|~$^])")
#: A list marker starting the text (``-``, ``+``, ``1.``), escaped by :func:`md_text`.
LIST_MARKER = re.compile(r"^(\d*)([-+.])(?=\s|$)")
PREFERRED_B = {"dataset": "real", "precision": Precision.FP32.value, "channels_last": False,
               "compile": "none", "synthetic_kind": "loader"}


@dataclass(frozen=True)
class Comparison:
    """One paired comparison: ``factor`` a vs b, its table and its geometric mean ratio."""

    factor: str
    a: object
    b: object
    metric: str
    pairs: pd.DataFrame
    benchmark: str = ""  #: the benchmark the pairs come from, where the campaign ran several

    @property
    def title(self) -> str:
        scope = f"{self.benchmark}, " if self.benchmark else ""
        return f"{self.factor.replace('_', ' ')}: {self.a} vs {self.b} ({scope}{self.metric})"

    @property
    def headline(self) -> float:
        return float(self.effect[HEADLINE])

    @cached_property
    def effect(self) -> dict[str, object]:
        """The geometric mean ratio with its 95 % interval (computed once: ``effect``)."""
        return effect(self.pairs)

    @property
    def sentence(self) -> str:
        """``batch size: 16 vs 8 (throughput): 1.93x (1.85-2.01), significant``, as text."""
        return f"{self.title}: {describe_effect(self.effect)}"


def md_text(value: object) -> str:
    """``value`` as literal text inside Markdown: HTML escaped, Markdown syntax (links, images,
    emphasis, code, math, headings, a leading list marker) backslash-escaped, one line."""
    text = html.escape(" ".join(str(value).split()), quote=False)
    return LIST_MARKER.sub(r"\1\\\2", MARKDOWN_SPECIAL.sub(r"\\\1", text))


def load_results(results_dir: str | Path) -> pd.DataFrame:
    """Every record under ``results_dir`` (a relative path found as
    :func:`resolve_results_dir` finds it), local paths relative (:mod:`~benchlib.publish
    .local_paths`); a clear error when the folder is missing or empty."""
    frame = load(resolve_results_dir(results_dir))
    if frame.empty:
        raise FileNotFoundError(f"no result records under {str(results_dir)!r}: run a sweep first "
                                "(benchlib sweep params/X.yaml)")
    return as_read(with_core_columns(frame))


def as_read(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s path columns as a report's pages read and show them (relative to the root
    the report was built from, where it runs in a report): a catalog's runs read beside a
    campaign pair with its configurations only when read the same way."""
    return local_paths.relative_columns(frame, local_paths.configured_root())


def with_core_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every core record column, missing ones empty (counts as ``Int64``,
    measurements as floats): a campaign of failed runs alone has no ``throughput``."""
    added = {}
    for column in CORE_COLUMNS:
        if column in frame:
            continue
        if column in INTEGER_COLUMNS:
            added[column] = pd.Series(pd.NA, index=frame.index, dtype="Int64")
        elif schema.column(column).dtype in ("text", "bool", "shape"):  # type: ignore[union-attr]
            added[column] = pd.Series(None, index=frame.index, dtype=object)
        else:
            added[column] = pd.Series(float("nan"), index=frame.index, dtype=float)
    return frame.assign(**added)


def overview(df: pd.DataFrame) -> pd.DataFrame:
    """Runs per benchmark and status."""
    columns = [c for c in ("benchmark", "status") if c in df]
    return df.groupby(columns, dropna=False).size().rename("runs").reset_index()


def missing(df: pd.DataFrame) -> list[str]:
    """Plain sentences naming what this campaign's data cannot show (record values in them
    verbatim: show them with :func:`bullet_list`)."""
    done = ok(df)
    notes = []
    if done.empty:
        return ["No finished run: every run failed (see the failed runs below)."]
    if not configuration.varying(done, ["num_devices"]):
        notes.append("No multi-device runs: speedup and efficiency need runs on several "
                     "devices (num_devices 1, 2, 4, 8).")
    datasets = set(done.get("dataset", pd.Series(dtype=object)).dropna())
    if "real" not in datasets:
        notes.append("No real-data runs: synthetic vs real data cannot be compared.")
    if "synthetic" not in datasets:
        notes.append("No synthetic-data runs: the data pipeline's cost cannot be separated.")
    for column, what in (("batch_size", "batch sizes"), ("gpu", "GPU types"),
                         ("precision", "precisions"), ("cluster", "clusters")):
        values = done[column].dropna() if column in done else pd.Series(dtype=object)
        values = values[values.astype(str) != ""]  # a probe's precision is '', not a value
        if len(values) and not configuration.varies(values):  # runs without the column (probes) aside
            notes.append(f"One {column.replace('_', ' ')} only ({values.iloc[0]}): "
                         f"no comparison across {what}.")
    if "gpu" in done and (done["gpu"] == "cpu").all():
        notes.append("CPU-only runs: these show the method, not GPU performance.")
    return notes


def _ordered(factor: str, values: list) -> list[tuple[object, object]]:
    if factor in PREFERRED_B and PREFERRED_B[factor] in values:
        b = PREFERRED_B[factor]
        return [(a, b) for a in values if a != b]
    if all(isinstance(v, (int, float)) for v in values):
        values = sorted(values)
        return [(values[i + 1], values[i]) for i in range(len(values) - 1)]  # larger vs smaller
    return list(itertools.combinations(sorted(values, key=str), 2))


def comparisons(df: pd.DataFrame, metric: str = "throughput") -> list[Comparison]:
    """Every paired comparison the data supports (factors with two or more values that pair),
    per benchmark where the campaign ran several: an effect on ResNet training and one on the
    U-Net are two statements, never one pooled ratio."""
    done = ok(df)
    if configuration.varying(done, ["benchmark"]):
        return [replace(c, benchmark=str(name)) for name, runs in
                done.groupby("benchmark", sort=False) for c in comparisons(runs, metric)]
    found = []
    for factor in schema.factors():
        if factor not in done:
            continue
        values = [v for v in done[factor].dropna().unique().tolist() if v != ""]
        if len(values) < 2:
            continue
        for a, b in _ordered(factor, values):
            pairs = compare(done, factor, a, b, metric=metric)
            if len(pairs):
                found.append(Comparison(factor, a, b, metric, pairs))
    return found


def headlines(found: list[Comparison]) -> pd.DataFrame:
    """One row per comparison: what, the geometric mean ratio, its 95 % interval and what it is made from,
    whether it is significant (``unreliable`` when contended or throttled runs are behind it,
    ``unknown`` with one run a side: nothing to judge it by, never "no"),
    pairs, and the flags of the runs behind it."""
    rows = []
    for c in found:
        effect = c.effect
        interval = f"{effect['low']:.2f}-{effect['high']:.2f}" if effect["known"] else "unknown"
        names = {n for text in c.pairs.get("flags", []) for n in flags.of(text)}
        significant = ("unreliable" if effect.get("unreliable")  # one run each: not judged
                       else "unknown" if not effect["known"]
                       else "yes" if effect["significant"] else "no")
        rows.append({"comparison": c.title, HEADLINE_NAME: effect[HEADLINE],
                     "95 % interval": interval, "interval from": effect.get("method", ""),
                     "significant": significant,
                     "pairs": len(c.pairs), "flags": flags.join(names)})
    return pd.DataFrame(rows)


def factors_that_matter(found: list[Comparison]) -> str:
    """Markdown: which comparisons show a significant effect and which do not."""
    if not found:
        return "No factor has two values that pair: nothing to compare."
    significant = [md_text(c.sentence) for c in found if c.effect["significant"]]
    unreliable = [md_text(c.sentence) for c in found if c.effect.get("unreliable")]
    others = [md_text(c.sentence) for c in found
              if not c.effect["significant"] and not c.effect.get("unreliable")]
    parts = []
    if unreliable:
        parts.append("**Unreliable** (contended or throttled runs behind them: no verdict):\n"
                     + "\n".join(f"- {line}" for line in unreliable))
    if significant:
        parts.append("**Significant** (the 95 % interval excludes 1.0):\n"
                     + "\n".join(f"- {line}" for line in significant))
    if others:
        parts.append("**No significant effect** (or too few pairs to tell):\n"
                     + "\n".join(f"- {line}" for line in others))
    return "\n\n".join(parts)


#: Runs a sentence names before "and N more".
NAMED_RUNS = 5


def run_names(rows: pd.DataFrame) -> str:
    """Markdown naming ``rows``' runs by their notebooks (``train-3, train-7 and 4 more``)."""
    names = [md_text(Path(str(s)).stem) for s in rows.get("source", pd.Series(dtype=object)).dropna()]
    last = f"{len(rows) - NAMED_RUNS} more" if len(names) > NAMED_RUNS else names.pop() if names else ""
    return f"{', '.join(names[:NAMED_RUNS])} and {last}" if names else last


def scalable(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that scaling tables can use: a device count and a throughput recorded (the
    count as a plain integer: ratios of nullable ones are nullable, which float columns refuse)."""
    if "num_devices" not in runs or "throughput" not in runs:
        return runs.iloc[0:0]
    found = runs.dropna(subset=["num_devices", "throughput"])
    return found.astype({"num_devices": "int64", "throughput": "float64"})


def varying(table: pd.DataFrame, candidates: list[str] | None = None) -> list[str]:
    """Configuration columns of ``table`` with more than one value (labels for plots)."""
    candidates = candidates or config_columns(table)
    found = configuration.varying(table, candidates, missing_too=True)
    return found or [c for c in candidates if c in table][:1]


def bullet_list(lines: list[str], empty: str) -> str:
    """Markdown bullets of plain-text ``lines`` (escaped, :func:`md_text`), or ``empty`` when
    there are none."""
    return "\n".join(f"- {md_text(line)}" for line in lines) if lines else empty


def describe(df: pd.DataFrame, results_dir: str | Path) -> str:
    """One Markdown line: how many runs were loaded, finished and failed, and from which
    campaign folder: as given when relative, by its name when absolute or a report's own
    ``../<campaign>`` (a report names no folder of the machine that built it)."""
    done = len(ok(df))
    given = Path(results_dir)
    where = (f"campaign folder {given.name}" if given.is_absolute() or given.parts[:1] == ("..",)
             else str(results_dir))  # a report's own ../<campaign>: by its name
    return (f"**{len(df)} runs** in {md_text(where)}: {done} finished, "
            f"{len(df) - done} failed.")


def shown_path(path: str | Path) -> str:
    """A path for a page: as given when relative, its name when absolute (a report names no
    folder of the machine that built it)."""
    return Path(path).name if Path(path).is_absolute() else str(path)


# -- what the summary pages display (tables for people, built from the analysis frames) -----

#: The reference 3D U-Net (the CREMI network of the reference era), in parameters.
REFERENCE_UNET_PARAMETERS = 95.9e6


def resolve_results_dir(results_dir: str | Path) -> Path:
    """``results_dir`` as given when it exists; a relative one not found from the working
    directory (JupyterLab runs a notebook in its own folder, ``notebooks/``) is looked up from
    each parent folder and from the project root."""
    path = Path(results_dir).expanduser()
    if path.is_absolute() or path.exists():
        return path
    here = Path.cwd().resolve()
    project = PROJECT_ROOT
    for base in (*here.parents, project):
        if (base / path).exists():
            return base / path
    return path


def overview_table(df: pd.DataFrame) -> object:
    """:func:`overview` as a table for people."""
    from benchlib.publish.pages import present

    return present.table(overview(df), "Runs per benchmark and status", keep=("runs",))


def throughput_tables(runs: pd.DataFrame) -> object:
    """Median throughput and energy efficiency (``samples_per_joule``: images/J, ...; unknown
    where energy was not measured) per configuration (repeats aggregated), one table per unit."""
    from benchlib.analysis import energy
    from benchlib.publish.pages import present

    table = aggregate(flags.with_flags(energy.with_per_joule(runs)), also=(energy.COLUMN,))
    if "unit" not in table and "unit" in runs:
        table["unit"] = runs["unit"].iloc[0]
    order = [c for c in ("benchmark", "model", "dataset", "batch_size", "precision", "num_devices")
             if c in table]
    table = table.sort_values(order, na_position="last", kind="stable") if order else table
    return present.by_unit(table, "Median throughput and energy efficiency per configuration "
                                  "over its repeats (runs: how many repeats; spread: IQR / "
                                  "median of throughput between them)",
                           keep=("throughput", energy.COLUMN))


def effects_table(found: list[Comparison]) -> object:
    """:func:`headlines` as a table for people."""
    from benchlib.publish.pages import present

    frame = headlines(found)
    return present.table(frame, f"Each factor's effect on throughput: {HEADLINE_NAME} a / b over "
                                "the pairs, its 95 % interval, and whether it is significant",
                         keep=("comparison", HEADLINE_NAME, "significant"), say_constant=False)


def pairs_table(comparison: Comparison) -> object:
    """One comparison's pairs, one table per unit: the settings that vary, the ratio, then a
    and b with the unit."""
    from benchlib.publish.pages import present

    pairs = comparison.pairs.drop(columns=[c for c in comparison.pairs
                                           if c.startswith(("a_", "b_"))])
    # the answer first: the ratio before the two speeds it divides (in view on a phone)
    pairs = pairs[[c for c in pairs if c not in ("a", "b")] + [c for c in ("a", "b") if c in pairs]]
    units = pairs["unit"].fillna("") if "unit" in pairs else pd.Series("", index=pairs.index)
    out = present.Tables()
    for unit, rows in pairs.groupby(units, sort=True):
        suffix = f" ({unit})" if unit else ""
        labels = {side: f"{comparison.factor.replace('_', ' ')} {value}{suffix}"
                  for side, value in (("a", comparison.a), ("b", comparison.b))}
        found = present.table(rows, f"Pairs of runs equal in every other setting: "
                                    f"{comparison.title}{', ' + unit if unit else ''}; "
                                    "ratio = a / b", keep=("a", "b", "ratio"), labels=labels)
        out.extend(found if isinstance(found, present.Tables) else [found])
    return out


def breakdown_table(table: pd.DataFrame, caption: str) -> object:
    """:func:`benchlib.analysis.comparisons.breakdown` as a table for people (milliseconds per
    phase): what tells the rows apart first, a flagged row's ⚠ beside it
    (:func:`~benchlib.publish.pages.present.marked_rows`), then the times."""
    from benchlib.publish.pages import present

    first = [c for c in ("time_iteration_s", "bottleneck", "data_share") if c in table]
    labels = [c for c in table.columns if not c.startswith("time_") and c not in first
              and c not in ("count", "flags")]
    frame, apart = present.marked_rows(table[[*labels, *first, *table.columns.difference(
        [*labels, *first], sort=False)]], labels)
    return present.table(frame, caption, keep=(*apart, "time_iteration_s", "bottleneck"))


def training_runs(done: pd.DataFrame) -> pd.DataFrame:
    """Finished training runs (their iterations are optimizer steps: :func:`registry.training`)."""
    return done[done.get("benchmark", pd.Series(dtype=object)).isin(registry.training())]


def unet_caveat(unet: pd.DataFrame, done: pd.DataFrame) -> str:
    """Markdown: a caveat when this campaign's 3D U-Net differs from the reference network."""
    if "result_parameters" not in done:
        return ""
    counts = pd.to_numeric(done.loc[has_lab_units(done), "result_parameters"],
                           errors="coerce").dropna()
    if counts.empty:
        return ""

    low, high = counts.min(), counts.max()
    ours = (formatting.si(low, "") if low == high
            else f"{formatting.si(low, '')} to {formatting.si(high, '')}").strip()
    ratio = REFERENCE_UNET_PARAMETERS / high
    if 0.8 <= ratio <= 1.25:
        return ""
    size = f"{ratio:,.0f}x fewer" if ratio > 1 else f"{1 / ratio:,.1f}x more"
    return (f"**Caveat**: this campaign's 3D U-Net has {ours} parameters, the reference "
            f"network {formatting.si(REFERENCE_UNET_PARAMETERS, '').strip()} ({size}): the "
            "bars show the method, not a like-for-like comparison.")


def described(table: pd.DataFrame) -> list[str]:
    """The settings that describe a run (the schema's ``describes``) and vary in ``table``:
    labels for tables and plots (a network's internals stay on the run pages)."""
    return varying(table, [c for c in schema.describing() if c in table])
