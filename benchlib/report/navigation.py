"""The navigation bar on every page of a report: the index, each summary page the report has
(the list :func:`benchlib.report.build.report_pages` gives the index too), and the runs (the
index's runs section). Links are relative, so the report works offline and after being moved."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from benchlib.publish.templating import render

INDEX = "index.html"
RUNS = "index.html#runs"  #: the index's runs section (``id="runs"``)
RUNS_DIR = "runs"  #: where run pages are, one level below the index


class Page(Protocol):
    href: str
    title: str


@dataclass(frozen=True)
class Entry:
    """One link of the bar: a file beside the index and its title."""

    href: str
    title: str


def entries(pages: Sequence[Page]) -> list[Entry]:
    """The bar's links: the index, ``pages`` (summary pages, in the index's order), the runs."""
    return [Entry(INDEX, "Index"), *(Entry(p.href, p.title) for p in pages), Entry(RUNS, "Runs")]


def bar(pages: Sequence[Page], current: str = "", in_runs: bool = False) -> str:
    """The bar's HTML for the page ``current`` (a file beside the index, marked as the page
    shown), or for a run page (``in_runs``: links go one folder up)."""
    return render("nav.html.j2", links=entries(pages), current=current,
                  up="../" if in_runs else "")
