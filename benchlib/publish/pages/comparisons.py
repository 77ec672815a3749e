"""The comparisons page (``summary_comparisons``): which settings change the throughput."""

from __future__ import annotations

import pandas as pd

from benchlib.analysis.intervals import HEADLINE_NAME, describe_effect
from benchlib.publish.pages import Call, Page, carried, catalog, note, plots, show, summary
from benchlib.publish.pages.summary import Comparison


def which_matter(done: pd.DataFrame) -> list[Comparison]:
    """Every comparison the finished runs allow; shows which factors matter and their effects."""
    found = summary.comparisons(done)
    note(summary.factors_that_matter(found))
    if found:
        show(summary.effects_table(found))
    return found


def every(found: list[Comparison]) -> None:
    """Each comparison: its effect over its pairs, the pairs' table and their ratios' plot."""
    for comparison in found:
        title = summary.md_text(comparison.title)
        effect = summary.md_text(describe_effect(comparison.effect))
        count = len(comparison.pairs)
        note(f"### {title}\n**{effect}**: {HEADLINE_NAME} over {count} "
             f"pair{'' if count == 1 else 's'}")
        show(summary.pairs_table(comparison))
        plots.show(plots.ratio_plot(comparison.pairs, comparison.title,
                                    xlabel=f"{comparison.a} / {comparison.b} (x)"))


PAGE = Page(
    "Comparisons: synthetic vs real data, batch sizes, GPUs, models, precisions, clusters",
    "Each comparison pairs runs equal in every other setting; the ratio is a / b of throughput "
    "and the pairs' geometric mean ratio is the headline, with a 95 % interval made from "
    "repeats (one pair: a Welch t interval over each side's runs; several pairs: a t interval "
    "over the pairs' ratios), "
    "never from one run's own iterations. An effect is significant when the interval excludes "
    "1.0; one run each is unknown, and pairs with contended or throttled runs are unreliable.",
    (
        *carried.cells(catalog.COMPARISONS),
        "## Which factors matter",
        Call(which_matter, "done", "found"),
        "## Every comparison",
        Call(every, "found"),
    ),
)
