"""A diagnosis against others: the node's rungs beside the shipped published figures of other
GPUs, scaled by what the datasheets lead one to expect.

A published reference (:mod:`benchlib.analysis.references`) applies to a rung when every one of
its ``match`` columns agrees except the GPU's (``gpu``, ``device_name``): the same benchmark,
model, image size, precision, batch, data and memory format on another GPU. The rung's speed
over the published figure is then set beside the ratio of the two GPUs' datasheet peaks in the
rung's precision (the expected ratio); their quotient says how much slower than it should be the
node is, as the reference campaign worked it out by hand: "0.44x an A100's published figure;
expected from the datasheets: 0.9x; so 2.1x slower than it should be".
"""

from __future__ import annotations

import re

import pandas as pd

from benchlib import registry
from benchlib.analysis.intervals import geometric_mean
from benchlib.analysis.references import Reference, RegexMatch
from benchlib.diagnosis.plan import Plan
from benchlib.diagnosis.rung_speeds import rung_runs
from benchlib.records import flags
from benchlib.reference import datasheet_for
from benchlib.vocabulary import matmul_precision

GPU_KEYS = ("gpu", "device_name")
COLUMNS = ["rung", "reference", "measured", "published", "ratio", "expected", "slower", "text",
           "source"]


def reference_sheet(ref: Reference) -> dict[str, object] | None:
    """The datasheet row of the GPU a published reference was measured on (from its
    ``device_name`` pattern, else its ``gpu``), or None."""
    named = ref.match.get("device_name")
    names = named.regex.split("|") if isinstance(named, RegexMatch) else []
    names += [str(ref.match.get("gpu", ""))]
    return next((sheet for name in names if (sheet := datasheet_for(name))), None)


def _expected(node_device: str, ref: Reference, precision: str) -> float | None:
    """The node GPU's datasheet peak over the reference GPU's, in ``precision`` (None where
    either is not listed)."""
    column = f"{matmul_precision(precision) or ''}_tflops"
    mine, theirs = datasheet_for(node_device), reference_sheet(ref)
    peaks = [flags.number(sheet.get(column)) if sheet else None for sheet in (mine, theirs)]
    return peaks[0] / peaks[1] if peaks[0] and peaks[1] else None


def _applies(ref: Reference, run: dict[str, object]) -> bool:
    other_gpu = ref.model_copy(update={"match": {k: v for k, v in ref.match.items()
                                                 if k not in GPU_KEYS}})
    return ref.metric == "throughput" and ref.match.get("benchmark") != registry.node_probe().benchmark \
        and other_gpu.applies_to(run)


def against_references(df: pd.DataFrame, plan: Plan, refs: list[Reference]) -> pd.DataFrame:
    """One row per rung and published reference of the same work on another GPU: the rung's
    speed (geometric mean of its runs), the published figure, their ratio, the ratio the
    datasheets lead one to expect, and how much slower than that the node is, in words."""
    rows = []
    for rung in plan.rungs[1:]:
        runs = rung_runs(df, plan, rung)
        if runs.empty:
            continue
        first = runs.iloc[0].to_dict()
        measured = geometric_mean(pd.to_numeric(runs["throughput"], errors="coerce"))
        for ref in refs:
            if not _applies(ref, first):
                continue
            ratio = measured / ref.value
            expected = _expected(str(first.get("device_name", "")), ref, str(first["precision"]))
            text = f"{ratio:.2f}x {ref.label!r} ({ref.value:,.0f} {ref.unit})"
            if expected:
                text += (f"; expected from the datasheets: {expected:.2f}x; so "
                         + (f"{expected / ratio:.1f}x slower than it should be"
                            if ratio < expected else
                            f"{ratio / expected:.2f}x what the datasheets lead one to expect"))
            rows.append({"rung": rung.label, "reference": ref.label, "measured": measured,
                         "published": ref.value, "ratio": ratio, "expected": expected,
                         "slower": expected / ratio if expected else None, "text": text,
                         "source": ref.source})
    return pd.DataFrame(rows, columns=COLUMNS)


def family(model: object) -> str:
    """A model's family: its name without the depth (``resnet18`` -> ``resnet``)."""
    return re.sub(r"\d.*$", "", str(model or ""))


def unmatched_text(plan: Plan, refs: list[Reference]) -> str:
    """Why nothing matched: what the shipped published figures of the same benchmark and model
    family cover."""
    covered = sorted({f"{r.match['model']} (batch {r.match.get('batch_size', 'any')}, "
                      f"{r.match.get('image_size', 'any')} px)"
                      for r in refs if r.metric == "throughput"
                      and r.match.get("benchmark") == plan.benchmark
                      and r.match.get("model") and family(r.match["model"]) == family(plan.model)})
    activity = registry.by_benchmark(plan.benchmark).activity  # type: ignore[union-attr]
    work = f"{plan.model} {activity}"
    where = "on this CPU" if plan.target == "cpu" else "on this GPU"
    kind = f"{family(plan.model)} {activity}"
    if not covered:
        return (f"No shipped published figure matches {work} at batch {plan.batch_size}, "
                f"{plan.image_size} px {where}, and none is of {kind}: nothing to set it "
                "beside.")
    return (f"No shipped published figure matches {work} at batch {plan.batch_size}, "
            f"{plan.image_size} px {where}; those of {kind} are for {'; '.join(covered)} on GPUs. "
            "Run diagnose on a GPU with those settings (--model, --batch-size, --image-size, "
            "--precision) to be set beside them.")
