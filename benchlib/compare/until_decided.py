"""Compare until decided: where NEW against BASE is undecided (its interval holds both "no
change" and a change of the threshold's size), NEW grows by one campaign at a time, each
judged with the others (the campaign is the unit of noise), until every configuration is
decided or the budget of campaigns is spent; BASE grows too where the comparison says more
campaigns of each side would tell and BASE can be run again (a setting, not older code).

Looking again after each campaign is optional stopping: :func:`until_decided` stops at the
first decision, so its false-alarm rate is measured on planted A/A campaigns, not assumed
(``benchmarks/compare_until_planted.py``; docs/measurements.md)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from benchlib.compare.regression import Comparison, compare
from benchlib.vocabulary import DEFAULT_THRESHOLD, CompareVerdict

#: Most rounds ``--until-decided`` may run (each a campaign of NEW, and of BASE where asked).
MAX_CAMPAIGNS = 20


def undecided(comparison: Comparison) -> list[str]:
    """The configurations ``comparison`` left undecided."""
    table = comparison.table
    if table.empty or "verdict" not in table:
        return []
    return [str(c) for c in table.loc[table["verdict"] == CompareVerdict.UNDECIDED, "configuration"]]


def needs_base(comparison: Comparison) -> bool:
    """Whether an undecided configuration asks for more campaigns of BASE as well."""
    table = comparison.table
    return bool("decides_base_too" in table and table["decides_base_too"].any())


def until_decided(base: pd.DataFrame, new: pd.DataFrame, more: Callable[[int], pd.DataFrame],
                  campaigns: int, *, metric: str = "throughput",
                  threshold: float = DEFAULT_THRESHOLD,
                  history: pd.DataFrame | None = None,
                  more_base: Callable[[int], pd.DataFrame] | None = None,
                  say: Callable[[str], None] | None = None) -> tuple[Comparison, int]:
    """:func:`~benchlib.compare.regression.compare` of ``base`` and ``new``; while it leaves a
    configuration undecided and fewer than ``campaigns`` rounds ran (unknown and unreliable ones
    need repeats or a quiet node, not campaigns), ``more(k)`` gives the
    records of the k-th campaign added to NEW, and ``more_base(k)`` (where given, and the
    comparison asks for campaigns of each side) one added to BASE. Returns the last comparison
    and how many rounds ran."""
    if not 1 <= campaigns <= MAX_CAMPAIGNS:
        raise ValueError(f"campaigns {campaigns}: give 1 to {MAX_CAMPAIGNS}")
    judged = compare(base, new, metric=metric, threshold=threshold, history=history)
    added = 0
    while added < campaigns and (open_ones := undecided(judged)):
        added += 1
        both = more_base is not None and needs_base(judged)
        if say:
            named = open_ones[0] + (f" and {len(open_ones) - 1} more" if len(open_ones) > 1 else "")
            say(f"undecided: {named}; round {added} of at most {campaigns}: a campaign of NEW"
                + (" and one of BASE" if both else ""))
        if both:
            base = pd.concat([base, more_base(added)], ignore_index=True)  # type: ignore[misc]
        new = pd.concat([new, more(added)], ignore_index=True)
        judged = compare(base, new, metric=metric, threshold=threshold, history=history)
    return judged, added
