"""The summary pages, each with its tables and plots: what each code cell of a summary notebook
shows, as functions, and what the report's index shows of it.

One module per page (``scaling``, ``comparisons``, ``breakdown``, ``projection``, ``node``,
``acceptance``; ``common`` for their shared head and tail), listed
once in ``catalog`` (:data:`~benchlib.publish.pages.catalog.SUMMARY_PAGES`: name, title, what it
answers, its cells, what it needs). Their tables and plots: ``summary`` (a campaign's tables),
``present`` (a table for people), ``plots``, ``phase_plots``, ``axes``, ``palette``, and each
page's own (``scaling_sheet``, ``acceptance_tables``, ``verdict_tables``).
A feature's page is in its folder (:mod:`benchlib.diagnosis.page`, :mod:`benchlib.history.page`,
:mod:`benchlib.compare.page`;
the acceptance page's node tables :mod:`benchlib.fleet.tables`). What a benchmark notebook
shows while it runs is :mod:`benchlib.publish.benchmark_notebook`, the HTML report
:mod:`benchlib.report`. A cell is one call of a function here, which displays what the cell shows;
``tools/make_notebooks.py`` assembles the notebooks from each page's cells: Markdown text (a
``str``) and :class:`~benchlib.publish.cells.Call` entries (:mod:`benchlib.publish.cells`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchlib.publish.cells import Call, Cell, calls, imports, modules, note, show

__all__ = ["Call", "Cell", "Page", "calls", "imports", "modules", "note", "show"]


@dataclass(frozen=True)
class Page:
    """A summary notebook: its title and introduction, its parameters besides ``results_dir``
    (name: default), and its cells between the shared head and tail (see ``common``)."""

    title: str
    about: str
    cells: tuple[Cell, ...]
    parameters: dict[str, object] = field(default_factory=dict)
