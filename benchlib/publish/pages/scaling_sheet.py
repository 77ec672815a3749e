"""The scaling sheet in the reference campaigns' own layout (the TensorFlow benchmark sheet).

Rows are device counts; blocks of columns give throughput, speedup, efficiency and energy
efficiency (images/J, ...; unknown where energy was not measured) per configuration, then
"speedup from" each factor (synthetic vs real, batch a vs b, GPU a vs b, model a vs b,
precision a vs b), each block with a median column. Blocks are separate compact tables laid
side by side while they fit (printable, never wider than the page), and the
observations are written out in words from the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from benchlib import formatting
from benchlib.analysis import comparisons, energy
from benchlib.publish.pages import summary
from benchlib.publish.templating import render
from benchlib.records import configuration

#: Factors with a "speedup from" block, in the sheet's order.
SHEET_FACTORS = ("dataset", "batch_size", "gpu", "model", "precision")
FACTOR_NAMES = {"dataset": "data", "batch_size": "batch", "gpu": "GPU", "model": "model",
                "precision": "precision"}


@dataclass
class Block:
    """One block of the sheet: a title, rows per device count, a median column."""

    title: str
    table: pd.DataFrame  # index num_devices, columns configurations + "median"
    kind: str  # throughput | ratio | percent | energy (missing: unknown)


def _value(kind: str, value: object) -> str:
    if formatting.missing(value):
        return formatting.UNKNOWN if kind == "energy" else formatting.DASH
    number = float(value)  # type: ignore[arg-type]
    return {"ratio": formatting.ratio, "percent": formatting.percent}.get(kind, formatting.number)(number)


def blocks(runs: pd.DataFrame) -> list[Block]:
    """Every block of the sheet for runs of one benchmark and unit."""
    runs = summary.scalable(runs)
    unit = str(runs["unit"].dropna().iloc[0]) if runs["unit"].notna().any() else "throughput"
    found = []
    names = {"throughput": unit, "speedup": "speedup", "efficiency": "efficiency"}
    kinds = {"throughput": "throughput", "speedup": "ratio", "efficiency": "percent"}
    for value in ("throughput", "speedup", "efficiency"):
        table = comparisons.scaling_table(runs, value=value)
        table = table.rename(columns=lambda c: _shorten(runs, c))
        found.append(Block(names[value], table, kinds[value]))
    found.append(_energy_block(runs, found[0].table))
    for comparison in summary.comparisons(runs):
        if comparison.factor not in SHEET_FACTORS or "num_devices" not in comparison.pairs:
            continue
        pairs = comparison.pairs
        others = [c for c in pairs.columns if c not in ("num_devices", "a", "b", "ratio", "flags")
                  and not c.startswith(("a_", "b_")) and configuration.varies(pairs[c])]
        words = configuration.written(pairs, others, short=True) if others else "ratio"
        pairs = pairs.assign(configuration=words)
        table = pairs.pivot_table(index="num_devices", columns="configuration", values="ratio",
                                  aggfunc="median")
        table["median"] = table.median(axis=1)
        name = FACTOR_NAMES[comparison.factor]
        a, b = comparison.a, comparison.b
        if comparison.factor == "batch_size":
            a, b = f"{name} {a}", f"{name} {b}"
        elif comparison.factor == "dataset":
            a, b = f"{a} data", f"{b} data"
        found.append(Block(f"speedup from {a} vs {b}", table, "ratio"))
    return found


def _energy_block(runs: pd.DataFrame, throughput: pd.DataFrame) -> Block:
    """Energy efficiency (images/J, ...) per device count, in the throughput block's rows and
    columns: unknown where a configuration's energy was not measured."""
    runs = energy.with_per_joule(runs)
    table = comparisons.scaling_table(runs, metric=energy.COLUMN)
    table = table.rename(columns=lambda c: _shorten(runs, c)).reindex(
        index=throughput.index, columns=[c for c in throughput.columns if c != "median"])
    table["median"] = table.median(axis=1)
    unit = energy.frame_unit(runs)
    return Block(f"energy efficiency ({unit})" if unit else "energy efficiency", table, "energy")


def _shorten(runs: pd.DataFrame, label: object) -> str:
    """scaling_table's configuration names (`` / ``-joined) as short labels."""
    return str(label).replace(" / ", ", ")


def _view(block: Block) -> dict[str, object]:
    """One block for ``templates/pages/sheet.html.j2``: devices down, configurations across,
    the values formatted."""
    columns = [c for c in block.table.columns if c != "median"] + ["median"]
    rows = [(int(devices), [(c, _value(block.kind, row[c])) for c in columns])
            for devices, row in block.table.iterrows()]
    return {"title": block.title, "columns": [str(c) for c in columns], "rows": rows}


def observations(found: Sequence[Block], scope: str = "These runs") -> list[str]:
    """The sheet in words: speedup and efficiency at the most devices, each factor's effect in
    the ``scope`` runs (a section's benchmark: the comparisons page weighs every benchmark)."""
    lines = []
    by_title = {b.title: b for b in found}
    speedup, efficiency = by_title.get("speedup"), by_title.get("efficiency")
    if speedup is not None and len(speedup.table) > 1:
        most, fewest = int(speedup.table.index.max()), int(speedup.table.index.min())
        row = efficiency.table.loc[most].drop("median").dropna()
        median = speedup.table.loc[most, "median"]
        text = (f"From {fewest} to {most} devices the throughput grows {formatting.ratio(median)} "
                f"(median over configurations; ideal {formatting.ratio(most / fewest)}), an "
                f"efficiency of {formatting.percent(efficiency.table.loc[most, 'median'])}")
        if len(row) > 1:
            text += (f", from {formatting.percent(row.min())} ({row.idxmin()}) to "
                     f"{formatting.percent(row.max())} ({row.idxmax()})")
        lines.append(text + ".")
        if (row > 1.1).any():
            lines.append("An efficiency above 110 % is superlinear: the baseline run was "
                         "probably slowed down (see the flags at the top); re-run it before "
                         "trusting these speedups.")
    for block in found:
        if not block.title.startswith("speedup from"):
            continue
        values = block.table.drop(columns="median").stack().dropna()
        if values.empty:
            continue
        median = float(values.median())
        what = block.title.removeprefix("speedup from ")
        first, second = what.split(" vs ", 1)
        verb = "faster than" if median > 1 else "slower than"
        factor = median if median >= 1 else 1 / median
        over = (f"median of {len(values)} pairs over the device counts, from "
                f"{formatting.ratio(values.min())} to {formatting.ratio(values.max())}"
                if len(values) > 1 else f"one pair: {formatting.ratio(median)}")
        lines.append(f"{scope}: {first} runs {formatting.ratio(factor)} {verb} "
                     f"{second} ({over}; the comparisons page gives this factor's geometric "
                     "mean ratio over every benchmark).")
    return lines


class Sheet:
    """The sheet for one campaign: a section per benchmark and unit (HTML in notebooks and
    pages, with the observations as a list under the blocks)."""

    def __init__(self, runs: pd.DataFrame) -> None:
        self.sections: list[tuple[str, list[Block]]] = []
        runs = summary.scalable(comparisons.benchmarks(comparisons.ok(runs)))
        keys = [c for c in ("benchmark", "unit") if c in runs]
        for key, rows in runs.groupby(keys, dropna=False, sort=True) if len(runs) else []:
            if not configuration.varies(rows["num_devices"]):
                continue
            title = " ".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
            self.sections.append((title, blocks(rows)))

    def __bool__(self) -> bool:
        return bool(self.sections)

    def _repr_html_(self) -> str:
        sections = [{"title": title, "blocks": [_view(b) for b in found],
                     "observations": observations(found, title)} for title, found in self.sections]
        return render("sheet.html.j2", sections=sections)

    def __repr__(self) -> str:
        parts = []
        for title, found in self.sections:
            parts.append(title)
            for block in found:
                parts.append(f"{block.title}\n{block.table.to_string()}")
            parts.extend(observations(found, title))
        return "\n\n".join(parts)
