"""Checking runs against references with tolerances (acceptance tests). The references file
(its format, validation and which runs a reference applies to) is
:mod:`benchlib.analysis.reference_file`.

For each metric, the most specific matching reference applies (the most non-``'*'`` keys);
between equally specific ones the first in the file wins and the row's ``note`` names the others.

A measurement passes when ``value * (1 + lower) <= measured <= value * (1 + upper)``; one that
is not finite (infinity) fails whatever the bounds, and so does a rate (higher is better) not
above 0 (a run that did nothing), whatever the run's flags: contention or throttling can slow a
run, not stop it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from benchlib import reference, registry
from benchlib.analysis.gate import Weight, junit_outcome, with_weight
from benchlib.analysis.reference_file import (
    Reference,
    RegexMatch,
    load_references,
    match_text,
    missing_value,
)
from benchlib.analysis.tables import labels
from benchlib.errors import InputError
from benchlib.records import flags, schema
from benchlib.records.flags import number
from benchlib.vocabulary import CheckVerdict, MatmulPrecision, RecordStatus

#: The shipped references file (published figures with sources), in ``benchlib/reference/``.
SHIPPED_FILE = "expectations.yaml"
#: Datasheet matmul ceilings become references of the node probe's ``matmul_tflops_<p>``
#: columns with this lower bound: a probe under half the datasheet's dense peak fails. A
#: well-sized matmul reaches 60-90 % of it; half leaves room for clocks and library choices
#: while catching a GPU that runs at a fraction of its speed.
DATASHEET_LOWER = -0.5
#: Datasheet column -> node probe column.
DATASHEET_METRICS = {f"{p}_tflops": f"matmul_tflops_{p}" for p in MatmulPrecision}
#: Verdicts of a check row; ``fail`` and ``run failed`` make ``benchlib check`` exit 1.
FAILING = with_weight("check", Weight.FAILS)

def datasheet_references() -> list[Reference]:
    """The datasheet's dense matmul peaks as references of the node probe's matmul columns,
    one per GPU variant and precision it lists, matched on the variant's device-name pattern,
    with lower bound :data:`DATASHEET_LOWER` and no upper bound."""
    found = []
    for row in reference.datasheets().to_dict("records"):
        for column, metric in DATASHEET_METRICS.items():
            peak = row.get(column)
            if missing_value(peak):
                continue
            found.append(Reference(
                match={"benchmark": registry.node_probe().benchmark,
                       "device_name": RegexMatch(regex=row["pattern"])},
                metric=metric, value=float(peak), lower=DATASHEET_LOWER, upper=None,
                unit="TFLOP/s", name=f"{row['variant']} {column.removesuffix('_tflops')} matmul",
                source=(f"NVIDIA datasheet dense peak for {row['variant']} "
                        f"(benchlib/reference/{reference.DATASHEETS_CSV}); lower bound "
                        f"{DATASHEET_LOWER:+.0%}: half the datasheet peak")))
    return found


def shipped() -> list[Reference]:
    """The shipped references: ``expectations.yaml`` (published figures), then the datasheet
    matmul ceilings (:func:`datasheet_references`)."""
    text = resources.files(reference.__name__).joinpath(SHIPPED_FILE)
    with resources.as_file(text) as path:
        published = load_references(path)
    return [*published, *datasheet_references()]


def table(refs: Iterable[Reference]) -> pd.DataFrame:
    """The references as a table (for a page listing them with their sources)."""
    rows = []
    for index, ref in enumerate(refs, start=1):
        low, high = ref.bounds()
        rows.append({"reference": ref.label, "index": index, "metric": ref.metric,
                     "match": ", ".join(f"{k}={match_text(v)}" for k, v in ref.match.items()),
                     "value": ref.value, "lower": ref.lower, "upper": ref.upper, "low": low,
                     "high": high, "unit": ref.unit, "source": ref.source})
    return pd.DataFrame(rows)


def _chosen(refs: list[Reference], row: dict[str, Any]) -> list[tuple[int, Reference, list[int]]]:
    """Per metric, the most specific reference applying to ``row`` (index, reference, and
    the indices of equally specific ones it won against by coming first)."""
    best: dict[str, tuple[int, Reference, list[int]]] = {}
    for index, ref in enumerate(refs):
        if not ref.applies_to(row):
            continue
        held = best.get(ref.metric)
        if held is None or ref.specificity > held[1].specificity:
            best[ref.metric] = (index, ref, [])
        elif ref.specificity == held[1].specificity:
            held[2].append(index)
    return list(best.values())


def _run_name(row: dict[str, Any], position: int) -> str:
    source = row.get("source")
    return Path(str(source)).stem if isinstance(source, str) and source else f"row {position}"


def _slower(ratio: float) -> str:
    """How a measured / expected ``ratio`` below 1 reads: ``2.00x slower than expected by``."""
    return f"{1 / ratio:.2f}x slower than expected by" if ratio > 0 else \
        "none of the speed expected by"


def _plausible(measured: float | None) -> bool:
    """Whether a disturbed run's ``measured`` could be a slowed-down measurement: finite and
    above 0."""
    return measured is not None and math.isfinite(measured) and measured > 0


def _verdict(ref: Reference, measured: float | None) -> tuple[CheckVerdict, str]:
    low, high = ref.bounds()
    if measured is None:
        return CheckVerdict.NO_MEASUREMENT, f"the run has no {ref.metric} value"
    if not math.isfinite(measured):  # no bound passes a broken number, unbounded or not
        return CheckVerdict.FAIL, (f"{ref.metric} {measured} is not a finite measurement: the run's record "
                        f"is broken; re-run it ({ref.label!r})")
    rate = schema.better(ref.metric) == "higher"
    if rate and measured <= 0:  # no bound, flag or tolerance makes a run that did nothing pass
        return CheckVerdict.FAIL, (f"{ref.metric} {measured:g} {ref.unit}: the run did no work, "
                                   f"{_slower(0)} {ref.label!r} ({ref.source})")
    ratio = measured / ref.value
    if measured < low:  # a rate below its bound is slower; a time below it, faster
        how = _slower(ratio) if rate else f"{ratio:.3g}x the reference"
        return CheckVerdict.FAIL, (f"{ref.metric} {measured:.4g} {ref.unit} is below {low:.4g} "
                        f"({ref.value:g} {ref.lower:+.0%}): {how} "
                        f"{ref.label!r} ({ref.source})")
    if measured > high:
        return CheckVerdict.FAIL, (f"{ref.metric} {measured:.4g} {ref.unit} is above {high:.4g} "
                        f"({ref.value:g} {ref.upper:+.0%}), {ratio:.2f}x the reference "
                        f"{ref.label!r} ({ref.source})")
    return CheckVerdict.PASS, f"{ratio:.2f}x {ref.label!r}"


def check(df: pd.DataFrame, refs: list[Reference] | str | Path) -> pd.DataFrame:
    """One row per run and applying reference (per metric the most specific; see the module
    docstring): ``run``, ``configuration``, ``metric``, ``measured``, ``reference`` (its label),
    ``reference_index`` (1-based, in ``refs``), ``expected``, ``low``, ``high``, ``unit``,
    ``ratio`` (measured / expected), ``verdict`` (pass / fail / unreliable / no measurement /
    no reference / run failed; ``unreliable``: the run was contended or throttled, so its
    number decides nothing), ``message``, ``note``, ``flags`` (the run's) and ``reference_source``.

    A run no reference applies to gets one ``no reference`` row; a failed run one ``run failed``
    row (its error in ``message``). ``refs`` may be a references file's path."""
    if isinstance(refs, (str, Path)):
        refs = load_references(refs)
    if not isinstance(refs, (list, tuple)) or not all(isinstance(r, Reference) for r in refs):
        raise InputError(f"check: refs={refs!r:.60}: give a references file's path or its "
                         "references (reference_file.load_references(path), shipped())")
    described = [c for c in ("gpu", "num_devices", "benchmark", "model", "dataset", "batch_size",
                             "precision") if c in df]
    names = labels(df, described) if len(df) else pd.Series(dtype=object)
    rows = []
    for position, (row, configuration) in enumerate(zip(df.to_dict("records"), names, strict=True)):
        base = {"run": _run_name(row, position), "host": row.get("host", ""),
                "configuration": configuration, "flags": row.get("flags", "") or ""}
        if str(row.get("status") or RecordStatus.OK) != RecordStatus.OK:
            rows.append({**base, "verdict": CheckVerdict.RUN_FAILED.value,
                         "message": str(row.get("error", ""))})
            continue
        chosen = _chosen(refs, row)
        if not chosen:
            rows.append({**base, "verdict": CheckVerdict.NO_REFERENCE.value,
                         "message": "no reference matches this run"})
        for index, ref, ties in chosen:
            measured = number(row.get(ref.metric))
            verdict, message = _verdict(ref, measured)
            bad = flags.disturbed([base["flags"]])
            # none from a disturbed run, but contention slows a run, never stops it: a
            # measurement of 0 (or a broken one) fails whatever the flags
            if bad and verdict in (CheckVerdict.PASS, CheckVerdict.FAIL) and _plausible(measured):
                verdict, message = CheckVerdict.UNRELIABLE, (
                    f"the run was {' and '.join(bad)}, so its {verdict} says nothing "
                    f"({message}); {flags.RERUN_ADVICE}")
            low, high = ref.bounds()
            note = ("also matched, equally specific: "
                    + "; ".join(refs[i].label for i in ties) if ties else "")
            rows.append({**base, "metric": ref.metric, "measured": measured,
                         "reference": ref.label, "reference_index": index + 1,
                         "expected": ref.value, "low": low, "high": high, "unit": ref.unit,
                         "ratio": (measured / ref.value if measured is not None
                                   and math.isfinite(measured) else None),
                         "verdict": verdict.value, "message": message, "note": note,
                         "reference_source": ref.source})
    columns = ["run", "host", "configuration", "metric", "measured", "reference",
               "reference_index", "expected", "low", "high", "unit", "ratio", "verdict",
               "message", "note", "flags", "reference_source"]
    return pd.DataFrame(rows).reindex(columns=columns)


def failed(checked: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`check` that make the check fail."""
    return checked[checked["verdict"].isin(FAILING)]


def junit_cases(checked: pd.DataFrame) -> list:
    """:func:`check`'s rows as JUnit cases: classname the reference (or the verdict when none
    applies), name ``run: metric``; fail -> failure, run failed -> error, no reference / no
    measurement -> skipped."""
    from benchlib.analysis.junit import Case

    cases = []
    for row in checked.to_dict("records"):
        metric = row["metric"] if isinstance(row["metric"], str) else ""
        name = f"{row['run']}: {metric}" if metric else str(row["run"])
        classname = row["reference"] if isinstance(row["reference"], str) else row["verdict"]
        cases.append(Case(f"benchlib.check.{classname}", name,
                          junit_outcome("check", row["verdict"]),
                          str(row["message"]), f"{row['message']}\nflags: {row['flags'] or '-'}"))
    return cases
