"""The note that opens every summary page: what is flagged among the finished runs and why
(the ⚠ it promises on table rows: :func:`benchlib.publish.pages.present.marked_rows`)."""

from __future__ import annotations

import pandas as pd

from benchlib.analysis.comparisons import benchmarks, ok, scaling
from benchlib.publish import local_paths
from benchlib.publish.pages.summary import run_names, scalable
from benchlib.records import configuration, flags

#: Where the report's index explains every flag (its "What is flagged" answer's anchor).
INDEX_FLAGS = "index.html#what-is-flagged"


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
    if configuration.varying(runs, ["num_devices"]):
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
