"""Every summary page, once: its name (the notebook ``notebooks/<name>.ipynb``, the report's
``<name>.html`` and the module beside this one that holds its cells), its title and what it
answers (the index and every navigation bar), and what it needs besides the campaign. The
notebook generator (``tools/make_notebooks.py``), the report (:mod:`benchlib.report.build`)
and the tests read this tuple; a new page is one entry here and one module beside it.

The report executes the notebooks and never imports the pages' cells, so this module imports
none of them: the generator and the tests import a page's cells from :attr:`SummaryPage.module`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Needs(str, Enum):
    """What a summary page is built from besides the campaign's records."""

    CAMPAIGN = "campaign"  #: nothing more: every report has it
    DIAGNOSE_PLAN = "diagnose plan"  #: a ``benchlib diagnose`` campaign's plan: first in its report
    BASELINE = "baseline"  #: ``benchlib report DIR --baseline BASE``: last, named after the baseline
    HISTORY = "history"  #: earlier runs of its configurations: ``--history DIR...``, the catalog


@dataclass(frozen=True)
class SummaryPage:
    """One summary page of the report and its notebook.

    ``title`` may name the baseline as ``{baseline}``; ``inputs`` pairs each papermill parameter
    the report gives the notebook with the report input it comes from (an attribute of
    :class:`benchlib.report.build.ReportInputs`), given when that input is."""

    name: str
    title: str
    answers: str
    needs: Needs = Needs.CAMPAIGN
    inputs: tuple[tuple[str, str], ...] = ()
    #: The module holding its cells when it is a feature's own (``benchlib.diagnosis.page``).
    page_module: str = ""
    #: The index's answers this page computes and shows (:mod:`benchlib.publish.pages.answers`);
    #: the index reads them from the executed page.
    computes: tuple[str, ...] = ()

    @property
    def module(self) -> str:
        """The module holding its cells (``PAGE``, a :class:`~benchlib.publish.pages.Page`):
        :attr:`page_module`, else ``benchlib.publish.pages.<name without summary_>``."""
        return self.page_module or f"benchlib.publish.pages.{self.name.removeprefix('summary_')}"

    @property
    def href(self) -> str:
        """The page's file in the report, beside the index."""
        return f"{self.name}.html"

    @property
    def notebook(self) -> str:
        """The summary notebook's file in ``notebooks/``."""
        return f"{self.name}.ipynb"

    def titled(self, baseline: str = "the baseline") -> str:
        """The title, naming ``baseline`` where it says ``{baseline}``."""
        return self.title.format(baseline=baseline)


DIAGNOSIS = SummaryPage(
    "summary_diagnose", "Diagnosis", "why this node is slower than it should be: from its best "
    "speed down to your setting, and what to change", Needs.DIAGNOSE_PLAN,
    page_module="benchlib.diagnosis.page", computes=("diagnosis",))
SCALING = SummaryPage("summary_scaling", "Scaling", "throughput, speedup and efficiency against "
                      "devices, in the reference sheets' layout",
                      computes=("fastest", "scaling"))
COMPARISONS = SummaryPage("summary_comparisons", "Comparisons", "which settings (data, batch "
                          "size, precision, GPU, model) change the throughput",
                          computes=("factors",))
BREAKDOWN = SummaryPage("summary_breakdown", "Breakdown", "where each iteration's time goes, "
                        "phase by phase")
PROJECTIONS = SummaryPage("summary_projection", "Projections", "hours to a training target or "
                          "through a data set, beside the reference campaign")
NODE = SummaryPage("summary_node", "The node", "its ceilings, each run's telemetry, and what "
                   "held each run back", computes=("bottlenecks", "flagged"))
ACCEPTANCE = SummaryPage("summary_acceptance", "Acceptance", "each run against the published "
                         "figure it should reach; nodes slower than their peers",
                         inputs=(("references_file", "references"),), computes=("stands",))
COMPARED = SummaryPage("summary_compare", "Compared with {baseline}", "regression, improvement "
                       "or no change per configuration, with intervals", Needs.BASELINE,
                       (("baseline_dir", "baseline"), ("history_db", "history_db")),
                       "benchlib.compare.page", ("compared",))
HISTORY = SummaryPage("summary_history", "History", "each configuration on each node over time: "
                      "change points, and what changed in the environment then", Needs.HISTORY,
                      (("history_dirs", "history_dirs"), ("history_db", "history_db")),
                      "benchlib.history.page")
#: Every summary page, in the order the index and the navigation bar list them.
SUMMARY_PAGES: tuple[SummaryPage, ...] = (DIAGNOSIS, SCALING, COMPARISONS, BREAKDOWN, PROJECTIONS,
                                          NODE, ACCEPTANCE, COMPARED, HISTORY)
#: The pages every report has (the others come with what they need).
EVERY_REPORT = tuple(p.name for p in SUMMARY_PAGES if p.needs is Needs.CAMPAIGN)


def named(name: str) -> SummaryPage | None:
    """The summary page called ``name`` (None: not one of :data:`SUMMARY_PAGES`)."""
    return next((p for p in SUMMARY_PAGES if p.name == name), None)


def needing(needs: Needs) -> tuple[str, ...]:
    """The names of the pages built from ``needs``."""
    return tuple(p.name for p in SUMMARY_PAGES if p.needs is needs)
