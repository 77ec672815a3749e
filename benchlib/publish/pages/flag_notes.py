"""The note that opens every summary page: what is flagged among the finished runs and why;
and the ⚠ it promises on the rows of the tables below it (:func:`marked_rows`)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from benchlib.analysis.comparisons import benchmarks, ok, scaling
from benchlib.publish import local_paths
from benchlib.publish.pages.summary import run_names, scalable
from benchlib.records import flags, schema

#: Where the report's index explains every flag (its "What is flagged" answer's anchor).
INDEX_FLAGS = "index.html#what-is-flagged"


def marked_rows(frame: pd.DataFrame, labels: Sequence[str]) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """``frame`` ready for :func:`benchlib.publish.pages.present.table`: the ``labels`` that
    tell its rows apart (those that vary: devices, data, ...) first, then, where a row is
    flagged, its flags as ``⚠ contended, short``, then the rest; and the columns the table must
    keep where they are (its ``keep``). The settings come in the schema's order (benchmark,
    model, ..., devices, data: :func:`benchlib.records.schema.describing`)."""
    order = {name: place for place, name in enumerate(schema.describing())}
    apart = sorted((c for c in labels if c in frame and frame[c].nunique(dropna=False) > 1),
                   key=lambda c: order.get(c, len(order)))
    marks = frame.get("flags", pd.Series("", index=frame.index))
    out = frame.drop(columns=["flags"], errors="ignore")
    out = out[[*apart, *(c for c in out.columns if c not in apart)]]
    if not any(flags.of(value) for value in marks):
        return out, tuple(apart)
    out.insert(len(apart), "flags", [flags.warned(value) for value in marks])
    return out, (*apart, "flags")


def flag_notes(df: pd.DataFrame) -> str:
    """Markdown opening every summary: what is flagged among the finished runs and why, in
    words a user can act on (superlinear scaling explained by its baseline). In a report, whose
    index explains each flag once, one line: how many runs each flag marks, and the link."""
    done = ok(df)
    if "flags" not in done or done.empty:
        return "**Flags**: none (no finished run)."
    if local_paths.configured_root() is not None and flags.flag_counts(done):
        counts = ", ".join(f"**{name}** {count} of {len(done)} runs"
                           for name, count in flags.flag_counts(done).items())
        return (f"**Flagged** (marked ⚠ in the tables and plots below): {counts}; what each "
                f"means and what to do: [the report's index]({INDEX_FLAGS}).")
    lines = flags.explain(done, run_names)
    runs = scalable(benchmarks(done))
    superlinear = []
    if len(runs) and runs["num_devices"].nunique() > 1:
        scaled = scaling(runs)
        superlinear = flags.explain_superlinear(scaled)
        if superlinear:
            lines.append(f"**superlinear** ({len(superlinear)} runs): {flags.FLAGS['superlinear']}.")
    if not lines:
        return ("**Flags**: none. No run was contended, throttled, noisy or too short, and no "
                "scaling was superlinear.")
    text = "**Flagged** (marked ⚠ in the tables and plots below):\n" + "\n".join(
        f"- {line}" for line in lines)
    if superlinear:
        text += "\n\n" + "\n".join(f"- {line}" for line in superlinear)
    return text
