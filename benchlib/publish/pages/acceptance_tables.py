"""What the acceptance page of the report shows, built from
:func:`benchlib.analysis.references.check` (the fleet and compare pages are
:mod:`benchlib.fleet.tables` and :mod:`benchlib.compare.tables`).

Sentences returned for Markdown have every record text escaped (:func:`summary.md_text`); the
``*_lines`` functions return plain text (the index escapes it as HTML). Tables are
:class:`benchlib.publish.pages.present.Table` (escaped when shown).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from benchlib import formatting, reference
from benchlib.analysis import references
from benchlib.publish.pages import present
from benchlib.publish.pages.summary import md_text
from benchlib.records import configuration, schema
from benchlib.vocabulary import CheckVerdict, MatmulPrecision

#: Verdicts of a check row with a reference that applied.
CHECKED = (CheckVerdict.PASS, CheckVerdict.FAIL, CheckVerdict.UNRELIABLE, CheckVerdict.NO_MEASUREMENT)


def short_source(source: object) -> str:
    """The first clause of a reference's source (``NVIDIA DeepLearningExamples``)."""
    return re.split(r"[,;]", str(source), maxsplit=1)[0].strip()[:100]




def check(df: pd.DataFrame, refs: Sequence[references.Reference]) -> pd.DataFrame:
    """:func:`references.check`, each run's configuration as a short label of the settings
    that vary in the campaign (``train resnet50, batch 32, real``)."""
    checked = references.check(df, list(refs))
    shown = df.reset_index(drop=True)
    names = [references._run_name(row, i) for i, row in enumerate(shown.to_dict("records"))]
    if configuration.varying(df, schema.describing()) and len(set(names)) == len(names):
        labels = configuration.label(shown, schema.describing(), short=True)
        checked["configuration"] = checked["run"].map(dict(zip(names, labels, strict=True)))
    return checked


def _run_verdicts(checked: pd.DataFrame) -> pd.Series:
    """Per run: fail (any row failed), pass (every row passed), run failed, or no reference."""
    def one(verdicts: pd.Series) -> str:
        found = set(verdicts)
        for verdict in (CheckVerdict.RUN_FAILED, CheckVerdict.FAIL, CheckVerdict.NO_MEASUREMENT,
                        CheckVerdict.UNRELIABLE):
            if verdict in found:
                return verdict.value
        return (CheckVerdict.PASS if found == {CheckVerdict.PASS} else CheckVerdict.NO_REFERENCE).value
    return checked.groupby("run", sort=False)["verdict"].agg(one)


def slower_text(row: pd.Series | dict) -> str:
    """``0.17x the expected speed: 5.8x slower than it should be`` (or ``1.05x the expected
    speed``), plain text."""
    ratio = float(row["ratio"])
    if 0 < ratio < 1:
        return f"{ratio:.2f}x the expected speed: {1 / ratio:.1f}x slower than it should be"
    return f"{ratio:.2f}x the expected speed"


def _failure(row: dict) -> str:
    if row["verdict"] == CheckVerdict.NO_MEASUREMENT:
        return f"{row['run']} ({row['configuration']}): no {row['metric']} recorded"
    ratio = float(row["ratio"])
    if not ratio > 0:  # nothing measured (0), or not a finite number: the check's own words
        return f"{row['run']} ({row['configuration']}): {row['message']}"
    if row["measured"] > row["high"]:
        return (f"{row['run']} ({row['configuration']}): {ratio:.2f}x the expected speed, "
                f"above the upper bound of {row['reference']} ({row['reference_source']})")
    return (f"{row['run']} ({row['configuration']}): {ratio:.2f}x the expected speed, "
            f"{1 / ratio:.2f}x slower than expected by {row['reference']} "
            f"({row['reference_source']})")


def nothing_matches(df: pd.DataFrame) -> str:
    """Why no reference matched, for the sentence: CPU runs, or no reference for these GPUs."""
    gpus = set(df.get("gpu", pd.Series(dtype=object)).dropna().astype(str))
    if gpus and gpus <= {"cpu"}:
        return "CPU runs"
    return "no shipped reference lists these GPUs, models and settings"


def headline(checked: pd.DataFrame, df: pd.DataFrame, given: bool = False) -> str:
    """The sentence on top of the acceptance page (Markdown, record text escaped): how many
    runs pass and fail, each failure with its slowdown and the reference's source."""
    if not checked["verdict"].isin(CHECKED).any():
        where = "the references file's list" if given else "the shipped references"
        return (f"**No reference matches these runs** ({md_text(nothing_matches(df))}); see "
                f"{where} below.")
    per_run = _run_verdicts(checked)
    judged = per_run[per_run.isin((CheckVerdict.PASS, CheckVerdict.FAIL, CheckVerdict.NO_MEASUREMENT))]
    failing = (per_run == CheckVerdict.FAIL) | (per_run == CheckVerdict.NO_MEASUREMENT)
    passed = [md_text(run) for run in judged.index[judged == CheckVerdict.PASS]]
    named = (f" ({', '.join(passed[:5])}{' and more' if len(passed) > 5 else ''})"
             if 0 < len(passed) < len(judged) else "")
    parts = [f"**{len(passed)} of {len(judged)} runs pass**{named}"]
    if failing.any():
        rows = checked[checked["verdict"].isin((CheckVerdict.FAIL, CheckVerdict.NO_MEASUREMENT))]
        shown = [md_text(_failure(r)) for r in rows.head(3).to_dict("records")]
        more = f"; and {len(rows) - 3} more (table below)" if len(rows) > 3 else ""
        parts.append(f"**{int(failing.sum())} fail{'s' if failing.sum() == 1 else ''}**: "
                     + "; ".join(shown) + more)
    unmatched = int((per_run == CheckVerdict.NO_REFERENCE).sum())
    if unmatched:
        parts.append(f"{unmatched} run{'s' if unmatched != 1 else ''} matched no reference")
    broken = int((per_run == CheckVerdict.RUN_FAILED).sum())
    if broken:
        parts.append(f"{broken} run{'s' if broken != 1 else ''} failed to run")
    unsure = int((per_run == CheckVerdict.UNRELIABLE).sum())
    if unsure:
        parts.append(f"**{unsure} cannot be certified** (contended or throttled: no verdict "
                     f"from {'it' if unsure == 1 else 'them'}; re-run on an idle node)")
    return "; ".join(parts) + "."


def _bounds(low: float, high: float) -> str:
    if np.isinf(high):
        return f"≥ {formatting.number(low)}"
    if np.isinf(low):
        return f"≤ {formatting.number(high)}"
    return f"{formatting.number(low)} – {formatting.number(high)}"


def check_display(checked: pd.DataFrame) -> present.Table:
    """One row per run and applying reference: run, then the answer (verdict, measured /
    expected, flags: in the first view on a phone), measured, expected with the reference's
    number in the list below, bounds, metric, configuration."""
    rows = checked[checked["verdict"].isin(CHECKED)]
    cells = pd.DataFrame({
        "run": rows["run"], "configuration": rows["configuration"],
        "metric": rows["metric"].str.replace("_", " "),
        "measured": [formatting.DASH if formatting.missing(m) else f"{formatting.number(m)} {u}"
                     for m, u in zip(rows["measured"], rows["unit"], strict=True)],
        "reference": [f"{formatting.number(v)} {u} [{int(i)}] {name}" for v, u, i, name in
                      zip(rows["expected"], rows["unit"], rows["reference_index"],
                          rows["reference"], strict=True)],
        "bounds": [_bounds(lo, hi) for lo, hi in zip(rows["low"], rows["high"], strict=True)],
        "measured / expected": rows["ratio"].map(formatting.formatter("ratio")),
        "verdict": rows["verdict"].map(
            lambda v: f"⚠ {v}" if v in (CheckVerdict.FAIL, CheckVerdict.UNRELIABLE) else v),
        "flags": rows["flags"].fillna("").astype(str),
    })
    if not cells["flags"].str.strip().any():
        cells = cells.drop(columns="flags")
    first = ["run", "verdict", "measured / expected", "flags"]
    cells = cells[[c for c in first if c in cells] + [c for c in cells if c not in first]]
    caption = ("Each run against the most specific reference that matches it; [n] is the "
               "reference's number in the sources below, bounds are the reference's tolerance.")
    if (cells["measured"] == formatting.DASH).any():
        caption += f" {formatting.DASH} = the run has no value of the metric."
    return present.Table(cells.reset_index(drop=True), caption,
                         {"measured", "bounds", "measured / expected"})


def check_plot(checked: pd.DataFrame):
    """Measured / expected per run and reference, coloured pass / fail, the reference's
    tolerance shaded and 1.0 (the published figure) marked."""
    import matplotlib.pyplot as plt

    from benchlib.publish.pages.plots import plain, tidy

    rows = checked[checked["verdict"].isin(CHECKED)].dropna(subset=["ratio"])
    fig, ax = plt.subplots(figsize=(9, 0.4 * max(len(rows), 1) + 1.8))
    labels = [plain(f"{r} [{int(i)}]") for r, i in
              zip(rows["run"], rows["reference_index"], strict=True)]
    colours = ["#59a14f" if v == CheckVerdict.PASS else "#e15759" for v in rows["verdict"]]
    ax.barh(range(len(rows)), rows["ratio"].astype(float), color=colours)
    for position, row in enumerate(rows.to_dict("records")):
        low = max(row["low"] / row["expected"], 0.0)
        high = min(row["high"] / row["expected"], max(rows["ratio"].max() * 1.1, 1.2))
        ax.plot([low, high], [position, position], color="black", linewidth=0.6, alpha=0.5)
        ax.plot([low], [position], "|", color="black", markersize=12)
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.plot([], [], "s", color="#59a14f", label=CheckVerdict.PASS.value)
    ax.plot([], [], "s", color="#e15759", label=CheckVerdict.FAIL.value)
    ax.plot([], [], "|", color="black", markersize=12, label="lower bound")
    ax.legend(fontsize=8, loc="lower right")
    ax.set(xlabel="measured / expected (x); 1.0 = the published figure", ylabel="",
           title="Each run against its reference [n]")
    tidy(fig)
    return fig


def sources_used(checked: pd.DataFrame) -> str:
    """Markdown bullets: the number, name and source of each reference used in the check."""
    rows = checked[checked["verdict"].isin(CHECKED)].drop_duplicates("reference_index")
    return "\n".join(f"- \\[{int(r['reference_index'])}\\] **{md_text(r['reference'])}**: "
                     f"{md_text(r['reference_source'])}"
                     for r in rows.sort_values("reference_index").to_dict("records"))


def unmatched_note(checked: pd.DataFrame) -> str:
    """Markdown: the configurations of the runs no reference matched (counted), or ''."""
    rows = checked[checked["verdict"] == CheckVerdict.NO_REFERENCE]
    if rows.empty:
        return ""
    counts = rows["configuration"].value_counts(sort=False)
    listed = "; ".join(md_text(c) + (f" ({n} runs)" if n > 1 else "")
                       for c, n in counts.head(12).items())
    more = f"; and {len(counts) - 12} more" if len(counts) > 12 else ""
    return f"**No reference matched {len(rows)} runs**: {listed}{more}."


def _datasheet(table: pd.DataFrame) -> pd.Series:
    """Which rows of :func:`references.table` are datasheet matmul ceilings."""
    return table["metric"].isin(references.DATASHEET_METRICS.values()) & \
        table["source"].str.startswith("NVIDIA datasheet")


def references_display(refs: Sequence[references.Reference]) -> present.Tables:
    """The published references with their match, value, bounds and source, then the datasheet
    ceilings as one row per GPU variant (numbered as in the check)."""
    table = references.table(refs)
    if table.empty:
        return present.Tables()
    sheet = _datasheet(table)
    out = present.Tables([_published(table[~sheet])] if (~sheet).any() else [])
    if sheet.any():
        out.append(_ceilings(table[sheet]))
    return out


def _ceilings(table: pd.DataFrame) -> present.Table:
    precision = table["metric"].str.removeprefix("matmul_tflops_")
    variant = [name.removesuffix(f" {p} matmul") for name, p in
               zip(table["reference"], precision, strict=True)]
    cells = table.assign(variant=variant, precision=precision, cell=[
        f"{formatting.number(v)} [{i}]" for v, i in zip(table["value"], table["index"], strict=True)])
    wide = cells.pivot_table(index="variant", columns="precision", values="cell",
                             aggfunc="first", sort=False).reset_index()
    precisions = [p.value for p in MatmulPrecision if p in wide]
    wide = wide.reindex(columns=["variant", *precisions]).fillna(formatting.DASH)
    wide.columns = ["GPU variant", *(f"{p} (TFLOP/s)" for p in wide.columns[1:])]
    return present.Table(wide, f"Datasheet dense matmul peaks, references [n] of the node probe's "
                         f"matmul columns on that variant: a probe under half the peak fails "
                         f"(benchlib/reference/{reference.DATASHEETS_CSV}); "
                         f"{formatting.DASH} = not on the datasheet.", set(wide.columns[1:]))


def _published(table: pd.DataFrame) -> present.Table:
    cells = pd.DataFrame({
        "#": table["index"].astype(str), "reference": table["reference"],
        "applies to": table["match"], "metric": table["metric"].str.replace("_", " "),
        "expected": [f"{formatting.number(v)} {u}" for v, u in
                     zip(table["value"], table["unit"], strict=True)],
        "bounds": [_bounds(lo, hi) for lo, hi in zip(table["low"], table["high"], strict=True)],
        "source": table["source"],
    })
    return present.Table(cells, f"{len(cells)} references with their sources, as runs are "
                         "checked against them (a run matches when every 'applies to' column agrees; "
                         "~ = a pattern).", {"expected", "bounds"})


def stands_lines(done: pd.DataFrame, refs: Sequence[references.Reference]) -> list[str]:
    """For the index, one plain-text line per benchmark (and model) and reference: the best
    run against it and how many runs pass; the benchmarks no published reference matches are
    named once, on one last line."""
    lines, unmatched = [], []
    keys = [c for c in ("benchmark", "model") if c in done]
    for key, group in done.groupby(keys, dropna=False, sort=True) if keys else [((), done)]:
        key = key if isinstance(key, tuple) else (key,)
        name = " ".join(str(k) for k in key if not formatting.missing(k)) or "runs"
        checked = references.check(group, list(refs))  # the name says the configuration
        matched = checked[checked["verdict"].isin(CHECKED)]
        if matched.empty:
            unmatched.append(name)
            continue
        for label, rows in matched.groupby("reference", sort=False):
            measured = rows.dropna(subset=["ratio"])
            passing = int((rows["verdict"] == CheckVerdict.PASS).sum())
            passed = rows.loc[rows["verdict"] == CheckVerdict.PASS, "run"].astype(str).tolist()
            counted = f"{passing} of {len(rows)} runs pass" + (
                f" ({', '.join(passed[:5])}{' and more' if len(passed) > 5 else ''})"
                if 0 < passing < len(rows) else "")
            source = short_source(rows["reference_source"].iloc[0])
            if measured.empty:
                lines.append(f"{name}: no run measured {rows['metric'].iloc[0]} ({label})")
                continue
            ratios = measured["ratio"].astype(float)
            best, worst = measured.loc[ratios.idxmax()], measured.loc[ratios.idxmin()]
            if len(measured) == 1:
                found = f"run {best['run']} {slower_text(best)}"
            elif passing == 0 or passing == len(rows):
                found = f"best run {best['run']} {slower_text(best)}"
            else:
                found = (f"best run {best['run']} {best['ratio']:.2f}x, worst {worst['run']} "
                         f"{slower_text(worst)}")
            lines.append(f"{name}: {found} ({label}; {source}); {counted}")
    if unmatched:
        lines.append(f"No published reference matches: {', '.join(unmatched)}")
    return lines
